"""Search, counts on the tabs and "waiting for me" through a real daemon: who is looking
(a personal token, an API token, the shared password, an open inbox) decides what waits
for them, by the people and groups of the config."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from bridge.models import Responder
from tests.harness import running_bridge
from tests.web.helpers import CHOICE, CONFIRM, TEXT, Person, create, text_of

ANA, BO, CI = "ana-token-0123456789abc", "bo-token-0123456789abcd", "ci-api-token-0123456789"
CONFIG: dict[str, Any] = {
    "http": {"api_tokens": {"ci": CI}},
    "web": {"tokens": {"ana": ANA, "bo": BO}, "password": "shared-inbox-pass"},
    "people": {"ana": ["web:ana", "slack:U0ANA"], "bo": ["web:bo"], "ci": ["api:ci"]},
    "groups": {"oncall": ["ana", "bo"]},
    "routes": [{"name": "two-keys", "match": {"labels.keys": "two"}, "notify": ["web"], "quorum": 2}],
}


def row_ids(page: str) -> list[str]:
    return [part.split('"')[0] for part in page.split('id="row-')[1:]]


def count(page: str, tab: str) -> str | None:
    marker = f'id="count-{tab}">'
    return page.split(marker)[1].split("<")[0] if marker in page else None


async def test_waiting_for_me_follows_the_people_in_the_config(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, CONFIG) as bridge, Person(bridge.base_url) as ana, \
            Person(bridge.base_url) as bo, Person(bridge.base_url) as shared, \
            Person(bridge.base_url, headers={"Authorization": f"Bearer {CI}"}) as ci:
        auth = {"headers": {"Authorization": f"Bearer {CI}"}}
        group = await create(bridge, {**CONFIRM, "responders": ["group:oncall"]}, **auth)
        by_slack = await create(bridge, {**CHOICE, "responders": ["slack:@U0ANA"]}, **auth)
        only_bo = await create(bridge, {**TEXT, "responders": ["person:bo"]}, **auth)
        anyone = await create(bridge, CONFIRM, **auth)  # names nobody: in "Open", not in anyone's list
        for_ci = await create(bridge, {**TEXT, "responders": ["api:ci"]}, **auth)
        quorum = await create(bridge, {**CONFIRM, "labels": {"keys": "two"}, "responders": ["group:oncall"]}, **auth)
        closed = await create(bridge, {**CONFIRM, "responders": ["person:ana"]}, **auth)
        await bridge.service.answer(closed, Responder(platform="web", user_id="bo"), {"ok": "yes"}, via="web")
        assert (await ana.login(ANA)).status_code == 303
        assert (await bo.login(BO)).status_code == 303
        assert (await shared.login("shared-inbox-pass", name="Dana")).status_code == 303

        page = (await ana.get("/inbox?view=mine")).text
        assert row_ids(page) == [quorum, by_slack, group]
        assert (count(page, "mine"), count(page, "open"), count(page, "answered")) == ("3", "6", "1")
        assert text_of(page).count("asks you") == 3
        assert row_ids((await bo.get("/inbox?view=mine")).text) == [quorum, only_bo, group]
        assert row_ids((await ci.get("/inbox?view=mine")).text) == [for_ci]
        assert anyone in row_ids((await ana.get("/inbox")).text)

        # a vote is an answer: the request leaves ana's list, stays in bo's
        await ana.answer(quorum, {"q.ok": "yes"})
        assert quorum not in row_ids((await ana.get("/inbox?view=mine")).text)
        assert quorum in row_ids((await bo.get("/inbox?view=mine")).text)

        # the shared password is nobody in particular: no such list, and it says why
        page = (await shared.get("/inbox?view=mine")).text
        assert count(page, "mine") is None and row_ids(page) == []
        assert "Nothing is waiting for you" in text_of(page)


async def test_an_open_inbox_is_one_person_who_is_asked_everything(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as bridge, Person(bridge.base_url) as local:
        first, second = await create(bridge, CONFIRM), await create(bridge, {**TEXT, "responders": ["person:x"]})
        page = (await local.get("/inbox?view=mine")).text
        assert row_ids(page) == [second, first] and count(page, "mine") == "2"
        await local.answer(first, {"q.ok": "yes"})
        assert row_ids((await local.get("/inbox?view=mine")).text) == [second]


async def test_search_title_description_and_context_with_counts(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as bridge, Person(bridge.base_url) as person:
        by_title = await create(bridge, {**CONFIRM, "title": "Deploy payments-api"})
        by_text = await create(bridge, {**TEXT, "description": "The **payments** team asks"})
        by_context = await create(bridge, {**CHOICE, "context": {"service": {"name": "payments-worker"}}})
        unrelated = await create(bridge, {**CONFIRM, "title": "Rotate keys"})
        await person.answer(by_title, {"q.ok": "no"})
        page = (await person.get("/inbox?q=PAYMENTS")).text
        assert row_ids(page) == [by_context, by_text] and unrelated not in page
        assert (count(page, "open"), count(page, "answered"), count(page, "all")) == ("2", "1", "3")
        assert 'value="PAYMENTS"' in page and "matching “PAYMENTS”" in text_of(page)
        assert row_ids((await person.get("/inbox?view=all&q=payments")).text) == [by_context, by_text, by_title]
        # links keep the search: the request's page and the live list
        assert f'href="/inbox/r/{by_text}?q=PAYMENTS"' in page
        live = (await person.get("/inbox/live?q=PAYMENTS")).text
        assert row_ids(live) == [by_context, by_text] and 'id="count-open">2<' in live
        nothing = (await person.get("/inbox?q=nothing-like-this")).text
        assert row_ids(nothing) == [] and "match “nothing-like-this”" in text_of(nothing)


async def test_hostile_searches_are_plain_text(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as bridge, Person(bridge.base_url) as person:
        percent = await create(bridge, {**CONFIRM, "title": "Raise the limit to 100%"})
        await create(bridge, {**CONFIRM, "title": "Other"})
        assert row_ids((await person.get("/inbox?q=100%25")).text) == [percent]
        assert row_ids((await person.get("/inbox?q=%25")).text) == [percent]
        for hostile in ("'; DROP TABLE requests; --", "<script>alert(1)</script>", "x" * 5000, "\x00", "_",
                        "\\", '"', "%00%ff", "é" * 300):
            response = await person.get("/inbox", params={"q": hostile})
            assert response.status_code == 200, hostile
            assert "<script>alert" not in response.text
        async with httpx.AsyncClient(base_url=bridge.base_url) as api:
            assert len((await api.get("/v1/requests")).json()["requests"]) == 2  # nothing was harmed
