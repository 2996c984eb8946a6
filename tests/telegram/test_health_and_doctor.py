"""A Telegram token refused at start or later: /readyz 503 with the reason and the fix, each
failed copy logged, the daemon serving everyone else and connecting once the token is
taken; `doctor` asks the Bot API (getMe, getChat) and names each problem with its fix."""

from __future__ import annotations

import logging
from pathlib import Path

import httpx
import pytest

from bridge.doctor import diagnose, render_text
from tests.fakes.telegram_api import FakeTelegram
from tests.harness import make_settings, merge, running_bridge, wait_for
from tests.telegram.helpers import confirm, submit, telegram_config


async def test_a_refused_token_at_start_is_reported_and_the_channel_connects_once_it_is_taken(
        tmp_path: Path, fake: FakeTelegram, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    fake.person(42)
    config = merge(telegram_config(fake), {"telegram": {"reconnect_after": "50ms"}})
    config["routes"][0]["notify"] = ["telegram:42", "web"]
    right, fake.token = fake.token, "999:someone-elses-token"  # Telegram answers 401 to our token
    async with running_bridge(tmp_path, config) as daemon, httpx.AsyncClient(base_url=daemon.base_url) as http:
        ready = await http.get("/readyz")
        assert ready.status_code == 503
        assert ready.json()["reasons"] == ["channel:telegram: Telegram refused the bot token (getMe: Unauthorized)"]
        check = next(c for c in ready.json()["checks"] if c["component"] == "channel:telegram")
        assert "@BotFather" in check["fix"]

        rid = await submit(daemon, confirm("Rotate keys"))  # the web inbox still shows it
        await daemon.service.drain()
        assert (f"request {rid} not posted to telegram:42: the Telegram channel is not connected: "
                "Telegram refused the bot token (getMe: Unauthorized)") in caplog.text
        assert f"request {rid} posted to web" in caplog.text

        fake.token = right
        await wait_for(lambda: daemon.service.health.current("channel:telegram").summary
                       == "connected as @hitl_test_bot", 10)
        assert (await http.get("/readyz")).status_code == 200
        rid2 = await submit(daemon, confirm("Rotate keys again"))
        await daemon.service.drain()
        assert f"request {rid2} posted to telegram:42" in caplog.text
    assert right not in caplog.text  # PTB puts the token in its InvalidToken message: never logged


async def test_a_token_revoked_while_running_fails_then_recovers(tmp_path: Path, fake: FakeTelegram) -> None:
    fake.person(42)
    async with running_bridge(tmp_path, telegram_config(fake)) as daemon, \
            httpx.AsyncClient(base_url=daemon.base_url) as http:
        assert (await http.get("/readyz")).status_code == 200
        right, fake.token = fake.token, "999:revoked"
        await submit(daemon, confirm("Deploy"))
        await daemon.service.drain()
        ready = await http.get("/readyz")
        assert ready.status_code == 503 and "Telegram refused the bot token" in ready.text
        fake.token = right
        await submit(daemon, confirm("Deploy again"))
        await daemon.service.drain()
        assert (await http.get("/readyz")).status_code == 200


async def test_doctor_asks_for_the_bot_and_each_chat(tmp_path: Path, fake: FakeTelegram) -> None:
    fake.person(42)
    fake.add_group(-100200, "deploys")
    fake.add_group(-100300, "old team").bot_removed = True
    config = telegram_config(fake)
    config["routes"][0]["notify"] = ["telegram:42", "telegram:-100200", "telegram:-100300", "telegram:-100400",
                                     "telegram:77"]
    settings = make_settings(tmp_path, {**config, "http": {"listen": "127.0.0.1:1"}})
    lines = [line for line in render_text(await diagnose(settings)).splitlines()
             if line.split("] ", 1)[1].startswith("telegram")]
    assert lines == [
        "[ok] telegram bot: @hitl_test_bot (id 123456)",
        "[ok] telegram:42: private chat with user42",
        "[ok] telegram:-100200: group 'deploys'",
        "[FAIL] telegram:-100300: Telegram says: Forbidden: bot was kicked from the group chat — fix: add "
        "@hitl_test_bot to the group; a group that became a supergroup has a new id (-100…)",
        "[FAIL] telegram:-100400: Telegram says: Chat not found — fix: add @hitl_test_bot to the group; a group "
        "that became a supergroup has a new id (-100…)",
        "[FAIL] telegram:77: Telegram says: Chat not found — fix: the person must open "
        "https://t.me/hitl_test_bot and press Start",
    ]
    fake.token = "999:other"  # Telegram no longer takes ours
    lines = render_text(await diagnose(settings)).splitlines()
    assert ("[FAIL] telegram bot: Telegram refused the bot token (Unauthorized) — fix: put the token @BotFather "
            "gives (/mybots → your bot → API Token, digits:letters) in telegram.bot_token and restart; a revoked "
            "token must be replaced") in lines
    assert not any(line.split("] ", 1)[1].startswith("telegram:") for line in lines)  # nothing else to ask
