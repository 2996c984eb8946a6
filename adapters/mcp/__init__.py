"""MCP: any MCP agent asks people through the bridge. `sources: [{type: mcp}]` mounts `/mcp`
(`adapters.mcp.source`); `hitl-bridge mcp` serves the same tools over stdio against a
running bridge (`adapters.mcp.command`). Nothing is imported here, so the CLI stays quick."""
