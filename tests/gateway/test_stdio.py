"""`hitl-bridge gateway` over stdio (its own process, as an agent's MCP config starts it),
asking a running daemon over its HTTP API: the same section of the same config file, the
same rules, the same questions."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import yaml
from mcp import Client, StdioServerParameters

from tests.gateway.conftest import AGENT_TOKEN, answer, filesystem_server, gateway_config, node_servers, posted
from tests.harness import running_bridge
from tests.mcp.conftest import HITL_BRIDGE

READS = {"name": "reads", "labels": {"mcp_gateway": "tools"}, "annotations": {"readOnlyHint": True},
         "effect": "allow"}


def stdio_gateway(config: Path, url: str, *more: str) -> StdioServerParameters:
    return StdioServerParameters(command=HITL_BRIDGE, args=["gateway", "--config", str(config), "--url", url,
                                                            "--token", AGENT_TOKEN, *more])


async def test_the_stdio_gateway_asks_the_daemon_and_its_rules(tmp_path: Path) -> None:
    node_servers()
    files = tmp_path / "files"
    files.mkdir()
    (files / "a.txt").write_text("read through stdio")
    config = gateway_config(filesystem_server(files), extra={"policies": [READS]})
    file = tmp_path / "hitl-bridge.yaml"
    file.write_text(yaml.safe_dump({**config, "store": {"url": f"sqlite:///{tmp_path}/other.db"}}))
    async with running_bridge(tmp_path, config) as bridge, \
            Client(stdio_gateway(file, bridge.base_url, "--name", "tools")) as client:
        read = await client.call_tool("read_text_file", {"path": str(files / "a.txt")})
        assert not read.is_error and read.content[0].text == "read through stdio"  # type: ignore[union-attr]
        writing = asyncio.create_task(client.call_tool("write_file", {"path": str(files / "b.txt"),
                                                                      "content": "b"}))
        [request] = await posted(bridge)
        assert request["engine"] == "mcp-gateway" and request["annotations"]["destructiveHint"] is True
        assert request["created_by"] == "api:agent"
        await answer(bridge, request["id"], {"approve": "yes"})
        assert not (await writing).is_error and (files / "b.txt").read_text() == "b"


async def test_a_bad_config_is_a_clear_error_on_stderr(tmp_path: Path) -> None:
    cases: list[tuple[dict[str, Any], str]] = [
        ({"sources": [{"type": "webhook"}]}, "no `type: gateway` source"),
        ({"sources": [{"type": "gateway", "name": "a", "servers": [{"name": "x", "command": "c", "url": "http://h"}]}]},
         "either `command` (stdio) or `url`"),
        ({"sources": [{"type": "gateway", "servers": [{"name": "x", "command": "c", "headers": {"a": "b"}}]}]},
         "`headers` are for a `url`"),
        ({"sources": [{"type": "gateway", "servers": [{"name": "x", "command": "c"}, {"name": "x", "url": "http://h"}]}]},
         "two servers are named 'x'"),
        ({"sources": [{"type": "gateway", "servers": []}]}, "servers"),
        ({"sources": [{"type": "gateway", "servers": [{"name": "Bad Name!", "command": "c"}]}]}, "servers.0.name"),
        ({"sources": [{"type": "gateway", "labels": {"mcp_server": "x"}, "servers": [{"name": "x", "command": "c"}]}]},
         "set by the gateway"),
        ({"sources": [{"type": "gateway", "name": "a", "servers": [{"name": "x", "command": "c"}]},
                      {"type": "gateway", "name": "b", "servers": [{"name": "x", "command": "c"}]}]},
         "pick one gateway with --name"),
    ]
    for config, expected in cases:
        file = tmp_path / "bad.yaml"
        file.write_text(yaml.safe_dump(config))
        done = await asyncio.create_subprocess_exec(HITL_BRIDGE, "gateway", "--config", str(file),
                                                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await done.communicate()
        assert done.returncode == 2, (config, err)
        assert expected in err.decode(), (expected, err.decode())
        assert out == b""  # stdout is the MCP channel: nothing else is written there

