"""The answer path as ordered checks with a typed actor (bridge.answering), on a real
SQLite store: what the actor kinds mean, and that a new rule is one more check."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bridge import answering
from bridge.answering import CHECKS, Actor, ActorKind
from bridge.answering.desk import Attempt, Desk
from bridge.config import Route
from bridge.crypto import SecretBox
from bridge.errors import AnswerRejected, NotAllowed
from bridge.models import RequestIn, RequestState, Responder
from bridge.router import Router
from bridge.service import BridgeService
from bridge.store.sqlite import SQLiteStore
from tests.harness import ManualClock

ANA = Responder(platform="slack", user_id="U1", name="ana")
EVE = Responder(platform="slack", user_id="U666", name="eve")


@pytest.fixture
async def service(tmp_path: Path) -> AsyncIterator[BridgeService]:
    store = SQLiteStore(tmp_path / "b.db")
    await store.open()
    routes = [Route(name="ops", match={"labels.team": "ops"}, responders=["slack:U1"])]
    svc = BridgeService(store, Router(routes, Route(name="default")), SecretBox("k" * 40), ManualClock())
    yield svc
    await svc.drain()
    await store.close()


def ops_request() -> RequestIn:
    return RequestIn.model_validate({"title": "Deploy?", "labels": {"team": "ops"},
                                     "questions": [{"id": "ok", "kind": "confirm", "prompt": "Go?"}]})


@pytest.mark.parametrize(("via", "responder", "kind", "trusted"), [
    ("slack", ANA, ActorKind.person, False),
    ("telegram", Responder(platform="telegram", user_id="42"), ActorKind.person, False),
    ("email", Responder(platform="email", user_id="ana@example.org"), ActorKind.person, False),
    ("api", Responder(platform="api", user_id="ci"), ActorKind.api, True),
    ("cli", Responder(platform="cli", user_id="ana"), ActorKind.api, True),
    ("web", Responder(platform="web", user_id="ana"), ActorKind.api, True),
    ("api", Responder(platform="person", user_id="ana", relayed_by="api:desk"), ActorKind.relay, True),
    ("timeout", Actor.on_timeout().responder, ActorKind.timeout, True),
])
def test_an_actor_is_typed_by_how_the_bridge_knows_who_acts(
        via: str, responder: Responder, kind: ActorKind, trusted: bool) -> None:
    actor = Actor.of(responder, via)
    assert (actor.kind, actor.trusted, actor.via) == (kind, trusted, via)
    assert actor.is_timeout is (kind is ActorKind.timeout)


async def test_who_may_answer_is_checked_before_the_values(service: BridgeService) -> None:
    request, _ = await service.submit(ops_request(), source="webhook")
    with pytest.raises(NotAllowed):  # not a responder, and a value that fits nothing: refused as not allowed
        await service.answer(request.id, EVE, {"ok": "perhaps"}, via="slack")
    with pytest.raises(AnswerRejected):
        await service.answer(request.id, ANA, {"ok": "perhaps"}, via="slack")
    refused = [(e.actor, e.data["reason"]) for e in await service.store.list_events(request.id) if e.kind == "refused"]
    assert refused == [("slack:U666", "not in responders")]


async def test_a_new_rule_is_one_more_check_in_the_list(service: BridgeService) -> None:
    seen: list[dict[str, object]] = []

    async def no_friday_deploys(desk: Desk, attempt: Attempt) -> None:
        seen.append(dict(attempt.clean))  # runs after the values were checked: sees them normalised
        raise NotAllowed(attempt.actor.responder.display)

    request, _ = await service.submit(ops_request(), source="webhook")
    with pytest.raises(NotAllowed):
        await answering.answer(service, request.id, Actor.of(ANA, "slack"), {"ok": "yes"},
                               checks=(*CHECKS, no_friday_deploys))
    assert seen == [{"ok": "yes"}]
    still = await service.get(request.id)
    assert still is not None and still.state is RequestState.pending and still.answer is None
    done = await answering.answer(service, request.id, Actor.of(ANA, "slack"), {"ok": "yes"})
    assert done.state is RequestState.answered and done.answer is not None and done.answer.via == "slack"
