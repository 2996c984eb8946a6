"""The rules as compiled: every key a rule sets must match, deny beats allow beats ask
wherever they are written, and the Claude Code syntax reads calls as Claude Code does (pure:
no daemon)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from bridge.models import Request
from bridge.policy.rules import Effect, PolicyRule
from bridge.policy.ruleset import RuleSet

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def request(tool: str | None = "Bash", **fields: Any) -> Request:
    base: dict[str, Any] = {"id": "r_1", "title": "t", "tool": tool, "route": "agents", "source": "webhook",
                            "questions": [{"id": "approve", "kind": "confirm", "prompt": "Allow?"}],
                            "created_at": NOW, "updated_at": NOW}
    base.update(fields)
    return Request.model_validate(base)


def rules(*specs: dict[str, Any]) -> RuleSet:
    return RuleSet([PolicyRule.model_validate(s) for s in specs])


def decided(ruleset: RuleSet, req: Request) -> tuple[str | None, str | None]:
    verdict = ruleset.evaluate(req)
    return (verdict.effect.value if verdict.effect else None, verdict.rule.name if verdict.rule else None)


def test_deny_beats_allow_beats_ask_whatever_the_order() -> None:
    ruleset = rules({"name": "ask-bash", "rule": "Bash", "effect": "ask"},
                    {"name": "git", "rule": "Bash(git:*)", "effect": "allow"},
                    {"name": "no-push", "rule": "Bash(git push:*)", "effect": "deny", "reason": "no"})
    assert decided(ruleset, request(context={"command": "git push origin"})) == ("deny", "no-push")
    assert decided(ruleset, request(context={"command": "git status"})) == ("allow", "git")
    assert decided(ruleset, request(context={"command": "ls"})) == ("ask", "ask-bash")
    assert decided(ruleset, request(tool="Edit", context={"file_path": "/a"})) == (None, None)
    assert decided(ruleset, request(tool=None)) == (None, None)


def test_every_key_a_rule_sets_must_match() -> None:
    ruleset = rules({"name": "prod", "tool": "deploy_*", "source": ["webhook"], "route": "agents",
                     "labels": {"team": "web*"}, "requested_by": "ci-*", "annotations": {"destructiveHint": True},
                     "arguments": {"target.env": "re:^prod-", "replicas": "3"}, "effect": "deny", "reason": "no"})
    match = dict(tool="deploy_api", labels={"team": "web-1"}, requested_by="ci-main",
                 annotations={"destructiveHint": True}, context={"target": {"env": "prod-eu"}, "replicas": 3})
    assert decided(ruleset, request(**match)) == ("deny", "prod")
    for key, value in [("tool", "build_api"), ("labels", {"team": "data"}), ("requested_by", "ana"),
                       ("annotations", {"destructiveHint": False}), ("context", {"target": {"env": "dev"}}),
                       ("context", {"target": {"env": "prod-eu"}, "replicas": 4}), ("route", "other"),
                       ("source", "delta")]:
        assert decided(ruleset, request(**{**match, key: value})) == (None, None), key


def test_claude_code_syntax() -> None:
    ruleset = rules({"name": "src", "rule": "Edit(./src/**)", "effect": "allow"},
                    {"name": "hosts", "rule": "Read(//etc/hosts)", "effect": "deny", "reason": "no"},
                    {"name": "docs", "rule": "WebFetch(domain:docs.example.com)", "effect": "allow"},
                    {"name": "gh", "rule": "mcp__github", "effect": "allow"},
                    {"name": "npm", "rule": "Bash(npm run *)", "effect": "allow"})
    ws = "/home/me/app"
    assert decided(ruleset, request(tool="Write", workspace=ws, context={"file_path": f"{ws}/src/a/b.py"}))[1] == "src"
    assert decided(ruleset, request(tool="Edit", workspace=ws, context={"file_path": "src/x.py"}))[1] == "src"
    for path in (f"{ws}/src/../secrets.env", f"{ws}/srcx/a.py", "/elsewhere/src/a.py"):
        assert decided(ruleset, request(tool="Edit", workspace=ws, context={"file_path": path})) == (None, None), path
    assert decided(ruleset, request(tool="Edit", context={"file_path": f"{ws}/src/a.py"})) == (None, None)  # no ws
    assert decided(ruleset, request(tool="Grep", context={"path": "/etc/hosts"})) == ("deny", "hosts")
    assert decided(ruleset, request(tool="WebFetch", context={"url": "https://api.docs.example.com/x"}))[1] == "docs"
    assert decided(ruleset, request(tool="WebFetch", context={"url": "https://docs.example.com.evil.io/"}))[0] is None
    assert decided(ruleset, request(tool="mcp__github__create_issue"))[1] == "gh"
    assert decided(ruleset, request(tool="mcp__githubx__create_issue"))[0] is None
    assert decided(ruleset, request(context={"command": "npm run test --watch"}))[1] == "npm"
    for command in ("npm run test; rm -rf /", "npm run $(curl x)", "npm run a > /etc/passwd", "npm install"):
        assert decided(ruleset, request(context={"command": command})) == (None, None), command


def test_an_unmatched_rule_is_asked_by_default() -> None:
    assert PolicyRule.model_validate({"name": "x", "rule": "Bash"}).effect is Effect.ask
