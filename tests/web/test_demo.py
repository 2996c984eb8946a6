"""`hitl-bridge demo`: realistic requests through the real intake, answered in the inbox,
outcomes delivered to the demo's own callback receiver and printed (secrets hidden)."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import click
import httpx
import pytest
from hitl_bridge_client import AsyncClient, verify_callback

from bridge import cli
from bridge.demo import run_demo
from tests.harness import make_settings, wait_for
from tests.web.helpers import Person

ANSWERS = {
    "Deploy payments-api v2.14.0 to production": {"q.approve": "yes"},
    "Pick the canary region": {"q.region": "eu-west-1"},
    "Reply to a customer about a late refund": {"q.reply": "Refund sent today, sorry for the wait."},
    "Staging database password needed": {"q.password": "pa55-w0rd-never-printed"},
    "Onboard a new vendor": {"q.vendor.company": "ACME", "q.vendor.contact": "ops@acme.test",
                             "q.vendor.tier": "gold", "q.systems": ["crm", "vpn"],
                             "q.terraform": json.dumps({"vendor_name": "acme", "sso": True, "seats": 3})},
    "Rotate the leaked billing webhook key?": {"q.rotate": "yes"},
}


def test_demo_verb_is_registered() -> None:
    command = cli.root.get_command(click.Context(cli.root), "demo")
    assert command is not None
    ctx = command.make_context("demo", ["--listen", "127.0.0.1:0", "--exit-when-done", "--store", "sqlite:///x.db"])
    assert ctx.params == {"listen": "127.0.0.1:0", "exit_when_done": True, "store_url": "sqlite:///x.db"}


async def test_demo_keeps_to_a_temporary_store_and_cancels_what_is_open(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    settings = make_settings(tmp_path)  # the user's store: the demo must not write into it
    lines: list[str] = []
    stop = asyncio.Event()
    task = asyncio.create_task(run_demo(settings, listen="127.0.0.1:0", out=lines.append, stop=stop))
    try:
        line = await wait_for(lambda: next((x for x in lines if "or answer them in a terminal" in x), None), 15)
        base = line.split("--url ")[1].split()[0]
        assert any("created 6 requests in a temporary store, removed when the demo stops" in x for x in lines)
        async with AsyncClient(base, token="") as client:
            listed = await client.list(["posted", "pending"])
            assert len(listed) == 6
            await client.answer(listed[0]["id"], "yes" if listed[0]["questions"][0]["kind"] == "confirm" else "x")
        assert not (tmp_path / "bridge.db").exists() and len(list(scratch.iterdir())) == 1
        await wait_for(lambda: any(x.startswith("callback received") for x in lines), 15)
    finally:
        stop.set()
        assert await asyncio.wait_for(task, 15) == 0
    assert "demo: cancelled 5 open request(s)" in lines and lines[-1] == "demo: stopped"
    assert sum("→ cancelled (the demo stopped)" in x for x in lines) == 5  # the receiver was still there
    assert list(scratch.iterdir()) == []  # the temporary store is gone


async def test_demo_end_to_end_through_the_inbox(tmp_path: Path) -> None:
    lines: list[str] = []
    stop = asyncio.Event()
    task = asyncio.create_task(run_demo(make_settings(tmp_path), listen="127.0.0.1:0", out=lines.append,
                                        stop=stop))
    try:
        url_line = await wait_for(lambda: next((x for x in lines if "open the inbox at" in x), None), 15)
        inbox = re.search(r"(http://127\.0\.0\.1:\d+)/inbox", url_line)
        assert inbox, url_line
        base = inbox.group(1)
        async with httpx.AsyncClient(base_url=base) as api:
            listed = (await api.get("/v1/requests", params={"state": ["pending", "posted"]})).json()["requests"]
        assert sorted(r["title"] for r in listed) == sorted(ANSWERS)
        by_title = {r["title"]: r for r in listed}
        escalating = by_title["Rotate the leaked billing webhook key?"]
        assert escalating["route"] == "demo-escalate" and escalating["next_escalation_at"]
        assert by_title["Deploy payments-api v2.14.0 to production"]["route"] == "demo-deploy"
        async with Person(base) as person:
            page = await person.get("/inbox")
            for title in ANSWERS:
                assert title.replace("'", "&#39;") in page.text
            for title, form in ANSWERS.items():
                response = await person.answer(by_title[title]["id"], form)
                assert response.status_code == 303, (title, response.text[:500])
        callbacks = await wait_for(lambda: [x for x in lines if x.startswith("callback received")]
                                   if sum(x.startswith("callback received") for x in lines) == 6 else None, 15)
        printed = "\n".join(lines)
        assert "pa55-w0rd-never-printed" not in printed
        assert "[secret received: 23 characters]" in printed
        assert any("'Pick the canary region' → answered" in x and "eu-west-1" in x for x in callbacks)
        assert all("signature ok" in x and "via web" in x for x in callbacks)
    finally:
        stop.set()
        assert await asyncio.wait_for(task, 15) == 0
    assert lines[-1] == "demo: stopped"


async def test_demo_reports_a_busy_port(tmp_path: Path) -> None:
    import socket

    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    port = holder.getsockname()[1]
    lines: list[str] = []
    try:
        code = await asyncio.wait_for(run_demo(make_settings(tmp_path), listen=f"127.0.0.1:{port}",
                                               out=lines.append), 15)
    finally:
        holder.close()
    assert code == 1
    assert any("cannot listen" in x and "--listen 127.0.0.1:0" in x for x in lines)


def test_receiver_signature_check() -> None:
    import time

    from adapters.webhook.callback import signed_request

    body, headers = signed_request("s" * 32, {"a": 1}, "r_1", "answered")
    lower = {k.lower(): v for k, v in headers.items()}
    assert verify_callback("s" * 32, lower, body)
    assert not verify_callback("t" * 32, lower, body)
    assert not verify_callback("s" * 32, lower, body + b" ")
    assert not verify_callback("s" * 32, {**lower, "x-hitl-timestamp": str(int(time.time()) - 3600)}, body)


async def test_demo_receiver_refuses_forged_callbacks() -> None:
    from adapters.webhook.callback import signed_request
    from bridge.demo import Receiver, serve_receiver

    lines: list[str] = []
    receiver = Receiver(secret="s" * 32, out=lines.append, secret_ids={"pw"})
    async with serve_receiver(receiver), httpx.AsyncClient() as client:
        forged, headers = signed_request("t" * 32, {"request_id": "r_1", "state": "answered"}, "r_1", "answered")
        assert (await client.post(receiver.url, content=forged, headers=headers)).status_code == 401
        body, headers = signed_request("s" * 32, {"request_id": "r_2", "state": "answered", "answer": {
            "values": {"pw": "hunter2!!", "ok": "yes"}, "responder": {"name": "dana"}, "via": "web"}},
            "r_2", "answered")
        assert (await client.post(receiver.url, content=body, headers=headers)).status_code == 200
    assert lines[0] == "callback REFUSED: bad signature"
    assert "hunter2" not in lines[1] and "[secret received: 9 characters]" in lines[1] and "by dana" in lines[1]
    assert list(receiver.received) == ["r_2"]


def test_demo_refuses_a_bad_listen_address(tmp_path: Path) -> None:
    import pytest

    from bridge.demo import demo_settings
    from bridge.errors import ConfigError

    with pytest.raises(ConfigError, match="--listen: expected host:port"):
        demo_settings(make_settings(tmp_path), "no-port-here")
    settings = demo_settings(make_settings(tmp_path, {"http": {"callback_allow": ["hooks.example.com"]}}),
                             "127.0.0.1:0")
    assert settings.http.callback_allow == ["hooks.example.com", "127.0.0.1"]
    assert [r.name for r in settings.routes][:3] == ["demo-deploy", "demo-escalate", "demo"]
