"""`grants list|show|revoke`: the standing approvals people made, through the daemon's API;
and `answer --grant` (`session`, `1h`, `always`, `always=PATTERN`) read into the API's form."""

from __future__ import annotations

from typing import Any

import click

from bridge.cli.backend import open_bridge
from bridge.cli.exits import USAGE, Failed, codes
from bridge.cli.options import Cli, daemon_options, json_option, print_json

GRANT_HELP = ("With an approval, a standing approval for calls like this one: `session` (the rest of the "
              "agent's session), a span such as `1h` or `30m`, `always` (the tool with the pattern the bridge "
              "offers), or `always=PATTERN` to narrow it (e.g. always='Bash(npm test:*)'). Refused when the "
              "route offers none, or for a pattern wider than the one offered.")


def grant_option(text: str | None) -> str | dict[str, Any] | None:
    """`--grant` as the answer body's `grant` (a button key, or a choice with a pattern)."""
    from bridge.durations import parse_duration

    if text is None:
        return None
    text = text.strip()
    if text in ("once", "session", "always"):
        return text
    if text.startswith("always="):
        pattern = text.removeprefix("always=").strip()
        if not pattern:
            raise Failed("--grant always=PATTERN needs a pattern, e.g. always='Bash(npm test:*)'", USAGE)
        return {"scope": "always", "pattern": pattern}
    try:
        seconds = int(parse_duration(text).total_seconds())
    except ValueError:
        raise Failed(f"--grant {text[:40]!r}: give session, a span (1h, 30m), always or always=PATTERN",
                     USAGE) from None
    if not 0 < seconds <= 366 * 86400:
        raise Failed("--grant: a span is longer than 0 and at most 366 days", USAGE)
    return f"span:{seconds}"


def grant_line(view: dict[str, Any]) -> str:
    until = view.get("expires_at") or ("until revoked" if view.get("scope") == "always" else "-")
    state = "active" if view.get("active") else ("revoked" if view.get("revoked_at") else "expired")
    session = f" session {view['session']}" if view.get("session") else ""
    return (f"{view.get('id')}  {state:<7}  {view.get('scope'):<7}  {view.get('pattern')}  "
            f"route {view.get('route')}{session}  by {view.get('granted_by')}  until {until}")


@click.group(short_help="List, show and revoke standing approvals.")
def grants() -> None:
    """Standing approvals ("Allow for this session", "for 1 hour", "Always allow this") that
    people made when they approved a tool call; each decides matching calls until it expires or
    is revoked."""


@grants.command("list", short_help="The standing approvals in force.", epilog=codes("listed", None))
@click.option("--all", "show_all", is_flag=True, help="Also the revoked and expired ones.")
@json_option
@daemon_options
@click.pass_obj
def list_grants(cli: Cli, show_all: bool, as_json: bool) -> int:
    """The standing approvals in force, newest first (`--all`: every one kept)."""
    with open_bridge(cli) as bridge:
        found = bridge.grants(all=show_all)
    if as_json:
        print_json(found)
        return 0
    for view in found:
        click.echo(grant_line(view))
    if not found:
        click.echo("no standing approvals" + ("" if show_all else " in force"))
    return 0


@grants.command("show", short_help="One standing approval.", epilog=codes("shown", "no such grant"))
@click.argument("grant_id", metavar="ID")
@json_option
@daemon_options
@click.pass_obj
def show_grant(cli: Cli, grant_id: str, as_json: bool) -> int:
    with open_bridge(cli) as bridge:
        view = bridge.grant(grant_id)
    if as_json:
        print_json(view)
    else:
        click.echo(grant_line(view))
        click.echo(f"granted through {view.get('via')} answering {view.get('request_id')} at {view.get('created_at')}")
        if view.get("revoked_at"):
            click.echo(f"revoked by {view.get('revoked_by')} at {view.get('revoked_at')}")
    return 0


@grants.command("revoke", short_help="Revoke a standing approval.", epilog=codes("revoked", "no such grant"))
@click.argument("grant_id", metavar="ID")
@json_option
@daemon_options
@click.pass_obj
def revoke_grant(cli: Cli, grant_id: str, as_json: bool) -> int:
    """Revoke it: the next call it would have allowed is asked of a person (on every replica)."""
    with open_bridge(cli) as bridge:
        view = bridge.revoke_grant(grant_id)
    if as_json:
        print_json(view)
    else:
        click.echo(f"{view.get('id')} revoked by {view.get('revoked_by')} at {view.get('revoked_at')}")
    return 0
