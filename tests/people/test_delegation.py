"""Delegation windows through a real daemon on a manual clock: routes, reminders and
escalation reach the delegate while the window is in force, across a restart; the
delegate's answer is "bo for ana"; quorum counts each person once; bad windows refused."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from bridge.delegation import DelegationRefused
from bridge.models import Responder
from tests.email.smtp_server import SmtpServer, smtp_server
from tests.harness import ManualClock
from tests.timing.helpers import AUTH, RELAY_TOKENS, bridge_on, create, events, step, stored


def config(smtp: SmtpServer, routes: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """People reached by mail (a real SMTP server on 127.0.0.1), answering on Slack."""
    return {
        "http": RELAY_TOKENS,
        "email": {"smtp_url": smtp.url(), "from": "Agents <agents@example.com>", "starttls": False,
                  "first_retry_s": 0.05, "max_per_second": 100},
        "people": {n: [f"email:{n}@example.org", f"slack:{u}"] for n, u in (("ana", "U1"), ("bo", "U2"),
                                                                            ("cy", "U3"))},
        "routes": routes or [{"name": "ana", "notify": ["person:ana"], "responders": ["person:ana"],
                              "remind_every": "10m", "escalate": [{"after": "30m", "notify": ["person:cy"]}]}],
    }


@pytest.fixture
def smtp(tmp_path: Path) -> Iterator[SmtpServer]:
    with smtp_server(tmp_path) as server:
        yield server


async def away(daemon: Any, **body: Any) -> httpx.Response:
    async with httpx.AsyncClient(base_url=daemon.base_url, headers=AUTH) as client:
        return await client.post("/v1/away", json={k: v.isoformat() if hasattr(v, "isoformat") else v
                                                   for k, v in body.items()})


async def reached(daemon: Any, rid: str) -> list[str]:
    return [p.target for p in await daemon.store.list_posts(rid)]


async def test_a_window_starts_and_ends_on_time_across_a_restart(tmp_path: Path, smtp: SmtpServer) -> None:
    clock = ManualClock()
    start, end = clock.now() + timedelta(hours=1), clock.now() + timedelta(hours=3)
    async with bridge_on(tmp_path, clock, config(smtp)) as daemon:
        response = await away(daemon, person="ana", delegate="bo", starts=start, until=end)
        assert response.status_code == 200, response.text
        before = await create(daemon)
        assert await reached(daemon, before) == ["email:ana@example.org"]  # not away yet
    clock.current = start  # the daemon was down when the window began
    async with bridge_on(tmp_path, clock, config(smtp)) as daemon:
        during = await create(daemon)
        assert await reached(daemon, during) == ["email:bo@example.org"]
        await step(daemon, clock, minutes=10)  # the reminder of the first request reaches bo too
        assert (await events(daemon, during, "reminded"))[0].data["n"] == 1
        bo = Responder(platform="slack", user_id="U2")
        answered = await daemon.service.answer(during, bo, {"ok": "yes"}, via="slack")
        assert answered.answer is not None and answered.answer.responder.on_behalf_of == "ana"
        data = (await events(daemon, during, "answered"))[0].data
        assert data["on_behalf_of"] == "ana"
    clock.current = end  # ended while down again
    async with bridge_on(tmp_path, clock, config(smtp)) as daemon:
        after = await create(daemon)
        assert await reached(daemon, after) == ["email:ana@example.org"]
        with pytest.raises(Exception, match="not allowed"):
            await daemon.service.answer(after, Responder(platform="slack", user_id="U2"), {"ok": "yes"}, via="slack")


async def test_escalation_and_chains_reach_the_end_of_the_chain(tmp_path: Path, smtp: SmtpServer) -> None:
    clock = ManualClock()
    async with bridge_on(tmp_path, clock, config(smtp)) as daemon:
        until = clock.now() + timedelta(days=2)
        await daemon.service.away("cy", "ana", until)
        await daemon.service.away("ana", "bo", until)  # cy → ana → bo
        rid = await create(daemon)
        await step(daemon, clock, minutes=30)  # level 1 names cy: her chain ends with bo
        assert await reached(daemon, rid) == ["email:bo@example.org"]
        assert (await events(daemon, rid, "escalated"))[0].data["level"] == 1
        with pytest.raises(DelegationRefused, match="loop"):
            await daemon.service.away("bo", "cy", until)


async def test_quorum_counts_the_delegate_once(tmp_path: Path, smtp: SmtpServer) -> None:
    clock = ManualClock()
    two = [{"name": "two", "notify": ["person:ana", "person:bo"], "quorum": 2,
            "responders": ["person:ana", "person:bo", "person:cy"]}]
    async with bridge_on(tmp_path, clock, config(smtp, two)) as daemon:
        await daemon.service.away("ana", "bo", clock.now() + timedelta(hours=8))
        rid = await create(daemon)
        bo = Responder(platform="slack", user_id="U2")
        await daemon.service.answer(rid, bo, {"ok": "yes"}, via="slack")
        await daemon.service.answer(rid, bo, {"ok": "yes"}, via="slack")  # "for ana" this time: same person
        assert (await stored(daemon, rid)).is_open
        assert [e.kind for e in await events(daemon, rid) if "vote" in e.kind] == ["vote", "duplicate_vote"]
        await daemon.service.answer(rid, Responder(platform="slack", user_id="U3"), {"ok": "yes"}, via="slack")
        assert not (await stored(daemon, rid)).is_open


@pytest.mark.parametrize(("body", "why"), [
    ({"person": "ana", "delegate": "ana"}, "themselves"),
    ({"person": "ana", "delegate": "zed"}, "not a person"),
    ({"person": "nobody", "delegate": "bo"}, "not a person"),
    ({"person": "ana", "delegate": "bo", "until": "2025-01-01T00:00:00+00:00"}, "has passed"),
    ({"person": "ana", "delegate": "bo", "until": "2031-01-01T00:00:00+00:00"}, "at most a year"),
    ({"person": "ana", "delegate": "bo", "until": "2026-01-02T00:00:00"}, "time zone"),
])
async def test_bad_windows_are_refused_with_a_reason(tmp_path: Path, smtp: SmtpServer, body: dict[str, Any],
                                                     why: str) -> None:
    clock = ManualClock()
    async with bridge_on(tmp_path, clock, config(smtp)) as daemon:
        response = await away(daemon, **{"until": clock.now() + timedelta(hours=1), **body})
        assert response.status_code in (403, 422), response.text
        assert why in response.text
        async with httpx.AsyncClient(base_url=daemon.base_url, headers=AUTH) as client:
            assert (await client.get("/v1/away")).json() == {"away": []}
