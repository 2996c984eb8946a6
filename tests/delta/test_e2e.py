"""Engine → bridge → answer → response.txt → resume → engine, for every layout.

A real daemon (real store, real HTTP) watches real folders; the stand-in engine runs as
a subprocess exactly as a user's `resume_command` would run it.
"""

from __future__ import annotations

import json
import logging
import stat
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from hitl_bridge_client import verify_receipt

from bridge.daemon import Daemon
from bridge.models import QuestionKind
from tests.delta.bridgekit import answer, delta_bridge, events, run_cli, run_engine, wait_request, wait_state
from tests.delta.helpers import ENGINE, RESUMABLE_VERSIONS, request_files, resume_template, script
from tests.harness import wait_for

ASKS: tuple[dict[str, Any], ...] = (
    {"prompt": "Which environment?", "input_type": "text"},
    {"prompt": "Approve deploy to prod?", "input_type": "confirmation"},
    {"prompt": "Database password?", "input_type": "password", "sensitive": True},
)
KINDS = (QuestionKind.text, QuestionKind.confirm, QuestionKind.secret)


@pytest.mark.parametrize("version", RESUMABLE_VERSIONS)
async def test_three_questions_answered_through_the_bridge(
    tmp_path: Path, version: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    workspace = tmp_path / "agents" / "deployer" / "workspaces" / "W001"
    workspace.mkdir(parents=True)
    roots = [str(tmp_path / "agents" / "*" / "workspaces" / "W*")]
    async with delta_bridge(tmp_path, roots, resume_template(version)) as daemon:
        code, _ = await run_engine(workspace, script(*ASKS), version)
        assert code == 101
        seen: set[str] = set()
        for ask, kind, value in zip(ASKS, KINDS, ("staging", "yes", "s3cr3t-pw"), strict=True):
            request = await wait_request(daemon, lambda r: r.id not in seen and r.is_open)
            seen.add(request.id)
            assert request.title == ask["prompt"]
            assert request.questions[0].kind is kind
            assert request.workspace == str(workspace)
            assert request.engine == "delta"
            assert request.agent == "/srv/agents/stand-in/agent"
            assert request.run_id and request.context["task"].startswith("Deploy HARNESS_SCRIPT")
            response = await answer(daemon, request.id, value)
            assert response.status_code == 200, response.text
            await wait_state(daemon, request.id, "delivered")
        await wait_for(lambda: _status(workspace) == "COMPLETED")
        assert (workspace / "answers.txt").read_text().splitlines() == [
            "ANSWER 1: staging", "ANSWER 2: yes", "ANSWER 3: s3cr3t-pw"]
        assert request_files(workspace) == []
        timeline = await wait_for(lambda: _with_resume(daemon, request.id))
        resume = next(e for e in timeline if e["kind"] == "resume")
        assert resume["data"]["exit_code"] == 0
        assert "HARNESS_DONE" in resume["data"]["output"]
        assert "s3cr3t-pw" not in json.dumps(timeline)  # the secret is scrubbed from the audit
        assert "s3cr3t-pw" not in caplog.text  # and never logged
        assert len(await daemon.store.list_requests(source="delta")) == 3


def _status(workspace: Path) -> str | None:
    try:
        meta = json.loads(next(p for p in (workspace / ".delta").rglob("metadata.json")
                               if "invocations" not in str(p)).read_text())
    except (ValueError, StopIteration):
        return None  # being rewritten
    status: str | None = meta.get("status")
    return status


async def _with_resume(daemon: Daemon, request_id: str) -> list[dict[str, Any]] | None:
    timeline = await events(daemon, request_id)
    return timeline if any(e["kind"] == "resume" for e in timeline) else None


async def test_v1_3_cannot_resume_answer_kept_and_failure_shown(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    async with delta_bridge(tmp_path, [str(workspace)], resume_template("1.3.0")) as daemon:
        assert (await run_engine(workspace, script(ASKS[1]), "1.3.0"))[0] == 101
        request = await wait_request(daemon, lambda r: r.is_open)
        assert request.context["layout"] == "v1.3"
        assert request.run_id == (workspace / ".delta" / "LATEST").read_text()
        await answer(daemon, request.id, "approve")
        failed = await wait_state(daemon, request.id, "failed")
        assert failed.error and "exited 1" in failed.error and "redeliver" in failed.error
        response = workspace / ".delta" / "interaction" / "response.txt"
        assert response.read_text() == "yes"
        assert stat.S_IMODE(response.stat().st_mode) == 0o600


async def test_failed_resume_redelivered_with_the_cli(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    flag = tmp_path / "engine-broken"
    flag.write_text("yes")
    # A resume command that fails while the flag exists (e.g. the engine's API key is missing).
    wrapper = tmp_path / "resume.py"
    wrapper.write_text(
        "import os, subprocess, sys\n"
        f"if os.path.exists({str(flag)!r}):\n"
        "    print('error: missing API key'); sys.exit(1)\n"
        f"sys.exit(subprocess.call([sys.executable, {ENGINE!r}, 'run', '-y', '-w', sys.argv[1], '-m', 'resume']))\n"
    )
    resume = f"{sys.executable} {wrapper} {{workspace}}"
    async with delta_bridge(tmp_path, [str(workspace)], resume) as daemon:
        await run_engine(workspace, script(ASKS[0]), "1.10.1")
        request = await wait_request(daemon, lambda r: r.is_open)
        await answer(daemon, request.id, "staging")
        failed = await wait_state(daemon, request.id, "failed")
        assert failed.error and "exited 1" in failed.error and "missing API key" in failed.error
        (mailbox,) = [p.parent for p in request_files(workspace)]
        assert (mailbox / "response.txt").read_text() == "staging"  # not lost
        flag.unlink()
        code, out = await run_cli(tmp_path, daemon, "redeliver", request.id)
        assert code == 0, out
        await wait_state(daemon, request.id, "delivered")
        assert (workspace / "answers.txt").read_text() == "ANSWER 1: staging\n"


async def test_answer_taken_while_the_bridge_was_down_counts_as_delivered(tmp_path: Path) -> None:
    """The daemon stops while its resume command runs; the engine takes the answer by hand
    meanwhile. On the next start the redelivery finds the mailbox gone: since the bridge
    wrote that answer itself, it is `delivered`, not `failed` as if answered elsewhere."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    started = tmp_path / "resume-started"
    hang = tmp_path / "resume.py"  # starts, then waits for the signal of the daemon's stop
    hang.write_text(f"import pathlib, signal\npathlib.Path({str(started)!r}).touch()\nsignal.pause()\n")
    async with delta_bridge(tmp_path, [str(workspace)], f"{sys.executable} {hang}") as daemon:
        await run_engine(workspace, script(ASKS[0]), "1.10.1")
        request = await wait_request(daemon, lambda r: r.is_open)
        await answer(daemon, request.id, "staging")
        await wait_for(started.exists)
    code, out = await run_engine(workspace, "resume", "1.10.1")  # someone resumes by hand
    assert code == 0 and (workspace / "answers.txt").read_text() == "ANSWER 1: staging\n", out
    assert not request_files(workspace)
    async with delta_bridge(tmp_path, [str(workspace)], f"{sys.executable} {hang}") as daemon:
        done = await wait_state(daemon, request.id, "delivered", "failed")
        assert done.state.value == "delivered", done.error
        assert "response_taken" in [e["kind"] for e in await events(daemon, request.id)]


async def test_answer_via_cli_without_resume_command(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    async with delta_bridge(tmp_path, [str(workspace)]) as daemon:
        await run_engine(workspace, script(ASKS[1]), "1.4")
        request = await wait_request(daemon, lambda r: r.is_open)
        code, out = await run_cli(tmp_path, daemon, "answer", request.id, "no")
        assert code == 0, out
        await wait_state(daemon, request.id, "delivered")
        (mailbox,) = [p.parent for p in request_files(workspace)]
        assert (mailbox / "response.txt").read_text() == "no"
        # beside it, the signed receipt of who decided (0600 like the answer)
        receipt = (mailbox / "response.receipt.jws").read_text().strip()
        assert stat.S_IMODE((mailbox / "response.receipt.jws").stat().st_mode) == 0o600
        keys = await daemon.service.notary.keys.jwks()
        claims = verify_receipt(receipt, keys)
        assert claims["sub"] == request.id and claims["state"] == "answered"
        assert claims["via"] == "api"  # the CLI answers through the API
        # The user resumes by hand: the engine takes the answer and finishes.
        code, out_text = await run_engine(workspace, "resume", "1.4")
        assert code == 0 and '"answers": ["no"]' in out_text


async def test_api_rejects_a_non_confirmation_answer(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    async with delta_bridge(tmp_path, [str(workspace)]) as daemon:
        await run_engine(workspace, script(ASKS[1]), "1.10.1")
        request = await wait_request(daemon, lambda r: r.is_open)
        async with httpx.AsyncClient(base_url=daemon.base_url) as client:
            bad = await client.post(f"/v1/requests/{request.id}/answer", json={"value": "maybe"})
        assert bad.status_code == 422
        assert not any(p.name == "response.txt" for p in (workspace / ".delta").rglob("*"))
        assert len(request_files(workspace)) == 1
