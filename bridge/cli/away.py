"""`away DELEGATE --until TIME`: you are away until TIME and DELEGATE answers for you
meanwhile (routes, reminders and escalation reach them; their answers say "for" you).
`away --list` shows the windows, `away --end` ends yours now."""

from __future__ import annotations

import click

from bridge.cli.backend import open_bridge
from bridge.cli.exits import USAGE, Failed, codes
from bridge.cli.options import Cli, daemon_options, json_option, print_json


def instant(text: str, what: str) -> str:
    """An ISO 8601 instant with its offset (the daemon checks it is in the future)."""
    from bridge.away_words import AwayWordsError, instant

    try:
        return instant(text.strip()).isoformat()
    except AwayWordsError as exc:
        raise Failed(f"{what}: {exc}", USAGE) from None


@click.command(short_help="Say you are away: a delegate answers for you until a time.",
               epilog=codes("set, listed or ended", "refused (the reason is said)", "a usage error"))
@click.argument("delegate", required=False)
@click.option("--until", "until", metavar="TIME", help="When you are back (ISO 8601 with its offset).")
@click.option("--from", "starts", metavar="TIME", help="When you leave (default: now).")
@click.option("--for", "person", metavar="PERSON",
              help="Who is away, when your token acts for others (default: your token's own person).")
@click.option("--list", "listing", is_flag=True, help="Show the windows not yet ended.")
@click.option("--end", is_flag=True, help="End the window now (yours, or --for PERSON's).")
@json_option
@daemon_options
@click.pass_obj
def away(cli: Cli, delegate: str | None, until: str | None, starts: str | None, person: str | None,
         listing: bool, end: bool, as_json: bool) -> int:
    """Away until --until, DELEGATE (a person of people:) standing in: what is asked of you
    reaches them, and their answers are recorded as theirs "for" you. A window cannot hand
    on in a loop (ana → bo → ana) and ends on time, restarts or not."""
    with open_bridge(cli) as bridge:
        if listing:
            windows = bridge.away_list()
            if as_json:
                print_json(windows)
            for w in [] if as_json else windows:
                click.echo(f"{w['person']} away {w['starts']} until {w['until']}: {w['delegate']} stands in")
            if not windows and not as_json:
                click.echo("nobody is away")
            return 0
        if end:
            ended = bridge.back(person)
            click.echo(f"{ended['person']}: {'back' if ended['ended'] else 'was not away'}")
            return 0
        if not delegate or not until:
            raise Failed("give the DELEGATE and --until TIME (or --list, or --end)", USAGE)
        window = bridge.away(delegate, instant(until, "--until"),
                             starts=instant(starts, "--from") if starts else None, person=person)
    if as_json:
        print_json(window)
    else:
        click.echo(f"{window['person']} away until {window['until']}: {window['delegate']} stands in")
    return 0
