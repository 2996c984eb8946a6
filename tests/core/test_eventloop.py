"""The daemon's event loop: uvloop when installed, asyncio's when asked (HITL_EVENT_LOOP)."""

from __future__ import annotations

import asyncio

import pytest

from bridge.eventloop import loop_factory, loop_name, run


async def running_loop_name() -> str:
    await asyncio.sleep(0)
    return loop_name(asyncio.get_running_loop())


def test_uvloop_by_default_when_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("uvloop")
    monkeypatch.delenv("HITL_EVENT_LOOP", raising=False)
    name, factory = loop_factory()
    assert name == "uvloop"
    assert run(running_loop_name(), factory) == "uvloop"


def test_asyncio_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HITL_EVENT_LOOP", "asyncio")
    name, factory = loop_factory()
    assert (name, factory) == ("asyncio", None)
    assert run(running_loop_name(), factory) == "asyncio"


def test_an_unknown_choice_is_refused() -> None:
    with pytest.raises(ValueError, match="expected uvloop, asyncio or auto"):
        loop_factory("trio")
