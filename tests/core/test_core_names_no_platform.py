"""The core (`bridge/`) names no platform in its code: each channel adapter declares its
handle prefix, handle rules, DM targets, when it is on and its fix texts in its spec
(`adapters/<name>/spec.py`, bridge.specs), and the core reads the specs.

The rule, precisely: in every module under `bridge/`, parsed (so comments and docstrings,
which may explain with examples, are not looked at),

- no identifier (a name, attribute, function, class, argument, keyword or import alias)
  has a platform's name as one of its words (`slack_target`, `TELEGRAM_CHAT_ENV`, `.web`);
- no other string literal holds a platform's handle prefix or section key (`slack:`,
  `email:`), is a platform's name (`"web"`), or names a platform with a distinctive name
  anywhere (`"a Slack handle…"`, `"SLACK_BOT_TOKEN"`, `"telegram.ext"`).

`web` and `email` are also English words ("the web inbox", "an email"): in prose they pass.
Platforms are every channel spec found plus the channels this wave adds.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from bridge.specs import channel_specs

CORE = Path(__file__).resolve().parents[2] / "bridge"
#: channels being added next to those with a spec today (the rule holds for them already)
COMING = ("teams", "webpush", "ntfy", "github", "gitlab")
#: platform names that are also ordinary words of the product's prose
PROSE_WORDS = frozenset({"web", "email"})
#: (module, a literal or identifier, or part of a literal) that may stay, and why
ALLOWED = {
    # the demo is a tour of the web inbox: it switches the inbox on and routes to it
    ("demo.py", "web"),
    ("demo.py", "log in with web.password"),
    # documentation for people: an example handle in the CLI's help and the API's schema
    ("cli/answer.py", "such as slack:U0123)"),
    ("http/api.py", "such as slack:U…)"),
}


def _allowed(module: str, text: str) -> bool:
    return any(m == module and (part == text or (len(part) > 12 and part in text)) for m, part in ALLOWED)


def platforms() -> list[str]:
    return sorted({*(s.name for s in channel_specs()), *COMING})


def _words(identifier: str) -> set[str]:
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", identifier)
    return {w.lower() for w in re.split(r"[_.]", spaced) if w}


def _string_names(text: str, name: str) -> bool:
    if text.strip().lower() == name:
        return True
    if re.search(rf"(?<![\w.-]){re.escape(name)}:", text, re.I):
        return True  # a handle prefix or a section key: `slack:#ops`, `email:ana@…`, "the slack: section"
    if name in PROSE_WORDS:
        return False
    return re.search(rf"(?<![a-z0-9]){re.escape(name)}(?![a-z0-9])", text, re.I) is not None


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def _identifiers(node: ast.AST) -> Iterator[str]:
    if isinstance(node, ast.Name):
        yield node.id
    elif isinstance(node, ast.Attribute):
        yield node.attr
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        yield node.name
    elif isinstance(node, ast.arg):
        yield node.arg
    elif isinstance(node, ast.keyword) and node.arg:
        yield node.arg
    elif isinstance(node, ast.alias):
        yield node.asname or node.name
    elif isinstance(node, ast.ImportFrom) and node.module:
        yield node.module


def findings(source: str, module: str, names: list[str]) -> list[str]:
    """Where `source` (the module `module`) names one of `names` in code."""
    tree = ast.parse(source)
    docs = _docstrings(tree)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            hits = [n for n in names if _string_names(node.value, n)]
            if hits and not _allowed(module, node.value):
                out.append(f"{module}:{node.lineno}: {node.value[:60]!r} names {', '.join(hits)}")
        for ident in _identifiers(node):
            words = _words(ident)
            hits = [n for n in names if n in words]
            if hits and not _allowed(module, ident):
                out.append(f"{module}:{getattr(node, 'lineno', '?')}: identifier {ident} names {', '.join(hits)}")
    return out


def test_no_module_of_the_core_names_a_platform() -> None:
    names = platforms()
    assert {"slack", "telegram", "email", "web"} <= set(names)  # the specs were found
    problems = []
    for path in sorted(CORE.rglob("*.py")):
        problems += findings(path.read_text(encoding="utf-8"), str(path.relative_to(CORE)), names)
    assert problems == [], "\n".join(problems)


@pytest.mark.parametrize("code", [
    'TARGET = "slack:#ops"',
    'FIX = "add an email: section with smtp_url"',
    'if name == "web": pass',
    'HELP = "a Slack handle is a user id"',
    'ENV = "TELEGRAM_CHAT_ID"',
    'LOGGERS = ("telegram.ext",)',
    "def slack_target(value): return value",
    "TELEGRAM_CHAT_ENV = 1",
    "x = settings.web",
    "f(teams=1)",
    "from adapters.slack import build_channel",
])
def test_the_rule_catches_a_platform_named_in_code(code: str) -> None:
    assert findings(code, "example.py", platforms()) != []


@pytest.mark.parametrize("code", [
    '"""The `slack:` section, `telegram:42`, SLACK_CHANNEL: docstrings explain with examples."""',
    "# a comment may say slack: too\nx = 1",
    'HELP = "Run the daemon (web inbox, HTTP API, sources, channels)."',
    'HELP = "an email address in lower case"',
    'TARGET = "webhook"',
    'KIND = "api:ci"',
    "def website(): pass",
])
def test_the_rule_lets_prose_docstrings_and_other_words_pass(code: str) -> None:
    assert findings(code, "example.py", platforms()) == []
