"""What Bolt's listeners (interactions.py, home.py) may do, and nothing more.

They get a `ListenerPort`, never the channel: the few bridge calls that answer for a
Slack person, and the few Slack sends that reply to them. `ChannelPort` is the real one,
over the bridge, the `SlackSender` and the `Directory`; a test can hand listeners any
object of this shape.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from adapters.slack.copies import THREAD_NS
from adapters.slack.directory import Directory
from adapters.slack.sender import SlackSender
from bridge.models import Request, Responder
from bridge.policy import GrantChoice, GrantOffer
from bridge.ports import BridgeAPI

VIA = "slack"


class ListenerPort(Protocol):
    @property
    def ack_budget_s(self) -> float:
        """How long a click or submission may wait for its answer to be stored before the ack."""
        ...

    # the bridge, for a Slack person -------------------------------------------------------------
    async def get(self, request_id: str) -> Request | None: ...

    async def may_answer(self, request: Request, responder: Responder) -> bool: ...

    async def answer(self, request_id: str, responder: Responder, values: dict[str, Any], *,
                     reason: str | None = None, grant: GrantChoice | None = None) -> Request:
        """The core's answer; raises its refusals (BridgeError, InvalidAnswer). `grant`: the
        standing approval the person chose with it."""
        ...

    def grant_offers(self, request: Request) -> list[GrantOffer]:
        """The standing approvals offered next to Approve for `request` (the core's)."""
        ...

    async def refused(self, request: Request, responder: Responder, reason: str) -> None:
        """Note on the request's history that `responder` was turned away."""
        ...

    async def waiting_for(self, responder: Responder, here: Sequence[str]) -> list[Request]:
        """What waits for `responder` in Slack, the most urgent first (the core's one query)."""
        ...

    async def show_in_dm(self, request: Request, user_id: str) -> None:
        """Post a fresh copy of `request` to the person's DM."""
        ...

    async def thread_request(self, channel_id: str, thread_ts: str) -> str | None:
        """The request whose message starts this thread, if the bridge posted it."""
        ...

    # Slack, back to the person (each raises SlackCallFailed) --------------------------------------
    async def user_name(self, user_id: str) -> str: ...

    async def tell(self, channel_id: str, user_id: str, text: str) -> None:
        """An ephemeral note to the person in the channel they acted in."""
        ...

    async def open_view(self, trigger_id: str, view: dict[str, Any]) -> None: ...

    async def publish_home(self, user_id: str, view: dict[str, Any]) -> None: ...


class ChannelPort:
    """The `ListenerPort` of one Slack channel: the bridge (known once started) and its sender."""

    def __init__(self, bridge: Callable[[], BridgeAPI], sender: SlackSender, directory: Directory, *,
                 ack_budget_s: float) -> None:
        self._bridge = bridge
        self.sender = sender
        self.directory = directory
        self._ack_budget_s = ack_budget_s

    @property
    def ack_budget_s(self) -> float:
        return self._ack_budget_s

    async def get(self, request_id: str) -> Request | None:
        return await self._bridge().get(request_id)

    async def may_answer(self, request: Request, responder: Responder) -> bool:
        return await self._bridge().is_allowed(request, responder, via=VIA)

    async def answer(self, request_id: str, responder: Responder, values: dict[str, Any], *,
                     reason: str | None = None, grant: GrantChoice | None = None) -> Request:
        return await self._bridge().answer(request_id, responder, values, via=VIA, reason=reason, grant=grant)

    def grant_offers(self, request: Request) -> list[GrantOffer]:
        return self._bridge().grant_offers(request)

    async def refused(self, request: Request, responder: Responder, reason: str) -> None:
        await self._bridge().note(request.id, "refused", responder.key,
                                  {"name": responder.name, "via": VIA, "reason": reason})

    async def waiting_for(self, responder: Responder, here: Sequence[str]) -> list[Request]:
        return await self._bridge().waiting_for(responder, channel=VIA, here=here)

    async def show_in_dm(self, request: Request, user_id: str) -> None:
        await self._bridge().post(request, [f"slack:@{user_id}"])

    async def thread_request(self, channel_id: str, thread_ts: str) -> str | None:
        ref = await self._bridge().store.kv_get(THREAD_NS, f"{channel_id}:{thread_ts}")
        return None if ref is None else str(ref.get("request_id", ""))

    async def user_name(self, user_id: str) -> str:
        return await self.directory.user_name(user_id)

    async def tell(self, channel_id: str, user_id: str, text: str) -> None:
        await self.sender.ephemeral(channel_id, user_id, text)

    async def open_view(self, trigger_id: str, view: dict[str, Any]) -> None:
        await self.sender.open_view(trigger_id, view)

    async def publish_home(self, user_id: str, view: dict[str, Any]) -> None:
        await self.sender.publish_home(user_id, view)
