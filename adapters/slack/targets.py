"""Slack target and responder syntax: `slack:#name`, `slack:C…`, `slack:@U…`, `slack:@handle`."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

PREFIX = "slack:"
_USER_ID = re.compile(r"^[UW][A-Z0-9]{2,}$")
_CHANNEL_ID = re.compile(r"^[CGD][A-Z0-9]{2,}$")
_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,79}$")


class BadTarget(ValueError):
    """A `slack:` target that names no channel, person or user group."""


@dataclass(frozen=True)
class SlackTarget:
    """Where a target points: a channel (id or `#name`), a person (DM) or a user group."""

    kind: Literal["channel", "user", "usergroup"]
    value: str  # channel id or "#name", user id, or group handle


def parse_target(target: str) -> SlackTarget:
    """Parse a `slack:` target or responder; raise BadTarget with the reason."""
    if not target.startswith(PREFIX):
        raise BadTarget(f"{target!r} does not start with {PREFIX!r}")
    rest = target[len(PREFIX):].strip()
    if rest.startswith("@"):
        handle = rest[1:]
        if _USER_ID.match(handle):
            return SlackTarget("user", handle)
        if _NAME.match(handle.lower()):
            return SlackTarget("usergroup", handle.lower())
        raise BadTarget(f"{target!r}: not a user id or user group handle")
    if rest.startswith("#"):
        if _NAME.match(rest[1:].lower()):
            return SlackTarget("channel", rest.lower())
        raise BadTarget(f"{target!r}: not a channel name")
    if _CHANNEL_ID.match(rest):
        return SlackTarget("channel", rest)
    if _USER_ID.match(rest):
        return SlackTarget("user", rest)
    raise BadTarget(f"{target!r}: expected slack:#name, slack:C…, slack:@U… or slack:@group")
