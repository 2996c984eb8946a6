"""A grant button pressed on a channel, checked once for every channel: the key must name
one of the offers the request has now, a narrowed pattern must stay inside the offer's
default, and the values are the ones Approve would send. Channels call `chosen_grant` and
`approving_values`; the answer path calls `grant_made` to keep what was granted with the
answer (bridge.models.GrantMade), so every copy of the request can say it."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from bridge.models import GrantMade, Request
from bridge.policy.choice import GrantChoice, GrantOffer, GrantScope, _span_label, is_tool_approval
from bridge.questions import QuestionKind

#: the longest key a channel accepts back (`span:31622400` is 14)
MAX_KEY_CHARS = 20
MAX_PATTERN_CHARS = 1000
_RULE = re.compile(r"^(?P<tool>[A-Za-z0-9_.:\-]+)(?:\((?P<spec>.*)\))?$", re.DOTALL)


class GrantRefused(ValueError):
    """A grant choice this request does not offer (forged, stale or widened); the message
    is fit to show the person."""


def offer_for_key(offers: Sequence[GrantOffer], key: str) -> GrantOffer:
    """The offer a button's key names, among the offers the request has now."""
    if not isinstance(key, str) or len(key) > MAX_KEY_CHARS:
        raise GrantRefused("That standing-approval button is not valid.")
    for offer in offers:
        if offer.key == key.strip():
            return offer
    raise GrantRefused("That standing approval is not offered for this request (any more).")


def chosen_grant(offers: Sequence[GrantOffer], key: str, pattern: str | None = None) -> GrantChoice:
    """The `GrantChoice` for a pressed button (`key`) and, for "Always allow this", the
    pattern the person saved (None or blank: the offer's default). GrantRefused for a key
    not offered or a pattern wider than the default."""
    offer = offer_for_key(offers, key)
    if offer.choice.scope is GrantScope.once:
        return offer.choice
    narrowed = None
    if pattern is not None and pattern.strip() and pattern.strip() != (offer.pattern or ""):
        if offer.choice.scope is not GrantScope.always:
            raise GrantRefused("Only “Always allow this” takes a pattern.")
        narrowed = pattern.strip()
        check_narrows(offer.pattern or "", narrowed)
    return offer.choice.model_copy(update={"pattern": narrowed if narrowed is not None else offer.pattern})


def offered_grant(offers: Sequence[GrantOffer], asked: GrantChoice | None) -> GrantChoice | None:
    """A grant sent whole (an API or terminal answer's `grant`) checked like a pressed button:
    its scope and span must be one of `offers`, its pattern the default or a narrower one."""
    if asked is None or asked.scope is GrantScope.once:
        return None
    key = GrantOffer(asked.model_copy(update={"pattern": None}), "").key
    return chosen_grant(offers, key, asked.pattern)


def check_narrows(default: str, pattern: str) -> None:
    """GrantRefused unless `pattern` allows no more than `default` (permission-rule syntax):
    the same tool, and a specifier where the default has none, or the default's specifier
    itself, or one that extends the fixed start of a default ending in `*`."""
    if len(pattern) > MAX_PATTERN_CHARS or any(c in pattern for c in "\r\n\x00"):
        raise GrantRefused(f"The pattern must be one line of at most {MAX_PATTERN_CHARS} characters.")
    wide, narrow = _RULE.match(default), _RULE.match(pattern)
    if wide is None or narrow is None:
        raise GrantRefused(f"Not a rule pattern: write it as {default}(…).")
    if narrow["tool"] != wide["tool"]:
        raise GrantRefused(f"The pattern must stay on the tool {wide['tool']}.")
    spec, default_spec = narrow["spec"], wide["spec"]
    if default_spec is None:
        if spec is not None and not spec.strip():
            raise GrantRefused("An empty specifier matches nothing: leave the pattern as the tool name.")
        return
    if spec is not None and (spec == default_spec or _inside(default_spec, spec)):
        return
    raise GrantRefused(f"The pattern may only narrow {default}, not widen it.")


def _inside(default_spec: str, spec: str) -> bool:
    """A command prefix `git:*` holds `git status:*` and `git status`; a glob ending in `*`
    (`./src/**`) holds any spec that starts with its fixed part and has no wildcard before it."""
    if default_spec.endswith(":*"):
        stem = default_spec[:-2]
        return spec == stem or spec.startswith(stem + " ")
    if default_spec.endswith("*"):
        stem = default_spec.rstrip("*")
        rest = spec[len(stem):]
        return bool(stem) and spec.startswith(stem) and "*" not in stem and ".." not in rest.split("/")
    return False


def approving_values(request: Request) -> dict[str, Any]:
    """What "Allow once" sends for a tool approval answered in one press: its confirm
    question approved (a grant button is an Approve that also grants)."""
    if not is_tool_approval(request) or len(request.questions) != 1:
        raise GrantRefused("This request cannot be approved in one press: use its form.")
    return {request.questions[0].id: "yes"}


def approves(request: Request, values: dict[str, Any]) -> bool:
    """The answer approves the tool call: its first question, a confirm, says yes."""
    first = request.questions[0] if request.questions else None
    if first is None or first.kind is not QuestionKind.confirm:
        return False
    return str(values.get(first.id)) in ("yes", "True", "true")


def grant_made(request: Request, choice: GrantChoice | None, values: dict[str, Any], now: datetime,
               grant_id: str | None = None) -> GrantMade | None:
    """What to keep with the answer for `choice`; None for a plain answer, "Allow once",
    or an answer that does not approve."""
    if choice is None or choice.scope is GrantScope.once or not approves(request, values):
        return None
    expires = now + timedelta(seconds=choice.span_s) if choice.scope is GrantScope.span and choice.span_s else None
    return GrantMade(scope=choice.scope.value, pattern=choice.pattern or request.tool,
                     span_s=choice.span_s if expires else None, expires_at=expires, grant_id=grant_id)


def granted_words(scope: str, span_s: float | None = None) -> str:
    """What a standing approval allows, in the words of its button: "Allowed for 1 hour"."""
    if scope == GrantScope.session:
        return "Allowed for this session"
    if scope == GrantScope.always:
        return "Always allowed"
    return _span_label(span_s or 60).replace("Allow for", "Allowed for", 1)
