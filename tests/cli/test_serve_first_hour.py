"""`serve` as a newcomer runs it: `--listen HOST:PORT` picks the address, and a second `serve`
in the same folder (another port, the same SQLite file) is refused, naming the first one; the
lock goes with the first daemon however it ends."""

from __future__ import annotations

import signal
import socket
from pathlib import Path

import httpx

from tests.cli.helpers import HITL, clean_env, cli
from tests.processes import ServeChild


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def serve(home: Path, *args: str) -> ServeChild:
    return ServeChild([HITL, "serve", *args], home, clean_env())


def test_listen_and_one_daemon_per_sqlite_store(tmp_path: Path) -> None:
    first_port, second_port = free_port(), free_port()
    first = serve(tmp_path, "--listen", f"127.0.0.1:{first_port}")
    try:
        first.until(lambda: first.url or first.proc.poll() is not None)
        assert first.url == f"http://127.0.0.1:{first_port}", "\n".join(first.lines)
        assert httpx.get(f"{first.url}/healthz").status_code == 200
        second = cli("serve", "--listen", f"127.0.0.1:{second_port}", cwd=tmp_path)
        assert second.code == 1, second
        assert f"another hitl-bridge daemon (pid {first.proc.pid}, listening on 127.0.0.1:{first_port})" in second.err
        assert ".hitl-bridge/bridge.db" in second.err and "store.url" in second.err
    finally:
        first.proc.send_signal(signal.SIGKILL)  # a crash: the kernel drops the lock
        first.proc.wait(30)
    again = serve(tmp_path, "--listen", f"127.0.0.1:{second_port}")
    try:
        again.until(lambda: again.url or again.proc.poll() is not None)
        assert again.url == f"http://127.0.0.1:{second_port}", "\n".join(again.lines)
    finally:
        again.proc.terminate()
        again.proc.wait(30)


def test_a_bad_listen_is_a_usage_error(tmp_path: Path) -> None:
    bad = cli("serve", "--listen", "nowhere", cwd=tmp_path)
    assert bad.code == 2 and "--listen: expected HOST:PORT" in bad.err and "'nowhere'" in bad.err


def test_postgres_stores_take_no_lock(tmp_path: Path) -> None:
    from bridge.store.sqlite_lock import lock_path

    assert lock_path("postgresql://postgres@127.0.0.1:5432/db") is None
    assert lock_path("sqlite:///./x/bridge.db?max_size=1GiB") == Path("./x/bridge.db.lock")
