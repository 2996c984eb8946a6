"""The Teal Agents source: paused replies arrive on the HTTP intake, decisions go back.

`POST /v1/sources/{name}/pauses` takes `{agent, version, reply, authorization?}` where
`reply` is what the agent service answered (a `StateResponse` with status `Paused`, or
the `HitlResponse` itself). The decision is POSTed to
`{base_url}/{agent}/{version}/tealagents/v1alpha1/resume/{request_id}` with the caller's
authorization (kept sealed with `secrets.key`) or the configured one. A resume reply that
is another pause opens a new request. Teal has no read API, so a pause resolved in
Teal's own UI is reported with `POST /v1/sources/{name}/pauses/withdraw`.

Teal answers a resume only once the tools and the rest of the agent's turn have run, so
a resume call may take `resume_timeout` (10 min by default; the outbox gives this source
that long, see `delivery_timeout`). When its reply is lost (timeout, dropped connection)
and `task_url` is set, the task is read to learn what happened (see `task`): a chained
pause is asked as a new request, a turn still running is checked again later, a decision
that did not land is sent again. With `task_url`, every approval first checks the task is
still paused on the calls that were approved.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from datetime import timedelta
from typing import Any, NoReturn
from urllib.parse import quote

import httpx
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError
from starlette.requests import Request as HttpRequest
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route

from adapters.polling import describe
from adapters.teal.mapping import InvalidPause, TealPause, parse_pause, pause_to_request, resume_body, resume_path
from adapters.teal.task import TaskState, judge
from bridge.config import Settings
from bridge.config_daemon import Duration
from bridge.crypto import SecretBox, SecretLost
from bridge.http.auth import token_ok
from bridge.models import OPEN_STATES, Request
from bridge.ports import DeliveryError, Outcome, RequestSink
from bridge.store.base import Store
from bridge.store.query import RequestQuery

log = logging.getLogger("hitl_bridge.teal")
NAME_PATTERN = r"^[A-Za-z0-9_.:-]{1,100}$"
PATH_PART = r"^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,99}$"  # agent name / version: one safe path segment
MAX_REPLY_BYTES = 16 * 1024 * 1024  # a resume reply larger than this is not read to its end


class TealConfig(BaseModel):
    """`sources: - type: teal` (see docs/engines/teal-mastra-agentworld.md)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(default="teal", pattern=NAME_PATTERN)
    base_url: str = Field(pattern=r"^https?://", max_length=2000)  # the service root, without agent/version
    authorization: SecretStr | None = None  # default Authorization header for resume calls
    timeout: Duration = timedelta(seconds=5)  # connecting, sending, reading the task
    resume_timeout: Duration = timedelta(minutes=10)  # a resume returns after the agent's whole turn
    # where to read a task (AgentTask JSON) to settle a resume whose reply was lost; `{task_id}` is replaced
    task_url: str | None = Field(default=None, pattern=r"^(https?://|/).*\{task_id\}", max_length=2000)


class PauseIntake(BaseModel):
    """The body of `POST /v1/sources/{name}/pauses`."""

    model_config = ConfigDict(extra="forbid")

    agent: str = Field(pattern=PATH_PART)
    version: str = Field(pattern=PATH_PART)
    reply: dict[str, Any]
    authorization: SecretStr | None = Field(default=None, max_length=8000)
    title: str | None = Field(default=None, min_length=1, max_length=500)
    labels: dict[str, str] = Field(default_factory=dict)
    responders: list[str] = Field(default_factory=list, max_length=200)


class WithdrawIntake(BaseModel):
    model_config = ConfigDict(extra="forbid")

    task_id: str = Field(min_length=1, max_length=200)
    request_id: str = Field(min_length=1, max_length=200)


class TealSource:
    """Source port for Teal Agents (PROTOCOLS §3)."""

    def __init__(self, config: TealConfig, settings: Settings, store: Store | None = None) -> None:
        self.config = config
        self.name = config.name
        self.settings = settings
        self.store = store
        self.box = SecretBox(settings.secrets.key)
        self.http = httpx.AsyncClient(
            base_url=config.base_url.rstrip("/"), timeout=config.timeout.total_seconds(), follow_redirects=False
        )
        self.sink: RequestSink | None = None  # given with the routes, so the intake works before run()
        # how long the outbox lets one delivery run: the resume call, then reading the task
        self.delivery_timeout = config.resume_timeout + 3 * config.timeout
        self.ambiguous: set[str] = set()  # rejects that got no clear reply (safe to send again)
        self.unsettled: set[str] = set()  # approves sent without a reply yet (never sent twice)

    async def run(self, sink: RequestSink) -> None:
        """Teal pushes to us (the intake route); nothing to poll."""
        self.sink = sink

    def _sink(self) -> RequestSink:
        if self.sink is None:
            raise DeliveryError("the Teal source has no sink yet (its routes were not built)")
        return self.sink

    async def close(self) -> None:
        await self.http.aclose()

    def http_routes(self, sink: RequestSink) -> Sequence[BaseRoute]:
        self.sink = sink
        base = f"/v1/sources/{self.name}/pauses"
        return [
            Route(base, self._intake, methods=["POST"]),
            Route(base + "/withdraw", self._withdraw, methods=["POST"]),
        ]

    # -- intake -------------------------------------------------------------------------
    async def _read(self, request: HttpRequest, model: type[BaseModel]) -> BaseModel | JSONResponse:
        if not token_ok(self.settings, request.headers.get("authorization")):
            return _error(401, "missing or wrong bearer token (Authorization: Bearer <one of http.api_tokens>)")
        try:
            raw = json.loads(await request.body())
        except (ValueError, RecursionError):
            return _error(400, "the body is not valid JSON")
        try:
            return model.model_validate(raw)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"]) or "body"
            return _error(422, f"{where}: {err['msg']}")

    async def _intake(self, request: HttpRequest) -> JSONResponse:
        body = await self._read(request, PauseIntake)
        if isinstance(body, JSONResponse):
            return body
        assert isinstance(body, PauseIntake)
        try:
            pause = parse_pause(body.reply)
        except InvalidPause as exc:
            return _error(422, f"reply: {exc}")
        if pause is None:
            return JSONResponse({"paused": False, "detail": "the reply is not a pause: nothing to ask"})
        ref: dict[str, Any] = {"agent": body.agent, "version": body.version, "seq": 0}
        if body.authorization is not None:
            ref["authorization"] = self.box.seal(body.authorization.get_secret_value())
        try:
            stored, created = await self._submit(
                pause, ref, title=body.title, labels=body.labels, responders=body.responders
            )
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"]) or "body"
            return _error(422, f"{where}: {err['msg']}")
        return JSONResponse(
            {
                "paused": True,
                "id": stored.id,
                "created": created,
                "state": str(stored.state),
                "external_id": stored.external_id,
            },
            status_code=201 if created else 200,
        )

    async def _submit(
        self,
        pause: TealPause,
        ref: dict[str, Any],
        *,
        title: str | None = None,
        labels: dict[str, str] | None = None,
        responders: list[str] | None = None,
    ) -> tuple[Request, bool]:
        sink = self._sink()
        request_in = pause_to_request(pause, agent=f"{ref['agent']}/{ref['version']}", title=title)
        update: dict[str, Any] = {}
        if labels:
            update["labels"] = labels
        if responders:
            update["responders"] = responders
        if update:
            request_in = request_in.model_validate({**request_in.model_dump(), **update})
        ref = {**ref, "task_id": pause.task_id, "request_id": pause.request_id, "session_id": pause.session_id}
        return await sink.submit(request_in, source=self.name, source_ref=ref)

    async def _withdraw(self, request: HttpRequest) -> JSONResponse:
        body = await self._read(request, WithdrawIntake)
        if isinstance(body, JSONResponse):
            return body
        assert isinstance(body, WithdrawIntake) and self.store is not None
        sink = self._sink()
        withdrawn: list[str] = []
        async for batch in self.store.pages(RequestQuery(states=tuple(OPEN_STATES), source=self.name)):
            for req in batch:
                ref = req.source_ref
                if ref.get("task_id") == body.task_id and ref.get("request_id") == body.request_id and req.external_id:
                    done = await sink.withdraw(self.name, req.external_id, "resolved in Teal Agents")
                    if done is not None:
                        withdrawn.append(done.id)
        return JSONResponse({"withdrawn": withdrawn})

    # -- writing back -------------------------------------------------------------------
    def _authorization(self, ref: dict[str, Any]) -> str | None:
        sealed = ref.get("authorization")
        if sealed is not None:
            try:
                return str(self.box.open(sealed))
            except SecretLost:
                if self.config.authorization is None:
                    raise DeliveryError(
                        "the caller's authorization for this Teal task was lost (no secrets.key and "
                        "the daemon restarted); set secrets.key or `authorization` on the source",
                        permanent=True,
                    ) from None
        return self.config.authorization.get_secret_value() if self.config.authorization else None

    async def deliver(self, outcome: Outcome) -> None:
        """POST approve/reject; a reply that is another pause becomes a new request."""
        ref = outcome.request.source_ref
        if not all(isinstance(ref.get(k), str) for k in ("agent", "version", "request_id")):
            raise DeliveryError("the request carries no Teal reference", permanent=True)
        rid = outcome.request.id
        path = f"/{ref['agent']}/{ref['version']}{resume_path(ref['request_id'])}"
        headers = {}
        auth = self._authorization(ref)
        if auth:
            headers["Authorization"] = auth
        body = resume_body(outcome.state, outcome.answer)
        action = body["action"]
        if self.config.task_url is not None:
            state = await self._read_task(outcome, headers)
            if state.kind != "paused_here":  # an earlier attempt (or Teal's own UI) already resumed it
                await self._settle(outcome, state, action, "was resumed before this attempt")
                return
        elif action == "approve" and rid in self.unsettled:
            # the last approve was interrupted (outbox timeout, cancel) before any reply
            self._unclear(rid, "approve", "never confirmed an earlier approval attempt")
        if action == "approve":
            self.unsettled.add(rid)
        try:
            status, raw = await self._post(path, body, headers)
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:  # nothing was sent
            self.unsettled.discard(rid)
            raise DeliveryError(f"Teal unreachable: {describe(exc)}") from None
        except httpx.TimeoutException:
            what = f"did not answer the resume call within {self.config.resume_timeout.total_seconds():g} s"
            return await self._after_unclear(outcome, headers, action, what)
        except httpx.HTTPError as exc:
            return await self._after_unclear(outcome, headers, action, f"broke off the resume call ({describe(exc)})")
        if status >= 500:
            self.unsettled.discard(rid)
            if rid in self.ambiguous:
                # an earlier reject got no clear reply; Teal answers 500 once the task is no longer paused
                self.ambiguous.discard(rid)
                log.info("teal source %s: %s was resumed by an earlier attempt", self.name, rid)
                return
            if self.config.task_url is not None:
                await self._after_error(outcome, headers, action, status)
                return
            raise DeliveryError(
                f"Teal answered HTTP {status} to the resume call "
                "(it gives no detail: wrong owner, task not paused, or a server error)"
            )
        if status >= 400:
            self.unsettled.discard(rid)
            raise DeliveryError(
                f"Teal refused the resume call (HTTP {status})",
                permanent=status not in (408, 429),
            )
        if raw is None:
            what = f"answered the resume call with over {MAX_REPLY_BYTES} bytes"
            return await self._after_unclear(outcome, headers, action, what)
        try:
            pause = parse_pause(json.loads(raw))
        except (ValueError, RecursionError, InvalidPause):
            what = "answered the resume call with something unreadable"
            return await self._after_unclear(outcome, headers, action, what)
        self.unsettled.discard(rid)
        self.ambiguous.discard(rid)
        if pause is not None and action == "approve":
            await self._follow(outcome, pause)

    async def _follow(self, outcome: Outcome, pause: TealPause) -> None:
        """Open a request for the pause that followed an approval (never fails the delivery:
        the approval landed, and Teal would apply a second one to this next pause)."""
        ref = outcome.request.source_ref
        follow = {k: v for k, v in ref.items() if k in ("agent", "version", "authorization")}
        follow["seq"] = int(ref.get("seq", 0)) + 1
        try:
            await self._submit(
                pause, follow, labels=outcome.request.labels or None, responders=outcome.request.responders or None
            )
        except Exception:
            log.exception(
                "teal source %s: could not open a request for the next pause of task %s", self.name, pause.task_id
            )

    async def _after_unclear(self, outcome: Outcome, headers: dict[str, str], action: str, what: str) -> None:
        """The resume call may or may not have landed: read the task to know (with `task_url`)."""
        if self.config.task_url is None:
            self.unsettled.discard(outcome.request.id)
            self._unclear(outcome.request.id, action, what)
        state = await self._read_task(outcome, headers, what)
        if state.kind == "paused_here":
            self.unsettled.discard(outcome.request.id)
            raise DeliveryError(f"Teal {what}; the task is still paused on these calls, so the decision is sent again")
        await self._settle(outcome, state, action, what)

    async def _after_error(self, outcome: Outcome, headers: dict[str, str], action: str, status: int) -> None:
        """Teal answered the resume with an error (it gives no detail): the task tells whether
        the decision was refused (still paused: retried) or taken before the turn failed."""
        what = f"answered HTTP {status} to the resume call"
        state = await self._read_task(outcome, headers, what)
        if state.kind == "paused_here":
            raise DeliveryError(f"Teal {what} and the task is still paused (wrong owner, or a server error)")
        if state.kind == "running" and action == "approve":
            raise DeliveryError(
                f"Teal {what} after taking the approval: the agent's turn failed (a tool or LLM error) and Teal "
                "leaves the task Running, where it cannot be resumed; see Teal's log", permanent=True)
        await self._settle(outcome, state, action, what)

    async def _settle(self, outcome: Outcome, state: TaskState, action: str, what: str) -> None:
        """The task is no longer paused on the calls decided on: return when the decision
        is known to have landed, raise to check again later, or fail with the reason."""
        rid = outcome.request.id
        task = outcome.request.source_ref.get("task_id")
        if state.kind == "running" and action == "approve":
            self.unsettled.add(rid)
            raise DeliveryError(f"Teal {what}; the task is running the approved turn, checking it again")
        self.unsettled.discard(rid)
        self.ambiguous.discard(rid)
        if action == "approve" and state.kind == "paused_next" and state.pause is not None:
            await self._follow(outcome, state.pause)
            return
        if (action, state.kind) in (("approve", "finished"), ("reject", "rejected")):
            return
        if state.kind == "failed":
            raise DeliveryError(f"Teal {what}; Teal marked task {task} Failed", permanent=True)
        raise DeliveryError(
            f"Teal {what}; task {task} went on without this {action} (decided in Teal itself?)", permanent=True
        )

    async def _read_task(self, outcome: Outcome, headers: dict[str, str], what: str = "") -> TaskState:
        """The task as Teal's store holds it, judged against the pause decided on. A read
        that fails is retried (the decision is never sent blind meanwhile)."""
        assert self.config.task_url is not None
        ref = outcome.request.source_ref
        task_id = str(ref.get("task_id") or "")
        url = self.config.task_url.replace("{task_id}", quote(task_id, safe=""))
        prefix = f"Teal {what}; " if what else ""
        try:
            reply = await self.http.get(url, headers=headers)
        except httpx.HTTPError as exc:
            raise DeliveryError(f"{prefix}cannot read the task to check it ({describe(exc)})") from None
        if reply.status_code == 404:
            raise DeliveryError(f"{prefix}task {task_id} is unknown at task_url (expired from Teal's store?)",
                                permanent=True)
        if reply.status_code >= 400:
            raise DeliveryError(f"{prefix}task_url answered HTTP {reply.status_code}",
                                permanent=reply.status_code < 500 and reply.status_code not in (408, 429))
        fingerprint = (outcome.request.external_id or "").rsplit(":", 1)[-1]
        try:
            return judge(reply.json(), str(ref["request_id"]), fingerprint)
        except (ValueError, RecursionError) as exc:  # InvalidTask, or not JSON
            raise DeliveryError(f"{prefix}task_url did not answer a Teal task: {exc}"[:500], permanent=True) from None

    async def _post(self, path: str, body: dict[str, str], headers: dict[str, str]) -> tuple[int, bytes | None]:
        """POST and read the reply: its status and body, or None for a body over the limit
        (read no further: an endless reply must not fill the memory)."""
        limits = httpx.Timeout(self.config.timeout.total_seconds(), read=self.config.resume_timeout.total_seconds())
        async with self.http.stream("POST", path, json=body, headers=headers, timeout=limits) as reply:
            raw = bytearray()
            async for chunk in reply.aiter_bytes():
                raw += chunk
                if len(raw) > MAX_REPLY_BYTES:
                    return reply.status_code, None
            return reply.status_code, bytes(raw)

    def _unclear(self, rid: str, action: str, what: str) -> NoReturn:
        """The resume call may or may not have landed. A reject is safe to send again; an
        approve is not: Teal reuses the request id for the next pause, so a second approve
        could approve tool calls nobody has seen."""
        if action == "approve":
            raise DeliveryError(
                f"Teal {what}; the approval may have been applied, so it is not sent again (check the task in "
                "Teal; with `task_url` set the bridge checks it itself)",
                permanent=True,
            )
        self.ambiguous.add(rid)
        raise DeliveryError(f"Teal {what}")


def _error(status: int, detail: str) -> JSONResponse:
    return JSONResponse({"detail": detail}, status_code=status)
