"""Replicas on one PostgreSQL store, in polling mode: Telegram ends a `getUpdates` when
another starts, so exactly one replica polls; when it stops, a standby takes over and goes
on from the committed offset. The fake Bot API answers a second poller with 409, as Telegram does."""

from __future__ import annotations

from contextlib import AsyncExitStack
from pathlib import Path

import pytest

from bridge.daemon import Daemon
from tests.fakes.telegram_api import FakeTelegram
from tests.store.conftest import postgres_admin_url, postgres_url  # noqa: F401 - fixtures
from tests.telegram.helpers import closed, confirm, posted_message, submit, telegram_bridge

pytestmark = pytest.mark.postgres

def polls(fake: FakeTelegram) -> int:
    return sum(1 for c in fake.calls if c.method == "getUpdates")


async def test_one_replica_polls_and_a_standby_takes_over(
    tmp_path: Path, fake: FakeTelegram, postgres_url: str  # noqa: F811
) -> None:
    ann = fake.person(42, "Ann")
    shared = {"store": {"url": postgres_url}, "telegram": {"failover_after": "100ms"}}
    async with AsyncExitStack() as stack:
        replicas: list[Daemon] = []
        for name in ("a", "b"):
            (tmp_path / name).mkdir()
            replicas.append(await stack.enter_async_context(
                telegram_bridge(tmp_path / name, fake, extra=shared)))
        first = await submit(replicas[0], confirm("Deploy web"))
        await ann.press(await posted_message(fake, 42, "Deploy web"), "Approve")
        assert (await closed(replicas[1], first)).answer is not None
        await fake.wait_for(lambda: polls(fake) >= 3)
        assert fake.conflicts == 0  # never two pollers at once

        role = f"telegram-polling:{fake.bot_id}"
        holds = [await r.store.try_lead(role) for r in replicas]  # the holder re-checks; the other is refused
        assert sorted(holds) == [False, True]
        leader, standby = (replicas[0], replicas[1]) if holds[0] else (replicas[1], replicas[0])
        await leader.stop()  # a rolling deploy stops it; the stack's second stop is harmless

        second = await submit(standby, confirm("Rotate keys"))
        await ann.press(await posted_message(fake, 42, "Rotate keys"), "Approve")
        request = await closed(standby, second)
        assert request.answer is not None and request.answer.responder.user_id == "42"
        assert await standby.store.try_lead(role) is True
