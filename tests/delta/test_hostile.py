"""Hostile mailboxes, through a real daemon on real files: FIFOs where files belong, symlinks
out of the root, a request.json rewritten forever. Each is refused and reported, once, and
every other workspace keeps flowing."""

from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path

import pytest

from adapters.delta.source import DeltaSource
from bridge.daemon import Daemon
from tests.delta.bridgekit import answer, delta_bridge, requests_of, wait_request, wait_state
from tests.delta.helpers import make_v1_3_workspace, make_v1_10_workspace
from tests.harness import wait_for

RUN = "20261122_012445_4242f7"


def source_of(daemon: Daemon) -> DeltaSource:
    source = daemon.sources[0]
    assert isinstance(source, DeltaSource)
    return source


def ask(mailbox: Path, request_id: str, prompt: str = "Which environment?", **extra: object) -> None:
    (mailbox / "request.json").write_text(json.dumps({"request_id": request_id, "prompt": prompt, **extra}))


def fifo(path: Path) -> Path:
    if path.exists():
        path.unlink()
    os.mkfifo(path)
    return path


async def test_fifos_where_files_belong_block_nothing_and_are_reported(tmp_path: Path) -> None:
    agents = tmp_path / "agents"
    version = fifo(make_v1_10_workspace(agents / "a-version").parent.parent / "VERSION")
    ask(agents / "a-version" / ".delta" / RUN / "interaction", "req-version")
    latest = fifo(make_v1_3_workspace(agents / "b-latest").parent / "LATEST")  # v1.3: LATEST is read
    ask(latest.parent / "interaction", "req-latest")
    request = fifo(make_v1_10_workspace(agents / "c-request") / "request.json")
    meta_box = make_v1_10_workspace(agents / "d-metadata")
    fifo(meta_box.parent / "metadata.json")
    ask(meta_box, "req-metadata")
    ask(make_v1_10_workspace(agents / "e-good"), "req-good")
    async with delta_bridge(tmp_path, [str(agents / "*")], settle_time="100ms") as daemon:
        found = await wait_for(lambda: _ids(daemon, 4))
        assert found == {"req-version", "req-latest", "req-metadata", "req-good"}
        source = source_of(daemon)
        await wait_for(lambda: {str(version), str(latest), str(request)} <= source.problems.keys())
        assert "FIFO" in source.problems[str(request)]
        assert "not a regular file" in source.problems[str(version)]
        assert "not a regular file" in source.problems[str(latest)]
        # the shared mailbox is still served, just without the run LATEST would have named
        shared = next(r for r in await requests_of(daemon) if r.context["layout"] == "v1.3")
        assert shared.run_id is None
        # a FIFO turned back into a file is picked up, and the problem goes away
        request.unlink()
        ask(request.parent, "req-fixed")
        await wait_request(daemon, lambda r: r.external_id == "req-fixed")
        await wait_for(lambda: str(request) not in source.problems)


async def _ids(daemon: Daemon, count: int) -> set[str] | None:
    ids = {r.external_id or "" for r in await requests_of(daemon)}
    return ids if len(ids) >= count else None


async def test_symlinks_out_of_the_root_are_refused_and_reported(tmp_path: Path) -> None:
    agents, outside = tmp_path / "agents", tmp_path / "outside"
    ask(make_v1_10_workspace(outside / "ws"), "req-outside")
    (agents / "team").mkdir(parents=True)
    (agents / "team" / "evil").symlink_to(outside / "ws")  # a workspace leading out of the root
    (agents / "hop").symlink_to(outside)  # an agent folder leading out, one level up
    run_escape = agents / "team" / "runs-out"
    (run_escape / ".delta").mkdir(parents=True)
    (run_escape / ".delta" / RUN).symlink_to(outside / "ws" / ".delta" / RUN)  # a run folder out
    ask(make_v1_10_workspace(agents / "team" / "good"), "req-good")
    (agents / "team" / "alias").symlink_to(agents / "team" / "good")  # inside the root: fine
    async with delta_bridge(tmp_path, [str(agents / "*" / "*")]) as daemon:
        source = source_of(daemon)
        await wait_request(daemon, lambda r: r.external_id == "req-good")
        refused = {str(agents / "team" / "evil"), str(agents / "hop"), str(run_escape / ".delta" / RUN)}
        await wait_for(lambda: refused <= source.problems.keys())
        assert "outside the root folder" in source.problems[str(agents / "team" / "evil")]
        assert "outside the workspace" in source.problems[str(run_escape / ".delta" / RUN)]
        assert [r.external_id for r in await requests_of(daemon)] == ["req-good"]
        # fixed by the operator: the problem goes with the link
        (agents / "team" / "evil").unlink()
        await wait_for(lambda: str(agents / "team" / "evil") not in source.problems)


async def test_a_workspace_swapped_for_a_link_out_of_the_root_gets_no_answer(tmp_path: Path) -> None:
    """Found inside the root, then replaced by a symlink elsewhere before the answer: the
    answer is not written where the link leads."""
    agents, outside = tmp_path / "agents", tmp_path / "outside"
    ask(make_v1_10_workspace(agents / "ws"), "req-swap")
    async with delta_bridge(tmp_path, [str(agents / "*")]) as daemon:
        request = await wait_request(daemon, lambda r: r.external_id == "req-swap")
        outside.mkdir()
        (agents / "ws").rename(outside / "ws")
        (agents / "ws").symlink_to(outside / "ws")
        await answer(daemon, request.id, "staging")
        done = await wait_state(daemon, request.id, "failed", "cancelled")
        assert done.state.value == "cancelled" or "outside" in (done.error or "")
        assert not (outside / "ws" / ".delta" / RUN / "interaction" / "response.txt").exists()


@pytest.mark.parametrize("flavour", ["growing past the size limit", "rewritten, never valid JSON"])
async def test_a_file_rewritten_forever_is_logged_once(tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                                     flavour: str) -> None:
    bad = make_v1_10_workspace(tmp_path / "agents" / "bad") / "request.json"
    if flavour.startswith("growing"):
        bad.write_bytes(b" " * (1024 * 1024 + 1))
    else:
        bad.write_text('{"request_id": "x", "prompt": ')
    async with delta_bridge(tmp_path, [str(tmp_path / "agents" / "*")], settle_time="100ms") as daemon:
        source = source_of(daemon)
        with caplog.at_level(logging.INFO, logger="hitl_bridge.delta"):
            await wait_for(lambda: str(bad) in source.problems)
            for write in range(60):  # each write is seen: a new stamp, read again, still broken
                scans = source.scans
                with bad.open("ab") as f:
                    f.write(b" " * 100 + str(write).encode())
                await wait_for(lambda: source.scans > scans)  # noqa: B023 (polled at once)
            ask(make_v1_10_workspace(tmp_path / "agents" / "good"), "req-good")
            await wait_request(daemon, lambda r: r.external_id == "req-good")
        lines = [r for r in caplog.records if str(bad) in r.getMessage()]
        assert len(lines) == 1, [r.getMessage() for r in lines]
        assert lines[0].levelno == logging.WARNING
        # another workspace's request, copied verbatim: its request_id names that one, not this
        shutil.copy(tmp_path / "agents" / "good" / ".delta" / RUN / "interaction" / "request.json", bad)
        await wait_for(lambda: "already names request" in source.problems.get(str(bad), ""))
        ask(bad.parent, "req-fixed")
        await wait_for(lambda: str(bad) not in source.problems)
