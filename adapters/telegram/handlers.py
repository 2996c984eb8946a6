"""What people do in Telegram → `BridgeAPI.answer`. Registered as python-telegram-bot
handlers; every callback query is answered (a short alert when refused), every refusal of
a person outside `responders` is recorded, and no update crashes the channel.

Callback data and deep-link tokens are checked against the stored token: the request,
the question, the chat they were posted to, and the action the question allows.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from telegram import CallbackQuery, Update, User
from telegram.constants import ChatType
from telegram.error import TelegramError
from telegram.ext import Application, CallbackQueryHandler, CommandHandler, ContextTypes, MessageHandler, filters

from adapters.telegram import keyboards as kb
from adapters.telegram.pending import PendingList
from adapters.telegram.render import esc
from adapters.telegram.sessions import Sessions, mention
from adapters.telegram.state import PendingReason, Prompt, TokenRecord
from bridge.durations import format_duration
from bridge.errors import AlreadyClosed, BridgeError, NotAllowed, SelfApproval
from bridge.models import QuestionKind, Request, Responder
from bridge.outcome import closed_error

if TYPE_CHECKING:
    from adapters.telegram.channel import TelegramChannel

log = logging.getLogger(__name__)
Context = ContextTypes.DEFAULT_TYPE


def responder_of(user: User) -> Responder:
    return Responder(platform="telegram", user_id=str(user.id), name=user.full_name or user.username or "")


def closed_note(request: Request) -> str:
    """`Already answered by Ann at …` (the core's wording) for a request that is not open."""
    text = str(closed_error(request))
    return f"{text[:1].upper()}{text[1:]}."


class Interactions:
    """Callback queries, replies, plain messages, /start deep links, /cancel."""

    def __init__(self, channel: TelegramChannel) -> None:
        self.channel = channel
        self.state = channel.state
        self.sessions = Sessions(channel)
        self.pending = PendingList(channel)

    def register(self, app: Application[Any, Any, Any, Any, Any, Any]) -> None:
        app.add_handler(CallbackQueryHandler(self.on_callback))
        app.add_handler(CommandHandler("start", self.on_start, filters=filters.UpdateType.MESSAGE))
        app.add_handler(CommandHandler("cancel", self.on_cancel, filters=filters.UpdateType.MESSAGE))
        app.add_handler(CommandHandler("pending", self.on_pending, filters=filters.UpdateType.MESSAGE))
        app.add_handler(MessageHandler(filters.UpdateType.EDITED_MESSAGE, self.on_edited))
        app.add_handler(MessageHandler(filters.UpdateType.MESSAGE, self.on_message))
        app.add_error_handler(self.on_error)

    async def on_error(self, update: object, context: Context) -> None:
        error = context.error or RuntimeError("unknown")
        log.error("Telegram: handling an update failed: %s", type(error).__name__,
                  exc_info=(type(error), error, error.__traceback__))
        self.channel.failed(update, error)

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
            await self.answer(query, "This button is not valid.", alert=True)
            return
        now = self.channel.now()
        record = await self.state.token(action.token, now)
        chat_id = query.message.chat.id if query.message else 0
        if record is None or record.purpose == "private" or (record.chat_id and record.chat_id != chat_id):
            log.warning("Telegram: refused callback with an unknown token from user %s", user.id)
            await self.answer(query, "This button is not valid (any more).", alert=True)
            return
        # a plain button answer can use the request as posted: the core re-checks that it is
        # still open when recording (one store read less on the hot path)
        direct = record.purpose == "q" and action.action in (kb.APPROVE, "o")
        request = self.channel.posted(record.request_id) if direct else None
        if request is None:
            request = await self.channel.bridge.get(record.request_id)
        if request is None:
            await self.answer(query, "This request no longer exists.", alert=True)
            return
        if not request.is_open:
            await self.answer(query, closed_note(request), alert=True)
            return
        responder = responder_of(user)
        if not await self.allowed(request, responder, action=action.action):
            await self.answer(query, "You are not allowed to answer this request.", alert=True)
            return
        if record.purpose == "q":
            await self.on_question_button(query, request, record, action, responder)
        elif record.purpose == "start" and action.action == kb.START:
            await self.answer(query, "Answering below.")
            await self.sessions.start(chat_id, user, request)
        elif record.purpose in ("step", "session"):
            await self.sessions.button(query, request, record, action, responder)
        elif record.purpose == "show" and action.action == kb.SHOW:
            await self.pending.show(query, request, chat_id)
        else:
            await self.answer(query, "This button is not valid.", alert=True)

    async def on_question_button(self, query: CallbackQuery, request: Request, record: TokenRecord,
                                 action: kb.CallbackAction, responder: Responder) -> None:
        question = request.question(record.question_id)
        kind = question.kind if question else None
        user_id = query.from_user.id
        if question is None:
            await self.answer(query, "This button is not valid.", alert=True)
        elif kind is QuestionKind.confirm and action.action == kb.APPROVE:
            await self.record(query, request, responder, {question.id: "yes"})
        elif kind is QuestionKind.confirm and action.action == kb.REJECT:
            if await self.state.reason(record_token(query), user_id, self.channel.now()) is not None:
                await self.state.drop_reason(record_token(query), user_id)
                await self.record(query, request, responder, {question.id: "no"})
            else:
                await self.ask_reason(query, request, question.id)
        elif kind is QuestionKind.choice and action.action == "o" and 0 <= action.index < len(question.options):
            await self.record(query, request, responder, {question.id: question.options[action.index]})
        elif kind is QuestionKind.multi_choice and action.action == "t" and 0 <= action.index < len(question.options):
            await self.toggle(query, request, record, action.index)
        elif kind is QuestionKind.multi_choice and action.action == kb.DONE:
            assert query.message is not None
            chosen = await self.state.selection(query.message.chat.id, query.message.message_id, self.channel.now())
            values = [o for i, o in enumerate(question.options) if i in chosen]
            await self.record(query, request, responder, {question.id: values})
        else:
            log.warning("Telegram: refused callback action %r for a %s question", action.action, kind)
            await self.answer(query, "This button is not valid.", alert=True)

    async def toggle(self, query: CallbackQuery, request: Request, record: TokenRecord, index: int) -> None:
        message = query.message
        assert message is not None
        now = self.channel.now()
        chosen = await self.state.selection(message.chat.id, message.message_id, now)
        chosen ^= {index}
        await self.state.put_selection(message.chat.id, message.message_id, chosen, now)
        question = request.question(record.question_id)
        assert question is not None
        await self.channel.edit_markup(message.chat.id, message.message_id,
                                       kb.multi_keyboard(record_token(query), question.options, chosen))
        await self.answer(query, f"{len(chosen)} selected")

    async def ask_reason(self, query: CallbackQuery, request: Request, question_id: str) -> None:
        message = query.message
        assert message is not None
        user = query.from_user
        wait = self.channel.settings.reason_wait
        text = (f"{mention(user)}, why reject <b>{esc(request.title)}</b>? Reply to this message with a "
                "reason, or press ❌ Reject again to reject without one.")
        if wait is not None:
            text += f" With no reply within {format_duration(wait)}, it is rejected without one."
        try:
            prompt = await self.channel.send(message.chat.id, text, kb.force_reply("Reason for rejecting"),
                                             reply_to=message.message_id)
        except TelegramError:
            # cannot ask: reject without a reason rather than lose the click
            await self.record(query, request, responder_of(user), {question_id: "no"})
            return
        now = self.channel.now()
        token = record_token(query)
        await self.state.put_prompt(message.chat.id, prompt.message_id,
                                    Prompt(request.id, question_id, "reason", user_id=user.id, token=token), now)
        responder = responder_of(user)
        await self.state.put_reason(token, PendingReason(
            message_id=prompt.message_id, chat_id=message.chat.id, request_id=request.id,
            question_id=question_id, user_id=user.id, name=responder.name,
            due=(now + wait).isoformat() if wait is not None else ""), now)
        await self.state.add_extra(request.id, message.chat.id, prompt.message_id, now)
        await self.answer(query, "Reply with a reason, or press Reject again.")

    async def reject_unexplained(self) -> int:
        """Rejects whose reason did not come within `reason_wait` are recorded without one:
        the person said no, and the run should not wait for the deadline to learn it."""
        now = self.channel.now()
        recorded = 0
        for token, pending in await self.state.due_reasons(now):
            if not await self.state.drop_reason(token, pending.user_id):
                continue  # a reply, a second Reject or another replica got there first
            request = await self.channel.bridge.get(pending.request_id)
            if request is None or not request.is_open:
                continue
            responder = Responder(platform="telegram", user_id=str(pending.user_id), name=pending.name)
            try:
                text = await self.record(None, request, responder, {pending.question_id: "no"})
            except Exception:  # the store failed: keep the Reject pending for the next round
                await self.state.put_reason(token, pending, now)
                raise
            if text.startswith(("✅", "Vote")):
                recorded += 1
                text = f"No reason came in time: {esc(request.title)} is rejected without one."
            await self.say(pending.chat_id, text)
        return recorded

    async def record(self, query: CallbackQuery | None, request: Request, responder: Responder,
                     values: dict[str, Any], reason: str | None = None) -> str:
        """Record an answer; tell the person (toast for a button, returned text otherwise)."""
        try:
            updated = await self.channel.bridge.answer(request.id, responder, values, via="telegram", reason=reason)
        except AlreadyClosed as exc:
            text = f"Not recorded: {exc}."
        except SelfApproval as exc:
            text = f"Not recorded: {exc}."
        except NotAllowed:
            text = "You are not allowed to answer this request."
        except BridgeError as exc:
            text = f"Not recorded: {exc}"
        else:
            text = "Vote recorded; waiting for more approvals." if updated.is_open else "✅ Answer recorded."
            if query is not None:
                await self.answer(query, text)
            return text
        if query is not None:
            await self.answer(query, text, alert=True)
        return text

    async def allowed(self, request: Request, responder: Responder, **data: Any) -> bool:
        if await self.channel.bridge.is_allowed(request, responder, via="telegram"):
            return True
        log.info("Telegram: refused %s for request %s (not a responder)", responder.key, request.id)
        await self.channel.bridge.note(request.id, "refused", responder.key, {
            "name": responder.name, "via": "telegram", "reason": "not in responders", **data})
        return False

    async def answer(self, query: CallbackQuery, text: str, *, alert: bool = False) -> None:
        """answerCallbackQuery, never failing the update (an old query cannot be answered)."""
        try:
            await self.channel.call("answerCallbackQuery", lambda: query.answer(text[:200], show_alert=alert))
        except TelegramError as exc:
            log.info("Telegram: could not answer callback query: %s", exc.message)

    # messages ----------------------------------------------------------------------------
    async def on_message(self, update: Update, context: Context) -> None:
        message = update.message
        if message is None or message.from_user is None or message.from_user.is_bot:
            return
        chat, user = message.chat, message.from_user
        private = chat.type == ChatType.PRIVATE
        async with self.channel.chat_lock(chat.id):  # wait for a post in flight to this chat
            now = self.channel.now()
        prompt_id = 0
        reply = message.reply_to_message
        if reply is not None and reply.from_user is not None and reply.from_user.id == self.channel.bot.id:
            prompt_id = reply.message_id if await self.state.prompt(chat.id, reply.message_id, now) else 0
        if not prompt_id and private:
            open_ids = await self.open_prompts(chat.id)
            if len(open_ids) == 1:
                prompt_id = open_ids[0]
            elif open_ids:
                await self.say(chat.id, "Several questions are open here: reply to the one you mean "
                                        "(swipe left on it).")
                return
        if not prompt_id:
            if private:
                await self.say(chat.id, "Nothing here is waiting for an answer.")
            return  # groups: people talk to each other; only replies to the bot are read
        prompt = await self.state.prompt(chat.id, prompt_id, now)
        assert prompt is not None
        if prompt.secret:
            await self.delete(chat.id, message.message_id)
            if not private:
                await self.say(chat.id, "Secrets are only read in a private chat with the bot.")
                return
        if message.text is None:
            await self.say(chat.id, "Please answer with a text message.")
            return
        if prompt.user_id and prompt.user_id != user.id:
            await self.say(chat.id, "This question waits for someone else's answer.")
            return
        request = await self.channel.bridge.get(prompt.request_id)
        if request is None or not request.is_open:
            await self.state.drop_prompt(chat.id, prompt_id, now)
            await self.say(chat.id, closed_note(request) if request else "This request no longer exists.")
            return
        responder = responder_of(user)
        if not await self.allowed(request, responder, kind=prompt.kind):
            await self.say(chat.id, "You are not allowed to answer this request.")
            return
        if prompt.kind == "step":
            await self.sessions.typed(chat.id, prompt_id, prompt, request, responder, message.text)
            return
        if prompt.kind == "reason":
            text = await self.record(None, request, responder, {prompt.question_id: "no"}, reason=message.text)
            await self.state.drop_reason(prompt.token, user.id)
        else:
            text = await self.record(None, request, responder, {prompt.question_id: message.text})
        recorded = text.startswith(("✅", "Vote"))
        if recorded:
            await self.state.drop_prompt(chat.id, prompt_id, now)
        if prompt.secret:
            text = "🔒 Secret received." if recorded else text
        await self.say(chat.id, text)

    async def open_prompts(self, chat_id: int) -> list[int]:
        """Prompts in this chat whose request is still open (closed ones are forgotten)."""
        now = self.channel.now()
        alive = []
        for message_id in await self.state.open_prompt_ids(chat_id, now):
            prompt = await self.state.prompt(chat_id, message_id, now)
            request = await self.channel.bridge.get(prompt.request_id) if prompt else None
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
            await self.say(message.chat.id, f"Hi {esc(user.first_name)}! Requests for you will appear here. "
                           f"Your Telegram id is <code>{user.id}</code> (use <code>telegram:{user.id}</code> "
                           "in the bridge's routes and responders). /pending lists what waits for an answer here.")
            return
        record = await self.state.token(payload, self.channel.now()) if len(payload) == kb.TOKEN_LENGTH else None
        if record is None or record.purpose != "private":
            log.warning("Telegram: refused a /start link with an unknown token from user %s", user.id)
            await self.say(message.chat.id, "This link is not valid (any more).")
            return
        request = await self.channel.bridge.get(record.request_id)
        if request is None or not request.is_open:
            await self.say(message.chat.id, closed_note(request) if request else "This request no longer exists.")
            return
        if not await self.allowed(request, responder_of(user), kind="deep_link"):
            await self.say(message.chat.id, "You are not allowed to answer this request.")
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
            await self.say(message.chat.id, "Edits are not read: send a new message instead.")

    async def say(self, chat_id: int, text: str) -> None:
        try:
            await self.channel.send(chat_id, text, None)
        except TelegramError as exc:
            log.info("Telegram: could not send a note to %s: %s", chat_id, exc.message)

    async def delete(self, chat_id: int, message_id: int) -> None:
        try:
            await self.channel.call("deleteMessage", lambda: self.channel.bot.delete_message(chat_id, message_id))
        except TelegramError as exc:
            log.warning("Telegram: could not delete a secret message in %s: %s", chat_id, exc.message)


def record_token(query: CallbackQuery) -> str:
    return kb.parse_callback(query.data).token
