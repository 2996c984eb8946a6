"""Inline keyboards and callback data. Pure functions, no network.

`callback_data` is `<token>|<action>`: the token is a random, unguessable string that the
channel stores (it maps to a request and a question); the action says which button
(`y`, `n`, `o3` for option 3, `gh3600` for "Allow for 1 hour"...). Raw option text never
travels in callback data, and every callback is parsed strictly: anything else is
`ForgedCallback`. A grant button's code (`gs`, `ga`, `gh<seconds>`) names a standing
approval (bridge.policy.GrantOffer.key), which the handler checks against the offers the
request has when it is pressed.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from telegram import ForceReply, InlineKeyboardButton, InlineKeyboardMarkup

if TYPE_CHECKING:
    from bridge.policy import GrantOffer

CALLBACK_DATA_LIMIT = 64  # bytes
TOKEN_LENGTH = 16  # urlsafe base64 characters: 96 random bits
MAX_BUTTONS = 100
MAX_PER_ROW = 8
ROW_WIDTH = 30  # characters of labels per row that still read well on a phone
LABEL_LIMIT = 60
PLACEHOLDER_LIMIT = 64

APPROVE, REJECT, DONE, START, CANCEL, SKIP, SHOW, GRANT = "y", "n", "d", "a", "x", "s", "v", "g"
_CALLBACK = re.compile(rf"([A-Za-z0-9_-]{{{TOKEN_LENGTH}}})\|([yndaxsv]|[ot](\d{{1,3}})|g(s|a|h\d{{1,8}}))")
_GRANT_CODES = {"session": "s", "always": "a"}
_GRANT_ICONS = {"s": "🔁", "a": "♾", "h": "🕐"}


class ForgedCallback(ValueError):
    """Callback data this bridge never produced (wrong shape, unknown token or action)."""


@dataclass(frozen=True)
class CallbackAction:
    token: str
    action: str  # one of the constants above, or "o" (pick option) / "t" (toggle option)
    index: int = -1
    #: for GRANT: the offer key the button names (`session`, `always`, `span:3600`)
    grant: str = ""


def new_token() -> str:
    return secrets.token_urlsafe(12)  # 16 characters


def callback_data(token: str, action: str, index: int | None = None) -> str:
    data = f"{token}|{action}{'' if index is None else index}"
    assert len(data.encode()) <= CALLBACK_DATA_LIMIT
    return data


def parse_callback(data: str | None) -> CallbackAction:
    """Split callback data into token and action; raise ForgedCallback when malformed."""
    if not data or len(data.encode()) > CALLBACK_DATA_LIMIT:
        raise ForgedCallback("empty or oversized callback data")
    match = _CALLBACK.fullmatch(data)
    if match is None:
        raise ForgedCallback("malformed callback data")
    token, action, number, code = match.groups()
    if code is not None:
        return CallbackAction(token, GRANT, grant=grant_key(code))
    if number is not None:
        return CallbackAction(token, action[0], int(number))
    return CallbackAction(token, action)


def label(text: str) -> str:
    """A button label: one line, at most LABEL_LIMIT characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= LABEL_LIMIT else flat[: LABEL_LIMIT - 1] + "…"


def rows_of(buttons: list[InlineKeyboardButton]) -> list[list[InlineKeyboardButton]]:
    """Pack buttons into rows: short labels share a row, long ones get their own."""
    rows: list[list[InlineKeyboardButton]] = []
    row: list[InlineKeyboardButton] = []
    width = 0
    for button in buttons:
        size = len(button.text) + 2
        if row and (width + size > ROW_WIDTH or len(row) >= 4):
            rows.append(row)
            row, width = [], 0
        row.append(button)
        width += size
    if row:
        rows.append(row)
    return rows


def fits_as_buttons(options: list[str], extra: int = 2) -> bool:
    """True when one button per option (plus `extra` controls) stays within Telegram's limit."""
    return len(options) + extra <= MAX_BUTTONS


def grant_code(key: str) -> str:
    """The short code of an offer key in callback data: `s`, `a`, `h3600`."""
    return _GRANT_CODES.get(key) or "h" + key.removeprefix("span:")


def grant_key(code: str) -> str:
    """The offer key a callback's grant code names (the inverse of `grant_code`)."""
    for key, short in _GRANT_CODES.items():
        if code == short:
            return key
    return f"span:{code[1:]}"


def confirm_keyboard(token: str, offers: Sequence[GrantOffer] = ()) -> InlineKeyboardMarkup:
    """Approve and Reject; with standing approvals offered, "Allow once" and one row each."""
    rows = [[
        InlineKeyboardButton("✅ Allow once" if offers else "✅ Approve", callback_data=callback_data(token, APPROVE)),
        InlineKeyboardButton("❌ Reject", callback_data=callback_data(token, REJECT)),
    ]]  # fmt: skip
    for offer in offers:
        code = grant_code(offer.key)
        rows.append([InlineKeyboardButton(f"{_GRANT_ICONS[code[0]]} {label(offer.label)}",
                                          callback_data=callback_data(token, GRANT + code))])
    return InlineKeyboardMarkup(rows)


def choice_keyboard(token: str, options: list[str], *, cancel: bool = False) -> InlineKeyboardMarkup:
    buttons = [InlineKeyboardButton(label(o), callback_data=callback_data(token, "o", i))
               for i, o in enumerate(options)]
    rows = rows_of(buttons)
    if cancel:
        rows.append([cancel_button(token)])
    return InlineKeyboardMarkup(rows)


def multi_keyboard(token: str, options: list[str], selected: set[int], *, cancel: bool = False) -> InlineKeyboardMarkup:
    """Toggle buttons (☑ chosen, ☐ not) and a Done button."""
    buttons = [
        InlineKeyboardButton(("☑ " if i in selected else "☐ ") + label(o), callback_data=callback_data(token, "t", i))
        for i, o in enumerate(options)
    ]
    rows = rows_of(buttons)
    controls = [InlineKeyboardButton(f"✔️ Done ({len(selected)})", callback_data=callback_data(token, DONE))]
    if cancel:
        controls.append(cancel_button(token))
    rows.append(controls)
    return InlineKeyboardMarkup(rows)


def cancel_button(token: str) -> InlineKeyboardButton:
    return InlineKeyboardButton("✖️ Cancel", callback_data=callback_data(token, CANCEL))


def skip_cancel_keyboard(token: str, *, skip: bool) -> InlineKeyboardMarkup:
    row = [InlineKeyboardButton("⏭ Skip", callback_data=callback_data(token, SKIP))] if skip else []
    return InlineKeyboardMarkup([[*row, cancel_button(token)]])


def start_keyboard(token: str) -> InlineKeyboardMarkup:
    """A request answered in several steps: one button starts the session in this chat."""
    return InlineKeyboardMarkup([[InlineKeyboardButton("▶️ Answer", callback_data=callback_data(token, START))]])


def deep_link(bot_username: str, token: str) -> str:
    """`t.me/<bot>?start=<token>`: opens the private chat and sends `/start <token>`."""
    return f"https://t.me/{bot_username}?start={token}"


def private_keyboard(bot_username: str, token: str) -> InlineKeyboardMarkup:
    return InlineKeyboardMarkup([[InlineKeyboardButton("🔒 Reply in private", url=deep_link(bot_username, token))]])


def force_reply(placeholder: str, *, selective: bool = True) -> ForceReply:
    """Opens the reply box; `selective` limits it to people mentioned in the message."""
    text = " ".join(placeholder.split()) or "Your answer"
    if len(text) > PLACEHOLDER_LIMIT:
        text = text[: PLACEHOLDER_LIMIT - 1] + "…"
    return ForceReply(selective=selective, input_field_placeholder=text)
