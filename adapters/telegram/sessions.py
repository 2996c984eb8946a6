"""Answering a request one step after another in a chat (forms, several questions).

A session belongs to one person in one chat. Each step is a new message: buttons for
confirm / choice / multi-choice / fields with options, a ForceReply for typed answers.
A Cancel button (and /cancel) ends it without answering. Secret steps come last and
their values stay in memory until the answer is recorded (never in the store).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from telegram import CallbackQuery, InlineKeyboardMarkup, User

from adapters.telegram import keyboards as kb
from adapters.telegram import texts
from adapters.telegram.render import esc, step_text
from adapters.telegram.sender import SendError
from adapters.telegram.state import Prompt, Session, TokenRecord
from adapters.telegram.view import step_buttons
from bridge.models import Request, Responder
from bridge.questions import FormField, InvalidAnswer, Question, QuestionKind

if TYPE_CHECKING:
    from telegram import ForceReply

    from adapters.telegram.answers import Recorder
    from adapters.telegram.desk import Desk

log = logging.getLogger(__name__)
TYPED = (QuestionKind.text, QuestionKind.edit, QuestionKind.secret)


def plan(request: Request) -> list[list[str]]:
    """The steps: `[question_id, field]` for each question (each field of a form), secrets last."""
    steps = []
    for question in sorted(request.questions, key=lambda q: q.kind is QuestionKind.secret):
        if question.kind is QuestionKind.form:
            steps += [[question.id, f.name] for f in question.fields]
        else:
            steps.append([question.id, ""])
    return steps


def step_of(request: Request, session: Session) -> tuple[Question, FormField | None]:
    question_id, field_name = session.steps[session.index]
    question = request.question(question_id)
    assert question is not None
    field = next((f for f in question.fields if f.name == field_name), None) if field_name else None
    return question, field


class Sessions:
    """Runs the step-by-step answering; state in the store, secrets in memory."""

    def __init__(self, desk: Desk, recorder: Recorder) -> None:
        self.desk = desk
        self.state = desk.state
        self.out = desk.outbox
        self.recorder = recorder
        self._secrets: dict[tuple[int, int], dict[str, Any]] = {}

    async def start(self, chat_id: int, user: User, request: Request) -> None:
        await self.cancel(chat_id, user.id, quiet=True)
        now = self.desk.now()
        session = Session(request.id, chat_id, user.id, plan(request))
        token = kb.new_token()
        await self.state.put_token(token, TokenRecord(request.id, "session", "", chat_id, user.id), now)
        count = len(session.steps)
        head = texts.answering(texts.mention(user.id, user.full_name), request, count)
        try:
            header = await self.out.send(chat_id, head, InlineKeyboardMarkup([[kb.cancel_button(token)]]))
        except SendError as exc:
            log.warning("Telegram: could not start answering in %s: %s", chat_id, exc.message)
            return
        await self.state.add_extra(request.id, chat_id, header.message_id, now)
        await self.ask(session, request, user)

    async def ask(self, session: Session, request: Request, user: User | None = None) -> None:
        """Send the current step's message and remember it."""
        now = self.desk.now()
        question, field = step_of(request, session)
        token = kb.new_token()
        record = TokenRecord(request.id, "step", question.id, session.chat_id, session.user_id, session.index)
        await self.state.put_token(token, record, now)
        text = step_text(request, question, field, session.index + 1, len(session.steps))
        buttons = step_buttons(question, field, token, set(session.selected))
        markup: InlineKeyboardMarkup | ForceReply
        if buttons is None:  # typed: in a group, mention the person so only they get the reply box
            group = session.chat_id < 0
            if group:
                text = texts.for_whom(session.user_id, user.full_name if user else None, text)
            markup = kb.force_reply(field.label or field.name if field else question.prompt, selective=group)
        else:
            markup = buttons
        message = await self.out.send(session.chat_id, text, markup)
        session.token, session.prompt_id = token, message.message_id
        if buttons is None:
            secret = question.kind is QuestionKind.secret
            await self.state.put_prompt(session.chat_id, message.message_id,
                                        Prompt(request.id, question.id, "step", secret, session.user_id), now)
        await self.state.add_extra(request.id, session.chat_id, message.message_id, now)
        await self.state.put_session(session, now)

    async def button(self, query: CallbackQuery, request: Request, record: TokenRecord,
                     action: kb.CallbackAction, responder: Responder) -> None:
        answer = self.out.toast
        chat_id, user_id = record.chat_id, query.from_user.id
        session = await self.state.session(chat_id, user_id, self.desk.now())
        if user_id != record.user_id:
            await answer(query, "This is someone else's answer in progress.", alert=True)
            return
        if action.action == kb.CANCEL:
            await answer(query, "Cancelled.")
            await self.cancel(chat_id, user_id)
            return
        if session is None or session.request_id != request.id or record.purpose != "step" \
                or session.index != record.step:
            await answer(query, "This step is over.", alert=True)
            return
        question, field = step_of(request, session)
        options = field.options if field is not None else question.options
        kind = question.kind
        value: Any
        if action.action in (kb.APPROVE, kb.REJECT) and field is None and kind is QuestionKind.confirm:
            value = "yes" if action.action == kb.APPROVE else "no"
        elif action.action == "o" and 0 <= action.index < len(options) and (field or kind is QuestionKind.choice):
            value = options[action.index]
        elif action.action == "t" and field is None and kind is QuestionKind.multi_choice \
                and 0 <= action.index < len(options):
            chosen = set(session.selected) ^ {action.index}
            session.selected = sorted(chosen)
            await self.state.put_session(session, self.desk.now())
            await self.out.edit_markup(chat_id, session.prompt_id, step_buttons(question, None, session.token,
                                                                                  chosen))
            await answer(query, f"{len(chosen)} selected")
            return
        elif action.action == kb.DONE and field is None and kind is QuestionKind.multi_choice:
            value = [o for i, o in enumerate(options) if i in session.selected]
        elif action.action == kb.SKIP and field is not None and not field.required:
            value = None
        else:
            log.warning("Telegram: refused step action %r", action.action)
            await answer(query, "This button is not valid.", alert=True)
            return
        await answer(query, "✔️")
        await self.accept(session, request, responder, value, query.from_user)

    async def typed(self, chat_id: int, prompt_id: int, prompt: Prompt, request: Request,
                    responder: Responder, text: str) -> None:
        session = await self.state.session(chat_id, int(responder.user_id), self.desk.now())
        if session is None or session.request_id != request.id or session.prompt_id != prompt_id:
            await self.out.say(chat_id, "This step is over.")
            return
        question, field = step_of(request, session)
        optional = (field is not None and not field.required) or (field is None and not question.required)
        value: Any = text
        if optional and text.strip() == "-":
            value = None
        elif field is None:
            try:
                value = question.validate_answer(text)
            except InvalidAnswer as exc:
                await self.out.say(chat_id, f"Not accepted: {esc(exc.reason)}. Try again.")
                return
        await self.state.drop_prompt(chat_id, prompt_id, self.desk.now())
        if prompt.secret:
            await self.out.say(chat_id, "🔒 Secret received.")
        await self.accept(session, request, responder, value, None)

    async def accept(self, session: Session, request: Request, responder: Responder, value: Any,
                     user: User | None) -> None:
        """Keep one step's value, then ask the next step or record the answer."""
        question, field = step_of(request, session)
        await self.out.edit_markup(session.chat_id, session.prompt_id, None)
        key = (session.chat_id, session.user_id)
        if question.kind is QuestionKind.secret:
            self._secrets.setdefault(key, {})[question.id] = value
        elif field is not None:
            form = session.values.setdefault(question.id, {})
            if value is not None:
                form[field.name] = value
        elif value is not None:
            session.values[question.id] = value
        session.index += 1
        session.selected = []
        if session.index < len(session.steps):
            await self.ask(session, request, user)
            return
        secrets = self._secrets.get(key, {})
        missing = [i for i, (qid, _) in enumerate(session.steps)
                   if qid in request.secret_question_ids and qid not in secrets]
        if missing:  # the daemon restarted mid-session: secrets were only in memory
            session.index = missing[0]
            await self.ask(session, request, user)
            return
        values = {**session.values, **secrets}
        await self.drop(session)
        text = await self.recorder.record(None, request, responder, values)
        await self.out.say(session.chat_id, text)

    async def cancel(self, chat_id: int, user_id: int, *, quiet: bool = False) -> None:
        session = await self.state.session(chat_id, user_id, self.desk.now())
        if session is None:
            if not quiet:
                await self.out.say(chat_id, "Nothing to cancel.")
            return
        await self.out.edit_markup(chat_id, session.prompt_id, None)
        await self.drop(session)
        if not quiet:
            await self.out.say(chat_id, "Cancelled; nothing was answered. The request is still open.")

    async def drop(self, session: Session) -> None:
        self._secrets.pop((session.chat_id, session.user_id), None)
        await self.state.drop_session(session.chat_id, session.user_id)
        if session.prompt_id:
            await self.state.drop_prompt(session.chat_id, session.prompt_id, self.desk.now())
