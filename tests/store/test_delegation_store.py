"""Delegation windows live in the store's kv on SQLite and PostgreSQL alike: one replica
sets a window, another reads it, a reopened store keeps it, and it ends on time."""

from __future__ import annotations

from datetime import timedelta

import pytest

from bridge.delegation import DelegationRefused, Delegations
from bridge.people import People
from tests.harness import ManualClock
from tests.store.conftest import Backend

PEOPLE = People({"ana": ["slack:U1"], "bo": ["slack:U2"], "cy": ["slack:U3"]})


async def test_a_window_is_shared_kept_and_ends_on_time(backend: Backend) -> None:
    clock = ManualClock()
    first, second = await backend.open_store(), await backend.open_store()
    try:
        here, there = Delegations(first, clock), Delegations(second, clock)
        starts, until = clock.now() + timedelta(hours=1), clock.now() + timedelta(hours=5)
        await here.set(PEOPLE, "slack:U1", "bo", until, starts=starts, by="slack:U1")
        await there.load()  # another replica
        assert there.delegate_of("ana") is None  # not yet
        clock.advance(hours=1)
        assert there.delegate_of("ana") == "bo" and there.stands_in_for("bo") == ["ana"]
        with pytest.raises(DelegationRefused, match="loop"):
            await there.set(PEOPLE, "bo", "ana", until)
    finally:
        await first.close()
        await second.close()
    reopened = await backend.open_store()  # a restart
    try:
        after = Delegations(reopened, clock)
        await after.load()
        assert after.delegate_of("ana") == "bo"
        clock.current = until
        assert after.delegate_of("ana") is None  # ends on time, whatever was read
        await after.load()
        assert after.listing() == []  # and is no longer read at all
    finally:
        await reopened.close()
