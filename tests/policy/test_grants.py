"""Standing approvals made with an answer through the API: a matching call is then allowed by
`grant:<id>` with no message to anyone (the Slack fake gets none), a call it does not cover is
asked; a 1-hour grant stops exactly at its expiry (a clock the test moves); a revoked grant
stops at once, on the replica that revoked it and on the other one (two daemons on one
PostgreSQL); a quorum route never lets a grant decide."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from bridge.policy.rules import PolicyRule
from tests.fakes.slack_api import FakeSlack
from tests.harness import ManualClock, running_bridge, wait_for
from tests.slack.conftest import CHANNEL, slack_section

OPS = "ops-token-0123456789abcdefgh"
AGENT = "agent-token-0123456789abcdef"
HEADERS = {"Authorization": f"Bearer {OPS}"}


@pytest.fixture
async def fake() -> Any:
    async with FakeSlack() as server:
        yield server


def config(fake: FakeSlack | None = None, **route: Any) -> dict[str, Any]:
    notify = [f"slack:{CHANNEL}"] if fake is not None else ["web"]
    out: dict[str, Any] = {
        "http": {"api_tokens": {"ops": {"token": OPS, "act_for_others": True}, "agent": AGENT}},
        "routes": [{"name": "agents", "match": {"engine": "claude"}, "notify": notify, **route}],
    }
    if fake is not None:
        out["slack"] = slack_section(fake)
    return out


def call(command: str, *, session: str | None = "sess-1", tool: str = "Bash") -> dict[str, Any]:
    """A tool approval as an agent posts it (`request_approval` over the HTTP API)."""
    return {"title": f"Allow {tool}: {command}", "engine": "claude", "tool": tool, "session": session,
            "context": {"command": command},
            "questions": [{"id": "approve", "kind": "confirm", "prompt": "Allow?"}]}


async def create(http: httpx.AsyncClient, body: dict[str, Any]) -> dict[str, Any]:
    response = await http.post("/v1/requests", json=body, headers={"Authorization": f"Bearer {AGENT}"})
    assert response.status_code == 201, response.text
    view: dict[str, Any] = response.json()
    return view


async def approve_with(http: httpx.AsyncClient, request_id: str, grant: Any) -> httpx.Response:
    body = json.dumps({"values": {"approve": "yes"}, "grant": grant})  # ASCII: a lone surrogate as JSON "\ud800"
    return await http.post(f"/v1/requests/{request_id}/answer", content=body,
                           headers={**HEADERS, "Content-Type": "application/json"})


async def test_a_grant_allows_what_it_covers_and_nothing_else(tmp_path: Path, fake: FakeSlack) -> None:
    async with running_bridge(tmp_path, config(fake)) as bridge, httpx.AsyncClient(base_url=bridge.base_url) as http:
        first = await create(http, call("npm test -- --watch=false"))
        await wait_for(lambda: fake.channel_messages(CHANNEL), 10)
        offers = bridge.service.grant_offers(await bridge.service.get(first["id"]))  # type: ignore[arg-type]
        assert [o.key for o in offers] == ["session", "span:3600", "always"]
        assert offers[-1].pattern == "Bash(npm test:*)"
        granted = await approve_with(http, first["id"], "always")
        assert granted.status_code == 200, granted.text
        [grant] = (await http.get("/v1/grants", headers=HEADERS)).json()["grants"]
        assert grant["pattern"] == "Bash(npm test:*)" and grant["granted_by"] == "api:ops"
        assert grant["request_id"] == first["id"] and grant["active"] is True

        again = await create(http, call("npm test --coverage"))  # answered in the 201 itself
        assert again["state"] == "answered", again
        assert again["answer"]["responder"]["platform"] == "grant"
        assert again["answer"]["via"] == "grant" and again["answer"]["responder"]["user_id"] == grant["id"]
        other = await create(http, call("npm publish"))
        assert other["state"] == "pending"
        chained = await create(http, call("npm test && curl x | sh"))
        assert chained["state"] == "pending"  # a chained command is never covered
        await wait_for(lambda: len(fake.channel_messages(CHANNEL)) == 3, 10)
        shown = [m.get("text", "") for m in fake.channel_messages(CHANNEL)]
        assert not any("--coverage" in text for text in shown)  # the granted call reached nobody
        events = (await http.get(f"/v1/requests/{again['id']}/events", headers=HEADERS)).json()["events"]
        answered = next(e for e in events if e["kind"] == "answered")
        assert answered["actor"] == f"grant:{grant['id']}"
        assert answered["data"]["decided_by"]["granted_by"] == "api:ops"


async def test_widening_and_unoffered_grants_are_refused_and_the_answer_with_them(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, config()) as bridge, httpx.AsyncClient(base_url=bridge.base_url) as http:
        asked = await create(http, call("git push origin main", session=None))
        cases = [
            ({"scope": "always", "pattern": "Bash(git:*)"}, "wider"),
            ({"scope": "always", "pattern": "Bash"}, "every Bash call"),
            ({"scope": "always", "pattern": "mcp__x__*"}, "not a rule for Bash"),
            ({"scope": "always", "pattern": "Bash(git push:*) && x("}, "not a permission rule"),
            ({"scope": "session"}, "names no session"),
            ({"scope": "span", "span_s": 86400}, "at most 3600"),
            ("span:abc", "not a standing-approval choice"),
            ({"scope": "forever"}, "scope"),
            ({"scope": "always", "pattern": "x" * 1001}, "1000"),
            ({"scope": "always", "pattern": "Bash(git push origin\u0000:*)"}, "control characters"),
            ({"scope": "always", "pattern": "Bash(git push origin\ud800:*)"}, "unicode string"),
            ({"scope": "always", "pattern": "Bash(git push origin main)", "extra": 1}, "extra"),
        ]
        for grant, words in cases:
            refused = await approve_with(http, asked["id"], grant)
            assert refused.status_code == 422, (grant, refused.text)
            assert words in refused.text, (grant, refused.text)
        still = (await http.get(f"/v1/requests/{asked['id']}", headers=HEADERS)).json()
        assert still["state"] != "answered"  # a refused grant recorded no answer
        rejected = await http.post(f"/v1/requests/{asked['id']}/answer", headers=HEADERS,
                                   json={"values": {"approve": "no"}, "grant": "always"})
        assert rejected.status_code == 422 and "goes with an approval" in rejected.text
        narrower = await approve_with(http, asked["id"], {"scope": "always", "pattern": "Bash(git push origin:*)"})
        assert narrower.status_code == 200, narrower.text
        assert (await bridge.service.list_grants())[0].pattern == "Bash(git push origin:*)"


async def test_a_span_grant_stops_exactly_at_its_expiry(tmp_path: Path) -> None:
    clock = ManualClock()
    async with running_bridge(tmp_path, config(), clock=clock) as bridge, \
            httpx.AsyncClient(base_url=bridge.base_url) as http:
        first = await create(http, call("ls -la"))
        assert (await approve_with(http, first["id"], "span:3600")).status_code == 200
        [grant] = await bridge.service.list_grants()
        assert grant.created_at == clock.now() and grant.expires_at == clock.now() + timedelta(hours=1)
        clock.advance(seconds=3599.999)
        assert (await create(http, call("ls -la /tmp")))["state"] == "answered"
        assert (await create(http, call("cat notes.txt")))["state"] == "answered"  # span: every Bash call
        clock.advance(seconds=0.001)  # exactly at expires_at: no longer in force
        assert (await create(http, call("ls -la")))["state"] == "pending"
        assert await bridge.service.list_grants() == []
        assert len(await bridge.service.list_grants(active_only=False)) == 1


async def test_a_session_grant_covers_its_session_only(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, config()) as bridge, httpx.AsyncClient(base_url=bridge.base_url) as http:
        first = await create(http, call("make build", session="s-A"))
        assert (await approve_with(http, first["id"], {"scope": "session"})).status_code == 200
        assert (await create(http, call("make test", session="s-A")))["state"] == "answered"
        assert (await create(http, call("make test", session="s-B")))["state"] == "pending"
        assert (await create(http, call("make test", session=None)))["state"] == "pending"
        assert (await create(http, call("x", session="s-A", tool="Write")))["state"] == "pending"


async def test_a_quorum_route_ignores_grants_and_grants_off_offers_none(tmp_path: Path) -> None:
    quorum = {"quorum": 2, "responders": ["api:ops", "api:agent"]}
    async with running_bridge(tmp_path, config(**quorum)) as bridge, \
            httpx.AsyncClient(base_url=bridge.base_url) as http:
        asked = await create(http, call("deploy"))
        refused = await approve_with(http, asked["id"], "span:3600")
        assert refused.status_code == 422 and "offers no standing approvals" in refused.text
    # a grant made while the route allowed grants does not decide once the route needs a quorum
    async with running_bridge(tmp_path / "2", config()) as bridge, httpx.AsyncClient(base_url=bridge.base_url) as http:
        first = await create(http, call("deploy"))
        assert (await approve_with(http, first["id"], "span:3600")).status_code == 200
        bridge.apply(bridge.settings.model_copy(update={"routes": [
            bridge.settings.routes[0].model_copy(update=quorum)]}))
        # no grant may decide: a person is asked, the request is in the inbox at once
        assert (await create(http, call("deploy")))["state"] == "posted"
        explicit = PolicyRule(name="deploys-by-grant", rule="Bash(deploy:*)", grants=True)
        bridge.apply(bridge.settings.model_copy(update={"policies": [explicit]}))
        assert (await create(http, call("deploy")))["state"] == "answered"  # a rule says so explicitly
        bridge.apply(bridge.settings.model_copy(update={"policies": []}))
        bridge.apply(bridge.settings.model_copy(update={"routes": [
            bridge.settings.routes[0].model_copy(update={"quorum": 1, "grants": False})]}))
        assert (await create(http, call("deploy")))["state"] == "posted"
        bridge.apply(bridge.settings.model_copy(update={"routes": [
            bridge.settings.routes[0].model_copy(update={"grants": True})]}))
        assert (await create(http, call("deploy")))["state"] == "answered"


async def test_revocation_holds_at_once_on_both_replicas(tmp_path: Path, postgres_url: str) -> None:
    shared = {**config(), "store": {"url": postgres_url}, "secrets": {"key": "one key for both replicas"}}
    async with running_bridge(tmp_path / "a", shared) as a, running_bridge(tmp_path / "b", shared) as b, \
            httpx.AsyncClient(base_url=a.base_url) as on_a, httpx.AsyncClient(base_url=b.base_url) as on_b:
        first = await create(on_a, call("terraform plan"))
        assert (await approve_with(on_a, first["id"], "always")).status_code == 200
        [grant] = (await on_b.get("/v1/grants", headers=HEADERS)).json()["grants"]
        assert (await create(on_b, call("terraform plan -out x")))["state"] == "answered"
        assert (await create(on_a, call("terraform plan")))["state"] == "answered"
        revoked = await on_b.delete(f"/v1/grants/{grant['id']}", headers=HEADERS)
        assert revoked.status_code == 200 and revoked.json()["revoked_by"] == "api:ops"
        assert (await create(on_a, call("terraform plan")))["state"] == "pending"  # the other replica, at once
        assert (await create(on_b, call("terraform plan")))["state"] == "pending"
        again = await on_a.delete(f"/v1/grants/{grant['id']}", headers=HEADERS)
        assert again.status_code == 200 and again.json()["revoked_at"] == revoked.json()["revoked_at"]
        assert (await on_a.delete("/v1/grants/g_nope", headers=HEADERS)).status_code == 404
        theirs = await on_a.delete(f"/v1/grants/{grant['id']}", headers={"Authorization": f"Bearer {AGENT}"})
        assert theirs.status_code == 403
        assert (await on_a.get("/v1/grants", headers={"Authorization": f"Bearer {AGENT}"})).json()["grants"] == []
