"""A watch stream (`POST /v1/requests:watch`) on one PostgreSQL replica learns of answers given
on another: by notification, and after its listening connection was lost (the follower's
catch-up reads the streams' ids too). Nothing sleeps to wait: every wait has a deadline."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness import wait_for
from tests.store.test_wake import AUTH, cut_listening, follower_of, replicas
from tests.timing.helpers import answer, create
from tests.watch_stream import WITHIN, watching


@pytest.mark.postgres
async def test_answers_on_replica_a_reach_a_stream_on_replica_b(tmp_path: Path, postgres_url: str) -> None:
    async with replicas(tmp_path, postgres_url) as (a, b):
        ids = [await create(a) for _ in range(3)]
        follower = follower_of(b)
        async with watching(b.base_url, ids, headers=AUTH) as stream:
            for rid in reversed(ids):
                assert (await answer(a, rid, "yes", "ann")).status_code == 200
            events = await stream.until(4)
        # a stream waits on b: its follower read again after the short pause, as for a long poll
        assert follower.received and follower.last_hold == follower.coalesce_waited_s
        assert stream.closed_ids() == list(reversed(ids))
        assert all(data["answer"]["values"] == {"ok": "yes"} for kind, data in events if kind == "closed")
        assert events[-1] == ("end", {"open": [], "reason": "done"})
        await wait_for(lambda: b.service.changes.watched_count() == 0, WITHIN)


@pytest.mark.postgres
async def test_a_stream_learns_of_an_answer_given_while_its_replica_was_not_listening(
        tmp_path: Path, postgres_url: str, postgres_admin_url: str) -> None:
    async with replicas(tmp_path, postgres_url) as (a, b):
        follower = follower_of(b)
        follower.backoff = (1.0,)  # a gap long enough to be sure the answer lands inside it
        ids = [await create(a), await create(a)]
        async with watching(b.base_url, ids, headers=AUTH) as stream:
            await cut_listening(follower, postgres_admin_url)
            received = follower.received
            assert (await answer(a, ids[1], "no", "ann")).status_code == 200  # while b is not listening
            [(kind, data)] = await stream.until(1)  # b caught up after reconnecting
            assert (kind, data["id"], data["answer"]["values"]) == ("closed", ids[1], {"ok": "no"})
            assert follower.received == received  # ...not by a notification
            assert (await answer(a, ids[0], "yes", "ann")).status_code == 200  # and it listens again
            events = await stream.until(3)
        assert stream.closed_ids() == [ids[1], ids[0]] and events[-1][0] == "end"
        assert follower.reconnects == 1
