"""The permission rule a standing approval starts from for one tool call, and the check that
a person's own pattern is no wider than it (pure functions).

    Bash  git status --short      ->  Bash(git status:*)    (two leading words, as a prefix)
    Bash  rm -rf build            ->  Bash(rm -rf build)    (fewer than two plain words: exact)
    Edit  /srv/app/src/a.py       ->  Edit(//srv/app/src/**)
    WebFetch https://docs.a.com/x ->  WebFetch(domain:docs.a.com)
    mcp__fs__write_file           ->  mcp__fs__write_file   (no specifier: every call of the tool)
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from bridge.models import Request
from bridge.policy.claude import (
    FILE_FAMILIES,
    PATH_ARGUMENTS,
    SHELL_TOOLS,
    URL_TOOLS,
    RuleSyntaxError,
    ToolRule,
    parse_rule,
    resolved_pattern,
)

_PLAIN_WORD = re.compile(r"^[A-Za-z0-9_.:@+-]+$")
_SHELL_META = re.compile(r"[;&|`\n\r<>()$\\\"'*?\[\]]")
PREFIX_WORDS = 2


def bare(request: Request) -> str:
    """Every call of the request's tool (what "for this session" and "for 1 hour" allow)."""
    return request.tool or ""


def default_pattern(request: Request) -> str:
    """The narrowest useful rule for "Always allow this" (see the module docstring)."""
    tool = request.tool or ""
    args: Mapping[str, Any] = request.context
    if tool in SHELL_TOOLS and isinstance(args.get("command"), str):
        command = " ".join(str(args["command"]).split())
        words = command.split(" ")
        lead = []
        for word in words[:PREFIX_WORDS]:
            if not _PLAIN_WORD.match(word) or word.startswith("-"):
                break
            lead.append(word)
        if len(lead) == PREFIX_WORDS and not _SHELL_META.search(command):
            return f"{tool}({' '.join(lead)}:*)"
        return f"{tool}({command})"
    if tool in FILE_FAMILIES:
        path = next((args[k] for k in PATH_ARGUMENTS if isinstance(args.get(k), str)), None)
        if path is not None and "\x00" not in path:
            if not path.startswith("/") and request.workspace and request.workspace.startswith("/"):
                path = posixpath.join(request.workspace, path)
            folder = posixpath.dirname(posixpath.normpath(path))
            if path.startswith("/"):
                return f"{tool}(/{folder.rstrip('/')}/**)" if folder != "/" else f"{tool}({posixpath.normpath(path)})"
            if folder and not folder.startswith(".."):
                return f"{tool}(./{folder}/**)"
        return tool
    if tool in URL_TOOLS and isinstance(args.get("url"), str):
        try:
            host = (urlsplit(str(args["url"])).hostname or "").lower()
        except ValueError:
            host = ""
        if host:
            return f"{tool}(domain:{host})"
    return tool


def narrow_enough(pattern: str, default: str, request: Request) -> str | None:
    """None when `pattern` allows no more than `default` for the request's tool; else why not."""
    try:
        mine, theirs = parse_rule(pattern), parse_rule(default)
    except RuleSyntaxError as exc:
        return str(exc)
    tool = request.tool or ""
    if mine.pattern is not None or not mine.covers_tool(tool):
        return f"{pattern!r} is not a rule for {tool} alone (name the tool itself, no wildcard)"
    if theirs.specifier is None:
        return None  # the default allows every call of the tool: any rule for it is narrower
    if mine.specifier is None:
        return f"{pattern!r} allows every {tool} call; at most {default!r} may be saved here"
    if mine.kind != theirs.kind:
        return f"{pattern!r} is not a rule of the same kind as {default!r}"
    if _within(mine, theirs, request):
        return None
    return f"{pattern!r} is wider than {default!r}: narrow it (or approve this call only)"


def _within(mine: ToolRule, theirs: ToolRule, request: Request) -> bool:
    spec, limit = mine.specifier or "", theirs.specifier or ""
    if mine.kind == "shell":
        if "*" in spec.removesuffix(":*") or _SHELL_META.search(spec.removesuffix(":*")):
            return False
        if limit.endswith(":*"):
            prefix = limit[:-2]
            body = spec[:-2] if spec.endswith(":*") else spec
            return body == prefix or body.startswith(prefix + " ")
        return spec == limit
    if mine.kind == "file":
        wanted = resolved_pattern(spec, request.workspace) or spec
        allowed = resolved_pattern(limit, request.workspace) or limit
        if allowed.endswith("/**"):
            folder = allowed[:-3]
            literal = re.split(r"[*?\[]", wanted, maxsplit=1)[0]
            return wanted.startswith(folder + "/") and literal.startswith(folder + "/") and ".." not in wanted
        return wanted == allowed
    if mine.kind == "url":
        return spec == limit or spec.endswith("." + limit)
    return False
