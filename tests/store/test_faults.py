"""The SQLite store under a daemon fails loudly and loses nothing: a full store (its own
size limit, or a real tiny filesystem) answers 503 "store full: …" and is not ready; a
store file deleted while running refuses writes, is not ready and saves a copy; a store
folder that turns read-only is not ready while running, and a start on one is one line."""

from __future__ import annotations

import asyncio
import logging
import re
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.harness import running_bridge, wait_for
from tests.store.disk import fill, read_only, tiny_filesystem

BODY: dict[str, Any] = {"title": "Deploy api?", "questions": [{"id": "ok", "kind": "confirm", "prompt": "Go?"}]}


def big(n: int) -> dict[str, Any]:
    return {**BODY, "external_id": f"r-{n}", "context": {f"part{i}": "x" * 9_000 for i in range(2)}}


def store_config(url: str) -> dict[str, Any]:
    return {"store": {"url": url}}


async def fill_up(client: httpx.AsyncClient, limit: int = 400,
                  settle: Callable[[], Awaitable[None]] | None = None) -> tuple[list[str], httpx.Response]:
    """Create requests until the store refuses one; (ids acknowledged, the refusal). With
    `settle`, each acknowledged request's background work (its posting) is waited for before
    the next: the refusal is then the store's answer to that create alone, not to a create
    and a posting competing for the last pages."""
    acknowledged: list[str] = []
    for n in range(limit):
        response = await client.post("/v1/requests", json=big(n))
        if response.status_code != 201:
            return acknowledged, response
        acknowledged.append(response.json()["id"])
        if settle is not None:
            await settle()
    raise AssertionError(f"the store took {limit} large requests without filling up")


def failing_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.levelno >= logging.ERROR and "store is failing" in r.getMessage()]


def assert_no_traceback(caplog: pytest.LogCaptureFixture) -> None:
    assert [r.getMessage() for r in caplog.records if r.exc_info] == []


async def test_a_full_store_answers_503_store_full_and_is_not_ready(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """SQLite's own limit (max_size → PRAGMA max_page_count) fails writes with SQLITE_FULL,
    exactly what a full disk does."""
    url = f"sqlite:///{tmp_path}/bridge.db?max_size=640KiB"
    caplog.set_level(logging.INFO)
    async with running_bridge(tmp_path, store_config(url)) as daemon, \
            httpx.AsyncClient(base_url=daemon.base_url) as client:
        acknowledged, refused = await fill_up(client, settle=daemon.service.drain)
        assert refused.status_code == 503, refused.text
        assert refused.json()["detail"] == "store full: database or disk is full"
        assert refused.headers["retry-after"] == "30"
        await daemon.service.drain()
        assert (await client.post("/v1/requests", json=big(999))).status_code == 503  # still full, still 503
        ready = await client.get("/readyz")
        assert ready.status_code == 503
        assert "store: store full: database or disk is full" in ready.json()["reasons"]
        answered = await client.post(f"/v1/requests/{acknowledged[0]}/answer", json={"value": "yes"})
        assert answered.status_code in (200, 503), answered.text  # an update may still fit; never a 500
        await daemon.service.drain()
    assert len(failing_lines(caplog)) == 1, failing_lines(caplog)  # once, not once per request
    assert_no_traceback(caplog)
    bigger = f"sqlite:///{tmp_path}/bridge.db?max_size=64MiB"
    async with running_bridge(tmp_path, store_config(bigger)) as daemon:
        for request_id in acknowledged:  # every acknowledged request was kept
            assert await daemon.store.get_request(request_id) is not None


async def test_a_full_disk_is_503_until_space_is_freed(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    disk = tmp_path / "disk"
    with tiny_filesystem(disk, "6m"):
        settings_url = f"sqlite:///{disk}/bridge.db"
        caplog.set_level(logging.INFO)
        async with running_bridge(tmp_path, store_config(settings_url)) as daemon, \
                httpx.AsyncClient(base_url=daemon.base_url) as client:
            ballast = await asyncio.to_thread(fill, disk, 400 * 1024)
            acknowledged, refused = await fill_up(client)
            assert refused.status_code == 503, refused.text
            assert refused.json()["detail"] == "store full: database or disk is full"
            assert (await client.get("/readyz")).status_code == 503
            ballast.unlink()

            async def ready_again() -> bool:
                return (await client.get("/readyz")).status_code == 200

            await wait_for(ready_again, timeout=20)
            created = await client.post("/v1/requests", json=big(1000))
            assert created.status_code == 201, created.text
            acknowledged.append(created.json()["id"])
            await daemon.service.drain()
        assert any("store recovered" in r.getMessage() for r in caplog.records)
        assert_no_traceback(caplog)
        async with running_bridge(tmp_path, store_config(settings_url)) as daemon:
            for request_id in acknowledged:
                assert await daemon.store.get_request(request_id) is not None


async def test_a_store_file_deleted_while_running_refuses_writes_and_keeps_a_copy(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    db = tmp_path / "bridge.db"
    async with running_bridge(tmp_path) as daemon, httpx.AsyncClient(base_url=daemon.base_url) as client:
        ids = [(await client.post("/v1/requests", json={**BODY, "external_id": f"k{n}"})).json()["id"]
               for n in range(3)]
        await daemon.service.drain()
        for leftover in tmp_path.glob("bridge.db*"):  # rm .hitl-bridge/bridge.db*, as an operator might
            leftover.unlink()
        refused = await client.post("/v1/requests", json={**BODY, "external_id": "after"})
        assert refused.status_code == 503
        assert refused.json()["detail"].startswith("store unavailable: the database file was deleted")
        answer = await client.post(f"/v1/requests/{ids[0]}/answer", json={"value": "yes"})
        assert answer.status_code == 503  # not acknowledged into a file that is gone
        assert (await client.get(f"/v1/requests/{ids[0]}")).status_code == 200  # reads still work
        ready = await client.get("/readyz")
        assert ready.status_code == 503
        [check] = [c for c in ready.json()["checks"] if c["component"] == "store"]
        assert check["status"] == "failing" and "saved to" in check["fix"]
        [copy] = list(tmp_path.glob("bridge.db.rescued-*"))
    assert len(failing_lines(caplog)) == 1
    assert_no_traceback(caplog)
    for leftover in tmp_path.glob("bridge.db-*"):
        leftover.unlink()
    copy.rename(db)  # what the fix says: move the copy into place and start again
    async with running_bridge(tmp_path) as daemon:
        for request_id in ids:
            request = await daemon.store.get_request(request_id)
            assert request is not None and request.is_open


async def test_a_store_folder_turned_read_only_is_not_ready(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    url = f"sqlite:///{folder}/bridge.db"
    async with running_bridge(tmp_path, store_config(url)) as daemon, \
            httpx.AsyncClient(base_url=daemon.base_url) as client:
        assert (await client.get("/readyz")).status_code == 200
        with read_only(folder):
            ready = await client.get("/readyz")
            assert ready.status_code == 503
            assert any(r.startswith(f"store: store read-only: the store folder {folder} is read-only")
                       for r in ready.json()["reasons"]), ready.json()
        assert (await client.get("/readyz")).status_code == 200  # writable again: ready again


async def test_a_start_on_a_read_only_store_is_one_line(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    config = tmp_path / "bridge.yaml"
    config.write_text(f"store: {{url: 'sqlite:///{folder}/bridge.db'}}\nhttp: {{listen: '127.0.0.1:0'}}\n")
    async with running_bridge(tmp_path, store_config(f"sqlite:///{folder}/bridge.db")):
        pass  # a store as a clean stop leaves it: bridge.db alone, its -wal and -shm gone
    exe = Path(sys.executable).parent / "hitl-bridge"
    with read_only(folder):
        proc = await asyncio.create_subprocess_exec(
            str(exe), "-c", str(config), "serve", cwd=tmp_path,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        try:
            _out, err = await asyncio.wait_for(proc.communicate(), timeout=60)
        finally:
            if proc.returncode is None:  # it started after all: do not leave it running
                proc.kill()
                await proc.wait()
    assert proc.returncode == 1
    lines = err.decode().strip().splitlines()
    assert lines == [lines[0]] and "Traceback" not in err.decode(), err.decode()
    assert lines[0].startswith(f"store error: cannot open the SQLite store at {folder}/bridge.db: "
                               "unable to open database file (fix: make "), lines[0]


async def test_store_url_options_are_checked(tmp_path: Path) -> None:
    from bridge.store import StoreError, open_store_from_url

    for url, why in [(f"sqlite:///{tmp_path}/a.db?max_size=lots", "max_size: 'lots' is not a size"),
                     (f"sqlite:///{tmp_path}/a.db?cache=shared", "unknown store url option(s) ['cache']")]:
        with pytest.raises(StoreError, match=re.escape(why)):
            open_store_from_url(url)
