"""The check step pages without JavaScript go through (`…/confirm`): it records nothing, shows
the answer as it will be sent, never echoes a secret, and refuses forged, stale and
malformed posts like the answer itself; the list a form came from survives the round trip."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from bridge.links import link_for
from tests.harness import running_bridge
from tests.web.helpers import CHOICE, CONFIRM, EDIT, SECRET, Person, create, csrf_of, text_of


def words(page: str) -> str:
    return " ".join(text_of(page).split())


async def test_the_check_step_records_nothing_and_posts_the_same_answer(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as bridge, Person(bridge.base_url) as person:
        rid = await create(bridge, CONFIRM)
        await person.open(rid)
        check = await person.submit(f"/inbox/r/{rid}/confirm", {"q.ok": "no", "reason": "freeze <b>week</b>",
                                                                 "list": "view=mine&q=deploy"})
        assert check.status_code == 200 and "Check your answer" in check.text
        assert "You are about to reject — freeze <b>week</b>" in words(check.text)
        assert "<b>week</b>" not in check.text  # escaped
        assert (await bridge.service.get(rid)).answer is None  # type: ignore[union-attr]
        fields = dict(part.split('" value="') for part in
                      (x.split('name="')[1].split('">')[0] for x in check.text.split('<input type="hidden" ')[1:]))
        assert fields["q.ok"] == "no" and fields["list"] == "view=mine&amp;q=deploy"
        sent = await person.submit(f"/inbox/r/{rid}/answer", {"q.ok": "no", "reason": "freeze week",
                                                              "list": "view=mine&q=deploy"}, csrf=csrf_of(check.text))
        assert sent.status_code == 303
        assert sent.headers["location"] == f"/inbox/r/{rid}?done=answered&view=mine&q=deploy"
        stored = await bridge.service.get(rid)
        assert stored is not None and stored.answer is not None and stored.answer.values == {"ok": "no"}


async def test_edited_arguments_are_shown_as_changes(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as bridge, Person(bridge.base_url) as person:
        rid = await create(bridge, EDIT)
        await person.open(rid)
        check = await person.submit(f"/inbox/r/{rid}/confirm",
                                    {"q.args": json.dumps({"replicas": 5, "image": "api:2", "debug": True})})
        assert check.status_code == 200 and "replicas 3 5" in words(check.text)
        assert "debug (not there) true" in words(check.text)
        bad = await person.submit(f"/inbox/r/{rid}/confirm", {"q.args": "{not json"})
        assert bad.status_code == 422 and "not valid JSON" in bad.text
        assert (await bridge.service.get(rid)).answer is None  # type: ignore[union-attr]


async def test_forged_stale_secret_and_closed_checks_are_refused(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as bridge, Person(bridge.base_url) as person:
        rid, secret, choice = await create(bridge, CONFIRM), await create(bridge, SECRET), await create(bridge, CHOICE)
        await person.open(rid)
        assert (await person.submit(f"/inbox/r/{rid}/confirm", {"q.ok": "yes"}, csrf="forged")).status_code == 403
        foreign = await person.http.post(f"/inbox/r/{rid}/confirm", data={"csrf": person.csrf, "q.ok": "yes"},
                                         headers={"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"})
        assert foreign.status_code == 403
        assert (await person.submit(f"/inbox/r/{rid}/confirm", {"q.ok": "maybe"})).status_code == 422
        # a secret is never put back into a page: no check step for it
        leaked = await person.submit(f"/inbox/r/{secret}/confirm", {"q.password": "hunter2-never-echoed"})
        assert leaked.status_code == 400 and "hunter2-never-echoed" not in leaked.text
        await person.answer(choice, {"q.region": "eu-west-1"})
        late = await person.submit(f"/inbox/r/{choice}/confirm", {"q.region": "us-east-1"})
        assert late.status_code == 409 and "already answered" in late.text
        assert (await person.submit("/inbox/r/nope/confirm", {"q.ok": "yes"})).status_code == 404
        # a hostile list to go back to is reduced to a harmless one
        hostile = await person.submit(f"/inbox/r/{rid}/answer", {"q.ok": "yes",
                                                                 "list": "view=<x>&q=%00\r\nSet-Cookie: a=b&offset=-1"})
        assert hostile.status_code == 303 and hostile.headers["location"] == f"/inbox/r/{rid}?done=answered"
        kept = await bridge.service.get(secret)
        assert kept is not None and kept.is_open and kept.answer is None


async def test_the_emailed_pages_check_step(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as bridge:
        rid, secret = await create(bridge, CONFIRM), await create(bridge, SECRET)
        link = "/inbox/a/" + (await link_for(bridge.store, rid, "email:bo@example.com", deadline=None)).token
        secret_link = "/inbox/a/" + (await link_for(bridge.store, secret, "email:bo@example.com", deadline=None)).token
        async with httpx.AsyncClient(base_url=bridge.base_url) as mail:
            csrf = csrf_of((await mail.get(link)).text)
            check = await mail.post(f"{link}/confirm", data={"csrf": csrf, "q.ok": "yes"})
            assert check.status_code == 200 and "You are about to approve" in words(check.text)
            assert f'action="{link}"' in check.text
            assert (await bridge.service.get(rid)).answer is None  # type: ignore[union-attr]
            assert (await mail.post(f"{link}/confirm", data={"q.ok": "yes"})).status_code == 403
            assert (await mail.post("/inbox/a/" + "x" * 43 + "/confirm",
                                    data={"csrf": csrf, "q.ok": "yes"})).status_code == 404
            refused = await mail.post(f"{secret_link}/confirm", data={"csrf": csrf, "q.password": "pw-not-echoed"})
            assert refused.status_code == 400 and "pw-not-echoed" not in refused.text
            sent = await mail.post(link, data={"csrf": csrf_of(check.text), "q.ok": "yes"})
            assert sent.status_code == 303
        stored = await bridge.service.get(rid)
        assert stored is not None and stored.answer is not None
        assert stored.answer.responder.key == "email:bo@example.com"
