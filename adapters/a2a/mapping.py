"""A2A messages to bridge requests and answers to artifacts (pure, no I/O)."""

from __future__ import annotations

from typing import Any

from a2a.helpers.proto_helpers import get_data_parts, new_data_part, new_text_part
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Message, Part

from bridge.models import Answer, RequestIn

SKILL_ASK = "ask"
SKILL_APPROVE = "approve"
MAX_TITLE = 500


class MessageRefused(ValueError):
    """An A2A message the bridge cannot ask a person (the message says why)."""


def agent_card(url: str, name: str) -> AgentCard:
    """The card at /.well-known/agent-card.json: one agent, "people", with two skills."""
    return AgentCard(
        name=name, version="1", description="Asks people (Slack, Telegram, email, the web inbox) "
        "and answers with what they said.",
        supported_interfaces=[AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")],
        capabilities=AgentCapabilities(streaming=True, push_notifications=True),
        default_input_modes=["text/plain", "application/json"], default_output_modes=["application/json"],
        skills=[
            AgentSkill(id=SKILL_ASK, name="Ask a person", tags=["human-in-the-loop"],
                       description="A question in plain text; the answer is the person's reply."),
            AgentSkill(id=SKILL_APPROVE, name="Ask for approval", tags=["approval"],
                       description="Something to approve (metadata skill: approve); the answer is yes or no."),
        ])


def request_from_message(message: Message, text: str, metadata: dict[str, Any], task_id: str,
                         context_id: str) -> RequestIn:
    """The request a message asks: its text is the question; a data part that holds a native
    request (`title` and `questions`) is asked as it is. Raises MessageRefused."""
    for data in get_data_parts(list(message.parts)):
        if isinstance(data, dict) and "questions" in data:
            body = {**data, "external_id": f"a2a:{task_id}", "engine": "a2a", "run_id": context_id[:200]}
            return RequestIn.model_validate(body)
    text = text.strip()
    if not text:
        raise MessageRefused("the message has no text and no request: nothing to ask")
    approve = metadata.get("skill") == SKILL_APPROVE
    question = ({"id": "answer", "kind": "confirm", "prompt": text[:2000]} if approve
                else {"id": "answer", "kind": "text", "prompt": text[:2000]})
    return RequestIn.model_validate({
        "external_id": f"a2a:{task_id}", "engine": "a2a", "run_id": context_id[:200],
        "title": text.splitlines()[0][:MAX_TITLE], "description": text if len(text) > MAX_TITLE else "",
        "questions": [question]})


def answer_parts(answer: Answer) -> list[Part]:
    """The artifact: the answer's text (one question) and all its values as data."""
    values = dict(answer.values)
    parts = []
    if len(values) == 1:
        only = next(iter(values.values()))
        if isinstance(only, str):
            parts.append(new_text_part(only))
    parts.append(new_data_part({"values": values, "responder": answer.responder.key, "reason": answer.reason}))
    return parts


def refuse_secrets(request: RequestIn) -> RequestIn:
    """A2A keeps tasks (and their artifacts) in its task store: no secret answers there."""
    if any(q.kind.value == "secret" for q in request.questions):
        raise MessageRefused("a secret question cannot be asked over A2A: the answer would be "
                             "kept in the task's artifact")
    return request
