"""The state machine on a real SQLite store (no HTTP)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bridge.config import Route
from bridge.crypto import SecretBox
from bridge.errors import AlreadyClosed, AnswerRejected, NotAllowed, NotFound
from bridge.models import RequestIn, RequestState, Responder
from bridge.router import Router
from bridge.service import BridgeService
from bridge.store.sqlite import SQLiteStore
from tests.harness import ManualClock


@pytest.fixture
async def service(tmp_path: Path) -> AsyncIterator[BridgeService]:
    store = SQLiteStore(tmp_path / "b.db")
    await store.open()
    routes = [Route(name="ops", match={"labels.team": "ops"}, responders=["slack:U1", "slack:U2"]),
              Route(name="quorum", match={"labels.team": "sec"}, quorum=2)]
    svc = BridgeService(store, Router(routes, Route(name="default")), SecretBox("k" * 40), ManualClock())
    yield svc
    await svc.drain()
    await store.close()


def req(**kw: Any) -> RequestIn:
    data: dict[str, Any] = {"title": "Deploy?", "questions": [{"id": "ok", "kind": "confirm", "prompt": "Go?"}]}
    data.update(kw)
    return RequestIn.model_validate(data)


ANA = Responder(platform="slack", user_id="U1", name="ana")
BOB = Responder(platform="slack", user_id="U2", name="bob")
EVE = Responder(platform="slack", user_id="U666", name="eve")


async def test_first_answer_wins_under_concurrency(service: BridgeService) -> None:
    request, _ = await service.submit(req(), source="webhook")
    people = [Responder(platform="slack", user_id=f"U{i}", name=f"p{i}") for i in range(20)]
    results = await asyncio.gather(*(service.answer(request.id, p, {"ok": "yes"}, via="slack") for p in people),
                                   return_exceptions=True)
    winners = [r for r in results if not isinstance(r, BaseException)]
    losers = [r for r in results if isinstance(r, AlreadyClosed)]
    assert len(winners) == 1 and len(losers) == 19
    assert all("already answered by" in str(e) for e in losers)
    events = await service.store.list_events(request.id)
    assert [e.kind for e in events].count("answered") == 1
    assert len(await service.store.list_outbox(request_id=request.id)) == 1


async def test_idempotent_on_external_id(service: BridgeService) -> None:
    a, created_a = await service.submit(req(external_id="run-1"), source="webhook")
    b, created_b = await service.submit(req(external_id="run-1"), source="webhook")
    c, created_c = await service.submit(req(external_id="run-1"), source="delta")
    assert created_a and not created_b and created_c
    assert a.id == b.id != c.id


async def test_route_is_stored_and_responders_enforced(service: BridgeService) -> None:
    request, _ = await service.submit(req(labels={"team": "ops"}), source="webhook")
    assert request.route == "ops" and request.responders == ["slack:U1", "slack:U2"]
    with pytest.raises(NotAllowed):
        await service.answer(request.id, EVE, {"ok": "yes"}, via="slack")
    refused = [e for e in await service.store.list_events(request.id) if e.kind == "refused"]
    assert refused and refused[0].actor == "slack:U666"
    done = await service.answer(request.id, ANA, {"ok": "no"}, via="slack", reason="not today")
    assert done.state is RequestState.answered and done.answer and done.answer.reason == "not today"


async def test_invalid_answers_are_refused_with_the_question_named(service: BridgeService) -> None:
    request, _ = await service.submit(req(), source="webhook")
    with pytest.raises(AnswerRejected, match="question 'ok'"):
        await service.answer(request.id, ANA, {"ok": "perhaps"}, via="api")
    with pytest.raises(AnswerRejected, match="unknown question ids"):
        await service.answer(request.id, ANA, {"nope": "yes"}, via="api")
    with pytest.raises(NotFound):
        await service.answer("r_missing", ANA, {"ok": "yes"}, via="api")
    assert (await service.get(request.id)).state is not RequestState.answered  # type: ignore[union-attr]


async def test_cancel_then_answer_is_refused(service: BridgeService) -> None:
    request, _ = await service.submit(req(), source="webhook")
    cancelled = await service.cancel(request.id, actor="api", reason="run deleted")
    assert cancelled.state is RequestState.cancelled
    with pytest.raises(AlreadyClosed, match="already cancelled"):
        await service.answer(request.id, ANA, {"ok": "yes"}, via="api")
    with pytest.raises(AlreadyClosed):
        await service.cancel(request.id, actor="api")


async def test_secret_is_sealed_in_store_events_and_views(service: BridgeService, tmp_path: Path) -> None:
    request, _ = await service.submit(req(questions=[{"id": "pw", "kind": "secret", "prompt": "Password?"}]),
                                      source="webhook")
    done = await service.answer(request.id, ANA, {"pw": "correct-horse-battery"}, via="api")
    assert done.redacted_answer() == {"pw": "[secret]"}
    assert done.answer and done.answer.values["pw"] != "correct-horse-battery"
    assert service.secrets.open(done.answer.values["pw"]) == "correct-horse-battery"
    await service.store.close()
    for path in tmp_path.glob("b.db*"):
        assert b"correct-horse-battery" not in path.read_bytes()
    await service.store.open()
    events = await service.store.list_events(request.id)
    assert "correct-horse-battery" not in repr(events)


async def test_quorum_needs_distinct_approvals_and_one_rejection_ends_it(service: BridgeService) -> None:
    request, _ = await service.submit(req(labels={"team": "sec"}), source="webhook")
    first = await service.answer(request.id, ANA, {"ok": "yes"}, via="slack")
    assert first.is_open
    again = await service.answer(request.id, ANA, {"ok": "yes"}, via="slack")
    assert again.is_open  # the same person twice counts once
    final = await service.answer(request.id, BOB, {"ok": "yes"}, via="slack")
    assert final.state is RequestState.answered
    other, _ = await service.submit(req(labels={"team": "sec"}), source="webhook")
    rejected = await service.answer(other.id, EVE, {"ok": "no"}, via="slack")
    assert rejected.state is RequestState.answered and rejected.answer
    assert rejected.answer.values == {"ok": "no"}


async def test_withdraw_cancels_an_open_request_once(service: BridgeService) -> None:
    request, _ = await service.submit(req(external_id="e1"), source="delta")
    withdrawn = await service.withdraw("delta", "e1", "request.json disappeared")
    assert withdrawn and withdrawn.state is RequestState.cancelled
    assert await service.withdraw("delta", "e1", "again") is not None
    assert await service.withdraw("delta", "unknown", "x") is None
    assert not await service.store.list_outbox(request_id=request.id)  # nothing to write back


async def test_request_deadline_override_capped_by_route(tmp_path: Path) -> None:
    from datetime import timedelta

    store = SQLiteStore(tmp_path / "c.db")
    await store.open()
    clock = ManualClock()
    route = Route(name="r", timeout=timedelta(hours=2), max_timeout=timedelta(hours=4))
    svc = BridgeService(store, Router([], route), SecretBox(None), clock)
    a, _ = await svc.submit(req(), source="x")
    b, _ = await svc.submit(req(timeout_s=60), source="x")
    c, _ = await svc.submit(req(timeout_s=86400), source="x")
    assert a.deadline == clock.now() + timedelta(hours=2)
    assert b.deadline == clock.now() + timedelta(seconds=60)
    assert c.deadline == clock.now() + timedelta(hours=4)
    await svc.drain()
    await store.close()
