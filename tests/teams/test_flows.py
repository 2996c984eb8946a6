"""The Teams channel end to end: a real daemon, the Teams SDK's client and validator, and
the fake Microsoft side; people act by sending signed activities."""

from __future__ import annotations

from pathlib import Path

from adapters.teams.cards import APPROVE, REJECT, SUBMIT
from tests.fakes.teams_api import FakeTeams
from tests.harness import wait_for
from tests.teams.conftest import ANA, BEN, CHANNEL, confirm_body, teams_bridge


async def test_a_card_is_posted_and_an_approval_refreshes_it_for_everyone(tmp_path: Path, fake: FakeTeams) -> None:
    async with teams_bridge(tmp_path, fake) as bridge:
        await bridge.install()
        request_id = await bridge.create(confirm_body())
        [posted] = await bridge.card_in(CHANNEL)
        card = posted.card
        texts = str(card["body"])
        assert "Deploy api v2.3 to production" in texts and "kubectl rollout restart" in texts
        assert [a["type"] for a in card["actions"]] == ["Action.Execute", "Action.Execute"]
        assert [a["verb"] for a in card["actions"]] == [APPROVE, REJECT]

        answer = await bridge.click(APPROVE, {"request_id": request_id, "reason": "looks fine"})
        assert answer["type"] == "application/vnd.microsoft.card.adaptive"
        assert "Approved by Ana" in str(answer["value"]["body"]) and "actions" not in answer["value"]
        request = await bridge.closed(request_id)
        assert request.answer is not None and request.answer.values == {"ok": "yes"}
        assert request.answer.responder.user_id == ANA
        await wait_for(lambda: posted.versions and "Approved by Ana" in str(posted.body), 10)
        assert "actions" not in posted.card  # the others' copy has no buttons left


async def test_a_quorum_shows_the_vote_count_until_it_is_met(tmp_path: Path, fake: FakeTeams) -> None:
    async with teams_bridge(tmp_path, fake, route={"quorum": 2}) as bridge:
        await bridge.install()
        request_id = await bridge.create(confirm_body())
        [posted] = await bridge.card_in(CHANNEL)
        first = await bridge.click(APPROVE, {"request_id": request_id})
        assert "1 of 2" in str(first["value"]) or "1/2" in str(first["value"])
        assert (await bridge.daemon.store.get_request(request_id)).is_open  # type: ignore[union-attr]
        await bridge.click(APPROVE, {"request_id": request_id}, who=BEN, name="Ben")
        request = await bridge.closed(request_id)
        assert request.state.value in ("answered", "delivered")
        await wait_for(lambda: "actions" not in posted.card, 10)


async def test_a_choice_and_a_text_answer_come_from_the_card(tmp_path: Path, fake: FakeTeams) -> None:
    async with teams_bridge(tmp_path, fake) as bridge:
        await bridge.install()
        choice_id = await bridge.create({"title": "Which region?", "questions": [
            {"id": "region", "kind": "choice", "prompt": "Region", "options": ["eu", "us"]}]})
        text_id = await bridge.create({"title": "Release notes", "questions": [
            {"id": "notes", "kind": "text", "prompt": "What changed?"}]})
        await bridge.card_in(CHANNEL, 2)
        await bridge.click(SUBMIT, {"request_id": choice_id, "choice": 1})
        await bridge.click(SUBMIT, {"request_id": text_id, "answer.notes": "faster builds"})
        assert (await bridge.closed(choice_id)).answer.values == {"region": "us"}  # type: ignore[union-attr]
        assert (await bridge.closed(text_id)).answer.values == {"notes": "faster builds"}  # type: ignore[union-attr]


async def test_a_person_is_reached_in_a_proactive_one_to_one_chat(tmp_path: Path, fake: FakeTeams) -> None:
    async with teams_bridge(tmp_path, fake, route={"notify": [f"teams:user:{BEN}"]}) as bridge:
        await bridge.install()  # in a team of the tenant: the bot knows where to open chats
        request_id = await bridge.create(confirm_body())
        [posted] = await bridge.card_in(f"a:personal-{BEN}")
        assert fake.conversations[f"a:personal-{BEN}"]["members"] == [{"id": BEN}]
        assert request_id in str(posted.card["actions"])


async def test_conversation_references_survive_a_restart(tmp_path: Path, fake: FakeTeams) -> None:
    async with teams_bridge(tmp_path, fake) as bridge:
        await bridge.install()
    async with teams_bridge(tmp_path, fake) as bridge:
        await bridge.create(confirm_body())
        assert len(await bridge.card_in(CHANNEL)) == 1


async def test_a_target_the_bot_was_not_added_to_is_a_failed_post(tmp_path: Path, fake: FakeTeams) -> None:
    async with teams_bridge(tmp_path, fake) as bridge:
        request_id = await bridge.create(confirm_body())
        posts = await wait_for(lambda: bridge.daemon.store.list_posts(request_id, "teams"), 10)
        assert not posts[0].ok and "has not been added" in (posts[0].error or "")


async def test_429_is_retried_after_retry_after(tmp_path: Path, fake: FakeTeams) -> None:
    async with teams_bridge(tmp_path, fake) as bridge:
        await bridge.install()
        fake.throttle(2, retry_after="0")
        await bridge.create(confirm_body())
        assert len(await bridge.card_in(CHANNEL)) == 1
        assert fake.throttled == 2



async def test_removing_the_app_forgets_the_conversation(tmp_path: Path, fake: FakeTeams) -> None:
    async with teams_bridge(tmp_path, fake) as bridge:
        await bridge.install()
        gone = bridge.activity("installationUpdate", action="remove")
        assert (await bridge.send(gone)).status_code == 200
        request_id = await bridge.create(confirm_body())
        posts = await wait_for(lambda: bridge.daemon.store.list_posts(request_id, "teams"), 10)
        assert not posts[0].ok and "has not been added" in (posts[0].error or "")
        assert fake.in_conversation(CHANNEL) == []
