"""Sending: every Web API call that changes something in Slack, behind one error.

Each method raises `SlackCallFailed` (calls.py) when Slack does not do it, never a
slack_sdk or aiohttp exception. Calls go through the `Retrier` (which tells the health
reporter how they ended), except the two that must not be retried or observed: a modal's
`views.open` (its trigger id lives 3 s) and the history read after an ambiguous post.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import aiohttp
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.calls import ChannelPacer, Retrier, SlackCallFailed, response_data, slack_error

T = TypeVar("T")


async def once(what: str, call: Callable[[], Awaitable[T]]) -> T:
    """One try of `call`, its failure as `SlackCallFailed` (`network` when Slack was not reached)."""
    try:
        return await call()
    except SlackApiError as exc:
        raise SlackCallFailed(what, slack_error(exc)) from None
    except (aiohttp.ClientError, OSError, TimeoutError) as exc:
        raise SlackCallFailed(what, type(exc).__name__, network=True) from None


class SlackSender:
    """Posts, updates, ephemeral notes and views, retried and (posts) paced per channel."""

    def __init__(self, client: AsyncWebClient, retrier: Retrier, pacer: ChannelPacer) -> None:
        self.client = client
        self.retrier = retrier
        self.pacer = pacer

    async def paced(self, channel: str, job: Callable[[], Awaitable[T]]) -> T:
        """Run `job` in `channel`'s turn: posts to one channel keep their order and spacing."""
        return await self.pacer.run(channel, job)

    async def whoami(self) -> dict[str, Any]:
        """`auth.test`: the bot user and workspace the token belongs to."""
        return response_data(await once("auth.test", self.client.auth_test))

    async def post_request(self, channel: str, *, what: str, text: str, blocks: list[dict[str, Any]],
                           metadata: dict[str, Any],
                           recover: Callable[[], Awaitable[dict[str, Any] | None]] | None = None
                           ) -> dict[str, Any]:
        """A request's message; `recover` may find it landed after an ambiguous failure."""
        response = await self.retrier.call(
            what,
            lambda: self.client.chat_postMessage(
                channel=channel, text=text, blocks=blocks, metadata=metadata, unfurl_links=False),
            recover=recover,
        )
        return response_data(response)

    async def update_message(self, channel: str, ts: str, *, text: str, blocks: list[dict[str, Any]]) -> None:
        await self.retrier.call(f"chat.update {channel}", lambda: self.client.chat_update(
            channel=channel, ts=ts, text=text, blocks=blocks))

    async def reply_in_thread(self, channel: str, ts: str, text: str, *, what: str) -> None:
        """A reply under the message at `ts`, in the channel's posting turn."""
        await self.paced(channel, lambda: self.retrier.call(
            what, lambda: self.client.chat_postMessage(
                channel=channel, thread_ts=ts, text=text, reply_broadcast=False)))

    async def ephemeral(self, channel: str, user_id: str, text: str) -> None:
        """A note only `user_id` sees, in `channel`."""
        await self.retrier.call("chat.postEphemeral", lambda: self.client.chat_postEphemeral(
            channel=channel, user=user_id, text=text))

    async def open_view(self, trigger_id: str, view: dict[str, Any]) -> None:
        try:
            await once("views.open", lambda: self.client.views_open(trigger_id=trigger_id, view=view))
        except SlackClientError as exc:  # the SDK refusing the call itself
            raise SlackCallFailed("views.open", type(exc).__name__) from None

    async def publish_home(self, user_id: str, view: dict[str, Any]) -> None:
        await self.retrier.call("views.publish", lambda: self.client.views_publish(user_id=user_id, view=view))

    async def recent_messages(self, channel_id: str) -> list[dict[str, Any]]:
        """The channel's last 50 messages, with their metadata."""
        history = response_data(await once("conversations.history", lambda: self.client.conversations_history(
            channel=channel_id, limit=50, include_all_metadata=True)))
        return list(history.get("messages", []))
