"""Message text: escaping, limits, outcome lines (pure, no network)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from adapters.telegram.render import CUT_MARK, TEXT_LIMIT, Part, closed_text, fit, request_text, step_text, utf16_len
from bridge.models import Answer, FormField, Question, QuestionKind, Request, RequestState, Responder
from tests.fakes.telegram_api import EntityError, visible_text

NOW = datetime(2026, 1, 2, 3, 4, tzinfo=UTC)


def make(**kw: object) -> Request:
    base: dict[str, object] = {
        "id": "r_test", "title": "Deploy <prod> & friends", "created_at": NOW, "updated_at": NOW,
        "questions": [Question(kind=QuestionKind.confirm, prompt="Ship it? <b>now</b>")],
    }
    base.update(kw)
    return Request.model_validate(base)


def test_user_text_is_escaped_and_parses_as_telegram_html() -> None:
    text = request_text(make(description="a < b && c > d", context={"cmd": "rm -rf </pre>"}))
    shown = visible_text(text, "HTML")  # raises EntityError if Telegram would refuse it
    assert "Deploy <prod> & friends" in shown
    assert "Ship it? <b>now</b>" in shown
    assert "rm -rf </pre>" in shown
    assert "<b>now</b>" not in text  # escaped in the markup itself


def test_fake_refuses_unescaped_html() -> None:
    with pytest.raises(EntityError):
        visible_text("<b>x</b> <script>", "HTML")
    with pytest.raises(EntityError):
        visible_text("<b>unclosed", "HTML")


@pytest.mark.parametrize("size", [5_000, 19_999])
def test_long_context_is_truncated_under_the_limit(size: int) -> None:
    request = make(context={"log": "x<&>" * (size // 4)}, description="d" * 3000)
    text = request_text(request)
    assert utf16_len(text) <= TEXT_LIMIT
    assert CUT_MARK in text
    shown = visible_text(text, "HTML")
    assert "Deploy <prod> & friends" in shown and "Ship it?" in shown  # the question survives


def test_astral_characters_count_twice() -> None:
    text = fit([Part("{}", "😀" * 3000, cut_order=1)])
    assert utf16_len(text) <= TEXT_LIMIT
    assert len(text) < 3000


def test_everything_long_still_fits() -> None:
    long = "y" * 19_000
    request = make(title="t" * 500, description=long,
                   questions=[Question(id=f"q{i}", kind=QuestionKind.text, prompt=long) for i in range(3)])
    assert utf16_len(request_text(request)) <= TEXT_LIMIT


NOTES = ["1 of 2 approvals: Ann <ops> & co", "Escalated to telegram:99 at 14:15 UTC"]


def test_deadline_and_timing_notes_are_shown() -> None:
    request = make(deadline=NOW + timedelta(hours=2), escalation_level=1)
    text = request_text(request, "↩️ Reply to this message.", NOTES)
    shown = visible_text(text, "HTML")
    assert "Answer by 2026-01-02 05:04 UTC\n1 of 2 approvals: Ann <ops> & co\n" \
           "Escalated to telegram:99 at 14:15 UTC" in shown
    assert shown.endswith("↩️ Reply to this message.")  # how to answer stays last
    assert "Ann &lt;ops&gt; &amp; co" in text  # escaped in the markup itself
    assert "Escalated (level" not in shown  # the level number is no longer shown


def test_no_notes_no_lines() -> None:
    shown = visible_text(request_text(make(escalation_level=2)), "HTML")
    assert "Escalated" not in shown and "approvals" not in shown


def test_many_and_long_notes_are_capped() -> None:
    notes = [f"{n} of 9 matching answers: " + "<&>😀" * 400 for n in range(12)]
    request = make(context={"log": "x" * 20_000}, description="d" * 3000)
    text = request_text(request, "↩️ Reply to this message.", notes)
    assert utf16_len(text) <= TEXT_LIMIT
    shown = visible_text(text, "HTML")
    assert "Ship it?" in shown and "0 of 9 matching answers" in shown and "7 of 9" in shown
    assert "8 of 9" not in shown and "…and 4 more" in shown
    assert shown.endswith("↩️ Reply to this message.")


def test_closed_request_shows_just_the_outcome() -> None:
    request = answered({"answer": "yes"}, escalation_level=1)
    shown = visible_text(closed_text(request), "HTML")
    assert "Approved by Ann <ops>" in shown
    assert "Escalated" not in shown and "approvals" not in shown


def answered(values: dict[str, object], reason: str | None = None, **kw: object) -> Request:
    answer = Answer(values=values, responder=Responder(platform="telegram", user_id="7", name="Ann <ops>"),
                    via="telegram", answered_at=NOW, reason=reason)
    return make(state=RequestState.answered, answer=answer, **kw)


def test_outcome_shows_who_and_when_and_reason() -> None:
    shown = visible_text(closed_text(answered({"answer": "no"}, reason="not on <Friday>")), "HTML")
    assert "Rejected by Ann <ops> at 2026-01-02 03:04 UTC" in shown
    assert "Reason: not on <Friday>" in shown
    shown = visible_text(closed_text(answered({"answer": "yes"})), "HTML")
    assert "Approved by Ann <ops>" in shown


def test_outcome_never_shows_a_secret() -> None:
    request = answered({"pw": "hunter2"}, questions=[Question(id="pw", kind=QuestionKind.secret, prompt="Password?")])
    text = closed_text(request)
    assert "hunter2" not in text
    assert "[secret]" in text


def test_cancelled_and_expired_lines() -> None:
    assert "Cancelled" in closed_text(make(state=RequestState.cancelled, error="run deleted"))
    assert "Expired" in closed_text(make(state=RequestState.expired))


def test_step_text_for_optional_form_field() -> None:
    why = FormField(name="why", label="Why <now>?", required=False)
    question = Question(kind=QuestionKind.form, prompt="Details", fields=[why])
    shown = visible_text(step_text(make(), question, question.fields[0], 2, 3), "HTML")
    assert "2/3" in shown and "Why <now>?" in shown and "skip" in shown


def test_outcome_with_braces_in_values() -> None:
    form = Question(id="f", kind=QuestionKind.form, prompt="F", fields=[FormField(name="a")])
    shown = visible_text(closed_text(answered({"f": {"a": "{x}"}}, questions=[form])), "HTML")
    assert '{"a": "{x}"}' in shown
