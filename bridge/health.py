"""One place for the daemon's health: the store, each channel and each source report here,
and `/readyz`, `doctor` and `/metrics` all read it (DESIGN §8).

A part *reports* its state when it learns something (a refused token, a store that cannot
write, a source that stalls), or registers a *probe* that is run when someone asks. A
`failing` part makes the daemon not ready; a `degraded` one is shown but does not (one
unreadable mailbox must not take the whole bridge out of a load balancer).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import StrEnum

log = logging.getLogger("hitl_bridge.health")

PROBE_TIMEOUT_S = 2.0


class Status(StrEnum):
    ok = "ok"
    degraded = "degraded"  # shown (doctor, /readyz body, metrics), still ready
    failing = "failing"  # not ready: people cannot be reached or answers cannot be kept


@dataclass(frozen=True)
class Check:
    """The state of one part: `component` is `store`, `channel:slack`, `source:delta`..."""

    component: str
    status: Status
    summary: str = ""
    fix: str = ""  # what the operator should do, when something is wrong
    since: float = field(default_factory=time.time)

    @property
    def ok(self) -> bool:
        return self.status is Status.ok

    def as_dict(self) -> dict[str, str]:
        out = {"component": self.component, "status": self.status.value, "summary": self.summary}
        if self.fix:
            out["fix"] = self.fix
        return out


Probe = Callable[[], Awaitable[Check]]


class Health:
    """The registry. Reports are kept until replaced; probes run on every `snapshot()`."""

    def __init__(self) -> None:
        self._reports: dict[str, Check] = {}
        self._probes: dict[str, Probe] = {}

    # reporting ------------------------------------------------------------------------
    def report(self, component: str, status: Status, summary: str = "", fix: str = "") -> None:
        """Record `component`'s state; log when it changes (an error once on failing, a
        warning on degraded, info on recovery), never on every repeat."""
        before = self._reports.get(component)
        if before is not None and before.status is status and before.summary == summary:
            return
        self._reports[component] = Check(component, status, summary, fix)
        if status is Status.failing:
            log.error("%s is failing: %s%s", component, summary, f" (fix: {fix})" if fix else "")
        elif status is Status.degraded:
            log.warning("%s is degraded: %s%s", component, summary, f" (fix: {fix})" if fix else "")
        elif before is not None and before.status is not Status.ok:
            log.info("%s recovered%s", component, f": {summary}" if summary else "")

    def ok(self, component: str, summary: str = "") -> None:
        self.report(component, Status.ok, summary)

    def degraded(self, component: str, summary: str, fix: str = "") -> None:
        self.report(component, Status.degraded, summary, fix)

    def failing(self, component: str, summary: str, fix: str = "") -> None:
        self.report(component, Status.failing, summary, fix)

    def forget(self, component: str) -> None:
        self._reports.pop(component, None)
        self._probes.pop(component, None)

    def probe(self, component: str, check: Probe) -> None:
        """Run `check` whenever the health is read (it must be cheap; it is given
        PROBE_TIMEOUT_S, then counts as failing)."""
        self._probes[component] = check

    # reading --------------------------------------------------------------------------
    async def snapshot(self) -> list[Check]:
        """Every part's state, probes run concurrently; sorted by component."""
        checks = dict(self._reports)
        if self._probes:
            names = list(self._probes)
            results = await asyncio.gather(*(self._run_probe(n) for n in names))
            for name, check in zip(names, results, strict=True):
                self.report(name, check.status, check.summary, check.fix)  # logs the change once
                checks[name] = self._reports[name]
        return [checks[name] for name in sorted(checks)]

    async def _run_probe(self, name: str) -> Check:
        try:
            return await asyncio.wait_for(self._probes[name](), PROBE_TIMEOUT_S)
        except TimeoutError:
            return Check(name, Status.failing, f"did not answer within {PROBE_TIMEOUT_S:.0f}s")
        except Exception as exc:
            return Check(name, Status.failing, f"{type(exc).__name__}: {exc}")

    async def ready(self) -> tuple[bool, list[Check]]:
        checks = await self.snapshot()
        return all(c.status is not Status.failing for c in checks), checks

    def current(self, component: str) -> Check | None:
        """The last report of `component` (probes not run)."""
        return self._reports.get(component)
