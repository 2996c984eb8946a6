"""`policies:` compiled once per config load, and evaluated for one request.

Rules that name exact tools are indexed by tool name; the others (a tool glob, no tool at all)
are read for every request. Evaluation reads the candidates and keeps the first matching rule
of each effect: deny beats allow beats ask (bridge.policy.rules)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from bridge.models import Request
from bridge.policy.claude import PATH_ARGUMENTS, ToolRule, command_words, parse_rule
from bridge.policy.patterns import at_path, compile_value, scalar_text
from bridge.policy.rules import Effect, PolicyRule

GLOB_CHARS = frozenset("*?[")
TOOL_CACHE = 4096


def _options(value: str | list[str] | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    return (value,) if isinstance(value, str) else tuple(value)


def _any_glob(value: str, options: tuple[str, ...]) -> bool:
    return any(fnmatchcase(value, option) for option in options)


@dataclass(frozen=True)
class CompiledRule:
    """One rule, ready to test a request."""

    index: int
    rule: PolicyRule
    tool_rule: ToolRule | None
    arguments: tuple[tuple[str, Callable[[str], bool]], ...]
    labels: tuple[tuple[str, Callable[[str], bool]], ...]
    sources: tuple[str, ...] | None
    routes: tuple[str, ...] | None

    @classmethod
    def of(cls, index: int, rule: PolicyRule) -> CompiledRule:
        deny = rule.effect is Effect.deny  # a value too long to read: a deny matches it, an allow does not
        return cls(index, rule, parse_rule(rule.rule) if rule.rule else None,
                   tuple((path, compile_value(p, oversize=deny)) for path, p in rule.arguments.items()),
                   tuple((label, compile_value(p, oversize=deny)) for label, p in rule.labels.items()),
                   _options(rule.source), _options(rule.route))

    @property
    def word(self) -> str | None:
        """A word the call must hold for this rule to match, when it has a plain one: the
        command's first word of a shell rule (`git` of `Bash(git status:*)`), the first folder
        of a file rule (`src` of `Edit(./src/**)`). Rules are indexed by it."""
        tool_rule = self.tool_rule
        if tool_rule is None or not tool_rule.specifier:
            return None
        if tool_rule.kind == "shell":
            word = tool_rule.specifier.removesuffix(":*").split(" ", 1)[0]
        elif tool_rule.kind == "file":
            parts = [p for p in tool_rule.specifier.removeprefix("./").split("/") if p and p != "."]
            word = parts[0] if len(parts) > 1 else ""  # a bare name matches at any depth: no index
        else:
            return None
        return word if word and not GLOB_CHARS & set(word) else None

    @property
    def exact_tools(self) -> tuple[str, ...] | None:
        """The tool names this rule can match, when it names them exactly (None: any tool)."""
        if self.tool_rule is not None and self.tool_rule.pattern is None:
            names = self.tool_rule.tools
            if self.rule.tool is not None:
                names = tuple(n for n in names if fnmatchcase(n, self.rule.tool))
            return names
        if self.rule.tool is not None and not GLOB_CHARS & set(self.rule.tool):
            return (self.rule.tool,)
        return None

    def matches(self, request: Request) -> bool:
        rule = self.rule
        tool = request.tool
        if (self.tool_rule is not None or rule.tool is not None) and not tool:
            return False
        if rule.tool is not None and not fnmatchcase(tool or "", rule.tool):
            return False
        if self.sources is not None and not _any_glob(request.source, self.sources):
            return False
        if self.routes is not None and not _any_glob(request.route, self.routes):
            return False
        if rule.requested_by is not None and not fnmatchcase(request.requested_by or "", rule.requested_by):
            return False
        for label, test in self.labels:
            value = request.labels.get(label)
            if value is None or not test(value):
                return False
        for key, expected in rule.annotations.items():
            if request.annotations.get(key) != expected:
                return False
        for path, test in self.arguments:
            text = scalar_text(at_path(request.context, path))
            if text is None or not test(text):
                return False
        if self.tool_rule is not None:
            return self.tool_rule.matches(tool or "", request.context, request.workspace,
                                          deny=rule.effect is Effect.deny)
        return True


def call_words(arguments: Mapping[str, Any], workspace: str | None) -> set[str]:
    """The words a call is looked up by: its command's (`command_words`), its path's folders
    (with the workspace's, which a relative path is read from)."""
    words: set[str] = set(workspace.split("/")) if workspace else set()
    command = arguments.get("command")
    if isinstance(command, str):
        words |= command_words(command)
    for key in PATH_ARGUMENTS:
        path = arguments.get(key)
        if isinstance(path, str):
            words.update(p for p in path.split("/") if p)
    return words


@dataclass(frozen=True)
class RuleVerdict:
    """What the rules say of one request: `effect` None when no rule matched."""

    effect: Effect | None
    rule: PolicyRule | None = None
    #: a matching rule's word on standing approvals (False wins over True)
    grants: bool | None = None

    @property
    def decides(self) -> bool:
        return self.effect in (Effect.allow, Effect.deny)


NO_RULE = RuleVerdict(None)


class RuleSet:
    """The running config's rules, compiled."""

    def __init__(self, rules: Sequence[PolicyRule] = ()) -> None:
        self.rules = [CompiledRule.of(i, rule) for i, rule in enumerate(rules)]
        self._by_tool: dict[str, list[CompiledRule]] = {}
        self._by_word: dict[tuple[str, str], list[CompiledRule]] = {}  # by CompiledRule.word
        self._anywhere: list[CompiledRule] = []
        self._tool_cache: dict[str, list[CompiledRule]] = {}
        for compiled in self.rules:
            names = compiled.exact_tools
            if names is None:
                self._anywhere.append(compiled)
            word = compiled.word
            for name in names or ():
                if word is not None:
                    self._by_word.setdefault((name, word), []).append(compiled)
                else:
                    self._by_tool.setdefault(name, []).append(compiled)

    def __bool__(self) -> bool:
        return bool(self.rules)

    def candidates(self, request: Request) -> list[CompiledRule]:
        """The rules that could match `request`, in their order."""
        tool = request.tool
        if not tool:
            return self._anywhere
        groups = [self._by_tool.get(tool, ()), self._anywhere_for(tool)]
        if self._by_word:
            for word in call_words(request.context, request.workspace):
                groups.append(self._by_word.get((tool, word), ()))
        found = [g for g in groups if g]
        if len(found) <= 1:
            return list(found[0]) if found else []
        return sorted({id(c): c for g in found for c in g}.values(), key=lambda c: c.index)

    def _anywhere_for(self, tool: str) -> list[CompiledRule]:
        """The rules with no exact tool that could match `tool` (their tool glob read once a tool)."""
        found = self._tool_cache.get(tool)
        if found is None:
            found = [c for c in self._anywhere if (c.rule.tool is None and (c.tool_rule is None or
                     c.tool_rule.covers_tool(tool))) or (c.rule.tool is not None and fnmatchcase(tool, c.rule.tool))]
            if len(self._tool_cache) >= TOOL_CACHE:
                self._tool_cache.clear()
            self._tool_cache[tool] = found
        return found

    def evaluate(self, request: Request) -> RuleVerdict:
        """The verdict of the rules (deny beats allow beats ask; the first of each is named)."""
        if not self.rules:
            return NO_RULE
        first: dict[Effect, PolicyRule] = {}
        grants: bool | None = None
        for compiled in self.candidates(request):
            effect = compiled.rule.effect
            if effect in first and compiled.rule.grants is None:
                continue
            if not compiled.matches(request):
                continue
            if effect is Effect.deny:
                return RuleVerdict(effect, compiled.rule)  # nothing beats it
            first.setdefault(effect, compiled.rule)
            if compiled.rule.grants is not None:
                grants = compiled.rule.grants if grants is None else (grants and compiled.rule.grants)
        for effect in (Effect.allow, Effect.ask):
            if effect in first:
                return RuleVerdict(effect, first[effect], grants)
        return RuleVerdict(None, None, grants)
