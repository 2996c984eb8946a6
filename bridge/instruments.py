"""Counters and histograms fed by the request lifecycle (bridge.lifecycle) and the timers.

Counted in this process (Prometheus sums the replicas): requests created by source and
route, answers by channel, posts by channel and result, deliveries by source and result,
timers fired by kind, config reloads; timed: time to answer by route, answer → delivered
by source, timer lateness. Label values come from the config (routes, sources, channels)
or fixed sets, so the series stay few.
"""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics

from bridge.lifecycle import Lifecycle, Step

disable_created_metrics()  # no `*_created` series next to each counter: half the series, nothing lost

TIME_TO_ANSWER_BUCKETS = (5, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 28800, 86400)
DELIVERY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600)
LATENESS_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 60)
TIMER_KINDS = ("deadline", "reminder", "escalation")
DELIVERY_RESULTS = ("delivered", "retry", "dead")
POST_RESULTS = ("ok", "error")


class Instruments:
    def __init__(self, registry: CollectorRegistry, lifecycle: Lifecycle) -> None:
        self.created = Counter("hitl_requests_created", "Requests taken in, by source and route",
                               ["source", "route"], registry=registry)
        self.answers = Counter("hitl_answers", "Final answers recorded, by the channel they came through "
                               "(a channel's name, api, cli, timeout)", ["channel"], registry=registry)
        self.posts = Counter("hitl_posts", "Copies of requests posted to people, by channel and result (ok, error)",
                             ["channel", "result"], registry=registry)
        self.deliveries = Counter("hitl_deliveries", "Write-back attempts, by source and result "
                                  "(delivered, retry, dead)", ["source", "result"], registry=registry)
        self.timers = Counter("hitl_timers_fired", "Timers applied, by kind (deadline, reminder, escalation)",
                              ["kind"], registry=registry)
        self.reloads = Counter("hitl_config_reloads", "Config reloads (SIGHUP), by result (ok, refused, "
                               "no_rules: refused because it would drop every rule)",
                               ["result"], registry=registry)
        self.reload_ok = Gauge("hitl_config_last_reload_successful",
                               "1 when the last reload was applied (or none was tried), 0 when it was refused",
                               registry=registry)
        self.reload_ok.set(1)
        self.auto_decisions = Counter("hitl_auto_decisions", "Verdicts of policies: and standing approvals, by "
                                      "effect (allow, deny: answered without a person; ask: a matching rule "
                                      "asked or an automatic answer was refused; error: a person was asked) "
                                      "and rule (its name, `grant`, or - )", ["effect", "rule"], registry=registry)
        self.pruned = Counter("hitl_requests_pruned", "Closed requests removed past store.retain_closed "
                              "(with their events, copies, votes and outbox entries)", registry=registry)
        self.time_to_answer = Histogram("hitl_time_to_answer_seconds", "From created to the final answer "
                                        "by a person (not by timeout), by route", ["route"],
                                        buckets=TIME_TO_ANSWER_BUCKETS, registry=registry)
        self.answer_to_delivered = Histogram("hitl_answer_to_delivered_seconds", "From the final answer to "
                                             "the engine having it, by source", ["source"],
                                             buckets=DELIVERY_BUCKETS, registry=registry)
        self.lateness = Histogram("hitl_timer_lateness_seconds", "How late a timer was applied after its "
                                  "instant", buckets=LATENESS_BUCKETS, registry=registry)
        for result in ("ok", "refused", "no_rules"):
            self.reloads.labels(result=result)
        for kind in TIMER_KINDS:
            self.timers.labels(kind=kind)
        lifecycle.listeners.append(self.on_step)

    def known(self, *, channels: Iterable[str], sources: Iterable[str], routes: Iterable[str]) -> None:
        """Start the series of the configured channels, sources and routes at 0, so that
        `increase()` and alerts see the first event."""
        routes = list(routes)
        for via in ("api", "cli", "timeout"):
            self.answers.labels(channel=via)
        for channel in channels:
            self.answers.labels(channel=channel)
            for result in POST_RESULTS:
                self.posts.labels(channel=channel, result=result)
        for source in sources:
            for result in DELIVERY_RESULTS:
                self.deliveries.labels(source=source, result=result)
            for route in routes:
                self.created.labels(source=source, route=route)

    def on_step(self, step: Step) -> None:
        f, request = step.fields, step.request
        if step.kind == "created":
            self.created.labels(source=request.source, route=request.route).inc()
        elif step.kind in ("posted", "post_failed"):
            self.posts.labels(channel=f["channel"], result="ok" if step.kind == "posted" else "error").inc()
        elif step.kind in ("answered", "expired") and f.get("via"):
            self.answers.labels(channel=f["via"]).inc()
            if step.kind == "answered" and f.get("seconds") is not None:
                self.time_to_answer.labels(route=request.route).observe(max(0.0, f["seconds"]))
        elif step.kind == "delivered":
            self.deliveries.labels(source=request.source, result="delivered").inc()
            if f.get("seconds") is not None:
                self.answer_to_delivered.labels(source=request.source).observe(max(0.0, f["seconds"]))
        elif step.kind == "delivery_retry":
            self.deliveries.labels(source=request.source, result="retry").inc()
        elif step.kind == "delivery_failed":
            self.deliveries.labels(source=request.source, result="dead").inc()
        elif step.kind == "timer":
            self.timers.labels(kind=f["timer"]).inc()
        elif step.kind == "auto_decided":
            self.auto_decisions.labels(effect=f["effect"], rule=f["rule"]).inc()

    def timer_late(self, seconds: float) -> None:
        self.lateness.observe(max(0.0, seconds))

    def config_reloaded(self, ok: bool, *, no_rules: bool = False) -> None:
        self.reloads.labels(result="ok" if ok else "no_rules" if no_rules else "refused").inc()
        self.reload_ok.set(1 if ok else 0)
