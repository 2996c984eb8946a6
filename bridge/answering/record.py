"""Recording: the answer closes the request (secrets sealed, the record redacted)."""

from __future__ import annotations

from typing import Any

from bridge.answering.actor import Actor
from bridge.answering.closed import closed_error
from bridge.answering.desk import Desk
from bridge.answering.values import redacted
from bridge.models import OPEN_STATES, Answer, Event, Request, RequestState


async def record(desk: Desk, request: Request, actor: Actor, clean: dict[str, Any], *, reason: str | None,
                 to_state: RequestState = RequestState.answered) -> Request:
    """Close `request` with `clean` as `actor`'s answer (AlreadyClosed if it closed meanwhile)."""
    now = desk.clock.now()
    responder = actor.responder
    sealed = {k: (desk.secrets.seal(v) if k in request.secret_question_ids else v) for k, v in clean.items()}
    answer = Answer(values=sealed, responder=responder, via=actor.via, answered_at=now, reason=reason)
    data: dict[str, Any] = {"name": responder.name, "via": actor.via, "values": redacted(request, clean),
                            "reason": reason,
                            **({"relayed_by": responder.relayed_by} if responder.relayed_by else {}),
                            **({"decided_by": dict(actor.detail)} if actor.is_automatic else {})}
    event = Event(id=0, request_id=request.id, at=now, actor=responder.key, data=data,
                  kind="answered" if to_state is RequestState.answered else "expired")
    updated = await desk.store.transition(
        request.id, OPEN_STATES, to_state, event=event, answer=answer, enqueue=to_state.value, now=now,
    )
    if updated is None:
        current = await desk.store.get_request(request.id)
        raise closed_error(current or request)
    desk.lifecycle.answered(updated)
    desk.after_close(updated)
    return updated
