"""`hitl-bridge inbox`: the open requests in a terminal, most urgent first, each answered in
place with a prompt that fits its kind; then it waits for new ones and shows them as they
come. For people who live in a terminal, or on a server with no browser.

Waiting for new requests happens in `follow()` alone (a poll of the list today), so an
event stream from the daemon can replace it without touching the rest.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import click

from bridge.cli import render, safe
from bridge.cli.answer import AS_HELP, outcome_lines
from bridge.cli.exits import codes
from bridge.cli.grant_prompt import ask_grant
from bridge.cli.inbox_batches import offer_batches
from bridge.cli.options import Cli, daemon_options
from bridge.cli.prompts import Quit, Skip, Terminal, ask_values
from bridge.cli.remote import DaemonAddress, connect, failure

View = dict[str, Any]
OPEN = ["pending", "posted"]
FAR = datetime.max.replace(tzinfo=UTC)


@click.command(short_help="Answer requests in this terminal as they arrive.",
               epilog=codes("quit with q, or nothing open with --once", "refused by the daemon"))
@click.option("--source", help="Only requests from this source.")
@click.option("--route", help="Only requests on this route.")
@click.option("--label", "labels", multiple=True, metavar="KEY=VALUE", help="Only requests with this label (repeat).")
@click.option("--once", is_flag=True, help="Answer what is open now, then stop instead of waiting for more.")
@click.option("--interval", type=click.FloatRange(0.2, 300), default=2.0, show_default=True,
              help="Seconds between looks for new requests while waiting.")
@click.option("--as", "responder", metavar="NAME", help=AS_HELP)
@daemon_options
@click.pass_obj
def inbox(cli: Cli, source: str | None, route: str | None, labels: tuple[str, ...], once: bool, interval: float,
          responder: str | None) -> int:
    """Answer requests in this terminal as they arrive: y/n for a confirmation, numbered
    options for a choice, a hidden prompt for a secret, your $EDITOR for an edit. Enter on
    an empty line skips a request; q or Ctrl-C quits."""
    from hitl_bridge_client import BridgeError

    wanted = dict(label.partition("=")[::2] for label in labels)
    if any(not k for k in wanted):
        raise click.BadParameter("expected KEY=VALUE", param_hint="--label")
    address = cli.address()
    with connect(address) as client:
        session = Inbox(client, address, Terminal(), source=source, route=route, labels=wanted,
                        responder=responder, interval=interval)
        try:
            return session.run(once=once)
        except BridgeError as exc:
            raise failure(exc, address) from None
        except KeyboardInterrupt:
            session.term.say("")  # end the ^C line
            raise
        finally:
            session.term.say(f"inbox: {session.answered} answered, {session.skipped} skipped")


class Inbox:
    def __init__(self, client: Any, address: DaemonAddress, term: Terminal, *, source: str | None = None,
                 route: str | None = None, labels: dict[str, str] | None = None, responder: str | None = None,
                 interval: float = 2.0, sleep: Callable[[float], None] = time.sleep) -> None:
        self.client = client
        self.address = address
        self.term = term
        self.filters = {"source": source, "route": route}
        self.labels = labels or {}
        self.responder = responder
        self.interval = interval
        self.sleep = sleep
        self.done: set[str] = set()  # answered, skipped, or found closed: not shown again
        self.answered = 0
        self.skipped = 0

    def run(self, *, once: bool = False) -> int:
        self.term.say(f"hitl-bridge inbox · {self.address.url} · Enter on an empty line skips a request · "
                      "q or Ctrl-C quits")
        queue = self.open_requests()  # the first look fails loudly (exit 3 or 4)
        while True:
            if not queue:
                if once:
                    self.term.say("no more open requests")
                    return 0
                self.term.say("waiting for new requests…")
                queue = self.follow()
            self.term.say(f"{len(queue)} open request{'s' if len(queue) != 1 else ''}")
            try:
                queue = offer_batches(self, queue)  # alike requests first, decided together
                for n, summary in enumerate(queue, 1):
                    self.handle(str(summary.get("id")), n, len(queue))
            except Quit:
                return 0
            queue = self.open_requests()

    def open_requests(self) -> list[View]:
        """Open requests not handled yet, the nearest deadline first, then the oldest."""
        views = self.client.list(OPEN, source=self.filters["source"], route=self.filters["route"], limit=1000)
        fresh = [v for v in views if str(v.get("id")) not in self.done
                 and all((v.get("labels") or {}).get(k) == val for k, val in self.labels.items())]
        return sorted(fresh, key=lambda v: (render.parse_time(v.get("deadline")) or FAR, str(v.get("created_at"))))

    def follow(self) -> list[View]:
        """Wait until there are open requests not handled yet, and return them. The daemon
        going away (a restart) is said once and waited out."""
        from hitl_bridge_client import BridgeUnavailable

        lost = False
        while True:
            try:
                found = self.open_requests()
            except BridgeUnavailable as exc:
                if not lost:
                    self.term.say(f"lost the daemon at {self.address.url} ({exc.__cause__ or exc}); trying again "
                                  f"every {self.interval:g} s")
                lost = True
                self.sleep(self.interval)
                continue
            if lost:
                self.term.say("the daemon answers again")
                lost = False
            if found:
                return found
            self.sleep(self.interval)

    def handle(self, request_id: str, n: int, total: int) -> None:
        from hitl_bridge_client import BridgeRefused, BridgeUnavailable, InvalidRequest

        self.done.add(request_id)
        view = self.client.get(request_id)
        if view.get("state") not in OPEN:
            return
        self.term.say("")
        self.term.say(f"── {n} of {total} " + "─" * 40)
        self.term.say("\n".join(render.decision(view, questions=False)))
        while True:
            try:
                values, reason = ask_values(view, self.term)
                grant = ask_grant(view, values, self.term)
            except Skip:
                self.skipped += 1
                self.term.say("  skipped")
                return
            try:
                result = self.client.answer(request_id, values=values, responder=self.responder, reason=reason,
                                            grant=grant)
            except InvalidRequest as exc:
                self.term.say(f"  refused: {safe.line(exc.detail)}; try again")
                continue
            except BridgeRefused as exc:  # answered meanwhile elsewhere, cancelled, not allowed
                self.term.say(f"  not sent: {safe.line(exc.detail)}")
                return
            except BridgeUnavailable as exc:
                self.term.say(f"  not sent: {failure(exc, self.address).message}")
                self.done.discard(request_id)
                return
            self.answered += 1
            after = self.client.get(request_id) if result.get("state") in OPEN else result
            for text in outcome_lines(after, self.responder):
                self.term.say(f"  {text}")
            return
