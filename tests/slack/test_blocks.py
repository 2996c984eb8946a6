"""Block Kit builders: what people see for each question kind, within Slack's limits."""

from __future__ import annotations

import json
import re
from typing import Any

from adapters.slack.blocks import (
    APPROVE,
    DETAILS,
    OPEN_MODAL,
    REJECT,
    SELECT,
    fallback_text,
    message_metadata,
    request_blocks,
    request_id_from_block,
)
from adapters.slack.modals import details_modal
from bridge.models import RequestState
from tests.fakes.slack_api import check_blocks, check_view
from tests.slack.factories import answered, make_request


def controls(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    found = [b for b in blocks if b["type"] == "actions"]
    assert len(found) <= 1
    return found[0]["elements"] if found else []


def all_text(blocks: list[dict[str, Any]]) -> str:
    return json.dumps(blocks, ensure_ascii=False)


def test_confirm_has_approve_primary_and_reject_danger() -> None:
    request = make_request()
    blocks = request_blocks(request)
    assert check_blocks(blocks, 50) is None
    elements = controls(blocks)
    assert [(e["action_id"], e.get("style")) for e in elements] == [
        (APPROVE, "primary"), (REJECT, "danger")]
    actions = next(b for b in blocks if b["type"] == "actions")
    assert request_id_from_block(actions["block_id"]) == request.id
    assert blocks[0] == {"type": "header", "text": {"type": "plain_text",
                                                   "text": request.title, "emoji": True}}
    text = all_text(blocks)
    assert "delta" in text and "deployer" in text and "kubectl rollout restart" in text
    assert re.search(r"Answer by \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC", text)  # 24-hour, with the zone
    assert "<!date^" not in text  # Slack shows "09:26 PM" for many readers


def test_choice_up_to_five_is_buttons_and_more_is_a_select() -> None:
    few = make_request({"kind": "choice", "prompt": "Which region?", "options": ["eu", "us"]})
    assert [e["text"]["text"] for e in controls(request_blocks(few))] == ["eu", "us"]
    many = make_request({"kind": "choice", "prompt": "Which?", "options": [f"o{i}" for i in range(6)]})
    (select,) = controls(request_blocks(many))
    assert select["action_id"] == SELECT and len(select["options"]) == 6
    huge = make_request({"kind": "choice", "prompt": "Which?", "options": [f"o{i}" for i in range(100)]})
    assert check_blocks(request_blocks(huge), 50) is None


def test_modal_kinds_get_one_button_and_several_questions_one_modal() -> None:
    for kind, label, extra in (
        ("text", "Reply", {}), ("secret", "Provide secret", {}),
        ("edit", "Review and edit", {"default": {"a": 1}}),
        ("multi_choice", "Choose…", {"options": ["a", "b"]}),
        ("form", "Fill in", {"fields": [{"name": "ticket"}]}),
    ):
        request = make_request({"kind": kind, "prompt": "?", **extra})
        (button,) = controls(request_blocks(request))
        assert (button["action_id"], button["text"]["text"]) == (OPEN_MODAL, label), kind
    several = make_request({"id": "a", "kind": "confirm", "prompt": "ok?"},
                           {"id": "b", "kind": "text", "prompt": "why?"})
    (button,) = controls(request_blocks(several))
    assert (button["action_id"], button["text"]["text"]) == (OPEN_MODAL, "Answer")


def test_long_arguments_are_truncated_with_the_full_text_in_details() -> None:
    long_value = "x" * 5000 + "END"
    request = make_request(context={"script": long_value, **{f"k{i}": i for i in range(12)}})
    blocks = request_blocks(request)
    assert check_blocks(blocks, 50) is None
    assert "END" not in all_text(blocks)
    section = next(b for b in blocks if b.get("fields"))
    assert len(section["fields"]) == 10 and section["accessory"]["action_id"] == DETAILS
    modal = details_modal(request)
    assert check_view(modal) is None
    shown = "".join(b["text"]["text"] for b in modal["blocks"])
    assert "END" in shown and '"k11": 11' in shown


def test_hostile_text_is_escaped_and_cut_to_limits() -> None:
    request = make_request(
        {"kind": "confirm", "prompt": "<!channel> approve <https://evil|this>?"},
        title="<!here> " + "t" * 490, description="d" * 20_000,
        context={"<b>": "<@U0ALICE> & co"},
    )
    blocks = request_blocks(request)
    assert check_blocks(blocks, 50) is None
    text = all_text(blocks[1:])  # the header is plain text, shown literally
    assert "<!channel>" not in text and "<https://evil" not in text and "<@U0ALICE>" not in text
    assert "&lt;!channel&gt;" in text
    assert len(blocks[0]["text"]["text"]) == 150
    assert len(fallback_text(request)) <= 3000


def test_fifty_questions_stay_within_fifty_blocks() -> None:
    request = make_request(*({"id": f"q{i}", "kind": "text", "prompt": f"Q{i}", "help_text": "h"}
                             for i in range(50)))
    blocks = request_blocks(request)
    assert check_blocks(blocks, 50) is None


def test_outcomes_replace_the_controls() -> None:
    request = make_request()
    approved = request_blocks(answered(request, {"answer": "yes"}))
    assert controls(approved) == []
    assert "Approved by <@U0ALICE> at 14:02 UTC" in all_text(approved)
    rejected = all_text(request_blocks(answered(request, {"answer": "no"}, reason="not <now>")))
    assert "Rejected by <@U0ALICE> at 14:02 UTC" in rejected and "not &lt;now&gt;" in rejected
    choice = make_request({"kind": "choice", "prompt": "?", "options": ["eu", "us"]})
    assert "*us* chosen by <@U0ALICE>" in all_text(request_blocks(answered(choice, {"answer": "us"})))
    expired = request.model_copy(update={"state": RequestState.expired})
    assert "Expired without an answer at 14:02 UTC" in all_text(request_blocks(expired))
    cancelled = request.model_copy(update={"state": RequestState.cancelled, "error": "run deleted"})
    text = all_text(request_blocks(cancelled))
    assert "Cancelled" in text and "run deleted" in text


def test_secret_outcome_never_shows_the_value() -> None:
    request = make_request({"kind": "secret", "prompt": "API key?"})
    text = all_text(request_blocks(answered(request, {"answer": "hunter2-s3cr3t"})))
    assert "hunter2" not in text
    assert "Secret provided by <@U0ALICE>" in text


def test_timeout_answer_shows_expired_and_redacted_values() -> None:
    request = make_request({"kind": "secret", "prompt": "key?"})
    closed = answered(request, {"answer": "s3cr3t"}, via="timeout")
    closed = closed.model_copy(update={"state": RequestState.expired})
    text = all_text(request_blocks(closed))
    assert "Expired" in text and "s3cr3t" not in text and "[secret]" in text


def test_timing_notes_are_shown_escaped_while_open_and_metadata_names_the_request() -> None:
    request = make_request(escalation_level=2)
    notes = ["1 of 2 approvals: <!channel> & co", "Escalated to slack:@U0BOSS at 14:15 UTC"]
    blocks = request_blocks(request, notes)
    assert check_blocks(blocks, 50) is None
    (shown,) = [b for b in blocks if b["type"] == "context"
                and "approvals" in b["elements"][0]["text"]]
    assert shown["elements"][0]["text"] == (
        "1 of 2 approvals: &lt;!channel&gt; &amp; co\nEscalated to slack:@U0BOSS at 14:15 UTC")
    assert "Escalated (level" not in all_text(blocks)  # the bare level is gone
    assert "approvals" not in all_text(request_blocks(answered(request, {"answer": "yes"}), notes))
    many = request_blocks(request, [f"note {i}" for i in range(12)])
    assert check_blocks(many, 50) is None and "…and 4 more" in all_text(many)
    meta = message_metadata(request, "slack:#deploys")
    assert meta["event_payload"] == {"request_id": request.id, "target": "slack:#deploys"}


def test_foreign_block_ids_are_not_ours() -> None:
    assert request_id_from_block("something-else") is None
    assert request_id_from_block("hitl:") is None
