"""A gateway's settings: a `type: gateway` source section, or `hitl-bridge gateway --config`.

Each downstream server is a command (stdio: `command`, `args`, `env`, `cwd`) or a URL
(Streamable HTTP: `url`, `headers`). Its `env` and `headers` are the server's credentials:
they go to the server and nowhere else (never into a listing, an error, a request or a log).
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from adapters.mcp.settings import labels_fit_a_request, progress_often_enough
from bridge.config_daemon import Duration

NAME = r"^[a-z0-9][a-z0-9_-]{0,39}$"
#: what sits between a server's prefix and its tool's name (`fs__read_file`)
SEPARATOR = "__"
MAX_SERVERS = 20


class ServerSettings(BaseModel):
    """One downstream MCP server."""

    model_config = ConfigDict(extra="forbid")

    #: the server's name: in labels (`mcp_server`), health (`gateway:<gateway>/<server>`), messages
    name: str = Field(pattern=NAME)
    #: stdio: the program to start (one process per agent session)
    command: str | None = Field(default=None, min_length=1, max_length=1000)
    args: list[str] = Field(default_factory=list, max_length=200)
    #: environment for the program, over the gateway's own (credentials stay here)
    env: dict[str, SecretStr] = Field(default_factory=dict)
    cwd: str | None = None
    #: Streamable HTTP: the server's endpoint (`http://127.0.0.1:9000/mcp`)
    url: str | None = Field(default=None, pattern=r"^https?://", max_length=2000)
    #: headers sent to `url` (an `Authorization` the agent never sees)
    headers: dict[str, SecretStr] = Field(default_factory=dict)
    #: list this server's tools and prompts as `<prefix>__<name>`: true (the server's name), a
    #: prefix, or false (names as the server gives them; a name two servers share stays with
    #: the first server listed, and the other's is left out and reported)
    prefix: bool | str = False
    #: elicitation from this server: `client` asks the agent's MCP client when it declares
    #: elicitation, else people through the bridge; `bridge` always asks people
    elicitation: Literal["client", "bridge"] = "client"
    #: give up on a call when the server says nothing for this long
    call_timeout: Duration = timedelta(minutes=5)
    #: how often an open connection is pinged: a server that exited while idle is restarted
    #: and reported before the next call needs it
    ping_every: Duration = timedelta(seconds=15)

    @field_validator("prefix")
    @classmethod
    def _prefix_is_a_name(cls, prefix: bool | str) -> bool | str:
        if isinstance(prefix, str) and not re.fullmatch(NAME, prefix):
            raise ValueError("a prefix is 1-40 lowercase letters, digits, '_' or '-'")
        return prefix

    @field_validator("call_timeout", "ping_every")
    @classmethod
    def _sensible_interval(cls, every: timedelta) -> timedelta:
        if not timedelta(seconds=0.05) <= every <= timedelta(hours=24):
            raise ValueError("use between 50ms and 24h")
        return every

    @model_validator(mode="after")
    def _one_transport(self) -> ServerSettings:
        if (self.command is None) == (self.url is None):
            raise ValueError(f"server {self.name!r}: give either `command` (stdio) or `url` (Streamable HTTP)")
        if self.url is not None and (self.args or self.env or self.cwd):
            raise ValueError(f"server {self.name!r}: `args`, `env` and `cwd` are for a `command`")
        if self.command is not None and self.headers:
            raise ValueError(f"server {self.name!r}: `headers` are for a `url`")
        return self

    @property
    def tool_prefix(self) -> str:
        """'' when unprefixed, else `<prefix>__`."""
        if self.prefix is False:
            return ""
        return f"{self.name if self.prefix is True else self.prefix}{SEPARATOR}"


class GatewaySettings(BaseModel):
    """One gateway: the servers behind it and how calls are asked about."""

    model_config = ConfigDict(extra="forbid")

    #: mounted at `/mcp/<name>`; the request's `source`
    name: str = Field(default="gateway", pattern=NAME)
    servers: list[ServerSettings] = Field(min_length=1, max_length=MAX_SERVERS)
    #: added to every request the gateway asks (routes and rules match them)
    labels: dict[str, str] = Field(default_factory=dict)
    #: let the person edit a held call's arguments before allowing it
    edit_arguments: bool = True
    #: how often a held call sends a progress notification upstream
    progress_every: Duration = timedelta(seconds=15)
    #: the largest arguments (JSON bytes) a call may carry; a larger call is refused unasked
    max_arguments_bytes: int = Field(default=256 * 1024, ge=1024, le=4 * 1024 * 1024)

    @field_validator("labels")
    @classmethod
    def _labels_fit_a_request(cls, labels: dict[str, str]) -> dict[str, str]:
        return labels_fit_a_request(labels, "the gateway")

    @field_validator("progress_every")
    @classmethod
    def _progress_often_enough(cls, every: timedelta) -> timedelta:
        return progress_often_enough(every)

    @model_validator(mode="after")
    def _names_distinct(self) -> GatewaySettings:
        seen: set[str] = set()
        for server in self.servers:
            if server.name in seen:
                raise ValueError(f"two servers are named {server.name!r}: give each a distinct `name`")
            seen.add(server.name)
        prefixes = [s.tool_prefix for s in self.servers if s.tool_prefix]
        if len(set(prefixes)) != len(prefixes):
            raise ValueError("two servers share a `prefix`: their tools would collide")
        return self
