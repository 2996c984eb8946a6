""""Waiting for me" on a channel (`bridge.waiting`), the one read behind the Slack Home tab
and Telegram /pending: copies in this chat, or requests whose responders let this person
answer, the most urgent first. Runs against SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

from bridge.models import Post, Request, RequestState, Responder
from bridge.store import Store
from bridge.waiting import waiting_for
from tests.store.helpers import at, make_request

ANN = Responder(platform="telegram", user_id="42")


async def test_what_waits_here_and_what_names_me(store: Store) -> None:
    in_chat = make_request(created=1)  # names nobody: shown here because it was posted here
    named = make_request(created=2, responders=["telegram:42"], deadline=at(600))
    named_later = make_request(created=0, responders=["telegram:42"])  # the oldest, but no deadline
    someone_else = make_request(created=3, responders=["telegram:7"])
    never_posted = make_request(created=4, responders=["telegram:42"])
    answered = make_request(created=5, responders=["telegram:42"], state=RequestState.answered)
    for request in (in_chat, named, named_later, someone_else, never_posted, answered):
        await store.create_request(request)
    for request, target in ((in_chat, "telegram:-1001"), (named, "telegram:-5"), (named_later, "telegram:-5"),
                            (someone_else, "telegram:-5"), (answered, "telegram:42")):
        await store.add_post(Post(request_id=request.id, channel="telegram", target=target, at=at(6)))
    asked: list[str] = []

    async def is_allowed(request: Request, responder: Responder, *, via: str, **_: Any) -> bool:
        asked.append(request.id)
        assert responder == ANN and via == "telegram"
        return ANN.key in request.responders

    group = await waiting_for(store, is_allowed, ANN, channel="telegram", here=["telegram:-1001"], named=False)
    assert [r.id for r in group] == [in_chat.id] and asked == []  # a group chat: only what was posted there
    private = await waiting_for(store, is_allowed, ANN, channel="telegram", here=["telegram:42"])
    assert [r.id for r in private] == [named.id, named_later.id]  # the nearest deadline first
    assert never_posted.id not in asked and answered.id not in asked  # never posted, or closed: not looked at
    assert [r.id for r in await waiting_for(store, is_allowed, ANN, channel="slack", here=["telegram:42"])] == []
