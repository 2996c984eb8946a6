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
#: a value longer than this is not read by a pattern: an allow does not match it, a deny does
MAX_VALUE = 10_000
#: unbounded repeats (`*`, `+`, `{n,}`) in one regex: each more multiplies the worst case by the value's length
MAX_REPEATS = 4
REGEX_PREFIX = "re:"

_REPEATS = {sre_parse.MAX_REPEAT, sre_parse.MIN_REPEAT, getattr(sre_parse, "POSSESSIVE_REPEAT", None)} - {None}


class HostilePattern(ValueError):
    """A pattern refused because matching it could take forever; the message says how to fix it."""


def compile_value(pattern: str, *, oversize: bool = False) -> Callable[[str], bool]:
    """A test for one string value: the glob, or (`re:`) the regex searched in it. A value
    longer than MAX_VALUE is not read: the test says `oversize` (True for a deny: fail closed)."""
    if len(pattern) > MAX_PATTERN:
        raise HostilePattern(f"longer than {MAX_PATTERN} characters: shorten it (or split it into several rules)")
    if pattern.startswith(REGEX_PREFIX):
        regex = safe_regex(pattern[len(REGEX_PREFIX):])
        return lambda value: oversize if len(value) > MAX_VALUE else regex.search(value) is not None
    return lambda value: oversize if len(value) > MAX_VALUE else fnmatchcase(value, pattern)


def safe_regex(text: str) -> re.Pattern[str]:
    """Compile `text`, refusing what may backtrack without end (HostilePattern) or does not
    compile (ValueError with re's own words)."""
    try:
        parsed = sre_parse.parse(text)
        compiled = re.compile(text)
    except re.error as exc:
        raise ValueError(f"not a regular expression: {exc}") from None
    _walk(parsed, inside_repeat=False)
    if _unbounded(parsed) > MAX_REPEATS:
        raise HostilePattern(f"more than {MAX_REPEATS} unbounded repeats (*, +, {{n,}}): each one multiplies "
                             "the time a long value takes; anchor the pattern or split it into several rules")
    return compiled


def _unbounded(items: Any) -> int:
    count = 0
    for op, arg in items:
        if op in _REPEATS:
            count += int(arg[1] == sre_parse.MAXREPEAT or arg[1] > 100) + _unbounded(arg[2])
        elif op is sre_parse.SUBPATTERN:
            count += _unbounded(arg[-1])
        elif op is sre_parse.BRANCH:
            count += sum(_unbounded(branch) for branch in arg[1])
        elif op in (sre_parse.ASSERT, sre_parse.ASSERT_NOT):
            count += _unbounded(arg[1])
    return count


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
