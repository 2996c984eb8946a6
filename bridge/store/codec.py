"""Row <-> model conversions shared by both store implementations."""

from __future__ import annotations

from datetime import UTC, datetime

from bridge.models import OPEN_STATES, Answer, Request, RequestState

#: 2: requests.created_by keys external ids (a bridge before it would still key them by source alone)
#: 3: grants (standing approvals)
SCHEMA_VERSION = 3


def ts(value: datetime | None) -> str | None:
    """Fixed-width UTC text, so that string order is time order."""
    if value is None:
        return None
    if value.tzinfo is not UTC:
        value = value.astimezone(UTC)
    return value.isoformat(timespec="microseconds")  # "…T…:…:….ffffff+00:00"; twice as fast as strftime


def parse_ts(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


def request_columns(request: Request) -> dict[str, object]:
    return {
        "id": request.id,
        "source": request.source,
        "external_id": request.external_id,
        "state": request.state.value,
        "route": request.route,
        "created_at": ts(request.created_at),
        "updated_at": ts(request.updated_at),
        "deadline": ts(request.deadline),
        "next_reminder_at": ts(request.next_reminder_at),
        "next_escalation_at": ts(request.next_escalation_at),
        "step_due_at": ts(request.step_due_at),
        "resume": int(resumes(request)),
        "created_by": request.created_by or "",
        "body": request.model_dump_json(),
    }


def resumes(request: Request) -> bool:
    """An open request a restart must look at whole: an escalation level reached or a timer
    step claimed (`Scheduler.rebuild` re-posts or takes those over); every other timer is
    armed from its id and instant alone."""
    return request.is_open and (request.escalation_level > 0 or bool(request.timer_steps))


def move(request: Request, to_state: RequestState, now: datetime, *, answer: Answer | None = None,
         error: str | None = None) -> None:
    """A state change as both stores apply it: a closed request keeps no timers."""
    request.state = to_state
    request.updated_at = now
    if answer is not None:
        request.answer = answer
    if error is not None:
        request.error = error
    if to_state not in OPEN_STATES:
        request.next_reminder_at = None
        request.next_escalation_at = None
        request.timer_steps = []


#: open requests whose write-back succeeded but that a crash left answered/expired (see
#: Store.heal_deliveries); the same SQL on both stores
STUCK_DELIVERED = (
    "SELECT id FROM requests r WHERE state IN ('answered','expired') "
    "AND EXISTS (SELECT 1 FROM outbox o WHERE o.request_id=r.id AND o.done) "
    "AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.request_id=r.id AND NOT o.done)"
)


def load_request(body: str) -> Request:
    return Request.model_validate_json(body)

