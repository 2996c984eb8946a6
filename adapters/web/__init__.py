"""The web inbox channel (target `web`): requests are shown from the store at /inbox."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from starlette.routing import BaseRoute

from bridge.models import Request
from bridge.ports import BridgeAPI, PostResult
from bridge.registry import AdapterContext


class WebChannel:
    name = "web"
    prefixes = ("web",)

    def __init__(self, section: dict[str, Any], ctx: AdapterContext) -> None:
        self.section = section
        self.bridge: BridgeAPI | None = None

    def owns(self, target: str) -> bool:
        return target == "web" or target.startswith("web:")

    async def start(self, bridge: BridgeAPI) -> None:
        self.bridge = bridge

    async def stop(self) -> None:
        return None

    async def post(self, request: Request, targets: Sequence[str]) -> list[PostResult]:
        return [PostResult(target=t) for t in targets]

    async def update(self, request: Request) -> None:
        return None

    async def remind(self, request: Request, targets: Sequence[str]) -> None:
        return None

    def http_routes(self) -> Sequence[BaseRoute]:
        return []


def build_channel(section: dict[str, Any], ctx: AdapterContext) -> WebChannel:
    return WebChannel(section, ctx)
