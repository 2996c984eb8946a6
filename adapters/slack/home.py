"""The app's Home tab: what waits for this person's answer, opened from the app in the
sidebar. Each entry has a button that sends the request to their DM (a fresh copy with
working controls, recorded and updated like the others).

Listed: open requests shown in Slack whose `responders` name this person (or a user group
of theirs), and requests shown in their DM. A request anyone may answer is not listed:
its channels say who can see it, and the Home tab must not leak it to others.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from slack_bolt.async_app import AsyncAck, AsyncApp

from adapters.slack.calls import SlackCallFailed
from adapters.slack.text import escape, mrkdwn, plain, slack_date, truncate
from bridge.models import Request, Responder, utcnow

if TYPE_CHECKING:
    from adapters.slack.channel import SlackChannel

log = logging.getLogger("hitl_bridge.slack")

SHOW_ACTION = "home:show"
LISTED = 20  # Slack allows 100 blocks in a Home tab


def home_view(waiting: list[Request]) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = [{"type": "header", "text": plain("Waiting for your answer", 150)}]
    if not waiting:
        blocks.append({"type": "section", "text": mrkdwn("Nothing waits for you right now. :tada:")})
    for request in waiting[:LISTED]:
        due = f"\nAnswer by {slack_date(request.deadline)}" if request.deadline else ""
        blocks.append({
            "type": "section", "block_id": f"home:{request.id}",
            "text": mrkdwn(f"*{escape(truncate(request.title, 200))}*{due}"),
            "accessory": {"type": "button", "action_id": SHOW_ACTION, "value": request.id,
                          "text": plain("Send to my DM", 75)},
        })
    if len(waiting) > LISTED:
        blocks.append({"type": "context", "elements": [mrkdwn(f"…and {len(waiting) - LISTED} more.")]})
    stamp = utcnow().strftime("%Y-%m-%d %H:%M UTC")
    blocks.append({"type": "context", "elements": [mrkdwn(f"As of {stamp}; reopen the tab to refresh.")]})
    return {"type": "home", "blocks": blocks}


class HomeTab:
    def __init__(self, channel: SlackChannel) -> None:
        self.channel = channel

    def register(self, app: AsyncApp) -> None:
        app.event("app_home_opened")(self.on_opened)
        app.action(SHOW_ACTION)(self.on_show)

    async def waiting_for(self, user_id: str) -> list[Request]:
        me = Responder(platform="slack", user_id=user_id)
        return await self.channel.api.waiting_for(me, channel=self.channel.name,
                                                  here=[f"slack:@{user_id}", f"slack:{user_id}"])

    async def publish(self, user_id: str) -> None:
        view = home_view(await self.waiting_for(user_id))
        try:
            await self.channel.retrier.call("views.publish", lambda: self.channel.client.views_publish(
                user_id=user_id, view=view))
        except SlackCallFailed as exc:
            log.warning("could not publish the Home tab of %s: %s", user_id, exc.error)

    async def on_opened(self, event: dict[str, Any]) -> None:
        user_id = event.get("user")
        if event.get("tab") == "home" and isinstance(user_id, str) and user_id:
            await self.publish(user_id)

    async def on_show(self, ack: AsyncAck, body: dict[str, Any], action: dict[str, Any]) -> None:
        await ack()
        user_id = str(body["user"]["id"])
        request = await self.channel.api.get(str(action.get("value", "")))
        me = Responder(platform="slack", user_id=user_id)
        if request is not None and request.is_open and await self.channel.api.is_allowed(request, me, via="slack"):
            await self.channel.api.post(request, [f"slack:@{user_id}"])
        await self.publish(user_id)  # answered meanwhile: it drops off the list
