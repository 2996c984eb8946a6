"""`audit export` and `GET /v1/audit`: the record in chain order, a page at a time.

An entry is an event as stored: who acted is the handle the daemon verified (`slack:U…`,
`api:<token name>`, `policy:<rule>`), values of secret questions are already redacted in the
record (`bridge.answering.values.redacted`), and each entry carries its chain hashes so an
export can be checked against a later `audit verify`. Retired rows (pruned requests' links)
are not exported. Pages are cut by chain position (`after`), so any range is read in pages
of bounded size whatever `since` says.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bridge.store.base import Store
from bridge.store.chain import ChainRow
from bridge.store.codec import ts

#: the most entries one page may hold (the API's `limit` is capped to it)
MAX_PAGE = 1000
FIELDS = ("seq", "id", "request_id", "at", "kind", "actor", "data", "prev_hash", "hash")


@dataclass(frozen=True)
class Page:
    entries: list[dict[str, Any]]
    #: the chain position to continue after (None: the end of the chain was reached)
    next_after: int | None


def entry(row: ChainRow) -> dict[str, Any]:
    """One exported event (`data` parsed: it is JSON as stored)."""
    try:
        data: Any = json.loads(row.data)
    except ValueError:
        data = row.data  # not what the bridge wrote: shown as is (verify names it)
    return {"seq": row.seq, "id": row.id, "request_id": row.request_id, "at": row.at, "kind": row.kind,
            "actor": row.actor, "data": data, "prev_hash": row.prev_hash, "hash": row.hash}


async def page(store: Store, *, since: datetime | None = None, until: datetime | None = None,
               after: int = 0, limit: int = MAX_PAGE) -> Page:
    """Up to `limit` rows after chain position `after`, kept when their time is in
    [since, until); the rows skipped by time count against `limit` too (a page costs the same
    whatever the range)."""
    limit = max(1, min(limit, MAX_PAGE))
    low, high = ts(since), ts(until)
    rows = await store.chain_page(after, limit)
    entries = [entry(store.readable(row)) for row in rows
               if not row.retired and (low is None or row.at >= low) and (high is None or row.at < high)]
    last = rows[-1].seq if rows else None
    return Page(entries, last if len(rows) == limit else None)


async def entries(store: Store, *, since: datetime | None = None,
                  until: datetime | None = None) -> AsyncIterator[dict[str, Any]]:
    """Every exported entry in [since, until), page by page."""
    after = 0
    while True:
        found = await page(store, since=since, until=until, after=after)
        for item in found.entries:
            yield item
        if found.next_after is None:
            return
        after = found.next_after


def jsonl(item: dict[str, Any]) -> str:
    return json.dumps(item, ensure_ascii=False, separators=(",", ":"))


def csv_header() -> str:
    return _csv_line(FIELDS)


def csv_line(item: dict[str, Any]) -> str:
    """One CSV record; `data` as its JSON text."""
    return _csv_line(json.dumps(item[f], ensure_ascii=False) if f == "data" else item[f] for f in FIELDS)


def _csv_line(values: Iterable[Any]) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerow(["" if v is None else v for v in values])
    return out.getvalue()


def from_csv(text: str) -> list[dict[str, Any]]:
    """Read an export's CSV back (the inverse of `csv_line`)."""
    out = []
    for record in csv.DictReader(io.StringIO(text)):
        out.append({"seq": int(record["seq"]), "id": int(record["id"]), "request_id": record["request_id"],
                    "at": record["at"], "kind": record["kind"], "actor": record["actor"],
                    "data": json.loads(record["data"]), "prev_hash": record["prev_hash"] or None,
                    "hash": record["hash"] or None})
    return out
