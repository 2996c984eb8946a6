"""Answering every kind of question through the inbox's HTML forms (no JS), against a real
daemon; validation errors appear next to the field and nothing is recorded."""

from __future__ import annotations

import json
from pathlib import Path

from bridge.models import RequestState
from tests.harness import running_bridge
from tests.web.helpers import (
    CHOICE,
    CONFIRM,
    EDIT,
    FORM,
    MIXED,
    MULTI,
    SECRET,
    TEXT,
    Person,
    create,
    text_of,
)


async def test_confirm_buttons_record_the_answer_with_reason_and_identity(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as bridge, Person(bridge.base_url) as person:
        rid = await create(bridge, CONFIRM)
        page = await person.open(rid)
        assert 'name="q.ok" value="yes"' in page.text and 'name="q.ok" value="no"' in page.text
        response = await person.submit(f"/inbox/r/{rid}/answer", {"q.ok": "no", "reason": "freeze week"})
        assert response.status_code == 303
        assert response.headers["location"] == f"/inbox/r/{rid}?done=answered"
        stored = await bridge.service.get(rid)
        assert stored is not None and stored.state in (RequestState.answered, RequestState.delivered)
        assert stored.answer is not None
        assert stored.answer.values == {"ok": "no"}
        assert stored.answer.reason == "freeze week"
        assert stored.answer.via == "web"
        assert stored.answer.responder.key == "web:local"
        shown = await person.get(response.headers["location"])
        assert "Your answer was recorded." in shown.text
        assert "answer-form" not in shown.text  # closed: no form any more


async def test_choice_multi_text_form_and_edit_answers(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as bridge, Person(bridge.base_url) as person:
        cases = [
            (CHOICE, {"q.region": "us-east-1"}, {"region": "us-east-1"}),
            (MULTI, {"q.systems": ["vpn", "crm"]}, {"systems": ["crm", "vpn"]}),
            (TEXT, {"q.reply": "Sorry — refund sent today.\nBest, Ops"},
             {"reply": "Sorry — refund sent today.\nBest, Ops"}),
            (FORM, {"q.vendor.company": "ACME", "q.vendor.tier": "gold", "q.vendor.notes": ""},
             {"vendor": {"company": "ACME", "tier": "gold"}}),
            (EDIT, {"q.args": json.dumps({"replicas": 5, "image": "api:3"})},
             {"args": {"replicas": 5, "image": "api:3"}}),
            (MIXED, {"q.ok": "yes", "q.region": "eu", "q.note": ""}, {"ok": "yes", "region": "eu"}),
        ]
        for body, form, expected in cases:
            rid = await create(bridge, body)
            response = await person.answer(rid, form)
            assert response.status_code == 303, (body["title"], text_of(response.text)[:2000])
            stored = await bridge.service.get(rid)
            assert stored is not None and stored.answer is not None
            assert stored.answer.values == expected, body["title"]


async def test_each_kind_gets_a_fitting_widget(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as bridge, Person(bridge.base_url) as person:
        widgets = {
            CHOICE["title"]: ['<button type="submit" name="q.region" value="eu-west-1"'],
            MULTI["title"]: ['type="checkbox" name="q.systems" value="crm"'],
            TEXT["title"]: ['<textarea name="q.reply"'],
            SECRET["title"]: ['type="password" name="q.password"', 'autocomplete="new-password"'],
            FORM["title"]: ['name="q.vendor.company"', '<select name="q.vendor.tier"',
                            '<textarea name="q.vendor.notes"'],
            EDIT["title"]: ['data-json', "&#34;replicas&#34;: 3"],
            MIXED["title"]: ['type="radio" name="q.ok" value="yes"', 'type="radio" name="q.region" value="eu"'],
        }
        for body in (CHOICE, MULTI, TEXT, SECRET, FORM, EDIT, MIXED):
            rid = await create(bridge, body)
            page = await person.open(rid)
            for snippet in widgets[body["title"]]:
                assert snippet in page.text, (body["title"], snippet)


async def test_secret_is_never_shown_after_submission(tmp_path: Path) -> None:
    password = "hunter2-correct-horse"
    async with running_bridge(tmp_path, {"secrets": {"key": "k" * 32}}) as bridge, \
            Person(bridge.base_url) as person:
        rid = await create(bridge, SECRET)
        response = await person.answer(rid, {"q.password": password})
        assert response.status_code == 303
        for path in (response.headers["location"], f"/inbox/r/{rid}/live", "/inbox?view=all", "/inbox/live?view=all"):
            page = await person.get(path)
            assert page.status_code == 200
            assert password not in page.text, path
        page = await person.get(f"/inbox/r/{rid}")
        assert "[secret]" in page.text
        stored = await bridge.service.get(rid)
        assert stored is not None and stored.answer is not None
        assert password not in json.dumps(stored.answer.values)  # sealed at rest


async def test_secret_is_not_echoed_back_when_the_form_has_errors(tmp_path: Path) -> None:
    body = {"title": "Key and region", "questions": [
        {"id": "key", "kind": "secret", "prompt": "Key?"},
        {"id": "region", "kind": "choice", "prompt": "Region?", "options": ["eu", "us"]}]}
    async with running_bridge(tmp_path) as bridge, Person(bridge.base_url) as person:
        rid = await create(bridge, body)
        response = await person.answer(rid, {"q.key": "s3cr3t-value-xyz", "q.region": "mars"})
        assert response.status_code == 422
        assert "s3cr3t-value-xyz" not in response.text
        assert 'id="err-q.region" role="alert">expected one of' in response.text
        assert 'id="err-q.key" role="alert">enter it again' in response.text


async def test_validation_errors_appear_next_to_each_field_and_record_nothing(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as bridge, Person(bridge.base_url) as person:
        form_id = await create(bridge, FORM)
        response = await person.answer(form_id, {"q.vendor.company": "", "q.vendor.tier": "diamond"})
        assert response.status_code == 422
        assert 'id="err-q.vendor.company" role="alert">this field is required' in response.text
        assert 'id="err-q.vendor.tier" role="alert">choose one of basic, gold' in response.text

        edit_id = await create(bridge, EDIT)
        response = await person.answer(edit_id, {"q.args": '{"replicas": 5,'})
        assert response.status_code == 422
        assert 'id="err-q.args" role="alert">not valid JSON' in response.text
        assert "{&#34;replicas&#34;: 5," in response.text  # what they typed is kept
        response = await person.answer(edit_id, {"q.args": "42"})
        assert response.status_code == 422 and "expected a JSON object" in response.text

        multi_id = await create(bridge, MULTI)
        response = await person.answer(multi_id, {"q.systems": ["crm", "root-shell"]})
        assert response.status_code == 422 and "unknown options" in text_of(response.text)
        response = await person.answer(multi_id, {})
        assert response.status_code == 422 and "choose at least one option" in response.text

        choice_id = await create(bridge, CHOICE)
        response = await person.answer(choice_id, {"q.region": "mars"})
        assert response.status_code == 422 and "expected one of" in text_of(response.text)

        text_id = await create(bridge, TEXT)
        response = await person.answer(text_id, {"q.reply": "   "})
        assert response.status_code == 422 and "an answer is required" in response.text

        for rid in (form_id, edit_id, multi_id, choice_id, text_id):
            stored = await bridge.service.get(rid)
            assert stored is not None and stored.is_open and stored.answer is None


async def test_second_answer_is_told_who_answered_first(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as bridge, Person(bridge.base_url) as first, \
            Person(bridge.base_url) as second:
        rid = await create(bridge, CONFIRM)
        await second.open(rid)  # the second person has the form open already
        assert (await first.answer(rid, {"q.ok": "yes"})).status_code == 303
        late = await second.submit(f"/inbox/r/{rid}/answer", {"q.ok": "no"})
        assert late.status_code == 409
        assert "already answered by local" in late.text
        stored = await bridge.service.get(rid)
        assert stored is not None and stored.answer is not None and stored.answer.values == {"ok": "yes"}


async def test_quorum_votes_are_shown_and_counted(tmp_path: Path) -> None:
    config = {"web": {"tokens": {"alice": "a" * 20, "bob": "b" * 20}},
              "routes": [{"name": "two-approvals", "match": {"source": "webhook"}, "notify": ["web"], "quorum": 2}]}
    async with running_bridge(tmp_path, config) as bridge, Person(bridge.base_url) as alice, \
            Person(bridge.base_url) as bob:
        assert (await alice.login("a" * 20)).status_code == 303
        assert (await bob.login("b" * 20)).status_code == 303
        rid = await create(bridge, CONFIRM, headers={})
        first = await alice.answer(rid, {"q.ok": "yes"})
        assert first.headers["location"] == f"/inbox/r/{rid}?done=voted"
        page = await alice.get(first.headers["location"])
        assert "Your vote was recorded." in page.text
        assert "Needs 2 approvals: 1 so far (alice: approved)" in text_of(page.text)
        listing = await alice.get("/inbox")
        assert "1 of 2 approvals" in listing.text
        assert (await bob.answer(rid, {"q.ok": "yes"})).headers["location"].endswith("done=answered")
        stored = await bridge.service.get(rid)
        assert stored is not None and not stored.is_open
