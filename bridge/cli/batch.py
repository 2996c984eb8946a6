"""`answer --all [--filter KEY=PATTERN]... VALUE`: one answer to every open request that
matches, after a numbered preview and a confirmation (`--yes` skips it; `--except 3,5`
leaves items out). The daemon answers each item through its ordinary answer path
(`POST /v1/answers:batch`) and the result of each is shown: answered, a vote counted, or
refused with the reason."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from fnmatch import fnmatchcase
from typing import Any

import click

from bridge.batches import MAX_BATCH
from bridge.cli.exits import REFUSED, USAGE, Failed

OPEN = ["pending", "posted"]
#: request fields a filter may name (anything else is `labels.<name>`)
FIELDS = ("source", "tool", "title", "route", "agent", "engine", "workspace", "run_id")


def parse_filters(filters: Sequence[str]) -> list[tuple[str, str]]:
    """`KEY=PATTERN` pairs (shell-style patterns: `fs.*`, `Delete *`); Failed(USAGE) otherwise."""
    out = []
    for text in filters:
        key, sep, pattern = text.partition("=")
        key = key.strip()
        if not sep or not key or not pattern:
            raise Failed(f"--filter {text!r}: write KEY=PATTERN, e.g. tool=fs.delete or title='Delete *'", USAGE)
        if key not in FIELDS and not key.startswith("labels."):
            raise Failed(f"--filter {key}: use one of {', '.join(FIELDS)} or labels.<name>", USAGE)
        out.append((key, pattern))
    return out


def matches(view: dict[str, Any], filters: list[tuple[str, str]]) -> bool:
    for key, pattern in filters:
        value = (view.get("labels") or {}).get(key[len("labels."):]) if key.startswith("labels.") else view.get(key)
        if value is None or not fnmatchcase(str(value), pattern):
            return False
    return True


def parse_numbers(text: str | None, count: int) -> set[int]:
    """`3,5` or `3 5`: item numbers of the preview (1-based)."""
    if not text:
        return set()
    parts = text.replace(",", " ").split()
    if not all(p.isdigit() for p in parts):
        raise Failed(f"--except {text!r}: give item numbers, e.g. --except 3,5", USAGE)
    numbers = {int(p) for p in parts}
    wrong = sorted(n for n in numbers if not 1 <= n <= count)
    if wrong:
        raise Failed(f"--except: the preview lists items 1 to {count}, not {', '.join(map(str, wrong))}", USAGE)
    return numbers


def run_batch(bridge: Any, value: str | None, values: dict[str, Any] | None, filters: Sequence[str],
              exclude: str | None, yes: bool, responder: str | None, reason: str | None, *,
              from_stdin: bool = False) -> dict[str, Any]:
    """Preview, confirm, answer; the batch result (Failed when nothing is sent). A secret is
    only taken from stdin (`from_stdin`), never the command line, and never shown."""
    wanted = parse_filters(filters)
    views = sorted((v for v in bridge.list(OPEN, limit=1000) if matches(v, wanted)),
                   key=lambda v: str(v.get("created_at", "")))  # numbered oldest first
    if not views:
        raise Failed("no open request matches" + (f" {' '.join(filters)}" if filters else ""), REFUSED)
    skip = parse_numbers(exclude, len(views))
    chosen = [v for n, v in enumerate(views, start=1) if n not in skip]
    if len(chosen) > MAX_BATCH:
        raise Failed(f"{len(chosen)} requests match: a batch answers at most {MAX_BATCH}; narrow --filter", USAGE)
    if not chosen:
        raise Failed("every matching request is excluded: nothing to send", REFUSED)
    secret = sorted({str(q.get("id")) for v in chosen for q in v.get("questions") or []
                     if q.get("kind") == "secret" and (values is None or q.get("id") in values)})
    if secret and not from_stdin:
        raise Failed(f"a secret on the command line ({', '.join(secret)}) stays in `ps` and your shell history: "
                     "pass --values - and send the JSON on stdin", USAGE)
    shown = value if values is None else {k: ("[secret]" if k in secret else v) for k, v in values.items()}
    click.echo(f"{len(chosen)} of {len(views)} open request(s) will be answered {shown!r}:", err=True)
    for n, view in enumerate(views, start=1):
        mark = "  skip" if n in skip else ""
        click.echo(f"  {n:>3}. {view.get('id')}  {str(view.get('title', ''))[:70]}{mark}", err=True)
    if not yes:
        if not sys.stdin.isatty():
            raise Failed("not a terminal: pass --yes to answer without being asked", USAGE)
        if not click.confirm(f"Answer these {len(chosen)}?", default=False, err=True):
            raise Failed("nothing sent", REFUSED)
    ids = [str(v.get("id")) for v in chosen]
    result: dict[str, Any] = bridge.answer_batch(ids, value, values=values, responder=responder, reason=reason)
    return result


def result_lines(result: dict[str, Any]) -> list[str]:
    counts = ", ".join(f"{n} {what}" for what, n in sorted((result.get("counts") or {}).items()))
    lines = [f"batch {result.get('batch')}: {counts}"]
    for item in result.get("results") or []:
        why = f": {item.get('reason')}" if item.get("reason") else ""
        lines.append(f"  {item.get('id')}  {item.get('outcome')}{why}")
    return lines
