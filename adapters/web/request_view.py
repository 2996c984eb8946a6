"""Everything one request's page shows (the inbox's detail page, the emailed answer page
and their live fragments), read from the store in one place."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from adapters.web import views
from adapters.web.markdown import render_markdown
from adapters.web.mine import Me
from adapters.web.present import Node, answer_items, ask_summary, context_tree, decision, needs_review, one_tap
from bridge.models import Request
from bridge.policy import GrantOffer
from bridge.service import BridgeService
from bridge.store.base import Vote
from bridge.timing_view import timing_notes, vote_line


def reading(found: Request, now: datetime, offers: Sequence[GrantOffer] = ()) -> dict[str, Any]:
    """What a person reads of a request, whoever they are (no store access); `offers`: the
    standing approvals its form shows next to Approve (`BridgeService.grant_offers`)."""
    return {
        "r": found,
        "now": now,
        "decision": decision(found),
        "answers": answer_items(found),
        "summary": ask_summary(found),
        "description": render_markdown(found.description).html,
        "tree": [Node(k, "text", v) for k, v in views.context_items(found)] + context_tree(found.context),
        "countdown": views.countdown(found.deadline, now) if found.is_open and found.deadline else "",
        "overdue": bool(found.is_open and found.deadline and found.deadline < now),
        "one_tap": one_tap(found),
        "review": needs_review(found),
        "grant_offers": list(offers) if found.is_open else [],
    }


async def open_notes(service: BridgeService, found: Request, votes: list[Vote], quorum: int) -> list[str]:
    """The timing notes every copy shows (escalations), less the vote count the page shows
    on its own."""
    if not found.is_open:
        return []
    counted = vote_line(found, votes, quorum)
    return [note for note in await timing_notes(service, found) if note != counted]


async def progress(service: BridgeService, found: Request) -> dict[str, Any]:
    """Votes and timing notes (quorum, escalations) while a request is open."""
    quorum = service.route_of(found).quorum
    votes = await service.store.list_votes(found.id) if quorum > 1 else []
    return {
        "quorum": quorum,
        "votes": views.vote_views(found, votes),
        "notes": await open_notes(service, found, votes, quorum),
    }


async def request_view(service: BridgeService, found: Request, now: datetime, me: Me | None) -> dict[str, Any]:
    """The inbox's detail page: the reading, progress, and the operator's details."""
    deliveries = await service.store.list_outbox(request_id=found.id)
    return {
        **reading(found, now, service.grant_offers(found)),
        **await progress(service, found),
        "asks_me": bool(me is not None and not me.everything and found.is_open and me.named_in(found)),
        "events": views.event_views(await service.store.list_events(found.id)),
        "posts": await service.store.list_posts(found.id),
        "deliveries": views.delivery_views(deliveries),
        "can_retry": views.can_retry(found, deliveries),
    }
