"""The terminal inbox's standing approvals: after "y" to a tool approval that offers them
(the request's `grant_offers`, from the daemon), one more question — just this once, or
keep allowing (for the session, for a while, always with a pattern the person may narrow).
The choice is sent with the answer as `grant`; the daemon checks it."""

from __future__ import annotations

from typing import Any

from bridge.cli import safe
from bridge.cli.prompts import Terminal

INDENT = "  "


def ask_grant(view: dict[str, Any], values: dict[str, Any], term: Terminal) -> dict[str, Any] | None:
    """The `grant` to send with `values`, or None for a plain answer (nothing offered, not
    an approval, or "just this once")."""
    offers = [o for o in view.get("grant_offers") or [] if isinstance(o, dict)]
    questions = view.get("questions") or []
    if not offers or not questions or values.get(str(questions[0].get("id"))) != "yes":
        return None
    term.say(f"{INDENT}keep allowing it?  0) just this once (Enter)")
    for n, offer in enumerate(offers, 1):
        term.say(f"{INDENT}                   {n}) {safe.line(str(offer.get('label', '')))}")
    while True:
        picked = term.ask(f"{INDENT}> ")
        if picked in ("", "0"):
            return None
        if picked.isdigit() and 1 <= int(picked) <= len(offers):
            break
        term.say(f"{INDENT}type a number from 0 to {len(offers)}")
    offer = offers[int(picked) - 1]
    grant = {"scope": offer.get("scope"), "span_s": offer.get("span_s"), "pattern": None}
    if offer.get("scope") == "always":
        default = str(offer.get("pattern") or "")
        typed = term.ask(f"{INDENT}pattern [{safe.line(default)}] (narrow it, or Enter to keep): ")
        grant["pattern"] = typed or default or None
    return {k: v for k, v in grant.items() if v is not None}
