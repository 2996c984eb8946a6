"""Gateway tests: the real `mcp` client → the gateway (`/mcp/<name>` in a real daemon, or
`hitl-bridge gateway` over stdio) → real MCP servers (from the npm registry, and Python
servers from the SDK); people answer through the API, the Slack fake and the web inbox."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.session import ElicitationFnT
from mcp.client.streamable_http import streamable_http_client

from bridge.daemon import Daemon
from tests.engines.mastra_server import NodeMissing
from tests.gateway import servers
from tests.harness import merge, wait_for
from tests.mcp.conftest import AGENT_TOKEN, OPS_TOKEN

__all__ = ["AGENT_TOKEN", "OPS_TOKEN"]


def node_servers() -> Path:
    """The npm servers' folder (skips the test without node and npm)."""
    try:
        return servers.install()
    except NodeMissing as exc:
        pytest.skip(str(exc))


def gateway_config(*gateway_servers: dict[str, Any], name: str = "tools", extra: dict[str, Any] | None = None,
                   **gateway: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "sources": [{"type": "webhook"}, {"type": "gateway", "name": name, "servers": list(gateway_servers),
                                          **gateway}],
        "http": {"api_tokens": {"agent": AGENT_TOKEN, "ops": OPS_TOKEN}},
    }
    return merge(base, extra or {})


def filesystem_server(root: Path, **extra: Any) -> dict[str, Any]:
    command, *args = servers.filesystem(root)
    return {"name": "fs", "command": command, "args": args, **extra}


def everything_server(**extra: Any) -> dict[str, Any]:
    command, *args = servers.everything()
    return {"name": "everything", "command": command, "args": args, **extra}


@asynccontextmanager
async def agent(bridge: Daemon, name: str = "tools", token: str = AGENT_TOKEN,
                elicitation: ElicitationFnT | None = None, mode: str = "auto") -> AsyncIterator[Client]:
    """The agent's MCP client, talking to `/mcp/<name>` (`mode="legacy"`: a session, with
    the initialize handshake)."""
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300)) as http, \
            Client(streamable_http_client(f"{bridge.base_url}/mcp/{name}", http_client=http),
                   elicitation_callback=elicitation, mode=mode) as client:
        yield client


async def posted(bridge: Daemon, count: int = 1) -> list[dict[str, Any]]:
    """The requests waiting for a person (waits until there are `count`)."""
    async def found() -> list[dict[str, Any]]:
        async with httpx.AsyncClient(base_url=bridge.base_url,
                                     headers={"Authorization": f"Bearer {OPS_TOKEN}"}) as http:
            listed: list[dict[str, Any]] = (await http.get("/v1/requests", params={"state": "posted"})).json()[
                "requests"]
            return listed if len(listed) >= count else []
    result: list[dict[str, Any]] = await wait_for(found, 20)
    return result


async def answer(bridge: Daemon, request_id: str, values: dict[str, Any], reason: str | None = None
                 ) -> httpx.Response:
    body: dict[str, Any] = {"values": values}
    if reason:
        body["reason"] = reason
    async with httpx.AsyncClient(base_url=bridge.base_url, headers={"Authorization": f"Bearer {OPS_TOKEN}"}) as http:
        return await http.post(f"/v1/requests/{request_id}/answer", json=body)
