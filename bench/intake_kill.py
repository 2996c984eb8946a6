"""The kill -9 check of batched intake (issue 34): nothing is acknowledged before it is durable.

Under full load (16 keep-alive clients creating requests), the daemon is killed with SIGKILL
mid-run, started again on the same SQLite file, and every create that got its 201 is looked
up by id through the API: none may be missing. Creates whose response never arrived (in
flight at the kill) may or may not be there; how many were is reported.

Usage: .venv/bin/python bench/intake_kill.py [--quick]   (also run by bench/scale_intake.py)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sqlite3
import sys
import tempfile
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_core import free_port, serve_process
from scale_intake import AREA, CLIENTS, Connection, Load, load
from scale_lib import Figure, table


class Recording(Connection):
    """A load connection that keeps the id of every create answered 201 and the external id of
    the one in flight when the connection was lost."""

    acked: dict[str, str] = {}  # request id -> external_id (one dict per run: `reset`)
    lost: list[str] = []  # external ids sent and never answered
    enough = asyncio.Event()
    kill_after = 0

    @classmethod
    def reset(cls, kill_after: int) -> None:
        cls.acked, cls.lost, cls.enough, cls.kill_after = {}, [], asyncio.Event(), kill_after

    def answered(self, status: int, body: bytes) -> None:
        if status == 201:
            self.acked[json.loads(body)["id"]] = self.in_flight or ""
            if len(self.acked) >= self.kill_after:
                self.enough.set()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.in_flight is not None:
            self.lost.append(self.in_flight)
            self.in_flight = None
        super().connection_lost(exc)


def config_for(store_url: str, port: int) -> str:
    return (f"store: {{url: '{store_url}'}}\nhttp: {{listen: '127.0.0.1:{port}'}}\n"
            f"sources: [{{type: webhook}}]\nlog_level: WARNING\n")


async def present(base: str, ids: list[str]) -> set[str]:
    """The ids of `ids` the daemon at `base` finds (GET /v1/requests/{id}: 200)."""
    found: set[str] = set()
    pending = iter(ids)

    async def worker(client: httpx.AsyncClient) -> None:
        for request_id in pending:
            response = await client.get(f"/v1/requests/{request_id}")
            if response.status_code == 200 and response.json()["id"] == request_id:
                found.add(request_id)
            elif response.status_code != 404:
                raise RuntimeError(f"GET {request_id}: HTTP {response.status_code} {response.text[:200]}")

    async with httpx.AsyncClient(base_url=base, timeout=30) as client:
        await asyncio.gather(*(worker(client) for _ in range(8)))
    return found


async def kill_check(total: int) -> list[Figure]:
    """Kill the daemon once `total // 3` creates were acknowledged (of `total` sent)."""
    Recording.reset(total // 3)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bridge.db"
        port = free_port()
        async with serve_process(Path(tmp), port, config_for(f"sqlite:///{db}", port), "killed") as proc:
            running = asyncio.create_task(load([port], total, "kill", CLIENTS, Recording))
            await asyncio.wait([running, asyncio.create_task(Recording.enough.wait())],
                               return_when=asyncio.FIRST_COMPLETED)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            run: Load = await running
        acked = dict(Recording.acked)
        port = free_port()
        async with serve_process(Path(tmp), port, config_for(f"sqlite:///{db}", port), "restarted"):
            found = await present(f"http://127.0.0.1:{port}", list(acked))
        with sqlite3.connect(db) as conn:  # the creates in flight at the kill, by external id
            marks = ",".join("?" * len(Recording.lost))
            kept = {r[0] for r in conn.execute(f"SELECT external_id FROM requests WHERE external_id IN ({marks})",
                                               Recording.lost)} if Recording.lost else set()
    lost = len(acked) - len(found)
    return [
        Figure(AREA, f"kill -9 under {CLIENTS}-client load, restarted: creates answered 201, then looked up",
               f"{len(acked):,} acknowledged, {lost} lost", "0 lost", lost == 0 and len(acked) > 0),
        Figure(AREA, "… creates in flight at the kill (no response): stored anyway",
               f"{len(kept)} of {len(Recording.lost)}", "either", None),
        Figure(AREA, "… responses before the kill (all statuses)", f"{run.count:,} ({run.failed} not 2xx)", "-"),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer requests")
    args = parser.parse_args()
    print(table(asyncio.run(kill_check(3000 if args.quick else 15000))))


if __name__ == "__main__":
    main()
