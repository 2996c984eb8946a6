"""How a person reads a request (pure functions): the decision as a sentence with a tone
and an icon, the answer as labelled values per question, the context as a key/value tree,
and the changes an `edit` answer made to the proposed arguments.

Nothing here returns a secret: answers go through `Request.redacted_answer()`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from bridge.models import Request
from bridge.outcome import OutcomeKind, outcome_of
from bridge.questions import Question, QuestionKind

#: how a channel name reads in a sentence ("… via Slack", "… in the inbox")
VIA = {"slack": "via Slack", "telegram": "via Telegram", "web": "in the inbox", "email": "by email",
       "api": "through the API", "cli": "from the command line", "mcp": "through MCP"}
MAX_NODES = 400
MAX_DEPTH = 8
LONG_TEXT = 280
SECRET_MARK = "[secret]"


@dataclass(frozen=True)
class Decision:
    """How a closed request ended. `tone`: approved | rejected | answered | expired |
    cancelled | failed; `icon` names a decoration (check, x, clock, ban, lock, alert): the
    words say it all."""

    tone: str
    icon: str
    verb: str  # the core's words, who included ("Rejected by ana")
    via: str = ""
    at: datetime | None = None
    reason: str = ""
    #: decided without a person (a rule or a standing approval): the verb says which
    automatic: bool = False
    #: a standing approval made with the answer: when it stops, and what it matches
    until: datetime | None = None
    pattern: str = ""

    @property
    def sentence(self) -> str:
        return f"{self.verb} {self.via}" if self.via else self.verb


_TONE = {OutcomeKind.expired_with_default: "expired"}
_ICON = {OutcomeKind.approved: "check", OutcomeKind.rejected: "x", OutcomeKind.answered: "check",
         OutcomeKind.expired: "clock", OutcomeKind.expired_with_default: "clock", OutcomeKind.cancelled: "ban",
         OutcomeKind.failed: "alert"}


def decision(request: Request) -> Decision | None:
    """The decision of a closed request (the core's words, `bridge.outcome`); None while it
    is open."""
    ended = outcome_of(request)
    if ended is None:
        return None
    tone = _TONE.get(ended.kind, ended.kind.value)
    icon = "lock" if ended.secret else _ICON[ended.kind]
    via = VIA.get(ended.via, f"via {ended.via}") if ended.answered else ""
    if ended.automatic:
        via = ""
    grant = ended.grant
    return Decision(tone, icon, ended.headline, via=via, at=ended.at, reason=ended.reason,
                    automatic=bool(ended.automatic), until=grant.expires_at if grant else None,
                    pattern=(grant.pattern or "") if grant else "")


# context as a tree ----------------------------------------------------------------------
@dataclass
class Node:
    """One value of the context. `kind`: text | scalar | map | list | more (a cut marker)."""

    key: str
    kind: str
    text: str = ""
    children: list[Node] = field(default_factory=list)
    long: bool = False  # a text worth folding

    @property
    def size(self) -> str:
        n = len(self.children)
        return f"{n} item{'s' if n != 1 else ''}" if self.kind == "list" else f"{n} field{'s' if n != 1 else ''}"


class _Budget:
    def __init__(self, nodes: int) -> None:
        self.left = nodes


def _scalar_text(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _node(key: str, value: Any, depth: int, budget: _Budget) -> Node:
    budget.left -= 1
    if isinstance(value, str):
        return Node(key, "text", value, long=len(value) > LONG_TEXT or value.count("\n") > 4)
    if not isinstance(value, dict | list):
        return Node(key, "scalar", _scalar_text(value))
    if depth >= MAX_DEPTH:
        text = json.dumps(value, ensure_ascii=False, default=str)
        return Node(key, "text", text, long=len(text) > LONG_TEXT)
    items = list(value.items()) if isinstance(value, dict) else [(str(i + 1), v) for i, v in enumerate(value)]
    node = Node(key, "map" if isinstance(value, dict) else "list")
    for index, (child_key, child) in enumerate(items):
        if budget.left <= 0:
            node.children.append(Node("…", "more", f"{len(items) - index} more not shown"))
            break
        node.children.append(_node(str(child_key), child, depth + 1, budget))
    return node


def context_tree(value: dict[str, Any]) -> list[Node]:
    """The context's top-level entries as nodes (at most MAX_NODES values in all)."""
    root = _node("", value, 0, _Budget(MAX_NODES))
    return root.children


# answers, per question --------------------------------------------------------------------
@dataclass
class Change:
    """One difference between proposed and edited arguments. `kind`: added | removed | changed."""

    path: str
    kind: str
    old: str = ""
    new: str = ""


def _json_text(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 300 else text[:299] + "…"


def _canonical(value: Any) -> str:
    """JSON text where `true` and `1` differ (Python's `==` calls them equal)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def json_diff(old: Any, new: Any, path: str = "", limit: int = 200) -> list[Change]:
    """What changed from `old` to `new`: per key for objects, per index for lists of the
    same length, else the whole value (at most `limit` changes)."""
    out: list[Change] = []

    def walk(a: Any, b: Any, where: str) -> None:
        if len(out) >= limit or _canonical(a) == _canonical(b):
            return
        if isinstance(a, dict) and isinstance(b, dict):
            for key in [*a, *(k for k in b if k not in a)]:
                child = f"{where}.{key}" if where else str(key)
                if key not in b:
                    out.append(Change(child, "removed", old=_json_text(a[key])))
                elif key not in a:
                    out.append(Change(child, "added", new=_json_text(b[key])))
                else:
                    walk(a[key], b[key], child)
                if len(out) >= limit:
                    return
            return
        if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
            for i, (x, y) in enumerate(zip(a, b, strict=True)):
                walk(x, y, f"{where}[{i}]")
            return
        out.append(Change(where or "(all)", "changed", _json_text(a), _json_text(b)))

    walk(old, new, path)
    return out


@dataclass
class AnswerItem:
    """One question's answer as a person reads it. `kind`: decision | text | choices | fields |
    secret | diff | tree | none."""

    label: str
    kind: str
    text: str = ""
    tone: str = ""
    items: list[str] = field(default_factory=list)
    fields: list[tuple[str, str]] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    unchanged: bool = False
    tree: list[Node] = field(default_factory=list)
    long: bool = False


def answer_item(question: Question, value: Any) -> AnswerItem:
    """How one answer value reads (`value` already redacted: secrets are `[secret]`)."""
    label = question.prompt
    kind = question.kind
    if value is None:
        return AnswerItem(label, "none", "no answer")
    if kind is QuestionKind.secret:
        return AnswerItem(label, "secret", "hidden (a secret is never shown)")
    if kind is QuestionKind.confirm:
        approved = value == "yes"
        return AnswerItem(label, "decision", "Approved" if approved else "Rejected",
                          tone="approved" if approved else "rejected")
    if kind is QuestionKind.multi_choice and isinstance(value, list):
        return AnswerItem(label, "choices", items=[str(v) for v in value] or ["none"])
    if kind is QuestionKind.form and isinstance(value, dict):
        labels: dict[str, str] = {f.name: f.label or f.name for f in question.fields}
        return AnswerItem(label, "fields", fields=[(labels.get(str(k), str(k)), _scalar_text(v))
                                                    for k, v in value.items()])
    if kind is QuestionKind.edit and isinstance(value, dict | list):
        if question.default is None:
            tree = context_tree(value) if isinstance(value, dict) else context_tree({"items": value})
            return AnswerItem(label, "tree", tree=tree)
        changes = json_diff(question.default, value)
        return AnswerItem(label, "diff", changes=changes, unchanged=not changes)
    if isinstance(value, str):
        return AnswerItem(label, "text", value, long=len(value) > LONG_TEXT or value.count("\n") > 4)
    tree = context_tree(value) if isinstance(value, dict) else context_tree({"value": value})
    return AnswerItem(label, "tree", tree=tree)


def answer_items(request: Request, values: dict[str, Any] | None = None) -> list[AnswerItem]:
    """Every question with its answer, in the request's order (`values` defaults to the
    recorded answer, redacted)."""
    shown = request.redacted_answer() if values is None else values
    if shown is None:
        return []
    secret = request.secret_question_ids
    return [answer_item(q, SECRET_MARK if q.id in secret and q.id in shown else shown.get(q.id))
            for q in request.questions]


# one line per request ----------------------------------------------------------------------
def ask_summary(request: Request) -> str:
    """What the request asks for, in a few words."""
    if len(request.questions) > 1:
        return f"{len(request.questions)} questions"
    q = request.questions[0]
    n = len(q.options)
    return {
        QuestionKind.confirm: "Approve or reject",
        QuestionKind.choice: f"Choose one of {n}",
        QuestionKind.multi_choice: f"Choose any of {n}",
        QuestionKind.text: "Reply in words",
        QuestionKind.secret: "Provide a secret",
        QuestionKind.form: f"Fill in {len(q.fields)} field{'s' if len(q.fields) != 1 else ''}",
        QuestionKind.edit: "Review the arguments",
    }[q.kind]


def one_tap(request: Request) -> bool:
    """A request answered by one button (approve/reject, or one of a few options)."""
    if len(request.questions) != 1:
        return False
    q = request.questions[0]
    return q.kind is QuestionKind.confirm or (q.kind is QuestionKind.choice and len(q.options) <= 8)


def needs_review(request: Request) -> bool:
    """The answer is checked on a confirm step before it is sent (without JavaScript): one-tap
    answers, and edited arguments (their diff). Never with a secret (never echoed back)."""
    if request.secret_question_ids:
        return False
    return one_tap(request) or any(q.kind is QuestionKind.edit for q in request.questions)
