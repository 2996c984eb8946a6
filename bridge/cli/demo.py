"""`hitl-bridge demo` (the demo itself is bridge/demo.py)."""

from __future__ import annotations

import asyncio

import click

from bridge.cli.exits import USAGE, Failed, codes
from bridge.cli.options import Cli, config_option


@click.command(short_help="Requests to try answering, in the web inbox or the terminal.",
               epilog=codes("stopped", "the port is taken", "config error", remote=False))
@click.option("--listen", metavar="HOST:PORT",
              help="Where the demo bridge listens (default: http.listen, 127.0.0.1:8787; 127.0.0.1:0 picks a "
                   "free port).")
@click.option("--store", "store_url", metavar="URL",
              help="Keep the demo's requests in this store (default: a temporary one, removed when the demo "
                   "stops).")
@click.option("--exit-when-done", is_flag=True,
              help="Stop once every demo request is closed and its callback has arrived.")
@config_option
@click.pass_obj
def demo(cli: Cli, listen: str | None, store_url: str | None, exit_when_done: bool) -> int:
    """Six realistic requests (a deploy approval, a choice, a reply, a password, a form
    with an edit, an escalation) to answer in the web inbox or with `hitl-bridge inbox`;
    a local receiver prints each outcome as an engine would get it (secrets hidden).
    Open requests are cancelled when the demo stops."""
    from bridge.demo import run_demo
    from bridge.errors import ConfigError

    try:
        return asyncio.run(run_demo(cli.settings(), listen=listen, exit_when_done=exit_when_done,
                                    out=click.echo, store_url=store_url))
    except ConfigError as exc:
        raise Failed(f"config error: {exc}", USAGE) from None
