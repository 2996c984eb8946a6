"""Modal views per question kind and the reading of their submissions."""

from __future__ import annotations

import json
from typing import Any

from adapters.slack.modals import (
    ModalOrigin,
    answer_modal,
    read_reason,
    read_submission,
    reject_modal,
)
from tests.fakes.slack_api import check_view
from tests.slack.factories import make_request

ORIGIN = ModalOrigin("r_test0000001", "C0DEPLOYS", "1700000001.000100")


def inputs(view: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {b["block_id"]: b for b in view["blocks"] if b["type"] == "input"}


def text_state(value: str | None) -> dict[str, Any]:
    return {"v": {"type": "plain_text_input", "value": value}}


def test_every_kind_in_one_modal_within_limits() -> None:
    request = make_request(
        {"id": "ok", "kind": "confirm", "prompt": "Go?"},
        {"id": "region", "kind": "choice", "prompt": "Region?", "options": ["eu", "us"]},
        {"id": "envs", "kind": "multi_choice", "prompt": "Envs?", "options": [f"e{i}" for i in range(12)]},
        {"id": "note", "kind": "text", "prompt": "Note?"},
        {"id": "key", "kind": "secret", "prompt": "Key?"},
        {"id": "ticket", "kind": "form", "prompt": "Ticket",
         "fields": [{"name": "id"}, {"name": "prio", "options": ["low", "high"], "required": False}]},
        {"id": "args", "kind": "edit", "prompt": "Args", "default": {"replicas": 3}},
    )
    view = answer_modal(request, ORIGIN)
    assert check_view(view) is None
    found = inputs(view)
    assert found["q:ok"]["element"]["type"] == "radio_buttons"
    assert found["q:region"]["element"]["type"] == "static_select"
    assert found["q:envs"]["element"]["type"] == "multi_static_select"  # > 10 options
    assert found["q:note"]["element"]["multiline"] is True
    assert found["q:key"]["element"]["multiline"] is False
    assert found["q:ticket:prio"]["optional"] is True
    assert json.loads(found["q:args"]["element"]["initial_value"]) == {"replicas": 3}
    assert json.loads(view["private_metadata"]) == {"r": ORIGIN.request_id, "c": "C0DEPLOYS",
                                                    "t": ORIGIN.message_ts}


def test_submission_reads_every_kind() -> None:
    request = make_request(
        {"id": "ok", "kind": "confirm", "prompt": "Go?"},
        {"id": "region", "kind": "choice", "prompt": "Region?", "options": ["eu", "us"]},
        {"id": "envs", "kind": "multi_choice", "prompt": "Envs?", "options": ["a", "b", "c"]},
        {"id": "ticket", "kind": "form", "prompt": "T",
         "fields": [{"name": "id"}, {"name": "prio", "options": ["low", "high"]}]},
        {"id": "args", "kind": "edit", "prompt": "Args", "default": {"replicas": 3}},
    )
    state = {
        "q:ok": {"v": {"type": "radio_buttons", "selected_option": {"value": "yes"}}},
        "q:region": {"v": {"type": "static_select", "selected_option": {"value": "1"}}},
        "q:envs": {"v": {"type": "checkboxes", "selected_options": [{"value": "2"}, {"value": "0"}]}},
        "q:ticket:id": text_state("OPS-1"),
        "q:ticket:prio": {"v": {"type": "static_select", "selected_option": {"value": "1"}}},
        "q:args": text_state('{"replicas": 5}'),
    }
    values, errors = read_submission(request, state)
    assert errors == {}
    assert values == {"ok": "yes", "region": "us", "envs": ["a", "c"],
                      "ticket": {"id": "OPS-1", "prio": "high"}, "args": {"replicas": 5}}


def test_validation_errors_point_at_the_block() -> None:
    request = make_request(
        {"id": "note", "kind": "text", "prompt": "Note?"},
        {"id": "ticket", "kind": "form", "prompt": "T", "fields": [{"name": "a", "required": False},
                                                                  {"name": "b"}]},
        {"id": "args", "kind": "edit", "prompt": "Args", "default": {"x": 1}},
        {"id": "region", "kind": "choice", "prompt": "Region?", "options": ["eu"]},
    )
    state = {"q:note": text_state(None), "q:args": text_state("{not json"),
             "q:region": {"v": {"type": "static_select", "selected_option": {"value": "99"}}}}
    values, errors = read_submission(request, state)
    assert values == {}
    assert set(errors) == {"q:note", "q:ticket:b", "q:args", "q:region"}
    assert "not valid JSON" in errors["q:args"]
    assert all(len(e) <= 150 for e in errors.values())


def test_hostile_state_is_refused_not_crashed() -> None:
    request = make_request({"id": "note", "kind": "text", "prompt": "Note?"})
    state: Any
    for state in (None, [], "x", {"q:note": "x"}, {"q:note": {"v": {"value": {"nested": 1}}}},
                  {"q:note": {"v": {"selected_options": "nope"}}}):
        values, errors = read_submission(request, state)
        assert values == {} and "q:note" in errors
    optional = make_request({"id": "note", "kind": "text", "prompt": "Note?", "required": False})
    assert read_submission(optional, {}) == ({}, {})


def test_reject_modal_reason_is_optional() -> None:
    request = make_request()
    view = reject_modal(request, ORIGIN)
    assert check_view(view) is None
    assert inputs(view)["reason"]["optional"] is True
    assert read_reason({"reason": text_state("  too risky  ")}) == "too risky"
    assert read_reason({"reason": text_state("  ")}) is None
    assert read_reason("garbage") is None


def test_secret_never_in_private_metadata_and_forged_metadata_is_refused() -> None:
    request = make_request({"kind": "secret", "prompt": "Key?"})
    view = answer_modal(request, ORIGIN)
    assert set(json.loads(view["private_metadata"])) == {"r", "c", "t"}
    assert "initial_value" not in inputs(view)["q:answer"]["element"]
    assert ModalOrigin.load("not json") is None
    assert ModalOrigin.load('{"r": 5}') is None
    assert ModalOrigin.load("[1]") is None
    assert ModalOrigin.load(ORIGIN.dump()) == ORIGIN
