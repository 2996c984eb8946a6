"""`--offline`: the same operations as the API, done on the store directly, for admin work
while the daemon is down. Views have the API's shapes, so the same rendering serves both;
refusals are the client's error types, so the same messages and exit codes apply.

A running daemon notices an offline answer within seconds (its outbox looks for entries
added by another process) but does not update chat copies for it.
"""

from __future__ import annotations

import asyncio
import getpass
from collections.abc import Coroutine, Sequence
from pathlib import Path
from typing import Any, TypeVar

from hitl_bridge_client.errors import refusal

from bridge.cli.exits import USAGE, Failed
from bridge.config import Settings
from bridge.errors import BridgeError
from bridge.store import redact_url

T = TypeVar("T")
View = dict[str, Any]
Views = list[View]  # `list` is a method name below


def store_path(url: str) -> Path | None:
    return Path(url.removeprefix("sqlite:///")) if url.startswith("sqlite:///") else None


class OfflineBridge:
    """Blocking calls on the store, shaped like `hitl_bridge_client.Client`'s."""

    def __init__(self, settings: Settings) -> None:
        path = store_path(settings.store.url)
        if path is not None and str(path) != ":memory:" and not path.exists():
            raise Failed(f"offline: there is no store at {path} (from {settings.origin}): run in the daemon's "
                         "folder or pass -c with its config", USAGE)
        self.settings = settings
        self.where = redact_url(settings.store.url)
        self._runner = asyncio.Runner()
        self.service = self._run(self._open())

    async def _open(self) -> Any:
        from bridge.clock import SystemClock
        from bridge.crypto import SecretBox
        from bridge.router import Router
        from bridge.service import BridgeService
        from bridge.store import open_store_from_url

        store = open_store_from_url(self.settings.store.url)
        await store.open()
        return BridgeService(store, Router(self.settings.routes, self.settings.default_route),
                             SecretBox(self.settings.secrets.key), SystemClock(), people=self.settings.directory)

    def _run(self, work: Coroutine[Any, Any, T]) -> T:
        async def settled() -> T:
            try:
                return await work
            finally:
                if getattr(self, "service", None) is not None:
                    await self.service.drain()  # its background work (channel updates) ends here
        try:
            return self._runner.run(settled())
        except BridgeError as exc:
            raise refusal(exc.status, str(exc)) from None

    def close(self) -> None:
        if getattr(self, "service", None) is not None:
            self._runner.run(self.service.store.close())
        self._runner.close()

    def __enter__(self) -> OfflineBridge:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # reads -------------------------------------------------------------------------------
    def list(self, state: Sequence[str] | None = None, *, source: str | None = None, route: str | None = None,
             limit: int = 100, offset: int = 0) -> Views:
        from bridge.http.views import request_view
        from bridge.models import RequestState

        async def rows() -> Views:
            found = await self.service.store.list_requests(
                states=[RequestState(s) for s in state] if state else None, source=source, route=route,
                limit=limit, offset=offset)
            return [request_view(r) for r in found]
        return self._run(rows())

    def get(self, request_id: str) -> View:
        from bridge.http.views import outbox_view, post_view, request_view, votes_view

        async def view() -> View:
            store = self.service.store
            request = await store.get_request(request_id)
            if request is None:
                raise refusal(404, f"no request {request_id!r}")
            shown = request_view(request)
            shown["posts"] = [post_view(p) for p in await store.list_posts(request_id)]
            shown["outbox"] = [outbox_view(o) for o in await store.list_outbox(request_id=request_id)]
            shown.update(await votes_view(self.service, request))
            return shown
        return self._run(view())

    def events(self, request_id: str) -> Views:
        from bridge.http.views import event_view

        self.get(request_id)  # 404 for an unknown id, as the API
        return [event_view(e) for e in self._run(self.service.store.list_events(request_id))]

    # changes -----------------------------------------------------------------------------
    def answer(self, request_id: str, value: Any = None, *, values: dict[str, Any] | None = None,
               responder: str | None = None, reason: str | None = None,
               grant: str | dict[str, Any] | None = None) -> View:
        from bridge.http.views import request_view
        from bridge.models import Responder
        from bridge.policy import GrantChoice, GrantOffer

        choice = None
        if grant is not None:
            choice = GrantOffer.parse_key(grant) if isinstance(grant, str) else GrantChoice.model_validate(grant)

        name = responder or getpass.getuser()
        if values is None:
            questions = self.get(request_id)["questions"]
            values = {questions[0]["id"]: value}
        updated = self._run(self.service.answer(request_id, Responder(platform="cli", user_id=name, name=name),
                                                values, via="cli", reason=reason, grant=choice))
        return request_view(updated)

    def cancel(self, request_id: str, reason: str = "", *, actor: str | None = None) -> View:
        from bridge.http.views import request_view

        return request_view(self._run(self.service.cancel(request_id, actor=f"cli:{actor or getpass.getuser()}",
                                                          reason=reason)))

    def redeliver(self, request_id: str) -> View:
        from bridge.http.views import request_view

        return request_view(self._run(self.service.redeliver(request_id, actor=f"cli:{getpass.getuser()}")))
