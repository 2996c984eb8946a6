"""Bad timing config is refused at start with a ConfigError naming the route and the key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from bridge.config import load_settings
from bridge.errors import ConfigError

GOOD: dict[str, Any] = {"name": "deploys", "notify": ["web"], "responders": ["slack:U0ANA", "telegram:42"]}


def load(tmp_path: Path, route: dict[str, Any]) -> ConfigError:
    path = tmp_path / "hitl-bridge.yaml"
    path.write_text(yaml.safe_dump({"routes": [{"notify": ["web"]}, {**GOOD, **route}]}))
    with pytest.raises(ConfigError) as caught:
        load_settings(str(path), env={})
    return caught.value


@pytest.mark.parametrize(("route", "key", "words"), [
    ({"remind_every": "-10m"}, "routes[1].remind_every", "cannot read '-10m'"),
    ({"timeout": "ten minutes"}, "routes[1].timeout", "cannot read"),
    ({"timeout": -5}, "routes[1].timeout", "must be positive"),
    ({"timeout": 0}, "routes[1].timeout", "must be positive"),
    ({"escalate": [{"after": "1h", "notify": ["web:a"]}, {"after": "15m", "notify": ["web:b"]}]},
     "routes[1]", "escalate[1].after must be later than escalate[0].after"),
    ({"escalate": [{"after": "15m", "notify": ["web:a"]}, {"after": "15m", "notify": ["web:b"]}]},
     "routes[1]", "escalate[1].after"),
    ({"escalate": [{"after": "soon", "notify": ["web:a"]}]}, "routes[1].escalate[0].after", "cannot read"),
    ({"escalate": [{"after": "5m", "notify": ["web:a"], "repeat": -1}]}, "routes[1].escalate[0].repeat", ""),
    ({"quorum": 3}, "routes[1]", "quorum 3 is larger than the 2 people"),
    ({"quorum": 0}, "routes[1].quorum", ""),
    ({"on_timeout": {"answer": 5}}, "routes[1]", "on_timeout.answer 5 cannot answer any question"),
    ({"on_timeout": {"answer": ""}}, "routes[1]", "on_timeout.answer"),
    ({"on_timeout": {"answer": "no", "fail": True}}, "routes[1].on_timeout", "exactly one"),
    ({"on_timeout": {"expire": True}}, "routes[1].on_timeout.expire", "unknown key"),
    ({"timeout": "3h", "max_timeout": "1h"}, "routes[1]", "timeout is longer than max_timeout"),
])
def test_bad_timing_is_a_config_error(tmp_path: Path, route: dict[str, Any], key: str, words: str) -> None:
    error = load(tmp_path, route)
    assert error.key == key, str(error)
    assert words in error.reason
    if error.key == "routes[1]":
        assert "route 'deploys'" in error.reason  # named even when the key is the whole route


def test_quorum_counts_escalation_people_and_groups_are_unbounded(tmp_path: Path) -> None:
    path = tmp_path / "hitl-bridge.yaml"
    routes = [
        {**GOOD, "quorum": 3, "escalate": [{"after": "15m", "notify": ["slack:@U0BOSS"]}]},  # 3 people
        {**GOOD, "quorum": 5, "responders": ["slack:@oncall-group"]},  # a group: cannot count
        {"notify": ["web"], "quorum": 4},  # no responders: anyone who sees it
    ]
    path.write_text(yaml.safe_dump({"routes": routes}))
    settings = load_settings(str(path), env={})
    assert [r.quorum for r in settings.routes] == [3, 5, 4]
    error = load(tmp_path, {"quorum": 3, "escalate": [{"after": "15m", "notify": ["slack:@U0ANA"]}]})
    assert "quorum 3" in error.reason  # the same person twice is one person
    error = load(tmp_path, {"quorum": 3, "escalate": [
        {"after": "15m", "notify": ["telegram:7"], "replace": True}]})
    assert "quorum 3" in error.reason  # replace: never more than two at a time


def test_the_example_config_loads(tmp_path: Path) -> None:
    example = Path(__file__).resolve().parents[2] / "config" / "escalation-ladder.yaml"
    settings = load_settings(str(example), env={  # the variables the example says to export
        "SLACK_BOT_TOKEN": "xoxb-1", "SLACK_SIGNING_SECRET": "s", "TELEGRAM_BOT_TOKEN": "1:a",
        "BRIDGE_SECRET_KEY": "k", "BRIDGE_API_TOKEN": "t" * 24})
    route = settings.routes[0]
    assert route.remind_every is not None and route.escalate and route.on_timeout is not None
