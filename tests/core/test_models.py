from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from bridge.models import InvalidAnswer, Question, QuestionKind, RequestIn


def q(kind: str, **kw: Any) -> Question:
    return Question(id="q", kind=QuestionKind(kind), prompt="?", **kw)


@pytest.mark.parametrize(("given", "expected"), [("yes", "yes"), ("Approve", "yes"), (True, "yes"),
                                                  ("no", "no"), ("reject", "no"), (False, "no")])
def test_confirm_normalises(given: Any, expected: str) -> None:
    assert q("confirm").validate_answer(given) == expected


@pytest.mark.parametrize("bad", ["maybe", 3, None, ""])
def test_confirm_refuses_other_values(bad: Any) -> None:
    with pytest.raises(InvalidAnswer):
        q("confirm").validate_answer(bad)


def test_choice_must_be_an_option() -> None:
    question = q("choice", options=["staging", "prod"])
    assert question.validate_answer("prod") == "prod"
    with pytest.raises(InvalidAnswer, match="expected one of"):
        question.validate_answer("dev")


def test_multi_choice_accepts_list_or_commas_and_keeps_option_order() -> None:
    question = q("multi_choice", options=["a", "b", "c"])
    assert question.validate_answer(["c", "a"]) == ["a", "c"]
    assert question.validate_answer("b, c") == ["b", "c"]
    with pytest.raises(InvalidAnswer, match="unknown options"):
        question.validate_answer(["z"])


def test_form_checks_fields() -> None:
    question = q("form", fields=[{"name": "host"}, {"name": "port", "required": False},
                                 {"name": "tier", "options": ["a", "b"]}])
    assert question.validate_answer({"host": "db1", "tier": "a"}) == {"host": "db1", "tier": "a"}
    assert question.validate_answer('{"host": "db1", "tier": "b", "port": 5432}')["port"] == 5432
    with pytest.raises(InvalidAnswer, match="'host' is required"):
        question.validate_answer({"tier": "a"})
    with pytest.raises(InvalidAnswer, match="unknown fields"):
        question.validate_answer({"host": "x", "tier": "a", "evil": 1})
    with pytest.raises(InvalidAnswer, match="must be one of"):
        question.validate_answer({"host": "x", "tier": "c"})
    with pytest.raises(InvalidAnswer, match="plain value"):
        question.validate_answer({"host": {"nested": 1}, "tier": "a"})


def test_edit_takes_json_object_and_refuses_garbage() -> None:
    question = q("edit", default={"replicas": 2})
    assert question.validate_answer('{"replicas": 3}') == {"replicas": 3}
    with pytest.raises(InvalidAnswer, match="not valid JSON"):
        question.validate_answer("{nope")
    with pytest.raises(InvalidAnswer, match="nested deeper than 16 levels"):
        question.validate_answer("[" * 50 + "]" * 50)


def test_text_and_secret_are_strings_with_a_limit() -> None:
    assert q("secret").validate_answer("hunter2") == "hunter2"
    with pytest.raises(InvalidAnswer):
        q("text").validate_answer(123)
    with pytest.raises(InvalidAnswer, match="longer than"):
        q("text").validate_answer("x" * 20_001)


def test_kind_requirements() -> None:
    with pytest.raises(ValidationError, match="at least one option"):
        q("choice")
    with pytest.raises(ValidationError, match="at least one field"):
        q("form")
    with pytest.raises(ValidationError, match="unique"):
        q("choice", options=["a", "a"])


def base(**kw: Any) -> dict[str, Any]:
    return {"title": "t", "questions": [{"id": "a", "prompt": "?"}], **kw}


def test_request_refuses_duplicate_question_ids_deep_context_naive_deadline_unknown_keys() -> None:
    with pytest.raises(ValidationError, match="unique"):
        RequestIn.model_validate(base(questions=[{"id": "a", "prompt": "?"}, {"id": "a", "prompt": "?"}]))
    deep: Any = {}
    node = deep
    for _ in range(30):
        node["x"] = {}
        node = node["x"]
    with pytest.raises(ValidationError, match="nested deeper"):
        RequestIn.model_validate(base(context=deep))
    with pytest.raises(ValidationError, match="timezone"):
        RequestIn.model_validate(base(deadline="2026-01-01T00:00:00"))
    with pytest.raises(ValidationError, match="Extra inputs"):
        RequestIn.model_validate(base(surprise=1))
    with pytest.raises(ValidationError):
        RequestIn.model_validate(base(questions=[]))
    with pytest.raises(ValidationError):
        RequestIn.model_validate(base(callback={"url": "file:///etc/passwd", "secret": "s" * 20}))
