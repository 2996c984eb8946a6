"""Identity: a handle answers as the person it belongs to (config `people:`)."""

from __future__ import annotations

from bridge.answering.desk import Attempt, Desk
from bridge.models import Responder
from bridge.people import People


def identified(people: People, responder: Responder) -> Responder:
    """`responder` with the person its handle belongs to (from `people:`), if any."""
    person = people.person_of(responder.key) if responder.platform != "person" else responder.user_id
    if person is None or responder.person == person:
        return responder
    return responder.model_copy(update={"person": person})


async def known_as_their_person(desk: Desk, attempt: Attempt) -> None:
    """From here on the actor is known as their person (votes and the record say who)."""
    attempt.actor = attempt.actor.as_(identified(desk.people, attempt.actor.responder))
