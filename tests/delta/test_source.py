"""The `delta` source inside a real daemon: discovery, withdrawal, de-duplication, bad input."""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
from pathlib import Path

import pytest

from adapters.delta.source import DeltaSource
from bridge.config import load_settings
from bridge.daemon import Daemon
from bridge.models import Request
from tests.delta.bridgekit import answer, delta_bridge, events, requests_of, wait_request, wait_state
from tests.delta.helpers import (
    FIXTURES,
    make_v1_2_workspace,
    make_v1_3_workspace,
    make_v1_10_workspace,
    read_only,
)
from tests.harness import running_bridge, wait_for

TEXT_ID = "05877c30-33c6-4835-bc3b-b5062d358174"


def source_of(daemon: Daemon) -> DeltaSource:
    source = daemon.sources[0]
    assert isinstance(source, DeltaSource)
    return source


async def test_new_workspaces_are_picked_up_without_restart(tmp_path: Path) -> None:
    roots = [str(tmp_path / "agents" / "*" / "workspaces" / "W*")]
    (tmp_path / "agents").mkdir()
    async with delta_bridge(tmp_path, roots) as daemon:
        assert await requests_of(daemon) == []
        # A new agent, then a new workspace, then a run that pauses: all after the start.
        workspace = tmp_path / "agents" / "late" / "workspaces" / "W007"
        workspace.mkdir(parents=True)
        make_v1_10_workspace(workspace)
        request = await wait_request(daemon, lambda r: r.external_id == TEXT_ID)
        assert request.workspace == str(workspace)
        assert request.run_id == "20261122_012445_4242f7"
        # Not matching the glob: ignored (while a matching one made after it is found).
        make_v1_3_workspace(tmp_path / "agents" / "late" / "workspaces" / "X001")
        make_v1_2_workspace(tmp_path / "agents" / "late" / "workspaces" / "W008")
        await wait_request(daemon, lambda r: r.context["layout"] == "v1.2")
        assert sorted(r.context["layout"] for r in await requests_of(daemon)) == ["v1.10", "v1.2"]


async def test_each_layout_is_found(tmp_path: Path) -> None:
    make_v1_10_workspace(tmp_path / "w10")
    make_v1_3_workspace(tmp_path / "w13")
    make_v1_2_workspace(tmp_path / "w12")
    v14 = tmp_path / "w14"
    make_v1_10_workspace(v14, request="request.confirmation.json")
    (v14 / ".delta" / "LATEST").write_text("20261122_012445_4242f7")
    async with delta_bridge(tmp_path, [str(tmp_path / "w*")]) as daemon:
        found = await wait_for(lambda: _count(daemon, 4))
        layouts = sorted(r.context["layout"] for r in found)
        assert layouts == ["v1.10", "v1.2", "v1.3", "v1.4"]


async def _count(daemon: Daemon, n: int) -> list[Request] | None:
    found = await requests_of(daemon)
    return found if len(found) == n else None


async def test_request_accepted_while_metadata_still_says_running(tmp_path: Path) -> None:
    # The engine writes request.json before it switches the run to WAITING_FOR_INPUT.
    mailbox = make_v1_10_workspace(tmp_path / "ws")
    meta_path = mailbox.parent / "metadata.json"
    meta = json.loads(meta_path.read_text())
    meta["status"] = "RUNNING"
    meta_path.write_text(json.dumps(meta, indent=2))
    async with delta_bridge(tmp_path, [str(tmp_path / "ws")]) as daemon:
        request = await wait_request(daemon, lambda r: r.external_id == TEXT_ID)
        assert request.context["status"] == "RUNNING"
        assert request.agent == "/work/steering/harness/delta-agent"


async def test_request_file_vanishing_cancels_the_request(tmp_path: Path) -> None:
    mailbox = make_v1_10_workspace(tmp_path / "ws")
    async with delta_bridge(tmp_path, [str(tmp_path / "ws")]) as daemon:
        request = await wait_request(daemon, lambda r: r.is_open)
        (mailbox / "request.json").unlink()  # answered by hand, elsewhere
        cancelled = await wait_state(daemon, request.id, "cancelled")
        assert cancelled.error and "request.json disappeared" in cancelled.error


async def test_workspace_deleted_while_open_cancels(tmp_path: Path) -> None:
    workspace = tmp_path / "agents" / "W1"
    make_v1_10_workspace(workspace)
    make_v1_3_workspace(tmp_path / "agents" / "W2")
    async with delta_bridge(tmp_path, [str(tmp_path / "agents" / "*")]) as daemon:
        await wait_for(lambda: _count(daemon, 2))
        shutil.rmtree(workspace)
        request = await wait_request(daemon, lambda r: r.external_id == TEXT_ID)
        await wait_state(daemon, request.id, "cancelled")
        still = await wait_request(daemon, lambda r: r.workspace == str(tmp_path / "agents" / "W2"))
        assert still.is_open


async def test_same_request_never_posted_twice(tmp_path: Path) -> None:
    mailbox = make_v1_10_workspace(tmp_path / "ws")
    (tmp_path / "alias").symlink_to(tmp_path / "ws")
    roots = [str(tmp_path / "ws"), str(tmp_path / "*"), str(tmp_path / "alias")]  # overlapping
    async with delta_bridge(tmp_path, roots) as daemon:
        first = await wait_request(daemon, lambda r: r.is_open)
        # Rewritten with the same request_id (e.g. the engine writes it again).
        body = json.loads((mailbox / "request.json").read_text())
        scans = source_of(daemon).scans
        (mailbox / "request.json").write_text(json.dumps(body))
        await wait_for(lambda: source_of(daemon).scans > scans)  # looked at again since
        assert [r.id for r in await requests_of(daemon)] == [first.id]
    async with delta_bridge(tmp_path, roots) as daemon:  # a restart
        await wait_for(lambda: source_of(daemon).scans >= 2)
        assert [r.id for r in await requests_of(daemon)] == [first.id]
        events_kinds = [e["kind"] for e in await events(daemon, first.id)]
        assert events_kinds.count("created") == 1


async def test_request_removed_while_daemon_down_is_withdrawn_at_start(tmp_path: Path) -> None:
    mailbox = make_v1_10_workspace(tmp_path / "ws")
    async with delta_bridge(tmp_path, [str(tmp_path / "ws")]) as daemon:
        request = await wait_request(daemon, lambda r: r.is_open)
    (mailbox / "request.json").unlink()
    async with delta_bridge(tmp_path, [str(tmp_path / "ws")]) as daemon:
        await wait_state(daemon, request.id, "cancelled")


async def test_next_question_replaces_the_previous_one(tmp_path: Path) -> None:
    mailbox = make_v1_10_workspace(tmp_path / "ws")
    async with delta_bridge(tmp_path, [str(tmp_path / "ws")]) as daemon:
        first = await wait_request(daemon, lambda r: r.is_open)
        shutil.copy(FIXTURES / "v1.10.1" / "request.confirmation.json", mailbox / "request.json")
        second = await wait_request(daemon, lambda r: r.id != first.id)
        assert second.questions[0].kind.value == "confirm"
        await wait_state(daemon, first.id, "cancelled")


async def test_partial_write_is_retried_not_failed(tmp_path: Path) -> None:
    mailbox = make_v1_10_workspace(tmp_path / "ws")
    body = (mailbox / "request.json").read_bytes()
    (mailbox / "request.json").write_bytes(body[: len(body) // 2])
    async with delta_bridge(tmp_path, [str(tmp_path / "ws")]) as daemon:
        source = source_of(daemon)
        scans = source.scans
        await wait_for(lambda: source.scans >= scans + 3)  # it keeps looking
        assert await requests_of(daemon) == []
        await asyncio.to_thread(_append, mailbox / "request.json", body[len(body) // 2:])  # the engine finishes
        request = await wait_request(daemon, lambda r: r.external_id == TEXT_ID)
        assert request.is_open
        assert not source.problems


def _append(path: Path, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b'{"request_id": "x", "prompt": ', "is not valid JSON"),
        (b"\xff\xfe{not utf8}", "is not UTF-8"),
        (b'{"prompt": "no id"}', "request_id"),
        (b'{"request_id": "a", "prompt": "x", "sensitive": "yes"}', "sensitive"),
        (b" " * (1024 * 1024 + 10), "limit"),
    ],
    ids=["invalid-json", "non-utf8", "missing-field", "mistyped-field", "oversized"],
)
async def test_bad_request_files_are_reported_and_others_keep_flowing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, content: bytes, reason: str
) -> None:
    bad = make_v1_10_workspace(tmp_path / "agents" / "bad") / "request.json"
    bad.write_bytes(content)
    async with delta_bridge(tmp_path, [str(tmp_path / "agents" / "*")], settle_time="200ms") as daemon:
        with caplog.at_level(logging.WARNING, logger="hitl_bridge.delta"):
            source = source_of(daemon)
            await wait_for(lambda: str(bad) in source.problems)
            assert reason in source.problems[str(bad)]
            assert any(str(bad) in rec.getMessage() and reason in rec.getMessage() for rec in caplog.records)
            make_v1_3_workspace(tmp_path / "agents" / "good")
            good = await wait_request(daemon, lambda r: r.context["layout"] == "v1.3")
            assert good.is_open
            assert len(await requests_of(daemon)) == 1
            # Fixed by the engine: picked up.
            shutil.copy(FIXTURES / "v1.10.1" / "request.text.json", bad)
            await wait_request(daemon, lambda r: r.external_id == TEXT_ID)


async def test_symlinked_mailbox_outside_the_workspace_is_refused(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    shutil.copy(FIXTURES / "v1.10.1" / "request.text.json", outside / "request.json")
    run = tmp_path / "ws" / ".delta" / "20261122_012445_4242f7"
    run.mkdir(parents=True)
    (run / "interaction").symlink_to(outside)
    with caplog.at_level(logging.WARNING, logger="hitl_bridge.delta"):
        async with delta_bridge(tmp_path, [str(tmp_path / "ws")]) as daemon:
            source = source_of(daemon)
            await wait_for(lambda: str(run / "interaction") in source.problems)
            assert "outside the workspace" in source.problems[str(run / "interaction")]
            assert await requests_of(daemon) == []


async def test_read_only_workspace_retries_until_writable(tmp_path: Path) -> None:
    mailbox = make_v1_10_workspace(tmp_path / "ws")
    async with delta_bridge(tmp_path, [str(tmp_path / "ws")]) as daemon:
        request = await wait_request(daemon, lambda r: r.is_open)
        with read_only(mailbox) as possible:
            if not possible:
                pytest.skip("cannot make a folder read-only here")
            await answer(daemon, request.id, "staging")

            async def retried() -> bool:
                kinds = [e for e in await events(daemon, request.id) if e["kind"] == "delivery_retry"]
                return len(kinds) >= 2 and "cannot write" in kinds[-1]["data"]["error"]

            await wait_for(retried)
            assert (await daemon.store.get_request(request.id)).state.value == "answered"  # type: ignore[union-attr]
        await wait_state(daemon, request.id, "delivered")
        assert (mailbox / "response.txt").read_text() == "staging"


async def test_workspace_deleted_before_delivery_fails_clearly(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    mailbox = make_v1_10_workspace(workspace)
    async with delta_bridge(tmp_path, [str(workspace)]) as daemon:
        request = await wait_request(daemon, lambda r: r.is_open)
        with read_only(mailbox) as possible:
            if not possible:
                pytest.skip("cannot make a folder read-only here")
            await answer(daemon, request.id, "staging")
            await wait_for(lambda: _has_event(daemon, request.id, "delivery_retry"))
        shutil.rmtree(workspace)
        failed = await wait_state(daemon, request.id, "failed")
        assert failed.error and "is gone" in failed.error


async def _has_event(daemon: Daemon, request_id: str, kind: str) -> bool:
    return any(e["kind"] == kind for e in await events(daemon, request_id))


async def test_periodic_rescan_finds_requests_without_file_events(tmp_path: Path) -> None:
    async with delta_bridge(tmp_path, [str(tmp_path / "*")], watch=False, rescan_every="100ms") as daemon:
        make_v1_10_workspace(tmp_path / "nfs-ws")
        request = await wait_request(daemon, lambda r: r.external_id == TEXT_ID)
        assert request.workspace == str(tmp_path / "nfs-ws")


async def test_default_config_watches_the_current_directory(tmp_path: Path) -> None:
    # tests/conftest.py runs each test inside tmp_path: with no config file, it is watched.
    settings = load_settings(None, env={"HITL_BRIDGE__HTTP__LISTEN": "127.0.0.1:0"})
    assert {"type": "delta", "roots": ["."]} in settings.sources
    make_v1_10_workspace(tmp_path)
    async with running_bridge(tmp_path, settings=settings) as daemon:
        request = await wait_request(daemon, lambda r: r.external_id == TEXT_ID)
        assert request.workspace == str(tmp_path)
