"""The Teams channel's own figures on `/metrics` (a Prometheus collector the daemon
registers for a channel that has one): inbound activities refused, by reason, and Bot
Connector answers of 429."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

from adapters.teams.auth import ActivityAuth
from adapters.teams.connector import Connector

REASONS = ("no_token", "no_service_url", "expired", "audience", "issuer", "service_url", "invalid",
           "keys_unreachable", "too_large", "not_an_activity")


class TeamsFigures(Collector):
    def __init__(self, auth: ActivityAuth, connector: Connector) -> None:
        self.auth = auth
        self.connector = connector

    def collect(self) -> Iterator[Any]:
        refused = CounterMetricFamily("hitl_teams_activities_refused",
                                      "Inbound Teams activities refused before they were read, by reason",
                                      labels=["reason"])
        for reason in sorted(set(REASONS) | set(self.auth.refused)):
            refused.add_metric([reason], self.auth.refused.get(reason, 0))
        yield refused
        yield CounterMetricFamily("hitl_teams_throttled", "Bot Connector calls answered 429 (then retried)",
                                  value=self.connector.throttled)
