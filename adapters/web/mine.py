""""Waiting for me": which open requests name the person looking at the inbox.

The viewer's verified handle (`web:ana`, `api:ci`) is resolved through `people:` to a
person; a request waits for them when its `responders` names them (by any of their
handles, `person:<name>` or a `group:` they belong to) and they have not voted on it yet.
Entries only a channel can resolve (a Slack user group, a Telegram group chat) are not
counted. On an open loopback inbox (`web:local`) everything open waits for the one person
there; the shared inbox password is nobody in particular, so it has no such list.
"""

from __future__ import annotations

from dataclasses import dataclass

from adapters.web.auth import Viewer
from bridge.models import OPEN_STATES, Request, Responder
from bridge.people import LOCAL, People, handle_variants
from bridge.store.query import RequestQuery


@dataclass(frozen=True)
class Me:
    """Who the viewer is for "waiting for me": the responders entries that name them (lower
    case) and the voters their votes are recorded as. `everything`: an open inbox."""

    entries: frozenset[str]
    voters: frozenset[str]
    everything: bool = False

    def __post_init__(self) -> None:
        if not self.everything and not self.entries:
            raise ValueError("a viewer named by no responders entry would see every request as theirs")

    def query(self, *, text: str | None = None, source: str | None = None, route: str | None = None) -> RequestQuery:
        """Open requests waiting for this viewer (narrowed by a search and filters)."""
        return RequestQuery(states=tuple(sorted(OPEN_STATES)), source=source, route=route, text=text,
                            responders_any=() if self.everything else tuple(sorted(self.entries)),
                            not_voted_by=tuple(sorted(self.voters)))

    def named_in(self, request: Request) -> bool:
        """The request's responders name this viewer (for the "asks you" mark on a row)."""
        return any(entry.strip().lower() in self.entries for entry in request.responders)


def me(people: People, viewer: Viewer) -> Me | None:
    """The viewer as "waiting for me" sees them; None when the viewer is nobody in particular."""
    if viewer.shared:
        return None
    responder = Responder(platform=viewer.platform, user_id=viewer.identity, name=viewer.display)
    voter = people.voter(responder)
    if voter == LOCAL:
        return Me(frozenset(), frozenset({LOCAL}), everything=True)
    entries: set[str] = set()
    handles = {responder.key}
    person = people.person_of(responder.key)
    if person is not None:
        entries.add(f"person:{person}".lower())
        handles.update(people.people.get(person, ()))
        entries.update(f"group:{g}".lower() for g, members in people.groups.items() if person in members)
    for handle in handles:
        entries.update(handle_variants(handle))
    return Me(frozenset(entries), frozenset({voter, responder.key}))
