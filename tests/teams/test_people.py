"""Who may answer in Teams: responders named by Entra object id, four-eyes, and the
answers a card takes besides buttons (multi-choice, edit)."""

from __future__ import annotations

from pathlib import Path

from adapters.teams.cards import APPROVE, SUBMIT
from tests.fakes.teams_api import FakeTeams
from tests.teams.conftest import ANA, BEN, CHANNEL, confirm_body, teams_bridge


async def test_only_the_named_responders_may_answer(tmp_path: Path, fake: FakeTeams) -> None:
    async with teams_bridge(tmp_path, fake) as bridge:
        await bridge.install()
        request_id = await bridge.create(confirm_body(responders=[f"teams:{BEN.upper()}"]))
        await bridge.card_in(CHANNEL)
        refused = await bridge.click(APPROVE, {"request_id": request_id})  # Ana
        assert "not allowed" in refused["value"]
        request = await bridge.daemon.store.get_request(request_id)
        assert request is not None and request.is_open
        await bridge.click(APPROVE, {"request_id": request_id}, who=BEN, name="Ben")
        closed = await bridge.closed(request_id)
        assert closed.answer is not None and closed.answer.responder.user_id == BEN


async def test_four_eyes_refuses_the_person_who_asked(tmp_path: Path, fake: FakeTeams) -> None:
    async with teams_bridge(tmp_path, fake, route={"forbid_self_approval": True}) as bridge:
        await bridge.install()
        request_id = await bridge.create(confirm_body(requested_by=f"teams:{ANA}"))
        await bridge.card_in(CHANNEL)
        refused = await bridge.click(APPROVE, {"request_id": request_id})
        assert refused["type"] == "application/vnd.microsoft.activity.message"
        request = await bridge.daemon.store.get_request(request_id)
        assert request is not None and request.is_open
        await bridge.click(APPROVE, {"request_id": request_id}, who=BEN, name="Ben")
        assert (await bridge.closed(request_id)).answer is not None


async def test_multi_choice_and_edit_answers_come_from_the_card(tmp_path: Path, fake: FakeTeams) -> None:
    async with teams_bridge(tmp_path, fake) as bridge:
        await bridge.install()
        request_id = await bridge.create({"title": "Release", "questions": [
            {"id": "envs", "kind": "multi_choice", "prompt": "Where?", "options": ["eu", "us", "ap"]},
            {"id": "plan", "kind": "edit", "prompt": "Plan", "default": {"replicas": 2}}]})
        [posted] = await bridge.card_in(CHANNEL)
        inputs = {i["id"]: i for i in posted.card["body"] if str(i.get("type", "")).startswith("Input.")}
        assert inputs["answer.envs"]["isMultiSelect"] is True and '"replicas": 2' in inputs["answer.plan"]["value"]
        await bridge.click(SUBMIT, {"request_id": request_id, "answer.envs": "eu,ap", "answer.plan": '{"replicas": 3}'})
        closed = await bridge.closed(request_id)
        assert closed.answer is not None and closed.answer.values == {"envs": ["eu", "ap"], "plan": {"replicas": 3}}


async def test_a_form_is_filled_in_the_card(tmp_path: Path, fake: FakeTeams) -> None:
    async with teams_bridge(tmp_path, fake) as bridge:
        await bridge.install()
        request_id = await bridge.create({"title": "Incident", "questions": [
            {"id": "inc", "kind": "form", "prompt": "Details", "fields": [
                {"name": "sev", "options": ["1", "2"]}, {"name": "owner", "label": "Owner"}]}]})
        [posted] = await bridge.card_in(CHANNEL)
        ids = [i.get("id") for i in posted.card["body"]]
        assert "answer.inc.sev" in ids and "answer.inc.owner" in ids
        await bridge.click(SUBMIT, {"request_id": request_id, "answer.inc.sev": "2", "answer.inc.owner": "ana"})
        closed = await bridge.closed(request_id)
        assert closed.answer is not None and closed.answer.values == {"inc": {"sev": "2", "owner": "ana"}}
