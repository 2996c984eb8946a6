"""The verdict step fails closed: an error while deciding, a question no rule can answer, a
secret question — each asks a person and says why on the request's record. Rules reload with
the config (SIGHUP's path), and a route may show automatic decisions for information."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import httpx
import yaml

from bridge.config import load_settings
from tests.harness import running_bridge, wait_for
from tests.policy.test_grants import AGENT, HEADERS, OPS, approve_with, call, create

RULES = [{"name": "make", "rule": "Bash(make:*)", "effect": "allow"},
         {"name": "no-curl", "rule": "Bash(curl:*)", "effect": "deny", "reason": "no network from agents"}]


def config(**route: Any) -> dict[str, Any]:
    return {"http": {"api_tokens": {"ops": {"token": OPS, "act_for_others": True}, "agent": AGENT}},
            "routes": [{"name": "agents", "match": {"engine": "claude"}, "notify": ["web"], **route}],
            "policies": RULES}


async def events(http: httpx.AsyncClient, request_id: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = (await http.get(f"/v1/requests/{request_id}/events", headers=HEADERS)).json()[
        "events"]
    return found


async def test_an_error_while_deciding_asks_a_person_and_says_so(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, config()) as bridge, httpx.AsyncClient(base_url=bridge.base_url) as http:
        with sqlite3.connect(tmp_path / "bridge.db") as db:  # the grants table gone behind the store's back
            db.execute("DROP TABLE grants")
        asked = await create(http, call("npm install"))
        assert asked["state"] == "pending"
        error = next(e for e in await events(http, asked["id"]) if e["kind"] == "policy_error")
        assert "grants" in error["data"]["error"]
        await wait_for(lambda: _posted(bridge, asked["id"]), 10)  # and it went to people as usual
        assert (await create(http, call("make test")))["state"] == "answered"  # rules need no store read


async def _posted(bridge: Any, request_id: str) -> bool:
    request = await bridge.service.get(request_id)
    return request is not None and request.state.value == "posted"


async def test_what_no_rule_can_answer_is_asked(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, config()) as bridge, httpx.AsyncClient(base_url=bridge.base_url) as http:
        body = call("make deploy")
        body["questions"].append({"id": "ticket", "kind": "text", "prompt": "Change ticket?"})
        asked = await create(http, body)
        assert asked["state"] == "pending"
        skipped = next(e for e in await events(http, asked["id"]) if e["kind"] == "policy_skipped")
        assert skipped["data"]["by"] == "policy:make" and "required question" in skipped["data"]["why"]
        secret = call("make secret")
        secret["questions"].append({"id": "pw", "kind": "secret", "prompt": "Password?"})
        assert (await create(http, secret))["state"] == "pending"
        plain = call("make plain")
        plain["questions"][0]["required"] = True
        assert (await create(http, plain))["state"] == "answered"
        denied = await create(http, call("curl https://example.com"))
        assert denied["state"] == "answered" and denied["answer"]["values"] == {"approve": "no"}
        assert denied["answer"]["reason"] == "no network from agents"
        assert denied["answer"]["responder"]["name"] == "policy:no-curl"


async def test_rules_reload_with_the_config(tmp_path: Path) -> None:
    path = tmp_path / "hitl-bridge.yaml"
    data = {**config(), "store": {"url": f"sqlite:///{tmp_path}/bridge.db"}, "http": {
        "listen": "127.0.0.1:0", "api_tokens": {"ops": {"token": OPS, "act_for_others": True}, "agent": AGENT}}}
    path.write_text(yaml.safe_dump(data))
    async with running_bridge(tmp_path, settings=load_settings(str(path), env={})) as bridge, \
            httpx.AsyncClient(base_url=bridge.base_url) as http:
        assert (await create(http, call("make all")))["state"] == "answered"
        data["policies"] = [{"name": "make", "rule": "Bash(make:*)", "effect": "deny", "reason": "frozen"}]
        path.write_text(yaml.safe_dump(data))
        assert await bridge.reload(env={})
        denied = await create(http, call("make all"))
        assert denied["answer"]["values"] == {"approve": "no"} and denied["answer"]["reason"] == "frozen"
        data["policies"] = [{"name": "make", "rule": "Bash(make:*)", "effect": "allow", "reason": "x"}]
        path.write_text(yaml.safe_dump(data))
        assert not await bridge.reload(env={})  # refused: the running rules stay
        assert (await create(http, call("make all")))["answer"]["reason"] == "frozen"


async def test_fyi_routes_show_automatic_decisions_as_decided(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, config(fyi_automatic=True)) as bridge, \
            httpx.AsyncClient(base_url=bridge.base_url) as http:
        decided = await create(http, call("make lint"))
        assert decided["state"] == "answered"
        posts = await wait_for(lambda: bridge.store.list_posts(decided["id"]), 10)
        assert posts[0].channel == "web"
        first = await create(http, call("ls"))
        assert (await approve_with(http, first["id"], "span:3600")).status_code == 200
        assert (await create(http, call("ls -a")))["answer"]["via"] == "grant"


async def test_a_value_too_long_to_read_is_denied_by_a_deny_and_not_allowed_by_an_allow(tmp_path: Path) -> None:
    rules = [{"name": "make", "rule": "Bash(make:*)", "effect": "allow"},
             {"name": "no-secrets", "tool": "Bash", "arguments": {"command": "re:AKIA[0-9A-Z]{16}"}, "effect": "deny",
              "reason": "no cloud keys on the command line"},
             {"name": "no-etc", "rule": "Edit(//etc/**)", "effect": "deny", "reason": "not /etc"}]
    async with running_bridge(tmp_path, {**config(), "policies": rules}) as bridge, \
            httpx.AsyncClient(base_url=bridge.base_url) as http:
        long = call("make")
        long["context"]["command"] = "make " + "x" * 20_000
        denied = await create(http, long)
        assert denied["answer"]["responder"]["name"] == "policy:no-secrets"  # unread: a deny holds
        edit = call("")
        edit.update(tool="Edit", context={"file_path": "/etc/" + "a/" * 6000 + "x"})
        assert (await create(http, edit))["answer"]["responder"]["name"] == "policy:no-etc"
        assert (await create(http, call("make all")))["answer"]["responder"]["name"] == "policy:make"
