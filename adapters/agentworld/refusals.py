"""What agent-world's `hitl/respond` refusals mean for the bridge, in one place.

agent-world answers `{accepted: false, reason}` with a sentence; the bridge decides from
it whether the answer can still land:

- `REPLAY_CHAT`: the prompt is still waiting but agent-world's runtime has not restored it
  (after a restart). "No pending HITL request found …" (runtime map empty) and "HITL
  request '…' is pending in chat messages but the chat is not yet activated on this server.
  Call POST /worlds/<world>/setChat/<chat> to activate, then retry this request." (when the
  answer names its `chatId`, agent-world 15d91319 / 458d539e). The source replays `setChat`
  and sends again; while the chat is still being restored it retries with backoff.
- `FINAL`: everything else — the answer does not fit the prompt (invalid option or
  question, missing or duplicate answer, skipping not allowed), it names another chat, or
  a reason this version does not know. Sending the same answer again cannot succeed: the
  request fails with agent-world's reason, where an operator sees it.

HTTP-level failures (5xx, 429, no reply) are not refusals: they are retried later.
"""

from __future__ import annotations

from enum import Enum

NOT_PENDING = "No pending HITL request found"
NOT_ACTIVATED = "is pending in chat messages but the chat is not yet activated"
MAX_REASON = 300  # agent-world's reason is shown to operators; longer text is cut


class Refusal(Enum):
    REPLAY_CHAT = "replay the chat with setChat, then send again"
    FINAL = "final"


def classify(reason: str) -> Refusal:
    """The kind of one refusal reason (see the module docstring)."""
    if reason.startswith(NOT_PENDING) or NOT_ACTIVATED in reason:
        return Refusal.REPLAY_CHAT
    return Refusal.FINAL


def reason_of(verdict: dict[str, object]) -> str:
    return str(verdict.get("reason") or "no reason given")[:MAX_REASON]
