"""A fake Slack Web API and Socket Mode server for tests and benchmarks (see server.py)."""

from tests.fakes.slack_api.blockkit import check_blocks, check_message, check_view
from tests.fakes.slack_api.server import Call, FakeSlack

__all__ = ["Call", "FakeSlack", "check_blocks", "check_message", "check_view"]
