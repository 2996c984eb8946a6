"""Keyboards and callback data (pure, no network)."""

from __future__ import annotations

import pytest

from adapters.telegram import keyboards as kb


def all_buttons(markup: object) -> list[object]:
    return [b for row in markup.inline_keyboard for b in row]  # type: ignore[attr-defined]


def test_callback_data_round_trip_and_is_short() -> None:
    token = kb.new_token()
    assert len(token) == kb.TOKEN_LENGTH
    for action, index in [(kb.APPROVE, None), (kb.REJECT, None), ("o", 99), ("t", 0), (kb.DONE, None)]:
        data = kb.callback_data(token, action, index)
        assert len(data.encode()) <= 64
        parsed = kb.parse_callback(data)
        assert (parsed.token, parsed.action, parsed.index) == (token, action, -1 if index is None else index)


def test_tokens_are_not_guessable() -> None:
    assert len({kb.new_token() for _ in range(1000)}) == 1000


@pytest.mark.parametrize("data", [None, "", "x" * 65, "short|y", "A" * 16 + "|q", "A" * 16 + "|o",
                                  "A" * 16 + "|o1234", "A" * 16 + "|y\n", "A" * 15 + "é|y", "Deploy now"])
def test_forged_callback_data_is_refused(data: str | None) -> None:
    with pytest.raises(kb.ForgedCallback):
        kb.parse_callback(data)


def test_choice_keyboard_never_carries_the_option_text() -> None:
    options = [f"option number {i} with a long label " * 2 for i in range(12)]
    markup = kb.choice_keyboard(kb.new_token(), options, cancel=True)
    buttons = all_buttons(markup)
    assert len(buttons) == 13
    assert all("option" not in b.callback_data for b in buttons)  # type: ignore[attr-defined]
    assert all(len(row) <= kb.MAX_PER_ROW for row in markup.inline_keyboard)
    assert len(markup.inline_keyboard) > 1  # several rows as needed


def test_short_options_share_rows() -> None:
    markup = kb.choice_keyboard(kb.new_token(), ["a", "b", "c", "d", "e"])
    assert [len(r) for r in markup.inline_keyboard] == [4, 1]


def test_multi_keyboard_shows_toggles_and_done() -> None:
    markup = kb.multi_keyboard(kb.new_token(), ["red", "green", "blue"], {1})
    texts = [b.text for b in all_buttons(markup)]  # type: ignore[attr-defined]
    assert texts[:3] == ["☐ red", "☑ green", "☐ blue"]
    assert texts[3].startswith("✔️ Done (1)")


def test_labels_and_placeholders_are_bounded() -> None:
    assert len(kb.label("x" * 500)) == kb.LABEL_LIMIT
    assert kb.label("two\nlines") == "two lines"
    assert len(kb.force_reply("p" * 200).input_field_placeholder or "") <= 64


def test_deep_link() -> None:
    markup = kb.private_keyboard("hitl_bot", "T" * 16)
    assert all_buttons(markup)[0].url == "https://t.me/hitl_bot?start=" + "T" * 16  # type: ignore[attr-defined]


def test_fits_as_buttons() -> None:
    assert kb.fits_as_buttons(["x"] * 98)
    assert not kb.fits_as_buttons(["x"] * 99)
