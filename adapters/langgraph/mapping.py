"""Pure translation of LangGraph interrupt values into the bridge's questions.

`map_interrupt(value)` turns whatever a graph passed to `interrupt()` into questions plus a
small `ResumePlan`; `resume.resume_value(plan, values, reason)` turns the person's answer
back into exactly what the graph expects. No I/O here (PROTOCOLS.md §6).

Three value shapes are recognised:

- agent-inbox `HumanInterrupt` (bare, or the usual list of one): `action_request`,
  `config.allow_*`, `description` → answered with a list of one `{type, args}`;
- langchain's `HumanInTheLoopMiddleware` request: `action_requests` + `review_configs`
  → answered with `{"decisions": [...]}`, one decision per action, in order;
- anything else ("plain") → one `text` question, answered with the string.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from adapters.langgraph.resume import (
    APPROVE,
    EDIT,
    IGNORE,
    REJECT,
    RESPOND,
    ActionPlan,
    ResumeError,
    ResumePlan,
    resume_value,
)
from bridge.questions import MAX_CONTEXT_DEPTH, MAX_TEXT, Question, QuestionKind

_INBOX_ALLOW = (("allow_accept", APPROVE), ("allow_edit", EDIT),
                ("allow_respond", RESPOND), ("allow_ignore", IGNORE))
_HITL_LABEL = {"approve": APPROVE, "edit": EDIT, "reject": REJECT}
MAX_ACTIONS_ONE_BY_ONE = 15  # 3 questions each stays under the model's 50 questions
MAX_SHOWN_JSON = 4000
TOO_DEEP = "[nested too deeply to show]"
_PROMPT_KEYS = ("question", "prompt", "message", "text", "description", "title")


@dataclass(frozen=True)
class InterruptMapping:
    """An interrupt value seen as a bridge request."""

    title: str
    description: str
    questions: list[Question]
    plan: ResumePlan
    tool: str | None = None
    shown_value: Any = field(default=None)


# -- value → questions -------------------------------------------------------------------


def map_interrupt(value: Any) -> InterruptMapping:
    """Map any JSON value a graph interrupted with. Never raises: unknown shapes are `plain`."""
    inbox = _as_inbox(value)
    if inbox is not None:
        return _map_inbox(*inbox)
    if _is_hitl(value):
        return _map_hitl(value)
    return _map_plain(value)


def _as_inbox(value: Any) -> tuple[dict[str, Any], bool] | None:
    listed = isinstance(value, list) and len(value) == 1
    item = value[0] if listed else value
    if (
        isinstance(item, dict)
        and isinstance(item.get("action_request"), dict)
        and isinstance(item.get("config"), dict)
    ):
        return item, listed
    return None


def _is_hitl(value: Any) -> bool:
    if not isinstance(value, dict):
        return False
    actions = value.get("action_requests")
    return (
        isinstance(actions, list)
        and len(actions) > 0
        and all(isinstance(a, dict) and isinstance(a.get("name"), str) for a in actions)
    )


def _map_inbox(item: dict[str, Any], listed: bool) -> InterruptMapping:
    request = item["action_request"]
    config = item["config"]
    action = _short(request.get("action"), 200) or "action"
    args = request.get("args")
    allowed = tuple(label for key, label in _INBOX_ALLOW if config.get(key) is True)
    if not allowed:  # nothing allowed makes no sense; let the person at least accept
        allowed = (APPROVE,)
    kept, allowed = _editable(args, allowed)
    description = _text(item.get("description"))
    prompt = description or f"The graph wants to run `{action}`."
    shown_args = _json_block(args)
    questions = [_decision_question("decision", f"{prompt}\n\n`{action}` {shown_args}", allowed)]
    if RESPOND in allowed:
        questions.append(Question(
            id="response", kind=QuestionKind.text, required=False,
            prompt="Your response (sent to the graph when you choose Respond)",
        ))
    if EDIT in allowed:
        questions.append(_edit_question("args", f"Arguments for `{action}` (used with Edit)", kept))
    plan = ResumePlan(shape="inbox", listed=listed, actions=(ActionPlan(action, "args", kept, allowed),))
    return InterruptMapping(
        title=_title(description or f"Review `{action}`"),
        description=description,
        questions=questions,
        plan=plan,
        tool=action[:200],
        shown_value=item,
    )


def _map_hitl(value: dict[str, Any]) -> InterruptMapping:
    raw_actions: list[dict[str, Any]] = value["action_requests"]
    configs = value.get("review_configs")
    configs = configs if isinstance(configs, list) else []
    plans: list[ActionPlan] = []
    descriptions: list[str] = []
    shown: list[Any] = []
    for index, raw in enumerate(raw_actions):
        name = _short(raw["name"], 200) or "action"
        config = _review_config_for(index, name, raw_actions, configs)
        decisions = config.get("allowed_decisions")
        decisions = decisions if isinstance(decisions, list) else ["approve", "edit", "reject"]
        allowed = tuple(_HITL_LABEL[d] for d in ("approve", "edit", "reject") if d in decisions)
        args_key = "arguments" if "arguments" in raw and "args" not in raw else "args"
        kept, allowed = _editable(raw.get(args_key), allowed or (APPROVE,))
        plans.append(ActionPlan(name, args_key, kept, allowed))
        shown.append(raw.get(args_key))
        descriptions.append(_text(raw.get("description")) or _text(config.get("description")))
    batch = len(plans) > MAX_ACTIONS_ONE_BY_ONE
    questions: list[Question] = []
    if batch:
        common = tuple(label for label in (APPROVE, REJECT)
                       if all(label in p.allowed for p in plans)) or (APPROVE,)
        listing = "\n".join(f"• `{p.name}` {_json_block(args, 300)}" for p, args in zip(plans, shown, strict=True))
        questions.append(_decision_question(
            "decision", f"{len(plans)} tool calls wait for review (one decision for all):\n{listing}",
            common))
        if REJECT in common:
            questions.append(_reject_message_question("message"))
    else:
        single = len(plans) == 1
        for index, (plan, text, args) in enumerate(zip(plans, descriptions, shown, strict=True)):
            suffix = "" if single else f"_{index}"
            prompt = f"{text or 'Tool call needs review'}\n\n`{plan.name}` {_json_block(args)}"
            questions.append(_decision_question(f"decision{suffix}", prompt, plan.allowed))
            if EDIT in plan.allowed:
                questions.append(_edit_question(
                    f"args{suffix}", f"Arguments for `{plan.name}` (used with Edit)", plan.args))
            if REJECT in plan.allowed and set(plan.allowed) != {APPROVE, REJECT}:
                questions.append(_reject_message_question(f"message{suffix}"))
    names = ", ".join(p.name for p in plans[:5]) + ("…" if len(plans) > 5 else "")
    title = descriptions[0] if len(plans) == 1 and descriptions[0] else f"Review tool calls: {names}"
    return InterruptMapping(
        title=_title(title),
        description="\n\n".join(d for d in descriptions if d)[:MAX_TEXT],
        questions=questions,
        plan=ResumePlan(shape="hitl", actions=tuple(plans), batch=batch),
        tool=plans[0].name if len(plans) == 1 else None,
        shown_value=value,
    )


def _review_config_for(
    index: int, name: str, actions: list[dict[str, Any]], configs: list[Any]
) -> dict[str, Any]:
    """Configs are index-aligned with the actions in langchain 1.0; older builds keyed by name."""
    if len(configs) == len(actions) and isinstance(configs[index], dict):
        candidate = configs[index]
        if candidate.get("action_name") in (None, name):
            return candidate
    for config in configs:
        if isinstance(config, dict) and config.get("action_name") == name:
            return config
    return {}


def _map_plain(value: Any) -> InterruptMapping:
    prompt = _plain_prompt(value)
    return InterruptMapping(
        title=_title(prompt),
        description="",
        questions=[Question(id="answer", kind=QuestionKind.text, prompt=prompt)],
        plan=ResumePlan(shape="plain"),
        shown_value=value,
    )


def _plain_prompt(value: Any) -> str:
    if isinstance(value, str) and value.strip():
        return value[:MAX_TEXT]
    if isinstance(value, dict):
        for key in _PROMPT_KEYS:
            text = value.get(key)
            if isinstance(text, str) and text.strip():
                return text[:MAX_TEXT]
    if value is None or value == "":
        return "The graph is waiting for your input."
    return f"The graph is waiting for your input:\n{_json_block(value)}"


def _decision_question(qid: str, prompt: str, allowed: tuple[str, ...]) -> Question:
    # Approve/Reject alone is a yes/no question: every channel shows it as two buttons,
    # and the reason a person gives for "no" becomes the rejection message.
    if set(allowed) == {APPROVE, REJECT} or set(allowed) == {APPROVE, IGNORE}:
        return Question(id=qid, kind=QuestionKind.confirm, prompt=_clip(prompt))
    return Question(id=qid, kind=QuestionKind.choice, prompt=_clip(prompt), options=list(allowed))


def _editable(args: Any, allowed: tuple[str, ...]) -> tuple[Any, tuple[str, ...]]:
    """The arguments kept for an Edit, and the decisions offered. Arguments nested deeper
    than a request may hold are shown, but cannot be edited (or kept) here."""
    if _too_deep(args, -2):  # -2: the same 16 levels a question default may nest
        return None, tuple(x for x in allowed if x != EDIT) or (APPROVE,)
    return _plain_json(args), allowed


def _edit_question(qid: str, prompt: str, args: Any) -> Question:
    default = args if isinstance(args, dict | list) else None
    return Question(id=qid, kind=QuestionKind.edit, prompt=prompt, required=False,
                    default=_plain_json(default))


def _reject_message_question(qid: str) -> Question:
    return Question(id=qid, kind=QuestionKind.text, required=False,
                    prompt="Why reject? (sent to the agent when you choose Reject)")


# -- small helpers -----------------------------------------------------------------------


def safe_context_value(value: Any) -> Any:
    """The interrupt value as it may go into a request's context: plain JSON, not too deep
    and not too big; otherwise a truncated JSON string."""
    plain = _plain_json(value)
    if _too_deep(plain):
        return _json_block(plain)
    text = json.dumps(plain, ensure_ascii=False, default=str)
    if len(text) > MAX_SHOWN_JSON * 4:
        return text[: MAX_SHOWN_JSON] + "…"
    return plain


def _too_deep(value: Any, level: int = 0) -> bool:
    if level >= MAX_CONTEXT_DEPTH - 2:
        return True
    if isinstance(value, dict):
        return any(_too_deep(v, level + 1) for v in value.values())
    if isinstance(value, list):
        return any(_too_deep(v, level + 1) for v in value)
    return False


def _plain_json(value: Any) -> Any:
    """A JSON round trip: drops anything that is not plain JSON (engines send JSON anyway)."""
    try:
        return json.loads(json.dumps(value, default=str))
    except RecursionError:  # str() would recurse just the same
        return TOO_DEEP
    except (TypeError, ValueError):
        return str(value)[:MAX_SHOWN_JSON]


def _json_block(value: Any, limit: int = MAX_SHOWN_JSON) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, indent=1, default=str)
    except RecursionError:
        text = TOO_DEEP
    except (TypeError, ValueError):
        text = str(value)
    return text if len(text) <= limit else text[:limit] + "…"


def _text(value: Any) -> str:
    return value.strip()[:MAX_TEXT] if isinstance(value, str) else ""


def _short(value: Any, limit: int) -> str:
    return value.strip()[:limit] if isinstance(value, str) else ""


def _clip(text: str) -> str:
    return text[:MAX_TEXT]


def _title(text: str) -> str:
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return (first or "LangGraph interrupt")[:200]


__all__ = [
    "InterruptMapping",
    "ResumeError",
    "ResumePlan",
    "map_interrupt",
    "resume_value",
    "safe_context_value",
]
