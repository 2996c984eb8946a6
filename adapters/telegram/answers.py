"""Recording what a person answered in Telegram (`BridgeAPI.answer`), and refusing, with
a recorded `refused` event, whoever is not among a request's responders. Shared by the
buttons and replies (`handlers.py`) and the step-by-step sessions (`sessions.py`).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from bridge.errors import AlreadyClosed, BridgeError, NotAllowed, SelfApproval
from bridge.models import Request, Responder

if TYPE_CHECKING:
    from telegram import CallbackQuery, User

    from adapters.telegram.desk import Desk
    from bridge.policy import GrantChoice

log = logging.getLogger(__name__)


def responder_of(user: User) -> Responder:
    return Responder(platform="telegram", user_id=str(user.id), name=user.full_name or user.username or "")


class Recorder:
    def __init__(self, desk: Desk) -> None:
        self.desk = desk

    async def record(self, query: CallbackQuery | None, request: Request, responder: Responder,
                     values: dict[str, Any], reason: str | None = None, grant: GrantChoice | None = None,
                     recorded: str = "✅ Answer recorded.") -> str:
        """Record an answer (with the standing approval `grant`, if any); tell the person
        (toast for a button, returned text otherwise; `recorded` when it is)."""
        try:
            updated = await self.desk.bridge.answer(request.id, responder, values, via="telegram", reason=reason,
                                                    grant=grant)
        except AlreadyClosed as exc:
            text = f"Not recorded: {exc}."
        except SelfApproval as exc:
            text = f"Not recorded: {exc}."
        except NotAllowed:
            text = "You are not allowed to answer this request."
        except BridgeError as exc:
            text = f"Not recorded: {exc}"
        else:
            text = "Vote recorded; waiting for more approvals." if updated.is_open else recorded
            if query is not None:
                await self.desk.outbox.toast(query, text)
            return text
        if query is not None:
            await self.desk.outbox.toast(query, text, alert=True)
        return text

    async def allowed(self, request: Request, responder: Responder, **data: Any) -> bool:
        if await self.desk.bridge.is_allowed(request, responder, via="telegram"):
            return True
        log.info("Telegram: refused %s for request %s (not a responder)", responder.key, request.id)
        await self.desk.bridge.note(request.id, "refused", responder.key, {
            "name": responder.name, "via": "telegram", "reason": "not in responders", **data})
        return False
