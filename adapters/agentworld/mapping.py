"""Pure translation between agent-world's HITL prompts and the bridge model (PROTOCOLS §5).

Current prompts `{requestId, type, allowSkip, questions: [{id, header, question,
options: [{id, label}]}]}`: each question becomes a `choice` (single-select) or
`multi_choice` (multiple-select) shown by label; `allowSkip` adds a "Skip" option to
the first question. Answers go back by option id: `{requestId, optionId}` for one
single-select question, `{requestId, answers: [{questionId, optionIds}]}` otherwise, or
`{requestId, skipped: true}`. Older prompts `{prompt, options: [..]}` from the
`client.humanIntervention` tool are one `choice`, answered through `tool-results`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bridge.models import Answer, Question, QuestionKind, RequestIn, fit_json

ENGINE = "agentworld"
HUMAN_TOOL = "client.humanIntervention"
SKIP = "Skip"
MAX_QUESTIONS = 20


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


def prompt_key(world: str, chat: str, prompt: Any) -> str | None:
    """The external id `map_prompt` would give, without mapping (None: no usable id)."""
    if not isinstance(prompt, dict):
        return None
    rid = _text(prompt.get("requestId")) or _text(prompt.get("toolCallId"))
    return f"{world}:{chat}:{rid}"[:200] if rid and len(rid) <= 150 else None


def map_prompt(world: str, chat: str, prompt: Any) -> Mapped:
    """Map one entry of `hitlPrompts[].prompt`; raises InvalidPrompt when unusable."""
    if not isinstance(prompt, dict):
        raise InvalidPrompt("prompt is not an object")
    rid = _text(prompt.get("requestId")) or _text(prompt.get("toolCallId"))
    if rid is None or len(rid) > 150:
        raise InvalidPrompt("prompt has no usable requestId")
    if isinstance(prompt.get("questions"), list):
        return _map_select(world, chat, rid, prompt)
    if isinstance(prompt.get("options"), list):
        return _map_legacy(world, chat, rid, prompt)
    raise InvalidPrompt(f"prompt {rid} has neither questions nor options")


def _base(
    world: str,
    chat: str,
    rid: str,
    title: str,
    description: str,
    questions: list[Question],
    context: dict[str, Any],
    agent: str | None = None,
) -> RequestIn:
    return RequestIn(
        external_id=f"{world}:{chat}:{rid}"[:200],
        title=title[:500],
        description=description[:20_000],
        engine=ENGINE,
        run_id=chat[:200],
        agent=agent,
        context=context,
        labels={"world": world[:500], "chat": chat[:500]},
        questions=questions,
    )


def _map_select(world: str, chat: str, rid: str, prompt: dict[str, Any]) -> Mapped:
    multiple = prompt.get("type") == "multiple-select"
    allow_skip = prompt.get("allowSkip") is True
    questions: list[Question] = []
    qmap: dict[str, dict[str, Any]] = {}
    raw_questions = [q for q in prompt["questions"] if isinstance(q, dict)][:MAX_QUESTIONS]
    for i, q in enumerate(raw_questions):
        qid_engine = _text(q.get("id")) or f"q{i + 1}"
        labels: dict[str, str | None] = {}
        for o in q.get("options") or []:
            if isinstance(o, dict) and _text(o.get("id")):
                label = _unique(_text(o.get("label")) or o["id"], labels)
                labels[label] = o["id"]
            if len(labels) >= 99:
                break
        if not labels:
            raise InvalidPrompt(f"prompt {rid}: question {qid_engine!r} has no options")
        if allow_skip and i == 0:
            labels[_unique(SKIP, labels)] = None  # the Skip control: no engine option id
        text = _text(q.get("question")) or _text(q.get("header")) or "Choose"
        header = _text(q.get("header"))
        qid = f"q{i + 1}"
        questions.append(
            Question(
                id=qid,
                kind=QuestionKind.multi_choice if multiple else QuestionKind.choice,
                prompt=text[:20_000],
                help_text=(header or "")[:500],
                options=list(labels),
                required=True,
            )
        )
        qmap[qid] = {"id": qid_engine, "options": labels}
    if not questions:
        raise InvalidPrompt(f"prompt {rid} has no questions")
    title = _text(prompt.get("title")) or _text(raw_questions[0].get("header")) or "Agent needs a decision"
    request = _base(
        world,
        chat,
        rid,
        title,
        _text(prompt.get("message")) or "",
        questions,
        {"world": world, "chat": chat, "requestId": rid},
    )
    ref = {
        "form": "select",
        "world": world,
        "chat": chat,
        "requestId": rid,
        "multiple": multiple,
        "allowSkip": allow_skip,
        "questions": qmap,
    }
    return Mapped(request, ref)


def _map_legacy(world: str, chat: str, rid: str, prompt: dict[str, Any]) -> Mapped:
    options = list(dict.fromkeys(str(o)[:200] for o in prompt["options"] if isinstance(o, str) and o.strip()))[:100]
    if not options:
        raise InvalidPrompt(f"prompt {rid} has no options")
    text = _text(prompt.get("prompt")) or "Choose"
    context = {"world": world, "chat": chat, "toolCallId": rid}
    if isinstance(prompt.get("context"), dict | str):
        context["context"] = fit_json(prompt["context"])
    agent = _text(prompt.get("agentId"))
    question = Question(id="answer", kind=QuestionKind.choice, prompt=text[:20_000], options=options)
    request = _base(
        world, chat, rid, text.splitlines()[0][:200], "", [question], context, agent=agent[:500] if agent else None
    )
    ref = {
        "form": "legacy",
        "world": world,
        "chat": chat,
        "requestId": rid,
        "toolCallId": rid,
        "agentId": agent or "",
        "options": options,
    }
    return Mapped(request, ref)


class NoAnswer(ValueError):
    """The outcome carries nothing the engine can take (no answer, or it does not fit)."""


def respond_body(ref: dict[str, Any], answer: Answer | None) -> dict[str, Any]:
    """The body for `hitl/respond` (current prompts) or `tool-results` (older prompts)."""
    if answer is None:
        if ref.get("form") == "select" and ref.get("allowSkip"):
            return {"requestId": ref["requestId"], "skipped": True}
        raise NoAnswer("no answer to deliver and the prompt cannot be skipped")
    values = answer.values
    if ref["form"] == "legacy":
        choice = values.get("answer")
        if choice not in ref["options"]:
            raise NoAnswer(f"{choice!r} is not one of the prompt's options")
        return {"tool_call_id": ref["toolCallId"], "toolName": HUMAN_TOOL, "agentId": ref["agentId"], "choice": choice}
    answers = []
    for qid, q in ref["questions"].items():
        chosen = values.get(qid)
        labels = chosen if isinstance(chosen, list) else [chosen]
        ids = [q["options"].get(label) for label in labels if label in q["options"]]
        if any(label in q["options"] and q["options"][label] is None for label in labels):
            return {"requestId": ref["requestId"], "skipped": True}
        if not ids or any(i is None for i in ids):
            raise NoAnswer(f"question {qid}: {chosen!r} is not one of its options")
        answers.append({"questionId": q["id"], "optionIds": ids})
    if len(answers) == 1 and not ref["multiple"]:
        return {"requestId": ref["requestId"], "optionId": answers[0]["optionIds"][0]}
    return {"requestId": ref["requestId"], "answers": answers}
