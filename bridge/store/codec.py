"""Row <-> model conversions shared by both store implementations."""

from __future__ import annotations

from datetime import UTC, datetime

from bridge.models import Request

SCHEMA_VERSION = 1


def ts(value: datetime | None) -> str | None:
    """Fixed-width UTC text, so that string order is time order."""
    if value is None:
        return None
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f+00:00")


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
        "body": request.model_dump_json(),
    }


def load_request(body: str) -> Request:
    return Request.model_validate_json(body)
