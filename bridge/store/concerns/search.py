"""Lists, search and counts over requests."""

from __future__ import annotations

import abc
from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import replace
from typing import Protocol

from bridge.models import Request, RequestState
from bridge.store.query import RequestQuery


def wanted_counts(kept: Mapping[str, int], query: RequestQuery) -> dict[str, int]:
    """The kept counts by state, of the states `query` asks for (all with none named)."""
    wanted = {s.value for s in query.states}
    return {s: n for s, n in kept.items() if not wanted or s in wanted}


def less_voted(counts: dict[str, int], voted: Iterable[tuple[str, int]]) -> dict[str, int]:
    """`counts` less the requests (by state) one of `query.not_voted_by` voted on; no zeros."""
    for state, n in voted:
        counts[state] -= int(n)
    return {s: n for s, n in counts.items() if n}


class SearchStore(Protocol):
    @abc.abstractmethod
    async def find_requests(self, query: RequestQuery, *, limit: int = 100, offset: int = 0) -> list[Request]:
        """The requests `query` matches, newest first (search and "waiting for me" lists)."""

    @abc.abstractmethod
    async def count_requests(self, query: RequestQuery) -> dict[str, int]:
        """How many requests `query` matches, by state (with no `states`, one call counts
        every tab of a list)."""

    @abc.abstractmethod
    async def count_by_state(self) -> dict[str, int]: ...

    async def list_requests(
        self,
        *,
        states: list[RequestState] | None = None,
        source: str | None = None,
        route: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[Request]:
        """Newest first."""
        query = RequestQuery(states=tuple(states or ()), source=source or None, route=route or None)
        return await self.find_requests(query, limit=limit, offset=offset)

    async def pages(self, query: RequestQuery, *, size: int = 500) -> AsyncIterator[list[Request]]:
        """Every request `query` matches, newest first, a page at a time (keyset paging: each
        page costs the same however far in, and a request that changes state meanwhile
        makes no other one skipped or seen twice)."""
        while True:
            page = await self.find_requests(query, limit=size)
            if page:
                yield page
            if len(page) < size:
                return
            query = replace(query, before=(page[-1].created_at, page[-1].id))
