"""What the inbox's held looks may cost (issue 24).

A live look that carries the version its page last saw (`X-Live-Seen`) is held until
something changes. Two bounds keep many of them cheap:

- **Held looks per session and per client address.** Past `per_session` or `per_address`
  looks held at once, a look is answered at once with 429 (`Retry-After`: the poll
  interval); the page then looks again after its usual interval.
- **So many answers an interval.** A session answers at most `per_session` looks, and an
  address `per_address`, in one interval (`pace_s`, the page's own poll interval: a page
  looks at most once an interval); a look past that waits for the next interval. A client
  that looks again at once, with a stale version or many tabs, cannot make every change
  cost it a render and a response.
- **One render for identical looks.** Looks for the same view, query, version and viewer
  share one render: the first one computes it, the others wait for it and get the same
  result (kept for `share_s`, so looks that wake together at a change all share it).

Counted for /metrics: renders by view, looks held now, looks refused.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Hashable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

T = TypeVar("T")
VIEWS = ("list", "detail")
MAX_REMEMBERED = 10_000  # sessions and addresses remembered before the old ones are forgotten


class LiveLooks(Collector):
    def __init__(self, per_session: int, per_address: int, *, share_s: float = 1.0, pace_s: float = 1.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.per_session = per_session
        self.per_address = per_address
        self.share_s = share_s
        self.pace_s = pace_s
        self._answered: dict[str, tuple[float, int]] = {}  # session or address → (interval start, answered)
        self._clock = clock
        self._held: Counter[str] = Counter()
        self._shared: dict[Hashable, tuple[float, asyncio.Future[Any]]] = {}
        self.renders: Counter[str] = Counter({view: 0 for view in VIEWS})
        self.refused = 0
        self.paced = 0  # looks waiting now for their session's or address's next interval

    # held looks ---------------------------------------------------------------------------
    @staticmethod
    def keys(session: str, address: str) -> tuple[str, str]:
        """What a look is counted under: its session (a digest: it is a credential), its address."""
        return "session:" + _digest(session), "address:" + address

    def until_answerable(self, keys: tuple[str, str]) -> float:
        """0 when a look of `keys` may be answered now (counted), else the seconds until its
        session's and address's next interval, when it may ask again: each answers at most as
        many looks an interval as it may hold (`per_session`, `per_address`)."""
        now = self._clock()
        wait = 0.0
        for key in keys:
            start, used = self._answered.get(key, (float("-inf"), 0))
            if now - start >= self.pace_s:
                self._answered[key] = (now, 0)
            elif used >= (self.per_session if key.startswith("session:") else self.per_address):
                wait = max(wait, start + self.pace_s - now)
        if wait > 0:
            return wait
        for key in keys:
            start, used = self._answered[key]
            self._answered[key] = (start, used + 1)
        if len(self._answered) > MAX_REMEMBERED:  # forget those that have not looked for a while
            for key in [k for k, (at, _) in self._answered.items() if now - at > 10 * self.pace_s]:
                del self._answered[key]
        return 0.0

    @contextmanager
    def slot(self, keys: tuple[str, str]) -> Iterator[bool]:
        """A place for one held look of `keys` (session, address): True while it is held, False
        when the session or the address already holds as many as it may (then answer at once)."""
        if self._held[keys[0]] >= self.per_session or self._held[keys[1]] >= self.per_address:
            self.refused += 1
            yield False
            return
        for key in keys:
            self._held[key] += 1
        try:
            yield True
        finally:
            for key in keys:
                self._held[key] -= 1
                if self._held[key] <= 0:
                    del self._held[key]

    @property
    def held(self) -> int:
        return sum(n for key, n in self._held.items() if key.startswith("session:"))

    # shared renders -----------------------------------------------------------------------
    async def shared(self, view: str, key: Hashable, render: Callable[[], Awaitable[T]]) -> T:
        """`render()`'s result, computed once for every look asking with the same `key`
        within `share_s` (or while the first render still runs)."""
        now = self._clock()
        self._forget_old(now)
        full = (view, key)
        found = self._shared.get(full)
        if found is None:
            task: asyncio.Future[T] = asyncio.ensure_future(self._count(view, render))
            self._shared[full] = (now, task)
            task.add_done_callback(lambda done: self._drop_failed(full, done))
            found = (now, task)
        # shielded: a look whose browser went away does not cancel the render the others wait for
        result: T = await asyncio.shield(found[1])
        return result

    async def _count(self, view: str, render: Callable[[], Awaitable[T]]) -> T:
        self.renders[view] += 1
        return await render()

    def _drop_failed(self, key: Hashable, done: asyncio.Future[Any]) -> None:
        if (done.cancelled() or done.exception() is not None) and self._shared.get(key, (0, None))[1] is done:
            del self._shared[key]

    def _forget_old(self, now: float) -> None:
        old = [k for k, (at, task) in self._shared.items() if task.done() and now - at > self.share_s]
        for key in old:
            del self._shared[key]

    # metrics ------------------------------------------------------------------------------
    def collect(self) -> Iterator[Any]:
        renders = CounterMetricFamily("hitl_inbox_live_renders", "Live inbox fragments rendered, by view "
                                      "(identical looks at the same version share one)", labels=["view"])
        for view in VIEWS:
            renders.add_metric([view], self.renders[view])
        yield renders
        yield GaugeMetricFamily("hitl_inbox_live_held", "Live inbox looks held open now, waiting for a change",
                                value=self.held)
        yield GaugeMetricFamily("hitl_inbox_live_paced", "Live inbox looks waiting for the next interval: "
                                "their session or address had its answers for this one", value=self.paced)
        yield CounterMetricFamily("hitl_inbox_live_refused", "Live inbox looks answered at once (429) because "
                                  "their session or address already held as many as it may", value=self.refused)


def _digest(text: str) -> str:
    """Session keys are credentials (cookies, tokens): keep only a digest of them."""
    return hashlib.sha256(text.encode()).hexdigest()[:32]
