"""Python MCP servers (the SDK's `MCPServer`) the gateway tests put behind the gateway:

- `python -m tests.gateway.py_servers stdio`: tools that say which process answers
  (`whoami`), count per process (`count`), exit mid-call (`crash`), never answer (`hang`),
  and say whether a credential reached them (`has_key`, never its value);
- `http_app(key)`: the same over Streamable HTTP, refusing requests without
  `Authorization: Bearer <key>` (served on 127.0.0.1 by the test);
- `python -m tests.gateway.py_servers junk`: a peer that speaks the handshake, then answers
  `tools/call` with a result that is not MCP.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from starlette.types import ASGIApp, Receive, Scope, Send

COUNT = [0]
WAITING = [0, 0]  # calls of wait_for_cancel started, and cancelled


def build(name: str = "py") -> MCPServer:
    server = MCPServer(name)

    @server.tool()
    def whoami() -> str:
        """This server process's id."""
        return str(os.getpid())

    @server.tool()
    def count() -> int:
        """Counts calls made to this process."""
        COUNT[0] += 1
        return COUNT[0]

    @server.tool()
    def crash() -> str:
        """Exits the process mid-call."""
        os._exit(3)

    @server.tool()
    def exit_soon() -> str:
        """Answers, then exits while idle."""
        threading.Timer(0.2, os._exit, (4,)).start()
        return "bye"

    @server.tool()
    async def hang() -> str:
        """Never answers."""
        await anyio.sleep_forever()
        return "never"

    @server.tool()
    async def wait_for_cancel() -> str:
        """Waits until the call is cancelled."""
        WAITING[0] += 1
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            WAITING[1] += 1
            raise
        return "never"

    @server.tool()
    def waiting() -> str:
        """"<calls of wait_for_cancel started>,<cancelled>"."""
        return f"{WAITING[0]},{WAITING[1]}"

    @server.tool()
    def has_key() -> bool:
        """Whether SERVICE_KEY reached this process (never its value)."""
        return bool(os.environ.get("SERVICE_KEY"))

    @server.tool()
    def read_file(path: str) -> str:
        """A name the filesystem server uses too (for collisions)."""
        return f"py read {path}"

    return server


class RequireKey:
    """Refuses requests without the bearer key (what a real hosted server would do)."""

    def __init__(self, app: ASGIApp, key: str) -> None:
        self.app = app
        self.key = key

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            if headers.get(b"authorization") != f"Bearer {self.key}".encode():
                await send({"type": "http.response.start", "status": 401, "headers": []})
                await send({"type": "http.response.body", "body": b"missing key"})
                return
        await self.app(scope, receive, send)


def http_app(key: str) -> Any:
    app = build("py-http").streamable_http_app()
    return RequireKey(app, key)


def junk() -> None:
    """Answer the handshake and the listing like a server; answer calls with junk."""
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message:
            continue
        method = message.get("method")
        if method == "initialize":
            result: Any = {"protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
                           "serverInfo": {"name": "junk", "version": "1"}}
        elif method == "tools/list":
            result = {"tools": [{"name": "junk", "inputSchema": {"type": "object"}}]}
        else:
            result = {"content": 42, "isError": "perhaps"}
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    if sys.argv[1:] == ["junk"]:
        junk()
    else:
        build().run("stdio")
