"""The bot's own conversation lines (`adapters/telegram/texts.py`): pure, escaped, and
worded as before they moved out of the handlers."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from adapters.telegram import texts
from bridge.models import Question, QuestionKind, Request

NOW = datetime(2026, 1, 2, 3, 4, tzinfo=UTC)


def make(title: str, deadline: datetime | None = None) -> Request:
    return Request.model_validate({
        "id": "r_" + str(abs(hash(title)) % 10_000), "title": title, "created_at": NOW, "updated_at": NOW,
        "deadline": deadline, "questions": [Question(kind=QuestionKind.confirm, prompt="Go?")]})


def test_names_and_titles_are_escaped() -> None:
    who = texts.mention(42, 'Ana <"b">')
    assert who == '<a href="tg://user?id=42">Ana &lt;&quot;b&quot;&gt;</a>'
    assert texts.mention(42, "") == '<a href="tg://user?id=42">42</a>'
    assert texts.answering(who, make("Deploy <prod>"), 1) == (
        f"{who} is answering <b>Deploy &lt;prod&gt;</b>: 1 step. /cancel or the button stops without answering.")
    assert ": 3 steps." in texts.answering(who, make("x"), 3)
    assert texts.for_whom(42, None, "Name?") == '<a href="tg://user?id=42">you</a>: Name?'
    assert texts.for_whom(42, "Bo & Co", "Name?").startswith('<a href="tg://user?id=42">Bo &amp; Co</a>')


def test_why_reject_says_how_long_it_waits() -> None:
    request = make("Deploy & ship")
    plain = texts.why_reject("Ana", request, None)
    assert plain == ("Ana, why reject <b>Deploy &amp; ship</b>? Reply to this message with a reason, "
                     "or press ❌ Reject again to reject without one.")
    assert texts.why_reject("Ana", request, timedelta(minutes=10)) == (
        plain + " With no reply within 10m, it is rejected without one.")
    assert texts.rejected_without_reason(request) == (
        "No reason came in time: Deploy &amp; ship is rejected without one.")


def test_greeting_gives_the_id_to_put_in_routes() -> None:
    text = texts.greeting("<Ana>", 77)
    assert text.startswith("Hi &lt;Ana&gt;! ") and "<code>telegram:77</code>" in text


def test_the_pending_list_names_the_first_ones_and_counts_the_rest() -> None:
    waiting = [make(f"Request {n} <x>", NOW + timedelta(hours=1) if n == 0 else None) for n in range(4)]
    text = texts.waiting_list(waiting, 2)
    assert text.splitlines() == [
        "⏳ <b>4</b> waiting for an answer here:",
        "• Request 0 &lt;x&gt; (answer by 2026-01-02 04:04 UTC)",
        "• Request 1 &lt;x&gt;",
        "…and 2 more.",
        "Press one to show it again below.",
    ]
