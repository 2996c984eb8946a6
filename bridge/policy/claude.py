"""Claude Code's permission-rule syntax, as a matcher over one tool call (pure, no I/O).

    Bash                      every Bash call
    Bash(git status:*)        a command that starts with `git status` (`:*`: a prefix)
    Bash(npm run *)           a command matching the glob (`*`: anything)
    Edit(./src/**)            Edit, Write, MultiEdit, NotebookEdit of a file under src/
    Read(//etc/hosts)         Read, Glob, Grep, LS of that absolute path (`//`: from /)
    WebFetch(domain:a.com)    a URL on a.com or a subdomain of it
    mcp__server__tool         one MCP tool;  mcp__server__* / mcp__server: all of a server's

A tool call is the request's `tool` and its arguments (`Request.context`: what
`permission_prompt` and `request_approval` put there). Paths given relative (`./src/**`,
`src/**`, `/src/**` as in Claude's settings) are read from the request's `workspace`; an
absolute path with no workspace never matches a relative pattern.

Fail closed where it allows: a Bash command with a shell operator, a substitution or a
redirection (`;`, `&&`, `|`, `` ` ``, `$(`, `>`…) matches no specifier of an `allow` (it
could run anything after the allowed part); a `deny` matches it when any of its parts does.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

MAX_RULE = 1000
#: a path or a command longer than this is not read: an allow does not match it, a deny does
MAX_ARGUMENT = 10_000
MAX_DOUBLE_STARS = 3
#: the tools a file rule covers, by the name the rule is written with (Claude Code's families)
EDIT_TOOLS = ("Edit", "Write", "MultiEdit", "NotebookEdit")
READ_TOOLS = ("Read", "Glob", "Grep", "LS")
FILE_FAMILIES = {"Edit": EDIT_TOOLS, "Read": READ_TOOLS, "Write": ("Write",), "MultiEdit": ("MultiEdit",),
                 "NotebookEdit": ("NotebookEdit",), "Glob": ("Glob",), "Grep": ("Grep",), "LS": ("LS",)}
PATH_ARGUMENTS = ("file_path", "notebook_path", "path")
SHELL_TOOLS = ("Bash",)
URL_TOOLS = ("WebFetch",)

_RULE = re.compile(r"^\s*([A-Za-z0-9_*.-]{1,200})\s*(?:\((.*)\))?\s*$", re.S)
_SHELL_META = re.compile(r"[;&|`\n\r<>]|\$\(")
_SPLIT = re.compile(r"&&|\|\||;|\||&|\n|`|\$\(|\)")


class RuleSyntaxError(ValueError):
    """A permission-rule string that cannot be read; the message says how to write it."""


@dataclass(frozen=True)
class ToolRule:
    """One parsed permission rule: which tool names it covers and the specifier, if any."""

    text: str
    #: the exact tool names it covers (empty: `pattern` is a glob over tool names)
    tools: tuple[str, ...]
    #: a glob over tool names (`mcp__server__*`), or None when `tools` lists them
    pattern: str | None
    kind: str  # "any", "shell", "file", "url"
    specifier: str | None = None

    def covers_tool(self, tool: str) -> bool:
        if self.pattern is not None:
            return fnmatchcase(tool, self.pattern)
        return tool in self.tools

    def matches(self, tool: str, arguments: Mapping[str, Any], workspace: str | None, *, deny: bool) -> bool:
        """Does this rule cover the call (`deny`: read broadly, as a deny must be)?"""
        if not self.covers_tool(tool):
            return False
        if self.specifier is None:
            return True
        if self.kind == "shell":
            command = arguments.get("command")
            if isinstance(command, str) and len(command) > MAX_ARGUMENT:
                return deny
            return isinstance(command, str) and shell_matches(self.specifier, command, deny=deny)
        if self.kind == "file":
            path = next((arguments[k] for k in PATH_ARGUMENTS if isinstance(arguments.get(k), str)), None)
            if path is not None and len(path) + len(workspace or "") > MAX_ARGUMENT:
                return deny
            return path is not None and path_matches(self.specifier, path, workspace)
        if self.kind == "url":
            url = arguments.get("url")
            return isinstance(url, str) and url_matches(self.specifier, url)
        return False


@lru_cache(maxsize=8192)
def parse_rule(text: str) -> ToolRule:
    """Read `Tool`, `Tool(specifier)` or an MCP name; RuleSyntaxError with the fix otherwise.
    Kept once read (a rule is immutable): `check-config` compares every pair of rules, and a
    grant's pattern is read at each decision."""
    if len(text) > MAX_RULE:
        raise RuleSyntaxError(f"longer than {MAX_RULE} characters")
    found = _RULE.match(text)
    if not found:
        raise RuleSyntaxError(f"{text[:60]!r} is not a permission rule: write Tool, Tool(specifier) "
                              "(Bash(git status:*), Edit(./src/**)) or mcp__server__tool")
    name, spec = found.group(1), found.group(2)
    if spec is not None and not spec.strip():
        raise RuleSyntaxError(f"{text[:60]!r}: empty (): write {name} alone for every call")
    if name.startswith("mcp__"):
        if spec is not None:
            raise RuleSyntaxError(f"{text[:60]!r}: MCP tools take no (specifier); match arguments with "
                                  "`arguments:` instead")
        parts = name.split("__")
        if len(parts) == 2:  # mcp__server: every tool of the server
            return ToolRule(text, (), f"{name}__*", "any")
        if "*" in name:
            return ToolRule(text, (), name, "any")
        return ToolRule(text, (name,), None, "any")
    if "*" in name:
        raise RuleSyntaxError(f"{text[:60]!r}: a wildcard in a tool name is only understood for MCP tools "
                              "(mcp__server__*); use `tool:` with a glob for others")
    if spec is None:
        return ToolRule(text, FILE_FAMILIES.get(name, (name,)), None, "any")
    spec = spec.strip()
    if name in SHELL_TOOLS:
        return ToolRule(text, (name,), None, "shell", spec)
    if name in FILE_FAMILIES:
        check_path_pattern(spec, text)
        return ToolRule(text, FILE_FAMILIES[name], None, "file", spec)
    if name in URL_TOOLS:
        if not spec.startswith("domain:") or not spec[len("domain:"):].strip():
            raise RuleSyntaxError(f"{text[:60]!r}: WebFetch takes (domain:example.com)")
        return ToolRule(text, (name,), None, "url", spec[len("domain:"):].strip().lower())
    raise RuleSyntaxError(f"{text[:60]!r}: a (specifier) is understood for Bash, the file tools "
                          f"({', '.join(FILE_FAMILIES)}) and WebFetch; for {name} match its arguments "
                          "with `arguments:`")


def check_path_pattern(spec: str, text: str) -> None:
    if spec.startswith("~"):
        raise RuleSyntaxError(f"{text[:60]!r}: the bridge cannot know the agent's home directory; write the "
                              "absolute path from / as //home/me/…")
    if ".." in spec.split("/"):
        raise RuleSyntaxError(f"{text[:60]!r}: `..` in a path pattern; write the path it means")
    if spec.count("**") > MAX_DOUBLE_STARS:
        raise RuleSyntaxError(f"{text[:60]!r}: more than {MAX_DOUBLE_STARS} `**` in one path pattern (each one "
                              "multiplies the time a long path takes); split it into several rules")


# shell ---------------------------------------------------------------------------------------
def shell_matches(spec: str, command: str, *, deny: bool) -> bool:
    """`spec` (`git status:*`, `npm run *`, an exact command) against `command`."""
    command = command.strip()
    if deny:
        parts = [p.strip() for p in _SPLIT.split(command) if p.strip()]
        return any(_one_command(spec, part) for part in [command, *parts])
    if _SHELL_META.search(command):
        return False
    return _one_command(spec, command)


def command_words(command: str) -> set[str]:
    """The first word of the command and of each part a shell operator starts (the words a
    shell rule is indexed by: a deny reads every part)."""
    words = set()
    for part in [command, *_SPLIT.split(command)]:
        head = part.split(None, 1)
        if head:
            words.add(head[0])
    return words


def _one_command(spec: str, command: str) -> bool:
    command = " ".join(command.split())
    if spec.endswith(":*"):
        prefix = " ".join(spec[:-2].split())
        return command == prefix or command.startswith(prefix + " ")
    if "*" in spec:
        return fnmatchcase(command, " ".join(spec.split()).replace("[", "[[]").replace("?", "[?]"))
    return command == " ".join(spec.split())


# paths ---------------------------------------------------------------------------------------
@lru_cache(maxsize=4096)
def path_regex(pattern: str) -> re.Pattern[str]:
    """A gitignore-style glob as a regex over a normalised path: `**` any depth, `*` and `?`
    within one segment."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out))


def resolved_pattern(spec: str, workspace: str | None) -> str | None:
    """The pattern as an absolute path glob (None: relative with no absolute workspace)."""
    if spec.startswith("//"):
        return "/" + spec.lstrip("/")
    relative = spec.lstrip("/").removeprefix("./")
    if workspace is None or not workspace.startswith("/"):
        return None
    return posixpath.join(posixpath.normpath(workspace), relative)


def path_matches(spec: str, path: str, workspace: str | None) -> bool:
    if "\x00" in path:
        return False
    if not path.startswith("/"):
        if workspace is None or not workspace.startswith("/"):
            relative = posixpath.normpath(path)
            if relative.startswith("..") or relative.startswith("/"):
                return False
            pattern = spec.lstrip("/").removeprefix("./") if not spec.startswith("//") else None
            if pattern is None:
                return False
            return _glob(pattern, relative)
        path = posixpath.join(workspace, path)
    path = posixpath.normpath(path)
    if path.startswith("//"):
        path = "/" + path.lstrip("/")
    pattern = resolved_pattern(spec, workspace)
    return pattern is not None and _glob(pattern, path)


def _glob(pattern: str, path: str) -> bool:
    if "/" not in pattern.rstrip("/"):  # a bare name: that file name at any depth (gitignore)
        return path_regex(pattern).fullmatch(posixpath.basename(path)) is not None
    return path_regex(pattern).fullmatch(path) is not None


# urls ----------------------------------------------------------------------------------------
def url_matches(domain: str, url: str) -> bool:
    try:
        host = (urlsplit(url.strip()).hostname or "").lower().rstrip(".")
    except ValueError:
        return False
    return bool(host) and (host == domain or host.endswith("." + domain))
