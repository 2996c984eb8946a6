"""The `sources: - type: temporal` section (see docs/engines/temporal.md)."""

from __future__ import annotations

from datetime import timedelta

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from bridge.config_daemon import Duration


class TemporalConfig(BaseModel):
    """Where the workflows that ask run: one Temporal frontend and namespace per source."""

    model_config = ConfigDict(extra="forbid")

    #: the source's name (requests' `source`); workflows post to `/v1/temporal/<name>/requests`
    name: str = Field(default="temporal", pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    #: the Temporal frontend (gRPC), `host:port`
    address: str = Field(default="127.0.0.1:7233", pattern=r"^[A-Za-z0-9_.\[\]:-]{1,300}:[0-9]{1,5}$")
    #: the namespace the workflows run in; a request from another namespace is refused
    namespace: str = Field(default="default", min_length=1, max_length=200)
    #: an API key for Temporal Cloud (sent as a bearer token; implies TLS)
    api_key: SecretStr | None = None
    #: connect with TLS (on by itself with `api_key`)
    tls: bool = False
    #: how often open requests' workflows are looked at: one that ended, was reset or
    #: continued as new withdraws its request
    watch_every: Duration = timedelta(seconds=5)
    #: the longest one call to Temporal may take
    timeout: Duration = timedelta(seconds=10)
