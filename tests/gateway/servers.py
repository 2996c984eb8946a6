"""The MCP servers from the npm registry that the gateway tests put behind the gateway
(`@modelcontextprotocol/server-filesystem`, `@modelcontextprotocol/server-everything`, the
exact versions pinned in tests/gateway/servers/package-lock.json), installed once into a
cache outside the checkout. Run `python -m tests.gateway.servers` to install them ahead of
the tests (scripts/test does)."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.engines.mastra_server import BuildFailed, NodeMissing
from tests.npm_cache import installed

APP = Path(__file__).parent / "servers"
FILESYSTEM = "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"
EVERYTHING = "node_modules/@modelcontextprotocol/server-everything/dist/index.js"


def install() -> Path:
    """The folder with both servers' node_modules. Raises NodeMissing or BuildFailed."""
    return installed(APP, "mcp-servers", FILESYSTEM, "the MCP servers the gateway tests guard")


def filesystem(root: Path) -> list[str]:
    """`node …/server-filesystem … <root>`: the command and args for a gateway's `servers:`."""
    return ["node", str(install() / FILESYSTEM), str(root)]


def everything() -> list[str]:
    """`node …/server-everything stdio`."""
    return ["node", str(install() / EVERYTHING), "stdio"]


def main() -> int:
    try:
        print(f"MCP servers: {install()}")
    except NodeMissing as exc:
        print(f"MCP servers: skipped ({exc})")
    except BuildFailed as exc:
        print(f"MCP servers: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
