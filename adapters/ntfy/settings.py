"""The `ntfy:` config section: which server, how to log in, and what a message looks like
when its route's target does not say."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator


class NtfySettings(BaseModel):
    """`ntfy:` keys. Targets are topics on this server (`ntfy:<topic>`); the buttons of a
    message POST back to `http.public_url`, so the phone must reach the bridge there."""

    model_config = ConfigDict(extra="forbid")

    #: the ntfy server: https://ntfy.sh or your own
    url: str = Field(default="https://ntfy.sh", max_length=300)
    #: an access token (`tk_…`) for protected topics; usually `${NTFY_TOKEN}`
    token: SecretStr | None = None
    #: a message's priority (1 min … 5 max) when its target names none (`ntfy:ops?priority=5`)
    priority: int = Field(default=4, ge=1, le=5)
    #: tags (emoji short codes) when its target names none (`ntfy:ops?tags=warning,robot`)
    tags: list[str] = Field(default_factory=lambda: ["robot"], max_length=10)
    timeout_s: float = Field(default=10.0, gt=0, le=120)

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
            raise ValueError("use the server's base URL, such as https://ntfy.sh")
        return value.rstrip("/")

    @field_validator("token", mode="before")
    @classmethod
    def _unset_is_none(cls, value: Any) -> Any:
        return None if value in ("", None) else value

    @field_validator("tags")
    @classmethod
    def _tags(cls, tags: list[str]) -> list[str]:
        for tag in tags:
            if not tag or len(tag) > 40 or "," in tag:
                raise ValueError(f"{tag[:40]!r}: a tag is a short word such as warning or robot")
        return tags
