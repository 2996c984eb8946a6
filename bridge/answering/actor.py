"""Who acts on a request, typed: the answer path decides by an actor's kind, not by the
name of the channel it came through."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from bridge.models import Answer, Responder
from bridge.specs import channel_spec


class ActorKind(StrEnum):
    """How the bridge knows who acts."""

    #: someone on a channel (a chat, an email link): the channel vouches for
    #: the handle, and the request's `responders` decide whether it may answer
    person = "person"
    #: a caller the daemon authenticated itself (an API token, the local CLI, the web inbox
    #: login): trusted to answer any request it may reach
    api = "api"
    #: an API token that acts for others (`act_for_others`), answering in a person's name
    relay = "relay"
    #: the route's `on_timeout` answer, given when the last deadline passed
    timeout = "timeout"
    #: a rule of `policies:` (`policy:<rule>`): the operator's own decision, written in the config
    policy = "policy"
    #: a standing approval a person granted (`grant:<id>`): admitted only where its grantor
    #: would be (bridge.answering.automatic)
    grant = "grant"


#: the core's own ways in whose callers the daemon authenticated (the `via` of their answers);
#: a channel adds itself through its spec (`daemon_authenticated`)
AUTHENTICATED_VIAS = frozenset({"api", "cli"})
TIMEOUT_VIA = "timeout"
#: the `via` of automatic answers (a rule's, a grant's)
AUTOMATIC_VIAS = frozenset({"policy", "grant"})


@dataclass(frozen=True)
class Actor:
    """`responder` acting through the channel `via` (recorded with the answer), of `kind`."""

    responder: Responder
    via: str
    kind: ActorKind
    #: what made an automatic decision (the rule, the grant), kept with its answer's event
    detail: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, responder: Responder, via: str) -> Actor:
        """The actor behind an answer that came through `via` (a channel's name)."""
        if via == TIMEOUT_VIA:
            kind = ActorKind.timeout
        elif via in AUTHENTICATED_VIAS or _daemon_authenticated(via):
            kind = ActorKind.relay if responder.relayed_by else ActorKind.api
        else:
            kind = ActorKind.person
        return cls(responder, via, kind)

    @classmethod
    def on_timeout(cls) -> Actor:
        return cls(Responder(platform="timeout", user_id="timeout", name="timeout"), TIMEOUT_VIA, ActorKind.timeout)

    @classmethod
    def automatic(cls, kind: ActorKind, name: str, **detail: Any) -> Actor:
        """A rule (`kind` policy, `name` the rule's) or a grant (`kind` grant, `name` its id)."""
        return cls(Responder(platform=kind.value, user_id=name, name=f"{kind.value}:{name}"), kind.value, kind,
                   dict(detail))

    @property
    def is_automatic(self) -> bool:
        """A rule or a standing approval, not a person."""
        return self.kind in (ActorKind.policy, ActorKind.grant)

    @property
    def trusted(self) -> bool:
        """May answer without being named in the request's `responders`."""
        return self.kind is not ActorKind.person

    @property
    def is_timeout(self) -> bool:
        """The deadline, not a person: no four-eyes, shared-password or quorum rule applies."""
        return self.kind is ActorKind.timeout

    def as_(self, responder: Responder) -> Actor:
        """The same actor, known as `responder` (e.g. with the person its handle belongs to)."""
        return replace(self, responder=responder)


def decided_automatically(answer: Answer) -> bool:
    """`answer` was given by a rule or a standing approval, not a person."""
    return answer.via in AUTOMATIC_VIAS


def given_on_timeout(answer: Answer) -> bool:
    """`answer` is the route's `on_timeout` answer, not a person's."""
    return answer.via == TIMEOUT_VIA


def _daemon_authenticated(via: str) -> bool:
    spec = channel_spec(via)
    return spec is not None and spec.daemon_authenticated
