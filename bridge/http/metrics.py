"""Prometheus metrics: gauges computed from the store on scrape (right for several replicas
too), the health registry's state, counters and histograms of this process
(bridge.instruments), build info, and the process's own CPU, memory and file descriptors."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Gauge, Info, PlatformCollector, ProcessCollector, generate_latest
from prometheus_client.core import CounterMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from bridge.health import Status
from bridge.instruments import Instruments
from bridge.models import RequestState
from bridge.ports import source_problems
from bridge.service import BridgeService


class Metrics:
    def __init__(self, service: BridgeService) -> None:
        self.service = service
        self.registry = CollectorRegistry()
        self.requests = Gauge("hitl_requests", "Requests by state", ["state"], registry=self.registry)
        self.outbox_pending = Gauge("hitl_outbox_pending", "Write-backs waiting or retrying",
                                    registry=self.registry)
        self.outbox_dead = Gauge("hitl_outbox_dead", "Write-backs that gave up (dead letters)",
                                 registry=self.registry)
        self.outbox_failing = Gauge("hitl_outbox_failing", "Write-backs that failed at least once",
                                    ["source"], registry=self.registry)
        self.source_problems = Gauge("hitl_source_problems",
                                     "Engine requests a source cannot show right now (GET /v1/sources says why)",
                                     ["source"], registry=self.registry)
        self.long_polls = Gauge("hitl_waiting_long_polls", "Long polls parked on a request now",
                                registry=self.registry)
        self.watch_streams = Gauge("hitl_watch_streams", "Watch streams open now (POST /v1/requests:watch)",
                                   registry=self.registry)
        self.watched = Gauge("hitl_watched_requests", "Requests the watch streams wait on now",
                             registry=self.registry)
        self.extra: list[Any] = []  # callables (registry) -> None for adapter metrics
        for channel in service.channels:  # a channel may count its own work (a Prometheus collector)
            collector = getattr(channel, "collector", None)
            if collector is not None:
                self.registry.register(collector)
        self.instruments = Instruments(self.registry, service.lifecycle)
        self.instruments.known(channels=[c.name for c in service.channels], sources=list(service.sources),
                               routes=[r.name or "" for r in [*service.router.routes, service.router.default]])
        Info("hitl_build", "The running build", registry=self.registry).info(build_info())
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        self.registry.register(GroupCommits(service.store))
        self.ready = Gauge("hitl_ready", "1 when /readyz answers 200 (no part failing)", registry=self.registry)
        self.health = Gauge("hitl_health_status", "1 for each part's current status (ok, degraded, failing)",
                            ["component", "status"], registry=self.registry)

    async def render(self) -> tuple[bytes, str]:
        counts = await self.service.store.count_by_state()
        for state in RequestState:
            self.requests.labels(state=state.value).set(counts.get(state.value, 0))
        outbox = await self.service.store.outbox_stats()  # counted by the database: no row comes back
        self.outbox_pending.set(outbox.pending)
        self.outbox_dead.set(outbox.dead)
        self.outbox_failing.clear()
        for source, n in outbox.failing.items():
            self.outbox_failing.labels(source=source).set(n)
        for name, engine_source in self.service.sources.items():
            self.source_problems.labels(source=name).set(len(source_problems(engine_source)))
        self.long_polls.set(self.service.changes.waiting_count())
        self.watch_streams.set(self.service.changes.stream_count())
        self.watched.set(self.service.changes.watched_count())
        ready, checks = await self.service.health.ready()
        self.ready.set(1 if ready else 0)
        self.health.clear()
        for check in checks:
            for status in Status:
                self.health.labels(component=check.component, status=status.value).set(
                    1 if check.status is status else 0)
        for hook in self.extra:
            hook(self.registry)
        return generate_latest(self.registry), CONTENT_TYPE_LATEST


class GroupCommits:
    """`hitl_store_commits_total` and `hitl_store_writes_total`: how many writes a commit of a
    group-committing store (SQLite) holds on average (nothing for a store that does not count)."""

    def __init__(self, store: object) -> None:
        self.store = store

    def collect(self) -> Iterator[CounterMetricFamily]:
        commits, writes = getattr(self.store, "commits", None), getattr(self.store, "writes", None)
        if isinstance(commits, int) and isinstance(writes, int):
            yield CounterMetricFamily("hitl_store_commits", "Write transactions committed", value=commits)
            yield CounterMetricFamily("hitl_store_writes", "Writes committed (one transaction holds "
                                      "every write queued while the last one ran)", value=writes)


def build_info() -> dict[str, str]:
    """`hitl_build_info{version, python}`: the installed distribution's version."""
    import platform
    from importlib.metadata import PackageNotFoundError, version

    try:
        installed = version("hitl-bridge")
    except PackageNotFoundError:
        installed = "unknown"
    return {"version": installed, "python": platform.python_version()}
