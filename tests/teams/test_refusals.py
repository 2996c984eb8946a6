"""Inbound activities that are not Microsoft's for this bot are refused and counted;
hostile action data records nothing; a secret is taken only in the one-to-one dialog."""

from __future__ import annotations

import time
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric import rsa

from adapters.teams.cards import APPROVE, SECRET_DIALOG, SUBMIT
from bridge.health import Status
from tests.fakes.teams_api import FakeTeams
from tests.harness import wait_for
from tests.teams.conftest import ANA, CHANNEL, TeamsBridge, confirm_body, teams_bridge


def _refused(bridge: TeamsBridge) -> dict[str, int]:
    channel = next(c for c in bridge.daemon.channels if c.name == "teams")
    return dict(channel.refused)  # type: ignore[attr-defined]


async def test_forged_expired_wrong_audience_and_wrong_service_url_are_refused(
        tmp_path: Path, fake: FakeTeams) -> None:
    async with teams_bridge(tmp_path, fake) as bridge:
        await bridge.install()
        request_id = await bridge.create(confirm_body())
        await bridge.card_in(CHANNEL)
        click = bridge.activity("invoke", name="adaptiveCard/action")
        click["name"] = "adaptiveCard/action"
        click["value"] = {"action": {"type": "Action.Execute", "verb": APPROVE, "data": {"request_id": request_id}}}
        other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        now = int(time.time())
        cases = {
            "forged": fake.sign({"iss": "https://api.botframework.com", "aud": fake.section()["app_id"],
                                 "serviceurl": fake.service_url, "exp": now + 600}, key=other_key),
            "unknown_key": fake.sign({"iss": "https://api.botframework.com", "aud": fake.section()["app_id"],
                                      "serviceurl": fake.service_url, "exp": now + 600}, key=other_key, kid="k9"),
            "expired": fake.activity_token(exp=now - 3600, iat=now - 7200, nbf=now - 7200),
            "audience": fake.activity_token(aud="someone-elses-app"),
            "issuer": fake.activity_token(iss="https://evil.example"),
            "service_url": fake.activity_token(service_url="https://smba.evil.example/teams/"),
            "no_claim": fake.activity_token(serviceurl=None),
            "garbage": "not.a.jwt",
        }
        for case, token in cases.items():
            response = await bridge.send(click, token)
            assert response.status_code == 401, case
        missing = await bridge.http.post(bridge.endpoint, json=click)
        assert missing.status_code == 401
        request = await bridge.daemon.store.get_request(request_id)
        assert request is not None and request.is_open  # nothing was recorded
        refused = _refused(bridge)
        assert sum(refused.values()) == len(cases) + 1
        metrics = (await bridge.http.get(f"{bridge.daemon.base_url}/metrics")).text
        assert 'hitl_teams_activities_refused_total{reason="expired"} 1.0' in metrics
        assert refused.get("expired") == 1 and refused.get("audience") == 1 and refused.get("service_url", 0) >= 1


async def test_oversized_and_malformed_bodies_are_refused(tmp_path: Path, fake: FakeTeams) -> None:
    async with teams_bridge(tmp_path, fake) as bridge:
        token = fake.activity_token()
        big = await bridge.http.post(bridge.endpoint, content=b"{" + b" " * 300_000 + b"}",
                                     headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
        assert big.status_code == 413
        for body in (b"[]", b"not json", b'{"type": 5}', b"\xff\xfe"):
            response = await bridge.http.post(bridge.endpoint, content=body,
                                              headers={"Authorization": f"Bearer {token}"})
            assert response.status_code == 400
        assert _refused(bridge)["not_an_activity"] == 4


async def test_hostile_action_data_records_nothing(tmp_path: Path, fake: FakeTeams) -> None:
    async with teams_bridge(tmp_path, fake) as bridge:
        await bridge.install()
        request_id = await bridge.create({"title": "Which region?", "questions": [
            {"id": "region", "kind": "choice", "prompt": "Region", "options": ["eu", "us"]}]})
        await bridge.card_in(CHANNEL)
        for data in ({"request_id": request_id, "choice": 7}, {"request_id": request_id, "choice": True},
                     {"request_id": "x" * 500}, {"request_id": request_id}):
            answer = await bridge.click(SUBMIT, data)
            assert answer["type"] == "application/vnd.microsoft.activity.message", data
        answer = await bridge.click(APPROVE, {"request_id": request_id})  # not a confirm
        assert "not valid" in answer["value"]
        unknown = await bridge.click(SUBMIT, {"request_id": "nope", "choice": 0})
        assert "not known" in unknown["value"]
        request = await bridge.daemon.store.get_request(request_id)
        assert request is not None and request.is_open


async def test_a_secret_is_given_only_in_the_one_to_one_dialog_and_never_stored_in_clear(
        tmp_path: Path, fake: FakeTeams) -> None:
    secret = "hunter2-correct-horse-battery"
    async with teams_bridge(tmp_path, fake) as bridge:
        await bridge.install()
        request_id = await bridge.create({"title": "Registry password", "questions": [
            {"id": "pw", "kind": "secret", "prompt": "Password"}]})
        [posted] = await bridge.card_in(CHANNEL)
        assert not any(i.get("type", "").startswith("Input.") for i in posted.card["body"])
        # in the channel: no dialog, no secret taken from the card
        refused = await bridge.task("task/fetch", {"verb": SECRET_DIALOG, "request_id": request_id}, personal=False)
        assert "one-to-one" in refused["task"]["value"]
        sneaky = await bridge.click(SUBMIT, {"request_id": request_id, "answer.pw": secret})
        assert "not valid" in sneaky["value"]
        # "Answer privately" sends the card to the person's one-to-one chat
        await bridge.click("hitl.private", {"request_id": request_id})
        [private] = await bridge.card_in(f"a:personal-{ANA}")
        assert private.card["actions"][0]["data"]["msteams"]["type"] == "task/fetch"
        dialog = await bridge.task("task/fetch", {"verb": SECRET_DIALOG, "request_id": request_id})
        field = dialog["task"]["value"]["card"]["content"]["body"][1]
        assert field["style"] == "Password"
        done = await bridge.task("task/submit", {"verb": SECRET_DIALOG, "request_id": request_id, "answer.pw": secret})
        assert "recorded" in done["task"]["value"]
        request = await bridge.closed(request_id)
        assert request.redacted_answer() == {"pw": "[secret]"}
        await wait_for(lambda: len(posted.versions) >= 1, 10)
    for activity in fake.activities.values():
        assert secret not in str(activity.body) and all(secret not in str(v) for v in activity.versions)
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path


async def test_a_refused_credential_makes_the_channel_failing(tmp_path: Path, fake: FakeTeams) -> None:
    fake.refuse_credentials = True
    async with teams_bridge(tmp_path, fake) as bridge:
        check = bridge.daemon.service.health.current("channel:teams")
        assert check is not None and check.status is Status.failing and "app_password" in check.fix
        ready = await bridge.http.get(f"{bridge.daemon.base_url}/readyz")
        assert ready.status_code == 503
