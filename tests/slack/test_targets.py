"""The `slack:` target syntax of DESIGN §4."""

from __future__ import annotations

import pytest

from adapters.slack.targets import BadTarget, SlackTarget, parse_target


@pytest.mark.parametrize(("target", "expected"), [
    ("slack:#deploys", SlackTarget("channel", "#deploys")),
    ("slack:C0123ABC", SlackTarget("channel", "C0123ABC")),
    ("slack:@U0MANAGER", SlackTarget("user", "U0MANAGER")),
    ("slack:@W0ENTERPRISE", SlackTarget("user", "W0ENTERPRISE")),
    ("slack:U0123ABC", SlackTarget("user", "U0123ABC")),
    ("slack:@oncall-group", SlackTarget("usergroup", "oncall-group")),
])
def test_targets(target: str, expected: SlackTarget) -> None:
    assert parse_target(target) == expected


@pytest.mark.parametrize("target", ["telegram:1", "slack:", "slack:#", "slack:@", "slack:lower",
                                    "slack:#bad name", "slack:@" + "x" * 200])
def test_bad_targets(target: str) -> None:
    with pytest.raises(BadTarget):
        parse_target(target)
