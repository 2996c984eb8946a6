"""Pure translation between agent-world's HITL prompts and the bridge model (PROTOCOLS §5).

agent-world 0.16 lists a chat's pending prompts as `{requestId, type, allowSkip, questions:
[{id, header, question, options: [{id, label, description?}]}], metadata, agentName,
toolName, toolCallId}` (its older `{question, options}` tool calls are converted to this
shape by agent-world itself). Each question becomes a `choice` (single-select) or
`multi_choice` (multiple-select) shown by label, with the header and each option's
description under it ("Yes once — Run this command once."); `allowSkip` adds a "Skip" option
to the first question; `metadata` (the command or tool being approved) is shown as details.
Answers go back by option id: `{requestId, chatId, optionId}` for one single-select
question, `{requestId, chatId, answers: [{questionId, optionIds}]}` otherwise, or
`{requestId, chatId, skipped: true}`. `hitl/respond` has no field for a comment: a
rejection's reason stays in the bridge.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bridge.models import Answer, RequestIn
from bridge.questions import Question, QuestionKind, fit_json

ENGINE = "agentworld"
SKIP = "Skip"
MAX_QUESTIONS = 20
GENERIC_HEADER = "Human input required"


class InvalidPrompt(ValueError):
    """A pending prompt from the engine that cannot be shown (missing ids, no options)."""


@dataclass
class Mapped:
    """The request plus what delivery needs to turn labels back into engine ids."""

    request: RequestIn
    ref: dict[str, Any]


def _text(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def _unique(label: str, taken: dict[str, Any]) -> str:
    label = label.strip()[:190] or "option"
    base, n = label, 2
    while label in taken:
        label = f"{base} ({n})"
        n += 1
    return label


def _request_id(prompt: Any) -> str | None:
    if not isinstance(prompt, dict):
        return None
    rid = _text(prompt.get("requestId")) or _text(prompt.get("toolCallId"))
    return rid if rid and len(rid) <= 150 else None


def prompt_key(world: str, chat: str, prompt: Any) -> str | None:
    """The external id `map_prompt` would give, without mapping (None: no usable id)."""
    rid = _request_id(prompt)
    return f"{world}:{chat}:{rid}"[:200] if rid else None


def map_prompt(world: str, chat: str, prompt: Any) -> Mapped:
    """Map one entry of `hitlPrompts[].prompt`; raises InvalidPrompt when unusable."""
    if not isinstance(prompt, dict):
        raise InvalidPrompt("prompt is not an object")
    rid = _request_id(prompt)
    if rid is None:
        raise InvalidPrompt("prompt has no usable requestId")
    if not isinstance(prompt.get("questions"), list):
        raise InvalidPrompt(f"prompt {rid} has no `questions` (agent-world before 0.16 is not supported)")
    multiple = prompt.get("type") == "multiple-select"
    allow_skip = prompt.get("allowSkip") is True
    questions: list[Question] = []
    qmap: dict[str, dict[str, Any]] = {}
    raw_questions = [q for q in prompt["questions"] if isinstance(q, dict)][:MAX_QUESTIONS]
    for i, q in enumerate(raw_questions):
        question, engine_qid, labels = _question(rid, i, q, multiple, allow_skip and i == 0)
        questions.append(question)
        qmap[question.id] = {"id": engine_qid, "options": labels}
    if not questions:
        raise InvalidPrompt(f"prompt {rid} has no questions")
    header = _text(raw_questions[0].get("header"))
    agent = _text(prompt.get("agentName"))
    title = header if header and header != GENERIC_HEADER else f"{agent or 'The agent'} needs a decision"
    context: dict[str, Any] = {"world": world, "chat": chat, "requestId": rid}
    metadata = prompt.get("metadata")
    if isinstance(metadata, dict):
        shown = {k: v for k, v in metadata.items() if k not in ("toolCallId",)}
        if shown:
            context["details"] = fit_json(shown)
    request = RequestIn(
        external_id=f"{world}:{chat}:{rid}"[:200],
        title=title[:500],
        engine=ENGINE,
        run_id=chat[:200],
        agent=agent[:500] if agent else None,
        tool=(_text(prompt.get("toolName")) or "")[:200] or None,
        context=context,
        labels={"world": world[:500], "chat": chat[:500]},
        questions=questions,
    )
    ref = {"form": "select", "world": world, "chat": chat, "requestId": rid, "multiple": multiple,
           "allowSkip": allow_skip, "questions": qmap}
    return Mapped(request, ref)


def _question(rid: str, i: int, q: dict[str, Any], multiple: bool, skip: bool) -> tuple[Question, str, dict[str, Any]]:
    engine_qid = _text(q.get("id")) or f"question-{i + 1}"
    labels: dict[str, str | None] = {}
    described: list[str] = []
    for o in q.get("options") or []:
        if isinstance(o, dict) and _text(o.get("id")):
            label = _unique(_text(o.get("label")) or o["id"], labels)
            labels[label] = o["id"]
            if description := _text(o.get("description")):
                described.append(f"• {label} — {description}")
        if len(labels) >= 99:
            break
    if not labels:
        raise InvalidPrompt(f"prompt {rid}: question {engine_qid!r} has no options")
    if skip:
        labels[_unique(SKIP, labels)] = None  # the Skip control: no engine option id
    header = _text(q.get("header"))
    text = _text(q.get("question")) or header or "Choose"
    # the first question's header is the request's title; later ones keep theirs
    help_lines = ([header] if header and i > 0 and header not in (text, GENERIC_HEADER) else []) + described
    question = Question(
        id=f"q{i + 1}",
        kind=QuestionKind.multi_choice if multiple else QuestionKind.choice,
        prompt=text[:20_000],
        help_text="\n".join(help_lines)[:20_000],
        options=list(labels),
        required=True,
    )
    return question, engine_qid, labels


class NoAnswer(ValueError):
    """The outcome carries nothing the engine can take (no answer, or it does not fit)."""


def respond_body(ref: dict[str, Any], answer: Answer | None) -> dict[str, Any]:
    """The body for `hitl/respond`."""
    head = {"requestId": ref["requestId"], "chatId": ref["chat"]}
    if answer is None:
        if ref.get("allowSkip"):
            return {**head, "skipped": True}
        raise NoAnswer("no answer to deliver and the prompt cannot be skipped")
    answers = []
    for qid, q in ref["questions"].items():
        chosen = answer.values.get(qid)
        labels = chosen if isinstance(chosen, list) else [chosen]
        if any(label in q["options"] and q["options"][label] is None for label in labels):
            return {**head, "skipped": True}
        ids = [q["options"].get(label) for label in labels if label in q["options"]]
        if not ids or any(i is None for i in ids):
            raise NoAnswer(f"question {qid}: {chosen!r} is not one of its options")
        answers.append({"questionId": q["id"], "optionIds": ids})
    if len(answers) == 1 and not ref["multiple"]:
        return {**head, "optionId": answers[0]["optionIds"][0]}
    return {**head, "answers": answers}
