"""`hitl-bridge gateway`: one agent's gateway over stdio, asking a running bridge over its
HTTP API (as `hitl-bridge mcp` does).

The agent's MCP config starts it instead of the servers it guards:
`"command": "hitl-bridge", "args": ["gateway", "--config", "hitl-bridge.yaml", "--name", "files"]`.
The gateway is the `type: gateway` source named `--name` in that config file (the daemon's
own, so both run the same section; the only one when there is one). stdout is the MCP
channel: everything else goes to stderr.
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Any

from adapters.gateway.settings import GatewaySettings
from bridge.durations import parse_duration
from bridge.errors import ConfigError

log = logging.getLogger("hitl_bridge.gateway")

HELP = "serve a gateway over stdio: an agent's MCP servers behind people and the bridge's rules"


def add_command(sub: Any) -> None:
    """Register `gateway` on the CLI's subparsers."""
    p = sub.add_parser("gateway", help=HELP, description=HELP)
    p.add_argument("--config", metavar="FILE", help="the config file with the `type: gateway` source "
                                                    "(default: $HITL_BRIDGE_CONFIG, else ./hitl-bridge.yaml)")
    p.add_argument("--name", help="which gateway (its source `name`; needed when the file has several)")
    p.add_argument("--url", help="the bridge's URL (default: $HITL_BRIDGE_URL, else http://127.0.0.1:8787)")
    p.add_argument("--token", help="one of the bridge's http.api_tokens (default: $HITL_BRIDGE_TOKEN)")
    p.add_argument("--give-up-after", default="5m", metavar="DURATION",
                   help="how long a call keeps trying while the bridge does not answer (default 5m)")
    p.set_defaults(func=cmd_gateway, without_config=True)  # reads its own --config: stdout stays MCP's


def gateway_section(config: str | None, name: str | None) -> GatewaySettings:
    """The named `type: gateway` source of the config file, validated; ConfigError or
    ValueError saying what is wrong."""
    from bridge.config import load_settings
    from bridge.registry import AdapterContext

    settings = load_settings(config)
    found = [(i, s) for i, s in enumerate(settings.sources) if s.get("type") == "gateway"]
    if name is not None:
        found = [(i, s) for i, s in found if s.get("name", "gateway") == name]
    if len(found) != 1:
        names = ", ".join(repr(s.get("name", "gateway")) for _, s in found) or "none"
        raise ValueError(f"{settings.origin}: pick one gateway with --name (found: {names})" if found else
                         f"{settings.origin}: no `type: gateway` source{f' named {name!r}' if name else ''}")
    index, section = found[0]
    ctx = AdapterContext(settings, store=None, clock=None, key=f"sources[{index}]")  # type: ignore[arg-type]
    return ctx.parse(GatewaySettings, {k: v for k, v in section.items() if k != "type"})


async def cmd_gateway(args: argparse.Namespace, _settings: object = None) -> int:
    import anyio
    from hitl_bridge_client import AsyncClient
    from mcp.server.stdio import stdio_server

    from adapters.gateway.deciders import ApiDecider
    from adapters.gateway.gateway import Gateway
    from bridge.health import Health

    try:
        settings = gateway_section(args.config, args.name)
        give_up_after = parse_duration(args.give_up_after).total_seconds()
    except (ConfigError, ValueError) as exc:
        print(f"hitl-bridge gateway: {exc}", file=sys.stderr)
        return 2
    logging.getLogger("mcp").setLevel(logging.WARNING)  # the SDK logs every message at INFO
    client = AsyncClient(args.url, token=args.token, unavailable_after=give_up_after,
                         create_unavailable_after=give_up_after)
    decider = ApiDecider(client)
    gateway = Gateway(settings, decider, Health())
    log.info("hitl-bridge gateway %s: %d servers, asking people through %s", settings.name,
             len(settings.servers), client.base_url)
    try:
        async with anyio.create_task_group() as tasks, stdio_server() as (read, write):
            gateway.sessions.tasks = tasks
            await gateway.server.run(read, write, gateway.server.create_initialization_options())
            tasks.cancel_scope.cancel()  # stdin closed: the downstream servers stop with us
    finally:
        await decider.aclose()
    return 0
