"""What can go wrong when asking, each with a name that says it."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hitl_bridge_client.answers import Answer


class BridgeError(Exception):
    """Base of the errors this client raises."""


class BridgeUnavailable(BridgeError):
    """The daemon did not answer for longer than the client's `unavailable_after`."""


class NotABridge(BridgeError):
    """Something else answers at the URL (a web server, a proxy's error page): `status` and
    `content_type` of its reply, which was not the API's JSON."""

    def __init__(self, url: str, status: int, content_type: str) -> None:
        super().__init__(f"{url}: this is not a hitl-bridge daemon (got {status} {content_type})")
        self.url = url
        self.status = status
        self.content_type = content_type


class BridgeRefused(BridgeError):
    """The daemon refused the call: `status` (HTTP) and `detail` (the API's reason)."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(f"the bridge refused the call ({status}): {detail}")
        self.status = status
        self.detail = detail


class Unauthorized(BridgeRefused):
    """401/403: no token, or a wrong one (`HITL_BRIDGE_TOKEN`)."""


class NotFound(BridgeRefused):
    """404: no such request."""


class Missing(NotFound):
    """`wait_many`: `request_id` is no request, or not one the token may wait on (the bridge
    says the same of both)."""

    def __init__(self, request_id: str, detail: str) -> None:
        super().__init__(404, detail)
        self.request_id = request_id


class Conflict(BridgeRefused):
    """409: the request is closed already (answered by someone else, cancelled...)."""


class InvalidRequest(BridgeRefused):
    """400/413/422: the body does not fit the API (the detail names the field)."""


REFUSALS: dict[int, type[BridgeRefused]] = {
    400: InvalidRequest, 401: Unauthorized, 403: Unauthorized, 404: NotFound, 409: Conflict,
    413: InvalidRequest, 422: InvalidRequest,
}


def refusal(status: int, detail: str) -> BridgeRefused:
    return REFUSALS.get(status, BridgeRefused)(status, detail)


class NoAnswer(BridgeError):
    """The request closed without an answer: `state` is expired, cancelled or failed."""

    def __init__(self, request_id: str, state: str, error: str | None) -> None:
        super().__init__(f"request {request_id} {state} without an answer" + (f": {error}" if error else ""))
        self.request_id = request_id
        self.state = state
        self.error = error


class StillOpen(BridgeError):
    """`wait(..., max_wait=)` (or `wait_many`) ran out while the request was still open (it stays open)."""

    def __init__(self, request_id: str, state: str) -> None:
        super().__init__(f"request {request_id} is still {state}")
        self.request_id = request_id
        self.state = state


class Rejected(BridgeError):
    """An approval was rejected (by a person, or by the route's `on_timeout` answer)."""

    def __init__(self, answer: Answer) -> None:
        super().__init__(f"rejected by {answer.responder_name}" + (f": {answer.reason}" if answer.reason else ""))
        self.answer = answer
        self.reason = answer.reason
