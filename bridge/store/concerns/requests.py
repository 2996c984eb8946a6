"""Requests and their state changes: every write is one transaction (see `bridge.store.transactions`)."""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

from bridge.models import Answer, Event, Post, Request, RequestState


def claim_holds(request: Request, expect: Mapping[str, Any] | None) -> bool:
    """An `update_request(expect=...)` claim: the request is still open and every named
    field still has the value the caller read."""
    if expect is None:
        return True
    return request.is_open and all(getattr(request, key) == value for key, value in expect.items())


class RequestStore(Protocol):
    @abc.abstractmethod
    async def create_request(self, request: Request, event: Event | None = None, *, posts: Sequence[Post] = (),
                             events_after: Sequence[Event] = ()) -> tuple[Request, bool]:
        """Insert `request` unless (source, created_by, external_id) exists: then return the
        stored one and False (an external_id is its creator's own: two creators using the
        same one never meet). `event` (its id is ignored) is appended in the same transaction;
        so are, only when the request is inserted, its copies `posts` and then `events_after`
        (a posting with nothing to send: `bridge.ports.PostsInStore`)."""

    @abc.abstractmethod
    async def get_request(self, request_id: str) -> Request | None: ...

    @abc.abstractmethod
    async def find_by_external_id(self, source: str, external_id: str,
                                  created_by: str | None = None) -> Request | None:
        """The request `created_by` (None: no verified creator, as an engine's) stored with
        `external_id` from `source`."""

    async def closed_among(self, request_ids: Sequence[str]) -> list[str]:
        """The ids of `request_ids` whose request is no longer open (or gone)."""
        out = []
        for request_id in request_ids:
            request = await self.get_request(request_id)
            if request is None or not request.is_open:
                out.append(request_id)
        return out

    @abc.abstractmethod
    async def transition(
        self,
        request_id: str,
        from_states: frozenset[RequestState] | set[RequestState],
        to_state: RequestState,
        *,
        event: Event | None = None,
        answer: Answer | None = None,
        error: str | None = None,
        enqueue: str | None = None,
        now: datetime,
    ) -> Request | None:
        """Compare-and-set: move to `to_state` only when the current state is in
        `from_states`. Returns the updated request, or None when the state did not match
        (someone else won). In the same transaction: store `answer`/`error`, append
        `event`, and when `enqueue` is set add an outbox entry for that outcome."""

    @abc.abstractmethod
    async def modify_request(self, request_id: str, change: Callable[[Request], bool], *, now: datetime,
                             events: Sequence[Event] = ()) -> Request | None:
        """Apply `change` to the stored request in one transaction (the row locked against
        every replica): it edits the request in place and returns True to keep the edit and
        append `events`, or False to leave everything as it was. Returns the request as
        stored after a kept edit, else None (not found, or `change` said no). `change` must
        be quick and do no I/O: it runs inside the transaction."""

    @abc.abstractmethod
    async def update_request(self, request_id: str, *, now: datetime, expect: Mapping[str, Any] | None = None,
                             **fields: Any) -> Request | None:
        """Set plain fields (targets, escalation_level, next_reminder_at, answer...).

        With `expect` this is a claim (see `claim_holds`): applied only while the request is
        open and each named field still has the given value, else None. Timers use it so
        that a reminder or an escalation step is taken once, whichever replica fires it."""
