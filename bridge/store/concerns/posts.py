"""The copies of a request on channels."""

from __future__ import annotations

import abc
from datetime import datetime
from typing import Protocol

from bridge.models import Event, Post, Request


class PostStore(Protocol):
    @abc.abstractmethod
    async def add_post(self, post: Post) -> None: ...

    @abc.abstractmethod
    async def record_posts(self, request_id: str, posts: list[Post], events: list[Event], *,
                           now: datetime, held: Request | None = None) -> Request | None:
        """Store the copies and events of one posting; when a copy is ok and the request is
        still `pending`, move it to `posted` and return it (else None). The events are kept
        only while the request is open, decided atomically with its close (a cancel that
        raced the posting is never followed by `posted` in the audit); the copies are kept
        either way, so they can be updated. One transaction. `held`: the request as the
        caller holds it; a store may skip reading the row when it is still that (same
        `updated_at`: every write sets it), and must read it otherwise."""

    @abc.abstractmethod
    async def list_posts(self, request_id: str, channel: str | None = None) -> list[Post]: ...
