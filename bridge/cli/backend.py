"""The daemon (through `hitl_bridge_client`) or, with `--offline`, the store: both offer
the same calls, and both fail with the same one-line messages and exit codes."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import click

from bridge.cli.exits import USAGE, Failed
from bridge.cli.options import Cli
from bridge.cli.remote import DaemonAddress, connect, failure

OFFLINE = DaemonAddress("the store", None, "--offline")


@contextlib.contextmanager
def open_bridge(cli: Cli, offline: bool = False, *, writes: bool = False) -> Iterator[Any]:
    """A `Client` of the daemon, or an `OfflineBridge`; client errors become `Failed`."""
    import httpx
    from hitl_bridge_client import BridgeError

    if offline:
        from bridge.cli.offline import OfflineBridge

        settings = cli.settings()
        with OfflineBridge(settings) as bridge:
            what = ("changing it directly: a running daemon picks the change up within seconds (chat copies are "
                    "not updated), else when it starts") if writes else "reading it directly, without the daemon"
            click.echo(f"offline: store {bridge.where} ({settings.origin}): {what}", err=True)
            try:
                yield bridge
            except BridgeError as exc:
                raise failure(exc, OFFLINE) from None
        return
    address = cli.address()
    with connect(address) as client:
        try:
            yield client
        except BridgeError as exc:
            raise failure(exc, address) from None
        except httpx.InvalidURL as exc:
            raise Failed(f"bad daemon URL {address.url!r}: {exc}", USAGE) from None


def complete_ids(ctx: click.Context, _param: click.Parameter, incomplete: str) -> list[str]:
    """Shell completion of request ids: the open requests of the daemon (nothing when it
    does not answer, or wants a token that is not there)."""
    cli = ctx.find_object(Cli) or Cli()
    try:
        with connect(cli.address()) as client:
            views = client.list(["pending", "posted"], limit=200)
    except Exception:  # completion must never fail loudly in the middle of typing
        return []
    return [str(v.get("id")) for v in views if str(v.get("id", "")).startswith(incomplete)]
