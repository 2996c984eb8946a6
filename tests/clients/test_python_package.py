"""The `hitl-bridge-client` wheel, built from clients/python and installed into a clean
venv with nothing but its declared dependencies, asks a running daemon.

Offline: the wheel is built without build isolation (setuptools is in .venv), and its
dependencies are installed from the files already in this environment's site-packages
(`pip install --no-index` then finds them satisfied: the wheel declares nothing else)."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import sysconfig
import venv
from collections.abc import Iterator
from importlib.metadata import Distribution, distribution
from pathlib import Path

import httpx
import pytest
from packaging.requirements import Requirement

from tests.harness import running_bridge, wait_for

CLIENT_DIR = Path(__file__).resolve().parents[2] / "clients" / "python"
ALLOWED = {"hitl-bridge-client", "httpx", "httpcore", "h11", "anyio", "idna", "certifi", "sniffio",
           "typing-extensions"}

SCRIPT = """
import asyncio, json, sys
from hitl_bridge_client import AsyncClient, ask, signature_headers, verify_callback

first = ask("From a clean venv?")
client = AsyncClient()
again = [asyncio.run(client.ask("Again?", external_id="clean-1")) for _ in range(2)]  # two event loops
headers = signature_headers("standard", "s" * 20, b"{}", "msg_1")
print(json.dumps({
    "first": first.value, "again": [a.value for a in again], "same": again[0].request_id == again[1].request_id,
    "verified": verify_callback("s" * 20, headers, b"{}"), "forged": verify_callback("t" * 20, headers, b"{}"),
    "daemon_modules": sorted({m.split(".")[0] for m in sys.modules} & {"bridge", "adapters", "fastapi", "pydantic"}),
}))
"""


def dependency_closure(name: str) -> list[Distribution]:
    """The installed distributions `name` needs (itself excluded), from their metadata."""
    found: dict[str, Distribution] = {}
    todo = [Requirement(r) for r in distribution(name).requires or []]
    while todo:
        req = todo.pop()
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        dist = distribution(req.name)
        key = dist.metadata["Name"].lower().replace("_", "-")
        if key not in found:
            found[key] = dist
            todo += [Requirement(r) for r in dist.requires or []]
    return list(found.values())


def copy_installed(dist: Distribution, site_packages: Path) -> None:
    """Install `dist` into another environment by copying its recorded files."""
    for file in dist.files or []:
        source = Path(str(dist.locate_file(file)))
        if file.parts[0] == ".." or not source.is_file() or "__pycache__" in file.parts:
            continue  # scripts outside site-packages, byte code
        target = site_packages / file
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)


@pytest.fixture(scope="module")
def clean_python(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("client-package")
    source = root / "src"
    shutil.copytree(CLIENT_DIR, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", root / "dist", source],
                   check=True, capture_output=True)
    wheel = next((root / "dist").glob("hitl_bridge_client-0.1.0-py3-none-any.whl"))
    venv.create(root / "venv", with_pip=False)
    python = root / "venv" / "bin" / "python"
    purelib = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                             check=True, capture_output=True, text=True).stdout.strip()
    assert purelib != sysconfig.get_path("purelib")
    for dist in dependency_closure("hitl-bridge-client"):
        copy_installed(dist, Path(purelib))
    subprocess.run([*pip, "--python", python, "install", "--no-index", "--no-cache-dir", wheel],
                   check=True, capture_output=True)
    yield python


def test_the_wheel_holds_the_package_and_needs_only_httpx(clean_python: Path) -> None:
    listed = subprocess.run([clean_python, "-c", "from importlib.metadata import distributions as d; "
                             "print('\\n'.join(x.metadata['Name'] for x in d()))"],
                            check=True, capture_output=True, text=True).stdout.split()
    names = {name.lower().replace("_", "-") for name in listed}
    assert "hitl-bridge-client" in names and names <= ALLOWED, names
    listing = "from importlib.metadata import files; print('\\n'.join(map(str, files('hitl-bridge-client'))))"
    wheel_files = subprocess.run([clean_python, "-c", listing], check=True, capture_output=True,
                                 text=True).stdout.split()
    assert "hitl_bridge_client/py.typed" in wheel_files and "hitl_bridge_client/signing.py" in wheel_files
    assert not any(f.startswith(("bridge/", "adapters/", "tests/")) for f in wheel_files)
    assert any(f.endswith("dist-info/LICENSE") or f.endswith("licenses/LICENSE") for f in wheel_files), wheel_files


async def test_the_installed_client_asks_a_running_daemon(clean_python: Path, tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as bridge, httpx.AsyncClient(base_url=bridge.base_url) as http:
        agent = await asyncio.create_subprocess_exec(
            clean_python, "-c", SCRIPT, env={"HITL_BRIDGE_URL": bridge.base_url, "PATH": "/usr/bin:/bin"},
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)

        async def answer(title: str, value: str) -> None:
            async def asked() -> list[dict[str, object]]:
                rows = (await http.get("/v1/requests", params={"state": "posted"})).json()["requests"]
                return [r for r in rows if r["title"] == title]
            found = await wait_for(asked, timeout=20)
            assert (await http.post(f"/v1/requests/{found[0]['id']}/answer", json={"value": value})).status_code == 200

        await answer("From a clean venv?", "yes")
        await answer("Again?", "no")
        out, err = await asyncio.wait_for(agent.communicate(), 30)
        assert agent.returncode == 0, err.decode()
        assert json.loads(out) == {"first": "yes", "again": ["no", "no"], "same": True, "verified": True,
                                   "forged": False, "daemon_modules": []}
        assert len(await bridge.store.list_requests()) == 2  # the second ask found the first answer
