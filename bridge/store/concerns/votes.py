"""Quorum votes: one a voter, counted once."""

from __future__ import annotations

import abc
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol


@dataclass(frozen=True)
class Vote:
    request_id: str
    voter: str  # responder key "platform:user_id"
    value: str
    name: str
    at: datetime


class VoteStore(Protocol):
    @abc.abstractmethod
    async def add_vote(self, vote: Vote) -> bool:
        """False when this voter already voted on this request (counted once)."""

    @abc.abstractmethod
    async def list_votes(self, request_id: str) -> list[Vote]: ...
