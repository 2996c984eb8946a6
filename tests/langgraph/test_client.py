"""The LangGraph client against replies a real server would never send (or a broken proxy
would): each becomes a LangGraphError with a clear message, never a crash or a hang."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from adapters.langgraph.client import MAX_REPLY_BYTES, LangGraphClient, LangGraphError
from bridge.errors import ConfigError
from bridge.registry import build_sources
from tests.harness import ManualClock, make_settings


def client_for(handler: Callable[[httpx.Request], httpx.Response]) -> LangGraphClient:
    return LangGraphClient("http://127.0.0.1:9", transport=httpx.MockTransport(handler))


def reply(body: Any, status: int = 200) -> Callable[[httpx.Request], httpx.Response]:
    def handler(request: httpx.Request) -> httpx.Response:
        if isinstance(body, bytes):
            return httpx.Response(status, content=body)
        return httpx.Response(status, json=body)
    return handler


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        (b"<html>oops", 200, "not JSON"),
        ({"threads": []}, 200, "did not return a list"),
        ([1, 2], 200, "did not return a list"),
        ([{"state_updated_at": "x"}], 200, "without thread_id"),
        ({"detail": "Invalid API key"}, 403, "HTTP 403: Invalid API key"),
        (b"\xff\xfe", 500, "HTTP 500"),
    ],
)
async def test_bad_listing_replies(body: Any, status: int, message: str) -> None:
    client = client_for(reply(body, status))
    with pytest.raises(LangGraphError, match=message) as caught:
        await client.list_interrupted(page_size=10, max_threads=100)
    assert caught.value.status == (status if status >= 400 or message == "not JSON" else None)
    await client.aclose()


@pytest.mark.parametrize(
    ("thread", "message"),
    [
        ({"thread_id": "t", "interrupts": "x"}, "not an object"),
        ({"thread_id": "t", "interrupts": {"task": "x"}}, "not lists"),
        ({"thread_id": "t", "interrupts": {"task": [{"value": 1}]}}, "without id"),
        ({"thread_id": "t", "interrupts": {"task": ["x"]}}, "not an object"),
        ({"thread_id": "", "interrupts": {}}, "without thread_id"),
    ],
)
async def test_bad_thread_details(thread: dict[str, Any], message: str) -> None:
    client = client_for(reply([thread]))
    with pytest.raises(LangGraphError, match=message):
        await client.threads(["t"])
    await client.aclose()


async def test_oversized_reply_is_refused() -> None:
    client = client_for(reply(b"[" + b" " * (MAX_REPLY_BYTES + 10) + b"]"))
    with pytest.raises(LangGraphError, match="larger than"):
        await client.threads(["t"])
    await client.aclose()


async def test_unreachable_server() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    client = client_for(refuse)
    with pytest.raises(LangGraphError, match="ConnectError"):
        await client.list_interrupted(page_size=10, max_threads=100)
    await client.aclose()


async def test_listing_pages_until_a_short_page_and_respects_max_threads() -> None:
    bodies: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        bodies.append(body)
        total, start = 25, body["offset"]
        ids = [f"t{i:03d}" for i in range(start, min(start + body["limit"], total))]
        return httpx.Response(200, json=[{"thread_id": t, "state_updated_at": "s"} for t in ids])

    client = client_for(handler)
    found = await client.list_interrupted(page_size=10, max_threads=1000, metadata={"team": "ops"})
    assert len(found) == 25 and [b["offset"] for b in bodies] == [0, 10, 20]
    assert bodies[0]["select"] == ["thread_id", "state_updated_at"]
    assert bodies[0]["metadata"] == {"team": "ops"} and bodies[0]["status"] == "interrupted"
    bodies.clear()
    assert len(await client.list_interrupted(page_size=10, max_threads=10)) == 10
    assert len(bodies) == 1
    await client.aclose()


async def test_resume_reply_without_a_run_is_an_error() -> None:
    client = client_for(reply({"ok": True}))
    with pytest.raises(LangGraphError, match="did not return a run"):
        await client.resume("t", interrupt_id="i", value="x", assistant_id="g", metadata={})
    await client.aclose()


def _build(tmp_path: Path, section: dict[str, Any]) -> Any:
    settings = make_settings(tmp_path, {"sources": [{"type": "langgraph", **section}]})
    return build_sources(settings, store=None, clock=ManualClock())  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("section", "key"),
    [
        ({}, "sources[0].base_url"),
        ({"base_url": "ftp://x"}, "sources[0].base_url"),
        ({"base_url": "http://127.0.0.1:1", "poll_everyy": "5s"}, "sources[0].poll_everyy"),
        ({"base_url": "http://127.0.0.1:1", "poll_every": "soon"}, "sources[0].poll_every"),
        ({"base_url": "http://127.0.0.1:1", "page_size": 5000}, "sources[0].page_size"),
        ({"base_url": "http://127.0.0.1:1", "api_key_env": "LG_UNSET_KEY_FOR_TEST"}, "sources[0].api_key_env"),
    ],
)
def test_config_errors_name_the_key(tmp_path: Path, section: dict[str, Any], key: str,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LG_UNSET_KEY_FOR_TEST", raising=False)
    with pytest.raises(ConfigError) as caught:
        _build(tmp_path, section)
    assert key in str(caught.value)


def test_config_builds_a_named_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LG_KEY_FOR_TEST", "k-123")
    [source] = _build(tmp_path, {"base_url": "http://127.0.0.1:1", "name": "lg-prod",
                                 "api_key_env": "LG_KEY_FOR_TEST", "poll_every": "2s"})
    assert source.name == "lg-prod"
    assert source.client._http.headers["x-api-key"] == "k-123"
    assert source.config.poll_every.total_seconds() == 2
    assert "k-123" not in repr(source.config)


def test_api_key_and_headers_from_config(tmp_path: Path) -> None:
    [source] = _build(tmp_path, {"base_url": "http://127.0.0.1:1", "api_key": "k-456",
                                 "headers": {"Authorization": "Bearer t-789"}})
    assert source.client._http.headers["x-api-key"] == "k-456"
    assert source.client._http.headers["authorization"] == "Bearer t-789"
    assert "k-456" not in repr(source.config) and "t-789" not in repr(source.config)


async def test_resume_is_addressed_and_strict_for_current_interrupt_ids() -> None:
    sent: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(json.loads(request.content))
        return httpx.Response(200, json={"run_id": "r"})

    client = client_for(handler)
    current = "0123456789abcdef0123456789abcdef"
    await client.resume("t", interrupt_id=current, value={"a": 1}, assistant_id="g", metadata={"m": 1})
    await client.resume("t", interrupt_id="old-style-id", value="x", assistant_id="g", metadata={})
    assert sent[0]["command"] == {"resume": {current: {"a": 1}}}
    assert sent[0]["config"] == {"configurable": {"__pregel_strict_resume": True}}
    assert sent[0]["multitask_strategy"] == "reject" and sent[0]["metadata"] == {"m": 1}
    assert sent[1]["command"] == {"resume": "x"} and "config" not in sent[1]
    await client.aclose()


async def test_older_servers_interrupt_id_key_is_read() -> None:
    client = client_for(reply([{"thread_id": "t", "status": "interrupted",
                                "interrupts": {"task": [{"interrupt_id": "abc", "value": "q"}]}}]))
    [info] = await client.threads(["t"])
    assert info.pending("abc") and info.interrupts[0].value == "q"
    await client.aclose()
