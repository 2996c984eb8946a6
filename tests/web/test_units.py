"""Pure parts of the inbox: form parsing, countdowns, session cookies."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import time_machine

from adapters.web.answers import parse_answer
from adapters.web.auth import InboxAuth, LoginRefused, Viewer
from adapters.web.settings import WebConfig
from adapters.web.views import countdown, vote_views
from bridge.models import Question
from bridge.store import open_store_from_url
from bridge.store.base import Vote


def q(**kwargs: object) -> Question:
    return Question.model_validate(kwargs)


def test_parse_every_kind() -> None:
    questions = [
        q(id="ok", kind="confirm", prompt="?"),
        q(id="c", kind="choice", prompt="?", options=["a", "b"]),
        q(id="m", kind="multi_choice", prompt="?", options=["x", "y", "z"]),
        q(id="t", kind="text", prompt="?"),
        q(id="s", kind="secret", prompt="?"),
        q(id="f", kind="form", prompt="?", fields=[{"name": "n"}, {"name": "o", "required": False}]),
        q(id="e", kind="edit", prompt="?"),
    ]
    form = {"q.ok": ["yes"], "q.c": ["b"], "q.m": ["z", "x"], "q.t": ["  keep spaces "], "q.s": ["pw"],
            "q.f.n": ["1"], "q.f.o": [""], "q.e": ['{"a": [1, 2]}'], "reason": [" because "]}
    parsed = parse_answer(questions, form)
    assert parsed.ok, parsed.errors
    assert parsed.values == {"ok": "yes", "c": "b", "m": ["x", "z"], "t": "  keep spaces ", "s": "pw",
                             "f": {"n": "1"}, "e": {"a": [1, 2]}}
    assert parsed.reason == "because"
    assert "q.s" not in parsed.prior  # a secret is never put back into the page


def test_optional_questions_may_be_left_empty_and_required_ones_may_not() -> None:
    questions = [q(id="t", kind="text", prompt="?", required=False),
                 q(id="m", kind="multi_choice", prompt="?", options=["x"], required=False),
                 q(id="r", kind="text", prompt="?")]
    parsed = parse_answer(questions, {})
    assert parsed.values == {}
    assert parsed.errors == {"q.r": "an answer is required"}


def test_errors_name_the_input() -> None:
    questions = [q(id="f", kind="form", prompt="?", fields=[{"name": "env", "options": ["a", "b"]}]),
                 q(id="e", kind="edit", prompt="?"), q(id="s", kind="secret", prompt="?"),
                 q(id="ok", kind="confirm", prompt="?")]
    parsed = parse_answer(questions, {"q.f.env": ["c"], "q.e": ["[1,"], "q.s": ["x"], "q.ok": ["maybe"],
                                      "reason": ["r" * 3000]})
    assert set(parsed.errors) == {"q.f.env", "q.e", "q.s", "q.ok", "reason"}
    assert parsed.errors["q.e"].startswith("not valid JSON")
    assert parsed.errors["q.s"].startswith("enter it again")
    assert "expected yes or no" in parsed.errors["q.ok"]


def test_countdown_text() -> None:
    now = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    assert countdown(None, now) == "no deadline"
    assert countdown(now + timedelta(seconds=45), now) == "in 45 s"
    assert countdown(now + timedelta(minutes=29, seconds=59), now) == "in 29 min"
    assert countdown(now + timedelta(hours=2, minutes=5), now) == "in 2 h 5 min"
    assert countdown(now - timedelta(minutes=3), now) == "overdue by 3 min"
    assert countdown(now + timedelta(days=3), now) == "in 3 d 0 h"


def test_votes_are_shown_readably() -> None:
    from bridge.models import QuestionKind, Request

    at = datetime(2026, 1, 1, tzinfo=UTC)
    votes = [Vote("r", "web:a", '{"ok": "yes"}', "alice", at), Vote("r", "web:b", "not json", "", at),
             Vote("r", "web:c", '{"ok": "no"}', "cy", at)]
    confirm = Request(id="r", title="t", questions=[Question(id="ok", kind=QuestionKind.confirm, prompt="ok?")],
                      created_at=at, updated_at=at)
    shown = vote_views(confirm, votes)
    assert [(v.name, v.value) for v in shown] == [("alice", "approved"), ("web:b", "not json"), ("cy", "rejected")]
    choice = confirm.model_copy(update={"questions": [Question(id="ok", kind=QuestionKind.choice, prompt="which?",
                                                               options=["yes", "no"])]})
    assert vote_views(choice, votes[:1])[0].value == "ok yes"


def make_auth(**config: object) -> InboxAuth:
    return InboxAuth(WebConfig.model_validate(config), api_tokens={}, loopback_only=True, base_secret=None)


async def test_sessions_expire_are_bound_to_the_credentials_and_end_on_logout(tmp_path: Path) -> None:
    store = open_store_from_url(f"sqlite:///{tmp_path}/bridge.db")
    await store.open()
    try:
        auth = make_auth(password="password-1", session_ttl="1h")
        await auth.attach(store)
        cookie = await auth.new_session(Viewer("dana", "session", name="Dana"))
        session = await auth.read_session(cookie)
        assert session is not None and (session.handle, session.display) == ("web:dana", "Dana")
        assert "dana" not in cookie and "password" not in cookie  # an opaque id
        other = make_auth(password="password-2", session_ttl="1h")
        await other.attach(store)  # a daemon started with a new password ends old sessions
        assert await other.read_session(cookie) is None
        assert await auth.read_session(cookie) is None
        cookie = await auth.new_session(Viewer("dana", "session", name="Dana"))
        with time_machine.travel(datetime.now(UTC) + timedelta(seconds=3601)):
            assert await auth.read_session(cookie) is None
        assert await auth.read_session(cookie) is not None
        await auth.end_session(cookie)
        assert await auth.read_session(cookie) is None
    finally:
        await store.close()


def test_open_only_without_credentials_on_loopback() -> None:
    assert make_auth().open
    assert not make_auth(password="password-1").open
    assert not InboxAuth(WebConfig(), api_tokens={}, loopback_only=False, base_secret=None).open
    assert not InboxAuth(WebConfig(), api_tokens={"api": "x" * 16}, loopback_only=True, base_secret=None).open


async def test_login_checks() -> None:
    auth = make_auth(password="password-1", tokens={"bob": "b" * 16}, max_login_failures=2)
    assert (await auth.check_login("1.2.3.4", "", "b" * 16)).handle == "web:bob"
    dana = await auth.check_login("1.2.3.4", "Dana", "password-1")
    assert (dana.handle, dana.display, dana.shared) == ("web:shared-password", "Dana", True)
    not_dana = await auth.check_login("1.2.3.4", "not-Dana", "password-1")
    assert not_dana.handle == dana.handle  # whatever name is typed: one identity for quorum
    for _ in range(2):
        with pytest.raises(LoginRefused):
            await auth.check_login("1.2.3.4", "x", "nope")
    with pytest.raises(LoginRefused) as refused:
        await auth.check_login("1.2.3.4", "Dana", "password-1")
    assert refused.value.status == 429
    assert (await auth.check_login("5.6.7.8", "Dana", "password-1")).display == "Dana"  # per address
