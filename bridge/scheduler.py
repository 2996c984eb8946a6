"""Timers (deadlines, reminders, escalation). Placeholder until the scheduler lands."""

from __future__ import annotations

from bridge.models import Request
from bridge.service import BridgeService


class Scheduler:
    def __init__(self, service: BridgeService) -> None:
        self.service = service

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None

    def watch(self, request: Request) -> None:
        """A request was created or changed: (re)arm its timers."""
        return None
