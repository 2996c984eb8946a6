"""An automatic decision is evidence like a person's: a rule's allow and deny reach the engine
through the callback with a signed receipt naming the rule, stand in the hash-chained record
(which verifies), and count as automatic in the insights."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
from hitl_bridge_client import verify_receipt

from bridge.audit.insights import Verdict, gather
from bridge.audit.verify import verify_store
from tests.harness import CallbackReceiver, callback_receiver, running_bridge, wait_for

CONFIG = {"secrets": {"key": "a passphrase that seals the receipt keys"},
          "policies": [{"name": "git-reads", "rule": "Bash(git status:*)", "effect": "allow"},
                       {"name": "no-rm", "rule": "Bash(rm -rf:*)", "effect": "deny",
                        "reason": "rm -rf is never run by an agent"}]}


async def called(client: httpx.AsyncClient, receiver: CallbackReceiver, command: str) -> tuple[dict[str, Any], ...]:
    """A Bash approval submitted with a callback: the 201's request and the callback's body."""
    before = len(receiver.received)
    r = await client.post("/v1/requests", json={
        "title": f"Allow Bash: {command}", "tool": "Bash", "context": {"command": command},
        "questions": [{"id": "approve", "kind": "confirm", "prompt": "Allow?"}],
        "callback": {"url": receiver.url, "secret": "s" * 32}})
    assert r.status_code == 201, r.text
    await wait_for(lambda: len(receiver.received) > before)
    return r.json(), json.loads(receiver.received[-1].body)


async def test_rule_decisions_are_signed_chained_and_counted(tmp_path: Path) -> None:
    async with callback_receiver() as receiver, running_bridge(tmp_path, CONFIG) as bridge, \
            httpx.AsyncClient(base_url=bridge.base_url) as client:
        allowed, allowed_back = await called(client, receiver, "git status --short")
        denied, denied_back = await called(client, receiver, "rm -rf /")
        keys = (await client.get("/.well-known/jwks.json")).json()
        events = (await client.get(f"/v1/requests/{denied['id']}/events")).json()
        report = await verify_store(bridge.store)
        insights = await gather(bridge.store)

    # decided in the create itself: the 201 carries the answer, by the rule
    assert allowed["state"] in ("answered", "delivered") and allowed["answer"]["values"] == {"approve": "yes"}
    assert allowed["answer"]["responder"]["platform"] == "policy"
    assert allowed["answer"]["responder"]["user_id"] == "git-reads"
    assert denied["answer"]["values"] == {"approve": "no"}
    assert denied["answer"]["reason"] == "rm -rf is never run by an agent"

    # the engine gets each decision with a receipt that names the rule and verifies
    for back, rule, value in ((allowed_back, "git-reads", "yes"), (denied_back, "no-rm", "no")):
        claims = await asyncio.to_thread(verify_receipt, back["receipt"], keys)
        assert claims["via"] == "policy" and rule in json.dumps(claims["by"])
        assert claims["values"] == {"approve": value}
    assert "rm -rf is never run by an agent" in json.dumps(denied_back)

    # on the record: the answer event says what decided, and the chain holding it verifies
    answered = [e for e in (events.get("events", events) if isinstance(events, dict) else events)
                if e["kind"] == "answered"]
    assert answered and answered[0]["data"]["decided_by"]["rule"] == "no-rm"
    assert report.ok, report.problems
    assert report.checked >= 4  # created + answered for each, at least

    # and counted as automatic, never as a person's
    assert insights.by_route["default"].counts[Verdict.automatic] == 2
    assert all(not who.startswith(("api:", "web:")) for who in insights.by_person)
