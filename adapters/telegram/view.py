"""How a request looks in one chat: its layout, text and keyboard. Pure functions, no
network (the text itself is `render.py`'s, the buttons `keyboards.py`'s)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from telegram import InlineKeyboardMarkup

from adapters.telegram import keyboards as kb
from adapters.telegram.render import request_text
from bridge.models import Request
from bridge.questions import FormField, Question, QuestionKind

if TYPE_CHECKING:
    from telegram import ForceReply

    from bridge.policy import GrantOffer

NOTES = {
    "reply": "↩️ Reply to this message with your answer.",
    "secret": "🔒 Reply to this message with the secret: it is deleted as soon as it is read.",
    "many": "↩️ Reply with the options (their exact text, separated by commas).",
    "private": "🔒 This request asks for a secret: press the button to answer in a private chat.",
    "not_allowed": "Only the request's responders can answer it.",
}
PURPOSE = {"buttons": "q", "reply": "q", "session": "start", "private": "private"}  # of a copy's token


def layout(request: Request, private: bool) -> str:
    """How a request is shown in one chat.

    `buttons` (one confirm/choice/multi_choice question) · `reply` (one text/edit/secret
    question, answered by replying) · `session` (several questions or a form: ▶️ Answer,
    then one step after another) · `private` (asks for a secret in a group: a deep link).
    """
    if request.secret_question_ids and not private:
        return "private"
    if len(request.questions) == 1:
        question = request.questions[0]
        if question.kind is QuestionKind.confirm:
            return "buttons"
        if question.kind in (QuestionKind.choice, QuestionKind.multi_choice):
            return "buttons" if kb.fits_as_buttons(question.options) else "reply"
        if question.kind in (QuestionKind.text, QuestionKind.edit, QuestionKind.secret):
            return "reply"
    return "session"


def view(request: Request, mode: str, token: str, *, bot: str, allowed: bool = True,
         selected: set[int] | None = None, notes: Sequence[str] = (), offers: Sequence[GrantOffer] = (),
         ) -> tuple[str, InlineKeyboardMarkup | ForceReply | None]:
    """The text and keyboard of an open request in one chat (`bot`: the bot's username, for
    the deep link); `notes` are its timing notes, shown in every copy; `offers` the standing
    approvals shown under Approve."""
    question = request.questions[0]
    if not allowed and question.kind is QuestionKind.secret:
        return request_text(request, NOTES["not_allowed"], notes), None
    if mode == "private":
        return request_text(request, NOTES["private"], notes), kb.private_keyboard(bot, token)
    if mode == "session":
        return request_text(request, notes=notes), kb.start_keyboard(token)
    if mode == "reply":
        many = question.kind in (QuestionKind.choice, QuestionKind.multi_choice)
        note = NOTES["many" if many else "secret" if question.kind is QuestionKind.secret else "reply"]
        return request_text(request, note, notes), kb.force_reply(placeholder(question), selective=False)
    return request_text(request, notes=notes), buttons_for(question, token, selected or set(), offers)


def buttons_for(question: Question, token: str, selected: set[int],
                offers: Sequence[GrantOffer] = ()) -> InlineKeyboardMarkup | None:
    if question.kind is QuestionKind.confirm:
        return kb.confirm_keyboard(token, offers)
    if question.kind is QuestionKind.choice:
        return kb.choice_keyboard(token, question.options)
    if question.kind is QuestionKind.multi_choice:
        return kb.multi_keyboard(token, question.options, selected)
    return None


def placeholder(question: Question) -> str:
    if question.kind is QuestionKind.secret:
        return "The secret (deleted after reading)"
    if question.kind is QuestionKind.edit:
        return "The edited JSON"
    return question.prompt


def step_buttons(question: Question, field: FormField | None, token: str,
                 selected: set[int]) -> InlineKeyboardMarkup | None:
    """Buttons of one step of a session, or None when it is typed (ForceReply)."""
    if field is not None:
        if not field.options or not kb.fits_as_buttons(field.options):
            return None
        rows = list(kb.choice_keyboard(token, field.options).inline_keyboard)
        controls = kb.skip_cancel_keyboard(token, skip=not field.required).inline_keyboard[0]
        return InlineKeyboardMarkup([*rows, controls])
    if question.kind is QuestionKind.confirm:
        approve, reject = kb.confirm_keyboard(token).inline_keyboard[0]
        return InlineKeyboardMarkup([[approve, reject], [kb.cancel_button(token)]])
    if question.kind is QuestionKind.choice and kb.fits_as_buttons(question.options):
        return kb.choice_keyboard(token, question.options, cancel=True)
    if question.kind is QuestionKind.multi_choice and kb.fits_as_buttons(question.options, extra=3):
        return kb.multi_keyboard(token, question.options, selected, cancel=True)
    return None
