"""Restarting the daemon in the middle of each phase: timers are rebuilt from the store,
nothing fires twice, nothing is skipped; downtime collapses missed reminders into one."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from bridge.models import RequestState, TimerStep
from tests.harness import ManualClock, wait_for
from tests.timing.helpers import answer, bridge_on, create, events, kinds, step, stored
from tests.timing.test_ladder import LADDER
from tests.timing.test_quorum import QUORUM


async def test_restart_without_downtime_fires_nothing_again(tmp_path: Path) -> None:
    clock = ManualClock()
    async with bridge_on(tmp_path, clock, LADDER) as daemon:
        rid = await create(daemon)
        await step(daemon, clock, minutes=15)  # reminder 1 and level 1
    for _ in range(3):
        async with bridge_on(tmp_path, clock, LADDER) as daemon:
            assert len(daemon.scheduler.index) == 1  # rebuilt from the store
            assert await daemon.scheduler.run_due() == 0
    async with bridge_on(tmp_path, clock, LADDER) as daemon:
        assert len(await events(daemon, rid, "reminded")) == 1
        assert len(await events(daemon, rid, "escalated")) == 1
        assert [p.target for p in await daemon.store.list_posts(rid)] == ["web:team", "web:lead"]


async def test_reminders_missed_while_down_are_sent_once(tmp_path: Path) -> None:
    clock = ManualClock()
    async with bridge_on(tmp_path, clock, {"routes": [{"notify": ["web:team"], "remind_every": "10m"}]}) as daemon:
        rid = await create(daemon)
        await step(daemon, clock, minutes=10)
        assert len(await events(daemon, rid, "reminded")) == 1
    clock.advance(minutes=35)  # down for 10m+35m: reminders at 20m, 30m, 40m were missed
    async with bridge_on(tmp_path, clock, {"routes": [{"notify": ["web:team"], "remind_every": "10m"}]}) as daemon:
        reminded = await events(daemon, rid, "reminded")
        assert [e.data["n"] for e in reminded] == [1, 2]  # one reminder at start, not three
        assert reminded[-1].data["missed"] == 2
        request = await stored(daemon, rid)
        assert (request.next_reminder_at - request.created_at).total_seconds() == 50 * 60  # type: ignore[operator]
        assert await step(daemon, clock, minutes=4) == 0
        assert await step(daemon, clock, minutes=1) == 1  # 50m: back on the grid


async def test_restart_between_levels_fires_the_next_level_once(tmp_path: Path) -> None:
    clock = ManualClock()
    async with bridge_on(tmp_path, clock, LADDER) as daemon:
        rid = await create(daemon)
        await step(daemon, clock, minutes=15)
        assert (await stored(daemon, rid)).escalation_level == 1
    clock.advance(minutes=40)  # down across level 2 (45m) and reminders 20m..50m
    async with bridge_on(tmp_path, clock, LADDER) as daemon:
        request = await stored(daemon, rid)
        assert request.escalation_level == 2
        escalated = await events(daemon, rid, "escalated")
        assert [e.data["level"] for e in escalated] == [1, 2]
        assert [p.target for p in await daemon.store.list_posts(rid)] == ["web:team", "web:lead", "web:boss"]
        assert len(await events(daemon, rid, "reminded")) == 2
    async with bridge_on(tmp_path, clock, LADDER) as daemon:  # and again: nothing repeats
        assert len(await events(daemon, rid, "escalated")) == 2
        assert len(await daemon.store.list_posts(rid)) == 3


async def test_down_across_both_levels_posts_both_once(tmp_path: Path) -> None:
    clock = ManualClock()
    async with bridge_on(tmp_path, clock, LADDER) as daemon:
        rid = await create(daemon)
    clock.advance(minutes=50)
    async with bridge_on(tmp_path, clock, LADDER) as daemon:
        escalated = await events(daemon, rid, "escalated")
        assert [e.data["level"] for e in escalated] == [1, 2]  # no level skipped
        assert [p.target for p in await daemon.store.list_posts(rid)] == ["web:team", "web:lead", "web:boss"]
        assert len(await events(daemon, rid, "reminded")) == 1


async def test_deadline_passed_while_down_fires_at_start_exactly_once(tmp_path: Path) -> None:
    clock = ManualClock()
    async with bridge_on(tmp_path, clock, LADDER) as daemon:
        rid = await create(daemon)
        await step(daemon, clock, minutes=50)
    clock.advance(hours=3)
    async with bridge_on(tmp_path, clock, LADDER) as daemon:
        request = await stored(daemon, rid)
        assert request.state in (RequestState.expired, RequestState.delivered)
        assert request.answer is not None and request.answer.via == "timeout"
    clock.advance(hours=3)
    async with bridge_on(tmp_path, clock, LADDER) as daemon:
        assert (await kinds(daemon, rid)).count("expired") == 1
        assert len(daemon.scheduler.index) == 0


async def test_crash_between_escalation_claim_and_post_is_reposted(tmp_path: Path) -> None:
    """The claim (level, targets) is stored first; a crash before the post leaves a target
    without a copy: the next start posts it."""
    clock = ManualClock()
    async with bridge_on(tmp_path, clock, LADDER) as daemon:
        rid = await create(daemon)
        # what the store holds right after a claim whose post never happened
        await daemon.store.update_request(rid, now=clock.now(), escalation_level=1,
                                          targets=["web:team", "web:lead"])
    async with bridge_on(tmp_path, clock, LADDER) as daemon:
        await daemon.service.drain()
        assert [p.target for p in await daemon.store.list_posts(rid)] == ["web:team", "web:lead"]


async def test_restart_between_votes_keeps_the_first_vote(tmp_path: Path) -> None:
    clock = ManualClock()
    async with bridge_on(tmp_path, clock, QUORUM) as daemon:
        rid = await create(daemon)
        assert (await answer(daemon, rid, "yes", "ana")).status_code == 200
    async with bridge_on(tmp_path, clock, QUORUM) as daemon:
        assert (await answer(daemon, rid, "yes", "ana")).status_code == 200  # still counts once
        assert (await stored(daemon, rid)).is_open
        assert (await answer(daemon, rid, "yes", "bob")).status_code == 200
        request = await stored(daemon, rid)
        assert not request.is_open and request.answer is not None
        assert [v.voter for v in await daemon.store.list_votes(rid)] == ["person:ana", "person:bob"]


async def test_steps_claimed_before_a_crash_are_carried_out_at_once_at_the_next_start(tmp_path: Path) -> None:
    """What the store holds when the daemon died right after claiming a reminder and an
    escalation level, before posting either: the next start (SQLite: nobody else can be
    working on them) takes both over without waiting for their leases, and posts once."""
    clock = ManualClock()
    async with bridge_on(tmp_path, clock, LADDER) as daemon:
        rid = await create(daemon)
        lease = clock.now() + timedelta(seconds=60)
        steps = [TimerStep(id="remind:1", kind="remind", targets=["web:team"], lease_until=lease, owner="gone:1"),
                 TimerStep(id="escalate:1", kind="escalate", targets=["web:lead"], lease_until=lease, owner="gone:1")]
        await daemon.store.update_request(rid, now=clock.now(), reminders_sent=1, escalation_level=1,
                                          targets=["web:team", "web:lead"], timer_steps=steps)
    async with bridge_on(tmp_path, clock, LADDER) as daemon:
        async def finished() -> bool:
            await daemon.service.drain()
            return not (await stored(daemon, rid)).timer_steps

        await wait_for(finished, timeout=10)
        assert [p.target for p in await daemon.store.list_posts(rid)] == ["web:team", "web:lead"]
        taken = [e.data for e in await events(daemon, rid, "timer_step_taken_over")]
        assert sorted(d["step"] for d in taken) == ["escalate:1", "remind:1"]
        assert {d["from"] for d in taken} == {"gone:1"}
        assert await step(daemon, clock, seconds=61) == 0  # nothing left to take over when the leases end
        assert [p.target for p in await daemon.store.list_posts(rid)] == ["web:team", "web:lead"]
