"""A user group as a notify target (`slack:@group`): Slack cannot post to a group, so each
member gets the request as a DM; every copy is updated, reminded and adopted like any other,
and a group that cannot be posted to is recorded as a failed copy with the reason."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hitl_bridge_client import AsyncClient

from bridge.cli import render
from bridge.models import RequestState
from tests.fakes.slack_api import FakeSlack
from tests.harness import state_is, wait_for
from tests.slack.conftest import confirm_body, slack_bridge

MANAGERS = {"S0MANAGERS": ("eng-managers", ["U0ALICE", "U0BOB"]), "S0EMPTY": ("nobody-here", [])}


async def _both_recorded(b: Any, rid: str) -> list[Any] | None:
    posts = await b.daemon.store.list_posts(rid)
    return posts if len(posts) == 2 else None


async def test_each_member_of_a_group_gets_a_dm_and_every_copy_is_updated(tmp_path: Path) -> None:
    async with FakeSlack(usergroups=MANAGERS) as fake:
        route = {"notify": ["slack:@eng-managers"], "responders": ["slack:@eng-managers"]}
        async with slack_bridge(tmp_path, fake, route=route) as b:
            rid = await b.create(confirm_body())
            alice_dm = await b.message_of(rid, "D0ALICE")
            await b.message_of(rid, "D0BOB")
            # a copy is recorded once Slack has answered: wait for the store, not only the fake
            posts = await wait_for(lambda: _both_recorded(b, rid), 10)
            assert sorted(p.ref["channel"] for p in posts) == ["D0ALICE", "D0BOB"]
            assert {p.target for p in posts} == {"slack:@eng-managers"} and all(p.ok for p in posts)
            await wait_for(lambda: state_is(b.daemon, rid, RequestState.posted))
            events = await b.daemon.store.list_events(rid)
            assert [e.data["targets"] for e in events if e.kind == "posted"] == [["slack:@eng-managers"]]

            async with AsyncClient(b.daemon.base_url, token=b.daemon.settings.http.first_token or "") as api:
                shown = render.show(await api.get(rid), None)  # `hitl-bridge show` tells the copies apart
            assert "copy       slack slack:@eng-managers (D0ALICE): ok" in shown
            assert "copy       slack slack:@eng-managers (D0BOB): ok" in shown

            await b.person.click(alice_dm, "hitl:approve")  # alice answers in her DM
            request = await b.closed(rid)
            assert request.answer is not None and request.answer.responder.user_id == "U0ALICE"
            updated = await wait_for(lambda: {c.args["channel"] for c in fake.calls_of("chat.update")}
                                     >= {"D0ALICE", "D0BOB"}, 5)
            assert updated  # bob's copy loses its buttons too
            assert len(fake.channel_messages("D0ALICE")) == 1 and len(fake.channel_messages("D0BOB")) == 1


async def test_a_group_that_cannot_be_posted_to_is_a_failed_copy_with_the_reason(tmp_path: Path) -> None:
    async with FakeSlack(usergroups=MANAGERS) as fake:
        route = {"notify": ["slack:#deploys", "slack:@nobody-here", "slack:@no-such-group"]}
        async with slack_bridge(tmp_path, fake, route=route, slack={"group_dm_limit": 1}) as b:
            rid = await b.create(confirm_body())
            await b.message_of(rid)

            async def failed() -> dict[str, str | None]:
                return {p.target: p.error for p in await b.daemon.store.list_posts(rid) if not p.ok}

            errors = await wait_for(failed, 5)
            assert "does not exist or has no members" in str(errors["slack:@nobody-here"])
            assert "does not exist or has no members" in str(errors["slack:@no-such-group"])
            assert (await b.stored(rid)).state is RequestState.posted  # the channel copy stands

        route = {"notify": ["slack:@eng-managers"]}
        async with slack_bridge(tmp_path / "limit", fake, route=route, slack={"group_dm_limit": 1}) as b:
            rid = await b.create(confirm_body())
            posts = await wait_for(lambda: b.daemon.store.list_posts(rid), 5)
            assert not posts[0].ok and "more than slack.group_dm_limit (1)" in str(posts[0].error)
            assert fake.channel_messages("D0ALICE") == [] and fake.channel_messages("D0BOB") == []
