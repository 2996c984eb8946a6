"""Helpers for the PostgreSQL store: the store URL and text that PostgreSQL cannot hold.

PostgreSQL `text` refuses NUL characters and lone surrogates, both of which an engine or a
platform can send (`"\\u0000"` is valid JSON). `encode_text` maps every Python string to
one PostgreSQL accepts, injectively (so lookups by an encoded key stay exact) and as the
identity for ordinary strings (so the database stays readable); `decode_text` inverts it.
"""

from __future__ import annotations

import json
import urllib.parse
from dataclasses import dataclass, field

# Strings that need escaping become MARKER + their JSON-escaped (ASCII) form. Strings that
# already start with MARKER are escaped too, so the mapping stays one to one.
MARKER = "\x01"

# Query parameters the bridge consumes itself; every other one goes to asyncpg (which
# passes unknown ones to the server as settings, e.g. search_path, application_name).
POOL_PARAMS = ("pool_min", "pool_max", "statement_cache_size")


def _needs_escape(value: str) -> bool:
    if "\x00" in value or value.startswith(MARKER):
        return True
    if value.isascii():
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates
        return True
    return False


def encode_text(value: str) -> str:
    """A string PostgreSQL `text` accepts; the identity for ordinary strings."""
    if not _needs_escape(value):
        return value
    return MARKER + json.dumps(value, ensure_ascii=True)[1:-1]


def decode_text(value: str) -> str:
    """Inverse of `encode_text`."""
    if not value.startswith(MARKER):
        return value
    decoded: str = json.loads('"' + value[len(MARKER):] + '"')
    return decoded


def encode_opt(value: str | None) -> str | None:
    return None if value is None else encode_text(value)


def decode_opt(value: str | None) -> str | None:
    return None if value is None else decode_text(value)


@dataclass(frozen=True)
class PostgresURL:
    """A postgresql:// store URL split into what asyncpg gets and the pool options."""

    dsn: str
    pool_min: int = 1
    pool_max: int = 10
    statement_cache_size: int = 100
    server_settings: dict[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, url: str) -> PostgresURL:
        """Raise ValueError (with the password hidden) for a malformed URL or option."""
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("postgresql", "postgres"):
            raise ValueError(f"not a PostgreSQL url: {redact_url(url)}")
        query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
        kept: list[tuple[str, str]] = []
        options: dict[str, int] = {}
        for key, value in query:
            if key in POOL_PARAMS:
                try:
                    options[key] = int(value)
                except ValueError:
                    raise ValueError(f"store url option {key}={value!r} must be a whole number") from None
            else:
                kept.append((key, value))
        pool_min = options.get("pool_min", 1)
        pool_max = options.get("pool_max", max(10, pool_min))
        if not 0 <= pool_min <= pool_max or pool_max < 1:
            raise ValueError("store url options need 0 <= pool_min <= pool_max and pool_max >= 1")
        settings = {} if any(k == "application_name" for k, _ in kept) else {"application_name": "hitl-bridge"}
        dsn = urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(kept)))
        return cls(dsn=dsn, pool_min=pool_min, pool_max=pool_max,
                   statement_cache_size=options.get("statement_cache_size", 100), server_settings=settings)


def redact_url(url: str) -> str:
    """The URL with any password (in the user part or the query) replaced by ***."""
    try:
        parts = urllib.parse.urlsplit(url)
        query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
        has_password = parts.password is not None
    except ValueError:
        return "<unparsable url>"
    if not has_password and not any(key in _SECRET_PARAMS for key, _ in query):
        return url
    if has_password:
        userinfo, _, hostinfo = parts.netloc.rpartition("@")
        parts = parts._replace(netloc=f"{userinfo.split(':', 1)[0]}:***@{hostinfo}")
    if any(key in _SECRET_PARAMS for key, _ in query):
        safe = [(k, "***" if k in _SECRET_PARAMS else v) for k, v in query]
        parts = parts._replace(query=urllib.parse.urlencode(safe, safe="*"))
    return urllib.parse.urlunsplit(parts)


_SECRET_PARAMS = frozenset({"password", "sslpassword"})
