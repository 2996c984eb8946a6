"""What people do in Teams, turned into `(request_id, responder, answer)` for the core:
`adaptiveCard/action` invokes (Action.Execute buttons), and the secret dialog's
`task/fetch` and `task/submit`. Each returns the invoke's response body: the refreshed
card for the person who clicked (the others' copies are updated by the core's update),
a dialog, or a message."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from adapters.teams.answers import ForgedAction, reason_of, request_id_of, values_of
from adapters.teams.cards import (
    PRIVATE,
    SECRET_DIALOG,
    SUBMIT,
    dialog_message,
    invoke_card,
    invoke_message,
    secret_dialog,
)
from adapters.teams.copies import Copies
from adapters.teams.references import part
from bridge.errors import AlreadyClosed, BridgeError, NotAllowed, NotFound, SelfApproval
from bridge.models import Responder
from bridge.ports import BridgeAPI
from bridge.questions import InvalidAnswer, QuestionKind

log = logging.getLogger("hitl_bridge.teams")
VIA = "teams"
NOT_ALLOWED = "You are not allowed to answer this request."
UNKNOWN = "This request is not known to the bridge (it may have been removed)."
PERSONAL_ONLY = "A secret can only be given in a one-to-one chat with the bot."


def responder_of(activity: dict[str, Any]) -> Responder | None:
    """The person who acted, by Entra object id (None: Teams named nobody)."""
    person = part(activity.get("from"))
    aad = person.get("aadObjectId")
    if not isinstance(aad, str) or not 0 < len(aad) <= 100:
        return None
    name = person.get("name")
    return Responder(platform="teams", user_id=aad.lower(), name=str(name)[:100] if isinstance(name, str) else "")


def is_personal(activity: dict[str, Any]) -> bool:
    conversation = activity.get("conversation")
    return isinstance(conversation, dict) and conversation.get("conversationType") == "personal"


def refusal_text(exc: Exception) -> str:
    if isinstance(exc, SelfApproval):
        return f"{exc}."
    if isinstance(exc, NotAllowed):
        return NOT_ALLOWED
    if isinstance(exc, NotFound):
        return UNKNOWN
    if isinstance(exc, AlreadyClosed):
        by = f" by {exc.by}" if exc.by else ""
        return f"This request was already {exc.state}{by}."
    if isinstance(exc, ForgedAction):
        return "That action is not valid for this request."
    return f"Your answer was not accepted: {str(exc)[:300]}"


class Invokes:
    def __init__(self, bridge: Callable[[], BridgeAPI], copies: Copies) -> None:
        self._bridge = bridge
        self.copies = copies

    @property
    def api(self) -> BridgeAPI:
        return self._bridge()

    async def handle(self, activity: dict[str, Any]) -> dict[str, Any]:
        name = activity.get("name")
        value = part(activity.get("value"))
        responder = responder_of(activity)
        if responder is None:
            return invoke_message("Teams did not say who you are; nothing was recorded.")
        if name == "adaptiveCard/action":
            action = part(value.get("action"))
            return await self.action(activity, responder, str(action.get("verb", ""))[:64], action.get("data"))
        if name == "task/fetch":
            return await self.open_dialog(activity, responder, value.get("data"))
        if name == "task/submit":
            return await self.submit_dialog(activity, responder, value.get("data"))
        return {}

    async def _record(self, request_id: str, responder: Responder, values: dict[str, Any],
                      reason: str | None) -> str | None:
        """The refusal to show, or None when the answer was recorded."""
        try:
            request = await self.api.answer(request_id, responder, values, via=VIA, reason=reason)
        except (BridgeError, InvalidAnswer) as exc:
            return refusal_text(exc)
        except Exception:  # the store or a bug: the person must not think it counted
            log.exception("teams: recording an answer to %s failed", request_id)
            return "The bridge could not record your answer just now. Please try again."
        if request.is_open:
            return None  # a vote towards a quorum: the refreshed card shows the tally
        return None

    async def action(self, activity: dict[str, Any], responder: Responder, verb: str, data: Any) -> dict[str, Any]:
        personal = is_personal(activity)
        try:
            request_id = request_id_of(data)
        except ForgedAction as exc:
            return invoke_message(refusal_text(exc))
        request = await self.api.get(request_id)
        if request is None:
            return invoke_message(UNKNOWN)
        if verb == PRIVATE:
            if not await self.api.is_allowed(request, responder, via=VIA):
                return invoke_message(NOT_ALLOWED)
            results = await self.api.post(request, [f"teams:user:{responder.user_id}"])
            if not all(r.ok for r in results):
                return invoke_message("The bot could not open a one-to-one chat with you.")
            return invoke_message("Sent to you in a one-to-one chat with the bot.")
        try:
            values = values_of(request, verb, data)
            reason = reason_of(data)
        except ForgedAction as exc:
            return invoke_message(refusal_text(exc))
        refusal = await self._record(request_id, responder, values, reason)
        if refusal is not None:
            return invoke_message(refusal)
        card = await self.copies.card_for(request_id, personal=personal)
        return invoke_card(card) if card is not None else invoke_message(UNKNOWN)

    async def open_dialog(self, activity: dict[str, Any], responder: Responder, data: Any) -> dict[str, Any]:
        if not is_personal(activity):
            return dialog_message(PERSONAL_ONLY)
        try:
            request_id = request_id_of(data)
        except ForgedAction as exc:
            return dialog_message(refusal_text(exc))
        request = await self.api.get(request_id)
        if request is None or not request.is_open:
            return dialog_message(UNKNOWN if request is None else "This request is already closed.")
        if data.get("verb") != SECRET_DIALOG or not any(q.kind is QuestionKind.secret for q in request.questions):
            return dialog_message(refusal_text(ForgedAction("no dialog")))
        if not await self.api.is_allowed(request, responder, via=VIA):
            return dialog_message(NOT_ALLOWED)
        return secret_dialog(request)

    async def submit_dialog(self, activity: dict[str, Any], responder: Responder, data: Any) -> dict[str, Any]:
        if not is_personal(activity):
            return dialog_message(PERSONAL_ONLY)
        try:
            request_id = request_id_of(data)
            request = await self.api.get(request_id)
            if request is None:
                return dialog_message(UNKNOWN)
            values = values_of(request, SUBMIT, data, secrets=True)
        except ForgedAction as exc:
            return dialog_message(refusal_text(exc))
        refusal = await self._record(request_id, responder, values, None)
        return dialog_message(refusal or "Thank you: your answer is recorded.")
