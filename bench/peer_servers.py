"""The two servers the peer comparison drives, each as its own process on 127.0.0.1 with a fresh
SQLite store: `hitl-bridge serve` (this checkout) and awaithumans 0.1.12's `awaithumans serve`
(from its own venv, bench/.peers/awaithumans-0.1.12, never the project's).

A `Peer` says how to speak to one of them: where to create a request, how to answer it, how
to long-poll for its outcome, and which header of its callback names the request. The
workloads (bench/peer_workloads.py) only speak through it, so both get the same calls.

How each is configured, and why that is fair, is written in docs/performance.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from bench_core import free_port, serve_process, stop

ROOT = Path(__file__).resolve().parent.parent
PEER_VERSION = "0.1.12"
PEER_VENV = ROOT / "bench" / ".peers" / f"awaithumans-{PEER_VERSION}"
PEER_PINS = ROOT / "bench" / "peers" / f"awaithumans-{PEER_VERSION}.txt"
START_WITHIN_S = 90.0  # awaithumans runs its Alembic migrations at start: ~8 s on a quiet machine

# The same question on both: a yes/no approval with a little context.
TITLE = "Deploy api to prod?"
CONTEXT = {"service": "api", "version": "1.2.3"}


@dataclass(frozen=True)
class Peer:
    """One running server and the way to speak to it."""

    name: str  # as the table shows it
    base: str  # http://127.0.0.1:<port>
    pid: int  # the server process (CPU and RSS are read from /proc/<pid>)
    token: str  # bearer token: both servers are run with API authentication on
    create_path: str
    callback_header: str  # the callback's header that carries the request's id
    wait_terminal: frozenset[str]  # long-poll states that mean "decided"
    log: Path  # the server's output

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def create_body(self, key: str, *, timeout_s: int, callback_url: str | None = None) -> dict[str, Any]:
        raise NotImplementedError

    def answer_call(self, request_id: str) -> tuple[str, dict[str, Any]]:
        """(path, JSON body) that answers `request_id` with "yes"."""
        raise NotImplementedError

    def wait_path(self, request_id: str, seconds: int) -> str:
        raise NotImplementedError

    def wait_state(self, reply: dict[str, Any]) -> str:
        raise NotImplementedError


@dataclass(frozen=True)
class BridgePeer(Peer):
    def create_body(self, key: str, *, timeout_s: int, callback_url: str | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"title": TITLE, "questions": [{"id": "ok", "kind": "confirm", "prompt": "Deploy?"}],
                                "context": CONTEXT, "external_id": key, "timeout_s": timeout_s}
        if callback_url:
            body["callback"] = {"url": callback_url, "secret": "bench-secret-0123456789"}
        return body

    def answer_call(self, request_id: str) -> tuple[str, dict[str, Any]]:
        return f"/v1/requests/{request_id}/answer", {"value": "yes"}

    def wait_path(self, request_id: str, seconds: int) -> str:
        return f"/v1/requests/{request_id}?wait={seconds}"

    def wait_state(self, reply: dict[str, Any]) -> str:
        return str(reply.get("state"))


@dataclass(frozen=True)
class AwaitHumansPeer(Peer):
    def create_body(self, key: str, *, timeout_s: int, callback_url: str | None = None) -> dict[str, Any]:
        # What the SDK's await_human() sends (client.py): the payload and its JSON schema, the
        # response's JSON schema, a timeout (60 s to 30 days) and an idempotency key.
        return {"task": TITLE, "payload": CONTEXT,
                "payload_schema": {"type": "object", "properties": {
                    "service": {"type": "string"}, "version": {"type": "string"}}},
                "response_schema": {"type": "object", "properties": {"ok": {"type": "boolean"}},
                                    "required": ["ok"]},
                "timeout_seconds": timeout_s, "idempotency_key": key, "callback_url": callback_url}

    def answer_call(self, request_id: str) -> tuple[str, dict[str, Any]]:
        return f"/api/tasks/{request_id}/complete", {"response": {"ok": True}}

    def wait_path(self, request_id: str, seconds: int) -> str:
        return f"/api/tasks/{request_id}/poll?timeout={min(seconds, 30)}"  # its limit: 30 s

    def wait_state(self, reply: dict[str, Any]) -> str:
        return str(reply.get("status"))


def bridge_config(store_url: str, port: int, token: str) -> str:
    """The bridge's configuration: its defaults (a webhook source, so every request is also posted
    to the web inbox), API tokens on, WARNING logs."""
    return (f"store: {{url: '{store_url}'}}\nhttp: {{listen: '127.0.0.1:{port}', api_tokens: ['{token}']}}\n"
            f"sources: [{{type: webhook}}]\nlog_level: WARNING\n")


@contextlib.asynccontextmanager
async def bridge(tmp: Path) -> AsyncIterator[Peer]:
    """`hitl-bridge serve` on a fresh SQLite store in `tmp`."""
    port, token = free_port(), secrets.token_urlsafe(24)
    config = bridge_config(f"sqlite:///{tmp}/bridge.db", port, token)
    async with serve_process(tmp, port, config, "bridge") as proc:
        yield BridgePeer("hitl-bridge", f"http://127.0.0.1:{port}", proc.pid, token, "/v1/requests",
                         "x-hitl-request-id", frozenset({"answered", "expired", "cancelled", "failed"}),
                         tmp / "bridge.log")


def peer_env(tmp: Path, token: str) -> dict[str, str]:
    """awaithumans' environment for `awaithumans serve`: a fresh SQLite file, the admin API token
    (how an agent authenticates), a payload key (required: it also derives the webhook signing
    key), WARNING logs. Nothing else: no Slack, no email, its defaults for the rest."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWAITHUMANS_")}
    return {**env, "AWAITHUMANS_DB_PATH": str(tmp / "awaithumans.db"),
            "AWAITHUMANS_ADMIN_API_TOKEN": token,
            "AWAITHUMANS_PAYLOAD_KEY": secrets.token_urlsafe(32),
            "AWAITHUMANS_LOG_LEVEL": "WARNING", "PYTHONUNBUFFERED": "1"}


async def wait_healthy(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + START_WITHIN_S
    async with httpx.AsyncClient() as client:
        while loop.time() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"awaithumans ended at start (exit {proc.returncode}); its log: {log}\n"
                                   + log.read_text()[-2000:])
            with contextlib.suppress(httpx.HTTPError):
                if (await client.get(url, timeout=2)).status_code == 200:
                    return
            await asyncio.sleep(0.1)
    raise RuntimeError(f"awaithumans did not answer {url} within {START_WITHIN_S:.0f} s; its log: {log}")


@contextlib.asynccontextmanager
async def awaithumans(tmp: Path) -> AsyncIterator[Peer]:
    """awaithumans' `awaithumans serve` (its production entry point: uvicorn, one process) on a
    fresh SQLite file in `tmp`, from its own venv."""
    exe = ensure_peer_venv()
    port, token = free_port(), secrets.token_urlsafe(24)
    log = tmp / "awaithumans.log"
    with log.open("w") as out:
        proc = subprocess.Popen([str(exe), "serve", "--host", "127.0.0.1", "--port", str(port),
                                 "--log-level", "warning"], stdout=out, stderr=subprocess.STDOUT,
                                env=peer_env(tmp, token), cwd=tmp)
        try:
            base = f"http://127.0.0.1:{port}"
            await wait_healthy(base + "/api/health", proc, log)
            yield AwaitHumansPeer(f"awaithumans {PEER_VERSION}", base, proc.pid, token, "/api/tasks",
                                  "x-awaithumans-task-id",
                                  frozenset({"completed", "timed_out", "cancelled", "verification_exhausted"}), log)
        finally:
            stop(proc)


def ensure_peer_venv() -> Path:
    """The `awaithumans` executable of its own venv, made on first use: a venv outside the
    project's, `pip install 'awaithumans[server]==0.1.12'` with every dependency pinned by
    bench/peers/awaithumans-0.1.12.txt. Returns the executable; raises with pip's output."""
    exe = PEER_VENV / "bin" / "awaithumans"
    if exe.exists() and peer_version() == PEER_VERSION:
        return exe
    print(f"installing awaithumans {PEER_VERSION} into {PEER_VENV.relative_to(ROOT)} (its own venv)", flush=True)
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(PEER_VENV)], check=True)
    done = subprocess.run([str(PEER_VENV / "bin" / "pip"), "install", "-q", "--disable-pip-version-check",
                           "-c", str(PEER_PINS), f"awaithumans[server]=={PEER_VERSION}"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"pip install awaithumans=={PEER_VERSION} failed:\n{done.stdout}{done.stderr}")
    return exe


def peer_version() -> str | None:
    """The awaithumans version installed in its venv (None when there is none)."""
    python = PEER_VENV / "bin" / "python"
    if not python.exists():
        return None
    done = subprocess.run([str(python), "-c", "import importlib.metadata as m; print(m.version('awaithumans'))"],
                          capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else None
