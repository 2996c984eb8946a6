"""Questions: the kinds a request may ask, and what a valid answer to each is."""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

MAX_TEXT = 20_000
MAX_CONTEXT_DEPTH = 16
ID_PATTERN = r"^[A-Za-z0-9_.:-]{1,64}$"


class QuestionKind(StrEnum):
    confirm = "confirm"
    choice = "choice"
    multi_choice = "multi_choice"
    text = "text"
    secret = "secret"
    form = "form"
    edit = "edit"


class InvalidAnswer(ValueError):
    """An answer value does not fit its question (wrong type, unknown option, missing field)."""

    def __init__(self, question_id: str, reason: str) -> None:
        super().__init__(f"question {question_id!r}: {reason}")
        self.question_id = question_id
        self.reason = reason


class FormField(BaseModel):
    """One input of a `form` question."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=ID_PATTERN)
    label: str = Field(default="", max_length=500)
    required: bool = True
    multiline: bool = False
    options: list[str] = Field(default_factory=list, max_length=100)


class Question(BaseModel):
    """One thing to ask; `kind` decides how it is shown and what a valid answer is."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(default="answer", pattern=ID_PATTERN)
    kind: QuestionKind = QuestionKind.text
    prompt: str = Field(min_length=1, max_length=MAX_TEXT)
    options: list[str] = Field(default_factory=list, max_length=100)
    fields: list[FormField] = Field(default_factory=list, max_length=50)
    default: Any = None
    required: bool = True
    help_text: str = Field(default="", max_length=MAX_TEXT)

    @field_validator("options")
    @classmethod
    def _options_are_short_and_unique(cls, options: list[str]) -> list[str]:
        for option in options:
            if not option or len(option) > 200:
                raise ValueError("each option must be 1-200 characters")
        if len(set(options)) != len(options):
            raise ValueError("options must be unique")
        return options

    @model_validator(mode="after")
    def _kind_needs(self) -> Question:
        if self.kind in (QuestionKind.choice, QuestionKind.multi_choice) and not self.options:
            raise ValueError(f"a {self.kind} question needs at least one option")
        if self.kind is QuestionKind.form and not self.fields:
            raise ValueError("a form question needs at least one field")
        if _depth(self.default) > MAX_CONTEXT_DEPTH:
            raise ValueError(f"default: nested deeper than {MAX_CONTEXT_DEPTH} levels")
        if self.kind is QuestionKind.edit and self.default is not None:
            if not isinstance(self.default, dict | list):
                raise ValueError("an edit question's default must be a JSON object or list")
        return self

    def validate_answer(self, value: Any) -> Any:
        """Return the normalised answer value, or raise InvalidAnswer."""
        qid = self.id
        if _depth(value) > MAX_CONTEXT_DEPTH:  # before anything walks it (str(), ==, JSON)
            raise InvalidAnswer(qid, f"nested deeper than {MAX_CONTEXT_DEPTH} levels")
        if value is None or value == "" or value == [] or value == {}:
            if self.required and self.kind not in (QuestionKind.multi_choice,):
                raise InvalidAnswer(qid, "an answer is required")
        kind = self.kind
        if kind is QuestionKind.confirm:
            if isinstance(value, bool):
                return "yes" if value else "no"
            text = str(value).strip().lower()
            if text in ("yes", "y", "approve", "approved", "true", "ok"):
                return "yes"
            if text in ("no", "n", "reject", "rejected", "false", "deny"):
                return "no"
            raise InvalidAnswer(qid, f"expected yes or no, got {str(value)[:40]!r}")
        if kind is QuestionKind.choice:
            if not isinstance(value, str) or value not in self.options:
                raise InvalidAnswer(qid, f"expected one of {self.options}")
            return value
        if kind is QuestionKind.multi_choice:
            if isinstance(value, str):
                value = [v.strip() for v in value.split(",") if v.strip()]
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise InvalidAnswer(qid, "expected a list of options")
            unknown = [v for v in value if v not in self.options]
            if unknown:
                raise InvalidAnswer(qid, f"unknown options {unknown}; expected some of {self.options}")
            if self.required and not value:
                raise InvalidAnswer(qid, "choose at least one option")
            return [o for o in self.options if o in value]
        if kind in (QuestionKind.text, QuestionKind.secret):
            if not isinstance(value, str):
                raise InvalidAnswer(qid, "expected a string")
            if len(value) > MAX_TEXT:
                raise InvalidAnswer(qid, f"longer than {MAX_TEXT} characters")
            return value
        if kind is QuestionKind.form:
            if isinstance(value, str):
                value = _parse_json(qid, value)
            if not isinstance(value, dict):
                raise InvalidAnswer(qid, "expected an object with one value per field")
            known = {f.name for f in self.fields}
            extra = set(value) - known
            if extra:
                raise InvalidAnswer(qid, f"unknown fields {sorted(extra)}")
            out: dict[str, Any] = {}
            for f in self.fields:
                v = value.get(f.name)
                if v is None or v == "":
                    if f.required:
                        raise InvalidAnswer(qid, f"field {f.name!r} is required")
                    continue
                if not isinstance(v, str | int | float | bool):
                    raise InvalidAnswer(qid, f"field {f.name!r} must be a plain value")
                if f.options and str(v) not in f.options:
                    raise InvalidAnswer(qid, f"field {f.name!r} must be one of {f.options}")
                out[f.name] = v
            return out
        # edit
        if isinstance(value, str):
            value = _parse_json(qid, value)
        if not isinstance(value, dict | list):
            raise InvalidAnswer(qid, "expected a JSON object")
        if _depth(value) > MAX_CONTEXT_DEPTH:  # parsed from a string just now
            raise InvalidAnswer(qid, f"nested deeper than {MAX_CONTEXT_DEPTH} levels")
        return value


def _parse_json(qid: str, text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise InvalidAnswer(qid, f"not valid JSON: {exc}") from None


def _depth(value: Any, level: int = 0, limit: int = MAX_CONTEXT_DEPTH) -> int:
    """How deeply `value` nests below `level` (a scalar adds nothing, `{}` or `[]` one level);
    counting stops once past `limit`. Iterative: a body nested 100,000 levels deep costs no
    stack, only the work up to `limit + 1` levels."""
    deepest = level
    pending: list[tuple[Any, int]] = [(value, level)]
    while pending:
        item, at = pending.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        at += 1
        if at > limit:
            return at
        deepest = max(deepest, at)
        pending.extend((child, at) for child in children)
    return deepest


def fit_json(value: Any, max_depth: int = 8, max_chars: int = 4000) -> Any:
    """`value` itself when it nests at most `max_depth` levels, else its JSON text, cut short
    (context shown to people must stay shallow; the engine's own data is never altered)."""
    if _depth(value, 0, max_depth) <= max_depth:
        return value
    try:
        text = json.dumps(value, default=str)
    except (ValueError, RecursionError):
        text = "[too deeply nested to show]"
    return text[:max_chars]
