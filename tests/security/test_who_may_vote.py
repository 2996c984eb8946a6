"""One person, one vote (issue 24): a token that acts for others answers only for a person of
`people:` and never approves the request it submitted itself where four-eyes applies; the
shared inbox password casts no vote where people are counted. Through the real HTTP API
with real tokens and the inbox with real sessions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bridge.models import RequestState
from tests.harness import ManualClock
from tests.timing.helpers import bridge_on, events, stored
from tests.timing.test_people import ANA_CLI, ANA_WEB, BO, FOUR_EYES, RELAY, create, vote
from tests.web.helpers import Person, text_of

OPEN_TO_ALL = {**FOUR_EYES, "routes": [{**FOUR_EYES["routes"][0], "responders": []}]}


@pytest.mark.parametrize("invented", ["mallory", "person:mallory", "slack:U0NOBODY", "api:made-up",
                                      "web:shared-password", "local", "group:oncall", "telegram:42 "])
async def test_a_relay_token_cannot_vote_for_someone_who_is_not_a_person(tmp_path: Path, invented: str) -> None:
    async with bridge_on(tmp_path, ManualClock(), OPEN_TO_ALL) as daemon:
        rid = await create(daemon)
        assert (await vote(daemon, rid, RELAY, responder="person:ana")).status_code == 200
        refused = await vote(daemon, rid, RELAY, responder=invented)
        if invented == "telegram:42 ":  # bo's handle, spelled with a space: still bo, and it decides
            assert refused.status_code == 200 and not (await stored(daemon, rid)).is_open
            return
        assert refused.status_code == 403, refused.text
        assert "is not a person of people:" in refused.json()["detail"]
        assert (await stored(daemon, rid)).is_open
        assert [v.voter for v in await daemon.store.list_votes(rid)] == ["person:ana"]
        note = (await events(daemon, rid, "refused"))[-1]  # on the record, as the token that tried
        assert note.actor == "api:relay" and note.data["reason"] == "not a person"


async def test_a_relayed_vote_is_the_persons_with_the_token_kept_as_relay(tmp_path: Path) -> None:
    async with bridge_on(tmp_path, ManualClock(), OPEN_TO_ALL) as daemon:
        rid = await create(daemon)
        assert (await vote(daemon, rid, RELAY, responder="ana")).status_code == 200
        assert (await vote(daemon, rid, RELAY, responder="slack:U0ANA")).status_code == 200  # ana again
        assert (await vote(daemon, rid, ANA_CLI)).status_code == 200  # ana herself: still one person
        assert (await stored(daemon, rid)).is_open
        first = (await events(daemon, rid, "vote"))[0]
        assert first.data["voter"] == "person:ana" and first.data["relayed_by"] == "api:relay"
        assert (await vote(daemon, rid, RELAY, responder="bo")).status_code == 200
        request = await stored(daemon, rid)
        assert request.state in (RequestState.answered, RequestState.delivered) and request.answer is not None
        assert request.answer.responder.person == "bo" and request.answer.responder.relayed_by == "api:relay"
        answered = (await events(daemon, rid, "answered"))[0]
        assert answered.data["relayed_by"] == "api:relay"


async def test_a_relay_token_cannot_approve_its_own_four_eyes_request(tmp_path: Path) -> None:
    async with bridge_on(tmp_path, ManualClock(), FOUR_EYES) as daemon:
        rid = await create(daemon, RELAY)  # the relay submitted it: created_by api:relay
        for person in ("ana", "person:bo", "slack:U0ANA"):
            refused = await vote(daemon, rid, RELAY, responder=person)
            assert refused.status_code == 403, (person, refused.text)
            assert "someone else must approve it" in refused.json()["detail"]
        assert await daemon.store.list_votes(rid) == []
        assert [e.data["reason"] for e in await events(daemon, rid, "refused")] == ["self-approval"] * 3
        assert (await vote(daemon, rid, ANA_CLI)).status_code == 200  # the people themselves may
        assert (await vote(daemon, rid, BO)).status_code == 200
        assert not (await stored(daemon, rid)).is_open


async def test_the_shared_password_casts_no_vote_where_people_are_counted(tmp_path: Path) -> None:
    config: dict[str, Any] = {**OPEN_TO_ALL, "routes": [
        {**OPEN_TO_ALL["routes"][0], "forbid_self_approval": False},
        {"name": "one-key", "match": {"labels.env": "dev"}, "notify": ["web"]}]}
    async with bridge_on(tmp_path, ManualClock(), config) as daemon, \
            Person(daemon.base_url) as shared, Person(daemon.base_url) as ana:
        rid = await create(daemon)
        assert (await ana.login(ANA_WEB)).status_code == 303
        assert (await ana.answer(rid, {"q.ok": "yes"})).status_code == 303  # ana, by her own token
        assert (await shared.login("shared-inbox-pass", name="ana")).status_code == 303  # ana again, by the password
        refused = await shared.answer(rid, {"q.ok": "yes"})
        assert refused.status_code == 403
        assert "the shared inbox password is not one person: log in with your own token" in text_of(refused.text)
        assert (await stored(daemon, rid)).is_open
        assert [v.voter for v in await daemon.store.list_votes(rid)] == ["person:ana"]
        note = (await events(daemon, rid, "refused"))[-1]
        assert note.actor == "web:shared-password" and note.data["reason"] == "shared password"
        assert (await shared.answer(rid, {"q.ok": "no"})).status_code == 403  # no rejection either
        assert (await stored(daemon, rid)).is_open
        dev = await create(daemon, labels={"env": "dev"})  # one answer decides: the password may give it
        assert (await shared.answer(dev, {"q.ok": "yes"})).status_code == 303
        assert not (await stored(daemon, dev)).is_open
