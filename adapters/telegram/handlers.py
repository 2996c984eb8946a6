"""What people do in Telegram → `BridgeAPI.answer`. Registered as python-telegram-bot
handlers; every callback query is answered (a short alert when refused), every refusal of
a person outside `responders` is recorded, and no update crashes the channel.

Callback data and deep-link tokens are checked against the stored token: the request,
the question, the chat they were posted to, and the action the question allows.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from telegram import CallbackQuery, Update
from telegram.constants import ChatType
from telegram.ext import Application, CallbackQueryHandler, CommandHandler, ContextTypes, MessageHandler, filters

from adapters.telegram import keyboards as kb
from adapters.telegram import texts
from adapters.telegram.answers import Recorder, responder_of
from adapters.telegram.pending import PendingList
from adapters.telegram.sender import SendError
from adapters.telegram.sessions import Sessions
from adapters.telegram.state import PendingReason, Prompt, TokenRecord
from bridge.models import Request, Responder
from bridge.outcome import closed_error
from bridge.policy.pressed import GrantRefused, approving_values, granted_words, offer_for_key
from bridge.questions import QuestionKind

if TYPE_CHECKING:
    from adapters.telegram.desk import Desk

log = logging.getLogger(__name__)
Context = ContextTypes.DEFAULT_TYPE


def closed_note(request: Request) -> str:
    """`Already answered by Ann at …` (the core's wording) for a request that is not open."""
    text = str(closed_error(request))
    return f"{text[:1].upper()}{text[1:]}."


class Interactions:
    """Callback queries, replies, plain messages, /start deep links, /cancel."""

    def __init__(self, desk: Desk) -> None:
        self.desk = desk
        self.state = desk.state
        self.out = desk.outbox
        self.recorder = Recorder(desk)
        self.sessions = Sessions(desk, self.recorder)
        self.pending = PendingList(desk)

    def register(self, app: Application[Any, Any, Any, Any, Any, Any]) -> None:
        app.add_handler(CallbackQueryHandler(self.on_callback))
        app.add_handler(CommandHandler("start", self.on_start, filters=filters.UpdateType.MESSAGE))
        app.add_handler(CommandHandler("cancel", self.on_cancel, filters=filters.UpdateType.MESSAGE))
        app.add_handler(CommandHandler("pending", self.on_pending, filters=filters.UpdateType.MESSAGE))
        app.add_handler(MessageHandler(filters.UpdateType.EDITED_MESSAGE, self.on_edited))
        app.add_handler(MessageHandler(filters.UpdateType.MESSAGE, self.on_message))

    # buttons ---------------------------------------------------------------------------
    async def on_callback(self, update: Update, context: Context) -> None:
        query = update.callback_query
        if query is None:
            return
        user = query.from_user
        try:
            action = kb.parse_callback(query.data)
        except kb.ForgedCallback as exc:
            log.warning("Telegram: refused callback from user %s: %s", user.id, exc)
            await self.out.toast(query, "This button is not valid.", alert=True)
            return
        now = self.desk.now()
        record = await self.state.token(action.token, now)
        chat_id = query.message.chat.id if query.message else 0
        if record is None or record.purpose == "private" or (record.chat_id and record.chat_id != chat_id):
            log.warning("Telegram: refused callback with an unknown token from user %s", user.id)
            await self.out.toast(query, "This button is not valid (any more).", alert=True)
            return
        # a plain button answer can use the request as posted: the core re-checks that it is
        # still open when recording (one store read less on the hot path)
        direct = record.purpose == "q" and action.action in (kb.APPROVE, "o")
        request = self.desk.posted(record.request_id) if direct else None
        if request is None:
            request = await self.desk.bridge.get(record.request_id)
        if request is None:
            await self.out.toast(query, "This request no longer exists.", alert=True)
            return
        if not request.is_open:
            await self.out.toast(query, closed_note(request), alert=True)
            return
        responder = responder_of(user)
        if not await self.recorder.allowed(request, responder, action=action.action):
            await self.out.toast(query, "You are not allowed to answer this request.", alert=True)
            return
        if record.purpose == "q":
            await self.on_question_button(query, request, record, action, responder)
        elif record.purpose == "start" and action.action == kb.START:
            await self.out.toast(query, "Answering below.")
            await self.sessions.start(chat_id, user, request)
        elif record.purpose in ("step", "session"):
            await self.sessions.button(query, request, record, action, responder)
        elif record.purpose == "show" and action.action == kb.SHOW:
            await self.pending.show(query, request, chat_id)
        else:
            await self.out.toast(query, "This button is not valid.", alert=True)

    async def on_question_button(self, query: CallbackQuery, request: Request, record: TokenRecord,
                                 action: kb.CallbackAction, responder: Responder) -> None:
        question = request.question(record.question_id)
        kind = question.kind if question else None
        user_id = query.from_user.id
        if question is None:
            await self.out.toast(query, "This button is not valid.", alert=True)
        elif kind is QuestionKind.confirm and action.action == kb.APPROVE:
            await self.recorder.record(query, request, responder, {question.id: "yes"})
        elif kind is QuestionKind.confirm and action.action == kb.REJECT:
            if await self.state.reason(record_token(query), user_id, self.desk.now()) is not None:
                await self.state.drop_reason(record_token(query), user_id)
                await self.recorder.record(query, request, responder, {question.id: "no"})
            else:
                await self.ask_reason(query, request, question.id)
        elif kind is QuestionKind.confirm and action.action == kb.GRANT:
            await self.grant(query, request, action.grant, responder)
        elif kind is QuestionKind.choice and action.action == "o" and 0 <= action.index < len(question.options):
            await self.recorder.record(query, request, responder, {question.id: question.options[action.index]})
        elif kind is QuestionKind.multi_choice and action.action == "t" and 0 <= action.index < len(question.options):
            await self.toggle(query, request, record, action.index)
        elif kind is QuestionKind.multi_choice and action.action == kb.DONE:
            assert query.message is not None
            chosen = await self.state.selection(query.message.chat.id, query.message.message_id, self.desk.now())
            values = [o for i, o in enumerate(question.options) if i in chosen]
            await self.recorder.record(query, request, responder, {question.id: values})
        else:
            log.warning("Telegram: refused callback action %r for a %s question", action.action, kind)
            await self.out.toast(query, "This button is not valid.", alert=True)

    async def grant(self, query: CallbackQuery, request: Request, key: str, responder: Responder) -> None:
        """A standing-approval button: Approve with the grant it names. "Always allow this"
        saves the offer's default pattern (the tool) and says so: it is narrowed or revoked
        on the inbox's Standing approvals page."""
        try:
            offer = offer_for_key(self.desk.bridge.grant_offers(request), key)
            values = approving_values(request)
        except GrantRefused as exc:
            log.warning("Telegram: refused grant button %r for request %s", key[:20], request.id)
            await self.out.toast(query, str(exc), alert=True)
            return
        said = granted_words(offer.choice.scope, offer.choice.span_s)
        pattern = f" ({offer.pattern})" if offer.pattern else ""
        await self.recorder.record(query, request, responder, values, grant=offer.choice,
                                   recorded=f"✅ {said}{pattern}."[:190])

    async def toggle(self, query: CallbackQuery, request: Request, record: TokenRecord, index: int) -> None:
        message = query.message
        assert message is not None
        now = self.desk.now()
        chosen = await self.state.selection(message.chat.id, message.message_id, now)
        chosen ^= {index}
        await self.state.put_selection(message.chat.id, message.message_id, chosen, now)
        question = request.question(record.question_id)
        assert question is not None
        await self.out.edit_markup(message.chat.id, message.message_id,
                                       kb.multi_keyboard(record_token(query), question.options, chosen))
        await self.out.toast(query, f"{len(chosen)} selected")

    async def ask_reason(self, query: CallbackQuery, request: Request, question_id: str) -> None:
        message = query.message
        assert message is not None
        user = query.from_user
        wait = self.desk.reason_wait
        text = texts.why_reject(texts.mention(user.id, user.full_name), request, wait)
        try:
            prompt = await self.out.send(message.chat.id, text, kb.force_reply("Reason for rejecting"),
                                         reply_to=message.message_id)
        except SendError:
            # cannot ask: reject without a reason rather than lose the click
            await self.recorder.record(query, request, responder_of(user), {question_id: "no"})
            return
        now = self.desk.now()
        token = record_token(query)
        await self.state.put_prompt(message.chat.id, prompt.message_id,
                                    Prompt(request.id, question_id, "reason", user_id=user.id, token=token), now)
        responder = responder_of(user)
        await self.state.put_reason(token, PendingReason(
            message_id=prompt.message_id, chat_id=message.chat.id, request_id=request.id,
            question_id=question_id, user_id=user.id, name=responder.name,
            due=(now + wait).isoformat() if wait is not None else ""), now)
        await self.state.add_extra(request.id, message.chat.id, prompt.message_id, now)
        await self.out.toast(query, "Reply with a reason, or press Reject again.")

    async def reject_unexplained(self) -> int:
        """Rejects whose reason did not come within `reason_wait` are recorded without one:
        the person said no, and the run should not wait for the deadline to learn it."""
        now = self.desk.now()
        recorded = 0
        for token, pending in await self.state.due_reasons(now):
            if not await self.state.drop_reason(token, pending.user_id):
                continue  # a reply, a second Reject or another replica got there first
            request = await self.desk.bridge.get(pending.request_id)
            if request is None or not request.is_open:
                continue
            responder = Responder(platform="telegram", user_id=str(pending.user_id), name=pending.name)
            try:
                text = await self.recorder.record(None, request, responder, {pending.question_id: "no"})
            except Exception:  # the store failed: keep the Reject pending for the next round
                await self.state.put_reason(token, pending, now)
                raise
            if text.startswith(("✅", "Vote")):
                recorded += 1
                text = texts.rejected_without_reason(request)
            await self.out.say(pending.chat_id, text)
        return recorded

    # messages ----------------------------------------------------------------------------
    async def on_message(self, update: Update, context: Context) -> None:
        message = update.message
        if message is None or message.from_user is None or message.from_user.is_bot:
            return
        chat, user = message.chat, message.from_user
        private = chat.type == ChatType.PRIVATE
        async with self.desk.chat_lock(chat.id):  # wait for a post in flight to this chat
            now = self.desk.now()
        prompt_id = 0
        reply = message.reply_to_message
        if reply is not None and reply.from_user is not None and reply.from_user.id == self.desk.bot_id:
            prompt_id = reply.message_id if await self.state.prompt(chat.id, reply.message_id, now) else 0
        if not prompt_id and private:
            open_ids = await self.open_prompts(chat.id)
            if len(open_ids) == 1:
                prompt_id = open_ids[0]
            elif open_ids:
                await self.out.say(chat.id, "Several questions are open here: reply to the one you mean "
                                        "(swipe left on it).")
                return
        if not prompt_id:
            if private:
                await self.out.say(chat.id, "Nothing here is waiting for an answer.")
            return  # groups: people talk to each other; only replies to the bot are read
        prompt = await self.state.prompt(chat.id, prompt_id, now)
        assert prompt is not None
        if prompt.secret:
            await self.out.delete(chat.id, message.message_id)
            if not private:
                await self.out.say(chat.id, "Secrets are only read in a private chat with the bot.")
                return
        if message.text is None:
            await self.out.say(chat.id, "Please answer with a text message.")
            return
        if prompt.user_id and prompt.user_id != user.id:
            await self.out.say(chat.id, "This question waits for someone else's answer.")
            return
        request = await self.desk.bridge.get(prompt.request_id)
        if request is None or not request.is_open:
            await self.state.drop_prompt(chat.id, prompt_id, now)
            await self.out.say(chat.id, closed_note(request) if request else "This request no longer exists.")
            return
        responder = responder_of(user)
        if not await self.recorder.allowed(request, responder, kind=prompt.kind):
            await self.out.say(chat.id, "You are not allowed to answer this request.")
            return
        if prompt.kind == "step":
            await self.sessions.typed(chat.id, prompt_id, prompt, request, responder, message.text)
            return
        if prompt.kind == "reason":
            text = await self.recorder.record(None, request, responder, {prompt.question_id: "no"}, reason=message.text)
            await self.state.drop_reason(prompt.token, user.id)
        else:
            text = await self.recorder.record(None, request, responder, {prompt.question_id: message.text})
        recorded = text.startswith(("✅", "Vote"))
        if recorded:
            await self.state.drop_prompt(chat.id, prompt_id, now)
        if prompt.secret:
            text = "🔒 Secret received." if recorded else text
        await self.out.say(chat.id, text)

    async def open_prompts(self, chat_id: int) -> list[int]:
        """Prompts in this chat whose request is still open (closed ones are forgotten)."""
        now = self.desk.now()
        alive = []
        for message_id in await self.state.open_prompt_ids(chat_id, now):
            prompt = await self.state.prompt(chat_id, message_id, now)
            request = await self.desk.bridge.get(prompt.request_id) if prompt else None
            if prompt is None or request is None or not request.is_open:
                await self.state.drop_prompt(chat_id, message_id, now)
            else:
                alive.append(message_id)
        return alive

    async def on_start(self, update: Update, context: Context) -> None:
        message = update.message
        if message is None or message.from_user is None or message.chat.type != ChatType.PRIVATE:
            return
        user = message.from_user
        payload = context.args[0] if context.args else ""
        if not payload:
            await self.out.say(message.chat.id, texts.greeting(user.first_name, user.id))
            return
        record = await self.state.token(payload, self.desk.now()) if len(payload) == kb.TOKEN_LENGTH else None
        if record is None or record.purpose != "private":
            log.warning("Telegram: refused a /start link with an unknown token from user %s", user.id)
            await self.out.say(message.chat.id, "This link is not valid (any more).")
            return
        request = await self.desk.bridge.get(record.request_id)
        if request is None or not request.is_open:
            await self.out.say(message.chat.id, closed_note(request) if request else "This request no longer exists.")
            return
        if not await self.recorder.allowed(request, responder_of(user), kind="deep_link"):
            await self.out.say(message.chat.id, "You are not allowed to answer this request.")
            return
        await self.sessions.start(message.chat.id, user, request)

    async def on_pending(self, update: Update, context: Context) -> None:
        message = update.message
        if message is not None and message.from_user is not None and not message.from_user.is_bot:
            await self.pending.reply(message.chat.id, message.from_user.id)

    async def on_cancel(self, update: Update, context: Context) -> None:
        message = update.message
        if message is not None and message.from_user is not None:
            await self.sessions.cancel(message.chat.id, message.from_user.id)

    async def on_edited(self, update: Update, context: Context) -> None:
        message = update.edited_message
        if message is not None and message.chat.type == ChatType.PRIVATE:
            log.debug("Telegram: ignored an edited message in chat %s", message.chat.id)
            await self.out.say(message.chat.id, "Edits are not read: send a new message instead.")


def record_token(query: CallbackQuery) -> str:
    return kb.parse_callback(query.data).token
