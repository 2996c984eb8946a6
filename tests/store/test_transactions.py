"""The store's multi-step writes, written once (`bridge.store.transactions`), driven over a
recording set of steps: which steps each one asks for, in which order, and what it returns.
The same transactions run on SQLite and PostgreSQL in the contract tests (test_requests.py...)."""

from __future__ import annotations

from typing import Any

from bridge.models import Request, RequestState
from bridge.store import transactions as txn
from tests.store.helpers import at, make_answer, make_event, make_request

OPEN = frozenset({RequestState.pending, RequestState.posted})


class Recorded:
    """Steps that answer from one stored request and record what they were asked."""

    def __init__(self, stored: Request | None) -> None:
        self.stored = stored
        self.asked: list[txn.Step] = []

    def _note(self, step: txn.Step, result: Any = None) -> Any:
        self.asked.append(step)
        return result

    def locked(self, step: txn.Locked) -> Request | None:
        return self._note(step, None if self.stored is None else self.stored.model_copy(deep=True))

    def save(self, step: txn.Save) -> None:
        self._note(step)

    def add_events(self, step: txn.AddEvents) -> None:
        self._note(step)

    def outbox_done(self, step: txn.OutboxDone) -> None:
        self._note(step)

    def still_stuck(self, step: txn.StillStuck) -> bool:
        return bool(self._note(step, True))

    def prunable(self, step: txn.Prunable) -> list[str]:
        return list(self._note(step, ["r_1", "r_2"]))

    def forget(self, step: txn.Forget) -> None:
        self._note(step)

    span = txn.ChainSpan(head=10, cut=2, first_kept=6)

    def retire(self, step: txn.Retire) -> None:
        self._note(step)

    def chain_ends(self, step: txn.ChainEnds) -> txn.ChainSpan:
        return self._note(step, self.span)

    def hash_at(self, step: txn.HashAt) -> str | None:
        return self._note(step, f"hash-{step.seq}" if step.seq != 7 else None)

    def cut(self, step: txn.Cut) -> None:
        self._note(step)


class Awaited(Recorded):
    """The same steps, asynchronous (as PostgreSQL's)."""

    async def locked(self, step: txn.Locked) -> Request | None:  # type: ignore[override]
        return super().locked(step)

    async def save(self, step: txn.Save) -> None:  # type: ignore[override]
        super().save(step)


def test_a_transition_from_another_state_locks_and_writes_nothing() -> None:
    steps = Recorded(make_request(state=RequestState.cancelled))
    result = txn.drive(txn.transition("r_1", OPEN, RequestState.answered, event=None, answer=make_answer(),
                                      error=None, enqueue="answered", now=at(60)), steps)
    assert result is None
    assert [type(s) for s in steps.asked] == [txn.Locked]


def test_a_transition_saves_the_closed_request_with_its_event_and_outbox_entry_in_one_step() -> None:
    request = make_request(next_reminder_at=at(600))
    steps = Recorded(request)
    event = make_event(request.id, "answered", when=60)
    result = txn.drive(txn.transition(request.id, OPEN, RequestState.answered, event=event, answer=make_answer(),
                                      error=None, enqueue="answered", now=at(60)), steps)
    assert result is not None and result.state is RequestState.answered and result.next_reminder_at is None
    save = steps.asked[-1]
    assert isinstance(save, txn.Save) and save.events == (event,) and save.enqueue == "answered"
    assert save.request.updated_at == at(60)  # the outbox entry is due then


def test_a_delivery_marks_the_entry_done_and_keeps_its_event_even_when_the_request_is_gone() -> None:
    steps = Recorded(None)
    event = make_event("r_gone", "delivered", when=90)
    assert txn.drive(txn.finish_delivery(7, "r_gone", event=event, now=at(90), answer=None), steps) is None
    assert [type(s) for s in steps.asked] == [txn.OutboxDone, txn.AddEvents, txn.Locked]


def test_a_delivery_of_an_unanswered_request_moves_nothing() -> None:
    steps = Recorded(make_request(state=RequestState.expired))
    assert txn.drive(txn.finish_delivery(7, "r_1", event=make_event("r_1", "delivered"), now=at(90),
                                         answer=None), steps) is None
    assert not any(isinstance(s, txn.Save) for s in steps.asked)


def test_a_claim_that_no_longer_holds_changes_nothing() -> None:
    steps = Recorded(make_request(escalation_level=1))
    assert txn.drive(txn.update("r_1", now=at(5), expect={"escalation_level": 0}, fields={"escalation_level": 2}),
                     steps) is None
    assert [type(s) for s in steps.asked] == [txn.Locked]


def test_pruning_forgets_what_it_found_and_counts_it() -> None:
    steps = Recorded(None)
    assert txn.drive(txn.prune(at(0), 10), steps) == 2
    retire, forget = steps.asked[1:3]
    assert isinstance(forget, txn.Forget) and list(forget.request_ids) == ["r_1", "r_2"]
    assert isinstance(retire, txn.Retire) and list(retire.request_ids) == ["r_1", "r_2"]
    assert steps.asked[-1] == txn.Cut(after=2, upto=5, digest="hash-5")  # up to the first event still kept


def test_the_chain_is_cut_only_past_its_checkpoint_and_never_over_a_gap() -> None:
    steps = Recorded(None)
    for span, last in ((txn.ChainSpan(head=10, cut=2, first_kept=None), txn.Cut(2, 10, "hash-10")),  # all retired
                       (txn.ChainSpan(head=10, cut=5, first_kept=6), txn.ChainEnds()),  # nothing to cut
                       (txn.ChainSpan(head=10, cut=2, first_kept=8), txn.HashAt(7))):  # #7 is missing: no cut
        steps.span = span
        txn.drive(txn.cut_chain(), steps)
        assert steps.asked[-1] == last


async def test_asynchronous_steps_drive_the_same_transaction() -> None:
    request = make_request()
    steps = Awaited(request)

    def retarget(found: Request) -> bool:
        found.targets = ["x"]
        return True

    result = await txn.drive_async(txn.modify(request.id, retarget, now=at(30),
                                              events=[make_event(request.id, "edited")]), steps)
    assert result is not None and result.targets == ["x"] and result.updated_at == at(30)
    assert [type(s) for s in steps.asked] == [txn.Locked, txn.Save]
