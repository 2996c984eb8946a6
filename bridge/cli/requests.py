"""`list`, `show`, `cancel`, `redeliver`: requests as the running daemon has them (or the
store, with `--offline`)."""

from __future__ import annotations

import shutil

import click

from bridge.cli import render
from bridge.cli.backend import complete_ids, open_bridge
from bridge.cli.exits import codes
from bridge.cli.options import Cli, daemon_options, json_option, offline_option, print_json

STATES = ["pending", "posted", "answered", "delivered", "expired", "cancelled", "failed"]
OPEN = ["pending", "posted"]


@click.command("list", short_help="List requests, newest first.",
               epilog=codes("listed (maybe none)", "refused by the daemon"))
@click.option("--state", "states", multiple=True, type=click.Choice(STATES),
              help="Only requests in this state (repeat for several).")
@click.option("--open", "only_open", is_flag=True, help="Only open requests (pending or posted).")
@click.option("--source", help="Only requests from this source (delta, webhook, langgraph...).")
@click.option("--route", help="Only requests on this route.")
@click.option("--limit", type=click.IntRange(1, 1000), default=50, show_default=True,
              help="At most this many, newest first.")
@json_option
@offline_option
@daemon_options
@click.pass_obj
def list_requests(cli: Cli, states: tuple[str, ...], only_open: bool, source: str | None, route: str | None,
                  limit: int, as_json: bool, offline: bool) -> int:
    """List requests, newest first: id, state, age, source, route and title."""
    wanted = sorted(set(states) | set(OPEN if only_open else []), key=STATES.index)
    with open_bridge(cli, offline) as bridge:
        views = bridge.list(wanted or None, source=source, route=route, limit=limit)
    if as_json:
        print_json(views)
    elif not views:
        filters = [f"{k}: {v}" for k, v in (("state", ", ".join(wanted)), ("source", source), ("route", route)) if v]
        click.echo("no requests" + (f" ({'; '.join(filters)})" if filters else ""))
    else:
        click.echo(render.table(views, shutil.get_terminal_size((120, 24)).columns))
    return 0


@click.command(short_help="Show a request: what is asked, and what happened.",
               epilog=codes("shown", "no such request"))
@click.argument("request_id", metavar="ID", shell_complete=complete_ids)
@click.option("--no-timeline", is_flag=True, help="Leave out the timeline (the audit trail).")
@json_option
@offline_option
@daemon_options
@click.pass_obj
def show(cli: Cli, request_id: str, no_timeline: bool, as_json: bool, offline: bool) -> int:
    """Show one request: what is asked (title, description, context, labels, questions and
    options, proposed arguments, deadline, escalation level), then what happened (votes, the
    answer, each copy, deliveries and the timeline)."""
    with open_bridge(cli, offline) as bridge:
        view = bridge.get(request_id)
        events = None if no_timeline else bridge.events(request_id)
    if as_json:
        print_json({**view, "events": events} if events is not None else view)
    else:
        click.echo(render.show(view, events))
    return 0


@click.command(short_help="Cancel an open request.",
               epilog=codes("cancelled", "no such request, or already closed"))
@click.argument("request_id", metavar="ID", shell_complete=complete_ids)
@click.option("--reason", default="", help="Why (recorded, and sent to the engine with the cancellation).")
@json_option
@offline_option
@daemon_options
@click.pass_obj
def cancel(cli: Cli, request_id: str, reason: str, as_json: bool, offline: bool) -> int:
    """Cancel an open request: the engine gets `cancelled`, every copy says so."""
    with open_bridge(cli, offline, writes=True) as bridge:
        view = bridge.cancel(request_id, reason, actor="cli")
    if as_json:
        print_json(view)
    else:
        click.echo(f"{view.get('id')} {view.get('state')}" + (f": {reason}" if reason else ""))
    return 0


@click.command(short_help="Send a closed request's outcome to its engine again.",
               epilog=codes("queued", "no such request, or still open"))
@click.argument("request_id", metavar="ID", shell_complete=complete_ids)
@json_option
@offline_option
@daemon_options
@click.pass_obj
def redeliver(cli: Cli, request_id: str, as_json: bool, offline: bool) -> int:
    """Queue the write-back of a closed request again (after a delivery that failed or an
    engine that lost it)."""
    with open_bridge(cli, offline, writes=True) as bridge:
        view = bridge.redeliver(request_id)
    if as_json:
        print_json(view)
    else:
        click.echo(f"{view.get('id')} {view.get('state')}: delivery queued again")
    return 0
