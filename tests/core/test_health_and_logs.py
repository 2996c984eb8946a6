"""The health registry and the log setup every part shares."""

from __future__ import annotations

import io
import json
import logging

import pytest

from bridge.health import Check, Health, Status
from bridge.logs import RepeatLimiter, configure_logging


async def test_a_failing_part_makes_the_daemon_not_ready_and_recovers() -> None:
    health = Health()
    health.ok("store")
    health.degraded("source:delta", "1 mailbox unreadable")
    assert (await health.ready())[0]  # degraded is shown but still ready
    health.failing("channel:slack", "token refused (invalid_auth)", fix="check slack.bot_token")
    ready, checks = await health.ready()
    assert not ready
    assert [c.component for c in checks] == ["channel:slack", "source:delta", "store"]
    assert checks[0].as_dict() == {"component": "channel:slack", "status": "failing",
                                   "summary": "token refused (invalid_auth)", "fix": "check slack.bot_token"}
    health.ok("channel:slack")
    assert (await health.ready())[0]


async def test_probes_run_on_read_and_a_hanging_or_broken_probe_counts_as_failing() -> None:
    import asyncio

    health = Health()
    calls = []

    async def fine() -> Check:
        calls.append(1)
        return Check("store", Status.ok, "writable")

    async def hangs() -> Check:
        await asyncio.Event().wait()
        raise AssertionError

    async def breaks() -> Check:
        raise OSError("disk gone")

    health.probe("store", fine)
    health.probe("source:x", breaks)
    ready, checks = await health.ready()
    assert calls == [1] and not ready
    assert {c.component: c.status for c in checks} == {"store": Status.ok, "source:x": Status.failing}
    assert "OSError: disk gone" in next(c.summary for c in checks if c.component == "source:x")
    import bridge.health as module

    module.PROBE_TIMEOUT_S, saved = 0.05, module.PROBE_TIMEOUT_S
    try:
        health.probe("source:x", hangs)
        checks = await health.snapshot()
    finally:
        module.PROBE_TIMEOUT_S = saved
    assert next(c for c in checks if c.component == "source:x").summary.startswith("did not answer")


def test_state_changes_are_logged_once_not_on_every_report(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="hitl_bridge.health")
    health = Health()
    for _ in range(5):
        health.failing("store", "disk full")
    health.ok("store")
    health.ok("store")
    assert [r.getMessage() for r in caplog.records] == ["store is failing: disk full", "store recovered"]


def test_repeated_warnings_are_held_back_and_counted() -> None:
    now = [0.0]
    limiter = RepeatLimiter(window_s=10, clock=lambda: now[0])

    def record(msg: str, *args: object, level: int = logging.WARNING) -> logging.LogRecord:
        return logging.LogRecord("hitl_bridge.delta", level, __file__, 1, msg, args, None)

    assert limiter.filter(record("bad mailbox %s", "/a"))
    assert not any(limiter.filter(record("bad mailbox %s", "/a")) for _ in range(488))
    assert limiter.filter(record("bad mailbox %s", "/b"))  # another file is another message
    assert limiter.filter(record("answered %s", "r1", level=logging.INFO))  # info is never held back
    now[0] = 10.5
    r = record("bad mailbox %s", "/a")
    assert limiter.filter(r)
    assert "repeated 488 more time(s)" in r.getMessage()


def test_json_lines_carry_level_logger_and_message() -> None:
    out = io.StringIO()
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    handler = configure_logging("INFO", "json", stream=out)
    try:
        logging.getLogger("hitl_bridge").info("request %s answered by %s", "r_1", "ana")
        logging.getLogger("httpx").info("HTTP Request: POST ...")  # a noisy library stays quiet
    finally:  # put back pytest's own handlers (a handler left on its captured stderr outlives it)
        root.removeHandler(handler)
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert len(lines) == 1
    assert lines[0]["level"] == "INFO" and lines[0]["logger"] == "hitl_bridge"
    assert lines[0]["message"] == "request r_1 answered by ana" and "time" in lines[0]


def test_text_lines_show_each_record_s_own_time_to_the_millisecond() -> None:
    """The formatter makes a second's text once (bridge.logs.TextFormatter): the milliseconds,
    and the next second, still come from each record."""
    out = io.StringIO()
    handler = configure_logging("INFO", "text", stream=out)
    try:
        log = logging.getLogger("hitl_bridge.test_time")
        for created in (1_700_000_000.123, 1_700_000_000.456, 1_700_000_001.789):
            record = log.makeRecord(log.name, logging.INFO, "", 0, "at %s", (created,), None)
            record.created, record.msecs = created, (created % 1) * 1000
            log.handle(record)
        stamps = [line.split(" ")[1] for line in out.getvalue().splitlines()]
        expected = [logging.Formatter().formatTime(logging.makeLogRecord({"created": c, "msecs": (c % 1) * 1000}))
                    for c in (1_700_000_000.123, 1_700_000_000.456, 1_700_000_001.789)]
        assert stamps == [e.split(" ")[1] for e in expected]
        assert len(set(stamps)) == 3
    finally:
        logging.getLogger().removeHandler(handler)
