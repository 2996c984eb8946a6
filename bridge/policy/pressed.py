"""A grant button pressed on a channel, read once for every channel: the key must name one
of the offers the request has now, and the values are the ones Approve would send.
Channels call `chosen_grant` and `approving_values`; the core then checks the grant itself
(bridge.policy.granting: who may grant, the span, a pattern no wider than the default) and
refuses the answer with `GrantRefused` when it cannot be made.

`made_of` is what the answer keeps of the grant (bridge.models.GrantMade), so every copy of
the request can say it: "Allowed for 1 hour by ana — until 14:05"."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from bridge.errors import GrantRefused
from bridge.models import GrantMade, Request
from bridge.policy.choice import GrantChoice, GrantOffer, GrantScope, _span_label, is_tool_approval

if TYPE_CHECKING:
    from bridge.store.concerns.grants import Grant

#: the longest key a channel accepts back (`span:31622400` is 14)
MAX_KEY_CHARS = 20
MAX_PATTERN_CHARS = 1000


def offer_for_key(offers: Sequence[GrantOffer], key: str) -> GrantOffer:
    """The offer a button's key names, among the offers the request has now (GrantRefused
    for a key that is not one: forged, oversized, or no longer offered)."""
    if not isinstance(key, str) or len(key) > MAX_KEY_CHARS:
        raise GrantRefused("That standing-approval button is not valid.")
    for offer in offers:
        if offer.key == key.strip():
            return offer
    raise GrantRefused("That standing approval is not offered for this request (any more).")


def chosen_grant(offers: Sequence[GrantOffer], key: str, pattern: str | None = None) -> GrantChoice:
    """The `GrantChoice` for a pressed button (`key`) and, for "Always allow this", the
    pattern the person saved (None or blank: the offer's default; the core refuses one
    wider than the default)."""
    offer = offer_for_key(offers, key)
    saved = (pattern or "").strip()
    if offer.choice.scope is not GrantScope.always or not saved or saved == offer.pattern:
        return offer.choice
    if len(saved) > MAX_PATTERN_CHARS or any(c in saved for c in "\r\n\x00"):
        raise GrantRefused(f"The pattern must be one line of at most {MAX_PATTERN_CHARS} characters.")
    return offer.choice.model_copy(update={"pattern": saved})


def approving_values(request: Request) -> dict[str, Any]:
    """What "Allow once" sends for a tool approval answered in one press: its confirm
    question approved (a grant button is an Approve that also grants)."""
    if not is_tool_approval(request) or len(request.questions) != 1:
        raise GrantRefused("This request cannot be approved in one press: use its form.")
    return {request.questions[0].id: "yes"}


def made_of(grant: Grant) -> GrantMade:
    """What the answer keeps of the grant it made."""
    span = (grant.expires_at - grant.created_at).total_seconds() if grant.expires_at else None
    return GrantMade(scope=grant.scope, pattern=grant.pattern, span_s=span, expires_at=grant.expires_at,
                     grant_id=grant.id)


def granted_words(scope: str, span_s: float | None = None) -> str:
    """What a standing approval allows, in the words of its button: "Allowed for 1 hour"."""
    if scope == GrantScope.session:
        return "Allowed for this session"
    if scope == GrantScope.always:
        return "Always allowed"
    return _span_label(span_s or 60).replace("Allow for", "Allowed for", 1)
