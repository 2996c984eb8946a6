"""What an operator sees: one log line per lifecycle step (text and JSON, with the request id
as a field, never a secret), failed deliveries with the engine's error, repeats held back,
and every counter and histogram in /metrics moving."""

from __future__ import annotations

import io
import json
import logging
import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from bridge.logs import RepeatLimiter, configure_logging
from tests.harness import ManualClock, callback_receiver, running_bridge, wait_for
from tests.timing.helpers import bridge_on, create, step

SECRET = "whsec-0123456789abcdef"
FAST = {"delivery": {"first_retry": "20ms", "max_backoff": "50ms", "give_up_after": "2s"}}


def body(url: str, **extra: Any) -> dict[str, Any]:
    return {"title": "Deploy?", "questions": [{"id": "ok", "kind": "confirm", "prompt": "Go?"},
                                              {"id": "why", "kind": "text", "prompt": "Why?", "required": False}],
            "callback": {"url": url, "secret": SECRET}, **extra}


def sample(text: str, name: str, **labels: str) -> float:
    """The value of one series in a Prometheus text exposition (0 when absent)."""
    want = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        series, _, value = line.rpartition(" ")
        metric, _, rest = series.partition("{")
        got = ",".join(sorted(rest.rstrip("}").split(","))) if rest else ""
        if metric == name and got == want:
            return float(value)
    return 0.0


async def test_lifecycle_lines_and_metrics(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Three requests created, two answered (one delivery refused for good), one cancelled."""
    caplog.set_level(logging.INFO, logger="hitl_bridge")
    async with callback_receiver() as rx, running_bridge(tmp_path, FAST) as bridge, \
            httpx.AsyncClient(base_url=bridge.base_url) as http:
        before = (await http.get("/metrics")).text
        assert sample(before, "hitl_requests_created_total", source="webhook", route="default") == 0
        a, b, c = [(await http.post("/v1/requests", json=body(rx.url))).json()["id"] for _ in range(3)]
        await http.post(f"/v1/requests/{a}/answer", json={"values": {"ok": "yes", "why": "hunter2 is fine"},
                                                          "responder": "ana"})
        await wait_for(lambda: len(rx.received) == 1)
        rx.down = True
        await http.post(f"/v1/requests/{b}/answer", json={"values": {"ok": "no"}})
        await http.post(f"/v1/requests/{c}/cancel", json={"reason": "superseded"})

        async def state_of(rid: str, state: str) -> bool:
            return (await http.get(f"/v1/requests/{rid}")).json()["state"] == state

        await wait_for(lambda: state_of(b, "failed"))

        async def two_dead_letters() -> bool:  # b's answer, and c's cancellation
            return len(await bridge.store.list_outbox(dead=True)) == 2

        await wait_for(two_dead_letters)
        metrics = (await http.get("/metrics")).text

    lines = [r.getMessage() for r in caplog.records if r.name == "hitl_bridge.requests"]
    for rid in (a, b, c):
        assert f"request {rid} created by webhook: route default → web" in lines
        assert f"request {rid} posted to web" in lines
    assert f"request {a} answered by api:local (ana) via api after 0s: ok=yes" in lines  # the decision, not the text
    assert any(re.fullmatch(rf"request {a} delivered to webhook \(answered, attempt 1, \d+ ms after the answer\)",
                            line) for line in lines)
    assert f"request {b} answered by api:local via api after 0s: ok=no" in lines
    assert f"request {c} cancelled by api:local: superseded" in lines  # the verified caller, not a claim
    retry = next(line for line in lines if line.startswith(f"request {b}: delivery to webhook failed (attempt 1)"))
    assert retry.endswith(f"callback {rx.url} answered HTTP 503")  # the engine's error
    assert any(re.fullmatch(rf"request {b}: delivery to webhook failed for good after \d+ attempt\(s\) "
                            rf"\(dead letter\): callback {re.escape(rx.url)} answered HTTP 503", line)
               for line in lines)
    assert not any("hunter2" in r.getMessage() for r in caplog.records)
    assert next(r for r in caplog.records if getattr(r, "event", "") == "answered").request_id == a  # type: ignore[attr-defined]

    assert sample(metrics, "hitl_requests_created_total", source="webhook", route="default") == 3
    assert sample(metrics, "hitl_answers_total", channel="api") == 2
    assert sample(metrics, "hitl_posts_total", channel="web", result="ok") == 3
    assert sample(metrics, "hitl_deliveries_total", source="webhook", result="delivered") == 1
    assert sample(metrics, "hitl_deliveries_total", source="webhook", result="retry") >= 2
    assert sample(metrics, "hitl_deliveries_total", source="webhook", result="dead") == 2  # b, and c's cancel
    assert sample(metrics, "hitl_time_to_answer_seconds_count", route="default") == 2
    assert sample(metrics, "hitl_time_to_answer_seconds_bucket", route="default", le="5.0") == 2
    assert sample(metrics, "hitl_answer_to_delivered_seconds_count", source="webhook") == 1
    assert re.search(r'^hitl_build_info\{python="3\.\d+\.\d+",version="[^"]+"\} 1\.0$', metrics, re.M)
    assert sample(metrics, "process_resident_memory_bytes") > 0 and sample(metrics, "process_open_fds") > 0
    assert 'python_info{' in metrics
    assert sample(metrics, "hitl_ready") == 1
    assert sample(metrics, "hitl_health_status", component="source:webhook", status="ok") == 1
    assert not re.search(r"^\w+_created[{ ]", metrics, re.M)  # no `*_created` series beside each counter


async def test_timers_fired_and_their_lateness(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="hitl_bridge.requests")
    clock = ManualClock()
    config = {"routes": [{"name": "ops", "notify": ["web:team"], "remind_every": "10m", "timeout": "30m",
                          "escalate": [{"after": "15m", "notify": ["web:lead"]}], "on_timeout": {"fail": True}}]}
    async with bridge_on(tmp_path, clock, config) as daemon, httpx.AsyncClient(base_url=daemon.base_url) as http:
        rid = await create(daemon)
        await step(daemon, clock, minutes=10, seconds=2)  # the first reminder, applied 2 s late
        await step(daemon, clock, minutes=4, seconds=58)  # 15m: the escalation, on time
        await step(daemon, clock, minutes=5)  # 20m: the second reminder
        await step(daemon, clock, minutes=10)  # 30m: the deadline closes it (the reminder due too is moot)
        metrics = (await http.get("/metrics")).text
    assert sample(metrics, "hitl_timers_fired_total", kind="reminder") == 2
    assert sample(metrics, "hitl_timers_fired_total", kind="escalation") == 1
    assert sample(metrics, "hitl_timers_fired_total", kind="deadline") == 1
    assert sample(metrics, "hitl_timer_lateness_seconds_count") == 4
    assert sample(metrics, "hitl_timer_lateness_seconds_bucket", le="1.0") == 3  # the late one is over 1 s
    assert sample(metrics, "hitl_timer_lateness_seconds_bucket", le="2.5") == 4
    assert sample(metrics, "hitl_answers_total", channel="timeout") == 0  # failed, not answered
    lines = [r.getMessage() for r in caplog.records]
    assert f"request {rid}: reminder 1 sent to web:team" in lines
    assert f"request {rid} escalated to level 1: posting to web:lead" in lines
    assert any(line.startswith(f"request {rid} expired by timeout: no answer by ") for line in lines)


async def test_json_log_lines_carry_the_request_id_as_a_field(tmp_path: Path) -> None:
    out = io.StringIO()
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    handler = configure_logging("INFO", "json", stream=out)
    try:
        async with running_bridge(tmp_path) as bridge, httpx.AsyncClient(base_url=bridge.base_url) as http:
            rid = (await http.post("/v1/requests", json={
                "title": "Rotate", "questions": [{"id": "k", "kind": "secret", "prompt": "Key?"}]})).json()["id"]
            await http.post(f"/v1/requests/{rid}/answer", json={"value": "s3cr3t-value"})
            await bridge.service.drain()
    finally:  # put back what was there (pytest's own capture), not a handler on a stream it closes
        root.removeHandler(handler)
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    mine = [line for line in lines if line.get("request_id") == rid]
    assert [line["event"] for line in mine][:3] == ["created", "posted", "answered"]  # then delivered
    answered = mine[2]
    assert answered["level"] == "INFO" and answered["logger"] == "hitl_bridge.requests"
    assert answered["responder"] == "api:local" and answered["via"] == "api" and answered["route"] == "default"
    assert answered["message"].startswith(f"request {rid} answered by api:local via api after ")
    assert "s3cr3t-value" not in out.getvalue() and "limit_key" not in out.getvalue()


def test_repeated_failures_for_different_requests_are_held_back_by_target_and_error() -> None:
    now = [0.0]
    limiter = RepeatLimiter(window_s=60, clock=lambda: now[0])

    def failed(rid: str, target: str = "slack:#deploys", error: str = "invalid_auth") -> logging.LogRecord:
        record = logging.LogRecord("hitl_bridge.requests", logging.WARNING, __file__, 1,
                                   "request %s not posted to %s: %s", (rid, target, error), None)
        record.limit_key = (target, error)
        return record

    assert limiter.filter(failed("r_1"))
    assert not any(limiter.filter(failed(f"r_{n}")) for n in range(2, 500))
    assert limiter.filter(failed("r_500", target="slack:#ops"))  # another target is another line
    now[0] = 61
    last = failed("r_501")
    assert limiter.filter(last) and "repeated 498 more time(s)" in last.getMessage()
