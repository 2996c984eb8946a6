"""The request list: which requests a list shows (tab, search, filters, page), one row per
request as a person reads it, and the counts on the tabs."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from adapters.web import views
from adapters.web.markdown import render_markdown
from adapters.web.mine import Me
from adapters.web.present import Decision, ask_summary, decision
from adapters.web.request_view import open_notes
from bridge.models import Request
from bridge.service import BridgeService
from bridge.store.query import RequestQuery

#: the tabs, in order: name → label
TABS = {"mine": "Waiting for me", "open": "Open", "answered": "Answered", "expired": "Expired",
        "cancelled": "Cancelled", "failed": "Failed", "all": "All"}
FILTER_RE = re.compile(r"^[A-Za-z0-9_.:\[\] -]{1,100}$")
MAX_SEARCH = 200
EXCERPT = 160


@dataclass(frozen=True)
class ListState:
    """What a list shows; carried in links so that a request opened from a list can go back
    to it, and move to the next one."""

    view: str = "open"
    q: str = ""
    source: str = ""
    route: str = ""
    offset: int = 0

    @classmethod
    def from_params(cls, params: Mapping[str, str], *, default_view: str = "open") -> ListState:
        view = params.get("view", default_view)
        q = " ".join(params.get("q", "").split())[:MAX_SEARCH]  # one line, spaces collapsed
        if any(ord(c) < 32 for c in q) or "\x7f" in q:
            q = ""
        offset = params.get("offset", "0")
        return cls(
            view=view if view in TABS else default_view,
            q=q,
            source=params.get("source", "") if FILTER_RE.fullmatch(params.get("source", "")) else "",
            route=params.get("route", "") if FILTER_RE.fullmatch(params.get("route", "")) else "",
            offset=min(int(offset), 1_000_000) if offset.isdigit() and len(offset) < 8 else 0,
        )

    def params(self, **change: Any) -> str:
        """The query string for this state (with `change` applied); defaults left out."""
        state = replace(self, **change)
        pairs = {"view": state.view if state.view != "open" else "", "q": state.q, "source": state.source,
                 "route": state.route, "offset": str(state.offset) if state.offset else ""}
        return urlencode({k: v for k, v in pairs.items() if v})

    def suffix(self, **change: Any) -> str:
        """`?…` for links, or "" for the default list."""
        params = self.params(**change)
        return f"?{params}" if params else ""

    @property
    def filtered(self) -> bool:
        return bool(self.q or self.source or self.route)

    def query(self, me: Me | None) -> RequestQuery | None:
        """The store query for this list; None for "waiting for me" with nobody to wait for."""
        text, source, route = self.q or None, self.source or None, self.route or None
        if self.view == "mine":
            return me.query(text=text, source=source, route=route) if me is not None else None
        return RequestQuery(states=views.STATE_VIEWS[self.view], text=text, source=source, route=route)


@dataclass
class Row:
    r: Request
    summary: str
    excerpt: str
    decision: Decision | None
    countdown: str
    overdue: bool
    notes: list[str]
    quorum: int
    votes: int
    dead: bool
    asks_me: bool


async def rows(service: BridgeService, state: ListState, me: Me | None, now: datetime,
               page_size: int) -> list[Row]:
    query = state.query(me)
    if query is None:
        return []
    found = await service.store.find_requests(query, limit=page_size, offset=state.offset)
    dead = {item.request_id for item in await service.store.list_outbox(dead=True)} if found else set()
    out = []
    for r in found:
        quorum = service.route_of(r).quorum
        votes = await service.store.list_votes(r.id) if quorum > 1 and r.is_open else []
        plain = render_markdown(r.description).plain
        out.append(Row(
            r=r, summary=ask_summary(r),
            excerpt=plain if len(plain) <= EXCERPT else plain[: EXCERPT - 1].rstrip() + "…",
            decision=decision(r),
            countdown=views.countdown(r.deadline, now) if r.is_open and r.deadline else "",
            overdue=bool(r.is_open and r.deadline and r.deadline < now),
            notes=await open_notes(service, r, votes, quorum),
            quorum=quorum, votes=len(votes), dead=r.id in dead,
            asks_me=bool(me is not None and not me.everything and r.is_open and me.named_in(r)),
        ))
    return out


async def tab_counts(service: BridgeService, state: ListState, me: Me | None) -> dict[str, int | None]:
    """How many requests each tab holds under the current search and filters (None: the
    tab does not apply to this viewer)."""
    base = replace(state, view="all").query(me)
    assert base is not None
    by_state = await service.store.count_requests(base)
    counts: dict[str, int | None] = {
        view: sum(n for s, n in by_state.items() if not states or s in {x.value for x in states})
        for view, states in views.STATE_VIEWS.items()
    }
    mine = replace(state, view="mine").query(me)
    counts["mine"] = None if mine is None else sum((await service.store.count_requests(mine)).values())
    return counts
