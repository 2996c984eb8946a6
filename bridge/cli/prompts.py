"""Asking a person at a terminal for each kind of question: numbered options for choices,
y/n for confirmations, a hidden prompt for secrets, the editor for `edit`, one line per
form field. Used by `inbox` and by `answer ID` without a value.

In every prompt an empty line skips the request (or leaves an optional value empty), `q`
quits where the answer cannot be free text, and Ctrl-C quits anywhere. A secret is read
without echo and is never printed, logged or kept here beyond the call that sends it.
"""

from __future__ import annotations

import contextlib
import getpass
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import click

from bridge.cli import safe
from bridge.cli.render import INDENT, pretty

YES = ("y", "yes", "approve")
NO = ("n", "no", "reject")


class Skip(Exception):
    """The person left this request for later (or for someone else)."""


class Quit(Exception):
    """The person is done: `q`, Ctrl-D."""


def _visible_input(prompt: str) -> str:
    with contextlib.suppress(ImportError):
        import readline  # noqa: F401  # line editing and history for input(), where the platform has it
    return input(prompt)


def _hidden_input(prompt: str) -> str:
    return getpass.getpass(prompt)


def _editor(text: str) -> str | None:
    """`text` as the person left it in $VISUAL / $EDITOR (None: not saved)."""
    edited: str | None = click.edit(text, extension=".json", require_save=False)
    return edited


@dataclass
class Terminal:
    """Where prompts read and write; tests and other front ends can swap the functions."""

    read: Callable[[str], str] = _visible_input
    read_hidden: Callable[[str], str] = _hidden_input
    edit: Callable[[str], str | None] = _editor

    def say(self, text: str = "") -> None:
        click.echo(text)

    def ask(self, prompt: str, *, hidden: bool = False) -> str:
        try:
            return (self.read_hidden if hidden else self.read)(prompt).strip()
        except EOFError:
            raise Quit() from None


def ask_values(view: dict[str, Any], term: Terminal) -> tuple[dict[str, Any], str | None]:
    """Every question of the request in turn; the values by question id and, after a
    rejection, the reason the person gave (None for none)."""
    values: dict[str, Any] = {}
    questions = view.get("questions") or []
    for n, question in enumerate(questions, 1):
        if len(questions) > 1:
            term.say(f"{INDENT}question {n} of {len(questions)}")
        values[str(question.get("id"))] = ask_question(question, term)
    reason = None
    if any(q.get("kind") == "confirm" and values.get(str(q.get("id"))) == "no" for q in questions):
        reason = term.ask(f"{INDENT}reason (optional, sent with your answer; Enter for none): ") or None
    if len(questions) > 1:
        shown = ", ".join(f"{k}={'[secret]' if _is_secret(questions, k) else _short(v)}" for k, v in values.items())
        term.say(f"{INDENT}answers: {shown}")
        if term.ask(f"{INDENT}send these answers? [Y/n] ").lower() in NO:
            raise Skip()
    return values, reason


def ask_question(question: dict[str, Any], term: Terminal) -> Any:
    kind = str(question.get("kind", "text"))
    prompt = safe.indented(str(question.get("prompt", "")), INDENT)
    term.say(prompt)
    ask = {"confirm": _confirm, "choice": _choice, "multi_choice": _multi_choice, "secret": _secret,
           "form": _form, "edit": _edit}.get(kind, _text)
    return ask(question, term)


def _confirm(_question: dict[str, Any], term: Terminal) -> str:
    while True:
        given = term.ask(f"{INDENT}y approve · n reject · Enter skip · q quit > ").lower()
        if given in YES:
            return "yes"
        if given in NO:
            return "no"
        _command(given)
        term.say(f"{INDENT}type y or n")


def _command(given: str) -> None:
    """Empty: skip; q: quit; anything else: not a command."""
    if given == "":
        raise Skip()
    if given in ("q", "quit"):
        raise Quit()


def _numbered(options: list[str], term: Terminal) -> None:
    for n, option in enumerate(options, 1):
        term.say(f"{INDENT * 2}{n}) {safe.line(option)}")


def _pick(given: str, options: list[str]) -> str | None:
    """An option by its number or its exact text."""
    if given.isdigit() and 1 <= int(given) <= len(options):
        return options[int(given) - 1]
    return given if given in options else None


def _choice(question: dict[str, Any], term: Terminal) -> str:
    options = [str(o) for o in question.get("options") or []]
    _numbered(options, term)
    while True:
        given = term.ask(f"{INDENT}1-{len(options)} · Enter skip · q quit > ")
        _command(given.lower())
        picked = _pick(given, options)
        if picked is not None:
            return picked
        term.say(f"{INDENT}type a number from 1 to {len(options)}")


def _multi_choice(question: dict[str, Any], term: Terminal) -> list[str]:
    options = [str(o) for o in question.get("options") or []]
    _numbered(options, term)
    optional = not question.get("required", True)
    hint = " · - none" if optional else ""
    while True:
        given = term.ask(f"{INDENT}numbers, e.g. 1,3{hint} · Enter skip · q quit > ")
        if optional and given == "-":
            return []
        _command(given.lower())
        parts = [p for p in given.replace(",", " ").split() if p]
        picked = [_pick(p, options) for p in parts]
        if parts and all(p is not None for p in picked):
            return [o for o in options if o in picked]
        term.say(f"{INDENT}type numbers from 1 to {len(options)}, separated by commas")


def _text(question: dict[str, Any], term: Terminal) -> str:
    required = question.get("required", True)
    hint = "Enter on an empty line skips" if required else "Enter leaves it empty"
    given = term.ask(f"{INDENT}({hint}) > ")
    if given == "" and required:
        raise Skip()
    return given


def _secret(question: dict[str, Any], term: Terminal) -> str:
    given = term.ask(f"{INDENT}(hidden as you type; Enter on an empty line skips) > ", hidden=True)
    if given == "" and question.get("required", True):
        raise Skip()
    return given


def _form(question: dict[str, Any], term: Terminal) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for form_field in question.get("fields") or []:
        name = str(form_field.get("name"))
        label = safe.line(form_field.get("label") or name)
        required = form_field.get("required", True)
        options = [str(o) for o in form_field.get("options") or []]
        if options:
            term.say(f"{INDENT}{label}:")
            _numbered(options, term)
        while True:
            hint = f"1-{len(options)}, " if options else ""
            hint += "Enter skips the request" if required else "optional, Enter leaves it empty"
            given = term.ask(f"{INDENT}{'' if options else label + ' '}({hint}) > ")
            if given == "":
                if required:
                    raise Skip()
                break
            if options:
                picked = _pick(given, options)
                if picked is None:
                    term.say(f"{INDENT}type a number from 1 to {len(options)}")
                    continue
                given = picked
            values[name] = given
            break
    return values


def _edit(question: dict[str, Any], term: Terminal) -> Any:
    proposed = question.get("default")
    text = json.dumps(proposed if proposed is not None else {}, indent=2, ensure_ascii=False) + "\n"
    if proposed is not None:
        term.say(f"{INDENT}proposed:")
        term.say(safe.indented(pretty(proposed), INDENT * 2))
    while True:
        given = term.ask(f"{INDENT}a accept as proposed · e edit in $EDITOR · Enter skip · q quit > ").lower()
        _command(given)
        if given in ("a", "accept") and proposed is not None:
            return proposed
        if given not in ("e", "edit"):
            term.say(f"{INDENT}type a or e")
            continue
        edited = term.edit(text)
        if edited is None:
            term.say(f"{INDENT}the editor closed without saving: nothing changed")
            continue
        text = edited
        try:
            value = json.loads(edited)
        except ValueError as exc:
            term.say(f"{INDENT}not valid JSON ({exc}): e to edit again")
            continue
        term.say(f"{INDENT}edited:")
        term.say(safe.indented(pretty(value), INDENT * 2))
        return value


def _is_secret(questions: list[dict[str, Any]], qid: str) -> bool:
    return any(q.get("id") == qid and q.get("kind") == "secret" for q in questions)


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return safe.line(text, 60)
