"""Errors the core raises; each message is fit to show the person or the API caller."""

from __future__ import annotations

from datetime import datetime


class BridgeError(Exception):
    """Base of the core's refusals."""

    status = 400


class NotFound(BridgeError):
    status = 404

    def __init__(self, request_id: str) -> None:
        super().__init__(f"no request {request_id!r}")
        self.request_id = request_id


class AlreadyClosed(BridgeError):
    """The request is no longer open: answered, expired, cancelled or failed."""

    status = 409

    def __init__(self, request_id: str, state: str, by: str | None, at: datetime | None) -> None:
        if by and at:
            msg = f"already {state} by {by} at {at.strftime('%Y-%m-%d %H:%M UTC')}"
        else:
            msg = f"already {state}"
        super().__init__(msg)
        self.request_id = request_id
        self.state = state
        self.by = by
        self.at = at


class NotAllowed(BridgeError):
    status = 403

    def __init__(self, who: str) -> None:
        super().__init__(f"{who} is not allowed to answer this request")
        self.who = who


class SelfApproval(NotAllowed):
    """The route forbids approving one's own request (`forbid_self_approval`)."""

    def __init__(self, who: str) -> None:
        BridgeError.__init__(self, f"{who} asked for this request: someone else must approve it "
                                   "(the route forbids self-approval)")
        self.who = who


class NotAPerson(NotAllowed):
    """A token that acts for others named someone who is not a person of `people:`."""

    def __init__(self, claimed: str, token: str) -> None:
        BridgeError.__init__(self, f"{claimed!r} is not a person of people: (or a handle of one); token "
                                   f"{token!r} may act for others only in the name of a person defined there")
        self.who = claimed


class SharedVoter(NotAllowed):
    """The shared inbox password is everyone's: it casts no vote where people are counted."""

    def __init__(self, quorum: int, who: str) -> None:
        BridgeError.__init__(self, f"this request needs {quorum} different people to approve it, and the shared "
                                   "inbox password is not one person: log in with your own token to vote")
        self.who = who


class AutomaticRefused(NotAllowed):
    """A rule or a standing approval may not approve this request: a person is asked instead."""

    def __init__(self, who: str, why: list[str]) -> None:
        BridgeError.__init__(self, f"{who} may not approve this request automatically: {'; '.join(why)}")
        self.who = who
        self.why = why


class GrantRefused(BridgeError):
    """A standing approval cannot be made as asked (the message says why and what to do)."""

    status = 422


class GrantNotFound(BridgeError):
    status = 404

    def __init__(self, grant_id: str) -> None:
        super().__init__(f"no standing approval {grant_id[:80]!r}")
        self.grant_id = grant_id


class AnswerRejected(BridgeError):
    """The answer does not fit the questions."""

    status = 422


class ConfigError(Exception):
    """A bad configuration: names the file, the key and the reason."""

    def __init__(self, file: str, key: str, reason: str) -> None:
        where = f"{file}: {key}" if key else file
        super().__init__(f"{where}: {reason}")
        self.file = file
        self.key = key
        self.reason = reason


class LoosensRoute(BridgeError):
    """A request body asks for less than its route requires (other responders, an earlier
    automatic answer): a body may narrow its route, never loosen it."""

    status = 422

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field


class NotTheSameRequest(BridgeError):
    """An `external_id` already names a request that this one is not a retry of (another
    route, or other content): an idempotent retry must be the very same request."""

    status = 409

    def __init__(self, external_id: str, request_id: str, differs: list[str]) -> None:
        super().__init__(
            f"external_id {external_id!r} already names request {request_id} with a different "
            f"{' and '.join(differs)}: a retry must send the same request (use a new external_id "
            "for a new one)")
        self.external_id = external_id
        self.request_id = request_id
        self.differs = differs
