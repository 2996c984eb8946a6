"""What `check-config` (and every load or reload) refuses in `policies:`, rule by rule: a rule
that can never match (an unknown route or source, a tool it both names and excludes) and a
rule another one makes useless (shadowed: an earlier rule of the same or a stronger effect
matches everything it matches). Each problem names the rule and the fix.

Shadowing is judged conservatively: A shadows B only when every key A sets is set by B to the
same pattern, or to a plain value A's glob covers, and A's tool rule covers B's."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from fnmatch import fnmatchcase

from bridge.policy.claude import parse_rule
from bridge.policy.rules import MAX_RULES, Effect, PolicyRule
from bridge.policy.ruleset import GLOB_CHARS, CompiledRule

STRENGTH = {Effect.deny: 2, Effect.allow: 1, Effect.ask: 0}
MCP_INTAKE = ("requests asked through /mcp are taken in by the HTTP intake: match them by its source "
              "(webhook) or with labels: {mcp_call: permission_prompt}")


def _plain(value: str) -> bool:
    return not GLOB_CHARS & set(value)


def _options(value: str | list[str] | None) -> list[str] | None:
    return None if value is None else [value] if isinstance(value, str) else list(value)


def _covers(broad: list[str] | None, narrow: list[str] | None) -> bool:
    """Every value `narrow` allows is allowed by `broad` (None: anything)."""
    if broad is None:
        return True
    if narrow is None:
        return False
    return all(n in broad or (_plain(n) and any(fnmatchcase(n, b) for b in broad)) for n in narrow)


def _covers_map(broad: dict[str, str], narrow: dict[str, str]) -> bool:
    return all(key in narrow and (narrow[key] == pattern or pattern == "*") for key, pattern in broad.items())


def _tool_covers(a: PolicyRule, b: PolicyRule) -> bool:
    if a.rule is not None:
        if b.rule is None:
            return False
        ra, rb = parse_rule(a.rule), parse_rule(b.rule)
        if ra.text.strip() != rb.text.strip():
            if ra.specifier is not None:
                return False
            names = rb.tools if rb.pattern is None else None
            if names is None or not all(ra.covers_tool(n) for n in names):
                return False
    if a.tool is not None:
        if b.tool is None or not (b.tool == a.tool or (_plain(b.tool) and fnmatchcase(b.tool, a.tool))):
            return False
    return True


def shadows(a: PolicyRule, b: PolicyRule) -> bool:
    """`a` matches every request `b` matches, with an effect at least as strong."""
    if STRENGTH[a.effect] < STRENGTH[b.effect]:
        return False
    if b.effect is a.effect and (b.grants != a.grants or b.override_route != a.override_route):
        return False
    if b.effect is Effect.ask and b.grants is not None and a.effect is not Effect.deny:
        return False
    return (_tool_covers(a, b) and _covers_map(a.arguments, b.arguments) and _covers_map(a.labels, b.labels)
            and all(b.annotations.get(k) == v and k in b.annotations for k, v in a.annotations.items())
            and _covers(_options(a.source), _options(b.source)) and _covers(_options(a.route), _options(b.route))
            and _covers(_options(a.requested_by), _options(b.requested_by)))


def _never(values: list[str] | None, known: Iterable[str]) -> list[str]:
    known = list(known)
    return [v for v in values or [] if not any(fnmatchcase(k, v) for k in known)]


def policy_problems(policies: Sequence[PolicyRule], routes: Iterable[str],
                    sources: dict[str, str]) -> list[tuple[int, str]]:
    """(index, reason) for every rule refused; `sources`: name -> type of the configured ones."""
    if len(policies) > MAX_RULES:
        return [(MAX_RULES, f"more than {MAX_RULES} rules: merge rules (a list in source/route, a glob)")]
    routes = list(routes)
    problems: list[tuple[int, str]] = []
    seen: dict[str, int] = {}
    for i, rule in enumerate(policies):
        name = rule.name
        if name in seen:
            problems.append((i, f"rule {name!r}: the name is taken by policies[{seen[name]}]: names must differ "
                                "(answers say policy:<name>)"))
        seen.setdefault(name, i)
        for route in _never(_options(rule.route), routes):
            problems.append((i, f"rule {name!r} can never match: no route is named {route!r} (routes: "
                                f"{', '.join(routes)}); fix the name or drop `route`"))
        for source in _never(_options(rule.source), sources):
            problems.append((i, f"rule {name!r} can never match: no source is named {source!r} (sources: "
                                f"{', '.join(sources)}); fix the name or drop `source`"))
        for source in _options(rule.source) or []:
            if sources.get(source) == "mcp":
                problems.append((i, f"rule {name!r} can never match source {source!r}: {MCP_INTAKE}"))
        if CompiledRule.of(i, rule).exact_tools == ():
            problems.append((i, f"rule {name!r} can never match: `tool: {rule.tool}` excludes every tool of "
                                f"`rule: {rule.rule}`; drop one of them"))
        for j, earlier in enumerate(policies[:i]):
            if shadows(earlier, rule):
                problems.append((i, f"rule {name!r} is shadowed by policies[{j}] ({earlier.name!r}, "
                                    f"{earlier.effect.value}): it matches everything this one does, so this "
                                    "rule never decides; remove it, or narrow the earlier rule"))
                break
        if rule.effect is not Effect.deny:
            for j, later in enumerate(policies[i + 1:], start=i + 1):
                if STRENGTH[later.effect] > STRENGTH[rule.effect] and shadows(later, rule):
                    problems.append((i, f"rule {name!r} is shadowed by policies[{j}] ({later.name!r}, "
                                        f"{later.effect.value}, which beats {rule.effect.value} wherever it "
                                        "is written): remove this rule, or narrow that one"))
                    break
    return problems
