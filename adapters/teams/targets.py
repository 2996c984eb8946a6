"""`teams:` targets, parsed strictly: `teams:channel:<id>`, `teams:chat:<id>`,
`teams:user:<aadObjectId>`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from adapters.teams.spec import is_object_id

Kind = Literal["channel", "chat", "user"]
MAX_ID = 300


class BadTarget(ValueError):
    """Not a Teams target (the message says what one looks like)."""


@dataclass(frozen=True)
class TeamsTarget:
    kind: Kind
    value: str

    @property
    def key(self) -> str:
        """How the target is written (and how its conversation reference is stored)."""
        return f"teams:{self.kind}:{self.value}"


def parse_target(target: str) -> TeamsTarget:
    body = target.removeprefix("teams:")
    kind, _, value = body.partition(":")
    if kind not in ("channel", "chat", "user") or not value or len(value) > MAX_ID \
            or any(c.isspace() for c in value):
        raise BadTarget(f"{target!r} is not a Teams target: write teams:channel:<id>, teams:chat:<id> "
                        "or teams:user:<aadObjectId>")
    if kind == "user":
        if not is_object_id(value):
            raise BadTarget(f"{target!r}: a Teams user is named by their Entra object id (a GUID)")
        value = value.lower()
    return TeamsTarget(kind, value)  # type: ignore[arg-type]
