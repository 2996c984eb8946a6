"""`/telegram/webhook`: forged, malformed, oversized and hostile bodies are refused with a
clear status, nothing is recorded, and the daemon keeps serving."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

from tests.fakes.telegram_api import FakeTelegram
from tests.telegram.helpers import WEBHOOK_SECRET, closed, posted_message, submit, telegram_bridge

HEADER = "X-Telegram-Bot-Api-Secret-Token"


async def test_webhook_refuses_bad_input_and_keeps_serving(tmp_path: Path, fake: FakeTelegram) -> None:
    ann = fake.person(42, "Ann")
    async with telegram_bridge(tmp_path, fake, mode="webhook") as daemon:
        assert fake.webhook_secret == WEBHOOK_SECRET and fake.webhook_url.endswith("/telegram/webhook")
        rid = await submit(daemon, {"title": "Deploy", "questions": [{"id": "ok", "kind": "confirm", "prompt": "?"}]})
        message = await posted_message(fake, 42, "Deploy")
        data = ann.buttons(message)[0]["callback_data"]
        forged_click = {"update_id": 1, "callback_query": {
            "id": "q1", "from": ann.user, "chat_instance": "c", "data": data,
            "message": {"message_id": message["message_id"], "date": 0, "chat": {"id": 42, "type": "private"}}}}
        url = "/telegram/webhook"
        async with httpx.AsyncClient(base_url=daemon.base_url) as client:
            cases = [
                ({}, json.dumps(forged_click), 403),  # no secret header
                ({HEADER: "wrong"}, json.dumps(forged_click), 403),
                ({HEADER: WEBHOOK_SECRET[:-1]}, json.dumps(forged_click), 403),  # a prefix is not enough
                ({HEADER: WEBHOOK_SECRET}, "{not json", 400),
                ({HEADER: WEBHOOK_SECRET}, "[1, 2]", 400),
                ({HEADER: WEBHOOK_SECRET}, json.dumps({"message": {"text": "no update id"}}), 400),
                ({HEADER: WEBHOOK_SECRET}, json.dumps({"update_id": "7"}), 400),
                ({HEADER: WEBHOOK_SECRET}, json.dumps({"update_id": 8, "message": {"chat": "nonsense"}}), 400),
                ({HEADER: WEBHOOK_SECRET}, "x" * 2_000_000, 413),
                ({HEADER: WEBHOOK_SECRET}, json.dumps({"update_id": 9, "poll": {}}), 400),
            ]
            for headers, body, status in cases:
                resp = await client.post(url, content=body, headers={"content-type": "application/json", **headers})
                assert resp.status_code == status, (body[:60], resp.status_code, resp.text)
                if status != 413:
                    assert "error" in resp.json()
            request = await daemon.store.get_request(rid)
            assert request is not None and request.is_open  # the click with a bad secret did nothing
            inner: dict[str, Any] = {"message_id": 5, "date": 0, "chat": {"id": 42, "type": "private"},
                                     "from": ann.user, "text": "x" * 10}
            for _ in range(3):
                inner = {**inner, "reply_to_message": inner}
            resp = await client.post(url, json={"update_id": 10, "message": inner}, headers={HEADER: WEBHOOK_SECRET})
            assert resp.status_code == 200  # a nested but valid update is fine
            assert (await client.get("/healthz")).status_code == 200
        await ann.press(message, "Approve")  # the real click through the real webhook still works
        await closed(daemon, rid)
        assert fake.webhook_statuses[-1] == 200


async def test_webhook_route_is_off_in_polling_mode(tmp_path: Path, fake: FakeTelegram) -> None:
    async with telegram_bridge(tmp_path, fake) as daemon, httpx.AsyncClient(base_url=daemon.base_url) as client:
        resp = await client.post("/telegram/webhook", json={"update_id": 1}, headers={HEADER: "anything"})
        assert resp.status_code == 404
