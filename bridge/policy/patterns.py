"""The value patterns a rule matches with: a glob (`npm *`), or `re:` and a regular expression
(searched in the value). A pattern that could hang the daemon is refused when the config is
read: longer than MAX_PATTERN, a backreference, or a repeat inside a repeat (`(a+)+`,
`(a|aa)*`: catastrophic backtracking); Python's `re` has no timeout, so this is the guard."""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from fnmatch import fnmatchcase
from typing import Any

#: the parser `re` itself uses (`sre_parse` before 3.11): a pattern's structure, to judge it
sre_parse: Any = importlib.import_module("re._parser")

MAX_PATTERN = 500
#: a value longer than this is matched by no pattern (arguments are bounded by the request model)
MAX_VALUE = 100_000
REGEX_PREFIX = "re:"

_REPEATS = {sre_parse.MAX_REPEAT, sre_parse.MIN_REPEAT, getattr(sre_parse, "POSSESSIVE_REPEAT", None)} - {None}


class HostilePattern(ValueError):
    """A pattern refused because matching it could take forever; the message says how to fix it."""


def compile_value(pattern: str) -> Callable[[str], bool]:
    """A test for one string value: the glob, or (`re:`) the regex searched in it."""
    if len(pattern) > MAX_PATTERN:
        raise HostilePattern(f"longer than {MAX_PATTERN} characters: shorten it (or split it into several rules)")
    if pattern.startswith(REGEX_PREFIX):
        regex = safe_regex(pattern[len(REGEX_PREFIX):])
        return lambda value: len(value) <= MAX_VALUE and regex.search(value) is not None
    return lambda value: len(value) <= MAX_VALUE and fnmatchcase(value, pattern)


def safe_regex(text: str) -> re.Pattern[str]:
    """Compile `text`, refusing what may backtrack without end (HostilePattern) or does not
    compile (ValueError with re's own words)."""
    try:
        parsed = sre_parse.parse(text)
        compiled = re.compile(text)
    except re.error as exc:
        raise ValueError(f"not a regular expression: {exc}") from None
    _walk(parsed, inside_repeat=False)
    return compiled


def _walk(items: Any, *, inside_repeat: bool) -> None:
    for op, arg in items:
        if op in (sre_parse.GROUPREF, getattr(sre_parse, "GROUPREF_EXISTS", None)):
            raise HostilePattern("a backreference (\\1): not allowed in rules; match the value without it")
        if op in _REPEATS:
            _low, high, body = arg
            unbounded = high == sre_parse.MAXREPEAT or high > 100
            if inside_repeat and unbounded:
                raise HostilePattern("a repeat inside a repeat (like (a+)+ or (a|aa)*) can backtrack for "
                                     "ever: write it with one repeat, e.g. a+ instead of (a+)+")
            _walk(body, inside_repeat=inside_repeat or unbounded)
        elif op is sre_parse.SUBPATTERN:
            _walk(arg[-1], inside_repeat=inside_repeat)
        elif op is sre_parse.BRANCH:
            if inside_repeat:
                raise HostilePattern("alternatives inside a repeat (like (a|aa)*) can backtrack for ever: "
                                     "repeat a character class ([ab]*) or drop the repeat")
            for branch in arg[1]:
                _walk(branch, inside_repeat=inside_repeat)
        elif op in (sre_parse.ASSERT, sre_parse.ASSERT_NOT):
            _walk(arg[1], inside_repeat=inside_repeat)


def scalar_text(value: Any) -> str | None:
    """An argument value as the text a pattern reads (None: not a scalar, matched by nothing)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return str(value)
    return None


def at_path(data: Any, path: str) -> Any:
    """The value at a dotted field path (`command`, `input.file_path`, `edits.0.old_string`);
    None when there is none."""
    current = data
    for part in path.split("."):
        if isinstance(current, dict):
            if part not in current:
                return None
            current = current[part]
        elif isinstance(current, list) and part.isdigit() and int(part) < len(current):
            current = current[int(part)]
        else:
            return None
    return current
