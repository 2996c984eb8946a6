"""The `email:` config section: where to send from, how to reach the SMTP server."""

from __future__ import annotations

from dataclasses import dataclass
from email.headerregistry import Address
from email.utils import parseaddr
from urllib.parse import unquote, urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator


class EmailSettings(BaseModel):
    """`email:` keys. `smtp_url` is `smtp://user:pass@host:587` (STARTTLS) or
    `smtps://user:pass@host:465` (TLS from the first byte); user and password are optional."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    smtp_url: SecretStr
    from_: str = Field(alias="from", min_length=3, max_length=300)
    #: smtp:// only. true: STARTTLS or refuse to send; false: plain (a relay on localhost);
    #: unset: STARTTLS when the server offers it
    starttls: bool | None = True
    ca_file: str | None = None  # a CA bundle (or a self-signed server certificate) to trust
    tls_verify: bool = True
    timeout_s: float = Field(default=20.0, gt=0, le=300)
    max_per_second: float = Field(default=5.0, gt=0, le=100)
    retries: int = Field(default=5, ge=0, le=20)  # temporary failures (4xx, connection) per mail
    first_retry_s: float = Field(default=2.0, gt=0, le=600)
    max_retry_s: float = Field(default=60.0, gt=0, le=3600)
    send_resolved: bool = False  # a short "resolved by …" mail when the request closes elsewhere

    @field_validator("smtp_url")
    @classmethod
    def _smtp_url(cls, value: SecretStr) -> SecretStr:
        parts = urlsplit(value.get_secret_value())
        if parts.scheme not in ("smtp", "smtps") or not parts.hostname:
            raise ValueError("use smtp://user:pass@host:587 (STARTTLS) or smtps://user:pass@host:465")
        try:
            parts.port  # noqa: B018 - raises on a bad port
        except ValueError:
            raise ValueError("the port of smtp_url is not a number") from None
        return value

    @field_validator("from_")
    @classmethod
    def _from_address(cls, value: str) -> str:
        _, address = parseaddr(value)
        if "@" not in address or "\n" in value or "\r" in value:
            raise ValueError('expected an address such as "Agents <agents@example.com>"')
        return value

    @property
    def server(self) -> SmtpServer:
        parts = urlsplit(self.smtp_url.get_secret_value())
        implicit = parts.scheme == "smtps"
        return SmtpServer(
            host=parts.hostname or "",
            port=parts.port or (465 if implicit else 587),
            username=unquote(parts.username) if parts.username else None,
            password=unquote(parts.password) if parts.password else None,
            implicit_tls=implicit,
        )

    @property
    def sender(self) -> Address:
        name, address = parseaddr(self.from_)
        user, _, domain = address.partition("@")
        return Address(display_name=name, username=user, domain=domain)


@dataclass(frozen=True)
class SmtpServer:
    host: str
    port: int
    username: str | None
    password: str | None
    implicit_tls: bool

    def describe(self) -> str:
        """Safe to log: no password."""
        who = f"{self.username}@" if self.username else ""
        return f"{'smtps' if self.implicit_tls else 'smtp'}://{who}{self.host}:{self.port}"
