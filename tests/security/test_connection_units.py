"""The arithmetic behind the connection guard, and the accept-error log limiter."""

from __future__ import annotations

import logging

import pytest

from bridge.http.connections import AcceptErrorFilter, connection_limit, listen_backlog


@pytest.mark.parametrize(("fds", "configured", "expected"), [
    (256, None, 160),        # 256 - 64 kept for the store and calls - a burst of 32 accepts
    (1024, None, 768),       # three quarters
    (1 << 20, None, 4096),   # at most 4096 unless asked
    (1 << 20, 20_000, 20_000),
    (64, None, 4),
])
def test_the_limit_leaves_descriptors_for_everything_else(fds: int, configured: int | None, expected: int) -> None:
    limit = connection_limit(configured, fds)
    assert limit == expected
    assert limit + listen_backlog(fds) < fds or limit == 4


def test_asking_for_more_than_the_descriptors_allow_is_capped_and_said(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="hitl_bridge.http"):
        assert connection_limit(5000, 1024) == 1024 - 64 - 128
    assert "more than the open-file limit (1024)" in caplog.text and "ulimit -n" in caplog.text


def test_accept_errors_are_let_through_once_a_second_with_the_count() -> None:
    now = [100.0]
    limiter = AcceptErrorFilter(clock=lambda: now[0])

    def record(message: str) -> logging.LogRecord:
        return logging.LogRecord("asyncio", logging.ERROR, __file__, 1, message, None, None)

    flood = [record("socket.accept() out of system resource\nsocket: <...>") for _ in range(500)]
    assert sum(limiter.filter(r) for r in flood) == 1
    now[0] += 1.01
    later = record("Exception in callback BaseSelectorEventLoop._start_serving(...)")
    assert limiter.filter(later) and "500 more accept errors held back" not in later.getMessage()
    assert "499 more accept errors held back" in later.getMessage()
    assert limiter.filter(record("Task exception was never retrieved"))  # anything else passes
