"""What the answer path uses of the bridge (`BridgeService` provides it), and one answer
attempt as it goes through the checks."""

from __future__ import annotations

from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any, NoReturn, Protocol

from bridge.answering.actor import Actor
from bridge.crypto import SecretBox
from bridge.errors import BridgeError
from bridge.lifecycle import Lifecycle
from bridge.models import Request
from bridge.notify import ChangeFeed
from bridge.people import People
from bridge.ports import Channel, Clock
from bridge.reach import Reach
from bridge.rules import Judged
from bridge.store.base import Store


class Desk(Protocol):
    """The bridge as the answer path sees it."""

    store: Store
    people: People
    secrets: SecretBox
    clock: Clock
    lifecycle: Lifecycle
    changes: ChangeFeed
    reach: Reach

    def channel_for(self, target: str) -> Channel | None: ...

    def judged(self, request: Request) -> Judged: ...

    async def note(self, request_id: str, kind: str, actor: str, data: dict[str, Any]) -> None: ...

    def background(self, coro: Coroutine[Any, Any, Any], what: str) -> None: ...

    async def update_channels(self, request: Request) -> None: ...

    def after_close(self, request: Request) -> None: ...


@dataclass
class Attempt:
    """One answer on its way: `values` as given, `clean` once they fit the questions."""

    request: Request
    actor: Actor
    values: dict[str, Any]
    rules: Judged
    reason: str | None = None
    clean: dict[str, Any] = field(default_factory=dict)
    #: the batch this answer is one item of (bridge.batches), recorded with it
    batch: str | None = None


async def refuse(desk: Desk, attempt: Attempt, why: str, error: BridgeError, **data: Any) -> NoReturn:
    """Put the refusal on the request's record (who, through what, why), then raise `error`."""
    responder = attempt.actor.responder
    await desk.note(attempt.request.id, "refused", responder.key,
                    {"name": responder.name, "via": attempt.actor.via, "reason": why, **data,
                     **({"batch": attempt.batch} if attempt.batch else {})})
    raise error
