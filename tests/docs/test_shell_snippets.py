"""The shell snippets of the README, Getting started and the guides run, in order, in one
shell per page (as a reader types them into one terminal), against a real daemon: the
addresses `localhost:8787` / `127.0.0.1:8787` are the test daemon's (and `:8788` a second
replica's, for the PostgreSQL guide). A snippet that cannot run here says why just above it:
`<!-- not-runnable: needs a Slack workspace -->`."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import pytest

from bridge.daemon import Daemon
from tests.docs.snippets import DOCS, ROOT, SHELL, Block, blocks
from tests.harness import make_settings
from tests.store.conftest import postgres_admin_url, postgres_url  # noqa: F401 - fixtures

RUNNABLE_PAGES = [ROOT / "README.md", DOCS / "getting-started.md", *sorted((DOCS / "guides").glob("*.md"))]
REPLICAS = {DOCS / "guides" / "postgres-replicas.md"}  # run against two replicas on PostgreSQL
ADDRESS = re.compile(r"\b(?:localhost|127\.0\.0\.1):(8787|8788)\b")
CREATES = re.compile(r"/v1/requests\s+[^|]*-d\b")  # a curl that creates a request
TOOLS = ("bash", "curl", "jq", "openssl")  # what the snippets use besides hitl-bridge


def shell_blocks(page: Path) -> list[Block]:
    return [b for b in blocks(page) if b.language in SHELL]


def runnable(page: Path) -> list[Block]:
    return [b for b in shell_blocks(page) if b.marker is None]


def test_every_shell_snippet_runs_or_says_why_not() -> None:
    for page in RUNNABLE_PAGES:
        assert runnable(page), f"{page}: no runnable shell snippet"
        for block in shell_blocks(page):
            if block.marker is not None:
                assert block.marker == "not-runnable" and len(block.marker_value or "") >= 10, (
                    f"{block.id}: a shell snippet runs, or says why not: <!-- not-runnable: <why> -->")


def script(page: Path, ports: dict[str, int]) -> str:
    """The page's runnable snippets as one script, the documented addresses made the test's."""
    parts = []
    for block in runnable(page):
        text = ADDRESS.sub(lambda m: f"127.0.0.1:{ports[m.group(1)]}", block.text)
        parts.append(f"echo '== {block.id}' >&2\n{text}")
    return "\n".join(parts)


@asynccontextmanager
async def daemons(tmp_path: Path, store_url: str | None, count: int) -> AsyncIterator[list[Daemon]]:
    async with AsyncExitStack() as stack:
        started = []
        for n in range(count):
            config = {"store": {"url": store_url}} if store_url else {}
            daemon = Daemon(make_settings(tmp_path / f"replica-{n}", config))
            (tmp_path / f"replica-{n}").mkdir()
            await daemon.start()
            stack.push_async_callback(daemon.stop)
            started.append(daemon)
        yield started


async def run_page(page: Path, tmp_path: Path, store_url: str | None = None) -> None:
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"the snippets need {', '.join(missing)}, not installed here")
    count = 2 if page in REPLICAS else 1
    async with daemons(tmp_path, store_url, count) as running:
        ports = {"8787": running[0].port, "8788": running[-1].port}
        home = tmp_path / "home"
        home.mkdir()
        env = {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}", "HOME": str(home),
               "LANG": "C.UTF-8", "HITL_BRIDGE_URL": running[0].base_url}
        text = script(page, ports)
        shell = await asyncio.create_subprocess_exec(
            "bash", "-e", "-o", "pipefail", "-c", text, cwd=ROOT, env=env,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(shell.communicate(), timeout=120)
        transcript = f"--- stdout\n{out.decode()}\n--- stderr\n{err.decode()}"
        assert shell.returncode == 0, f"{page.relative_to(ROOT)}: a snippet failed\n{transcript}"
        created = await running[0].store.list_requests(limit=100)
        expected = sum(len(CREATES.findall(b.text.replace("\\\n", " "))) for b in runnable(page))
        assert len(created) == expected, f"{expected} request(s) asked, {len(created)} stored\n{transcript}"


SQLITE_PAGES = [p for p in RUNNABLE_PAGES if p not in REPLICAS]


@pytest.mark.parametrize("page", SQLITE_PAGES, ids=[str(p.relative_to(ROOT)) for p in SQLITE_PAGES])
async def test_shell_snippets_run(page: Path, tmp_path: Path) -> None:
    await run_page(page, tmp_path)


@pytest.mark.postgres
@pytest.mark.parametrize("page", sorted(REPLICAS), ids=[str(p.relative_to(ROOT)) for p in sorted(REPLICAS)])
async def test_shell_snippets_run_on_replicas(page: Path, tmp_path: Path, postgres_url: str) -> None:  # noqa: F811
    await run_page(page, tmp_path, postgres_url)
