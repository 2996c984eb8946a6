"""What the browser test modules share: one Chromium per module (a launch costs about a
second; each test opens its own context) and, for the modules that look at one daemon from
several viewports, one running bridge per module."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from bridge.daemon import Daemon
from tests.harness import running_bridge
from tests.web.browser import Browser, chromium


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def browser() -> AsyncIterator[Browser]:
    async with chromium() as shared:
        yield shared


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def bridge(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Daemon]:
    async with running_bridge(tmp_path_factory.mktemp(request.module.__name__.rsplit(".", 1)[-1])) as daemon:
        yield daemon
