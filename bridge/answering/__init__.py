"""The answer path as an ordered list of small typed checks (`pipeline.CHECKS`), each in
its own module, with a typed `Actor` in place of the channel names answers come through."""

from bridge.answering.actor import Actor, ActorKind
from bridge.answering.closed import closed_error
from bridge.answering.pipeline import CHECKS, Check, answer

__all__ = ["CHECKS", "Actor", "ActorKind", "Check", "answer", "closed_error"]
