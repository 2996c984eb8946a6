"""The daemon's log keeps our own INFO lines and only WARNING and above from libraries, any
library: Slack's SDK retrying an unreachable host at INFO is not for operators."""

from __future__ import annotations

import io
import logging

from bridge.logs import configure_logging


def test_libraries_log_warnings_only_and_our_info_lines_stay() -> None:
    out = io.StringIO()
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    handler = configure_logging("INFO", "text", stream=out)
    try:
        logging.getLogger("slack_sdk.web.async_base_client").info("Retrying a request to slack.com")
        logging.getLogger("aiohttp.client").info("connection lost")
        logging.getLogger("slack_sdk.socket_mode").warning("Slack is unreachable")
        logging.getLogger("hitl_bridge.slack").info("posted r_1")
        logging.getLogger("adapters.telegram.channel").info("sent r_2")
    finally:
        root.removeHandler(handler)
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
    text = out.getvalue()
    assert "Retrying" not in text and "connection lost" not in text
    assert "Slack is unreachable" in text and "posted r_1" in text and "sent r_2" in text
