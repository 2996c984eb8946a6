"""The events' hash chain: how one event is linked to the one before it (both stores).

Every event row keeps its place in the store's one chain (`seq`), the hash of the event
before it (`prev_hash`) and its own hash: sha256 of the previous hash and the event's
content as stored. SQLite computes it in Python as it inserts (one writer at a time);
PostgreSQL computes the same bytes in a deferred trigger (`hitl_chain_event` in
schema_postgres.sql) that takes the chain head row at commit, so replicas appending to one
database serialise on it only for the instant of their commit. `chain_payload` here and
`hitl_chain_payload` there must stay the same function: `tests/store/test_audit_chain.py`
checks both stores against `bridge.audit.verify`.

Retention keeps the chain verifiable: a pruned request's events become *retired* rows
(content cleared, `seq` and hashes kept) until every event before them is gone, and then
the prefix is deleted and its last hash kept as the chain's checkpoint (`audit_chain.cut_*`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

#: the hash before the first event of a store
GENESIS = "0" * 64
#: the kind of a retired row (a pruned request's event, kept as a link until the cut passes it)
RETIRED = "~retired"
#: an event's `at` as text, both stores (SQLite keeps it so; PostgreSQL formats its timestamptz so)
PG_AT_TEXT = "to_char({col} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"+00:00\"')"


def chain_payload(prev_hash: str, request_id: str, at: str, kind: str, actor: str, data: str) -> str:
    """The text hashed for one event: the previous hash, then each field as `length:value`
    on a line of its own (unambiguous whatever the values hold)."""
    return prev_hash + "".join(f"\n{len(value)}:{value}" for value in (request_id, at, kind, actor, data))


def link(prev_hash: str, request_id: str, at: str, kind: str, actor: str, data: str) -> str:
    """An event's hash, from the previous one and its stored content (hex sha256)."""
    text = chain_payload(prev_hash, request_id, at, kind, actor, data)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class ChainRow:
    """One event as the chain sees it: its stored columns, text as stored (`at` as text)."""

    id: int
    seq: int | None
    prev_hash: str | None
    hash: str | None
    request_id: str
    at: str
    kind: str
    actor: str
    data: str

    @property
    def retired(self) -> bool:
        return self.kind == RETIRED and self.request_id == ""

    def recomputed(self) -> str:
        return link(self.prev_hash or "", self.request_id, self.at, self.kind, self.actor, self.data)


@dataclass(frozen=True)
class ChainState:
    """The chain's head (the last event appended) and its checkpoint (the last event pruned)."""

    seq: int
    hash: str
    cut_seq: int
    cut_hash: str
