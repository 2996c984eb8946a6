"""The app's Home tab: what waits for this person's answer, opened from the app in the
sidebar. Each entry has a button that sends the request to their DM (a fresh copy with
working controls, recorded and updated like the others).

Listed: open requests shown in Slack whose `responders` name this person (or a user group
of theirs), and requests shown in their DM. A request anyone may answer is not listed:
its channels say who can see it, and the Home tab must not leak it to others.
"""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncApp

from adapters.slack.calls import SlackCallFailed
from adapters.slack.home_view import SHOW_ACTION, home_view
from adapters.slack.port import ListenerPort
from bridge.models import Request, Responder, utcnow

log = logging.getLogger("hitl_bridge.slack")


class HomeTab:
    """Bolt listeners for the Home tab and its "Send to my DM" buttons."""

    def __init__(self, port: ListenerPort) -> None:
        self.port = port

    def register(self, app: AsyncApp) -> None:
        app.event("app_home_opened")(self.on_opened)
        app.action(SHOW_ACTION)(self.on_show)

    async def waiting_for(self, user_id: str) -> list[Request]:
        me = Responder(platform="slack", user_id=user_id)
        return await self.port.waiting_for(me, here=[f"slack:@{user_id}", f"slack:{user_id}"])

    async def publish(self, user_id: str) -> None:
        view = home_view(await self.waiting_for(user_id), utcnow())
        try:
            await self.port.publish_home(user_id, view)
        except SlackCallFailed as exc:
            log.warning("could not publish the Home tab of %s: %s", user_id, exc.error)

    async def on_opened(self, event: dict[str, Any]) -> None:
        user_id = event.get("user")
        if event.get("tab") == "home" and isinstance(user_id, str) and user_id:
            await self.publish(user_id)

    async def on_show(self, ack: AsyncAck, body: dict[str, Any], action: dict[str, Any]) -> None:
        await ack()
        user_id = str(body["user"]["id"])
        request = await self.port.get(str(action.get("value", "")))
        me = Responder(platform="slack", user_id=user_id)
        if request is not None and request.is_open and await self.port.may_answer(request, me):
            await self.port.show_in_dm(request, user_id)
        await self.publish(user_id)  # answered meanwhile: it drops off the list
