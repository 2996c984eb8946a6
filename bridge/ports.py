"""The three ports through which the core talks to every edge: Source, Channel, Store.

Adapters implement these; the core imports no adapter code. An adapter is built by a
factory registered by name (see `bridge.registry`) from its section of the config.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from bridge.health import Health
from bridge.models import Answer, Request, RequestIn, Responder

if TYPE_CHECKING:
    from starlette.routing import BaseRoute

    from bridge.batches import Batch, BatchResult
    from bridge.delegation import Delegation
    from bridge.policy import GrantChoice, GrantOffer
    from bridge.store.base import Store
    from bridge.store.concerns.grants import Grant


class DeliveryError(Exception):
    """Write-back failed; the outbox retries with backoff. `permanent` stops the retries."""

    def __init__(self, message: str, *, permanent: bool = False) -> None:
        super().__init__(message)
        self.permanent = permanent


@dataclass(frozen=True)
class Outcome:
    """What a source writes back: the final state and, when there is one, the answer.

    `answer.values` holds secrets in clear here (decrypted for delivery only).
    """

    request: Request
    state: str  # "answered" | "expired" | "cancelled"
    answer: Answer | None = None
    #: the signed receipt of this outcome (a compact JWS, `bridge.audit.receipts`): a source
    #: writes it back where its engine keeps metadata
    receipt: str | None = None


class RequestSink(Protocol):
    """What a source feeds: the bridge core."""

    #: where a source or channel reports its state (`/readyz`, `doctor`, `/metrics` read it)
    health: Health

    async def submit(
        self,
        request: RequestIn,
        *,
        source: str,
        source_ref: dict[str, Any] | None = None,
        format: str = "native",
        created_by: str | None = None,
    ) -> tuple[Request, bool]:
        """Store (or find, by `external_id`) a request; True when it was new. `created_by` is
        the verified handle of the caller that submitted it (an API token: `api:<name>`)."""
        ...

    async def withdraw(self, source: str, external_id: str, reason: str, *,
                       created_by: str | None = None) -> Request | None:
        """The engine no longer waits (answered elsewhere, run deleted): cancel if open.
        `created_by`: the caller the request was submitted for (its `external_id` is theirs)."""
        ...

    async def wait(self, request_id: str, timeout_s: float) -> Request | None:
        """The request once it is closed (answered, expired, cancelled), or as it is after
        `timeout_s` seconds (still open), or as it is when the daemon stops; None when there
        is no such request. Event-driven on the change feed that serves the API's long polls
        (`GET /v1/requests/{id}?wait=`), so it also wakes on answers other processes commit
        to a shared store. What a source that holds a caller (an MCP tool call, a gateway)
        awaits instead of asking the HTTP API again."""
        ...


class BridgeAPI(RequestSink, Protocol):
    """What a channel calls when a person acts."""

    store: Store

    async def answer(
        self,
        request_id: str,
        responder: Responder,
        values: dict[str, Any],
        *,
        via: str,
        reason: str | None = None,
        grant: GrantChoice | None = None,
    ) -> Request:
        """Record an answer. Raises bridge.errors.* (NotFound, AlreadyClosed, NotAllowed,
        InvalidAnswer) with messages fit to show the person. `grant`: the standing approval
        the person chose with an approving answer (bridge.policy.grant_offers)."""
        ...

    async def cancel(self, request_id: str, *, actor: str, reason: str = "") -> Request: ...

    async def get(self, request_id: str) -> Request | None: ...

    async def is_allowed(self, request: Request, responder: Responder, *, via: str) -> bool:
        """True when `responder` may answer `request`: its responders list is empty, names
        them (`slack:U123`, `telegram:42`), or names a group a channel resolves
        (`ResolvesGroups.is_member`). Answers through `api`, `cli`, `web`, `timeout` are
        trusted (`bridge.answering.Actor`)."""
        ...

    async def note(self, request_id: str, kind: str, actor: str, data: dict[str, Any]) -> None:
        """Append an audit event (refusals, post failures, ...)."""
        ...

    async def waiting_for(self, responder: Responder, *, channel: str, here: Sequence[str] = (),
                          named: bool = True) -> list[Request]:
        """What waits for `responder` on `channel`, the most urgent first: the open requests
        with a copy on `channel` that was posted to one of `here`, or (when `named`) whose
        `responders` let them answer. A few store reads, never one per request."""
        ...

    def grant_offers(self, request: Request) -> list[GrantOffer]:
        """The standing approvals to offer next to Approve for `request` (may be empty)."""
        ...

    async def batches_waiting(self, responder: Responder, *, channel: str,
                              here: Sequence[str] = ()) -> list[Batch]:
        """The alike requests waiting for `responder` on `channel`, grouped (bridge.batches)."""
        ...

    async def answer_batch(self, ids: Sequence[str], responder: Responder, *, via: str,
                           values: dict[str, Any] | None = None, value: Any = None,
                           reason: str | None = None) -> BatchResult:
        """Answer each of `ids` through the ordinary answer path: a result per item."""
        ...

    def person_acting(self, responder: Responder) -> str:
        """The person of people: a verified handle belongs to (DelegationRefused otherwise)."""
        ...

    async def away(self, person: str, delegate: str, until: datetime, *, starts: datetime | None = None,
                   by: str = "") -> Delegation:
        """`person` (a name or handle) away until `until`, `delegate` standing in (bridge.delegation)."""
        ...

    async def back(self, person: str) -> bool:
        """End `person`'s delegation window now."""
        ...

    async def list_grants(self, *, active_only: bool = True) -> list[Grant]:
        """Standing approvals, newest first (`active_only`: those in force now)."""
        ...

    async def get_grant(self, grant_id: str) -> Grant:
        """One standing approval (bridge.errors.GrantNotFound)."""
        ...

    async def revoke_grant(self, grant_id: str, *, actor: str) -> Grant:
        """Revoke it as `actor` (a verified identity): it decides nothing more, on any replica."""
        ...

    async def post(self, request: Request, targets: Sequence[str]) -> list[PostResult]:
        """Show an open request (again) on `targets`; every copy is recorded and kept up to
        date like the first ones (a channel's "show it again" command)."""
        ...


@runtime_checkable
class Source(Protocol):
    """Finds or receives requests from one kind of engine, and writes the answer back."""

    name: str

    async def run(self, sink: RequestSink) -> None:
        """Feed requests to `sink` until cancelled. Sources that only receive over HTTP
        may return at once."""
        ...

    async def deliver(self, outcome: Outcome) -> None:
        """Write the outcome back to the engine. Raise DeliveryError to retry later."""
        ...

    def http_routes(self, sink: RequestSink) -> Sequence[BaseRoute]:
        """Routes mounted in the bridge's HTTP app (may be empty). Built once, before `run()`
        and before the app serves anything, with the same `sink` that `run()` gets: routes
        feed it (and wait on it) directly, so they work as soon as the port answers and
        never reach for the core through the app's state."""
        ...


@dataclass
class PostResult:
    """What a channel reports for one target: its message reference, or why it failed."""

    target: str
    ref: dict[str, Any] = field(default_factory=dict)
    ok: bool = True
    error: str | None = None


@runtime_checkable
class Channel(Protocol):
    """Shows requests to people and reports what they did through `BridgeAPI.answer`."""

    name: str
    prefixes: tuple[str, ...]  # target prefixes it owns, e.g. ("slack:",) or ("web",)

    async def start(self, bridge: BridgeAPI) -> None: ...

    async def stop(self) -> None: ...

    async def post(self, request: Request, targets: Sequence[str]) -> list[PostResult]:
        """Show `request` on each target. Never raises for one bad target: report it."""
        ...

    async def update(self, request: Request) -> None:
        """Bring every copy of `request` up to date (answered, expired, escalated, votes). A
        channel whose copies are always read fresh (the web inbox) may set the class attribute
        `updates_copies = False`: the core then neither calls this nor reads the request's posts."""
        ...

    async def remind(self, request: Request, targets: Sequence[str]) -> None:
        """Nudge the people on `targets` about an open request."""
        ...

    def http_routes(self) -> Sequence[BaseRoute]: ...

    def owns(self, target: str) -> bool: ...


@runtime_checkable
class PostsInStore(Protocol):
    """A channel whose copy of a request is nothing but the record the store keeps (the web
    inbox reads the store): posting sends nothing, so a new request's copies are stored in
    the request's own transaction (`BridgeService.submit`) instead of in a posting after it."""

    def copies_in_store(self, request: Request, targets: Sequence[str]) -> list[PostResult]:
        """The copies `post` would report for `targets`, with no I/O."""
        ...


@runtime_checkable
class ResolvesGroups(Protocol):
    """A channel that can tell who belongs to a group entry of `responders` (optional)."""

    async def is_member(self, entry: str, responder: Responder) -> bool:
        """`responder` belongs to `entry`, a group handle of the channel (a user group, a chat)."""
        ...


class Clock(Protocol):
    def now(self) -> datetime: ...


def source_trouble(source: object) -> tuple[str, str] | None:
    """(summary, fix) while a source is degraded as a whole (a Delta root that does not exist,
    workspaces that do not answer), for sources that say so with a `trouble` property; the
    health probe of `source:<name>` reports it, so /readyz, /metrics and doctor agree."""
    found = getattr(source, "trouble", None)
    if isinstance(found, tuple) and len(found) == 2:
        return str(found[0]), str(found[1])
    return None


def source_problems(source: object) -> dict[str, str]:
    """What keeps a source from showing some of its engine's requests right now (where →
    why), for sources that report it with a `problems` mapping (Delta mailboxes that
    cannot be read, engine listings that fail, engine items that cannot be shown)."""
    found = getattr(source, "problems", None)
    return {str(k): str(v) for k, v in found.items()} if isinstance(found, Mapping) else {}
