"""What people do in Slack, turned into `(request_id, responder, answer)` for the core.

Clicks and modal submissions are acknowledged once the answer is stored, or after
`ack_budget_s` (setting, 2 s) at the latest (Slack wants an ack within 3 s); refusals and
notes go to the person as ephemeral messages after the ack.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

from slack_bolt.async_app import AsyncApp

from adapters.slack.blocks import (
    APPROVE,
    CHOICE,
    DETAILS,
    OPEN_MODAL,
    REJECT,
    SELECT,
    grant_key,
    inline_question,
    request_id_from_block,
)
from adapters.slack.calls import SlackCallFailed
from adapters.slack.grant_modal import GRANT_CALLBACK, PATTERN_BLOCK, grant_modal, read_pattern
from adapters.slack.modals import (
    ANSWER_CALLBACK,
    REJECT_CALLBACK,
    ModalOrigin,
    answer_modal,
    details_modal,
    read_reason,
    read_submission,
    reject_modal,
)
from adapters.slack.port import ListenerPort
from adapters.slack.text import clock, escape, truncate
from bridge.errors import AlreadyClosed, BridgeError, NotAllowed, NotFound, SelfApproval
from bridge.models import Request, Responder
from bridge.outcome import closed_error
from bridge.policy import GrantChoice, GrantScope
from bridge.policy.pressed import GrantRefused, approving_values, chosen_grant, offer_for_key
from bridge.questions import InvalidAnswer, QuestionKind

log = logging.getLogger("hitl_bridge.slack")

NOT_ALLOWED = "You are not allowed to answer this request."
UNKNOWN = "This request is not known to the bridge (it may have been removed)."
Ack = Callable[..., Awaitable[Any]]


def responder_of(user: Any) -> Responder:
    user = user if isinstance(user, dict) else {}
    name = user.get("username") or user.get("name") or ""
    return Responder(platform="slack", user_id=str(user.get("id", "")), name=str(name)[:100])


class NotRecorded(Exception):
    """The bridge failed to record an answer for a reason that is not the person's."""


class VoteCounted(Exception):
    """Not a refusal: the answer counted as one vote and more are needed."""


def refusal_text(exc: Exception) -> str:
    """What to tell the person when the core refuses (or only counts) their answer."""
    if isinstance(exc, NotRecorded):
        return "The bridge could not record your answer just now. Please try again."
    if isinstance(exc, VoteCounted):
        return "Your vote is counted; the request needs more approvals before it is decided."
    if isinstance(exc, SelfApproval):
        return f"{exc}."
    if isinstance(exc, NotAllowed):
        return NOT_ALLOWED
    if isinstance(exc, NotFound):
        return UNKNOWN
    if isinstance(exc, AlreadyClosed):
        state = "answered" if exc.state in ("answered", "delivered") else exc.state
        if exc.by == "timeout" and exc.at:
            return f"This request expired at {clock(exc.at)} (the timeout rule answered it)."
        if exc.by and exc.at:
            return f"This request was already {state} by {escape(exc.by)} at {clock(exc.at)}."
        return f"This request was already {state}."
    return truncate(f"Your answer was not accepted: {escape(str(exc))}", 500)  # names engine options


class Interactions:
    """Bolt listeners for clicks, modal submissions and thread replies."""

    def __init__(self, port: ListenerPort) -> None:
        self.port = port

    def register(self, app: AsyncApp) -> None:
        app.action(re.compile(r"^hitl:"))(self.on_action)
        app.view(ANSWER_CALLBACK)(self.on_answer_view)
        app.view(REJECT_CALLBACK)(self.on_reject_view)
        app.view(GRANT_CALLBACK)(self.on_grant_view)
        app.event("message")(self.on_message)
        app.error(self.on_error)

    async def on_error(self, error: Exception) -> None:
        log.error("slack listener failed: %s", type(error).__name__)

    # helpers ------------------------------------------------------------------------------------
    async def _get(self, request_id: str) -> Request | None:
        return await self.port.get(request_id)

    async def _allowed(self, request: Request, responder: Responder) -> bool:
        return await self.port.may_answer(request, responder)

    async def _tell(self, channel_id: str, user_id: str, text: str) -> None:
        if not channel_id or not user_id:
            return
        try:
            await self.port.tell(channel_id, user_id, text)
        except SlackCallFailed as exc:
            log.warning("could not tell %s: %s", user_id, exc.error)

    async def _answer(self, ack: Ack, request_id: str, responder: Responder, values: dict[str, Any],
                      *, reason: str | None = None, grant: GrantChoice | None = None,
                      on_refusal: Callable[[Exception], Awaitable[bool]] | None = None
                      ) -> Exception | None:
        """Store the answer, then ack (or ack after `ack_budget_s` and keep storing).
        Returns the core's refusal, if any. `on_refusal(exc)` may ack itself (True)."""
        task = asyncio.ensure_future(self.port.answer(request_id, responder, values, reason=reason, grant=grant))
        await asyncio.wait({task}, timeout=self.port.ack_budget_s)
        acked = False
        if not task.done():
            await ack()
            acked = True
        refusal: Exception | None = None
        try:
            if (await task).is_open:  # a vote towards a quorum: recorded, not final
                refusal = VoteCounted()
        except (BridgeError, InvalidAnswer) as exc:
            refusal = exc
        except Exception:  # the store or a bug: still ack, and say so
            log.exception("slack: recording an answer to %s failed", request_id)
            refusal = NotRecorded()
        if not acked:
            if refusal is None or isinstance(refusal, VoteCounted) or on_refusal is None \
                    or not await on_refusal(refusal):
                await ack()
        return refusal

    # block_actions --------------------------------------------------------------------------------
    async def on_action(self, ack: Ack, body: dict[str, Any]) -> None:
        action = (body.get("actions") or [{}])[0]
        action_id = str(action.get("action_id", ""))
        responder = responder_of(body.get("user"))
        channel_id = str((body.get("channel") or {}).get("id")
                         or (body.get("container") or {}).get("channel_id") or "")
        message_ts = str((body.get("container") or {}).get("message_ts", ""))
        request_id = request_id_from_block(str(action.get("block_id", "")))
        if action_id == DETAILS:
            request_id = str(action.get("value", ""))[:64] or None
        if request_id is None:
            await ack()
            return
        if action_id in (OPEN_MODAL, REJECT, DETAILS):
            await ack()
            await self._open_modal(action_id, request_id, responder, body, channel_id, message_ts)
            return
        key = grant_key(action_id)
        if key is not None:
            await self._on_grant(ack, key, str(action.get("value", "")), request_id, responder, body,
                                 channel_id, message_ts)
            return
        request = await self._get(request_id)
        value = self._inline_value(request, action_id, action) if request else None
        if request is None or value is None:
            await ack()
            await self._tell(channel_id, responder.user_id,
                             UNKNOWN if request is None else "That button is not valid any more.")
            return
        refusal = await self._answer(ack, request_id, responder, value)
        if refusal is not None:
            await self._tell(channel_id, responder.user_id, refusal_text(refusal))

    def _inline_value(self, request: Request, action_id: str, action: dict[str, Any]
                      ) -> dict[str, Any] | None:
        question = inline_question(request)
        if question is None:
            return None
        if action_id == APPROVE and question.kind is QuestionKind.confirm:
            return {question.id: "yes"}
        if question.kind is not QuestionKind.choice:
            return None
        if action_id.startswith(CHOICE + ":"):
            raw = action_id[len(CHOICE) + 1:]
        elif action_id == SELECT:
            raw = str((action.get("selected_option") or {}).get("value", ""))
        else:
            return None
        if not raw.isdigit() or int(raw) >= len(question.options):
            return None
        return {question.id: question.options[int(raw)]}

    async def _on_grant(self, ack: Ack, key: str, value: str, request_id: str, responder: Responder,
                        body: dict[str, Any], channel_id: str, message_ts: str) -> None:
        """A standing-approval button: Approve with the grant it names ("Always allow this"
        first opens the modal to narrow its pattern)."""
        request = await self._get(request_id)
        try:
            if request is None:
                raise GrantRefused(UNKNOWN)
            if value != key:  # the value repeats the key: anything else was not built here
                raise GrantRefused("That button is not valid any more.")
            offer = offer_for_key(self.port.grant_offers(request), key)
            values = approving_values(request)
        except GrantRefused as exc:
            await ack()
            await self._tell(channel_id, responder.user_id, str(exc))
            return
        if offer.choice.scope is GrantScope.always:
            await ack()
            await self._open_modal(GRANT_CALLBACK, request_id, responder, body, channel_id, message_ts)
            return
        refusal = await self._answer(ack, request_id, responder, values, grant=offer.choice)
        if refusal is not None:
            await self._tell(channel_id, responder.user_id, refusal_text(refusal))

    async def _open_modal(self, action_id: str, request_id: str, responder: Responder,
                          body: dict[str, Any], channel_id: str, message_ts: str) -> None:
        request = await self._get(request_id)
        if request is None:
            await self._tell(channel_id, responder.user_id, UNKNOWN)
            return
        if action_id == DETAILS:
            view = details_modal(request)
        elif not request.is_open:
            await self._tell(channel_id, responder.user_id, refusal_text(self._closed(request)))
            return
        elif not await self._allowed(request, responder):
            await self.port.refused(request, responder, "not in responders")
            await self._tell(channel_id, responder.user_id, NOT_ALLOWED)
            return
        else:
            origin = ModalOrigin(request.id, channel_id, message_ts)
            if action_id == GRANT_CALLBACK:
                always = [o for o in self.port.grant_offers(request) if o.choice.scope is GrantScope.always]
                if not always:
                    await self._tell(channel_id, responder.user_id, "That button is not valid any more.")
                    return
                view = grant_modal(request, always[0], origin)
            else:
                view = reject_modal(request, origin) if action_id == REJECT \
                    else answer_modal(request, origin)
        trigger = str(body.get("trigger_id", ""))
        try:
            await self.port.open_view(trigger, view)
        except SlackCallFailed as exc:  # expired_trigger_id after a slow click, Slack down...
            log.warning("views.open for %s failed: %s", request_id, exc.error)
            await self._tell(channel_id, responder.user_id,
                             "Slack could not open the form in time. Please click again.")

    @staticmethod
    def _closed(request: Request) -> AlreadyClosed:
        return closed_error(request)

    # view_submission --------------------------------------------------------------------------------
    async def on_answer_view(self, ack: Ack, body: dict[str, Any], view: dict[str, Any]) -> None:
        await self._on_view(ack, body, view, reject=False)

    async def on_reject_view(self, ack: Ack, body: dict[str, Any], view: dict[str, Any]) -> None:
        await self._on_view(ack, body, view, reject=True)

    async def _on_view(self, ack: Ack, body: dict[str, Any], view: dict[str, Any], *,
                       reject: bool) -> None:
        responder = responder_of(body.get("user"))
        origin = ModalOrigin.load(str(view.get("private_metadata", "")))
        first_input = next((str(b.get("block_id")) for b in view.get("blocks", [])
                            if isinstance(b, dict) and b.get("type") == "input"), "")

        async def show_error(text: str) -> None:
            if first_input:
                await ack(response_action="errors", errors={first_input: truncate(text, 150)})
            else:
                await ack()

        if origin is None:
            await show_error(UNKNOWN)
            return
        request = await self._get(origin.request_id)
        if request is None:
            await show_error(UNKNOWN)
            return
        state = (view.get("state") or {}).get("values")
        reason: str | None = None
        if reject:
            question = inline_question(request)
            if question is None or question.kind is not QuestionKind.confirm:
                await show_error("This request cannot be rejected this way.")
                return
            values: dict[str, Any] = {question.id: "no"}
            reason = read_reason(state)
        else:
            values, errors = read_submission(request, state)
            if errors:
                await ack(response_action="errors", errors=errors)
                return

        async def refuse_inline(exc: Exception) -> bool:
            await show_error(refusal_text(exc))
            return True

        refusal = await self._answer(ack, request.id, responder, values, reason=reason,
                                     on_refusal=refuse_inline)
        if refusal is not None and origin.channel:
            await self._tell(origin.channel, responder.user_id, refusal_text(refusal))

    async def on_grant_view(self, ack: Ack, body: dict[str, Any], view: dict[str, Any]) -> None:
        """"Always allow this" saved: Approve, with the pattern the person kept or narrowed."""
        responder = responder_of(body.get("user"))
        origin = ModalOrigin.load(str(view.get("private_metadata", "")))
        request = await self._get(origin.request_id) if origin is not None else None
        try:
            if request is None:
                raise GrantRefused(UNKNOWN)
            pattern = read_pattern((view.get("state") or {}).get("values"))
            grant = chosen_grant(self.port.grant_offers(request), GrantScope.always.value, pattern)
            values = approving_values(request)
        except GrantRefused as exc:
            await ack(response_action="errors", errors={PATTERN_BLOCK: truncate(str(exc), 150)})
            return

        async def refuse_inline(exc: Exception) -> bool:
            await ack(response_action="errors", errors={PATTERN_BLOCK: truncate(refusal_text(exc), 150)})
            return True

        refusal = await self._answer(ack, request.id, responder, values, grant=grant, on_refusal=refuse_inline)
        if refusal is not None and origin is not None and origin.channel:
            await self._tell(origin.channel, responder.user_id, refusal_text(refusal))

    # thread replies -----------------------------------------------------------------------------------
    async def on_message(self, event: dict[str, Any]) -> None:
        """A reply in a request's thread answers its lone `text` question."""
        thread_ts = event.get("thread_ts")
        if (event.get("subtype") or event.get("bot_id") or not thread_ts
                or thread_ts == event.get("ts") or not isinstance(event.get("text"), str)):
            return
        channel_id = str(event.get("channel", ""))
        request_id = await self.port.thread_request(channel_id, str(thread_ts))
        if request_id is None:
            return  # a thread the bridge did not start
        request = await self._get(request_id)
        if request is None or len(request.questions) != 1 \
                or request.questions[0].kind is not QuestionKind.text:
            return  # people talk in threads; only a lone text question takes a reply
        user_id = str(event.get("user", ""))
        responder = responder_of({"id": user_id,
                                  "name": await self.port.user_name(user_id)})
        if not request.is_open:
            await self._tell(channel_id, responder.user_id, refusal_text(self._closed(request)))
            return
        try:
            await self.port.answer(request.id, responder, {request.questions[0].id: event["text"]})
        except (BridgeError, InvalidAnswer) as exc:
            await self._tell(channel_id, responder.user_id, refusal_text(exc))
        except Exception:  # Slack has had its ack: say so rather than let the reply vanish
            log.exception("slack: recording a thread reply to %s failed", request.id)
            await self._tell(channel_id, responder.user_id,
                             ":warning: Your reply could not be recorded just now. Please reply again in a minute.")
