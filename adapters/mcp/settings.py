"""The MCP server's settings: a `type: mcp` source section, or `hitl-bridge mcp`'s flags."""

from __future__ import annotations

from datetime import timedelta

from pydantic import BaseModel, ConfigDict, Field, field_validator

from adapters.mcp.requests import RESERVED_PREFIX, Caller
from bridge.config_daemon import Duration

MAX_LABELS = 50


def labels_fit_a_request(labels: dict[str, str], set_by: str) -> dict[str, str]:
    """The operator's labels for every request from MCP: few and short, none of the `mcp_`
    ones `set_by` sets itself (so an agent cannot pick a laxer route through them)."""
    if len(labels) > MAX_LABELS or any(len(k) > 100 or len(v) > 500 for k, v in labels.items()):
        raise ValueError("at most 50 labels, keys ≤ 100 and values ≤ 500 characters")
    reserved = sorted(k for k in labels if k.startswith(RESERVED_PREFIX))
    if reserved:
        raise ValueError(f"{reserved[0]!r}: labels starting with {RESERVED_PREFIX!r} are set by {set_by}")
    return labels


def progress_often_enough(every: timedelta) -> timedelta:
    """A held call's progress notifications: often enough to keep clients waiting, not a flood."""
    if not timedelta(seconds=0.05) <= every <= timedelta(minutes=10):
        raise ValueError("use between 50ms and 10m")
    return every


class McpSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(default="mcp", min_length=1, max_length=100)
    #: added to every request asked through MCP, over the labels the agent sends
    labels: dict[str, str] = Field(default_factory=dict)
    #: how long one tool call holds before it returns the request id for `await_answer`
    #: (for clients that give up on long calls); unset: until the request closes
    hold: Duration | None = None
    #: how often a waiting call sends a progress notification (clients that reset their
    #: timeout on progress then wait as long as it takes)
    progress_every: Duration = timedelta(seconds=15)
    #: offer the person an edit of the arguments before allowing: true, false, or tool name
    #: globs (`["Bash", "mcp__github__*"]`)
    edit_arguments: bool | list[str] = False

    @field_validator("labels")
    @classmethod
    def _labels_fit_a_request(cls, labels: dict[str, str]) -> dict[str, str]:
        return labels_fit_a_request(labels, "the bridge")

    @field_validator("progress_every")
    @classmethod
    def _progress_often_enough(cls, every: timedelta) -> timedelta:
        return progress_often_enough(every)

    @property
    def hold_s(self) -> float | None:
        return None if self.hold is None else self.hold.total_seconds()

    def caller(self, client: str) -> Caller:
        edit = self.edit_arguments if isinstance(self.edit_arguments, bool) else tuple(self.edit_arguments)
        return Caller(client=client, labels=dict(self.labels), edit_arguments=edit)
