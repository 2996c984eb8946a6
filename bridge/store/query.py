"""A search over stored requests (`Store.find_requests` / `Store.count_requests`), and the
SQL each store builds from it.

Text is matched in the title, the description and the context only: never in the whole
stored body, which also holds the callback secret and sealed answers (a substring search
over those would be an oracle for them). Matching is case-insensitive for ASCII letters in
both stores (PostgreSQL also folds other letters).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from bridge.models import RequestState
from bridge.store.codec import ts

MAX_TEXT = 200
MAX_ENTRIES = 200


@dataclass(frozen=True)
class RequestQuery:
    """Which requests: every field set narrows the result (all of them must hold)."""

    states: tuple[RequestState, ...] = ()
    source: str | None = None
    route: str | None = None
    #: a substring of the title, the description or the context (keys and values)
    text: str | None = None
    #: the request's `responders` holds one of these entries (compared case-insensitively)
    responders_any: tuple[str, ...] = ()
    #: none of these voters has a vote recorded on the request (quorum votes)
    not_voted_by: tuple[str, ...] = ()
    #: a copy went out on this channel (a post recorded as ok)
    posted_on: str | None = None
    #: ... to one of these targets (`telegram:42`); only with `posted_on`
    posted_to: tuple[str, ...] = ()
    #: a keyset cursor: only requests listed after this (created_at, id) in the newest-first order
    before: tuple[datetime, str] | None = None

    def __post_init__(self) -> None:
        if self.text is not None and len(self.text) > MAX_TEXT:
            raise ValueError(f"search text is limited to {MAX_TEXT} characters")
        if len(self.responders_any) > MAX_ENTRIES or len(self.not_voted_by) > MAX_ENTRIES:
            raise ValueError(f"at most {MAX_ENTRIES} responders entries or voters")
        if self.posted_to and not self.posted_on:
            raise ValueError("posted_to needs posted_on (the channel of those targets)")
        if len(self.posted_to) > MAX_ENTRIES:
            raise ValueError(f"at most {MAX_ENTRIES} targets")


def _like(text: str) -> str:
    """A LIKE pattern (escape character backslash) matching `text` anywhere."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _json_inner(text: str) -> str:
    """`text` as it appears inside a JSON string of the stored body (quotes, backslashes
    and control characters escaped the way the body's encoder escapes them)."""
    return json.dumps(text, ensure_ascii=False)[1:-1]


def sqlite_where(query: RequestQuery) -> tuple[list[str], list[Any]]:
    """WHERE terms (joined with AND by the caller) and their `?` arguments, for SQLite."""
    where: list[str] = []
    args: list[Any] = []
    if query.states:
        where.append(f"state IN ({','.join('?' * len(query.states))})")
        args.extend(s.value for s in query.states)
    if query.source:
        where.append("source=?")
        args.append(query.source)
    if query.route:
        where.append("route=?")
        args.append(query.route)
    if query.text:
        # a cheap match on the stored text first; then one parse of the body for the exact
        # check (the three values as a JSON array, matched as JSON text)
        where.append("body LIKE ? ESCAPE '\\' "
                     "AND json_extract(body, '$.title', '$.description', '$.context') LIKE ? ESCAPE '\\'")
        args.extend([_like(_json_inner(query.text))] * 2)
    if query.responders_any:
        entries = sorted({e.lower() for e in query.responders_any})
        where.append("EXISTS (SELECT 1 FROM json_each(requests.body, '$.responders') AS r "
                     f"WHERE lower(r.value) IN ({','.join('?' * len(entries))}))")
        args.extend(entries)
    if query.not_voted_by:
        voters = sorted(set(query.not_voted_by))
        where.append("NOT EXISTS (SELECT 1 FROM votes WHERE votes.request_id = requests.id "
                     f"AND votes.voter IN ({','.join('?' * len(voters))}))")
        args.extend(voters)
    if query.posted_on:
        targets = sorted(set(query.posted_to))
        where.append("EXISTS (SELECT 1 FROM posts WHERE posts.request_id = requests.id AND posts.channel = ? "
                     "AND posts.ok" + (f" AND posts.target IN ({','.join('?' * len(targets))})" if targets else "")
                     + ")")
        args.extend([query.posted_on, *targets])
    if query.before is not None:
        where.append("(created_at, id) < (?, ?)")
        args.extend([ts(query.before[0]), query.before[1]])
    return where, args


_PG_BODY = (r"(CASE WHEN requests.body NOT LIKE '{%' THEN NULL "
            r"WHEN strpos(requests.body, '\u0000') = 0 THEN requests.body::jsonb "
            r"ELSE regexp_replace(requests.body, '(?<!\\)((?:\\\\)*)\\u0000', '\1', 'g')::jsonb END)")


def pg_parsed(expression: str) -> str:
    """A scalar subquery computing `expression` over the body parsed once (as `x`)."""
    return f"(SELECT {expression} FROM (SELECT {_PG_BODY} AS x OFFSET 0) AS parsed)"


def postgres_where(query: RequestQuery, args: list[Any], *, encode: Any = str) -> list[str]:
    """WHERE terms for PostgreSQL; their `$n` arguments are appended to `args`. `encode`
    maps a string to what the store keeps in text columns.

    A cheap match on the stored text comes first; only the rows it lets through have their
    body parsed (once, as `jsonb`) for the exact check, compared as JSON text. The escape
    `\\u0000` (which PostgreSQL refuses) is dropped first, and a body the store had to
    escape (it never starts with `{` then) is skipped rather than failing the whole query."""
    where: list[str] = []

    def arg(value: Any) -> str:
        args.append(value)
        return f"${len(args)}"

    if query.states:
        where.append(f"state = ANY({arg([s.value for s in query.states])}::text[])")
    if query.source:
        where.append(f"source={arg(encode(query.source))}")
    if query.route:
        where.append(f"route={arg(encode(query.route))}")
    if query.text:
        pattern = arg(_like(_json_inner(query.text)))
        exact = pg_parsed("jsonb_build_array(x->'title', x->'description', x->'context')::text")
        where.append(f"requests.body ILIKE {pattern}")
        where.append(f"{exact} ILIKE {pattern}")
    if query.responders_any:
        quoted = sorted({json.dumps(e.lower(), ensure_ascii=False) for e in query.responders_any})
        where.append(pg_parsed(f"EXISTS (SELECT 1 FROM jsonb_array_elements(x->'responders') AS r "
                                f"WHERE jsonb_typeof(r) = 'string' AND lower(r::text) = ANY({arg(quoted)}::text[]))"))
    if query.not_voted_by:
        voters = sorted({encode(v) for v in query.not_voted_by})
        where.append(f"NOT EXISTS (SELECT 1 FROM votes WHERE votes.request_id = requests.id "
                     f"AND votes.voter = ANY({arg(voters)}::text[]))")
    if query.posted_on:
        targets = sorted({encode(t) for t in query.posted_to})
        where.append(f"EXISTS (SELECT 1 FROM posts WHERE posts.request_id = requests.id "
                     f"AND posts.channel = {arg(encode(query.posted_on))} AND posts.ok"
                     + (f" AND posts.target = ANY({arg(targets)}::text[])" if targets else "") + ")")
    if query.before is not None:
        where.append(f"(created_at, id) < ({arg(query.before[0])}::timestamptz, {arg(encode(query.before[1]))}::text)")
    return where


# paging -------------------------------------------------------------------------------------
# A list shows the newest requests first. With states given, each state is read on its own
# along the index (state, created_at, id), `offset + limit` rows at most, and the few rows
# merged: no list sorts every open (or closed) row, however many the store holds. Only the
# ids come back; the page's bodies are loaded afterwards by id.

_NEWEST = "ORDER BY created_at DESC, id DESC"


def is_plain(query: RequestQuery) -> bool:
    """Only states (and voters): the counts kept by the store's triggers answer it."""
    return not (query.source or query.route or query.text or query.responders_any or query.posted_on
                or query.before)


def _is_state(state: str) -> str:
    """A literal term (a state is one of RequestState's names, never caller text)."""
    return f"state='{RequestState(state).value}'"


def _rows_wanted(limit: int, offset: int) -> tuple[int, int, int]:
    limit, offset = min(max(limit, 0), 2**62), min(max(offset, 0), 2**62)
    return limit, offset, min(limit + offset, 2**62)


def sqlite_page(query: RequestQuery, *, limit: int, offset: int) -> tuple[str, list[Any]]:
    """SQL selecting the ids of one page of `query`, newest first (SQLite)."""
    limit, offset, wanted = _rows_wanted(limit, offset)
    where, args = sqlite_where(replace(query, states=()))
    states = sorted({s.value for s in query.states})
    if len(states) <= 1:
        terms = [_is_state(states[0]), *where] if states else where
        sql = "SELECT id FROM requests" + (" WHERE " + " AND ".join(terms) if terms else "")
        return f"{sql} {_NEWEST} LIMIT ? OFFSET ?", [*args, limit, offset]
    parts = [f"SELECT * FROM (SELECT id, created_at FROM requests WHERE "
             f"{' AND '.join([_is_state(s), *where])} {_NEWEST} LIMIT {wanted})" for s in states]
    sql = f"SELECT id FROM ({' UNION ALL '.join(parts)}) {_NEWEST} LIMIT ? OFFSET ?"
    return sql, [*(args * len(states)), limit, offset]


def postgres_page(query: RequestQuery, *, limit: int, offset: int, encode: Any = str) -> tuple[str, list[Any]]:
    """The same for PostgreSQL (`$n` arguments)."""
    limit, offset, wanted = _rows_wanted(limit, offset)
    args: list[Any] = []
    where = postgres_where(replace(query, states=()), args, encode=encode)
    args.extend([limit, offset])
    tail = f"{_NEWEST} LIMIT ${len(args) - 1} OFFSET ${len(args)}"
    states = sorted({s.value for s in query.states})
    if len(states) <= 1:
        terms = [_is_state(states[0]), *where] if states else where
        return "SELECT id FROM requests" + (" WHERE " + " AND ".join(terms) if terms else "") + f" {tail}", args
    parts = [f"(SELECT id, created_at FROM requests WHERE {' AND '.join([_is_state(s), *where])} "
             f"{_NEWEST} LIMIT {wanted})" for s in states]
    return f"SELECT id FROM ({' UNION ALL '.join(parts)}) AS page {tail}", args
