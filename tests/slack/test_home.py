"""The app's Home tab: what waits for this person's answer, and a button that sends a
request to their DM. Events and clicks are signed payloads, as Slack sends them."""

from __future__ import annotations

import json
from pathlib import Path

from bridge.models import RequestState
from tests.fakes.slack_api import FakeSlack
from tests.harness import state_is, wait_for
from tests.slack.conftest import confirm_body, slack_bridge


def home_text(fake: FakeSlack, user: str) -> str:
    return json.dumps(fake.homes.get(user, {}).get("blocks", []), ensure_ascii=False)


async def test_home_tab_lists_what_waits_for_you_and_sends_it_to_your_dm(tmp_path: Path, fake: FakeSlack) -> None:
    route = {"notify": ["slack:#deploys"], "responders": ["slack:@oncall-group"]}  # Alice is in it
    async with slack_bridge(tmp_path, fake, route=route) as b:
        soon = await b.create(confirm_body(title="Rotate <keys>", timeout_s=600))
        later = await b.create(confirm_body(title="Deploy api", timeout_s=7200))
        answered = await b.create(confirm_body(title="Old one"))
        await b.message_of(later)
        await b.person.click(await b.message_of(answered), "hitl:approve")
        await b.closed(answered)
        for rid in (soon, later):  # what the tab lists is what the store has recorded as posted
            await wait_for(lambda: state_is(b.daemon, rid, RequestState.posted))  # noqa: B023

        assert (await b.person.send(b.person.home_opened())).status_code == 200
        shown = await wait_for(lambda: "Deploy api" in home_text(fake, "U0ALICE") and home_text(fake, "U0ALICE"))
        assert shown.index("Rotate &lt;keys&gt;") < shown.index("Deploy api")  # soonest first, escaped
        assert "Old one" not in shown and "Answer by 20" in shown and " UTC" in shown

        bob = b.person.as_user("U0BOB")  # not a responder: nothing listed, nothing leaked
        await bob.send(bob.home_opened())
        assert "Nothing waits for you" in await wait_for(lambda: "U0BOB" in fake.homes and home_text(fake, "U0BOB"))

        await b.person.send(b.person.home_click(f"home:{later}"))
        dm = await b.message_of(later, "D0ALICE")  # a fresh copy in her DM, with controls
        await b.person.click(dm, "hitl:approve")
        request = await b.closed(later)
        assert request.answer is not None and request.answer.responder.user_id == "U0ALICE"
        channel_copy = await b.message_of(later)
        key = (str(channel_copy["channel"]), str(channel_copy["ts"]))
        await wait_for(lambda: "Approved by <@U0ALICE>" in json.dumps(fake.messages[key]["blocks"]))
        await b.person.send(b.person.home_opened())  # opening the tab again refreshes it
        await wait_for(lambda: "Deploy api" not in home_text(fake, "U0ALICE"))
        assert "Rotate" in home_text(fake, "U0ALICE") and (await b.stored(soon)).is_open


async def test_home_click_for_someone_else_or_a_closed_request_posts_nothing(tmp_path: Path, fake: FakeSlack) -> None:
    route = {"notify": ["slack:#deploys"], "responders": ["slack:@U0ALICE"]}
    async with slack_bridge(tmp_path, fake, route=route) as b:
        rid = await b.create(confirm_body(title="Deploy api"))
        await b.message_of(rid)
        await wait_for(lambda: state_is(b.daemon, rid, RequestState.posted))  # recorded, not only sent
        await b.person.send(b.person.home_opened())
        await wait_for(lambda: "Deploy api" in home_text(fake, "U0ALICE"))
        # Mallory replays Alice's button from a payload of her own (signed: Slack sent it)
        mallory = b.person.as_user("U0MALLORY")
        fake.homes["U0MALLORY"] = fake.homes["U0ALICE"]
        assert (await mallory.send(mallory.home_click(f"home:{rid}"))).status_code == 200
        await wait_for(lambda: "Nothing waits for you" in home_text(fake, "U0MALLORY"))
        assert fake.channel_messages("D0MALLORY") == []
        assert (await b.stored(rid)).is_open
        # odd events: the Messages tab, no user, a user that is not a string: nothing published
        for event in ({"tab": "messages"}, {"user": None}, {"user": ["U0BOB"]}):
            payload = b.person.as_user("U0BOB").home_opened()
            payload["event"].update(event)
            assert (await b.person.send(payload)).status_code == 200
        unknown = b.person.home_click(f"home:{rid}")  # a request id that does not exist
        unknown["actions"][0]["value"] = "r_does_not_exist"
        before = publishes(fake)
        assert (await b.person.send(unknown)).status_code == 200
        await wait_for(lambda: publishes(fake) > before)  # handled (and everything sent before it)
        assert "U0BOB" not in fake.homes and fake.channel_messages("D0ALICE") == []


def publishes(fake: FakeSlack) -> int:
    return sum(1 for c in fake.calls if c.method == "views.publish")
