"""`hitl-bridge answer --grant` and `hitl-bridge grants list|show|revoke`, the real command
run as a child process against a real daemon's API."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx

from tests.cli.helpers import clean_env, cli
from tests.harness import running_bridge
from tests.policy.test_grants import AGENT, OPS, call, config, create


async def test_grant_from_the_cli_then_list_show_and_revoke(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, config()) as bridge, httpx.AsyncClient(base_url=bridge.base_url) as http:
        env = clean_env(HITL_BRIDGE_URL=bridge.base_url, HITL_BRIDGE_TOKEN=OPS)

        async def run(*args: str) -> tuple[int, str, str]:
            done = await asyncio.to_thread(cli, *args, cwd=tmp_path, env=env)
            return done.code, done.out, done.err

        first = await create(http, call("pytest -x tests"))
        code, _out, err = await run("answer", first["id"], "yes", "--grant", "always=Bash(pytest -x tests/unit:*)")
        assert code == 2 and "pattern refused" in err, err  # -x is a flag: the default is the exact command
        code, _out, err = await run("answer", first["id"], "yes", "--grant", "forever")
        assert code == 2 and "give session, a span" in err
        code, out, err = await run("answer", first["id"], "yes", "--grant", "30m")
        assert code == 0, err
        code, out, err = await run("grants", "list", "--json")
        [grant] = json.loads(out)
        assert grant["scope"] == "span" and grant["pattern"] == "Bash"
        assert (await create(http, call("pytest -q")))["state"] == "answered"
        code, out, _err = await run("grants", "show", grant["id"])
        assert code == 0 and grant["id"] in out and "active" in out
        code, out, err = await run("grants", "revoke", grant["id"])
        assert code == 0 and "revoked by api:ops" in out, err
        assert (await create(http, call("pytest -q")))["state"] == "pending"
        code, out, _err = await run("grants", "list")
        assert "no standing approvals in force" in out
        code, _out, err = await run("grants", "show", "g_missing")
        assert code == 1 and "no standing approval" in err
        env["HITL_BRIDGE_TOKEN"] = AGENT
        code, _out, err = await run("grants", "revoke", grant["id"])
        assert code == 1 and "act_for_others" in err


async def test_show_says_which_rule_decided(tmp_path: Path) -> None:
    from tests.policy.test_verdict import config as with_rules

    async with running_bridge(tmp_path, with_rules()) as bridge, httpx.AsyncClient(base_url=bridge.base_url) as http:
        decided = await create(http, call("curl https://example.com"))
        env = clean_env(HITL_BRIDGE_URL=bridge.base_url, HITL_BRIDGE_TOKEN=OPS)
        done = await asyncio.to_thread(cli, "show", decided["id"], cwd=tmp_path, env=env)
        assert done.code == 0, done.err
        assert "by policy:no-curl (decided automatically) via policy" in done.out
        assert "no network from agents" in done.out
