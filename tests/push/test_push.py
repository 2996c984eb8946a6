"""Web Push end to end: a real daemon, a person's inbox session (httpx) that turns
notifications on, and a fake push service on 127.0.0.1 that checks each message's VAPID
signature and decrypts it like a browser. The person answers by POSTing the button's
decision as the service worker does."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from bridge.daemon import Daemon
from bridge.doctor import diagnose
from bridge.models import RequestState
from tests.fakes.push_service import FakePushService, push_service
from tests.harness import ManualClock
from tests.push.helpers import ANA_TOKEN, BO_TOKEN, log_in, push_config, push_page, turn_on
from tests.timing.helpers import bridge_on, create, events, step, stored

TEXT = [{"id": "note", "kind": "text", "prompt": "What should I tell them?"}]


@asynccontextmanager
async def phone_setup(tmp_path: Path, **extra: Any) -> AsyncIterator[tuple[Daemon, FakePushService, httpx.AsyncClient]]:
    async with push_service() as service, \
            bridge_on(tmp_path, ManualClock(datetime.now(UTC)), push_config(service, **extra)) as daemon:
        async with httpx.AsyncClient(base_url=daemon.base_url) as phone:
            await log_in(phone, ANA_TOKEN)
            yield daemon, service, phone


async def tap(daemon: Daemon, url: str, body: Any) -> httpx.Response:
    async with httpx.AsyncClient(base_url=daemon.base_url) as sw:  # the service worker: no cookies
        response = await sw.post(url, json=body) if not isinstance(body, bytes) else \
            await sw.post(url, content=body, headers={"Content-Type": "application/json"})
    await daemon.service.drain()
    return response


async def test_approve_from_the_notification(tmp_path: Path) -> None:
    async with phone_setup(tmp_path) as (daemon, service, phone):
        sub = await turn_on(phone, service)
        sid = service.sid_of(sub)
        rid = await create(daemon, title="Deploy api v2.3", description="Rolls out 6 replicas.", agent="deployer")
        first = (await service.wait_for(sid, 1))[0]
        note = first.payload
        assert note["kind"] == "request" and note["tag"] == f"hitl-{rid}"
        assert note["title"] == "Approval: Deploy api v2.3" and "deployer" in note["body"]
        assert [a["action"] for a in note["actions"]] == ["approve", "reject"]
        assert note["tap"].startswith("/inbox/push/tap/") and note["url"].startswith("/inbox/a/")
        assert first.subject == "mailto:ops@example.com" and first.urgency == "high" and first.ttl > 0
        assert (await stored(daemon, rid)).is_open  # a message answers nothing by itself

        assert (await phone.get(note["tap"])).status_code == 405  # a GET decides nothing
        done = await tap(daemon, note["tap"], {"decision": "approve"})
        assert done.status_code == 200 and done.json()["state"] == "answered", done.text
        request = await stored(daemon, rid)
        assert request.state in (RequestState.answered, RequestState.delivered)
        assert request.answer is not None and request.answer.values == {"ok": "yes"}
        assert request.answer.responder.key == "push:ana" and request.answer.responder.person == "ana"
        assert request.answer.via == "push"

        replay = await tap(daemon, note["tap"], {"decision": "reject"})
        assert replay.status_code == 404 and "not valid" in replay.json()["error"]
        closed = (await service.wait_for(sid, 2))[1].payload  # the outcome replaces the question
        assert closed["kind"] == "closed" and closed["tag"] == note["tag"] and closed["actions"] == []
        assert closed["title"].startswith("Approved by ana")
        assert service.refused == []  # every message had a valid VAPID signature and decrypted


async def test_answered_elsewhere_replaces_the_notification(tmp_path: Path) -> None:
    async with phone_setup(tmp_path) as (daemon, service, phone):
        sid = service.sid_of(await turn_on(phone, service))
        rid = await create(daemon)
        note = (await service.wait_for(sid, 1))[0].payload
        async with httpx.AsyncClient(base_url=daemon.base_url) as api:  # an open loopback API: no token
            await api.post(f"/v1/requests/{rid}/answer", json={"value": False})
        await daemon.service.drain()
        closed = (await service.wait_for(sid, 2))[1].payload
        assert closed["tag"] == note["tag"] and closed["title"].startswith("Rejected")
        late = await tap(daemon, note["tap"], {"decision": "approve"})
        assert late.status_code == 409 and "already" in late.json()["error"]
        assert (await stored(daemon, rid)).answer.values == {"ok": "no"}  # type: ignore[union-attr]


async def test_forged_malformed_and_cross_request_taps_are_refused(tmp_path: Path) -> None:
    async with phone_setup(tmp_path) as (daemon, service, phone):
        sid = service.sid_of(await turn_on(phone, service))
        first = await create(daemon, title="first")
        second = await create(daemon, title="second")
        notes = {m.payload["tag"]: m.payload for m in await service.wait_for(sid, 2)}
        tap_first = notes[f"hitl-{first}"]["tap"]
        for url, body, status in [
            ("/inbox/push/tap/" + "A" * 43, {"decision": "approve"}, 404),  # forged
            ("/inbox/push/tap/short", {"decision": "approve"}, 404),  # malformed
            (tap_first, {"decision": "approve", "request_id": second}, 400),  # naming another request
            (tap_first, {"decision": "maybe"}, 400),
            (tap_first, b"not json", 400),
            (tap_first, b'{"decision": "' + b"a" * 2000 + b'"}', 413),
            (tap_first, [], 400),
        ]:
            refused = await tap(daemon, url, body)
            assert refused.status_code == status, (url, body, refused.text)
        for rid in (first, second):
            assert (await stored(daemon, rid)).is_open  # nothing above answered anything, or spent the token
        assert (await tap(daemon, tap_first, {"decision": "reject"})).status_code == 200
        assert (await stored(daemon, first)).answer.values == {"ok": "no"}  # type: ignore[union-attr]
        assert (await stored(daemon, second)).is_open  # a token answers its own request only


async def test_other_kinds_get_open_not_buttons(tmp_path: Path) -> None:
    async with phone_setup(tmp_path) as (daemon, service, phone):
        sid = service.sid_of(await turn_on(phone, service))
        await create(daemon, title="Reply to the customer", questions=TEXT)
        note = (await service.wait_for(sid, 1))[0].payload
        assert note["actions"] == [{"action": "open", "title": "Open"}] and note["tap"] is None
        page = await httpx.AsyncClient().get(daemon.base_url + note["url"])
        assert page.status_code == 200 and "Reply to the customer" in page.text  # the answer page, no login


@pytest.mark.parametrize("status", [404, 410])
async def test_an_expired_subscription_is_dropped_and_shown(tmp_path: Path, status: int) -> None:
    async with phone_setup(tmp_path) as (daemon, service, phone):
        old = service.sid_of(await turn_on(phone, service))
        new = service.sid_of(await turn_on(phone, service))
        service.gone[old] = status
        await create(daemon)
        await service.wait_for(new, 1)
        devices = await daemon.store.kv_items("push-subscription")
        assert [k for k, _ in devices] and all(old not in str(row) for _, row in devices)
        _, _, page = await push_page(phone)
        assert "Dropped devices" in page and f"answered {status}" in page
        findings = await diagnose(daemon.settings, daemon_url=daemon.base_url)
        dropped = [f for f in findings if f.check == "push device of ana"]
        assert dropped and dropped[0].status == "warn" and str(status) in dropped[0].detail


async def test_turning_on_refuses_bad_subscriptions(tmp_path: Path) -> None:
    async with phone_setup(tmp_path) as (daemon, service, phone):
        key, csrf, _ = await push_page(phone)
        good = service.subscribe(key)
        bad = [
            ({**good, "endpoint": "http://10.0.0.1/push/x"}, 422),  # not a configured push service
            ({**good, "endpoint": "https://evil.example/push/x"}, 422),
            ({**good, "keys": {"p256dh": "AAAA", "auth": good["keys"]["auth"]}}, 422),
            ({**good, "keys": {"p256dh": good["keys"]["p256dh"], "auth": "too-short"}}, 422),
            ({"endpoint": good["endpoint"]}, 422),
            ("not an object", 422),
        ]
        for body, status in bad:
            refused = await phone.post("/inbox/push/devices", json=body, headers={"X-CSRF-Token": csrf})
            assert refused.status_code == status, (body, refused.text)
        stale = await phone.post("/inbox/push/devices", json=good, headers={"X-CSRF-Token": "forged"})
        assert stale.status_code == 403
        huge = await phone.post("/inbox/push/devices", content=b"{" + b" " * 5000 + b"}",
                                headers={"X-CSRF-Token": csrf, "Content-Type": "application/json"})
        assert huge.status_code == 413
        assert await daemon.store.kv_items("push-subscription") == []
        async with httpx.AsyncClient(base_url=daemon.base_url) as stranger:
            assert (await stranger.post("/inbox/push/devices", json=good)).status_code == 401


async def test_quorum_reminders_escalation_and_metrics(tmp_path: Path) -> None:
    route = {"name": "deploys", "notify": ["push:ana"], "responders": ["person:ana", "person:bo"], "quorum": 2,
             "remind_every": "10m", "escalate": [{"after": "15m", "notify": ["person:bo"]}]}
    clock = ManualClock(datetime.now(UTC))
    async with push_service() as service, \
            bridge_on(tmp_path, clock, push_config(service, routes=[route])) as daemon, \
            httpx.AsyncClient(base_url=daemon.base_url) as ana, httpx.AsyncClient(base_url=daemon.base_url) as bo:
        await log_in(ana, ANA_TOKEN)
        await log_in(bo, BO_TOKEN)
        ana_sid = service.sid_of(await turn_on(ana, service))
        bo_sid = service.sid_of(await turn_on(bo, service))
        rid = await create(daemon)
        first = (await service.wait_for(ana_sid, 1))[0].payload
        assert service.inbox[bo_sid] == []  # bo is reached only by the escalation

        await step(daemon, clock, minutes=10)
        reminder = (await service.wait_for(ana_sid, 2))[1].payload
        assert reminder["tag"] == first["tag"] and reminder["renotify"] and reminder["title"].startswith("Reminder")
        await step(daemon, clock, minutes=5)
        escalated = (await service.wait_for(bo_sid, 1))[0].payload
        assert escalated["title"].startswith("Escalated") and escalated["tap"] != first["tap"]

        voted = await tap(daemon, first["tap"], {"decision": "approve"})
        assert voted.status_code == 200 and voted.json()["state"] == "voted"
        assert (await stored(daemon, rid)).is_open  # one of two approvals
        done = await tap(daemon, escalated["tap"], {"decision": "approve"})
        assert done.status_code == 200 and done.json()["state"] == "answered"
        request = await stored(daemon, rid)
        assert not request.is_open and request.answer is not None and request.answer.responder.person == "bo"
        for sid in (ana_sid, bo_sid):  # both phones' notifications are replaced by the outcome
            assert any(m.payload["kind"] == "closed" for m in await service.wait_for(sid, len(service.inbox[sid])))
        async with httpx.AsyncClient(base_url=daemon.base_url) as probe:
            ready = (await probe.get("/readyz")).text
            metrics = (await probe.get("/metrics")).text
        assert "channel:push" in ready
        sent = [line for line in metrics.splitlines() if line.startswith('hitl_push_messages_total{result="sent"}')]
        assert sent and float(sent[0].split()[-1]) >= 5


async def test_a_person_not_among_the_responders_is_refused_on_the_record(tmp_path: Path) -> None:
    route = {"name": "deploys", "notify": ["push:ana"], "responders": ["person:bo"]}
    async with phone_setup(tmp_path, routes=[route]) as (daemon, service, phone):
        sid = service.sid_of(await turn_on(phone, service))
        rid = await create(daemon)
        note = (await service.wait_for(sid, 1))[0].payload
        refused = await tap(daemon, note["tap"], {"decision": "approve"})
        assert refused.status_code == 403 and "not recorded" in refused.json()["error"]
        assert (await stored(daemon, rid)).is_open
        [event] = await events(daemon, rid, "refused")
        assert event.actor == "push:ana" and event.data["via"] == "push"


async def test_without_secrets_key_a_restart_makes_a_new_key_and_drops_the_devices(tmp_path: Path) -> None:
    async with push_service() as service:
        config = push_config(service)
        async with bridge_on(tmp_path, ManualClock(datetime.now(UTC)), config) as daemon, \
                httpx.AsyncClient(base_url=daemon.base_url) as phone:
            await log_in(phone, ANA_TOKEN)
            await turn_on(phone, service)
            first_key, _, _ = await push_page(phone)
        async with bridge_on(tmp_path, ManualClock(datetime.now(UTC)), config) as daemon, \
                httpx.AsyncClient(base_url=daemon.base_url) as phone:
            await log_in(phone, ANA_TOKEN)
            second_key, _, page = await push_page(phone)
            assert second_key != first_key
            assert await daemon.store.kv_items("push-subscription") == []
            assert "push key changed" in page
        with_key = {**config, "secrets": {"key": "a passphrase that survives restarts"}}
        keys = []
        for _ in range(2):
            async with bridge_on(tmp_path, ManualClock(datetime.now(UTC)), with_key) as daemon, \
                    httpx.AsyncClient(base_url=daemon.base_url) as phone:
                await log_in(phone, ANA_TOKEN)
                keys.append((await push_page(phone))[0])
        assert keys[0] == keys[1]  # sealed with secrets.key: the same key after a restart
