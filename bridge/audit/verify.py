"""`audit verify`: walk a store's hash chain and say where it was changed.

Each row is checked on its own (its hash is the hash of its `prev_hash` and its content:
else it was *edited*) and against the row before it in the chain (its `prev_hash` is that
row's hash: else a row was *deleted* between them, or rows were *reordered*: its
predecessor is elsewhere), and the chain against its head (the last rows *truncated*) and
its checkpoint. Rows with no place in the chain were *inserted* behind the bridge's back.
The walk reads pages (`Store.chain_page`): memory stays flat for any size of store.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass
from enum import StrEnum

from bridge.store.base import Store
from bridge.store.chain import ChainRow, ChainState

PAGE = 1000
#: how many recent hashes the walk remembers to name a reordered row's true predecessor
RECENT = 4096
#: verification stops listing after this many problems (a wiped table is one story, not a million)
MAX_PROBLEMS = 1000


class Tamper(StrEnum):
    edited = "edited"
    deleted = "deleted"
    inserted = "inserted"
    reordered = "reordered"
    truncated = "truncated"


@dataclass(frozen=True)
class Problem:
    """One place where the record is not what the bridge wrote."""

    what: Tamper
    detail: str
    event_id: int | None = None
    seq: int | None = None
    request_id: str | None = None

    def line(self) -> str:
        where = " ".join(part for part in (
            f"event {self.event_id}" if self.event_id is not None else "",
            f"(chain #{self.seq})" if self.seq is not None else "",
            f"of request {self.request_id}" if self.request_id else "",
        ) if part)
        return f"{self.what.value}: {where + ': ' if where else ''}{self.detail}"

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass
class Report:
    """What a walk found: the chain's head and checkpoint, how many rows it checked, the problems."""

    state: ChainState
    checked: int = 0
    problems: list[Problem] | None = None
    complete: bool = True

    @property
    def ok(self) -> bool:
        return not self.problems

    def as_dict(self) -> dict[str, object]:
        return {"ok": self.ok, "checked": self.checked, "head": {"seq": self.state.seq, "hash": self.state.hash},
                "checkpoint": {"seq": self.state.cut_seq, "hash": self.state.cut_hash},
                "problems": [p.as_dict() for p in self.problems or []], "complete": self.complete}


async def rows_of(store: Store, *, page: int = PAGE) -> AsyncIterator[ChainRow]:
    after = (await store.chain_state()).cut_seq
    while True:
        rows = await store.chain_page(after, page)
        for row in rows:
            yield row
        if len(rows) < page:
            return
        after = rows[-1].seq or after


async def verify_store(store: Store) -> Report:
    """Walk the whole chain of `store` (read only)."""
    state = await store.chain_state()
    walk = Walk(state)
    async for row in rows_of(store):
        walk.check(row)
        if walk.full:
            break
    else:
        walk.finish()
    for row in await store.unchained_events(MAX_PROBLEMS):
        walk.add(Problem(Tamper.inserted, "not in the hash chain (written behind the bridge's back)",
                         row.id, None, row.request_id or None))
    return Report(state, walk.checked, walk.problems, complete=not walk.full)


class Walk:
    """The checks, row by row in chain order; pure (no I/O), so tests and exports can use it."""

    def __init__(self, state: ChainState) -> None:
        self.state = state
        self.problems: list[Problem] = []
        self.checked = 0
        self._seq = state.cut_seq
        self._hash = state.cut_hash
        self._recent: OrderedDict[str, tuple[int, int | None]] = OrderedDict()  # hash -> (event id, seq)
        self._orphans: dict[str, int] = {}  # a missing predecessor's hash -> its problem's index, until seen

    @property
    def full(self) -> bool:
        return len(self.problems) >= MAX_PROBLEMS

    def add(self, problem: Problem) -> None:
        if not self.full:
            self.problems.append(problem)

    def check(self, row: ChainRow) -> None:
        self.checked += 1
        seq = row.seq if row.seq is not None else self._seq
        request = row.request_id or None
        if seq <= self._seq:
            self.add(Problem(Tamper.inserted, f"repeats chain position #{seq}", row.id, seq, request))
            return
        if not row.retired and row.recomputed() != row.hash:
            self.add(Problem(Tamper.edited, "its content does not match its hash", row.id, seq, request))
        if row.prev_hash != self._hash:
            self._misplaced(row, seq, request)
        elif seq != self._seq + 1:
            self.add(Problem(Tamper.inserted, f"chain positions #{self._seq + 1}..#{seq - 1} are renumbered",
                             row.id, seq, request))
        self._seq = seq
        self._hash = row.hash or ""
        self._found_later(row, seq)
        self._recent[self._hash] = (row.id, seq)
        if len(self._recent) > RECENT:
            self._recent.popitem(last=False)

    def _misplaced(self, row: ChainRow, seq: int, request: str | None) -> None:
        before = self._recent.get(row.prev_hash or "")
        if before is not None:
            self.add(Problem(Tamper.reordered, f"chained after event {before[0]} (#{before[1]}), stored after "
                             f"chain position #{self._seq}", row.id, seq, request))
        elif seq > self._seq + 1:
            self.add(Problem(Tamper.deleted, f"chain positions #{self._seq + 1}..#{seq - 1} are missing before it",
                             row.id, seq, request))
        else:
            if not self.full:
                self._orphans[row.prev_hash or ""] = len(self.problems)
            self.add(Problem(Tamper.deleted, "the event it was chained after is missing (deleted and renumbered, "
                             "or inserted before it)", row.id, seq, request))

    def _found_later(self, row: ChainRow, seq: int) -> None:
        """A row some earlier row was chained after: that one was moved, not orphaned."""
        index = self._orphans.pop(self._hash, None)
        if index is not None:
            earlier = self.problems[index]
            self.problems[index] = Problem(Tamper.reordered, f"chained after event {row.id} (#{seq}), which is "
                                           "stored after it", earlier.event_id, earlier.seq, earlier.request_id)

    def finish(self) -> None:
        """After the last row: the chain must end where its head says."""
        if self._seq < self.state.seq:
            self.add(Problem(Tamper.truncated, f"the chain ends at #{self._seq} but its head says #{self.state.seq}: "
                             f"the last {self.state.seq - self._seq} event(s) are missing", seq=self._seq + 1))
        elif self._seq == self.state.seq and self._hash != self.state.hash:
            self.add(Problem(Tamper.edited, "the last event's hash is not the chain head's", seq=self._seq))
        elif self._seq > self.state.seq:
            self.add(Problem(Tamper.inserted, f"events after the chain head (#{self.state.seq})",
                             seq=self.state.seq + 1))
