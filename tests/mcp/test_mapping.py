"""The pure parts: tool arguments → request bodies, request views → tool results and tasks,
and the settings (no I/O)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from adapters.mcp.requests import (
    APPROVE,
    ARGUMENTS,
    PERMISSION_PROMPT,
    REQUEST_APPROVAL,
    WHY_NOT,
    Caller,
    Refused,
    approval_body,
    approval_title,
    ask_body,
)
from adapters.mcp.results import decision_of, permission_result, result_for
from adapters.mcp.settings import McpSettings
from adapters.mcp.tasks import task_of

ARGS = {"command": "npm test", "timeout": 60}


def view(state: str = "answered", *, values: dict[str, Any] | None = None, via: str = "slack",
         reason: str | None = None, call: str = REQUEST_APPROVAL, error: str | None = None,
         context: dict[str, Any] | None = None) -> dict[str, Any]:
    """A request as `GET /v1/requests/{id}` shows it."""
    answer = None if values is None else {
        "values": values, "via": via, "reason": reason, "answered_at": "2026-01-01T12:00:00+00:00",
        "responder": {"platform": via, "user_id": "U0ANA", "name": "ana", "person": None}}
    return {"id": "r_1", "state": state, "answer": answer, "error": error, "context": context or dict(ARGS),
            "labels": {"mcp_call": call}, "created_at": "2026-01-01T11:00:00+00:00",
            "updated_at": "2026-01-01T12:00:00+00:00"}


def test_titles_fit_a_phone_notification() -> None:
    shown = approval_title("Bash", {"description": "x", "command": "npm   test\n--watch"})
    assert shown == "Allow Bash: npm test --watch"
    assert approval_title("Write", {"content": "a", "file_path": "/srv/.env"}) == "Allow Write: /srv/.env"
    assert approval_title("deploy", {"version": 3, "service": "api"}) == "Allow deploy: api"
    assert approval_title("noop", {"n": 1}) == "Allow noop?"
    long = approval_title("Bash", {"command": "x" * 1000})
    assert len(long) == 200 and long.endswith("…")


def test_labels_say_where_a_request_came_from_and_the_operator_wins() -> None:
    caller = Caller(client="claude-code", labels={"env": "prod"})
    body = ask_body(caller, "Go?", [], labels={"env": "dev", "mcp_client": "forged", "team": "a"})
    assert body["labels"] == {"env": "prod", "team": "a", "mcp_client": "claude-code", "mcp_tool": "ask_human",
                              "mcp_call": "ask_human"}
    assert body["questions"] == [{"id": "answer", "kind": "text", "prompt": "Go?"}]
    assert body["engine"] == "mcp" and body["agent"] == "claude-code" and body["external_id"].startswith("mcp-")
    with pytest.raises(Refused, match="callback"):
        ask_body(caller, "Key?", [{"id": "k", "kind": "secret", "prompt": "API key?"}])


def test_approvals_are_one_tap_unless_edits_are_offered() -> None:
    plain = approval_body(Caller(), PERMISSION_PROMPT, "Bash", ARGS, tool_use_id="toolu_1")
    assert [q["id"] for q in plain["questions"]] == [APPROVE]
    assert plain["context"] == ARGS and plain["tool"] == "Bash" and plain["external_id"] == "mcp:toolu_1"
    editing = Caller(edit_arguments=("Bash", "mcp__github__*"))
    assert editing.editable("mcp__github__merge_pr") and not editing.editable("Read")
    body = approval_body(editing, PERMISSION_PROMPT, "Bash", ARGS)
    assert [(q["id"], q["kind"]) for q in body["questions"]] == [(APPROVE, "confirm"), (ARGUMENTS, "edit"),
                                                                 (WHY_NOT, "text")]
    assert body["questions"][1]["default"] == ARGS and body["questions"][1]["required"] is False
    unnamed = approval_body(Caller(), REQUEST_APPROVAL, "   ", {})
    assert unnamed["tool"] == "tool" and unnamed["title"] == "Allow tool?"


@pytest.mark.parametrize(("answer", "allowed", "arguments", "message"), [
    ({"values": {APPROVE: "yes"}}, True, ARGS, "Allowed by ana (through slack)."),
    ({"values": {APPROVE: "yes", ARGUMENTS: {"command": "npm ci"}}}, True, {"command": "npm ci"},
     "Allowed by ana (through slack) with edited arguments."),
    ({"values": {APPROVE: "yes", ARGUMENTS: dict(ARGS)}}, True, ARGS, "Allowed by ana (through slack)."),
    ({"values": {APPROVE: "yes", ARGUMENTS: ["npm", "ci"]}}, False, None,
     "Not allowed: ana (through slack) approved with edited arguments that are not a JSON object"),
    ({"values": {APPROVE: "no"}, "reason": "too risky"}, False, None, "Rejected by ana (through slack): too risky"),
    ({"values": {APPROVE: "no", WHY_NOT: " use npm ci "}}, False, None, "Rejected by ana (through slack): use npm ci"),
    ({"values": {APPROVE: "no"}}, False, None, "Rejected by ana (through slack) (no reason given)"),
    ({"values": {APPROVE: "yes"}, "via": "timeout", "state": "expired"}, True, ARGS,
     "Allowed by the route's timeout rule (nobody answered in time)."),
    ({"values": {APPROVE: "no"}, "via": "timeout", "state": "expired", "reason": "deadline passed"}, False, None,
     "Not allowed: nobody answered in time and the route's timeout rule said no: deadline passed"),
    ({"state": "expired", "error": "no answer by 12:00"}, False, None,
     "Not allowed. Nobody answered in time (the request expired: no answer by 12:00)."),
    ({"state": "cancelled", "error": "run aborted"}, False, None,
     "Not allowed. The request was cancelled: run aborted."),
    ({"state": "failed", "error": "on_timeout.answer is not valid here"}, False, None,
     "Not allowed. The request failed: on_timeout.answer is not valid here."),
])
def test_decisions(answer: dict[str, Any], allowed: bool, arguments: dict[str, Any] | None, message: str) -> None:
    shown = view(answer.get("state", "answered"), values=answer.get("values"), via=answer.get("via", "slack"),
                 reason=answer.get("reason"), error=answer.get("error"))
    decision = decision_of(shown)
    assert (decision.allowed, decision.arguments, decision.message) == (allowed, arguments, message)
    verdict = json.loads(permission_result(shown).content[0].text)  # type: ignore[union-attr]
    if allowed:
        assert verdict == {"behavior": "allow", "updatedInput": arguments}
    else:
        assert verdict == {"behavior": "deny", "message": message}


def test_results_follow_the_call_that_asked() -> None:
    answered = view(values={APPROVE: "yes"}, call=PERMISSION_PROMPT)
    assert json.loads(result_for(answered).content[0].text)["behavior"] == "allow"  # type: ignore[union-attr]
    approval = result_for(view(values={APPROVE: "yes"}))
    assert approval.structured_content is not None and approval.structured_content["approved"] is True
    asked = result_for(view(values={"env": "prod"}, call="ask_human", via="telegram"))
    assert asked.structured_content is not None and not asked.is_error
    assert asked.structured_content["values"] == {"env": "prod"} and asked.structured_content["via"] == "telegram"
    gone = result_for(view("cancelled", call="ask_human", error="moot"))
    assert gone.is_error and gone.structured_content == {
        "request_id": "r_1", "state": "cancelled", "answered": False, "summary": "The request was cancelled: moot."}
    pending = result_for(view("posted"))
    assert pending.structured_content is not None and pending.structured_content["pending"] is True


def test_tasks_are_requests() -> None:
    working = task_of(view("posted"))
    assert working["status"] == "working" and "result" not in working and working["taskId"] == "r_1"
    assert working["ttlMs"] is None and working["createdAt"] == "2026-01-01T11:00:00+00:00"
    done = task_of(view(values={APPROVE: "no"}, reason="nope"))
    assert done["status"] == "completed" and done["result"]["structuredContent"]["approved"] is False
    expired = task_of(view("expired", call="ask_human"))
    assert expired["status"] == "completed" and expired["result"]["isError"] is True  # a result, not a JSON-RPC error
    cancelled = task_of(view("cancelled", error="the MCP client cancelled the task"))
    assert cancelled["status"] == "cancelled" and "result" not in cancelled
    assert cancelled["statusMessage"] == "cancelled: the MCP client cancelled the task"


@pytest.mark.parametrize(("section", "said"), [
    ({"labels": {"mcp_tool": "x"}}, "set by the bridge"),
    ({"labels": {f"k{i}": "v" for i in range(51)}}, "at most 50 labels"),
    ({"labels": {"k": "v" * 501}}, "at most 50 labels"),
    ({"progress_every": "10ms"}, "between 50ms and 10m"),
    ({"hold": "-5s"}, "duration"),
    ({"edit_arguments": "Bash"}, "edit_arguments"),
    ({"nonsense": 1}, "Extra inputs"),
])
def test_bad_settings_are_refused(section: dict[str, Any], said: str) -> None:
    with pytest.raises(ValidationError) as info:
        McpSettings.model_validate(section)
    assert said in str(info.value)


def test_settings_make_the_caller() -> None:
    settings = McpSettings.model_validate({"labels": {"team": "a"}, "hold": "50s", "edit_arguments": ["Bash"]})
    assert settings.hold_s == 50.0
    caller = settings.caller("cursor")
    assert caller == Caller(client="cursor", labels={"team": "a"}, edit_arguments=("Bash",))
    assert McpSettings().hold_s is None and McpSettings().caller("x").edit_arguments is False
