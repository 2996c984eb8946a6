"""The MCP gateway: people in front of any MCP server's tools, with no change to the agent.

An MCP server upstream (the agent's) and an MCP client downstream (each configured server),
both the official `mcp` SDK. Listings pass through; a `tools/call` becomes a request created
through the core like any other source's (so `policies:` decide it when they can) and the
downstream call is made only once it is allowed. `sources: [{type: gateway, name: …}]` mounts
`/mcp/<name>` in the daemon (`adapters.gateway.source`); `hitl-bridge gateway` serves one agent
over stdio against a running bridge (`adapters.gateway.command`). Nothing is imported here, so
the CLI stays quick."""
