"""Elicitation from a downstream server, asked through the bridge (pure functions, no I/O).

Form mode becomes one question per field of the requested schema (a boolean a yes/no, an
enum a choice, an array of enums a multi-choice, anything else text), after a first
question whether to answer at all. URL mode becomes the link for the person to open and a
yes/no whether they did. The request's close is the `ElicitResult` MCP defines: accept
(with the values, converted back to the schema's types), decline (the person said no), or
cancel (nobody answered, the request was cancelled, or the answers do not fit the schema).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hitl_bridge_client import NoAnswer, outcome, request_body
from mcp_types import ElicitRequestFormParams, ElicitRequestParams, ElicitRequestURLParams, ElicitResult

from adapters.gateway.held import LABEL_GATEWAY, LABEL_SERVER

ENGINE = "mcp-gateway"
RESPOND = "respond"
CALL = "elicitation/create"
MAX_FIELDS = 40
QUESTION_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")

Content = dict[str, str | int | float | bool | list[str] | None]


@dataclass
class Plan:
    """How each question maps back to the schema: question id → (field, JSON type, option
    label → value)."""

    fields: dict[str, tuple[str, str, dict[str, str]]] = field(default_factory=dict)
    required: list[str] = field(default_factory=list)


def _options(schema: Mapping[str, Any]) -> dict[str, str]:
    """An enum's options, label → value (titles shown when the schema gives them)."""
    if isinstance(schema.get("enum"), list):
        values = [str(v) for v in schema["enum"]]
        names = schema.get("enumNames")
        labels = [str(n) for n in names] if isinstance(names, list) and len(names) == len(values) else values
        return dict(zip(labels, values, strict=True))
    for key in ("oneOf", "anyOf"):
        if isinstance(schema.get(key), list):
            return {str(o.get("title") or o.get("const")): str(o.get("const"))
                    for o in schema[key] if isinstance(o, dict) and "const" in o}
    return {}


def _label_unique(options: dict[str, str]) -> dict[str, str]:
    return {label[:200]: value for label, value in options.items() if label}


def form_questions(params: ElicitRequestFormParams) -> tuple[list[dict[str, Any]], Plan]:
    """The questions for a form elicitation, and how to read their answers back."""
    schema = params.requested_schema if isinstance(params.requested_schema, Mapping) else {}
    found = schema.get("properties")
    properties: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    required = [str(r) for r in schema.get("required") or [] if isinstance(r, str)]
    plan = Plan(required=required)
    questions: list[dict[str, Any]] = [
        {"id": RESPOND, "kind": "confirm", "prompt": "Answer this server's questions? (No declines.)"}]
    for index, (name, spec) in enumerate(list(properties.items())[:MAX_FIELDS]):
        spec = spec if isinstance(spec, Mapping) else {}
        qid = name if QUESTION_ID.match(name) and name != RESPOND else f"field_{index}"
        label = str(spec.get("title") or name)
        hint = str(spec.get("description") or "")
        prompt = f"{label}{' (required)' if name in required else ''}"
        kind_of = str(spec.get("type") or "string")
        question: dict[str, Any] = {"id": qid, "prompt": prompt[:500], "required": False, "help_text": hint[:2000]}
        options: dict[str, str] = {}
        if kind_of == "boolean":
            question["kind"] = "confirm"
        elif kind_of == "array":
            items = spec.get("items")
            options = _label_unique(_options(items if isinstance(items, Mapping) else {}))
            question["kind"] = "multi_choice" if options else "text"
        else:
            options = _label_unique(_options(spec))
            question["kind"] = "choice" if options else "text"
        if options:
            question["options"] = list(options)
        default = spec.get("default")
        if default is not None and question["kind"] == "text":
            question["default"] = str(default)
        questions.append(question)
        plan.fields[qid] = (name, kind_of, options)
    return questions, plan


def elicitation_body(params: ElicitRequestParams, *, gateway: str, server: str, agent: str,
                     session: str | None, labels: Mapping[str, str]) -> tuple[dict[str, Any], Plan]:
    """`POST /v1/requests` body asking people what the server elicits."""
    message = (params.message or "").strip() or "The server asks for input"
    common: dict[str, Any] = {
        "engine": ENGINE, "agent": agent, "external_id": f"gateway-elicit-{uuid.uuid4()}",
        "labels": {**labels, LABEL_SERVER: server, LABEL_GATEWAY: gateway, "mcp_call": CALL}}
    if session:
        common["session"] = session[:200]
    title = f"{server} asks: {message}"
    title = title if len(title) <= 200 else title[:199] + "…"
    if isinstance(params, ElicitRequestURLParams):
        questions = [{"id": RESPOND, "kind": "confirm",
                      "prompt": f"Open {params.url} and finish there. Done? (No declines.)"}]
        return request_body(title, questions, description=f"{message}\n\n{params.url}",
                            context={"url": params.url}, **common), Plan()
    assert isinstance(params, ElicitRequestFormParams)
    questions, plan = form_questions(params)
    return request_body(title, questions, description=message, **common), plan


def _typed(value: Any, kind: str, options: dict[str, str]) -> str | int | float | bool | list[str]:
    """An answer value as the schema's type; ValueError when it is not one."""
    if kind == "boolean":
        return value == "yes" if isinstance(value, str) else bool(value)
    if kind == "array":
        return [options.get(str(v), str(v)) for v in value] if isinstance(value, list) else [str(value)]
    text = options.get(value, value) if isinstance(value, str) else value
    if kind == "integer":
        return int(str(text).strip())
    if kind == "number":
        return float(str(text).strip())
    return str(text)


def elicit_result(view: dict[str, Any], plan: Plan) -> ElicitResult:
    """The closed request as MCP's answer to `elicitation/create`."""
    try:
        answer = outcome(view)
    except NoAnswer:
        return ElicitResult(action="cancel")
    if answer is None or answer.via == "timeout":  # nobody chose: the server hears no choice
        return ElicitResult(action="cancel")
    values = answer.values
    if values.get(RESPOND) != "yes":
        return ElicitResult(action="decline")
    if not plan.fields:
        return ElicitResult(action="accept")  # URL mode: the person says they finished
    content: Content = {}
    try:
        for qid, (name, kind, options) in plan.fields.items():
            value = values.get(qid)
            if value is None or value == "" or value == []:
                continue
            content[name] = _typed(value, kind, options)
    except (TypeError, ValueError):
        return ElicitResult(action="cancel")  # an answer the schema cannot take: no half-right data
    if any(name not in content for name in plan.required):
        return ElicitResult(action="cancel")
    return ElicitResult(action="accept", content=content)
