"""One answer for a body that is too large, wherever it is refused: HTTP 413 with
`{"error": "body too large", "limit_bytes": N, "setting": "http.max_body_bytes", "detail": ...}`,
naming the limit and the config key that raises it (`detail` is what the clients show)."""

from __future__ import annotations

from typing import Any

from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

SETTING = "http.max_body_bytes"


def too_large_body(limit: int, setting: str = SETTING) -> dict[str, Any]:
    return {"error": "body too large", "limit_bytes": limit, "setting": setting,
            "detail": f"body too large: the limit is {limit} bytes ({setting})"}


def too_large(limit: int, setting: str = SETTING) -> JSONResponse:
    return JSONResponse(too_large_body(limit, setting), status_code=413)


class BodyTooLarge(HTTPException):
    """Raised from `receive` when a streamed body passes the limit: the app's handler for
    HTTPException answers it with `too_large`."""

    def __init__(self) -> None:
        super().__init__(status_code=413, detail="body too large")


class BodyLimit:
    """Every request body is at most `limit` bytes: a Content-Length over it is refused before
    any route runs, a body sent without one is counted while it streams."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        declared = headers.get("content-length", "").strip()
        if declared.isdigit() and int(declared) > self.limit:
            await too_large(self.limit)(scope, receive, send)
            return
        if "transfer-encoding" not in headers:
            # the server reads such a body by its Content-Length (checked above), never past it,
            # and a request with neither header has none: only a chunked body is counted as it streams
            await self.app(scope, receive, send)
            return
        seen = 0
        started = False

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise BodyTooLarge
            return message

        async def sending(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted, sending)
        except BodyTooLarge:  # raised where no handler answered it
            if started:
                raise
            await too_large(self.limit)(scope, receive, send)
