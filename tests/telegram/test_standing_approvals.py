"""Standing approvals in Telegram: grant buttons under "Allow once", pressed by a simulated
person on the fake Bot API against the real daemon and python-telegram-bot. After "Allow for
1 hour" a matching call is allowed by the grant with no message, another tool is asked;
"Always allow this" saves the default pattern and says so. Forged callback data (a grant
code never offered, an oversized one, a well-formed one on a stale token) and a person
outside the responders grant nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from adapters.telegram import keyboards as kb
from tests.fakes.telegram_api import FakeTelegram
from tests.telegram.helpers import closed, posted_message, request_of, submit, telegram_bridge


def call(command: str, *, tool: str = "Bash", session: str | None = "sess-1") -> dict[str, Any]:
    return {"title": f"Allow {tool}: {command}", "engine": "claude", "tool": tool, "session": session,
            "context": {"command": command},
            "questions": [{"id": "approve", "kind": "confirm", "prompt": "Allow?"}]}


async def toast(fake: FakeTelegram, press: dict[str, Any]) -> str:
    qid = press["callback_query"]["id"]
    answered = await fake.wait_for(lambda: fake.callback_answers.get(qid))
    return str(answered.get("text", ""))


async def test_allow_for_one_hour_then_a_matching_call_is_allowed_with_no_message(
        tmp_path: Path, fake: FakeTelegram) -> None:
    ann = fake.person(42, "Ann")
    async with telegram_bridge(tmp_path, fake) as daemon:
        rid = await submit(daemon, call("npm test"))
        message = await posted_message(fake, 42, "Allow Bash: npm test")
        buttons = ann.buttons(message)
        assert [b["text"] for b in buttons] == ["✅ Allow once", "❌ Reject", "🔁 Allow for this session",
                                                "🕐 Allow for 1 hour", "♾ Always allow this"]
        assert all(len(b["callback_data"].encode()) <= kb.CALLBACK_DATA_LIMIT for b in buttons)
        press = await ann.press(message, "Allow for 1 hour")
        request = await closed(daemon, rid)
        assert request.answer is not None and request.answer.values == {"approve": "yes"}
        assert request.answer.grant is not None and request.answer.grant.scope == "span"
        assert "Allowed for 1 hour" in await toast(fake, press)
        mid = message["message_id"]
        edited = await fake.wait_for(lambda: "Allowed for 1 hour by Ann" in fake.message(42, mid)["text"]
                                     and fake.message(42, mid))
        assert "until" in edited["text"] and "reply_markup" not in edited
        [grant] = await daemon.service.list_grants()
        assert grant.granted_by == "telegram:42" and grant.id == request.answer.grant.grant_id

        sent_before = len(fake.sent_to(42))
        again = await submit(daemon, call("git status"))
        allowed = await request_of(daemon, again)
        assert allowed.answer is not None and allowed.answer.responder.platform == "grant"
        other = await submit(daemon, call("./src/app.py", tool="Edit"))
        await posted_message(fake, 42, "Allow Edit: ./src/app.py")
        assert (await request_of(daemon, other)).is_open
        assert len(fake.sent_to(42)) == sent_before + 1  # the Edit call only
        assert not any("git status" in m["text"] for m in fake.sent_to(42))


async def test_always_allow_saves_the_default_pattern_and_says_so(tmp_path: Path, fake: FakeTelegram) -> None:
    ann = fake.person(42, "Ann")
    async with telegram_bridge(tmp_path, fake) as daemon:
        rid = await submit(daemon, call("npm test -- --watch=false"))
        message = await posted_message(fake, 42, "Allow Bash")
        said = await toast(fake, await ann.press(message, "Always allow this"))
        assert said == "✅ Always allowed (Bash(npm test:*))."
        request = await closed(daemon, rid)
        assert request.answer is not None and request.answer.grant is not None
        [grant] = await daemon.service.list_grants()
        assert grant.scope == "always" and grant.pattern == "Bash(npm test:*)" and grant.expires_at is None
        edited = await fake.wait_for(lambda: "Always allowed by Ann" in fake.message(42, message["message_id"])["text"]
                                     and fake.message(42, message["message_id"]))
        assert "Bash(npm test:*)" in edited["text"]


async def test_forged_grant_callbacks_and_strangers_grant_nothing(tmp_path: Path, fake: FakeTelegram) -> None:
    ann, eve = fake.person(42, "Ann"), fake.person(7, "Eve")
    fake.add_group(-100, "ops")
    async with telegram_bridge(tmp_path, fake, notify=["telegram:-100"], responders=["telegram:42"]) as daemon:
        rid = await submit(daemon, call("make build", session=None))
        message = await posted_message(fake, -100, "Allow Bash: make build")
        token = kb.parse_callback(ann.buttons(message)[0]["callback_data"]).token
        assert not any("session" in b["text"] for b in ann.buttons(message))  # no session: not offered
        refusals = {
            f"{token}|gs": "not offered",           # a scope this request does not offer
            f"{token}|gh99999999": "not offered",   # a span nobody offered
            f"{token}|gx": "not valid",             # an unknown scope code
            f"{token}|gh" + "9" * 60: "not valid",  # oversized
            f"{'A' * 16}|gh3600": "not valid",      # well formed, unknown token
        }
        for data, said in refusals.items():
            assert said in await toast(fake, await ann.press_raw(message, data))
        assert "not allowed" in await toast(fake, await eve.press(message, "Allow for 1 hour"))
        assert (await request_of(daemon, rid)).is_open and await daemon.service.list_grants() == []
        await ann.press(message, "Allow for 1 hour")
        request = await closed(daemon, rid)
        assert request.answer is not None and request.answer.responder.user_id == "42"
        assert [g.granted_by for g in await daemon.service.list_grants()] == ["telegram:42"]
