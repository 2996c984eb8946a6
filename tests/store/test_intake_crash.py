"""A daemon killed (SIGKILL) under concurrent creates loses none it acknowledged: a create is
answered 201 only once its group commit is in the file (bridge.store.sqlite_engine), so the
next start on the same file finds every acknowledged request, posts the ones not yet shown,
and its hash chain still verifies. Creates in flight at the kill may or may not be there."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from pathlib import Path

import httpx

from tests.harness import wait_for
from tests.store.process import start_daemon

CLIENTS = 16
KILL_AFTER = 300  # acknowledged creates before the kill (the load keeps going until it lands)
BODY = {"title": "Deploy api to prod?", "questions": [{"id": "ok", "kind": "confirm", "prompt": "Deploy?"}],
        "context": {"service": "api", "version": "1.2.3"}}


class Load:
    """CLIENTS connections creating requests until the daemon is gone; kills it (SIGKILL) once
    KILL_AFTER creates were answered 201."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.acked: dict[str, str] = {}  # request id -> external id
        self.unanswered: list[str] = []  # external ids sent, never answered

    async def client(self, base: str, n: int) -> None:
        async with httpx.AsyncClient(base_url=base, timeout=30) as client:
            for i in range(100_000):
                external_id = f"c{n}-{i}"
                try:
                    response = await client.post("/v1/requests", json={**BODY, "external_id": external_id})
                except httpx.HTTPError:
                    self.unanswered.append(external_id)
                    return
                assert response.status_code == 201, response.text
                self.acked[response.json()["id"]] = external_id
                if len(self.acked) == KILL_AFTER:
                    self.proc.send_signal(signal.SIGKILL)


async def drained(proc: asyncio.subprocess.Process) -> None:
    """Read the daemon's output to its end (two INFO lines per create would fill the pipe)."""
    assert proc.stdout is not None
    while await proc.stdout.read(65536):
        pass


def audit_verify(config: Path) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).parent / "hitl-bridge"
    return subprocess.run([str(exe), "-c", str(config), "audit", "verify"], capture_output=True, text=True,
                          timeout=120)


async def test_kill_9_under_concurrent_creates_loses_no_acknowledged_one(tmp_path: Path) -> None:
    config = tmp_path / "bridge.yaml"
    config.write_text(f"store: {{url: 'sqlite:///{tmp_path}/bridge.db'}}\nhttp: {{listen: '127.0.0.1:0'}}\n"
                      "sources: [{type: webhook}]\n")
    proc, base = await start_daemon(config, tmp_path)
    draining = asyncio.create_task(drained(proc))
    load = Load(proc)
    try:
        await asyncio.wait_for(asyncio.gather(*(load.client(base, n) for n in range(CLIENTS))), timeout=120)
        assert await asyncio.wait_for(proc.wait(), timeout=60) == -signal.SIGKILL
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert len(load.acked) >= KILL_AFTER
    assert len(load.unanswered) == CLIENTS  # each connection had one create in flight when it died

    await draining
    proc, base = await start_daemon(config, tmp_path)  # the same file, started again
    draining = asyncio.create_task(drained(proc))
    try:
        async with httpx.AsyncClient(base_url=base, timeout=30) as client:
            missing = []
            for request_id, external_id in load.acked.items():
                response = await client.get(f"/v1/requests/{request_id}")
                if response.status_code != 200 or response.json()["external_id"] != external_id:
                    missing.append((request_id, response.status_code))
            assert missing == [], f"{len(missing)} of {len(load.acked)} acknowledged creates lost"

            async def all_posted() -> bool:  # the ones not shown before the kill are posted at start
                states = [(await client.get(f"/v1/requests/{rid}")).json()["state"] for rid in list(load.acked)[-40:]]
                return set(states) == {"posted"}

            await wait_for(all_posted, timeout=60, interval=0.1)
    finally:
        proc.terminate()
        await proc.wait()
        await draining
    verified = audit_verify(config)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "record intact" in verified.stdout
