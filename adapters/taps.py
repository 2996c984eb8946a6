"""The endpoint behind a notification's Approve and Reject buttons, shared by the channels
that answer in place (Web Push from the service worker, ntfy's `http` actions).

`POST <path>/<token>` with `{"decision": "approve" | "reject"}` records the answer as the
token's handle (bridge.action_tokens): the token is read first, checked against its
request (open, answerable with one tap), and spent only then, so a malformed body or a
closed request never burns it. A GET decides nothing (405): link previews and scanners
fetch URLs, people press buttons.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from bridge.action_tokens import Decision, decision_values, one_tap, peek, spend
from bridge.errors import AlreadyClosed, BridgeError
from bridge.models import Responder
from bridge.ports import BridgeAPI, Clock

log = logging.getLogger("hitl_bridge.taps")
MAX_BODY = 1024


class TapRefused(Exception):
    """Why a tap records nothing; the message is shown on the person's phone."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def parse_tap(body: bytes) -> Decision:
    """The decision a button sent; TapRefused for anything else (oversized, not JSON, other keys)."""
    if len(body) > MAX_BODY:
        raise TapRefused(413, "the body is too large")
    try:
        data = json.loads(body)
    except (UnicodeDecodeError, ValueError):
        raise TapRefused(400, 'send JSON: {"decision": "approve"} or {"decision": "reject"}') from None
    if not isinstance(data, dict) or set(data) != {"decision"} or data["decision"] not in set(Decision):
        raise TapRefused(400, 'send JSON: {"decision": "approve"} or {"decision": "reject"}')
    return Decision(data["decision"])


def tap_route(path: str, platform: str, bridge: Callable[[], BridgeAPI], clock: Clock) -> Route:
    """`POST {path}/{token}`: answer as `<platform>:<id>` of the token's handle."""

    async def tap(request: Request) -> JSONResponse:
        try:
            outcome = await _record(request, platform, bridge(), clock.now())
        except TapRefused as refused:
            return JSONResponse({"ok": False, "error": str(refused)}, status_code=refused.status)
        return JSONResponse({"ok": True, **outcome})

    return Route(path + "/{token}", tap, methods=["POST"])


async def _record(request: Request, platform: str, bridge: BridgeAPI, now: datetime) -> dict[str, Any]:
    decision = parse_tap(await _capped_body(request))
    token = request.path_params["token"]
    found = await peek(bridge.store, token, now)
    if found is None or not found.handle.startswith(f"{platform}:"):
        raise TapRefused(404, "this button is not valid any more (already used, or not ours)")
    current = await bridge.get(found.request_id)
    if current is None:
        raise TapRefused(404, "this request no longer exists")
    if not current.is_open:
        raise TapRefused(409, f"not recorded: the request is already {current.state.value}")
    if not one_tap(current):
        raise TapRefused(422, "this request needs more than Approve or Reject: open it to answer")
    if await spend(bridge.store, token, now) is None:
        raise TapRefused(404, "this button is not valid any more (already used)")
    ident = found.handle.partition(":")[2]
    responder = Responder(platform=platform, user_id=ident, name=ident)
    try:
        updated = await bridge.answer(current.id, responder, decision_values(current, decision), via=platform)
    except AlreadyClosed as exc:
        raise TapRefused(409, f"not recorded: {exc}") from None
    except BridgeError as exc:
        log.info("%s: %s refused for request %s: %s", platform, responder.key, current.id, exc)
        raise TapRefused(exc.status, f"not recorded: {exc}") from None
    log.info("%s: %s answered %s with %s", platform, responder.key, current.id, decision.value)
    return {"request_id": current.id, "decision": decision.value,
            "state": "voted" if updated.is_open else "answered"}


async def _capped_body(request: Request) -> bytes:
    """The body, read no further than one byte past MAX_BODY (parse_tap refuses it then)."""
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY:
            break
    return body
