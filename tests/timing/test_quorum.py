"""`quorum: N`: N distinct approvals; one rejection ends it; a second vote by the same
person counts once; for non-confirm questions N identical answers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bridge.models import RequestState
from tests.harness import ManualClock
from tests.timing.helpers import RELAY_TOKENS, answer, bridge_on, create, events, stored

QUORUM: dict[str, Any] = {
    "http": RELAY_TOKENS,
    "routes": [{"name": "two-keys", "notify": ["web:team"], "quorum": 2,
                "responders": ["api:ana", "api:bob", "api:carl"]}],
    # the relay token answers for people of `people:` only
    "people": {"ana": ["api:ana"], "bob": ["api:bob"], "carl": ["api:carl"]},
}


async def test_two_distinct_approvals_are_needed_and_a_duplicate_counts_once(tmp_path: Path) -> None:
    async with bridge_on(tmp_path, ManualClock(), QUORUM) as daemon:
        rid = await create(daemon)
        first = await answer(daemon, rid, "yes", "ana")
        assert first.status_code == 200, first.text
        assert first.json()["state"] == "posted"
        again = await answer(daemon, rid, "approve", "ana")  # same person, other spelling
        assert again.status_code == 200
        request = await stored(daemon, rid)
        assert request.is_open
        votes = await daemon.store.list_votes(rid)
        assert [v.voter for v in votes] == ["person:ana"]
        assert len(await events(daemon, rid, "duplicate_vote")) == 1

        second = await answer(daemon, rid, "yes", "bob")
        assert second.status_code == 200
        request = await stored(daemon, rid)
        assert request.state in (RequestState.answered, RequestState.delivered)
        assert request.answer is not None and request.answer.values == {"ok": "yes"}
        assert request.answer.responder.user_id == "bob"  # the vote that completed the quorum
        assert [v.voter for v in await daemon.store.list_votes(rid)] == ["person:ana", "person:bob"]

        late = await answer(daemon, rid, "no", "carl")
        assert late.status_code == 409


async def test_one_rejection_ends_it_as_rejected(tmp_path: Path) -> None:
    async with bridge_on(tmp_path, ManualClock(), QUORUM) as daemon:
        rid = await create(daemon)
        assert (await answer(daemon, rid, "yes", "ana")).status_code == 200
        rejected = await answer(daemon, rid, "no", "bob")
        assert rejected.status_code == 200
        request = await stored(daemon, rid)
        assert not request.is_open
        assert request.answer is not None and request.answer.values == {"ok": "no"}
        assert request.answer.responder.user_id == "bob"


async def test_non_confirm_quorum_needs_identical_answers(tmp_path: Path) -> None:
    questions = [{"id": "env", "kind": "choice", "prompt": "Where to?", "options": ["staging", "prod"]}]
    async with bridge_on(tmp_path, ManualClock(), QUORUM) as daemon:
        rid = await create(daemon, questions=questions)
        assert (await answer(daemon, rid, "prod", "ana")).status_code == 200
        assert (await answer(daemon, rid, "staging", "bob")).status_code == 200
        assert (await stored(daemon, rid)).is_open  # 1 prod, 1 staging: no quorum yet
        assert (await answer(daemon, rid, "prod", "carl")).status_code == 200
        request = await stored(daemon, rid)
        assert request.answer is not None and request.answer.values == {"env": "prod"}


async def test_an_invalid_vote_is_refused_and_not_counted(tmp_path: Path) -> None:
    async with bridge_on(tmp_path, ManualClock(), QUORUM) as daemon:
        rid = await create(daemon)
        bad = await answer(daemon, rid, "maybe", "ana")
        assert bad.status_code == 422
        assert "yes or no" in bad.text
        assert await daemon.store.list_votes(rid) == []
        assert (await stored(daemon, rid)).is_open


async def test_timeout_answer_ends_a_quorum_request(tmp_path: Path) -> None:
    clock = ManualClock()
    config = {"routes": [{**QUORUM["routes"][0], "timeout": "1h", "on_timeout": {"answer": "no"}}]}
    async with bridge_on(tmp_path, clock, config) as daemon:
        rid = await create(daemon)
        assert (await answer(daemon, rid, "yes", "ana")).status_code == 200
        clock.advance(hours=1)
        await daemon.scheduler.run_due()
        request = await stored(daemon, rid)
        assert request.answer is not None and request.answer.via == "timeout"
        assert request.answer.values == {"ok": "no"}
