"""Messages a phone-notification channel sent, by result, on /metrics (Web Push, ntfy):
`hitl_<channel>_messages_total{result="sent|failed|gone"}`."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

RESULTS = ("sent", "failed", "gone")


class SendCounts(Collector):
    def __init__(self, channel: str, help_text: str) -> None:
        self.channel = channel
        self.help = help_text
        self.counts: Counter[str] = Counter()

    def add(self, result: str) -> None:
        self.counts[result] += 1

    def collect(self) -> Iterator[Any]:
        family = CounterMetricFamily(f"hitl_{self.channel}_messages", self.help, labels=["result"])
        for result in RESULTS:
            family.add_metric([result], self.counts[result])
        yield family
