"""The `web:` config section: who may open the inbox and how the page refreshes."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, SecretStr, field_validator

from bridge.durations import parse_duration

Duration = Annotated[timedelta, BeforeValidator(parse_duration)]
NAME_PATTERN = r"^[A-Za-z0-9_.@ -]{1,64}$"


class WebConfig(BaseModel):
    """`web:` keys. No `password`, no `tokens`, no `http.api_tokens` and a loopback listen
    address: the inbox is open. Otherwise people log in with one of those."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    password: SecretStr | None = None
    tokens: dict[str, SecretStr] = Field(default_factory=dict)  # person's name → login token
    session_secret: SecretStr | None = None
    session_ttl: Duration = timedelta(hours=12)
    poll_interval_s: float = Field(default=1.0, ge=0.2, le=60)
    title: str = Field(default="hitl-bridge inbox", min_length=1, max_length=100)
    page_size: int = Field(default=100, ge=10, le=1000)
    #: wrong logins per 5 minutes from one client address, and for one name typed (a name's budget
    #: holds back only addresses it has not logged in from)
    max_login_failures: int = Field(default=10, ge=1, le=1000)
    #: live looks held open at once (waiting for a change) per login session and per client
    #: address; more are answered at once (429) and their page refreshes on its interval
    live_held_per_session: int = Field(default=8, ge=1, le=1000)
    live_held_per_address: int = Field(default=64, ge=1, le=100_000)

    @field_validator("password", "session_secret", mode="before")
    @classmethod
    def _unset_is_none(cls, value: Any) -> Any:
        return None if value in ("", None) else value

    @field_validator("password")
    @classmethod
    def _password_long_enough(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and len(value.get_secret_value()) < 8:
            raise ValueError("the inbox password must be at least 8 characters")
        return value

    @field_validator("session_secret")
    @classmethod
    def _session_secret_long_enough(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and len(value.get_secret_value()) < 16:
            raise ValueError("session_secret must be at least 16 characters")
        return value

    @field_validator("tokens", mode="before")
    @classmethod
    def _drop_unset_tokens(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: v for k, v in value.items() if v not in ("", None)}
        return value

    @field_validator("tokens")
    @classmethod
    def _tokens_named_and_long(cls, tokens: dict[str, SecretStr]) -> dict[str, SecretStr]:
        for name, token in tokens.items():
            if not re.match(NAME_PATTERN, name):
                raise ValueError(f"token name {name[:40]!r}: use 1-64 letters, digits, '_.@ -'")
            if len(token.get_secret_value()) < 16:
                raise ValueError(f"the token of {name!r} must be at least 16 characters")
        return tokens

    @property
    def session_ttl_s(self) -> int:
        return int(self.session_ttl.total_seconds())
