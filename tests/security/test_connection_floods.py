"""Connection abuse against a real `hitl-bridge serve` process with a small open-file limit
(256): waves of half-sent requests and a slowloris crowd must not starve it. /healthz keeps
answering, the daemon never runs out of descriptors, the connections are closed by the
read deadline, and the log stays a few lines long."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import resource
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import pytest_asyncio

from tests.harness import wait_for

pytestmark = pytest.mark.asyncio(loop_scope="module")
FD_LIMIT = 256
HALF_SENT = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"  # the blank line never comes


@dataclass
class Served:
    process: subprocess.Popen[bytes]
    port: int
    log: Path

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def open_fds(self) -> int:
        return len(os.listdir(f"/proc/{self.process.pid}/fd"))

    def log_lines(self) -> list[str]:
        return self.log.read_text(errors="replace").splitlines()


def _small_fd_limit() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (FD_LIMIT, FD_LIMIT))


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    home = tmp_path_factory.mktemp("floods")
    config = home / "bridge.yaml"
    config.write_text(f"store: {{url: 'sqlite:///{home}/bridge.db'}}\n"
                      "http: {listen: '127.0.0.1:0', read_timeout: 2s, keep_alive_timeout: 1s}\n"
                      "sources: [{type: webhook}]\n")
    log = home / "daemon.log"
    exe = Path(sys.executable).parent / "hitl-bridge"
    with log.open("wb") as out:
        process = subprocess.Popen([str(exe), "-c", str(config), "serve"], stdout=out, stderr=subprocess.STDOUT,
                                   cwd=home, preexec_fn=_small_fd_limit)
    try:
        port = asyncio.run(wait_for(lambda: _port_in(log) or process.poll() is not None, timeout=60))
        assert process.poll() is None, log.read_text()
        yield Served(process, int(port), log)
    finally:
        process.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=30)
        if process.poll() is None:
            process.kill()


def _port_in(log: Path) -> int | None:
    found = re.search(r"listening on http://127\.0\.0\.1:(\d+)", log.read_text(errors="replace"))
    return int(found.group(1)) if found else None


@pytest_asyncio.fixture(loop_scope="module")
async def http(served: Served) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=served.base_url, timeout=5) as client:
        yield client


async def healthy(http: httpx.AsyncClient) -> bool:
    async def answered() -> bool:
        try:
            return (await http.get("/healthz")).status_code == 200
        except httpx.HTTPError:
            return False
    return bool(await wait_for(answered, timeout=20, interval=0.1))


def new_log_lines(served: Served, before: int) -> list[str]:
    return served.log_lines()[before:]


async def test_waves_of_half_sent_requests_cannot_use_up_descriptors(served: Served, http: httpx.AsyncClient) -> None:
    before = len(served.log_lines())
    limit = 0
    for _wave in range(2):
        wave = []
        try:
            for _ in range(300):  # more than the daemon has descriptors
                sock = socket.create_connection(("127.0.0.1", served.port), timeout=10)
                sock.sendall(HALF_SENT)
                wave.append(sock)
            assert await healthy(http)
            limit = max(limit, served.open_fds())
            assert served.open_fds() < FD_LIMIT
        finally:
            for sock in wave:
                sock.close()
    assert limit < FD_LIMIT
    lines = new_log_lines(served, before)
    assert not any("Traceback" in line or "Too many open files" in line for line in lines), lines
    assert len(lines) <= 10, lines  # one line per 10 s about the limit, whatever the flood


async def test_slowloris_is_closed_by_the_read_deadline(served: Served, http: httpx.AsyncClient) -> None:
    before = len(served.log_lines())
    crowd: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
    for _ in range(450):
        crowd.append(await asyncio.open_connection("127.0.0.1", served.port))
    closed_by_server = 0
    timed_out = 0

    async def trickle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One header byte at a time, for as long as the server listens."""
        nonlocal closed_by_server, timed_out
        header = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 10_000
        for byte in header:
            try:
                writer.write(bytes([byte]))
                await writer.drain()
                reply = await asyncio.wait_for(reader.read(200), timeout=0.25)
            except TimeoutError:
                continue  # nothing yet: the attack goes on
            except (ConnectionError, OSError):
                reply = b""
            closed_by_server += 1
            timed_out += reply.startswith(b"HTTP/1.1 408")
            return

    attackers = [asyncio.create_task(trickle(r, w)) for r, w in crowd]
    try:
        assert await healthy(http)  # answered while the crowd is still trickling
        await asyncio.wait_for(asyncio.gather(*attackers), timeout=120)  # each ends when the server hangs up
    finally:
        for task in attackers:
            task.cancel()
        for _, writer in crowd:
            writer.close()
    assert closed_by_server == 450 and timed_out > 0
    assert await healthy(http)
    lines = new_log_lines(served, before)
    assert not any("Traceback" in line for line in lines) and len(lines) <= 10, lines


async def test_idle_kept_alive_connections_are_closed(served: Served) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
    try:
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        await writer.drain()
        assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 200")
        await reader.readexactly(len(b'{"status":"ok"}'))

        async def hung_up() -> bool:
            return await reader.read(100) == b""  # the keep-alive timeout ends it

        assert await asyncio.wait_for(hung_up(), timeout=30)
    finally:
        writer.close()
