"""Standing-approval buttons on the inbox's answer forms (the inbox and the emailed answer
page): a pressed `grant` button approves the request (its first question, a confirm, says
yes; the others as the form fills them) and names the grant, checked by
`bridge.policy.pressed` against the offers the request has now.

Inputs: `grant` (the pressed button: an offer key) and `grant_pattern` (the pattern kept or
narrowed for "Always allow this").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from bridge.models import Request
from bridge.policy import GrantChoice, GrantOffer, GrantScope
from bridge.policy.pressed import GrantRefused, chosen_grant, offer_for_key

GRANT_INPUT = "grant"
PATTERN_INPUT = "grant_pattern"


@dataclass(frozen=True)
class PressedGrant:
    """What the form asked for: the grant (None without a grant button) or why it cannot."""

    choice: GrantChoice | None = None
    label: str = ""
    problem: str = ""


def _first(form: Mapping[str, Sequence[str]], name: str) -> str | None:
    values = form.get(name)
    return values[0] if values else None


def pressed_grant(offers: Sequence[GrantOffer], form: Mapping[str, Sequence[str]]) -> PressedGrant:
    """The grant a submitted form names, checked against `offers`."""
    key = _first(form, GRANT_INPUT)
    if key is None:
        return PressedGrant()
    try:
        offer = offer_for_key(offers, key)
        pattern = _first(form, PATTERN_INPUT) if offer.choice.scope is GrantScope.always else None
        return PressedGrant(chosen_grant(offers, key, pattern), offer.label)
    except GrantRefused as exc:
        return PressedGrant(problem=str(exc))


def approving_form(request: Request, form: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
    """The form as Approve sends it when a grant button was pressed (its first question
    says yes, unless the form itself says something else there: then the core refuses the
    grant rather than the page turning a "no" into a "yes"); unchanged otherwise."""
    out = {name: list(values) for name, values in form.items()}
    if GRANT_INPUT in form and request.questions:
        out.setdefault(f"q.{request.questions[0].id}", ["yes"])
    return out
