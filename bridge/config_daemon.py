"""The daemon's own config sections: `store:`, `http:`, `secrets:`, `delivery:` (DESIGN §4),
and the pieces every config model shares (`Duration`, `StrictModel`)."""

from __future__ import annotations

import ipaddress
import re
from datetime import timedelta
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator

from bridge.durations import parse_duration

Duration = Annotated[timedelta, BeforeValidator(parse_duration)]


class StrictModel(BaseModel):
    """A config model: an unknown key is an error."""

    model_config = ConfigDict(extra="forbid")


class StoreSettings(StrictModel):
    url: str = "sqlite:///./.hitl-bridge/bridge.db"
    #: prune closed requests (cancelled, delivered, expired, failed; outcome delivered) last
    #: changed longer ago than this, with their events; None (the default): keep everything
    retain_closed: Duration | None = None

    @field_validator("retain_closed", mode="before")
    @classmethod
    def _off(cls, value: object) -> object:
        off = value is False or (isinstance(value, str) and value.strip().lower() in ("off", "never"))
        return None if off else value

    @field_validator("url")
    @classmethod
    def _known_scheme(cls, url: str) -> str:
        if not url.startswith(("sqlite:///", "postgresql://", "postgres://")):
            raise ValueError("use sqlite:///path/to/file.db or postgresql://user@host:5432/db")
        return url


TOKEN_NAME_PATTERN = r"^[A-Za-z0-9_.@-]{1,64}$"


class ApiToken(StrictModel):
    """One bearer token for /v1. Its name is the identity that answers with it (`api:<name>`)."""

    token: str = Field(min_length=16, max_length=512)
    #: may answer in the name of others (the body's `responder` names who): a chat relay,
    #: an operator's tool. Without it a token votes only as itself.
    act_for_others: bool = False
    #: may read the whole record (`GET /v1/audit`): every request's events, whoever created them.
    #: Give it to the auditor's or the SIEM's token only.
    audit: bool = False


class HttpSettings(StrictModel):
    listen: str = "127.0.0.1:8787"
    #: name -> token (or {token, act_for_others}); a plain list names them api, api-2, ...
    api_tokens: dict[str, ApiToken] = Field(default_factory=dict)
    max_body_bytes: int = Field(default=256 * 1024, ge=1024, le=64 * 1024 * 1024)
    callback_allow: list[str] = Field(default_factory=list)  # host globs; empty: any public host
    #: callbacks may reach loopback, private, link-local addresses (always so on a loopback-only
    #: daemon; a host named in callback_allow may too)
    callback_allow_private: bool = False
    public_url: str | None = None  # how people reach this bridge (links in messages)
    #: Host names the bridge answers to; None: the listen address, localhost, 127.0.0.1, ::1 and
    #: the hosts of public_url / telegram.webhook_url; "*.example.com" for subdomains; "*": any
    allowed_hosts: list[str] | None = None
    metrics_public: bool = False  # /metrics without a token even when api_tokens are set
    #: wrong credentials (answers 401) from one client address per minute before it gets 429
    max_auth_failures: int = Field(default=20, ge=1, le=100_000)
    #: proxies (addresses or CIDR networks) whose `X-Forwarded-For` / `X-Forwarded-Proto` are
    #: believed; from anyone else they are ignored and the socket's peer is the client. None by
    #: default: every client is who connects
    trusted_proxies: list[str] = Field(default_factory=list, max_length=1000)
    #: time a client has to send a whole request (headers and body) once it connects
    read_timeout: Duration = timedelta(seconds=15)
    keep_alive_timeout: Duration = timedelta(seconds=5)  # an idle connection is closed after it
    #: open connections at once; None: three quarters of the open-file limit (ulimit -n)
    max_connections: int | None = Field(default=None, ge=4, le=1_000_000)

    @field_validator("api_tokens", mode="before")
    @classmethod
    def _named_tokens(cls, value: Any) -> Any:
        if value is None:
            return {}
        if isinstance(value, str):
            value = [value]
        if isinstance(value, list):
            value = {("api" if i == 0 else f"api-{i + 1}"): t for i, t in enumerate(value)}
        if not isinstance(value, dict):
            raise ValueError("expected a map of name: token (or a list of tokens)")
        out: dict[str, Any] = {}
        for name, token in value.items():
            if token in ("", None) or (isinstance(token, dict) and token.get("token") in ("", None)):
                continue  # an unset optional token
            if not isinstance(name, str) or not re.match(TOKEN_NAME_PATTERN, name):
                raise ValueError(f"token name {str(name)[:40]!r}: use 1-64 letters, digits, '_.@-'")
            if isinstance(token, str):
                if len(token) < 16:
                    raise ValueError(f"API token {name!r} must be at least 16 characters")
                token = {"token": token}
            out[name] = token
        return out

    @field_validator("api_tokens")
    @classmethod
    def _distinct(cls, tokens: dict[str, ApiToken]) -> dict[str, ApiToken]:
        values = [t.token for t in tokens.values()]
        if len(set(values)) != len(values):
            raise ValueError("two API tokens have the same value: each name needs its own token")
        return tokens

    @property
    def first_token(self) -> str | None:
        """A token for the daemon's own clients (the CLI, the demo)."""
        return next(iter(self.api_tokens.values())).token if self.api_tokens else None

    @field_validator("read_timeout", "keep_alive_timeout")
    @classmethod
    def _positive_seconds(cls, value: timedelta) -> timedelta:
        if not timedelta(seconds=1) <= value <= timedelta(hours=1):
            raise ValueError("use between 1s and 1h")
        return value

    @field_validator("trusted_proxies")
    @classmethod
    def _networks(cls, entries: list[str]) -> list[str]:
        out = []
        for entry in entries:
            try:
                out.append(str(ipaddress.ip_network(entry.strip(), strict=False)))
            except ValueError:
                raise ValueError(f"{entry[:60]!r}: use an IP address or a CIDR network such as 10.0.0.0/8 "
                                 "(the proxies in front of the bridge, not host names)") from None
        return out

    @field_validator("allowed_hosts")
    @classmethod
    def _host_names(cls, names: list[str] | None) -> list[str] | None:
        for name in names or []:
            bare = name.strip().strip("[]")
            if not bare or len(bare) > 253 or any(c in bare for c in "/@ \t?#") or \
                    ("*" in bare and bare != "*" and not (bare.startswith("*.") and "*" not in bare[2:])):
                raise ValueError(f"{name[:60]!r}: use a host name or address without port or scheme, "
                                 "'*.example.com' for its subdomains, or '*' for any")
            if ":" in bare:
                try:
                    ipaddress.IPv6Address(bare)
                except ValueError:
                    raise ValueError(f"{name[:60]!r}: no port (the bridge answers the name on any port)") from None
        return names

    @field_validator("listen")
    @classmethod
    def _host_port(cls, listen: str) -> str:
        host, sep, port = listen.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 <= int(port) < 65536:
            raise ValueError("expected host:port, e.g. 127.0.0.1:8787")
        return listen

    @property
    def host(self) -> str:
        return self.listen.rpartition(":")[0].strip("[]")

    @property
    def port(self) -> int:
        return int(self.listen.rpartition(":")[2])

    @property
    def loopback_only(self) -> bool:
        return self.host in ("127.0.0.1", "localhost", "::1") or self.host.startswith("127.")


class SecretsSettings(StrictModel):
    key: str | None = None  # Fernet key (urlsafe base64, 32 bytes) or any passphrase

    @field_validator("key")
    @classmethod
    def _empty_is_none(cls, key: str | None) -> str | None:
        return key or None


class DeliverySettings(StrictModel):
    give_up_after: Duration = timedelta(hours=24)
    first_retry: Duration = timedelta(seconds=1)
    max_backoff: Duration = timedelta(minutes=5)
    timeout: Duration = timedelta(seconds=10)
    concurrency: int = Field(default=32, ge=1, le=1000)
