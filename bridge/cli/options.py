"""What every verb shares: the `Cli` object (config path, daemon URL and token, verbosity)
and the decorators that add the common options to a verb.

`--config`, `--url` and `--token` work before the verb and after it; after it wins. A verb
that talks to the daemon takes `@daemon_options` and asks `cli.address()`; one that needs
the config calls `cli.settings()` (loaded once, a bad file exits 2 naming the key).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import click

from bridge.cli.exits import USAGE, Failed
from bridge.cli.remote import DaemonAddress, daemon_address

if TYPE_CHECKING:
    from bridge.config import Settings

F = TypeVar("F", bound=Callable[..., Any])


@dataclass
class Cli:
    config: str | None = None
    url: str | None = None
    token: str | None = field(default=None, repr=False)  # never shown
    verbose: int = 0
    _settings: Settings | None = field(default=None, repr=False)

    def settings(self) -> Settings:
        """The config as `serve` reads it; ConfigError becomes exit 2 with the file and key."""
        if self._settings is None:
            from bridge.config import load_settings
            from bridge.errors import ConfigError

            try:
                self._settings = load_settings(self.config)
            except ConfigError as exc:
                raise config_failure(exc) from None
        return self._settings

    def address(self) -> DaemonAddress:
        from bridge.errors import ConfigError

        try:
            return daemon_address(self.url, self.token, config=self.config)
        except ConfigError as exc:
            raise config_failure(exc) from None


def config_failure(exc: Exception) -> Failed:
    return Failed(f"config error: {exc}", USAGE)


def _keep(name: str) -> Callable[[click.Context, click.Parameter, Any], None]:
    def store(ctx: click.Context, _param: click.Parameter, value: Any) -> None:
        cli = ctx.ensure_object(Cli)
        if value is not None:
            setattr(cli, name, value)
    return store


def config_option(fn: F) -> F:
    return click.option("--config", "-c", metavar="FILE", expose_value=False, callback=_keep("config"),
                        help="YAML config file (default: $HITL_BRIDGE_CONFIG, ./hitl-bridge.yaml, "
                             "else embedded defaults).")(fn)


def daemon_options(fn: F) -> F:
    """`--url`, `--token` and `--config` on a verb that talks to the daemon."""
    fn = click.option("--token", metavar="TOKEN", expose_value=False, callback=_keep("token"),
                      help="Bearer token for the daemon's API (default: $HITL_BRIDGE_TOKEN; the config's "
                           "first http.api_tokens entry when the URL is the config's own). Prefer the "
                           "variable: a flag shows in `ps`.")(fn)
    fn = click.option("--url", metavar="URL", expose_value=False, callback=_keep("url"),
                      help="The daemon, e.g. http://bridge.internal:8787 (default: $HITL_BRIDGE_URL, "
                           "else http.listen of the config).")(fn)
    return config_option(fn)


def json_option(fn: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON (the API's shapes) instead of text.")(fn)


def offline_option(fn: F) -> F:
    return click.option("--offline", is_flag=True,
                        help="Read and write the store directly, without the daemon (admin work while it is "
                             "down; needs the config the daemon runs with).")(fn)


def print_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2))
