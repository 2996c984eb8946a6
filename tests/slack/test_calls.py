"""Retries and pacing of Slack calls (adapters.slack.calls), on slack_sdk's own errors."""

from __future__ import annotations

import asyncio
import itertools
import time

import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from adapters.slack.calls import ChannelPacer, Retrier, SlackCallFailed


def failure(status: int, error: str, headers: dict[str, str] | None = None) -> SlackApiError:
    response = AsyncSlackResponse(client=None, http_verb="POST", api_url="x", req_args={},
                                  data={"ok": False, "error": error}, headers=headers or {},
                                  status_code=status)
    return SlackApiError("failed", response)


class Flaky:
    """A Slack call that fails with the given errors, then succeeds."""

    def __init__(self, *errors: BaseException) -> None:
        self.errors = list(errors)
        self.calls = 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "posted"


async def test_rate_limits_wait_and_do_not_count_as_attempts() -> None:
    call = Flaky(*(failure(429, "ratelimited", {"Retry-After": "0"}) for _ in range(5)))
    assert await Retrier(max_attempts=1, backoff_s=0).call("post", call) == "posted"
    assert call.calls == 6


async def test_server_errors_and_timeouts_retry_then_give_up() -> None:
    call = Flaky(failure(503, "service_unavailable"), TimeoutError(), failure(500, "x"))
    assert await Retrier(max_attempts=4, backoff_s=0).call("post", call) == "posted"
    never = Flaky(*(failure(502, "bad gateway") for _ in range(10)))
    with pytest.raises(SlackCallFailed, match="after 3 attempts"):
        await Retrier(max_attempts=3, backoff_s=0).call("post", never)
    assert never.calls == 3


async def test_permanent_errors_are_not_retried() -> None:
    call = Flaky(failure(200, "channel_not_found"))
    with pytest.raises(SlackCallFailed) as err:
        await Retrier(max_attempts=5, backoff_s=0).call("post", call)
    assert err.value.error == "channel_not_found" and call.calls == 1


async def test_recover_adopts_what_landed_before_retrying() -> None:
    call = Flaky(TimeoutError())

    async def found() -> str:
        return "adopted"

    assert await Retrier(max_attempts=5, backoff_s=0).call("post", call, recover=found) == "adopted"
    assert call.calls == 1


async def test_pacer_keeps_order_and_gap_per_channel() -> None:
    pacer = ChannelPacer(0.05)
    done: list[tuple[str, int, float]] = []

    async def job(channel: str, n: int) -> None:
        done.append((channel, n, time.monotonic()))

    await asyncio.gather(*(pacer.run(ch, lambda ch=ch, n=n: job(ch, n))  # type: ignore[misc]
                           for n in range(4) for ch in ("a", "b")))
    for channel in ("a", "b"):
        mine = [(n, at) for ch, n, at in done if ch == channel]
        assert [n for n, _ in mine] == [0, 1, 2, 3]
        gaps = [b - a for (_, a), (_, b) in itertools.pairwise(mine)]
        assert min(gaps) >= 0.05 - 0.002  # never closer than the interval (a lower bound)
    assert done[0][0] != done[1][0]  # channels do not wait for each other
