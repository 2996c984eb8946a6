"""The downstream server bench_gateway.py measures against: the SDK's `MCPServer` with one
`echo` tool, over Streamable HTTP on 127.0.0.1:<port>.

    .venv/bin/python bench/gateway_echo.py PORT
"""

from __future__ import annotations

import sys

import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations


def main(port: int) -> None:
    server = MCPServer("echo")

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def echo(text: str) -> str:
        """Says the text back."""
        return text

    uvicorn.run(server.streamable_http_app(), host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main(int(sys.argv[1]))
