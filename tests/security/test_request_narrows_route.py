"""A request body may narrow its route, never loosen it: its `responders` must be people the
route already allows, and it may not bring the route's automatic answer forward. Through the
real daemon's HTTP API, with real tokens."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from tests.harness import running_bridge

CI, EVE, MALLORY, ANA, BO = ("ci-token-0123456789abc", "eve-token-0123456789ab", "mallory-token-01234567",
                             "ana-token-0123456789ab", "bo-token-01234567890ab")
CONFIRM = [{"id": "ok", "kind": "confirm", "prompt": "Deploy api v2?"}]
CONFIG: dict[str, Any] = {
    "http": {"api_tokens": {"ci": CI, "eve": EVE, "mallory": MALLORY, "ana": ANA, "bo": BO}},
    "people": {"ana": ["api:ana", "slack:U0ANA"], "bo": ["api:bo"], "cy": ["telegram:77"]},
    "groups": {"oncall": ["ana", "bo"], "everyone": ["ana", "bo", "cy"]},
    "routes": [
        {"name": "prod", "match": {"labels.env": "prod"}, "notify": ["web"], "quorum": 2,
         "responders": ["group:oncall"]},
        {"name": "single", "match": {"labels.env": "single"}, "notify": ["web"], "responders": ["group:oncall"]},
        {"name": "autopilot", "match": {"labels.env": "auto"}, "notify": ["web"], "timeout": "1h",
         "on_timeout": {"answer": "yes"}},
        {"name": "guarded", "match": {"labels.env": "guarded"}, "notify": ["web"], "timeout": "1h",
         "on_timeout": {"answer": "no"}},
        {"name": "open", "match": {"labels.env": "dev"}, "notify": ["web"]},
    ],
}


async def create(bridge: Any, token: str, **body: Any) -> httpx.Response:
    async with httpx.AsyncClient(base_url=bridge.base_url, headers={"Authorization": f"Bearer {token}"}) as http:
        return await http.post("/v1/requests", json={"title": "Deploy api v2", "questions": CONFIRM, **body})


async def test_a_request_cannot_pick_outsiders_to_answer_it(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, CONFIG) as bridge:
        refused = await create(bridge, CI, labels={"env": "prod"}, responders=["api:eve", "api:mallory"])
        assert refused.status_code == 422, refused.text
        assert "responders" in refused.json()["detail"] and "'api:eve'" in refused.json()["detail"]
        assert await bridge.store.list_requests() == []  # nothing stored, nothing posted

        # one insider does not carry an outsider, and a group reaching beyond the route is refused
        for responders, named in ((["person:ana", "api:eve"], "api:eve"), (["group:everyone"], "group:everyone"),
                                  (["slack:U0EVE"], "slack:U0EVE"), (["person:nobody"], "person:nobody"),
                                  ([""], ""), (["slack:#oncall"], "slack:#oncall")):
            refused = await create(bridge, CI, labels={"env": "single"}, responders=responders)
            assert refused.status_code == 422 and repr(named) in refused.json()["detail"], refused.text
        assert await bridge.store.list_requests() == []


async def test_a_request_may_narrow_its_route_to_some_of_its_people(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, CONFIG) as bridge:
        # another handle of an allowed person, a person of the group, the group itself
        # (names in any case: `person:ANA` is ana)
        for responders in (["slack:U0ANA"], ["person:ana"], ["person:ANA"], ["group:oncall"], ["api:bo"]):
            made = await create(bridge, CI, labels={"env": "single"}, responders=responders)
            assert made.status_code == 201, made.text
        narrowed = await create(bridge, CI, labels={"env": "single"}, responders=["person:ana"])
        assert narrowed.json()["responders"] == ["person:ana"]  # bo, of the route, is not asked here
        unnamed = await create(bridge, CI, labels={"env": "single"})
        assert unnamed.json()["responders"] == ["group:oncall"]  # no responders: the route's

        # a route that allows anyone: the body's responders narrow it as before
        anyone = await create(bridge, CI, labels={"env": "dev"}, responders=["api:eve", "slack:U0EVE"])
        assert anyone.status_code == 201 and anyone.json()["responders"] == ["api:eve", "slack:U0EVE"], anyone.text


async def test_narrowing_below_the_quorum_is_refused(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, CONFIG) as bridge:
        refused = await create(bridge, CI, labels={"env": "prod"}, responders=["person:ana"])
        assert refused.status_code == 422 and "quorum of 2" in refused.json()["detail"], refused.text
        made = await create(bridge, CI, labels={"env": "prod"}, responders=["person:ana", "api:bo"])
        assert made.status_code == 201, made.text


async def test_a_request_cannot_bring_its_routes_automatic_answer_forward(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, CONFIG) as bridge:
        refused = await create(bridge, CI, labels={"env": "auto"}, timeout_s=1)
        assert refused.status_code == 422 and refused.json()["detail"].startswith("timeout_s:"), refused.text
        refused = await create(bridge, CI, labels={"env": "auto"}, deadline="2000-01-01T00:00:00Z")
        assert refused.status_code == 422 and refused.json()["detail"].startswith("deadline:"), refused.text
        later = await create(bridge, CI, labels={"env": "auto"}, timeout_s=7200)  # waiting longer tightens
        assert later.status_code == 201, later.text
        plain = await create(bridge, CI, labels={"env": "dev"}, timeout_s=1)  # no automatic answer: fails closed
        assert plain.status_code == 201, plain.text
        sooner = await create(bridge, CI, labels={"env": "guarded"}, timeout_s=1)  # rejected sooner: tightens
        assert sooner.status_code == 201, sooner.text
