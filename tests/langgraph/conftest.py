"""Fixtures: a real LangGraph server (`langgraph dev`, in memory, offline) on 127.0.0.1."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.langgraph.engine import Engine
from tests.processes import wait_until_serving

HERE = Path(__file__).parent
START_DEADLINE_S = 90.0

# Everything that would make `langgraph dev` reach the internet, switched off.
OFFLINE_ENV = {
    "LANGGRAPH_CLI_NO_ANALYTICS": "1",
    "LANGGRAPH_NO_VERSION_CHECK": "true",
    "LANGSMITH_TRACING": "false",
    "LANGCHAIN_TRACING_V2": "false",
    "LANGSMITH_TRACING_V2": "false",
    "BG_JOB_ISOLATED_LOOPS": "false",
    "NO_COLOR": "1",
}
DROPPED_ENV = ("LANGSMITH_API_KEY", "LANGCHAIN_API_KEY", "LANGGRAPH_CLOUD_LICENSE_KEY",
               "LANGSMITH_ENDPOINT", "LANGCHAIN_ENDPOINT", "HTTP_PROXY", "HTTPS_PROXY")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def langgraph_binary() -> str | None:
    candidate = Path(sys.executable).parent / "langgraph"
    return str(candidate) if candidate.exists() else shutil.which("langgraph")


class LangGraphServer:
    """A running `langgraph dev` process serving the graphs in tests/langgraph/graphs.py."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = workdir / "langgraph-dev.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        binary = langgraph_binary()
        if binary is None:
            pytest.skip("langgraph-cli[inmem] is not installed (pip install -e '.[test]')")
        config = json.loads((HERE / "langgraph.json").read_text())
        config["dependencies"] = [str(HERE)]
        config["graphs"] = {
            name: str(HERE / spec.removeprefix("./")) for name, spec in config["graphs"].items()
        }
        config_path = self.workdir / "langgraph.json"
        config_path.write_text(json.dumps(config))
        env = {k: v for k, v in os.environ.items() if k not in DROPPED_ENV}
        env.update(OFFLINE_ENV)
        log = self.log_path.open("wb")
        self.process = subprocess.Popen(
            [binary, "dev", "--config", str(config_path), "--no-browser", "--no-reload",
             "--host", "127.0.0.1", "--port", str(self.port)],
            cwd=self.workdir, env=env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self._wait_ready()

    def _wait_ready(self) -> None:
        assert self.process is not None
        try:
            wait_until_serving(self.process, f"{self.url}/ok", within=START_DEADLINE_S, what="langgraph dev",
                               log_tail=self.log_tail)
        except RuntimeError:
            self.stop()
            raise

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=5)


@pytest.fixture(scope="session")
def langgraph_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LangGraphServer]:
    server = LangGraphServer(tmp_path_factory.mktemp("langgraph-dev"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
async def engine(langgraph_server: LangGraphServer) -> AsyncIterator[Engine]:
    """The engine side: starts graph runs whose threads carry this test's own tag."""
    eng = Engine(langgraph_server.url)
    yield eng
    await eng.aclose()
