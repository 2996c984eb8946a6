"""`hitl-bridge mcp`: the MCP server over stdio, asking a running bridge over its HTTP API.

An agent's MCP config starts it (`"command": "hitl-bridge", "args": ["mcp"]`); it finds the
bridge like every client does (`--url` / `HITL_BRIDGE_URL`, `--token` / `HITL_BRIDGE_TOKEN`).
stdout is the MCP channel: everything else goes to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
from typing import Any

from pydantic import ValidationError

from adapters.mcp.settings import McpSettings
from bridge.durations import parse_duration

log = logging.getLogger("hitl_bridge.mcp")

STOP_WITHIN_S = 6.0  # after SIGTERM: time for waiting calls to cancel their requests (5 s each at most)
HELP = "serve MCP over stdio (Claude Code, Cursor, ...): agents ask people through a running bridge"


def add_command(sub: Any) -> None:
    """Register `mcp` on the CLI's subparsers."""
    p = sub.add_parser("mcp", help=HELP, description=HELP)
    p.add_argument("--url", help="the bridge's URL (default: $HITL_BRIDGE_URL, else http://127.0.0.1:8787)")
    p.add_argument("--token", help="one of the bridge's http.api_tokens (default: $HITL_BRIDGE_TOKEN)")
    p.add_argument("--label", action="append", default=[], metavar="KEY=VALUE",
                   help="a label on every request (routes match it); repeat for more")
    p.add_argument("--hold", metavar="DURATION",
                   help="return a still-open request's id for await_answer after this long (e.g. 50s; "
                        "default: wait until answered)")
    p.add_argument("--progress-every", default="15s", metavar="DURATION",
                   help="progress notification interval while a call waits (default 15s)")
    p.add_argument("--give-up-after", default="5m", metavar="DURATION",
                   help="how long a call keeps trying while the bridge does not answer (a restart; "
                        "default 5m); then it says so, and the request stays open")
    p.add_argument("--edit-arguments", action="append", nargs="?", const="*", default=[], metavar="GLOB",
                   help="let the person edit a tool call's arguments before allowing it (all tools, or "
                        "those whose name matches GLOB; repeat for more)")
    p.set_defaults(func=cmd_mcp, without_config=True)  # it asks a running bridge: no config file is read


def settings_from(args: argparse.Namespace) -> McpSettings:
    labels: dict[str, str] = {}
    for item in args.label:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--label {item!r}: use KEY=VALUE")
        labels[key.strip()] = value
    section: dict[str, Any] = {"labels": labels, "progress_every": args.progress_every,
                               "edit_arguments": list(args.edit_arguments) or False}
    if args.hold:
        section["hold"] = args.hold
    return McpSettings.model_validate(section)


async def cmd_mcp(args: argparse.Namespace, _settings: object = None) -> int:
    from hitl_bridge_client import AsyncClient  # the SDK loads only for this verb, not for every CLI call

    from adapters.mcp.calls import Calls
    from adapters.mcp.links import RemoteLink
    from adapters.mcp.server import build_server

    try:
        settings = settings_from(args)
        give_up_after = parse_duration(args.give_up_after).total_seconds()
        # a tool call waits for the bridge for --give-up-after, creating its request too
        client = AsyncClient(args.url, token=args.token, unavailable_after=give_up_after,
                             create_unavailable_after=give_up_after)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        print(f"hitl-bridge mcp: {where}: {err['msg'].removeprefix('Value error, ')}", file=sys.stderr)
        return 2
    except ValueError as exc:
        print(f"hitl-bridge mcp: {exc}", file=sys.stderr)
        return 2
    logging.getLogger("mcp").setLevel(logging.WARNING)  # the SDK logs every message at INFO
    asyncio.create_task(probe(args.url, args.token))  # noqa: RUF006 - a note on stderr, nothing waits on it
    link = RemoteLink(client)
    calls = Calls(link, settings)
    server = build_server(calls)
    serving = asyncio.create_task(server.run_stdio_async())
    signalled = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, signalled.set)
    stopper = asyncio.create_task(signalled.wait())
    await asyncio.wait({serving, stopper}, return_when=asyncio.FIRST_COMPLETED)
    if signalled.is_set():
        # stop like a closed stdin: waiting calls cancel their requests; then exit even though
        # the SDK's stdin reader (a thread blocked in read()) cannot be stopped
        serving.cancel()
        await asyncio.sleep(0)  # let the cancellation reach the waiting calls
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(calls.idle(), STOP_WITHIN_S)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(link.aclose(), 1)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    stopper.cancel()
    await link.aclose()
    serving.result()  # a crash of the server is not hidden
    return 0


async def probe(url: str | None, token: str | None) -> None:
    """Say on stderr (the MCP client's log) when the bridge does not answer or refuses the
    token; calls still wait for it (it may be starting), but nobody has to guess why."""
    from hitl_bridge_client import AsyncClient, BridgeError, Unauthorized

    async with AsyncClient(url, token=token, unavailable_after=0) as client:
        try:
            await client.sources()
        except Unauthorized as exc:
            log.warning("hitl-bridge mcp: %s: set --token or HITL_BRIDGE_TOKEN to one of its http.api_tokens", exc)
        except BridgeError as exc:
            log.warning("hitl-bridge mcp: no bridge answers at %s yet (%s); calls wait for it (--give-up-after)",
                        client.base_url, exc)
        else:
            log.info("hitl-bridge mcp: asking people through %s", client.base_url)
