"""Fixtures: the fake Telegram Bot API server on 127.0.0.1."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.fakes.telegram_api import FakeTelegram


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    server = FakeTelegram(per_chat_interval=0.0)
    await server.start()
    yield server
    await server.stop()
