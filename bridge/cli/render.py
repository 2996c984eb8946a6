"""What a person reads on a terminal: a request as the API shows it (`GET /v1/requests/{id}`),
rendered as text. `decision()` is what one needs to decide (title, description, context,
labels, questions, deadline); `status()` is what happened since (votes, answer, copies,
deliveries, timeline). Every value from an engine goes through `safe` first.
"""

from __future__ import annotations

import json
import shutil
import textwrap
from collections import Counter
from datetime import UTC, datetime
from typing import Any

import yaml

from bridge.cli import safe

View = dict[str, Any]
INDENT = "  "
LABEL = 11  # width of the left column


def parse_time(text: Any) -> datetime | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def span(seconds: float) -> str:
    """`1h 55m`, `3d 4h`, `40s`."""
    seconds = int(abs(seconds))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h" if hours else f"{days}d"
    if hours:
        return f"{hours}h {minutes}m" if minutes else f"{hours}h"
    return f"{minutes}m" if minutes else f"{secs}s"


def when(text: Any, now: datetime | None = None, *, relative: bool = True) -> str:
    """`2026-05-01 14:00 UTC (in 1h 55m)`."""
    at = parse_time(text)
    if at is None:
        return safe.line(text or "")
    shown = at.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
    if not relative:
        return shown
    delta = (at - (now or datetime.now(UTC))).total_seconds()
    return f"{shown} ({'in ' + span(delta) if delta >= 0 else span(delta) + ' ago'})"


def wrapped(text: str, width: int | None = None) -> str:
    """`text` with each long line wrapped to the terminal (at most 100 columns)."""
    width = width or min(100, shutil.get_terminal_size((100, 24)).columns) - 2 * len(INDENT)
    return "\n".join(textwrap.fill(line, max(40, width), break_long_words=False, break_on_hyphens=False) or line
                     for line in text.splitlines())


def row(label: str, text: str) -> str:
    return f"{INDENT}{label:<{LABEL}}{text}"


def pretty(value: Any) -> str:
    """Context and proposed arguments as YAML: nested keys indented, lists as `- item`,
    multi-line strings as blocks, anything hidden in them made visible."""
    try:
        text = yaml.dump(value, Dumper=_Dumper, sort_keys=False, allow_unicode=True, default_flow_style=False,
                         width=100)
    except (yaml.YAMLError, RecursionError, ValueError):
        text = json.dumps(value, indent=2, default=str)
    return safe.block(text.rstrip("\n").removesuffix("\n..."))


class _Dumper(yaml.SafeDumper):
    pass


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


# what one needs to decide --------------------------------------------------------------
def decision(view: View, now: datetime | None = None, *, questions: bool = True) -> list[str]:
    """What is asked; `questions=False` leaves the questions to the prompts that follow."""
    out = [f"{safe.line(view.get('title', ''))}", row("id", f"{safe.line(view.get('id'))}  "
                                                             f"[{safe.line(view.get('state'))}]")]
    origin = [f"{k} {safe.line(view[k])}" for k in ("engine", "agent", "tool") if view.get(k)]
    origin.insert(0, f"{safe.line(view.get('source', ''))}")
    out.append(row("from", " · ".join(origin)))
    for key, label in (("workspace", "workspace"), ("run_id", "run"), ("requested_by", "asked by"),
                       ("created_by", "submitted")):
        if view.get(key):
            out.append(row(label, safe.line(view[key])))
    if view.get("labels"):
        out.append(row("labels", ", ".join(f"{safe.line(k)}={safe.line(v)}" for k, v in view["labels"].items())))
    if view.get("deadline"):
        out.append(row("deadline", when(view["deadline"], now)))
    level = view.get("escalation_level") or 0
    if level:
        out.append(row("escalated", f"level {level}"))
    if view.get("responders"):
        out.append(row("who may", ", ".join(safe.line(r) for r in view["responders"])))
    if view.get("description"):
        out += ["", safe.indented(wrapped(str(view["description"])), INDENT)]
    if view.get("context"):
        out += ["", f"{INDENT}context", safe.indented(pretty(view["context"]), INDENT * 2)]
    out.append("")
    for question in (view.get("questions") or []) if questions else []:
        out += question_lines(question)
    return out


def question_lines(question: dict[str, Any]) -> list[str]:
    kind = str(question.get("kind", "text"))
    optional = "" if question.get("required", True) else ", optional"
    out = [f"{INDENT}[{safe.line(question.get('id'))}] {kind}{optional}: "
           f"{safe.indented(str(question.get('prompt', '')), INDENT * 2).lstrip()}"]
    if question.get("help_text"):
        out.append(safe.indented(str(question["help_text"]), INDENT * 3))
    if kind == "confirm":
        out.append(f"{INDENT * 3}yes / no")
    for n, option in enumerate(question.get("options") or [], 1):
        out.append(f"{INDENT * 3}{n}) {safe.line(option)}")
    for form_field in question.get("fields") or []:
        notes = [n for n in ("optional" if not form_field.get("required", True) else "",
                             "multi-line" if form_field.get("multiline") else "") if n]
        choices = " | ".join(safe.line(o) for o in form_field.get("options") or [])
        label = form_field.get("label") or form_field.get("name")
        out.append(f"{INDENT * 3}{safe.line(form_field.get('name'))}: {safe.line(label)}"
                   + (f" ({', '.join(notes)})" if notes else "") + (f" — one of {choices}" if choices else ""))
    if kind == "edit" and question.get("default") is not None:
        out.append(f"{INDENT * 3}proposed:")
        out.append(safe.indented(pretty(question["default"]), INDENT * 4))
    elif question.get("default") not in (None, "", [], {}):
        out.append(f"{INDENT * 3}default: {safe.line(json.dumps(question['default'], ensure_ascii=False))}")
    return out


# what happened since ---------------------------------------------------------------------
def values_text(values: Any) -> str:
    if not isinstance(values, dict):
        return safe.line(json.dumps(values, ensure_ascii=False), 300)
    return ", ".join(f"{safe.line(k)}={safe.line(v if isinstance(v, str) else json.dumps(v, ensure_ascii=False))}"
                     for k, v in values.items())[:2000]


def responder_text(responder: dict[str, Any]) -> str:
    """`ana (slack:U0123)`, the handle alone when it has no other name, `timeout` for the
    route's on_timeout answer, `policy:<rule>` / `grant:<id>` for an automatic decision."""
    platform, user = responder.get("platform"), responder.get("user_id")
    if platform == user:
        return safe.line(user)
    handle = f"{platform}:{user}"
    if platform in ("policy", "grant"):  # a rule of policies: or a standing approval, not a person
        return f"{safe.line(handle)} (decided automatically)"
    name = responder.get("person") or responder.get("name")
    return f"{safe.line(name)} ({safe.line(handle)})" if name and name != user else safe.line(handle)


def status(view: View, events: list[dict[str, Any]] | None, now: datetime | None = None) -> list[str]:
    out: list[str] = [row("route", f"{safe.line(view.get('route'))} → "
                                   f"{', '.join(safe.line(t) for t in view.get('targets') or []) or '(no targets)'}"),
                      row("created", when(view.get("created_at"), now))]
    timers = [f"{label} {when(view[key], now)}" for label, key in (("reminder", "next_reminder_at"),
              ("escalation", "next_escalation_at")) if view.get(key) and view.get("state") in ("pending", "posted")]
    if timers or view.get("reminders_sent"):
        out.append(row("timers", f"reminders sent {view.get('reminders_sent', 0)}" + "".join(f", next {t}"
                                                                                              for t in timers)))
    votes = view.get("votes") or []
    if votes:
        out.append(row("votes", safe.line(view.get("tally") or f"{len(votes)} of {view.get('quorum')}")))
        for vote in votes:
            out.append(row("", f"{safe.line(vote.get('name'))} ({safe.line(vote.get('voter'))}): "
                               f"{values_text(vote.get('values'))} at {when(vote.get('at'), relative=False)}"))
    answer = view.get("answer")
    if answer:
        out.append(row("answer", f"{values_text(answer.get('values'))}"))
        out.append(row("", f"by {responder_text(answer.get('responder') or {})} via {safe.line(answer.get('via'))} "
                           f"at {when(answer.get('answered_at'), relative=False)}"))
        if answer.get("reason"):
            out.append(row("reason", safe.line(answer["reason"])))
    if view.get("error"):
        out.append(row("error", safe.line(view["error"])))
    posts = view.get("posts") or []
    copies = Counter(str(p.get("target")) for p in posts)  # a target with several copies: a group's DMs
    for post in posts:
        state = "ok" if post.get("ok", True) else f"FAILED: {safe.line(post.get('error'))}"
        where = f" ({safe.line(post['conversation'])})" if copies[str(post.get("target"))] > 1 and \
            post.get("conversation") else ""
        out.append(row("copy", f"{safe.line(post.get('channel'))} {safe.line(post.get('target'))}{where}: {state}"))
    for item in view.get("outbox") or []:
        state = "dead-lettered" if item.get("dead") else f"retrying, next at {when(item.get('due_at'), now)}"
        error = f", last error: {safe.line(item['last_error'], 300)}" if item.get("last_error") else ""
        out.append(row("delivery", f"{safe.line(item.get('outcome'))}: attempts {item.get('attempts')}, "
                                   f"{state}{error}"))
    if events is not None:
        out.append(f"{INDENT}timeline")
        for event in events:
            at = parse_time(event.get("at"))
            stamp = at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC") if at else "?"
            detail = ", ".join(f"{safe.line(k)}={safe.line(v if isinstance(v, str) else json.dumps(v))}"
                               for k, v in (event.get("data") or {}).items() if v not in (None, "", [], {}))
            out.append(f"{INDENT * 2}{stamp}  {safe.line(event.get('kind')):<16} "
                       f"{safe.line(event.get('actor'))}  {detail}"[:400].rstrip())
    return out


def show(view: View, events: list[dict[str, Any]] | None, now: datetime | None = None) -> str:
    return "\n".join([*decision(view, now), "", *status(view, events, now)])


# many requests -------------------------------------------------------------------------------
def table(views: list[View], width: int = 120, now: datetime | None = None) -> str:
    """One line per request: id, state, age, source, route, title (cut to the width)."""
    head = f"{'ID':<22} {'STATE':<10} {'AGE':>6}  {'SOURCE':<10} {'ROUTE':<14} TITLE"
    lines = [head]
    now = now or datetime.now(UTC)
    for view in views:
        created = parse_time(view.get("created_at"))
        age = span((now - created).total_seconds()) if created else "?"
        start = f"{safe.line(view.get('id'), 22):<22} {safe.line(view.get('state'), 10):<10} {age:>6}  " \
                f"{safe.line(view.get('source'), 10):<10} {safe.line(view.get('route'), 14):<14} "
        lines.append(start + safe.line(view.get("title", ""), max(20, width - len(start))))
    return "\n".join(lines)
