"""`policies:` — the config's rules for deciding requests without a person.

    policies:
      - name: reads
        rule: Read                      # Claude Code's permission-rule syntax
        effect: allow
      - name: no-rm-rf
        rule: "Bash(rm -rf:*)"
        effect: deny
        reason: "rm -rf is never allowed here; delete the files one by one"
      - name: deploys
        route: deploys
        tool: "deploy_*"
        arguments: {env: "re:^prod"}
        effect: ask

Every key a rule sets must match (an unset key matches anything). Order of evaluation: every
rule is read; a matching `deny` decides (the first such rule is named), else a matching
`allow`, else a matching `ask` (then a standing approval may still decide, unless the rule
says `grants: false`), else no rule decided and a standing approval may. Deny beats allow
beats ask, whatever their order in the file.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Any

from pydantic import Field, field_validator, model_validator

from bridge.config_daemon import StrictModel
from bridge.policy.claude import RuleSyntaxError, parse_rule
from bridge.policy.patterns import compile_value

RULE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}$")
MAX_RULES = 10_000


class Effect(StrEnum):
    """What a matching rule decides."""

    #: approve without asking (the request is answered by `policy:<name>`)
    allow = "allow"
    #: reject without asking; the agent receives `reason`
    deny = "deny"
    #: ask a person (the default)
    ask = "ask"


class PolicyRule(StrictModel):
    """One rule of `policies:`."""

    #: how the rule is named in answers (`policy:<name>`), events, metrics and errors
    name: str = Field(max_length=100)
    #: Claude Code's permission-rule syntax: `Bash(git status:*)`, `Edit(./src/**)`, `Read`,
    #: `mcp__server__tool`, `mcp__server__*`
    rule: str | None = Field(default=None, max_length=1000)
    #: the tool name (a glob: `deploy_*`)
    tool: str | None = Field(default=None, max_length=200)
    #: argument field path (`command`, `input.path`) -> a glob, or `re:` and a regex searched in it
    arguments: dict[str, str] = Field(default_factory=dict, max_length=50)
    #: the tool's own MCP annotations, each equal (`destructiveHint: true`)
    annotations: dict[str, bool | str | int] = Field(default_factory=dict, max_length=20)
    #: the request's source (a glob, or a list: any of them)
    source: str | list[str] | None = None
    #: the route the request was given (a name or glob, or a list)
    route: str | list[str] | None = None
    #: label -> glob
    labels: dict[str, str] = Field(default_factory=dict, max_length=50)
    #: who asked (`requested_by`, a glob)
    requested_by: str | None = Field(default=None, max_length=200)
    effect: Effect = Effect.ask
    #: for `deny`: what the agent is told (the answer's reason)
    reason: str | None = Field(default=None, max_length=2000)
    #: standing approvals for what this rule matches: false never lets one decide; true lets
    #: one decide even where the route would keep grants out (quorum, four-eyes, `grants:
    #: false`); unset: the route decides. An `allow` with `override_route: true` also decides on
    #: such routes (without it, an allow there asks a person)
    grants: bool | None = None
    override_route: bool = False

    @field_validator("name")
    @classmethod
    def _name(cls, name: str) -> str:
        if not RULE_NAME.match(name):
            raise ValueError(f"{name[:40]!r}: a rule name is letters, digits and _ . : - (it names the "
                             "answer: policy:<name>)")
        return name

    @field_validator("rule")
    @classmethod
    def _rule(cls, rule: str | None) -> str | None:
        if rule is not None:
            try:
                parse_rule(rule)
            except RuleSyntaxError as exc:
                raise ValueError(str(exc)) from None
        return rule

    @field_validator("arguments", "labels")
    @classmethod
    def _patterns(cls, patterns: dict[str, str]) -> dict[str, str]:
        for key, pattern in patterns.items():
            try:
                compile_value(pattern)
            except ValueError as exc:
                raise ValueError(f"{key}: {exc}") from None
        return patterns

    @model_validator(mode="before")
    @classmethod
    def _effect_spelt(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("effect"), str):
            effect = data["effect"].strip().lower()
            if effect not in Effect.__members__:
                raise ValueError(f"effect {data['effect'][:20]!r} is not one of allow, deny, ask")
            data = {**data, "effect": effect}
        return data

    @model_validator(mode="after")
    def _reason_for_deny(self) -> PolicyRule:
        if self.reason is not None and self.effect is not Effect.deny:
            raise ValueError(f"rule {self.name!r}: `reason` is what a deny tells the agent; this rule is "
                             f"{self.effect.value} (drop reason, or make it effect: deny)")
        if self.override_route and self.effect is not Effect.allow:
            raise ValueError(f"rule {self.name!r}: override_route is for allow rules")
        return self

    @property
    def answered_by(self) -> str:
        return f"policy:{self.name}"
