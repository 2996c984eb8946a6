"""`policies:` compiled once per config load, and evaluated for one request.

Rules that name exact tools are indexed by tool name; the others (a tool glob, no tool at all)
are read for every request. Evaluation reads the candidates and keeps the first matching rule
of each effect: deny beats allow beats ask (bridge.policy.rules)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase

from bridge.models import Request
from bridge.policy.claude import ToolRule, parse_rule
from bridge.policy.patterns import at_path, compile_value, scalar_text
from bridge.policy.rules import Effect, PolicyRule

GLOB_CHARS = frozenset("*?[")


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
        return cls(index, rule, parse_rule(rule.rule) if rule.rule else None,
                   tuple((path, compile_value(p)) for path, p in rule.arguments.items()),
                   tuple((label, compile_value(p)) for label, p in rule.labels.items()),
                   _options(rule.source), _options(rule.route))

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
        self._anywhere: list[CompiledRule] = []
        for compiled in self.rules:
            names = compiled.exact_tools
            if names is None:
                self._anywhere.append(compiled)
            for name in names or ():
                self._by_tool.setdefault(name, []).append(compiled)

    def __bool__(self) -> bool:
        return bool(self.rules)

    def candidates(self, request: Request) -> list[CompiledRule]:
        named = self._by_tool.get(request.tool or "", []) if request.tool else []
        if not named:
            return self._anywhere
        if not self._anywhere:
            return named
        return sorted([*named, *self._anywhere], key=lambda c: c.index)

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
