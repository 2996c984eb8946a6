"""`POST /v1/requests:watch`: many waits on one connection, as server-sent events.

A client waiting on several requests (an agent with parallel tool calls, the MCP server,
`wait_many` in the clients) opens one stream for all of them instead of one long poll each.
The body names the requests (`{"ids": [...], "wait": seconds}`); the stream answers

- `closed`: a request is no longer open; the data is what `GET /v1/requests/{id}` answers.
  Sent at once for those already closed when the stream starts, so a client that reopens
  its stream (a dropped connection, a daemon restart) with the ids still open loses nothing.
- `missing`: an id that is no request, or not one the token may wait on (the same words for
  both, as a long poll's 404 and 403 would tell a stranger which ids exist).
- `end`: every id is closed, the wait ran out, or the daemon is shutting down; the data
  names the ids still open (`open`) and why (`reason`: done, timeout, shutdown).
- a comment (`: keep-alive`) every KEEPALIVE_S, so proxies and clients see a live stream.

The response starts once every id is registered on the change feed: a client moving its
waits to a new stream may close the old one as soon as the new one's response has begun.

What a waiting request costs: one entry in the stream's set of open ids and one in the
change feed's routing table (`ChangeFeed.watch`), never a task or a future of its own; the
stream's one task sleeps until the feed tells it of a change (here, another process on the
SQLite file, or another replica through PostgreSQL: the store's follower, after a gap too).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, Field, StringConstraints, ValidationError
from starlette.responses import JSONResponse, Response
from starlette.types import Message, Receive, Scope, Send

from bridge.http import api
from bridge.http.auth import may_manage, may_manage_any, require_api_token
from bridge.http.body_limit import too_large_body
from bridge.models import Request as BridgeRequest
from bridge.service import BridgeService
from bridge.store.base import StoreError

log = logging.getLogger("hitl_bridge.http")

router = APIRouter(prefix="/v1", dependencies=[Depends(require_api_token)], tags=["requests"])

PATH = "/v1/requests:watch"
MAX_IDS = 10_000
MAX_ID_CHARS = 64  # the bridge's ids have 19 characters
MAX_BODY_BYTES = MAX_IDS * (MAX_ID_CHARS + 4) + 4096  # also within http.max_body_bytes
DEFAULT_WAIT_S = 300.0
MAX_WAIT_S = 3600.0
KEEPALIVE_S = 15.0
REPORT_BATCH = 50  # events sent in one write: thousands closed already never sit in memory at once
MEDIA_TYPE = "text/event-stream"
OWN_LIMIT = f"a watch body's own limit: {MAX_IDS:,} ids"

RequestId = Annotated[str, StringConstraints(min_length=1, max_length=MAX_ID_CHARS)]


class WatchBody(BaseModel):
    """The requests to wait on, and for how long."""

    ids: list[RequestId] = Field(min_length=1, max_length=MAX_IDS, description=(
        f"request ids (at most {MAX_IDS:,}, each at most {MAX_ID_CHARS} characters; a repeated id counts once)"))
    wait: float = Field(default=DEFAULT_WAIT_S, gt=0, le=MAX_WAIT_S, description=(
        "seconds to wait at most; then `end` names the ids still open (open a new stream with them)"))


class Watch:
    """One stream's waits: the ids still open, and the changes the feed told of since its task
    last looked (`ChangeFeed.watch` calls `changed`; the task reads them in `take`)."""

    def __init__(self, service: BridgeService, ids: list[str]) -> None:
        self.service = service
        self.open: set[str] = set(ids)
        self._changed: dict[str, BridgeRequest | None] = {}
        self.wake = asyncio.Event()
        self.shutting_down = False
        self.gone = False  # the client disconnected

    def changed(self, request_id: str, request: BridgeRequest | None) -> None:
        if request_id in self.open and (request is None or not request.is_open):
            self._changed[request_id] = request
            self.wake.set()

    def released(self) -> None:
        self.shutting_down = True
        self.wake.set()

    def register(self) -> None:
        for request_id in self.open:
            self.service.changes.watch(request_id, self)

    def drop(self, request_id: str) -> None:
        """`request_id` is reported: no longer waited on."""
        self.open.discard(request_id)
        self._changed.pop(request_id, None)
        self.service.changes.unwatch(request_id, self)

    def unregister(self) -> None:
        for request_id in self.open:
            self.service.changes.unwatch(request_id, self)
        self._changed.clear()

    def take(self) -> dict[str, BridgeRequest | None]:
        changed, self._changed = self._changed, {}
        self.wake.clear()
        return changed


def event(kind: str, data: Any) -> bytes:
    return f"event: {kind}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def missing(request_id: str) -> bytes:
    return event("missing", {"id": request_id, "detail": f"no request {request_id!r}"})


class TooLarge(Exception):
    """Over MAX_BODY_BYTES (the daemon's http.max_body_bytes may allow more)."""


def too_large_watch() -> JSONResponse:
    return JSONResponse(too_large_body(MAX_BODY_BYTES, OWN_LIMIT), status_code=413)


async def watch_body(request: Request) -> WatchBody:
    """The body, read here (a cap of its own, before any JSON is parsed) and checked."""
    length = request.headers.get("content-length", "").strip()
    if length.isdigit() and int(length) > MAX_BODY_BYTES:
        raise TooLarge
    raw = bytearray()
    async for chunk in request.stream():
        raw += chunk
        if len(raw) > MAX_BODY_BYTES:
            raise TooLarge
    try:
        parsed = json.loads(raw)
    except (ValueError, RecursionError):
        raise RequestValidationError([{"type": "json_invalid", "loc": ("body",),
                                       "msg": "the body is not valid JSON (UTF-8)"}]) from None
    try:
        return WatchBody.model_validate(parsed)
    except ValidationError as exc:
        raise RequestValidationError([{**e, "loc": ("body", *e["loc"])} for e in exc.errors()[:20]]) from None


async def first_look(request: Request, watch: Watch) -> list[bytes]:
    """After registering: the `missing` events due at once (unknown or forbidden ids, dropped).
    The ids closed already are handed to the stream as changes: it reports them as it starts,
    a few at a time. Any caller may wait on every request (an open bridge, a token with
    act_for_others): one query per 500 ids finds the closed ones; else each is read."""
    service = watch.service
    settings = request.app.state.settings
    header = request.headers.get("authorization")
    if may_manage_any(settings, header):
        for request_id in await service.store.closed_among(sorted(watch.open)):
            watch.changed(request_id, None)  # closed, or gone (reported missing)
        return []
    out: list[bytes] = []
    for request_id in sorted(watch.open):
        found = await service.get(request_id)
        if found is None or not may_manage(settings, header, found):
            out.append(missing(request_id))
            watch.drop(request_id)
        elif not found.is_open:
            watch.changed(request_id, None)
    return out


@router.post(PATH.removeprefix("/v1"), response_class=Response, responses={200: {
    "description": "server-sent events: `closed` (data: the request as `GET /v1/requests/{id}` shows it), "
                   "`missing` (data: `{id, detail}`), `end` (data: `{open: [ids], reason: done|timeout|"
                   f"shutdown}}`), and a `: keep-alive` comment every {KEEPALIVE_S:.0f} s",
    "content": {MEDIA_TYPE: {"schema": {"type": "string"}}}}},
    openapi_extra={"requestBody": {"required": True, "content": {
        "application/json": {"schema": WatchBody.model_json_schema()}}}})
async def watch_requests(request: Request) -> Response:
    """Wait on many requests over one connection: one `closed` event per request as it
    closes (at once for those closed already), `missing` for an id that is no request the
    token may wait on, `end` when all are closed or `wait` ran out. Same token rules as a
    long poll (`GET /v1/requests/{id}?wait=`)."""
    try:
        body = await watch_body(request)
    except TooLarge:
        return too_large_watch()
    service = api.service_of(request)
    watch = Watch(service, list(dict.fromkeys(body.ids)))
    watch.register()  # before the first look: a close in between is not missed
    try:
        first = await first_look(request, watch)
    except BaseException:
        watch.unregister()
        raise
    return WatchStream(watch, first, body.wait)


class WatchStream(Response):
    """The event stream of one `Watch`; its registrations are freed however it ends."""

    media_type = MEDIA_TYPE

    def __init__(self, watch: Watch, first: list[bytes], wait_s: float) -> None:
        self.status_code = 200
        self.background = None
        self.raw_headers = [(b"content-type", b"text/event-stream; charset=utf-8"), (b"cache-control", b"no-store"),
                            (b"x-accel-buffering", b"no")]  # no content-length: the body is a stream
        self.watch = watch
        self.first = first
        self.wait_s = wait_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        watch = self.watch
        listener = asyncio.ensure_future(self._until_gone(receive))
        try:
            await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
            await self._stream(send)
        except OSError:  # the client went away while we sent (uvicorn's ClientDisconnected)
            pass
        finally:
            listener.cancel()
            watch.unregister()

    async def _until_gone(self, receive: Receive) -> None:
        while True:
            message: Message = await receive()
            if message["type"] == "http.disconnect":
                self.watch.gone = True
                self.watch.wake.set()
                return

    async def _stream(self, send: Send) -> None:
        watch = self.watch
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.wait_s
        if self.first:
            await send({"type": "http.response.body", "body": b"".join(self.first), "more_body": True})
        self.first = []
        reason = "done"
        while watch.open:
            if watch.gone:
                return
            if watch.shutting_down or self._released():
                reason = "shutdown"
                break
            left = deadline - loop.time()
            if left <= 0:
                reason = "timeout"
                break
            if not watch.wake.is_set():
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(min(left, KEEPALIVE_S)):
                        await watch.wake.wait()
            if not watch.wake.is_set():
                if loop.time() < deadline:
                    await send({"type": "http.response.body", "body": b": keep-alive\n\n", "more_body": True})
                continue
            await self._report(watch.take(), send)
        if watch.gone:
            return
        tail = event("end", {"open": sorted(watch.open), "reason": reason})
        await send({"type": "http.response.body", "body": tail, "more_body": False})

    def _released(self) -> bool:
        return self.watch.service.changes.released

    async def _report(self, changed: dict[str, BridgeRequest | None], send: Send) -> None:
        """Send the events of the requests that changed, REPORT_BATCH at a time: `closed` for
        each no longer open (read again when changed elsewhere), `missing` when one is gone."""
        watch = self.watch
        out: list[bytes] = []
        for request_id, request in changed.items():
            if watch.gone:
                return
            if request_id not in watch.open:
                continue
            try:
                found = request if request is not None else await watch.service.get(request_id)
                if found is not None and found.is_open:
                    continue
                out.append(missing(request_id) if found is None else
                           event("closed", await api.request_detail(watch.service, found)))
            except StoreError as exc:  # the store says so (log, /readyz); read it again soon
                log.warning("watch: reading request %s failed (%s); trying again", request_id, exc)
                watch.changed(request_id, None)
                await asyncio.sleep(1.0)
                continue
            watch.drop(request_id)
            if len(out) >= REPORT_BATCH:
                await send({"type": "http.response.body", "body": b"".join(out), "more_body": True})
                out = []
        if out:
            await send({"type": "http.response.body", "body": b"".join(out), "more_body": True})
