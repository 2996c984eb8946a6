"""A root whose fixed folder does not exist yet (`/srv/agents/*/workspaces/*` before
`/srv/agents` is made) is said once, shown as degraded health, watched at its deepest
existing ancestor, and picked up by file events as soon as it appears, at any depth:
with `rescan_every: 1h`, no rescan can do it instead."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import pytest

from bridge.cli import run
from bridge.health import Status
from tests.delta.bridgekit import delta_bridge, wait_request
from tests.delta.helpers import make_v1_10_workspace
from tests.harness import wait_for

PICKED_UP_WITHIN = 3.0  # file events take milliseconds; this only bounds a failure


def ask(mailbox: Path, request_id: str) -> None:
    (mailbox / "request.json").write_text(json.dumps({"request_id": request_id, "prompt": "Go?"}))


async def test_a_root_made_later_is_seen_at_once_at_any_depth(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]) -> None:
    srv = tmp_path / "srv"
    roots = [str(srv / "agents" / "*" / "workspaces" / "*")]
    with caplog.at_level(logging.INFO):
        async with delta_bridge(tmp_path, roots) as daemon:
            health = daemon.service.health
            check = await wait_for(lambda: health.current("source:delta"))
            assert check.status is Status.degraded
            assert f"{srv / 'agents'} does not exist yet (watching {tmp_path} for it)" in check.summary
            ready = (await health.ready())[0]
            assert ready  # degraded, not failing: the rest of the bridge serves on

            config = tmp_path / "doctor.yaml"
            config.write_text(json.dumps({"store": {"url": f"sqlite:///{tmp_path}/doctor.db"},
                                          "http": {"listen": "127.0.0.1:1"},
                                          "sources": [{"type": "delta", "roots": roots}]}))
            assert await asyncio.to_thread(run, ["-c", str(config), "doctor"]) == 1
            assert f"[FAIL] source delta: root {roots[0]!r}: {srv / 'agents'} does not exist yet" \
                in capsys.readouterr().out
            caplog.set_level(logging.INFO)  # the in-process CLI run set the root logger's level

            # two missing levels and the whole tree below them, made in one go
            ask(make_v1_10_workspace(srv / "agents" / "a1" / "workspaces" / "W1"), "req-deep")
            await wait_request(daemon, lambda r: r.external_id == "req-deep", within=PICKED_UP_WITHIN)
            await wait_for(lambda: health.current("source:delta").status is Status.ok)  # type: ignore[union-attr]

            # then one level at a time: a new agent, its workspaces folder, a workspace, a run
            for level in (srv / "agents" / "a2", srv / "agents" / "a2" / "workspaces",
                          srv / "agents" / "a2" / "workspaces" / "W2"):
                level.mkdir()
            ask(make_v1_10_workspace(srv / "agents" / "a2" / "workspaces" / "W2"), "req-step")
            await wait_request(daemon, lambda r: r.external_id == "req-step", within=PICKED_UP_WITHIN)
    said = [r for r in caplog.records if "does not exist yet" in r.getMessage() and r.levelno == logging.WARNING]
    assert len(said) == 1, [r.getMessage() for r in said]
    assert any("source:delta recovered" in r.getMessage() for r in caplog.records)


async def test_a_busy_ancestor_watched_for_a_root_does_not_drive_the_roots(tmp_path: Path) -> None:
    """Watching /home for /home/ci/runs must not re-expand every root on every change in /home:
    only changes on the way to the missing folder count."""
    mailbox = make_v1_10_workspace(tmp_path / "present" / "ws")
    roots = [str(tmp_path / "later" / "*"), str(tmp_path / "present" / "*")]
    async with delta_bridge(tmp_path, roots) as daemon:
        source = daemon.sources[0]
        await wait_request(daemon, lambda r: r.is_open)
        expansions = None
        for index in range(6):
            scans = source.scans  # type: ignore[attr-defined]
            (tmp_path / f"noise-{index}.txt").write_text("x")  # in the watched ancestor
            (mailbox / "request.json").write_bytes((mailbox / "request.json").read_bytes())
            await wait_for(lambda: source.scans > scans)  # type: ignore[attr-defined]  # noqa: B023
            if expansions is None:  # counted from here: events of the start itself may still arrive before
                expansions = source.expansions  # type: ignore[attr-defined]
        assert source.expansions == expansions  # type: ignore[attr-defined]
        ask(make_v1_10_workspace(tmp_path / "later" / "ws"), "req-later")  # on the way: seen
        await wait_request(daemon, lambda r: r.external_id == "req-later", within=PICKED_UP_WITHIN)
