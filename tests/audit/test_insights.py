"""Decision insights against a known sequence of answers and timeouts: counts by verdict,
median and p90 time to decide, per route and per person, from the store (every outcome, not
only approvals that resumed); /metrics counts each decision as it is made; the inbox page
draws them as inline SVG."""

from __future__ import annotations

from pathlib import Path

import httpx

from bridge.audit.insights import Verdict, gather
from bridge.models import Answer, RequestState, Responder
from bridge.store import open_store_from_url
from tests.harness import running_bridge
from tests.store.helpers import at, make_request


def decided(route: str, state: RequestState, waited: float, *, value: str | None = None, who: str = "",
            platform: str = "slack", person: str | None = None, via: str = "slack") -> object:
    request = make_request(route=route, state=state)
    if value is not None:
        request.answer = Answer(values={"ok": value}, responder=Responder(platform=platform, user_id=who, name=who,
                                                                         person=person),
                                via=via, answered_at=at(waited))
    request.updated_at = at(waited)
    return request


async def test_a_known_sequence_of_answers_and_timeouts(tmp_path: Path) -> None:
    store = open_store_from_url(f"sqlite:///{tmp_path}/bridge.db")
    await store.open()
    try:
        for request in (
            decided("deploys", RequestState.delivered, 60, value="yes", who="U1", person="ana"),
            decided("deploys", RequestState.answered, 120, value="no", who="U1", person="ana"),
            decided("deploys", RequestState.delivered, 30, value="yes", who="bob", platform="telegram"),
            decided("deploys", RequestState.expired, 600),  # nobody answered
            decided("deploys", RequestState.delivered, 0, value="yes", who="auto", platform="policy", via="policy"),
            decided("db", RequestState.failed, 300, value="no", who="bob", platform="telegram"),  # write-back failed
            decided("db", RequestState.delivered, 900, value="yes", who="timeout", platform="timeout",
                    via="timeout"),  # the route's timeout rule said yes
            decided("db", RequestState.cancelled, 5),  # withdrawn: no decision
            decided("db", RequestState.posted, 5),  # still open
        ):
            await store.create_request(request)  # type: ignore[arg-type]
        found = await gather(store)
    finally:
        await store.close()
    assert found.decisions == 7 and not found.truncated
    deploys = found.by_route["deploys"]
    assert deploys.counts == {Verdict.approved: 2, Verdict.rejected: 1, Verdict.answered: 0, Verdict.expired: 1,
                              Verdict.automatic: 1}
    assert (deploys.median, deploys.p90) == (60, 600)  # of 0, 30, 60, 120, 600: every outcome counts
    db = found.by_route["db"]
    assert db.counts[Verdict.rejected] == 1 and db.counts[Verdict.expired] == 1 and db.total == 2
    assert (db.median, db.p90) == (600, 900)
    assert set(found.by_person) == {"ana", "telegram:bob", "policy:auto"}  # nobody for what expired
    ana, bob = found.by_person["ana"], found.by_person["telegram:bob"]
    assert (ana.counts[Verdict.approved], ana.counts[Verdict.rejected], ana.median, ana.p90) == (1, 1, 90, 120)
    assert (bob.counts[Verdict.approved], bob.counts[Verdict.rejected], bob.median, bob.p90) == (1, 1, 165, 300)
    assert found.by_person["policy:auto"].counts[Verdict.automatic] == 1
    assert found.as_dict()["overall"]["total"] == 7  # type: ignore[index]


async def test_metrics_count_each_decision_and_the_inbox_draws_them(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as bridge, httpx.AsyncClient(base_url=bridge.base_url) as client:
        for value in ("yes", "yes", "no"):
            r = await client.post("/v1/requests", json={
                "title": "Deploy?", "questions": [{"id": "ok", "kind": "confirm", "prompt": "Deploy?"}]})
            rid = r.json()["id"]
            assert (await client.post(f"/v1/requests/{rid}/answer", json={"value": value})).status_code == 200
        metrics = (await client.get("/metrics")).text
        page = await client.get("/inbox/insights")
    assert 'hitl_decisions_total{route="default",verdict="approved",who="api:local"} 2.0' in metrics
    assert 'hitl_decisions_total{route="default",verdict="rejected",who="api:local"} 1.0' in metrics
    assert 'hitl_time_to_decide_seconds_count{route="default",verdict="approved"} 2.0' in metrics
    assert page.status_code == 200, page.text
    html = page.text
    assert "<svg" in html and 'class="v-approved"' in html and 'class="v-rejected"' in html
    assert "3 decision(s)" in html and "api:local" in html and "<script" not in html.split("<main", 1)[1]
