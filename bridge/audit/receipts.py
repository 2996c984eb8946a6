"""Signed receipts: a compact JWS (EdDSA, Ed25519) with every outcome written back, so an
engine can prove that a person decided, and what.

The claims: the request (`sub`), a sha256 of the question as asked (canonical JSON of its
title and questions), the decision (`state`, and the answer's values with each secret
replaced by a marker: a receipt never holds a secret), who decided (the verified handle,
as the channel authenticated it), through which channel, and when. Verify with the public
keys at `/.well-known/jwks.json` (`hitl_bridge_client.verify_receipt`, or any JOSE library).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from joserfc import jws

from bridge.audit.keys import ALG, ReceiptKeys
from bridge.models import Request

ISSUER = "hitl-bridge"
TYPE = "hitl-receipt+jws"
SECRET_MARK = "[secret]"


def canonical(value: Any) -> bytes:
    """JSON with sorted keys and no spaces (UTF-8): the same bytes for the same value."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def question_digest(request: Request) -> str:
    """sha256 (hex) of the question as asked: its title and questions, canonical JSON."""
    asked = {"title": request.title, "questions": [q.model_dump(mode="json") for q in request.questions]}
    return hashlib.sha256(canonical(asked)).hexdigest()


def claims(request: Request, state: str) -> dict[str, Any]:
    """What a receipt states about `request`'s outcome `state` (no secret: values redacted)."""
    answer = request.answer
    decided_at = answer.answered_at if answer is not None else request.updated_at
    out: dict[str, Any] = {
        "iss": ISSUER, "sub": request.id, "question_sha256": question_digest(request), "state": state,
        "route": request.route, "iat": int(decided_at.timestamp()), "decided_at": decided_at.isoformat(),
    }
    if answer is not None:
        responder = answer.responder
        out["values"] = request.redacted_answer()
        out["by"] = {"handle": responder.key, "name": responder.name,
                     **({"person": responder.person} if responder.person else {}),
                     **({"relayed_by": responder.relayed_by} if responder.relayed_by else {})}
        out["via"] = answer.via
    return out


class Notary:
    """Signs receipts with the store's newest receipt key."""

    def __init__(self, keys: ReceiptKeys) -> None:
        self.keys = keys

    async def receipt(self, request: Request, state: str) -> str:
        signing = await self.keys.signing_key()
        header = {"alg": ALG, "kid": signing.kid, "typ": TYPE}
        return jws.serialize_compact(header, canonical(claims(request, state)), signing.key, algorithms=[ALG])
