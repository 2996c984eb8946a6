"""`answer ID [VALUE]`: answer a request through the daemon (or the store, `--offline`).

Without VALUE, in a terminal, it shows the request and asks for each question the way the
inbox does (a hidden prompt for a secret, the editor for `edit`). A secret is never taken
from the command line, where `ps` and the shell history would keep it: type it, or pass `-`
and send it on stdin.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from bridge.cli import render, safe
from bridge.cli.backend import complete_ids, open_bridge
from bridge.cli.exits import REFUSED, USAGE, Failed, codes
from bridge.cli.grants import GRANT_HELP, grant_option
from bridge.cli.options import Cli, daemon_options, json_option, offline_option, print_json

OPEN = ("pending", "posted")
AS_HELP = ("The name shown with the answer. Through the API the answer counts as your token's identity "
           "(api:<token name>) and NAME is only shown, unless the token has act_for_others: then NAME (a "
           "person of people:, as person:<name>, <name> or one of their handles such as slack:U0123) is who "
           "answered. Offline: recorded as cli:NAME "
           "(default: your login).")


@click.command(short_help="Answer a request (checked against its question).",
               epilog=codes("answered, or the vote recorded",
                            "closed already, not allowed, no such request, or nothing sent",
                            "the value does not fit, or a usage or config error"))
@click.argument("request_id", metavar="ID", shell_complete=complete_ids)
@click.argument("value", required=False)
@click.option("-q", "--question", "question_id", metavar="QID",
              help="The question VALUE answers (needed when the request has several).")
@click.option("--values", "values_json", metavar="JSON",
              help='Every answer at once, by question id: \'{"approve": "yes", "note": "ok"}\' (- reads it '
                   'from stdin, the way to send a secret).')
@click.option("--as", "responder", metavar="NAME", help=AS_HELP)
@click.option("--reason", help="Why: shown with the answer; a rejection's reason reaches the engine where it "
                               "can carry one (callbacks, Delta's response.txt, LangGraph, Mastra).")
@click.option("--grant", "grant_text", metavar="SCOPE", help=GRANT_HELP)
@json_option
@offline_option
@daemon_options
@click.pass_obj
def answer(cli: Cli, request_id: str, value: str | None, question_id: str | None, values_json: str | None,
           responder: str | None, reason: str | None, grant_text: str | None, as_json: bool, offline: bool) -> int:
    """Answer a request. VALUE is checked against its question: yes/no for a confirmation,
    an option for a choice, JSON (or a,b) for several choices, JSON for a form or an edit;
    `-` reads it from stdin. Leave VALUE out to be asked (numbered options, a hidden prompt
    for a secret, your $EDITOR for an edit)."""
    from hitl_bridge_client import InvalidRequest

    grant = grant_option(grant_text)
    with open_bridge(cli, offline, writes=True) as bridge:
        view = bridge.get(request_id)
        if view.get("state") not in OPEN:
            raise Failed(closed_text(view))
        values, asked_reason = collect(view, value, question_id, values_json)
        granting = {"grant": grant} if grant is not None else {}
        try:
            result = bridge.answer(request_id, values=values, responder=responder, reason=reason or asked_reason,
                                   **granting)
        except InvalidRequest as exc:
            raise Failed(f"invalid answer: {exc.detail}", USAGE) from None
        after = bridge.get(request_id) if result.get("state") in OPEN else result  # a vote: show the tally
    if as_json:
        print_json(after)
        return 0
    for text in outcome_lines(after, responder):
        click.echo(text)
    return 0


def collect(view: dict[str, Any], value: str | None, question_id: str | None,
            values_json: str | None) -> tuple[dict[str, Any], str | None]:
    """The values to send (and a reason typed at the prompt)."""
    questions = view.get("questions") or []
    if values_json is not None:
        if value is not None or question_id:
            raise Failed("give either --values or VALUE (with -q), not both", USAGE)
        try:
            values = json.loads(sys.stdin.read() if values_json == "-" else values_json)
        except ValueError as exc:
            raise Failed(f"--values is not valid JSON: {exc}", USAGE) from None
        if not isinstance(values, dict):
            raise Failed('--values must be a JSON object by question id, e.g. {"approve": "yes"}', USAGE)
        secret = sorted(str(q.get("id")) for q in questions if q.get("kind") == "secret" and q.get("id") in values)
        if secret and values_json != "-":
            raise Failed(f"a secret on the command line ({', '.join(secret)}) stays in `ps` and your shell "
                         "history: pass --values - and send the JSON on stdin", USAGE)
        return values, None
    if value is None:
        return ask(view)
    if question_id is None and len(questions) > 1:
        ids = ", ".join(str(q.get("id")) for q in questions)
        raise Failed(f"this request has several questions ({ids}): pass --question QID, or --values JSON", USAGE)
    question = questions[0] if question_id is None else next(
        (q for q in questions if q.get("id") == question_id), None)
    if question is None:
        raise Failed(f"no question {question_id!r}; its questions: {[q.get('id') for q in questions]}", USAGE)
    if question.get("kind") == "secret" and value != "-":
        raise Failed("a secret on the command line stays in `ps` and your shell history: leave VALUE out to "
                     "type it hidden, or pass - and send it on stdin", USAGE)
    if value == "-":
        value = sys.stdin.read().removesuffix("\n")
    return {str(question.get("id")): parse(question, value)}, None


def parse(question: dict[str, Any], text: str) -> Any:
    """JSON for the kinds whose answer is structured (multi_choice also takes `a,b`); an
    option may be given by its number, as `show` lists them (`2`, or `1,3`)."""
    kind = question.get("kind")
    options = [str(o) for o in question.get("options") or []]
    if kind == "choice" and text not in options:
        return by_number(text, options) or text
    if kind in ("form", "edit", "multi_choice"):
        try:
            value = json.loads(text)
        except ValueError:
            value = text  # the daemon checks it: multi_choice accepts "a,b", the others say what is wrong
        if kind == "multi_choice" and isinstance(value, str | int):
            parts = [p.strip() for p in str(value).split(",") if p.strip()]
            picked = [by_number(p, options) if p not in options else p for p in parts]
            return [p for p in picked if p] if all(picked) else value
        return value
    return text


def by_number(text: str, options: list[str]) -> str | None:
    """Option number `text` (1-based), when it is one."""
    return options[int(text) - 1] if text.isdigit() and 1 <= int(text) <= len(options) else None


def ask(view: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    from bridge.cli.prompts import Quit, Skip, Terminal, ask_values

    if not sys.stdin.isatty():
        raise Failed("give a VALUE (or --values JSON, or - to read stdin); without one, answer runs in a "
                     "terminal and asks", USAGE)
    click.echo("\n".join(render.decision(view, questions=False)))
    try:
        return ask_values(view, Terminal())
    except (Skip, Quit):
        raise Failed("nothing sent", REFUSED) from None


def closed_text(view: dict[str, Any]) -> str:
    from bridge.outcome import closed_state

    answer = view.get("answer")
    text = f"{view.get('id')} is already {closed_state(str(view.get('state')), answer.get('via') if answer else None)}"
    if answer:
        by = render.responder_text(answer.get("responder") or {})
        text += (f": {render.values_text(answer.get('values'))} by {by}"
                 f" via {safe.line(answer.get('via'))} at {render.when(answer.get('answered_at'), relative=False)}")
    elif view.get("error"):
        text += f": {safe.line(view['error'])}"
    return text + " (nothing sent)"


def outcome_lines(view: dict[str, Any], claimed: str | None) -> list[str]:
    """What was recorded, and as whom: a name given with --as that only shows says so."""
    answer = view.get("answer")
    if answer:
        responder = answer.get("responder") or {}
        handle = f"{responder.get('platform')}:{responder.get('user_id')}"
        lines = [f"{view.get('id')} {view.get('state')}: {render.values_text(answer.get('values'))} "
                 f"by {render.responder_text(responder)}" + (f" — {safe.line(answer['reason'])}"
                                                             if answer.get("reason") else "")]
    else:
        votes = view.get("votes") or []
        mine = next((v for v in reversed(votes) if claimed and v.get("name") == claimed), votes[-1] if votes else {})
        handle = str(mine.get("voter", ""))
        tally = view.get("tally") or f"{len(votes)} of {view.get('quorum')}"
        lines = [f"{view.get('id')} still {view.get('state')}: vote recorded as {safe.line(handle)} "
                 f"({safe.line(tally)})"]
    note = shown_only(claimed, handle)
    return lines + ([note] if note else [])


def shown_only(claimed: str | None, handle: str) -> str | None:
    """The note for `--as NAME` when the API counted the answer as the token's own."""
    if not claimed or not handle.startswith("api:") or claimed in (handle, handle.removeprefix("api:")):
        return None
    token = handle.removeprefix("api:")
    return (f"note: counted as {safe.line(handle)}, this token's identity; {safe.line(claimed)!r} is only the name "
            f"shown (the token may not act for others: http.api_tokens.{safe.line(token)}.act_for_others)")
