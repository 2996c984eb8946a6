"""Batches through a real daemon: alike requests grouped, answered with one call, each item
through the ordinary answer path with its own result and the shared batch id."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx

from bridge.batches import MAX_BATCH, batch_key, title_template
from bridge.config_routes import Route
from bridge.models import Responder
from tests.harness import ManualClock
from tests.timing.helpers import AUTH, CONFIRM, RELAY_TOKENS, bridge_on, events, stored

CI = "ci-token-0123456789abcdef"
PEOPLE: dict[str, Any] = {
    "http": {"api_tokens": {**RELAY_TOKENS["api_tokens"], "ci": {"token": CI}}},
    "people": {"ana": ["slack:U1", "web:ana"], "bo": ["slack:U2"], "eve": ["slack:U9"]},
    "routes": [{"name": "deploys", "match": {"source": "webhook"}, "notify": ["web:team"],
                "responders": ["person:ana", "person:bo"], "forbid_self_approval": True}],
}


async def create(daemon: Any, **body: Any) -> str:
    """A request submitted by the `ci` token (not the relay that answers: four-eyes knows both)."""
    async with httpx.AsyncClient(base_url=daemon.base_url, headers={"Authorization": f"Bearer {CI}"}) as client:
        response = await client.post("/v1/requests", json={"questions": CONFIRM, **body})
    assert response.status_code == 201, response.text
    await daemon.service.drain()
    return str(response.json()["id"])


async def batch(daemon: Any, body: dict[str, Any]) -> httpx.Response:
    async with httpx.AsyncClient(base_url=daemon.base_url, headers=AUTH) as client:
        response = await client.post("/v1/answers:batch", json=body)
    await daemon.service.drain()
    return response


def test_alike_titles_share_a_template() -> None:
    assert title_template("Delete file 'a.txt' (3 of 20)") == title_template("Delete file 'b.txt' (4 of 20)")
    assert title_template("Deploy api v2.3") != title_template("Restart api")


async def test_twenty_alike_requests_approved_in_one_call_but_one(tmp_path: Path) -> None:
    clock = ManualClock()
    async with bridge_on(tmp_path, clock, PEOPLE) as daemon:
        ids = [await create(daemon, title=f"Delete file 'f{n}.txt'", tool="fs.delete") for n in range(20)]
        grouped = await daemon.service.batches_waiting(Responder(platform="web", user_id="ana"), channel="web")
        assert [sorted(b.ids) for b in grouped] == [sorted(ids)]  # one batch of twenty
        keep = ids[4]
        response = await batch(daemon, {"ids": [i for i in ids if i != keep], "value": "yes",
                                        "responder": "person:ana"})
        assert response.status_code == 200, response.text
        result = response.json()
        assert result["counts"] == {"answered": 19}
        assert [r["id"] for r in result["results"]] == [i for i in ids if i != keep]
        assert (await stored(daemon, keep)).is_open
        answered = [(await events(daemon, i, "answered"))[0].data for i in ids if i != keep]
        assert {a["batch"] for a in answered} == {result["batch"]}  # each on its own record, one batch id
        answers = [(await stored(daemon, i)).answer for i in ids if i != keep]
        assert all(a is not None and a.values == {"ok": "yes"} for a in answers)


async def test_four_eyes_refuses_the_requester_on_that_item_alone(tmp_path: Path) -> None:
    clock = ManualClock()
    async with bridge_on(tmp_path, clock, PEOPLE) as daemon:
        mine = await create(daemon, title="Restart db", tool="ops.restart", requested_by="person:ana")
        others = [await create(daemon, title="Restart db", tool="ops.restart", requested_by="person:bo")
                  for _ in range(3)]
        response = await batch(daemon, {"ids": [*others, mine], "value": "yes", "responder": "ana"})
        results = {r["id"]: r for r in response.json()["results"]}
        assert results[mine]["outcome"] == "refused" and results[mine]["status"] == 403
        assert "someone else must approve" in results[mine]["reason"]
        assert all(results[i]["outcome"] == "answered" for i in others)
        refused = await events(daemon, mine, "refused")
        assert refused[0].data["reason"] == "self-approval" and refused[0].data["batch"] == response.json()["batch"]
        assert (await stored(daemon, mine)).is_open


async def test_a_person_cannot_batch_requests_they_may_not_answer(tmp_path: Path) -> None:
    clock = ManualClock()
    async with bridge_on(tmp_path, clock, PEOPLE) as daemon:
        ids = [await create(daemon, title="Restart db", tool="ops.restart") for _ in range(2)]
        eve = Responder(platform="slack", user_id="U9")
        result = await daemon.service.answer_batch([*ids, "r_nosuch"], eve, via="slack", value="yes")
        assert [(r.outcome, r.status) for r in result.items] == [("refused", 403), ("refused", 403),
                                                                  ("refused", 404)]
        assert [(await stored(daemon, i)).is_open for i in ids] == [True, True]


async def test_huge_and_empty_batches_are_refused_whole(tmp_path: Path) -> None:
    clock = ManualClock()
    async with bridge_on(tmp_path, clock, PEOPLE) as daemon:
        rid = await create(daemon, title="Restart db", tool="ops.restart")
        too_many = await batch(daemon, {"ids": [rid] + [f"r_{n}" for n in range(MAX_BATCH)], "value": "yes"})
        assert too_many.status_code == 422
        assert (await batch(daemon, {"ids": [], "value": "yes"})).status_code == 422
        assert (await stored(daemon, rid)).is_open
        wrong = await batch(daemon, {"ids": [rid], "values": {"nope": "yes"}, "responder": "ana"})
        assert wrong.json()["results"][0]["status"] == 422  # the values are checked per item


def test_a_route_may_name_its_own_key_or_never_batch() -> None:
    from bridge.models import Request

    def made(**fields: Any) -> Request:
        base = {"id": "r_1", "source": "webhook", "title": "Run job 7", "route": "r",
                "questions": [{"id": "ok", "kind": "confirm", "prompt": "?"}],
                "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z"}
        return Request.model_validate({**base, **fields})

    by_label = Route(name="r", batch_key=["labels.job"])
    assert batch_key(made(labels={"job": "a"}), by_label) == batch_key(made(title="x", labels={"job": "a"}), by_label)
    assert batch_key(made(labels={"job": "a"}), by_label) != batch_key(made(labels={"job": "b"}), by_label)
    assert batch_key(made(), Route(name="r", batch_key=[])) is None


async def test_the_async_client_batches_and_sets_a_window(tmp_path: Path) -> None:
    from hitl_bridge_client import AsyncClient

    token = RELAY_TOKENS["api_tokens"]["relay"]["token"]
    clock = ManualClock()
    async with bridge_on(tmp_path, clock, PEOPLE) as daemon, \
            AsyncClient(daemon.base_url, token=token) as client:
        ids = [await create(daemon, title=f"Delete file 'g{n}.txt'", tool="fs.delete") for n in range(3)]
        grouped = await client.batches()
        assert [sorted(b["ids"]) for b in grouped] == [sorted(ids)]
        result = await client.answer_batch([*ids, "r_nosuch"], "yes", responder="person:ana")
        assert result["counts"]["answered"] == 3 and result["results"][-1]["id"] == "r_nosuch"
        window = await client.away("bo", (clock.now() + timedelta(days=3)).isoformat(), person="person:ana")
        assert (window["person"], window["delegate"]) == ("ana", "bo")
        assert [w["person"] for w in await client.away_list()] == ["ana"]
        assert (await client.back("person:ana"))["ended"] is True
        assert await client.away_list() == []
