"""On-call rotas: `oncall:<rota>` is whoever is on call at that moment, pinned when a
request is asked or escalated; a hand-over at the boundary during an escalation; iCal
feeds with their last good copy; malformed rotas refused by the config."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from bridge.config import Settings
from bridge.models import Responder
from bridge.oncall import Rota, on_call_in_rotation
from bridge.oncall_feeds import Feeds
from bridge.people import People
from tests.email.smtp_server import SmtpServer, smtp_server
from tests.harness import ManualClock
from tests.timing.helpers import RELAY_TOKENS, bridge_on, create, events, step, stored

PEOPLE = {n: [f"email:{n}@example.org", f"slack:{u}"] for n, u in (("ana", "U1"), ("bo", "U2"), ("cy", "U3"))}
#: hand-over at 12:30 UTC every day: bo's turn ends, cy's begins, at 2026-01-01 12:30
ROTA = {"people": ["cy", "bo"], "start": "2025-12-30", "handover": "12:30", "every": "1d", "timezone": "UTC"}


@pytest.fixture
def smtp(tmp_path: Path) -> Iterator[SmtpServer]:
    with smtp_server(tmp_path) as server:
        yield server


def config(smtp: SmtpServer, rota: dict[str, Any]) -> dict[str, Any]:
    return {
        "http": RELAY_TOKENS,
        "email": {"smtp_url": smtp.url(), "from": "Agents <agents@example.com>", "starttls": False,
                  "first_retry_s": 0.05, "max_per_second": 100},
        "people": PEOPLE,
        "rotas": {"primary": rota},
        "routes": [{"name": "pager", "notify": ["person:ana"], "responders": ["person:ana"], "escalate": [
            {"after": "29m", "notify": ["oncall:primary"]}, {"after": "30m", "notify": ["oncall:primary"]}]}],
    }


async def test_a_hand_over_at_the_boundary_during_an_escalation(tmp_path: Path, smtp: SmtpServer) -> None:
    clock = ManualClock()  # 2026-01-01 12:00 UTC
    async with bridge_on(tmp_path, clock, config(smtp, ROTA)) as daemon:
        rid = await create(daemon)
        await step(daemon, clock, minutes=29)  # 12:29: still bo's turn
        await step(daemon, clock, minutes=1)  # 12:30 exactly: cy's turn has begun
        escalated = await events(daemon, rid, "escalated")
        assert [e.data["on_call"] for e in escalated] == [{"oncall:primary": "person:bo"},
                                                          {"oncall:primary": "person:cy"}]
        request = await stored(daemon, rid)
        assert request.responders == ["person:ana", "person:bo", "person:cy"]  # bo keeps what he was paged for
        assert [p.target for p in await daemon.store.list_posts(rid)] == [
            "email:ana@example.org", "email:bo@example.org", "email:cy@example.org"]
        bo = Responder(platform="slack", user_id="U2")
        assert (await daemon.service.answer(rid, bo, {"ok": "yes"}, via="slack")).answer is not None


def test_a_rotation_counts_turns_in_its_zone_with_overrides() -> None:
    rota = Rota.model_validate({"people": ["ana", "bo"], "start": "2026-03-23", "handover": "09:00",
                                "every": "7d", "timezone": "Europe/Berlin", "overrides": [
                                    {"person": "cy", "from": "2026-04-01T00:00+02:00",
                                     "until": "2026-04-02T00:00+02:00"}]})
    berlin_9 = datetime(2026, 3, 30, 7, 0, tzinfo=UTC)  # 09:00 in Berlin after the clocks went forward
    assert on_call_in_rotation(rota, berlin_9 - timedelta(seconds=1)) == "ana"
    assert on_call_in_rotation(rota, berlin_9) == "bo"
    assert on_call_in_rotation(rota, datetime(2026, 4, 1, 12, 0, tzinfo=UTC)) == "cy"
    assert on_call_in_rotation(rota, datetime(2026, 3, 1, tzinfo=UTC)) is None  # before the first turn


ICS = """BEGIN:VCALENDAR\r
VERSION:2.0\r
PRODID:-//test//oncall//EN\r
BEGIN:VEVENT\r
UID:1@test\r
DTSTART:20260101T000000Z\r
DTEND:20260102T000000Z\r
RRULE:FREQ=WEEKLY\r
SUMMARY:On call: cy\r
END:VEVENT\r
END:VCALENDAR\r
"""


async def test_an_ical_feed_keeps_its_last_good_copy(tmp_path: Path) -> None:
    feed = tmp_path / "oncall.ics"
    feed.write_text(ICS)
    rota = Rota.model_validate({"ical": str(feed), "refresh": "1ms"})
    people = People(PEOPLE, {}, {"primary": rota})
    feeds = Feeds()
    await feeds.fresh(people.rotas)
    a_week_on = datetime(2026, 1, 8, 12, tzinfo=UTC)  # the weekly repeat
    assert people.on_call("primary", a_week_on, feeds.calendar(str(feed))) == "cy"
    assert people.on_call("primary", datetime(2026, 1, 3, tzinfo=UTC), feeds.calendar(str(feed))) is None
    feed.write_text("BEGIN:VCALENDAR\r\nthis is not a calendar")
    feeds._feeds[str(feed)].read_at = None  # due again
    await feeds.fresh(people.rotas)
    assert "not an iCalendar file" in feeds.problems()[str(feed)]
    assert people.on_call("primary", a_week_on, feeds.calendar(str(feed))) == "cy"  # the last good copy
    missing = Rota.model_validate({"ical": str(tmp_path / "gone.ics")})
    fresh = Feeds()
    await fresh.fresh({"x": missing})
    assert "cannot be read" in fresh.problems()[str(tmp_path / "gone.ics")]
    assert fresh.calendar(str(tmp_path / "gone.ics")) is None  # nobody: the target reaches nobody


@pytest.mark.parametrize(("rota", "why"), [
    ({"people": ["ana", "zed"], "start": "2026-01-01"}, "zed not in people"),
    ({"people": ["ana"], "start": "2026-01-01", "timezone": "Mars/Olympus"}, "unknown time zone"),
    ({"people": ["ana"], "start": "2026-01-01", "ical": "/x.ics"}, "not both"),
    ({"people": ["ana"]}, "needs start"),
    ({}, "needs people"),
    ({"people": ["ana"], "start": "2026-01-01", "every": "5m"}, "at least an hour"),
    ({"people": ["ana"], "start": "2026-01-01", "overrides": [
        {"person": "bo", "from": "2026-01-02T00:00Z", "until": "2026-01-01T00:00Z"}]}, "after from"),
])
def test_malformed_rotas_are_refused_by_the_config(rota: dict[str, Any], why: str) -> None:
    with pytest.raises(ValidationError, match=why):
        Settings.model_validate({"people": PEOPLE, "rotas": {"primary": rota}})


def test_a_target_naming_an_unknown_rota_is_refused() -> None:
    with pytest.raises(ValidationError, match="oncall:nobody is not defined"):
        Settings.model_validate({"people": PEOPLE, "routes": [{"notify": ["oncall:nobody"]}]})



async def test_an_ical_url_is_fetched_and_its_failure_keeps_the_last_good_copy() -> None:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import PlainTextResponse, Response
    from starlette.routing import Route

    from bridge.http.loopback import serving

    answers = {"status": 200, "body": ICS}

    async def feed(request: Request) -> Response:
        return PlainTextResponse(answers["body"], status_code=answers["status"])

    async with serving(Starlette(routes=[Route("/oncall.ics", feed)]), "the feed") as port:
        url = f"http://127.0.0.1:{port}/oncall.ics"
        people = People(PEOPLE, {}, {"primary": Rota.model_validate({"ical": url, "refresh": "1h"})})
        feeds = Feeds()
        await feeds.fresh(people.rotas)
        a_week_on = datetime(2026, 1, 8, 12, tzinfo=UTC)
        assert people.on_call("primary", a_week_on, feeds.calendar(url)) == "cy"
        answers["status"] = 500
        await feeds.fresh(people.rotas)  # within `refresh`: not fetched again
        assert feeds.problems() == {}
        feeds._feeds[url].read_at = None
        await feeds.fresh(people.rotas)
        assert "answered HTTP 500" in feeds.problems()[url]
        assert people.on_call("primary", a_week_on, feeds.calendar(url)) == "cy"
        answers.update(status=200, body="X" * 3_000_000)  # a huge feed is refused, never parsed
        feeds._feeds[url].read_at = None
        await feeds.fresh(people.rotas)
        assert "larger than 2 MB" in feeds.problems()[url]


async def test_doctor_names_who_is_on_call_and_a_feed_it_cannot_read(tmp_path: Path) -> None:
    from bridge.doctor import rota_checks

    good = tmp_path / "oncall.ics"
    good.write_text(ICS)
    broken = tmp_path / "broken.ics"
    broken.write_text("BEGIN:VCALENDAR\r\nthis is not a calendar")
    settings = Settings.model_validate({"people": PEOPLE, "rotas": {
        "primary": {"ical": str(good)}, "broken": {"ical": str(broken)}, "gone": {"ical": str(tmp_path / "no.ics")},
        "turns": ROTA}})
    found = {f.check: f for f in await rota_checks(settings, datetime(2026, 1, 8, 12, tzinfo=UTC))}
    assert (found["rota primary"].status, found["rota primary"].detail) == ("ok", "cy is on call now (by its feed)")
    assert found["rota broken"].status == "fail" and "not an iCalendar file" in found["rota broken"].detail
    assert "oncall:broken reaches nobody" in found["rota broken"].fix
    assert found["rota gone"].status == "fail" and "cannot be read" in found["rota gone"].detail
    assert found["rota turns"].status == "ok" and "on call now (by the rotation)" in found["rota turns"].detail
    quiet = {f.check: f for f in await rota_checks(settings, datetime(2026, 1, 3, tzinfo=UTC))}
    assert quiet["rota primary"].status == "warn"  # nobody's turn in the calendar then
