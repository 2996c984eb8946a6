"""Fixtures for the Delta end-to-end tests: a real daemon watching real folders."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx

from bridge.daemon import Daemon
from bridge.models import Request
from tests.delta.helpers import ENGINE
from tests.harness import running_bridge, wait_for


def delta_config(roots: list[str], resume: str | None = None, **extra: Any) -> dict[str, Any]:
    source: dict[str, Any] = {"type": "delta", "roots": roots, "rescan_every": "1h", **extra}
    if resume:
        source["resume_command"] = resume
    return {"sources": [source], "delivery": {"first_retry": "50ms", "max_backoff": "200ms"}}


@asynccontextmanager
async def delta_bridge(tmp_path: Path, roots: list[str], resume: str | None = None,
                       **extra: Any) -> AsyncIterator[Daemon]:
    async with running_bridge(tmp_path, delta_config(roots, resume, **extra)) as daemon:
        yield daemon


async def requests_of(daemon: Daemon) -> list[Request]:
    return await daemon.store.list_requests(source="delta", limit=1000)


async def wait_request(daemon: Daemon, check: Callable[[Request], bool], within: float = 10.0) -> Request:
    """The first delta request for which `check` holds, polled with a deadline."""

    async def find() -> Request | None:
        return next((r for r in await requests_of(daemon) if check(r)), None)

    found: Request = await wait_for(find, within)
    return found


async def wait_state(daemon: Daemon, request_id: str, *states: str, within: float = 10.0) -> Request:
    async def check() -> Request | None:
        request = await daemon.store.get_request(request_id)
        return request if request is not None and request.state.value in states else None

    found: Request = await wait_for(check, within)
    return found


async def answer(daemon: Daemon, request_id: str, value: str) -> httpx.Response:
    async with httpx.AsyncClient(base_url=daemon.base_url, timeout=10) as client:
        return await client.post(f"/v1/requests/{request_id}/answer",
                                 json={"value": value, "responder": "alice"})


async def events(daemon: Daemon, request_id: str) -> list[dict[str, Any]]:
    async with httpx.AsyncClient(base_url=daemon.base_url, timeout=10) as client:
        response = await client.get(f"/v1/requests/{request_id}/events")
    response.raise_for_status()
    body = response.json()
    found: list[dict[str, Any]] = body["events"] if isinstance(body, dict) else body
    return found


async def run_engine(workspace: Path, message: str, version: str) -> tuple[int, str]:
    """The stand-in engine as a subprocess, without blocking the daemon's loop."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, ENGINE, "run", "-y", "-w", str(workspace), "-m", message, "--engine-version", version,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await proc.communicate()
    return proc.returncode or 0, out.decode()


async def run_cli(tmp_path: Path, daemon: Daemon, *args: str) -> tuple[int, str]:
    """`hitl-bridge <args>` as a user runs it, against this daemon's store and port."""
    config = tmp_path / "cli.yaml"
    config.write_text(json.dumps({
        "store": {"url": f"sqlite:///{tmp_path}/bridge.db"},
        "http": {"listen": f"127.0.0.1:{daemon.port}"},
    }))
    proc = await asyncio.create_subprocess_exec(
        str(Path(sys.executable).parent / "hitl-bridge"), "--config", str(config), *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await proc.communicate()
    return proc.returncode or 0, out.decode()
