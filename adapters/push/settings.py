"""The `push:` config section: who the daemon says it is to push services, and which push
services it will send to."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

#: the push services of the browsers people use (Chrome, Firefox, Safari, Edge)
KNOWN_PUSH_SERVICES = [
    "fcm.googleapis.com",
    "updates.push.services.mozilla.com",
    "web.push.apple.com",
    ".notify.windows.com",
]


class PushSettings(BaseModel):
    """`push:` keys. The VAPID key pair is made by the daemon on first start and kept in the
    store, sealed with `secrets.key`; nothing here is secret."""

    model_config = ConfigDict(extra="forbid")

    #: who runs this bridge, told to push services with every message (VAPID `sub`)
    subject: str = Field(default="mailto:hitl-bridge@localhost", max_length=300)
    #: hosts a subscription's endpoint may point at (a leading dot: any subdomain); a
    #: browser names its own push service, and the daemon posts to nothing else
    push_services: list[str] = Field(default_factory=lambda: list(KNOWN_PUSH_SERVICES), min_length=1)
    #: how long a push service keeps a message for a phone that is off (capped by the deadline)
    ttl_s: int = Field(default=86_400, ge=60, le=2_419_200)
    timeout_s: float = Field(default=10.0, gt=0, le=120)
    #: devices (subscriptions) one login may have
    max_devices: int = Field(default=10, ge=1, le=100)

    @field_validator("subject")
    @classmethod
    def _subject(cls, value: str) -> str:
        if not value.startswith(("mailto:", "https://")) or any(c in value for c in "\r\n "):
            raise ValueError("use mailto:you@example.com or https://your-site (push services may write to it)")
        return value

    @field_validator("push_services")
    @classmethod
    def _hosts(cls, hosts: list[str]) -> list[str]:
        for host in hosts:
            if not host or any(c in host for c in "/:@ ?#"):
                raise ValueError(f"{host[:60]!r}: write a host name such as fcm.googleapis.com")
        return [h.lower() for h in hosts]
