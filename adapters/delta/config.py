"""The `sources: [{type: delta, ...}]` section (keys documented in docs/engines/delta.md)."""

from __future__ import annotations

from datetime import timedelta

from pydantic import BaseModel, ConfigDict, Field, field_validator

from adapters.delta.resume import BadResumeCommand, check_template
from adapters.delta.translate import REASON_FIELD
from bridge.config_daemon import Duration


class DeltaConfig(BaseModel):
    """The `sources: [{type: delta, ...}]` section."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(default="delta", pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    roots: list[str] = Field(default_factory=lambda: ["."], min_length=1)
    resume_command: str | None = None
    resume_shell: bool = False
    resume_timeout: Duration = timedelta(minutes=5)
    rescan_every: Duration = timedelta(seconds=120)  # a safety net: file events do the work
    settle_time: Duration = timedelta(seconds=2)
    watch: bool = True
    force_polling: bool = False
    watch_step_ms: int = Field(default=3, ge=1, le=1000)
    # The line written after a yes/no answer given with a reason ("no" then "Reason: …");
    # null or "" writes the bare answer.
    reason_line: str | None = Field(default="Reason: {reason}", max_length=500)

    @field_validator("roots")
    @classmethod
    def _roots_not_empty(cls, roots: list[str]) -> list[str]:
        if any(not r.strip() for r in roots):
            raise ValueError("a root cannot be empty (use '.' for the current directory)")
        deep = next((r for r in roots if "**" in r), None)
        if deep is not None:
            raise ValueError(f"{deep!r}: '**' (any depth) is not supported, so the bridge never walks whole "
                             "trees; name each level with '*', e.g. /srv/agents/*/workspaces/*")
        return roots

    @field_validator("reason_line")
    @classmethod
    def _reason_has_its_place(cls, line: str | None) -> str | None:
        if line is None or not line.strip():
            return None
        if REASON_FIELD not in line:
            raise ValueError(f"must contain {REASON_FIELD} where the reason goes, e.g. 'Reason: {REASON_FIELD}' "
                             "(or null for none)")
        if "\n" in line or "\r" in line:
            raise ValueError("must be one line (the reason itself may span several)")
        return line

    @field_validator("resume_command")
    @classmethod
    def _command_usable(cls, command: str | None) -> str | None:
        if command is None or not command.strip():
            return None
        try:
            check_template(command)
        except BadResumeCommand as exc:
            raise ValueError(f"resume_command {exc}") from None
        return command
