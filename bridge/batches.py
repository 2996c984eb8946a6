"""Batches: open requests waiting for the same person that look alike, answered with one
action ("approve all 20", "all but 3 and 5").

Alike means the same route, the same questions (ids and kinds: one answer fits them all),
and the same *batch key*: the route's `batch_key` fields, else the source and the tool, or
(no tool) the title with its numbers and quoted parts left out ("Delete file '{}'"). A batch
is only offered; deciding it answers each item through the ordinary answer path
(`BridgeService.answer`, bridge.answering), so quorum, four-eyes, responders and secrets
apply to each item on its own. Each item is recorded with the shared batch id and gets its
own result: answered, a vote counted, or refused with the reason.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from bridge.config_routes import Route
from bridge.errors import BridgeError
from bridge.models import Request, Responder
from bridge.router import request_value

#: the most items one batch answers (a larger one is refused whole: split it)
MAX_BATCH = 200
#: the fewest alike requests offered as a batch
MIN_BATCH = 2
_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"|`[^`]*`|“[^”]*”")
_HEX = re.compile(r"\b[0-9a-f]{7,64}\b", re.I)


class BatchTooLarge(BridgeError):
    """More items than MAX_BATCH (or none at all)."""

    status = 413

    def __init__(self, count: int) -> None:
        super().__init__(f"a batch answers 1 to {MAX_BATCH} requests; this one names {count}: "
                         "split it, or narrow the filter")


def title_template(title: str) -> str:
    """`title` with what varies between alike requests left out: quoted parts, hashes, numbers."""
    text = _QUOTED.sub("'{}'", title)
    text = _HEX.sub("{}", text)
    return _NUMBER.sub("#", text).strip()


def batch_key(request: Request, route: Route) -> str | None:
    """What alike requests share (None: this route never batches)."""
    shape = ",".join(f"{q.id}:{q.kind.value}" for q in request.questions)
    if route.batch_key is not None:
        if not route.batch_key:
            return None
        parts = [f"{k}={request_value(request, k) or ''}" for k in route.batch_key]
    elif request.tool:
        parts = [f"source={request.source}", f"tool={request.tool}"]
    else:
        parts = [f"source={request.source}", f"title={title_template(request.title)}"]
    return "|".join([f"route={request.route}", *parts, f"questions={shape}"])


@dataclass
class Batch:
    """Alike open requests, the most urgent first; `label` says what they share."""

    key: str
    label: str
    requests: list[Request] = field(default_factory=list)

    @property
    def ids(self) -> list[str]:
        return [r.id for r in self.requests]


def batches(requests: Sequence[Request], route_of: Any, *, least: int = MIN_BATCH) -> list[Batch]:
    """The batches among `requests` (in their order) of at least `least` alike ones, the
    largest first; `route_of(request)` is the route it is judged by."""
    found: dict[str, Batch] = {}
    for request in requests:
        key = batch_key(request, route_of(request))
        if key is None:
            continue
        label = request.tool or title_template(request.title)
        found.setdefault(key, Batch(key, label)).requests.append(request)
    return sorted((b for b in found.values() if len(b.requests) >= least), key=lambda b: -len(b.requests))


def approvable(batch: Batch) -> bool:
    """Every item asks one yes/no question: "Approve all" can answer them (other batches
    are answered with values, e.g. `hitl-bridge answer --all --values`)."""
    from bridge.questions import QuestionKind

    return all(len(r.questions) == 1 and r.questions[0].kind is QuestionKind.confirm for r in batch.requests)


@dataclass(frozen=True)
class ItemResult:
    """What became of one item: `outcome` is `answered`, `voted` (counted, still open) or
    `refused` (`reason` says why, `status` as the API would answer it)."""

    request_id: str
    outcome: str
    reason: str | None = None
    status: int = 200
    state: str | None = None

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.request_id, "outcome": self.outcome}
        if self.state:
            out["state"] = self.state
        if self.reason:
            out["reason"] = self.reason
            out["status"] = self.status
        return out


@dataclass(frozen=True)
class BatchResult:
    batch: str
    items: list[ItemResult]

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for item in self.items:
            out[item.outcome] = out.get(item.outcome, 0) + 1
        return out

    def as_json(self) -> dict[str, Any]:
        return {"batch": self.batch, "counts": self.counts(), "results": [i.as_json() for i in self.items]}


class Answers(Protocol):
    """What a batch needs of the bridge: the ordinary answer path."""

    async def answer(self, request_id: str, responder: Responder, values: dict[str, Any], *, via: str,
                     reason: str | None = None, batch: str | None = None) -> Request: ...

    async def get(self, request_id: str) -> Request | None: ...


def new_batch_id() -> str:
    return "b_" + secrets.token_hex(8)


async def answer_batch(bridge: Answers, ids: Sequence[str], responder: Responder, *, via: str,
                       values: dict[str, Any] | None = None, value: Any = None,
                       reason: str | None = None) -> BatchResult:
    """Answer each of `ids` (in order, each once) through the ordinary answer path with the
    same `values` (or `value` for each item's one question): one result per item, none
    left out; BatchTooLarge for more than MAX_BATCH."""
    unique = list(dict.fromkeys(str(i) for i in ids))
    if not unique or len(unique) > MAX_BATCH:
        raise BatchTooLarge(len(unique))
    batch = new_batch_id()
    results: list[ItemResult] = []
    for request_id in unique:
        results.append(await _answer_one(bridge, request_id, responder, via, values, value, reason, batch))
    return BatchResult(batch, results)


async def _answer_one(bridge: Answers, request_id: str, responder: Responder, via: str,
                      values: dict[str, Any] | None, value: Any, reason: str | None, batch: str) -> ItemResult:
    try:
        if values is None:
            request = await bridge.get(request_id)
            if request is None:
                return ItemResult(request_id, "refused", f"no request {request_id!r}", 404)
            if len(request.questions) != 1:
                return ItemResult(request_id, "refused", "this request has several questions: send values "
                                  "keyed by question id", 422)
            item_values = {request.questions[0].id: value}
        else:
            item_values = dict(values)
        updated = await bridge.answer(request_id, responder, item_values, via=via, reason=reason, batch=batch)
    except BridgeError as exc:
        return ItemResult(request_id, "refused", str(exc), exc.status)
    return ItemResult(request_id, "voted" if updated.is_open else "answered", state=updated.state.value)
