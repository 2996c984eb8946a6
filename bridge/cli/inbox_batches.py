"""The terminal inbox's batches: before going one by one, alike yes/no requests in the
queue are offered together ("approve all 20", "all but 3 5", or one by one), with the list
as the preview and a confirmation; the daemon answers each item on its own
(`POST /v1/answers:batch`) and each item's result is shown."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bridge.cli import safe
from bridge.cli.batch import parse_numbers
from bridge.cli.exits import Failed
from bridge.cli.prompts import Quit

if TYPE_CHECKING:
    from bridge.cli.inbox import Inbox

View = dict[str, Any]
CHOICES = "a approve all · e N N approve all except · Enter one by one · q quit > "


def offer_batches(inbox: Inbox, queue: list[View]) -> list[View]:
    """Offer each batch of two or more queued requests (numbered in the queue's order, the
    most urgent first); the queue without what was decided."""
    queued = {str(v.get("id")): v for v in queue}
    for batch in inbox.client.batches(source=inbox.filters["source"], route=inbox.filters["route"]):
        ids = [i for i in queued if i in {str(x) for x in batch.get("ids", [])} and i not in inbox.done]
        if len(ids) >= 2:
            _offer(inbox, ids, [str(queued[i].get("title", "")) for i in ids], str(batch.get("label", "")))
    return [v for v in queue if str(v.get("id")) not in inbox.done]


def _offer(inbox: Inbox, ids: list[str], titles: list[str], label: str) -> None:
    term = inbox.term
    term.say("")
    term.say(f"── {len(ids)} alike requests: {safe.line(label)} " + "─" * 20)
    for n, title in enumerate(titles, start=1):
        term.say(f"  {n:>3}. {safe.line(title)}")
    while True:
        said = term.ask(CHOICES).lower()
        if said in ("", "o"):
            return
        if said == "q":
            raise Quit()
        verb, _, rest = said.partition(" ")
        if verb not in ("a", "e") or (verb == "e" and not rest.strip()):
            term.say("  type a, e followed by item numbers (e 3 5), Enter, or q")
            continue
        try:
            left_out = parse_numbers(rest, len(ids)) if verb == "e" else set()
        except Failed as exc:
            term.say(f"  {exc.message}")
            continue
        chosen = [i for n, i in enumerate(ids, start=1) if n not in left_out]
        if not chosen or term.ask(f"approve {len(chosen)} of {len(ids)}? [y/N] > ").lower() not in ("y", "yes"):
            term.say("  nothing sent")
            return
        break
    result = inbox.client.answer_batch(chosen, "yes", responder=inbox.responder)
    titled = dict(zip(ids, titles, strict=True))
    for item in result.get("results", []):
        why = f": {safe.line(str(item['reason']))}" if item.get("reason") else ""
        term.say(f"  {item.get('id')} {safe.line(titled.get(str(item.get('id')), ''))} · {item.get('outcome')}{why}")
        if item.get("outcome") in ("answered", "voted"):
            inbox.answered += 1
            inbox.done.add(str(item.get("id")))
