"""Posting reliably: a burst under injected 429s arrives once each and in order; 5xx and
timeouts are retried without duplicates; a post that fails for good is recorded and the
request stays answerable elsewhere."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.slack_api import FakeSlack
from tests.harness import wait_for
from tests.slack.conftest import CHANNEL, confirm_body, slack_bridge


def request_ids(fake: FakeSlack, channel: str = CHANNEL) -> list[str]:
    return [m["metadata"]["event_payload"]["request_id"] for m in fake.channel_messages(channel)]


async def test_burst_of_100_under_429s_arrives_once_and_in_order(tmp_path: Path, fake: FakeSlack) -> None:
    fake.post_interval_s = 0.02  # the fake's per-channel limit (scaled down from 1/s)
    fake.inject("chat.postMessage", 429, retry_after=0, times=3)
    async with slack_bridge(tmp_path, fake, slack={"post_interval_s": 0.025}) as b:
        created = [await b.create(confirm_body(title=f"Deploy #{i}")) for i in range(100)]
        await wait_for(lambda: len(fake.channel_messages(CHANNEL)) >= 100, 30)
        assert request_ids(fake) == created  # all delivered, once each, in order
        statuses = [c.status for c in fake.calls_of("chat.postMessage")]
        assert statuses.count(429) >= 3 and statuses.count(200) == 100
        posts = [p for rid in created[:5] for p in await b.daemon.store.list_posts(rid)]
        assert all(p.ok and p.ref["channel"] == CHANNEL for p in posts)


async def test_5xx_is_retried_with_backoff_once_delivered(tmp_path: Path, fake: FakeSlack) -> None:
    fake.inject("chat.postMessage", 500, times=2)
    async with slack_bridge(tmp_path, fake, route={"notify": [f"slack:{CHANNEL}"]}) as b:
        rid = await b.create(confirm_body())
        await b.message_of(rid)
        assert [c.status for c in fake.calls_of("chat.postMessage")] == [500, 500, 200]
        assert len(fake.calls_of("conversations.history")) == 2  # checked before each retry
        assert request_ids(fake) == [rid]


async def test_timeout_after_slack_posted_adopts_the_message(tmp_path: Path, fake: FakeSlack) -> None:
    slack = {"request_timeout_s": 0.15, "backoff_s": 0.6}
    route = {"notify": ["slack:#deploys"]}
    async with slack_bridge(tmp_path, fake, slack=slack, route=route) as b:
        # the first post teaches the bridge the id of #deploys (history takes ids only)
        await b.message_of(await b.create(confirm_body(title="warm-up")))
        fake.calls.clear()
        fake.messages.clear()
        fake.delays["chat.postMessage"] = 0.4
        rid = await b.create(confirm_body())
        posts = await wait_for(lambda: b.daemon.store.list_posts(rid), 5)
        assert posts[0].ok and posts[0].ref["ts"] == fake.channel_messages(CHANNEL)[0]["ts"]
        assert request_ids(fake) == [rid]  # found through its metadata, not posted twice
        assert len(fake.calls_of("chat.postMessage")) == 1


async def test_a_post_that_fails_for_good_is_recorded_and_others_still_work(
    tmp_path: Path, fake: FakeSlack
) -> None:
    fake.inject("chat.postMessage", 503, times=1000)
    route = {"notify": ["slack:#deploys", "slack:#nowhere", "slack:@oncall-group", "web"]}
    async with slack_bridge(tmp_path, fake, route=route, slack={"max_attempts": 3}) as b:
        rid = await b.create(confirm_body())
        posts = await wait_for(lambda: _all_posts(b, rid, 4), 10)
        by_target = {p.target: p for p in posts}
        assert not by_target["slack:#deploys"].ok
        assert "after 3 attempts" in str(by_target["slack:#deploys"].error)
        group_error = str(by_target["slack:@oncall-group"].error)  # the group's member's DM failed too
        assert "DM to U0ALICE" in group_error and "after 3 attempts" in group_error
        assert by_target["web"].ok
        events = await b.daemon.store.list_events(rid)
        assert any(e.kind == "post_failed" for e in events)
        # still answerable elsewhere (here through the API)
        answer = await b.http.post(f"{b.daemon.base_url}/v1/requests/{rid}/answer",
                                   json={"values": {"ok": "yes"}})
        assert answer.status_code == 200, answer.text
        await b.closed(rid)


async def _all_posts(b: object, rid: str, count: int) -> list[object] | None:
    from tests.slack.conftest import SlackBridge
    assert isinstance(b, SlackBridge)
    posts = await b.daemon.store.list_posts(rid)
    return list(posts) if len(posts) >= count else None


async def test_cancel_updates_every_copy(tmp_path: Path, fake: FakeSlack) -> None:
    route = {"notify": ["slack:#deploys", "slack:#incidents"]}
    async with slack_bridge(tmp_path, fake, route=route) as b:
        rid = await b.create(confirm_body())
        copies = [await b.message_of(rid), await b.message_of(rid, "C0INCIDENTS")]
        await b.http.post(f"{b.daemon.base_url}/v1/requests/{rid}/cancel", json={"reason": "rolled back"})
        for copy in copies:
            await wait_for(lambda c=copy: "Cancelled" in str(fake.messages[(c["channel"], c["ts"])]["blocks"]), 5)
        updated = {(c.args["channel"], c.args["ts"]) for c in fake.calls_of("chat.update", ok=True)}
        assert updated == {(c["channel"], c["ts"]) for c in copies}


async def test_repost_after_a_crash_adopts_the_message_already_in_slack(
    tmp_path: Path, fake: FakeSlack
) -> None:
    async with slack_bridge(tmp_path, fake) as b:
        rid = await b.create(confirm_body())
        message = await b.message_of(rid)
        channel = next(c for c in b.daemon.channels if c.name == "slack")
        request = await b.stored(rid)
        # what the restarted daemon does for a target whose post was never recorded
        (result,) = await channel.post(request, ["slack:#deploys"])
        assert result.ok and result.ref == {"channel": CHANNEL, "ts": message["ts"]}
        assert len(fake.calls_of("chat.postMessage")) == 1
        assert request_ids(fake) == [rid]
