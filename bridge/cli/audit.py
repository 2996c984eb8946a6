"""`audit verify`, `audit export`: the record read from the store directly (like `--offline`),
so they work with the daemon up or down and trust nothing the daemon says. `GET /v1/audit`
is the same export over HTTP, for a machine that cannot reach the store."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, TypeVar

import click

from bridge.cli.exits import REFUSED, USAGE, Failed, codes
from bridge.cli.options import Cli, config_option, json_option, print_json

if TYPE_CHECKING:
    from bridge.store.base import Store

T = TypeVar("T")


@click.group(short_help="Verify and export the tamper-evident record (reads the store).")
def audit() -> None:
    """The record of every request (its events), hash-chained in the store: `verify` checks
    it, `export` writes it out. Both read the store of the config directly."""


@asynccontextmanager
async def opened(cli: Cli) -> AsyncIterator[Store]:
    from bridge.cli.offline import store_path
    from bridge.store import open_store_from_url

    settings = cli.settings()
    path = store_path(settings.store.url)
    if path is not None and not path.exists():
        raise Failed(f"audit: there is no store at {path} (from {settings.origin}): run in the daemon's folder "
                     "or pass -c with its config", USAGE)
    store = open_store_from_url(settings.store.url)
    await store.open()
    try:
        yield store
    finally:
        await store.close()


def run_on_store(cli: Cli, work: Callable[[Store], Awaitable[T]]) -> T:
    async def go() -> T:
        async with opened(cli) as store:
            return await work(store)
    return asyncio.run(go())


@audit.command(short_help="Check the hash chain: edited, deleted, inserted, reordered, truncated events.",
               epilog=codes("the record is intact", "the record was changed (each place is listed)", "config error",
                            remote=False))
@json_option
@config_option
@click.pass_obj
def verify(cli: Cli, as_json: bool) -> int:
    """Walk the whole chain of events in the store and list every place where it is not
    what the bridge wrote: the event (id, chain position, request) and what is wrong. Ends
    with the chain head (position and hash): keep it elsewhere (a ticket, a log) to prove
    later that nothing was cut off the end."""
    from bridge.audit.verify import verify_store

    report = run_on_store(cli, verify_store)
    if as_json:
        print_json(report.as_dict())
    else:
        for problem in report.problems or []:
            click.echo(problem.line())
        state = report.state
        verdict = "intact" if report.ok else f"CHANGED in {len(report.problems or [])} place(s)"
        more = "" if report.complete else " (stopped listing: too many problems)"
        click.echo(f"record {verdict}{more}: {report.checked} event(s) checked; head #{state.seq} {state.hash}; "
                   f"checkpoint #{state.cut_seq} {state.cut_hash}")
    return 0 if report.ok else REFUSED


def _when(value: str | None, option: str) -> datetime | None:
    if value is None:
        return None
    from bridge.durations import parse_duration

    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        try:
            return datetime.now(UTC) - parse_duration(value)
        except ValueError:
            raise Failed(f"{option}: expected an ISO time (2026-01-31T00:00Z) or a duration ago (7d), got "
                         f"{value[:40]!r}", USAGE) from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


@audit.command(short_help="Write the record out as JSON lines or CSV.",
               epilog=codes("written", None, "config error", remote=False))
@click.option("--since", metavar="WHEN", help="From this time on: ISO (2026-01-31, 2026-01-31T09:00Z) or ago (7d).")
@click.option("--until", metavar="WHEN", help="Before this time (same forms).")
@click.option("--format", "form", type=click.Choice(["jsonl", "csv"]), default="jsonl", show_default=True)
@config_option
@click.pass_obj
def export(cli: Cli, since: str | None, until: str | None, form: str) -> int:
    """Every event in chain order, on standard output: who acted (the verified handle),
    what, when, and each event's chain hashes. Secret answers are redacted in the record
    itself; nothing secret is written. Read page by page: any range, flat memory."""
    from bridge.audit.export import csv_header, csv_line, entries, jsonl

    low, high = _when(since, "--since"), _when(until, "--until")

    async def write(store: Store) -> int:
        if form == "csv":
            sys.stdout.write(csv_header())
        count = 0
        async for item in entries(store, since=low, until=high):
            sys.stdout.write(csv_line(item) if form == "csv" else jsonl(item) + "\n")
            count += 1
        return count

    run_on_store(cli, write)
    return 0


@click.group(short_help="The keys that sign receipts (rotate them).")
def keys() -> None:
    """The Ed25519 keys that sign the receipts written back with every outcome. Their public
    halves are served at /.well-known/jwks.json."""


@keys.command(short_help="Make a new signing key; older ones stay published.",
              epilog=codes("rotated", None, "config error", remote=False))
@json_option
@config_option
@click.pass_obj
def rotate(cli: Cli, as_json: bool) -> int:
    """Make a new receipt signing key in the store (sealed with secrets.key). The daemon
    signs with it within 30 seconds; older public keys stay in the JWKS so receipts signed
    before still verify."""
    from bridge.audit.keys import ReceiptKeys
    from bridge.clock import SystemClock
    from bridge.crypto import SecretBox

    settings = cli.settings()

    async def make(store: Store) -> str:
        keyring = ReceiptKeys(store, SecretBox(settings.secrets.key), SystemClock())
        made = await keyring.rotate()
        return made.kid

    kid = run_on_store(cli, make)
    if as_json:
        print_json({"kid": kid})
    else:
        click.echo(f"receipt key rotated: new kid {kid}" + ("" if settings.secrets.key else
                   " (warning: no secrets.key: the daemon cannot open this key; set secrets.key)"))
    return 0
