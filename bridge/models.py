"""The request model: what an engine asks, what people answer, and what the store keeps.

The questions themselves (kinds, answer checks) are bridge.questions; each of its names is
importable from here too."""

from __future__ import annotations

import secrets
import time
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal

from hitl_bridge_client.signing import BadSecret, check_secret
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from bridge.questions import ID_PATTERN as ID_PATTERN
from bridge.questions import MAX_CONTEXT_DEPTH as MAX_CONTEXT_DEPTH
from bridge.questions import MAX_TEXT as MAX_TEXT
from bridge.questions import FormField as FormField
from bridge.questions import InvalidAnswer as InvalidAnswer
from bridge.questions import Question as Question
from bridge.questions import QuestionKind as QuestionKind
from bridge.questions import _depth as _depth
from bridge.questions import fit_json as fit_json


class RequestState(StrEnum):
    pending = "pending"
    posted = "posted"
    answered = "answered"
    delivered = "delivered"
    expired = "expired"
    cancelled = "cancelled"
    failed = "failed"


OPEN_STATES = frozenset({RequestState.pending, RequestState.posted})
CLOSED_STATES = frozenset(set(RequestState) - OPEN_STATES)


class Callback(BaseModel):
    """Where the outcome is POSTed, signed with HMAC-SHA256 using `secret` (`signing`: the
    X-Hitl headers, or Standard Webhooks; unset: the source's `signing`)."""

    model_config = ConfigDict(extra="forbid")

    url: str = Field(pattern=r"^https?://", max_length=2000)
    secret: str = Field(min_length=16, max_length=256)
    signing: Literal["hitl", "standard"] | None = None

    @field_validator("secret")
    @classmethod
    def _whsec_is_base64(cls, secret: str) -> str:
        try:
            return check_secret(secret)  # a whsec_ secret is a base64 key whichever way it signs
        except BadSecret as exc:
            raise ValueError(str(exc)) from None


class RequestIn(BaseModel):
    """What an engine submits (the native model of DESIGN §3)."""

    model_config = ConfigDict(extra="forbid")

    external_id: str | None = Field(default=None, max_length=200)
    title: str = Field(min_length=1, max_length=500)
    description: str = Field(default="", max_length=MAX_TEXT)
    engine: str | None = Field(default=None, max_length=100)
    workspace: str | None = Field(default=None, max_length=1000)
    run_id: str | None = Field(default=None, max_length=200)
    agent: str | None = Field(default=None, max_length=500)
    tool: str | None = Field(default=None, max_length=200)
    context: dict[str, Any] = Field(default_factory=dict)
    labels: dict[str, str] = Field(default_factory=dict)
    questions: list[Question] = Field(min_length=1, max_length=50)
    responders: list[str] = Field(default_factory=list, max_length=200)
    #: who asked (a person's name from `people:`, or a handle): with a route's
    #: `forbid_self_approval` that person cannot approve it
    requested_by: str | None = Field(default=None, max_length=200)
    #: the session the source knows (an MCP / Claude Code session id, a LangGraph thread, a
    #: Delta run, an API caller's own): "Allow for this session" grants are scoped to it
    session: str | None = Field(default=None, max_length=200)
    #: what the tool says of itself (MCP tool annotations: `readOnlyHint`, `destructiveHint`, …);
    #: rules may match on them
    annotations: dict[str, Any] = Field(default_factory=dict)
    timeout_s: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    deadline: datetime | None = None
    callback: Callback | None = None

    @field_validator("context")
    @classmethod
    def _context_not_too_deep(cls, context: dict[str, Any]) -> dict[str, Any]:
        if _depth(context) > MAX_CONTEXT_DEPTH:
            raise ValueError(f"nested deeper than {MAX_CONTEXT_DEPTH} levels")
        return context

    @field_validator("labels")
    @classmethod
    def _labels_are_small(cls, labels: dict[str, str]) -> dict[str, str]:
        if len(labels) > 50 or any(len(k) > 100 or len(v) > 500 for k, v in labels.items()):
            raise ValueError("at most 50 labels, keys ≤ 100 and values ≤ 500 characters")
        return labels

    @field_validator("deadline")
    @classmethod
    def _deadline_is_aware(cls, deadline: datetime | None) -> datetime | None:
        if deadline is not None and deadline.tzinfo is None:
            raise ValueError("deadline needs a timezone (use UTC, e.g. 2026-01-01T12:00:00Z)")
        return deadline

    @model_validator(mode="after")
    def _question_ids_unique(self) -> RequestIn:
        ids = [q.id for q in self.questions]
        if len(set(ids)) != len(ids):
            raise ValueError("question ids must be unique")
        return self


class Responder(BaseModel):
    """Who acted: platform (`slack`, `telegram`, `web`, `cli`, `api`, `timeout`) and user id."""

    platform: str
    user_id: str
    name: str = ""
    #: the person this handle belongs to (config `people:`), when known
    person: str | None = None
    #: who passed the answer on for them: the API token that acts for others (`api:<name>`)
    relayed_by: str | None = None
    #: the person this one stands in for (a delegation window: "bo for ana"), when they answer
    #: a request only as that person's delegate (bridge.delegation)
    on_behalf_of: str | None = None

    @property
    def display(self) -> str:
        return self.person or self.name or self.user_id

    @property
    def key(self) -> str:
        return f"{self.platform}:{self.user_id}"


class GrantMade(BaseModel):
    """The standing approval a person made with their answer (bridge.policy), kept with the
    answer so every copy of the request can say it: "Allowed for 1 hour by ana — until 14:05"."""

    #: `session`, `span` or `always` (bridge.policy.GrantScope)
    scope: str
    #: the rule it matches (`Bash(npm test:*)`); None: the request's tool
    pattern: str | None = None
    #: how long a `span` grant lasts, and when it stops; None: with the session, or until revoked
    span_s: float | None = None
    expires_at: datetime | None = None
    #: the stored grant's id, once the policy core has stored it
    grant_id: str | None = None


class Answer(BaseModel):
    """The final answer: one value per question, who gave it, when and through which channel."""

    values: dict[str, Any]
    responder: Responder
    via: str
    answered_at: datetime
    reason: str | None = None
    #: the standing approval made with this answer, if any
    grant: GrantMade | None = None


StepKind = Literal["remind", "escalate", "page"]


class TimerStep(BaseModel):
    """A reminder or escalation post claimed in the store but not yet carried out. The
    replica that claimed it holds it until `lease_until` (renewed while it works); past
    that, any replica takes it over, so a step whose replica died is still carried out."""

    id: str  # "remind:3", "escalate:1", "page:1:2": unique within the request
    kind: StepKind
    targets: list[str]
    lease_until: datetime
    owner: str = ""  # the replica holding it (host:pid:…), for show and logs
    takeovers: int = 0


class Rules(BaseModel):
    """The rules a request was created under, kept with it while it is open (bridge.rules):
    its route's settings as configured, and the people and groups that decide who may
    answer. A reload never loosens them for a request already open."""

    model_config = ConfigDict(extra="ignore")

    #: the route's settings (a `Route` of bridge.config, as JSON)
    route: dict[str, Any]
    #: the people concerned (named by responders, or who asked): person -> handles
    people: dict[str, list[str]] = Field(default_factory=dict)
    #: the groups the responders name: group -> people
    groups: dict[str, list[str]] = Field(default_factory=dict)
    #: who asked (`requested_by` and the submitting token), as the voters they were then
    asked_by: list[str] = Field(default_factory=list)


class Request(RequestIn):
    """A stored request: what came in plus routing and state."""

    model_config = ConfigDict(extra="ignore")

    id: str
    source: str = "webhook"
    format: Literal["native", "structured"] = "native"
    source_ref: dict[str, Any] = Field(default_factory=dict)
    #: the verified handle that submitted it (an API token: `api:<name>`), when known
    created_by: str | None = None
    #: a hash of what it asks (bridge.fingerprint): a repeated external_id must match it
    fingerprint: str | None = None
    state: RequestState = RequestState.pending
    route: str = "default"
    targets: list[str] = Field(default_factory=list)
    created_at: datetime
    updated_at: datetime
    answer: Answer | None = None
    error: str | None = None
    escalation_level: int = 0
    reminders_sent: int = 0
    next_reminder_at: datetime | None = None
    next_escalation_at: datetime | None = None
    timer_steps: list[TimerStep] = Field(default_factory=list)
    #: the rules it was created under (None: created before rules were kept; judged by the route)
    rules: Rules | None = None

    @property
    def step_due_at(self) -> datetime | None:
        """When the earliest claimed timer step may be taken over (its lease ends)."""
        return min((s.lease_until for s in self.timer_steps), default=None)

    @property
    def is_open(self) -> bool:
        return self.state in OPEN_STATES

    @property
    def secret_question_ids(self) -> set[str]:
        return {q.id for q in self.questions if q.kind is QuestionKind.secret}

    def question(self, question_id: str) -> Question | None:
        return next((q for q in self.questions if q.id == question_id), None)

    def redacted_answer(self) -> dict[str, Any] | None:
        """The answer values with every secret replaced by a marker: safe to show and log."""
        if self.answer is None:
            return None
        secret = self.secret_question_ids
        return {k: ("[secret]" if k in secret else v) for k, v in self.answer.values.items()}


class Event(BaseModel):
    """One line of a request's audit trail."""

    id: int
    request_id: str
    at: datetime
    kind: str
    actor: str = ""
    data: dict[str, Any] = Field(default_factory=dict)


class Post(BaseModel):
    """A copy of a request shown on a channel (kept so every copy can be updated later)."""

    request_id: str
    channel: str
    target: str
    ref: dict[str, Any] = Field(default_factory=dict)
    ok: bool = True
    error: str | None = None
    at: datetime


def utcnow() -> datetime:
    return datetime.now(UTC)


_entropy = bytearray()


def _random_bytes(n: int) -> bytes:
    """OS randomness fetched 4 KiB at a time (one getrandom call per ~400 ids, not per id)."""
    global _entropy
    if len(_entropy) < n:
        _entropy = bytearray(secrets.token_bytes(4096))
    out = bytes(_entropy[:n])
    del _entropy[:n]
    return out


_ID_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"
#: a byte → its low five bits' character (`bytes.translate`: a random tail in one call)
_ID_CHARACTER = bytes(ord(_ID_ALPHABET[b & 31]) for b in range(256))


def new_request_id() -> str:
    """Sortable, unguessable: milliseconds since epoch in base32 plus 10 random characters."""
    ms = int(time.time() * 1000)
    head = bytes((ms >> shift) & 31 for shift in range(40, -5, -5)).translate(_ID_CHARACTER)
    tail = _random_bytes(10).translate(_ID_CHARACTER)
    return f"r_{head.decode()}{tail.decode()}"


def has_lone_surrogate(value: Any) -> bool:
    """True when a string anywhere in `value` cannot be encoded as UTF-8 (JSON `"\\ud800"`).
    Iterative, so any nesting depth is looked at without recursion."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list | tuple):
            pending.extend(item)
    return False
