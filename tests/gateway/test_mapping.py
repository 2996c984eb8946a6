"""The gateway's pure parts: settings, the catalog of names, a held call's request and its
verdict, and elicitation both ways — including the hostile shapes a server or an agent may
send."""

from __future__ import annotations

from typing import Any

import pytest
from mcp_types import ElicitRequestFormParams, ElicitRequestURLParams, Tool, ToolAnnotations
from pydantic import ValidationError

from adapters.gateway.catalog import merge
from adapters.gateway.elicitation import elicit_result, elicitation_body, form_questions
from adapters.gateway.held import ArgumentsRefused, checked_arguments, held_call_body, verdict_of
from adapters.gateway.settings import GatewaySettings, ServerSettings
from adapters.mcp.requests import Caller
from bridge.models import RequestIn


def server(name: str, **extra: Any) -> ServerSettings:
    return ServerSettings.model_validate({"name": name, "command": "x", **extra})


def tool(name: str, **extra: Any) -> Tool:
    return Tool(name=name, input_schema={"type": "object"}, **extra)


def closed(values: dict[str, Any], *, via: str = "web", state: str = "answered", reason: str | None = None,
           questions: list[dict[str, Any]] | None = None, context: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"id": "r_1", "state": state, "context": context or {"path": "/a"},
            "questions": questions or [{"id": "approve", "kind": "confirm", "prompt": "Allow?"}],
            "answer": {"values": values, "responder": {"platform": "web", "user_id": "ann", "person": "Ann"},
                       "via": via, "reason": reason, "answered_at": "2026-01-01T00:00:00+00:00"}}


def test_settings_refuse_what_cannot_work() -> None:
    with pytest.raises(ValidationError, match="either `command`"):
        ServerSettings.model_validate({"name": "a"})
    with pytest.raises(ValidationError, match="`args`, `env` and `cwd` are for a `command`"):
        ServerSettings.model_validate({"name": "a", "url": "http://h/mcp", "env": {"K": "v"}})
    with pytest.raises(ValidationError, match="url"):
        ServerSettings.model_validate({"name": "a", "url": "file:///etc/passwd"})
    with pytest.raises(ValidationError, match="share a `prefix`"):
        GatewaySettings.model_validate({"servers": [{"name": "a", "command": "x", "prefix": "p"},
                                                    {"name": "b", "command": "x", "prefix": "p"}]})
    with pytest.raises(ValidationError, match="a prefix is"):
        server("a", prefix="Bad Prefix")
    secret = server("a", env={"TOKEN": "very-secret-value"})
    assert "very-secret-value" not in repr(secret) and "very-secret-value" not in secret.model_dump_json()


def test_the_catalog_prefixes_and_keeps_the_first_of_a_shared_name() -> None:
    fs, py, gh = server("fs"), server("py"), server("gh", prefix=True)
    catalog = merge([(fs, [tool("read_file"), tool("write_file")]), (py, [tool("read_file"), tool("whoami")]),
                     (gh, [tool("read_file")])])
    assert [t.name for t in catalog.listed()] == ["read_file", "write_file", "whoami", "gh__read_file"]
    found = catalog.find("gh__read_file")
    assert found is not None and found.server is gh and found.name == "read_file"
    assert catalog.find("read_file").server is fs  # type: ignore[union-attr]
    [collision] = catalog.collisions
    assert (collision.kept, collision.left_out) == ("fs", "py") and "prefix" in str(collision)


def test_a_held_call_is_a_request_rules_can_match() -> None:
    listed = tool("write_file", description="Writes a file.", title="Write File",
                  annotations=ToolAnnotations(destructive_hint=True, read_only_hint=False))
    body = held_call_body(Caller(client="claude-code", labels={"team": "a"}, edit_arguments=True), gateway="tools",
                          server="fs", listed_name="fs__write_file", tool=listed, arguments={"path": "/a"},
                          session="s-1")
    request = RequestIn.model_validate(body)  # what the core accepts
    assert request.engine == "mcp-gateway" and request.tool == "fs__write_file" and request.session == "s-1"
    assert request.annotations == {"destructiveHint": True, "readOnlyHint": False, "title": "Write File"}
    assert request.labels["mcp_server"] == "fs" and request.labels["team"] == "a"
    assert "Writes a file." in request.description and request.context == {"path": "/a"}
    assert [q.id for q in request.questions] == ["approve", "arguments", "reason"]


def test_arguments_too_large_or_not_json_are_refused() -> None:
    with pytest.raises(ArgumentsRefused, match="max_arguments_bytes"):
        checked_arguments({"blob": "x" * 2000}, 1024)
    with pytest.raises(ArgumentsRefused, match="not plain JSON"):
        checked_arguments({"n": float("nan")}, 1024)
    assert checked_arguments(None, 1024) == {}


def test_verdicts_allow_only_a_yes_and_use_the_edited_arguments() -> None:
    edit: list[dict[str, Any]] = [{"id": "approve", "kind": "confirm", "prompt": "Allow?"},
            {"id": "arguments", "kind": "edit", "prompt": "Args", "required": False}]
    allowed = verdict_of(closed({"approve": "yes", "arguments": {"path": "/b"}}, questions=edit))
    assert allowed.allowed and allowed.arguments == {"path": "/b"}
    denied = verdict_of(closed({"approve": "no"}, reason="not today"))
    assert not denied.allowed and "not today" in denied.message and denied.refusal().is_error
    junk = verdict_of(closed({"approve": "yes", "arguments": ["not", "an", "object"]}, questions=edit))
    assert not junk.allowed and "not a JSON object" in junk.message
    gone = verdict_of({"id": "r_2", "state": "expired", "error": "deadline passed", "context": {}})
    assert not gone.allowed and "expired" in gone.message


def test_form_elicitation_questions_and_answers_both_ways() -> None:
    params = ElicitRequestFormParams(message="Who are you?", requested_schema={
        "type": "object", "required": ["name", "age"],
        "properties": {
            "name": {"type": "string", "title": "Name", "description": "Your name"},
            "age": {"type": "integer"},
            "ok": {"type": "boolean"},
            "color": {"type": "string", "oneOf": [{"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}]},
            "tags": {"type": "array", "items": {"enum": ["a", "b"]}},
            "weird name!": {"type": "string"},
            "respond": {"type": "string"},
        }})
    questions, plan = form_questions(params)
    by_id = {q["id"]: q for q in questions}
    assert by_id["respond"]["kind"] == "confirm" and by_id["ok"]["kind"] == "confirm"
    assert by_id["color"]["options"] == ["Red", "Green"] and by_id["tags"]["kind"] == "multi_choice"
    assert "field_5" in by_id and "field_6" in by_id  # names that cannot be question ids
    answered = closed({"respond": "yes", "name": "Ada", "age": "36", "ok": "yes", "color": "Green",
                       "tags": ["b"], "field_5": "w"})
    result = elicit_result(answered, plan)
    assert result.action == "accept"
    assert result.content == {"name": "Ada", "age": 36, "ok": True, "color": "g", "tags": ["b"], "weird name!": "w"}
    assert elicit_result(closed({"respond": "no"}), plan).action == "decline"
    assert elicit_result(closed({"respond": "yes", "name": "Ada", "age": "thirty"}), plan).action == "cancel"
    assert elicit_result(closed({"respond": "yes", "name": "Ada"}), plan).action == "cancel"  # age required
    assert elicit_result(closed({"respond": "yes"}, via="timeout"), plan).action == "cancel"
    assert elicit_result({"id": "r", "state": "cancelled", "error": "x"}, plan).action == "cancel"


def test_hostile_elicitation_schemas_still_make_a_valid_request() -> None:
    hostile: list[dict[str, Any]] = [
        {"type": "object", "properties": "not a mapping"},
        {"type": "object", "properties": {f"f{i}": {"type": "string"} for i in range(500)}},
        {"type": "object", "properties": {"x": "not a schema", "y": {"enum": [""] + ["o"] * 3}}},
        {"type": "object", "properties": {"z": {"type": "string", "title": "t" * 10_000, "default": {"deep": 1}}}},
    ]
    for schema in hostile:
        params = ElicitRequestFormParams(message="m" * 10_000, requested_schema=schema)
        body, _ = elicitation_body(params, gateway="g", server="s", agent="a", session=None, labels={})
        RequestIn.model_validate(body)  # the core accepts it: no 500 on a server's junk


def test_url_elicitation_is_a_link_and_a_yes_or_no() -> None:
    params = ElicitRequestURLParams(message="Sign in", url="https://example.com/auth", elicitation_id="e1")
    body, plan = elicitation_body(params, gateway="g", server="s", agent="a", session="s1", labels={"team": "x"})
    request = RequestIn.model_validate(body)
    assert request.context == {"url": "https://example.com/auth"} and "https://example.com/auth" in request.description
    assert request.labels["mcp_call"] == "elicitation/create" and request.labels["team"] == "x"
    assert elicit_result(closed({"respond": "yes"}), plan).action == "accept"
    assert elicit_result(closed({"respond": "no"}), plan).action == "decline"
