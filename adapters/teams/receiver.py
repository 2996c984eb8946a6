"""The messaging endpoint, `POST /teams/messages`: bounded, JWT-checked (auth.py) before
anything is read as an activity, then translated: conversation references learned from
every activity, invokes answered (invokes.py), everything else acknowledged."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

from starlette.requests import Request as HttpRequest
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from adapters.teams.auth import ActivityAuth, Refused
from adapters.teams.invokes import Invokes
from adapters.teams.references import References

log = logging.getLogger("hitl_bridge.teams")
PATH = "/teams/messages"


class Receiver:
    def __init__(self, auth: ActivityAuth, references: References | None, invokes: Invokes,
                 max_body_bytes: int) -> None:
        self.auth = auth
        self.references = references
        self.invokes = invokes
        self.max_body_bytes = max_body_bytes

    def http_routes(self) -> Sequence[BaseRoute]:
        return [Route(PATH, self.endpoint, methods=["POST"])]

    async def _body(self, request: HttpRequest) -> bytes | None:
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_body_bytes:
            return None
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > self.max_body_bytes:
                return None
        return body

    async def endpoint(self, request: HttpRequest) -> Response:
        body = await self._body(request)
        if body is None:
            self.auth.refuse("too_large")
            return JSONResponse({"error": "activity too large"}, status_code=413)
        try:
            activity: Any = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            activity = None
        if not isinstance(activity, dict) or not isinstance(activity.get("type"), str):
            self.auth.refuse("not_an_activity")
            return JSONResponse({"error": "not a Bot Framework activity"}, status_code=400)
        try:
            await self.auth.verify(request.headers.get("authorization"), activity)
        except Refused as exc:
            log.warning("teams: refused an activity (%s) from %s", exc.reason,
                        request.client.host if request.client else "?")
            return JSONResponse({"error": "unauthorized"}, status_code=401)
        return await self.handle(activity)

    async def handle(self, activity: dict[str, Any]) -> Response:
        if self.references is not None:
            await self.references.learn(activity)
        if activity["type"] == "invoke":
            return JSONResponse(await self.invokes.handle(activity))
        return Response(status_code=200)
