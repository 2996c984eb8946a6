"""Fixtures: fake GitHub and GitLab APIs and the fake Slack API on 127.0.0.1, and a real
bridge daemon with the deploy source and the Slack channel."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.engines.conftest import FAST_DELIVERY
from tests.fakes.github_api import FakeGitHub
from tests.fakes.slack_api import FakeSlack
from tests.harness import running_bridge
from tests.slack.conftest import SIGNING_SECRET, SlackBridge, slack_section
from tests.slack.person import Person

#: the people of the deploy tests: Ana triggers deploys, Bo and Cy approve them
PEOPLE = {"ana": ["slack:U0ALICE", "github:ana", "gitlab:ana"],
          "bo": ["slack:U0BOB", "github:bo", "gitlab:bo"],
          "cy": ["slack:U0MALLORY", "gitlab:cy"]}


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as server:
        yield server


@pytest.fixture
async def github() -> AsyncIterator[FakeGitHub]:
    async with FakeGitHub() as server:
        yield server


@asynccontextmanager
async def deploy_bridge(tmp_path: Path, slack: FakeSlack, source: dict[str, Any], *,
                        route: dict[str, Any] | None = None) -> AsyncIterator[SlackBridge]:
    """A daemon with `source`, the Slack channel, and one route for production deploys."""
    config: dict[str, Any] = {
        "slack": slack_section(slack),
        "sources": [source],
        "people": PEOPLE,
        "delivery": FAST_DELIVERY,
        "routes": [{"name": "prod", "match": {"labels.environment": "production"},
                    "notify": ["slack:#deploys"], "forbid_self_approval": True, **(route or {})}],
    }
    async with running_bridge(tmp_path, config) as daemon, httpx.AsyncClient(timeout=10) as http:
        person = Person(slack, http, f"{daemon.base_url}/slack/events", SIGNING_SECRET)
        yield SlackBridge(daemon, slack, http, person)
