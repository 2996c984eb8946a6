"""Source config errors name the file, the key and the fix."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest

from adapters.agentworld import AgentWorldSource
from adapters.mastra import MastraSource
from adapters.teal import TealSource
from bridge.clock import SystemClock
from bridge.errors import ConfigError
from bridge.registry import build_sources
from bridge.store.base import Store
from tests.harness import make_settings


def build(tmp_path: Path, source: dict[str, Any]) -> Any:
    settings = make_settings(tmp_path, {"sources": [source]})
    return build_sources(settings, cast(Store, None), SystemClock())


@pytest.mark.parametrize(
    ("source", "key", "reason"),
    [
        ({"type": "teal"}, "sources[0].base_url", "Field required"),
        ({"type": "teal", "base_url": "ftp://x"}, "sources[0].base_url", "should match"),
        ({"type": "teal", "base_url": "http://t", "resume_timeout": "0s"}, "sources[0].resume_timeout", "positive"),
        ({"type": "teal", "base_url": "http://t", "task_url": "http://t/tasks"}, "sources[0].task_url", "match"),
        ({"type": "teal", "base_url": "http://t", "task_url": "file:///{task_id}"}, "sources[0].task_url", "match"),
        ({"type": "mastra", "base_url": "http://m"}, "sources[0].workflows", "at least one workflow"),
        (
            {"type": "mastra", "base_url": "http://m", "workflows": ["w"], "poll_every": "soon"},
            "sources[0].poll_every",
            "duration",
        ),
        ({"type": "mastra", "base_url": "http://m", "workflow": ["w"]}, "sources[0].workflow", "unknown key"),
        ({"type": "mastra", "base_url": "http://m", "inboxes": ["i"]}, "sources[0].inboxes", "in no released Mastra"),
        ({"type": "agentworld", "base_url": "http://a", "worlds": []}, "sources[0].worlds", "at least 1"),
        (
            {"type": "agentworld", "base_url": "http://a", "worlds": [{"world": "w"}]},
            "sources[0].worlds.0.chats",
            "Field required",
        ),
    ],
)
def test_bad_sections_name_the_key(tmp_path: Path, source: dict[str, Any], key: str, reason: str) -> None:
    with pytest.raises(ConfigError) as err:
        build(tmp_path, source)
    assert err.value.key == key and reason in err.value.reason


def test_good_sections_build_and_keep_tokens_secret(tmp_path: Path) -> None:
    (teal,) = build(tmp_path, {"type": "teal", "base_url": "http://t", "authorization": "Bearer s3cret-value"})
    (mastra,) = build(tmp_path, {"type": "mastra", "base_url": "http://m", "workflows": ["w"], "token": "s3cret-value"})
    (aw,) = build(
        tmp_path,
        {"type": "agentworld", "base_url": "http://a/api", "worlds": [{"world": "w", "chats": ["c"]}], "name": "aw2"},
    )
    assert isinstance(teal, TealSource) and isinstance(mastra, MastraSource) and isinstance(aw, AgentWorldSource)
    assert aw.name == "aw2"
    assert "s3cret" not in repr(teal.config) and "s3cret" not in repr(mastra.config)
