"""Four-eyes approval means two people: quorum counts people (`people:` joins one person's
handles), only verified identities vote, and `forbid_self_approval` keeps the requester
from approving their own request. Everything through the real HTTP API and web inbox."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from bridge.config import load_settings
from bridge.errors import ConfigError
from bridge.models import RequestState
from tests.harness import ManualClock
from tests.timing.helpers import CONFIRM, bridge_on, events, stored
from tests.web.helpers import Person

ANA_CLI, ANA_WEB, BO, CI, RELAY = ("ana-cli-token-0123456", "ana-web-token-0123456", "bo-token-01234567890",
                                   "ci-token-012345678901", "relay-token-012345678")
FOUR_EYES: dict[str, Any] = {
    "http": {"api_tokens": {"ana-laptop": ANA_CLI, "bo": BO, "ci": CI,
                            "relay": {"token": RELAY, "act_for_others": True}}},
    "web": {"tokens": {"ana": ANA_WEB}, "password": "shared-inbox-pass"},
    "people": {"ana": ["api:ana-laptop", "web:ana", "slack:U0ANA"], "bo": ["api:bo", "telegram:42"]},
    "groups": {"oncall": ["ana", "bo"]},
    "routes": [{"name": "prod", "match": {"labels.env": "prod"}, "notify": ["web"], "quorum": 2,
                "responders": ["group:oncall"], "forbid_self_approval": True}],
}


def client(daemon: Any, token: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=daemon.base_url, headers={"Authorization": f"Bearer {token}"})


async def create(daemon: Any, token: str = CI, **body: Any) -> str:
    async with client(daemon, token) as http:
        response = await http.post("/v1/requests", json={"title": "Deploy api v2 to prod", "questions": CONFIRM,
                                                          "labels": {"env": "prod"}, **body})
    assert response.status_code == 201, response.text
    await daemon.service.drain()
    return str(response.json()["id"])


async def vote(daemon: Any, rid: str, token: str, value: str = "yes", **body: Any) -> httpx.Response:
    async with client(daemon, token) as http:
        response = await http.post(f"/v1/requests/{rid}/answer", json={"value": value, **body})
    await daemon.service.drain()
    return response


async def test_one_person_with_two_handles_is_one_vote(tmp_path: Path) -> None:
    async with bridge_on(tmp_path, ManualClock(), FOUR_EYES) as daemon, Person(daemon.base_url) as ana_browser:
        rid = await create(daemon)
        assert (await vote(daemon, rid, ANA_CLI)).json()["state"] == "posted"  # api:ana-laptop is ana
        assert (await ana_browser.login(ANA_WEB)).status_code == 303  # web:ana is ana too
        assert (await ana_browser.answer(rid, {"q.ok": "yes"})).status_code == 303
        assert (await stored(daemon, rid)).is_open  # still one person
        assert [v.voter for v in await daemon.store.list_votes(rid)] == ["person:ana"]
        duplicate = await events(daemon, rid, "duplicate_vote")
        assert len(duplicate) == 1 and duplicate[0].actor == "web:ana" and duplicate[0].data["voter"] == "person:ana"

        assert (await vote(daemon, rid, BO)).status_code == 200
        request = await stored(daemon, rid)
        assert request.state in (RequestState.answered, RequestState.delivered)
        assert request.answer is not None and request.answer.responder.person == "bo"
        assert request.answer.responder.display == "bo"


async def test_shared_password_logins_are_one_identity_whatever_name_is_typed(tmp_path: Path) -> None:
    config = {**FOUR_EYES, "routes": [{**FOUR_EYES["routes"][0], "responders": [], "quorum": 1,
                                       "forbid_self_approval": False}]}
    async with bridge_on(tmp_path, ManualClock(), config) as daemon, \
            Person(daemon.base_url) as alice, Person(daemon.base_url) as not_alice:
        rid = await create(daemon)
        assert (await alice.login("shared-inbox-pass", name="alice")).status_code == 303
        assert (await not_alice.login("shared-inbox-pass", name="not-alice")).status_code == 303
        assert "no vote where several people must approve" in (await alice.get("/inbox")).text  # the page says so
        assert (await alice.answer(rid, {"q.ok": "yes"})).status_code == 303
        request = await stored(daemon, rid)
        assert request.answer is not None and request.answer.responder.key == "web:shared-password"
        assert request.answer.responder.name == "alice"  # the typed name is only shown


async def test_one_token_cannot_vote_as_several_people(tmp_path: Path) -> None:
    config = {**FOUR_EYES, "routes": [{**FOUR_EYES["routes"][0], "responders": []}]}
    async with bridge_on(tmp_path, ManualClock(), config) as daemon:
        rid = await create(daemon)
        assert (await vote(daemon, rid, BO, responder="ana")).status_code == 200
        assert (await vote(daemon, rid, BO, responder="someone-else")).status_code == 200
        assert (await stored(daemon, rid)).is_open
        votes = await daemon.store.list_votes(rid)
        assert [(v.voter, v.name) for v in votes] == [("person:bo", "bo")]
        first = (await events(daemon, rid, "vote"))[0]
        assert first.actor == "api:bo" and first.data["name"] == "ana"  # the typed name is only shown


async def test_a_token_allowed_to_act_for_others_votes_as_whom_it_names(tmp_path: Path) -> None:
    config = {**FOUR_EYES, "routes": [{**FOUR_EYES["routes"][0], "forbid_self_approval": False}]}
    async with bridge_on(tmp_path, ManualClock(), config) as daemon:
        rid = await create(daemon)
        assert (await vote(daemon, rid, RELAY, responder="slack:U0ANA")).json()["state"] == "posted"
        assert (await vote(daemon, rid, RELAY, responder="person:ana")).status_code == 200  # ana again
        assert (await stored(daemon, rid)).is_open
        assert (await vote(daemon, rid, RELAY, responder="telegram:42")).status_code == 200  # that is bo
        request = await stored(daemon, rid)
        assert not request.is_open and request.answer is not None
        assert request.answer.responder.key == "telegram:42" and request.answer.responder.person == "bo"
        assert [v.voter for v in await daemon.store.list_votes(rid)] == ["person:ana", "person:bo"]


async def test_the_requester_cannot_approve_but_may_withdraw(tmp_path: Path) -> None:
    async with bridge_on(tmp_path, ManualClock(), FOUR_EYES) as daemon:
        rid = await create(daemon, requested_by="ana")
        refused = await vote(daemon, rid, ANA_CLI)
        assert refused.status_code == 403
        assert "ana asked for this request: someone else must approve it" in refused.json()["detail"]
        note = (await events(daemon, rid, "refused"))[-1]
        assert note.actor == "api:ana-laptop" and note.data["reason"] == "self-approval"
        assert await daemon.store.list_votes(rid) == []
        # the token that submitted it is a requester too: a CI job cannot approve its own ask
        assert (await vote(daemon, rid, CI)).status_code == 403
        rejected = await vote(daemon, rid, ANA_CLI, "no", reason="wrong image")
        assert rejected.status_code == 200 and not (await stored(daemon, rid)).is_open


@pytest.mark.parametrize(("extra", "key", "words"), [
    ({"routes": [{"responders": ["person:zed"]}]}, "routes[0]", "person:zed is not defined"),
    ({"routes": [{"responders": ["group:nobody"]}]}, "routes[0]", "group:nobody is not defined"),
    ({"groups": {"g": ["ana", "zed"]}}, "groups.g", "zed not in people"),
    ({"people": {"bo": ["slack:U0ANA"]}}, "people.bo", "slack:U0ANA already belongs to ana"),
    ({"people": {"bo": ["slack:#deploys"]}}, "people.bo", "a Slack handle is a user id"),
    ({"people": {"bo": ["web:shared-password"]}}, "people.bo", "everyone's, not one person's"),
    ({"people": {"bo": ["irc:bo"]}}, "people.bo", "is not a handle"),
    ({"routes": [{"responders": ["group:pair"], "quorum": 3}]}, "routes[0]", "quorum 3 is larger than the 2 people"),
    ({"routes": [{"responders": ["person:ana", "slack:U0ANA", "api:ana-laptop"], "quorum": 2}]},
     "routes[0]", "quorum 2 is larger than the 1 people"),
])
def test_people_config_mistakes_are_refused(tmp_path: Path, extra: dict[str, Any], key: str, words: str) -> None:
    config: dict[str, Any] = {"people": {"ana": ["slack:U0ANA", "api:ana-laptop"], "bo": ["telegram:7"]},
                              "groups": {"pair": ["ana", "bo"]}}
    for section, value in extra.items():
        config[section] = {**config.get(section, {}), **value} if isinstance(value, dict) else value
    path = tmp_path / "hitl-bridge.yaml"
    path.write_text(yaml.safe_dump(config))
    with pytest.raises(ConfigError) as caught:
        load_settings(str(path), env={})
    assert caught.value.key == key, str(caught.value)
    assert words in caught.value.reason


def test_a_person_target_needs_one_handle_on_a_configured_channel(tmp_path: Path) -> None:
    from bridge.preflight import target_errors
    from tests.harness import make_settings

    settings = make_settings(tmp_path, {
        "people": {"ana": ["email:ana@example.com", "web:ana"], "bo": ["telegram:42"]},
        "routes": [{"notify": ["person:ana"], "escalate": [{"after": "5m", "notify": ["person:bo"]}]}]})
    # no email or Telegram channel here: neither person can be reached
    problems = target_errors(settings, [])  # no channels at all
    assert [(p.key, p.target) for p in problems] == [("routes[0].notify", "person:ana"),
                                                     ("routes[0].escalate[0].notify", "person:bo"),
                                                     ("default_route.notify", "web")]
    assert "reaches nobody" in problems[0].problem
    assert settings.directory.targets_of("person:ana") == ["email:ana@example.com"]  # web logins reach nobody
    assert settings.directory.targets_of("slack:#deploys") is None


async def test_a_reload_swaps_the_people(tmp_path: Path) -> None:
    """SIGHUP re-reads people: and groups: — a handle added to someone counts as them at once."""
    from bridge.daemon import Daemon

    path = tmp_path / "hitl-bridge.yaml"
    base: dict[str, Any] = {"store": {"url": f"sqlite:///{tmp_path}/bridge.db"}, "http": {"listen": "127.0.0.1:0",
                            "api_tokens": {"bo": BO, "bo-laptop": ANA_CLI}}, "sources": [{"type": "webhook"}],
                            "web": {}, "people": {"bo": ["api:bo"]},
                            "routes": [{"notify": ["web"], "quorum": 2}]}
    path.write_text(yaml.safe_dump(base))
    daemon = Daemon(load_settings(str(path), env={}))
    await daemon.start()
    try:
        rid = await create(daemon, BO)
        assert (await vote(daemon, rid, BO)).status_code == 200
        path.write_text(yaml.safe_dump({**base, "people": {"bo": ["api:bo", "api:bo-laptop"]}}))
        assert await daemon.reload(env={})
        assert daemon.service.people.person_of("api:bo-laptop") == "bo"
        assert (await vote(daemon, rid, ANA_CLI)).status_code == 200  # bo's laptop token: bo again
        assert (await stored(daemon, rid)).is_open
        assert [v.voter for v in await daemon.store.list_votes(rid)] == ["person:bo"]
    finally:
        await daemon.stop()
