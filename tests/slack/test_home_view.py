"""The Home tab's Block Kit (adapters.slack.home_view) is a pure function of what waits and when."""

from __future__ import annotations

from datetime import UTC, datetime

from adapters.slack.home_view import LISTED, SHOW_ACTION, home_view
from tests.slack.factories import make_request

NOW = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)


def test_the_home_tab_lists_what_waits_with_a_button_each_and_says_as_of_when() -> None:
    waiting = [make_request({"id": "ok", "kind": "confirm", "prompt": "Go?"}, id=f"r{i}", title=f"Deploy {i}")
               for i in range(LISTED + 3)]
    view = home_view(waiting, NOW)
    assert view == home_view(waiting, NOW)  # nothing but its arguments
    buttons = [b["accessory"] for b in view["blocks"] if b.get("accessory")]
    assert [b["value"] for b in buttons] == [f"r{i}" for i in range(LISTED)]
    assert {b["action_id"] for b in buttons} == {SHOW_ACTION}
    assert "Deploy 0" in view["blocks"][1]["text"]["text"] and "\nAnswer by " in view["blocks"][1]["text"]["text"]
    texts = [e["text"] for b in view["blocks"] if b["type"] == "context" for e in b["elements"]]
    assert texts == ["…and 3 more.", "As of 2026-03-01 09:30 UTC; reopen the tab to refresh."]


def test_an_empty_home_tab_says_nothing_waits() -> None:
    blocks = home_view([], NOW)["blocks"]
    assert blocks[1]["text"]["text"] == "Nothing waits for you right now. :tada:"
    assert not any(b.get("accessory") for b in blocks)
