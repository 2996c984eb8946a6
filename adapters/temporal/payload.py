"""What the workflow receives (pure): the outcome of its request as one JSON object.

`hitl_bridge_client.temporal` reads it on the workflow side; the two agree on these keys.
"""

from __future__ import annotations

from typing import Any

from bridge.ports import Outcome


def outcome_payload(outcome: Outcome) -> dict[str, Any]:
    """`{request_id, state, values, reason, responder, answered_at}`; `values` is None when
    the request closed without an answer (cancelled, expired with no default)."""
    answer = outcome.answer
    return {
        "request_id": outcome.request.id,
        "state": outcome.state,
        "values": dict(answer.values) if answer is not None else None,
        "reason": answer.reason if answer is not None else None,
        "responder": answer.responder.key if answer is not None else None,
        "via": answer.via if answer is not None else None,
        "answered_at": answer.answered_at.isoformat() if answer is not None else None,
    }
