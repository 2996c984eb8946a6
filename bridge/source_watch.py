"""Run one source's loop, restart it when it crashes, and report `source:<name>` to the health
registry.

What the states mean (docs/operations.md says the same):

- **failing** (not ready): the run loop has kept crashing for `stall_after` (60 s). The
  source is stalled: nothing new comes in from its engine, and only a fix (config, code,
  engine) or a restart helps.
- **degraded** (shown, still ready): the loop crashed and is being restarted; or the source
  reports problems — its engine unreachable or refusing, items it cannot show (the same
  list as `GET /v1/sources`). The bridge itself works: taking every replica out of the
  load balancer because one engine is down would stop answers for everyone else.
- **ok**: running (or, for sources that only receive over HTTP, done starting).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from bridge.health import Check, Health, Status
from bridge.ports import RequestSink, Source, source_problems, source_trouble

log = logging.getLogger("hitl_bridge")

STALL_AFTER_S = 60.0  # crashing for this long: failing
HEALTHY_AFTER_S = 30.0  # running this long after a restart: the crash streak is over
FIRST_RESTART_S = 1.0
MAX_RESTART_S = 60.0


class SourceWatch:
    def __init__(self, source: Source, health: Health, *, stall_after_s: float = STALL_AFTER_S,
                 healthy_after_s: float = HEALTHY_AFTER_S, first_restart_s: float = FIRST_RESTART_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.source = source
        self.component = f"source:{source.name}"
        self.stall_after_s = stall_after_s
        self.healthy_after_s = healthy_after_s
        self.first_restart_s = first_restart_s
        self.clock = clock
        self.crashes = 0  # in the current streak
        self.first_crash_at = 0.0
        self.last_error = ""
        self.running_since: float | None = None
        self.returned = False
        self.restart_in = 0.0
        health.probe(self.component, self.probe)

    async def run(self, sink: RequestSink) -> None:
        """The source's `run`, restarted with backoff after each crash, until cancelled."""
        delay = self.first_restart_s
        while True:
            self.running_since = self.clock()
            try:
                await self.source.run(sink)
                self.returned = True
                return
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self._crashed(exc, delay)
                log.exception("source %s crashed; restarting in %.0fs", self.source.name, delay,
                              extra={"event": "source_crashed", "source": self.source.name})
            self.running_since = None
            await asyncio.sleep(delay)
            delay = min(delay * 2, MAX_RESTART_S)

    def _crashed(self, exc: Exception, delay: float) -> None:
        now = self.clock()
        if self.running_since is not None and now - self.running_since >= self.healthy_after_s:
            self.crashes = 0  # it ran fine for a while: a new streak
        if self.crashes == 0:
            self.first_crash_at = now
        self.crashes += 1
        self.last_error = f"{type(exc).__name__}: {exc}"[:300]
        self.restart_in = delay

    async def probe(self) -> Check:
        now = self.clock()
        running_well = self.running_since is not None and now - self.running_since >= self.healthy_after_s
        if self.crashes and running_well:
            self.crashes = 0
        if self.crashes:
            crashing_for = now - self.first_crash_at
            if crashing_for >= self.stall_after_s:
                return Check(self.component, Status.failing,
                             f"stalled: its run loop crashed {self.crashes} time(s) in {crashing_for:.0f}s "
                             f"(last: {self.last_error})",
                             "read the traceback in the log (\"source … crashed\"), fix the source's config or "
                             "its engine; it keeps restarting on its own")
            return Check(self.component, Status.degraded,
                         f"its run loop crashed ({self.last_error}); restarting in {self.restart_in:.0f}s",
                         "read the traceback in the log")
        trouble = source_trouble(self.source)  # the source's own word (a missing root): never "running" over it
        if trouble is not None:
            return Check(self.component, Status.degraded, *trouble)
        problems = source_problems(self.source)
        if problems:
            where, why = next(iter(problems.items()))
            more = f" (and {len(problems) - 1} more: GET /v1/sources)" if len(problems) > 1 else ""
            return Check(self.component, Status.degraded, f"{len(problems)} problem(s): {where}: {why}{more}",
                         "GET /v1/sources lists each one with its reason")
        return Check(self.component, Status.ok, "receives requests over HTTP" if self.returned else "running")
