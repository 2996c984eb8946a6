"""Policy benchmark: how long the rules take to decide, and create → answer for a request a
rule allows (prints figures vs targets).

  1. decision: 1,000 rules of `policies:` (Claude Code Bash prefixes, file paths, MCP tools,
     tool globs with argument regexes), compiled once; each of 20,000 tool calls (matching
     and not) evaluated → p50 / p99 per decision
  2. create → answer: `hitl-bridge serve` as its own process on a fresh SQLite store, with those
     rules; each of 500 Bash calls a rule allows is POSTed, then read with a long poll
     (`GET …?wait=`): the 201 already carries the answer → p50 / p99 from the POST to the answer

Usage: .venv/bin/python bench/bench_policy.py [--decisions 20000] [--requests 500]
Targets (issue 26): decision p99 ≤ 0.2 ms with 1,000 rules; create → answer p50 ≤ 3 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import yaml
from bench_core import free_port, pct, serve_process  # bench/ is on the path: run as a script

from bridge.models import Request
from bridge.policy.rules import PolicyRule
from bridge.policy.ruleset import RuleSet

WORDS = ["git", "npm", "make", "cargo", "go", "pytest", "docker", "kubectl", "terraform", "ls", "cat", "grep",
         "python", "node", "yarn", "pnpm", "rg", "find", "sed", "awk"]
SUBS = ["status", "log", "diff", "test", "build", "run", "lint", "fmt", "check", "show", "list", "get", "plan",
        "apply", "install", "publish", "describe", "logs", "exec", "init"]


def thousand_rules() -> list[dict[str, Any]]:
    """1,000 rules as a large team might write them (every name distinct, none shadowed)."""
    rules: list[dict[str, Any]] = []
    for i, (word, sub) in enumerate((w, s) for w in WORDS for s in SUBS):  # 400 Bash prefixes
        effect = "deny" if sub in ("publish", "apply") else "allow"
        rule: dict[str, Any] = {"name": f"bash-{i}", "rule": f"Bash({word} {sub}:*)", "effect": effect}
        if effect == "deny":
            rule["reason"] = f"{word} {sub} is done by the release pipeline"
        rules.append(rule)
    for i in range(250):  # file rules
        rules.append({"name": f"edit-{i}", "rule": f"Edit(./pkg{i}/src/**)", "effect": "allow"})
    for i in range(250):  # MCP tools
        rules.append({"name": f"mcp-{i}", "rule": f"mcp__server{i % 25}__tool_{i}", "effect": "allow"})
    for i in range(100):  # tool globs with argument regexes, labels, routes
        rules.append({"name": f"glob-{i}", "tool": f"deploy_{i}_*", "arguments": {"env": f"re:^prod-{i}"},
                      "effect": "deny", "reason": "production is deployed by the pipeline"})
    return rules


def calls(n: int) -> list[Request]:
    rng = random.Random(26)
    now = datetime.now(UTC)
    out = []
    for i in range(n):
        kind = rng.random()
        if kind < 0.5:
            command = f"{rng.choice(WORDS)} {rng.choice([*SUBS, 'frobnicate'])} --flag {i}"
            if rng.random() < 0.1:
                command += f" && {rng.choice(WORDS)} {rng.choice(SUBS)}"
            tool, context = "Bash", {"command": command}
        elif kind < 0.75:
            tool, context = rng.choice(["Edit", "Write", "Read"]), {"file_path": f"/w/pkg{rng.randrange(300)}/src/a.py"}
        elif kind < 0.9:
            tool, context = f"mcp__server{rng.randrange(30)}__tool_{rng.randrange(300)}", {"path": "/x"}
        else:
            tool, context = f"deploy_{rng.randrange(120)}_svc", {"env": f"prod-{rng.randrange(120)}"}
        out.append(Request(id=f"r{i}", title="t", tool=tool, context=context, workspace="/w", route="agents",
                           questions=[{"id": "approve", "kind": "confirm", "prompt": "Allow?"}],
                           created_at=now, updated_at=now))
    return out


def decision_times(n: int) -> tuple[list[float], dict[str, int]]:
    ruleset = RuleSet([PolicyRule.model_validate(r) for r in thousand_rules()])
    requests = calls(n)
    for request in requests[:500]:  # warm the caches (compiled path globs)
        ruleset.evaluate(request)
    samples, effects = [], {"allow": 0, "deny": 0, "ask": 0, "none": 0}
    for request in requests:
        start = time.perf_counter_ns()
        verdict = ruleset.evaluate(request)
        samples.append((time.perf_counter_ns() - start) / 1e6)
        effects[verdict.effect.value if verdict.effect else "none"] += 1
    return samples, effects


async def create_to_answer(total: int) -> list[float]:
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        config = {"store": {"url": f"sqlite:///{tmp}/bench.db"}, "http": {"listen": f"127.0.0.1:{port}"},
                  "sources": [{"type": "webhook"}], "log_level": "WARNING",
                  "routes": [{"name": "agents", "match": {"engine": "claude"}, "notify": []}],
                  "policies": thousand_rules()}
        async with serve_process(Path(tmp), port, yaml.safe_dump(config)):
            base = f"http://127.0.0.1:{port}"
            samples = []
            async with httpx.AsyncClient(base_url=base) as http:
                for i in range(total + 20):
                    body = {"title": "Allow Bash", "engine": "claude", "tool": "Bash",
                            "context": {"command": f"git status --short {i}"},
                            "questions": [{"id": "approve", "kind": "confirm", "prompt": "Allow?"}]}
                    start = time.perf_counter()
                    created = (await http.post("/v1/requests", json=body)).json()
                    view = (await http.get(f"/v1/requests/{created['id']}", params={"wait": 30})).json()
                    elapsed = (time.perf_counter() - start) * 1000
                    if view.get("state") not in ("answered", "delivered") or view["answer"]["via"] != "policy":
                        raise RuntimeError(f"not decided by a rule: {view.get('state')}")
                    if i >= 20:  # the first calls warm the connection and the daemon
                        samples.append(elapsed)
            return samples


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--decisions", type=int, default=20_000)
    parser.add_argument("--requests", type=int, default=500)
    args = parser.parse_args()
    samples, effects = decision_times(args.decisions)
    print(f"rule decision with 1,000 rules over {len(samples):,} calls ({effects}): p50 {pct(samples, 0.5):.3f} ms, "
          f"p99 {pct(samples, 0.99):.3f} ms, max {max(samples):.3f} ms   (target p99 ≤ 0.2 ms)")
    waited = await create_to_answer(args.requests)
    print(f"create → answer (long poll) for {len(waited)} requests a rule allows: p50 {pct(waited, 0.5):.2f} ms, "
          f"p99 {pct(waited, 0.99):.2f} ms   (target p50 ≤ 3 ms)")


if __name__ == "__main__":
    asyncio.run(main())
