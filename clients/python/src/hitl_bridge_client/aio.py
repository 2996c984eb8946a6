"""The asyncio client: the same calls as `Client`, awaited."""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from typing import Any, TypeVar, cast

import httpx

from hitl_bridge_client import calls
from hitl_bridge_client.answers import Answer, Questions, Views, approval_body, approved, asked
from hitl_bridge_client.calls import Flow
from hitl_bridge_client.transport import CREATE_GIVE_UP_S, Endpoint, Restarting, Retry, result
from hitl_bridge_client.watching import PATH, READ_TIMEOUT_S, STREAM_WAIT_S, Events, Outcome, Waits

EventStream = AsyncIterator[tuple[str, Any]]

T = TypeVar("T")
AsyncFn = Callable[..., Awaitable[Any]]


class AsyncClient:
    """`Client` for asyncio code (see its methods); `require_approval` decorates `async def`
    functions. Its connections belong to the event loop that made them: used from a new
    loop (another `asyncio.run`), it opens new ones."""

    def __init__(self, base_url: str | None = None, *, token: str | None = None,
                 unavailable_after: float = 300.0, http: httpx.AsyncClient | None = None,
                 create_unavailable_after: float = CREATE_GIVE_UP_S) -> None:
        self.endpoint = Endpoint.resolve(base_url, token, unavailable_after, create_unavailable_after)
        self.base_url = self.endpoint.base_url
        self._http = http
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop of the pool made here (None: given)

    async def ask(self, title: str, questions: Questions | None = None, *, max_wait: float | None = None,
                  **fields: Any) -> Answer:
        return await self._run(calls.ask(asked(title, questions, fields), max_wait))

    def require_approval(self, title: str | None = None, **fields: Any) -> Callable[[AsyncFn], AsyncFn]:
        def decorate(fn: AsyncFn) -> AsyncFn:
            @functools.wraps(fn)
            async def guarded(*args: Any, **kwargs: Any) -> Any:
                approved(await self._run(calls.ask(approval_body(fn, args, kwargs, title, dict(fields)))))
                return await fn(*args, **kwargs)
            return guarded
        return decorate

    async def create(self, body: dict[str, Any]) -> str:
        return await self._run(calls.create(body))

    async def wait(self, request_id: str, max_wait: float | None = None) -> Answer:
        return await self._run(calls.wait(request_id, max_wait))

    async def wait_many(self, ids: Iterable[str], max_wait: float | None = None) -> AsyncIterator[Outcome]:
        """`Client.wait_many`, as an async iterator."""
        waits = Waits(ids, max_wait)
        retry: Retry | None = None
        while waits.open:
            body = waits.body()
            if body is None:
                for ran_out in waits.ran_out():
                    yield ran_out
                return
            try:
                async with self.watch(body["ids"], wait=body["wait"]) as events:
                    retry = None
                    async for kind, data in events:
                        for item in waits.event(kind, data):
                            yield item
                if not waits.ended and waits.open:
                    raise Restarting("the watch stream was cut")
            except httpx.TransportError as exc:  # the daemon restarting: open the stream again
                retry = retry or Retry(self.endpoint, calls.Call("POST", PATH))
                await asyncio.sleep(retry.delay(exc))

    @contextlib.asynccontextmanager
    async def watch(self, ids: Iterable[str], *, wait: float = STREAM_WAIT_S) -> AsyncIterator[EventStream]:
        """One watch stream (`POST /v1/requests:watch`), entered once every id is registered
        with the daemon: its events as (kind, data), keep-alives skipped. It is not reopened
        when it drops (an httpx.TransportError): `wait_many` does that."""
        async with self._client().stream(
                "POST", self.base_url + PATH, json={"ids": list(ids), "wait": wait}, headers=self.endpoint.headers,
                timeout=httpx.Timeout(calls.CALL_TIMEOUT_S, read=READ_TIMEOUT_S)) as response:
            if response.status_code != 200:
                await response.aread()
                result(response)  # raises: a refusal, or Restarting (a proxy's 502-504)
            yield stream_events(response)

    async def get(self, request_id: str, *, wait: float = 0) -> dict[str, Any]:
        return await self._run(calls.get(request_id, wait))

    async def receipt(self, request_id: str) -> str:
        return await self._run(calls.receipt(request_id))

    async def list(self, state: str | list[str] | None = None, *, source: str | None = None,
                   route: str | None = None, limit: int = 100, offset: int = 0) -> Views:
        return await self._run(calls.list_requests(state, source=source, route=route, limit=limit, offset=offset))

    async def answer(self, request_id: str, value: Any = None, *, values: dict[str, Any] | None = None,
                     responder: str | None = None, reason: str | None = None,
                     grant: str | dict[str, Any] | None = None) -> dict[str, Any]:
        return await self._run(calls.answer(request_id, value, values=values, responder=responder, reason=reason,
                                            grant=grant))

    async def answer_batch(self, ids: Sequence[str], value: Any = None, *, values: dict[str, Any] | None = None,
                           responder: str | None = None, reason: str | None = None) -> dict[str, Any]:
        """The same answer to each of `ids`; a result per item (answered, voted, refused)."""
        return await self._run(calls.answer_batch(ids, value, values=values, responder=responder, reason=reason))

    async def batches(self, *, source: str | None = None, route: str | None = None) -> Views:
        """The open yes/no requests that look alike, grouped: `{key, label, ids, titles}` each."""
        return await self._run(calls.batches(source, route))

    async def away(self, delegate: str, until: str, *, starts: str | None = None,
                   person: str | None = None) -> dict[str, Any]:
        """Away until `until` (ISO 8601 with an offset), `delegate` standing in."""
        return await self._run(calls.away(delegate, until, starts=starts, person=person))

    async def away_list(self) -> Views:
        return await self._run(calls.away_list())

    async def back(self, person: str | None = None) -> dict[str, Any]:
        return await self._run(calls.back(person))

    async def cancel(self, request_id: str, reason: str = "", *, actor: str | None = None) -> dict[str, Any]:
        return await self._run(calls.cancel(request_id, reason, actor=actor))

    async def redeliver(self, request_id: str) -> dict[str, Any]:
        return await self._run(calls.redeliver(request_id))

    async def events(self, request_id: str) -> Views:
        return await self._run(calls.events(request_id))

    async def grants(self, *, all: bool = False) -> Views:
        """The standing approvals in force (`all`: also the revoked and expired ones)."""
        return await self._run(calls.grants(all=all))

    async def grant(self, grant_id: str) -> dict[str, Any]:
        return await self._run(calls.grant(grant_id))

    async def revoke_grant(self, grant_id: str) -> dict[str, Any]:
        """Revoke a standing approval: the next call it would have allowed is asked again."""
        return await self._run(calls.revoke_grant(grant_id))

    async def sources(self) -> Views:
        return await self._run(calls.sources())

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def _client(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        if self._http is None or (self._loop is not None and self._loop is not loop):
            self._http, self._loop = httpx.AsyncClient(), loop  # a dead loop's pool cannot be closed
        return self._http

    async def _run(self, flow: Flow[T]) -> T:
        reply: Any = None
        try:
            while True:
                reply = await self._send(flow.send(reply))
        except StopIteration as done:
            return cast(T, done.value)

    async def _send(self, call: calls.Call) -> Any:
        retry = Retry(self.endpoint, call)
        while True:
            try:
                return result(await self._client().request(
                    call.method, self.base_url + call.path, params=call.params, json=call.json,
                    headers=self.endpoint.headers, timeout=call.timeout))
            except httpx.TransportError as exc:  # the daemon restarting: wait, then again
                await asyncio.sleep(retry.delay(exc))


async def stream_events(response: httpx.Response) -> EventStream:
    """The events of a watch stream's response, as (kind, data)."""
    events = Events()
    async for line in response.aiter_lines():
        found = events.line(line)
        if found is not None:
            yield found
