"""`POST /v1/requests:watch` against a real daemon: requests closing in any order, closed
already, unknown or another token's, bad and hostile bodies, a client that goes away, the
wait running out, shutdown. Nothing sleeps to wait: every wait has a deadline."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from bridge.daemon import Daemon
from bridge.http import watch
from tests.harness import running_bridge, wait_for
from tests.watch_stream import WITHIN, watching

CONFIRM = [{"id": "ok", "kind": "confirm", "prompt": "Deploy?"}]
RELAY, ANN, BOB = "relay-token-0123456789", "ann-token-0123456789", "bob-token-0123456789"
TOKENS: dict[str, Any] = {"http": {"api_tokens": {"relay": {"token": RELAY, "act_for_others": True},
                                                  "ann": {"token": ANN}, "bob": {"token": BOB}}}}


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def create(daemon: Daemon, token: str = RELAY, title: str = "Deploy api") -> str:
    async with httpx.AsyncClient(base_url=daemon.base_url, headers=auth(token)) as client:
        response = await client.post("/v1/requests", json={"title": title, "questions": CONFIRM})
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


async def answer(daemon: Daemon, request_id: str, value: str = "yes") -> None:
    async with httpx.AsyncClient(base_url=daemon.base_url, headers=auth(RELAY)) as client:
        response = await client.post(f"/v1/requests/{request_id}/answer", json={"value": value})
    assert response.status_code == 200, response.text


async def cancel(daemon: Daemon, request_id: str) -> None:
    async with httpx.AsyncClient(base_url=daemon.base_url, headers=auth(RELAY)) as client:
        response = await client.post(f"/v1/requests/{request_id}/cancel", json={"reason": "not needed"})
    assert response.status_code == 200, response.text


async def post_watch(daemon: Daemon, content: bytes, token: str = RELAY, **headers: str) -> httpx.Response:
    async with httpx.AsyncClient(base_url=daemon.base_url, timeout=WITHIN) as client:
        return await client.post("/v1/requests:watch", content=content,
                                 headers={**auth(token), "content-type": "application/json", **headers})


async def test_each_request_is_reported_as_it_closes_in_any_order(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, TOKENS) as daemon:
        ids = [await create(daemon) for _ in range(3)]
        async with watching(daemon.base_url, ids, headers=auth(RELAY)) as stream:
            assert daemon.service.changes.watched_count() == 3
            await answer(daemon, ids[2], "no")
            assert (await stream.until(1))[0][0] == "closed"
            await answer(daemon, ids[0])
            await stream.until(2)
            await cancel(daemon, ids[1])
            events = await stream.until(4)
            await stream.ended.wait()
        assert stream.closed_ids() == [ids[2], ids[0], ids[1]]
        closed = {data["id"]: data for kind, data in events if kind == "closed"}
        assert closed[ids[2]]["answer"]["values"] == {"ok": "no"}
        assert closed[ids[0]]["answer"]["values"] == {"ok": "yes"}
        assert closed[ids[1]]["state"] in ("cancelled", "delivered")
        assert "posts" in closed[ids[0]] and "outbox" in closed[ids[0]]  # the body GET /v1/requests/{id} answers
        assert events[3] == ("end", {"open": [], "reason": "done"})
        await wait_for(lambda: daemon.service.changes.watched_count() == 0, WITHIN)


async def test_requests_closed_already_are_reported_at_once(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, TOKENS) as daemon:
        done, still = await create(daemon), await create(daemon)
        await answer(daemon, done)
        async with httpx.AsyncClient(base_url=daemon.base_url, headers=auth(RELAY)) as client:
            detail = (await client.get(f"/v1/requests/{done}")).json()
        async with watching(daemon.base_url, [done, still, done], headers=auth(RELAY)) as stream:
            [(kind, data)] = await stream.until(1)  # a repeated id counts once
            assert kind == "closed" and data.keys() == detail.keys()  # the body GET /v1/requests/{id} answers
            assert (data["id"], data["answer"]) == (done, detail["answer"])
            assert daemon.service.changes.watched_count() == 1  # only the open one stays registered
            await answer(daemon, still)
            await stream.until(3)
        assert stream.events[2] == ("end", {"open": [], "reason": "done"})


async def test_unknown_and_forbidden_ids_look_the_same(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, TOKENS) as daemon:
        anns, bobs = await create(daemon, ANN), await create(daemon, BOB)
        unknown = "0000000000000000000"
        async with watching(daemon.base_url, [anns, bobs, unknown], headers=auth(ANN)) as stream:
            events = await stream.until(2)
            assert daemon.service.changes.watched_count() == 1  # ann's own request only
            missing = sorted(data["id"] for kind, data in events if kind == "missing")
            assert missing == sorted([bobs, unknown])
            words = {data["detail"].replace(data["id"], "ID") for _, data in events}
            assert len(words) == 1  # nothing tells a stranger which of them exists
            await answer(daemon, bobs)  # bob's request closing is not shown to ann
            await answer(daemon, anns)
            events = await stream.until(4)
        assert [kind for kind, _ in events[2:]] == ["closed", "end"]
        assert events[2][1]["id"] == anns


async def test_a_token_limited_to_its_own_requests_sees_their_closes_already(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, TOKENS) as daemon:
        anns, bobs = await create(daemon, ANN), await create(daemon, BOB)
        await answer(daemon, anns)
        await answer(daemon, bobs)
        async with watching(daemon.base_url, [anns, bobs], headers=auth(ANN)) as stream:
            events = await stream.until(3)
        assert sorted((k, d["id"]) for k, d in events[:2]) == sorted([("closed", anns), ("missing", bobs)])
        assert events[-1] == ("end", {"open": [], "reason": "done"})


async def test_the_wait_running_out_ends_the_stream_with_the_ids_still_open(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, TOKENS) as daemon:
        ids = [await create(daemon), await create(daemon)]
        await answer(daemon, ids[1])
        async with watching(daemon.base_url, ids, headers=auth(RELAY), wait=0.3) as stream:
            events = await stream.until(2)
            await stream.ended.wait()
        assert events[1] == ("end", {"open": [ids[0]], "reason": "timeout"})
        assert daemon.service.changes.watched_count() == 0


async def test_keep_alive_comments_flow_while_nothing_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(watch, "KEEPALIVE_S", 0.05)
    async with running_bridge(tmp_path, TOKENS) as daemon:
        rid = await create(daemon)
        async with watching(daemon.base_url, [rid], headers=auth(RELAY)) as stream:
            await wait_for(lambda: len(stream.comments) >= 2, WITHIN)
            assert set(stream.comments) == {"keep-alive"} and stream.events == []


async def test_a_client_that_goes_away_frees_its_registrations(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, TOKENS) as daemon:
        ids = [await create(daemon) for _ in range(5)]
        async with watching(daemon.base_url, ids, headers=auth(RELAY)):
            assert daemon.service.changes.watched_count() == 5
            assert sorted(daemon.service.changes.waited_ids()) == sorted(ids)  # the followers see them
        # the connection is closed mid-stream: the daemon notices and lets go of every id
        await wait_for(lambda: daemon.service.changes.watched_count() == 0, WITHIN)
        assert daemon.service.changes.waited_ids() == []
        await answer(daemon, ids[0])  # nobody is told any more, and nothing breaks


async def test_two_streams_on_one_request_are_both_told(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, TOKENS) as daemon:
        rid = await create(daemon)
        async with watching(daemon.base_url, [rid], headers=auth(RELAY)) as one, \
                watching(daemon.base_url, [rid], headers=auth(RELAY)) as two:
            assert daemon.service.changes.watched_count() == 2
            await answer(daemon, rid)
            assert [k for k, _ in await one.until(2)] == [k for k, _ in await two.until(2)] == ["closed", "end"]


async def test_shutdown_ends_every_stream(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, TOKENS) as daemon:
        rid = await create(daemon)
        async with watching(daemon.base_url, [rid], headers=auth(RELAY)) as stream:
            daemon.service.changes.release_waiters()
            events = await stream.until(1)
        assert events == [("end", {"open": [rid], "reason": "shutdown"})]


@pytest.mark.parametrize(("body", "status", "words"), [
    (b"not json", 422, "not valid JSON"),
    (b'{"ids": "abc"}', 422, "ids"),
    (b'{"ids": []}', 422, "ids"),
    (b'{"ids": [1, 2]}', 422, "ids"),
    (b'{"ids": [{"$ne": null}]}', 422, "ids"),
    (b'{"nothing": true}', 422, "ids"),
    (b'["a"]', 422, "body"),
    (b'{"ids": ["a"], "wait": 0}', 422, "wait"),
    (b'{"ids": ["a"], "wait": 99999}', 422, "wait"),
    (b'{"ids": ["a"], "wait": "soon"}', 422, "wait"),
    (b'{"ids": ["a"], "wait": NaN}', 422, "wait"),
    (b'{"ids": ["a"], "wait": Infinity}', 422, "wait"),
    (b'{"ids": ["' + b"x" * 65 + b'"]}', 422, "ids"),
    (b'{"ids": [' + b",".join(b'"%d"' % i for i in range(watch.MAX_IDS + 1)) + b"]}", 422, "ids"),
    (b"[" * 100_000, 422, "not valid JSON"),
])
async def test_bad_bodies_are_refused_with_what_is_wrong(tmp_path: Path, body: bytes, status: int, words: str) -> None:
    async with running_bridge(tmp_path, TOKENS) as daemon:
        response = await post_watch(daemon, body)
        assert response.status_code == status, response.text
        assert words in response.json()["detail"]
        assert daemon.service.changes.watched_count() == 0


async def test_a_huge_body_is_refused_before_it_is_read(tmp_path: Path) -> None:
    settings = {**TOKENS, "http": {**TOKENS["http"], "max_body_bytes": 64 * 1024 * 1024}}
    async with running_bridge(tmp_path, settings) as daemon:
        huge = b'{"ids": ["' + b"a" * (watch.MAX_BODY_BYTES + 10) + b'"]}'
        response = await post_watch(daemon, huge)
        assert response.status_code == 413 and "a watch body's own limit" in response.json()["detail"]

        async def chunks() -> Any:  # no Content-Length: counted as it arrives
            for _ in range(watch.MAX_BODY_BYTES // 65536 + 2):
                yield b" " * 65536

        async with httpx.AsyncClient(base_url=daemon.base_url, timeout=WITHIN) as client:
            response = await client.post("/v1/requests:watch", content=chunks(),
                                         headers={**auth(RELAY), "content-type": "application/json"})
        assert response.status_code == 413


async def test_the_daemons_body_limit_holds_too(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, TOKENS) as daemon:
        response = await post_watch(daemon, b'{"ids": ["' + b"a" * 300_000 + b'"]}')
        assert response.status_code == 413 and response.json()["setting"] == "http.max_body_bytes"


async def test_no_token_or_a_wrong_one_is_refused(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, TOKENS) as daemon:
        rid = await create(daemon)
        body = b'{"ids": ["%s"]}' % rid.encode()
        assert (await post_watch(daemon, body, token="wrong")).status_code == 401
        async with httpx.AsyncClient(base_url=daemon.base_url, timeout=WITHIN) as client:
            response = await client.post("/v1/requests:watch", content=body,
                                         headers={"content-type": "application/json"})
        assert response.status_code == 401
        assert daemon.service.changes.watched_count() == 0


async def test_the_route_is_in_the_openapi_document(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as daemon, httpx.AsyncClient(base_url=daemon.base_url) as client:
        document = (await client.get("/openapi.json")).json()
    operation = document["paths"]["/v1/requests:watch"]["post"]
    assert "text/event-stream" in operation["responses"]["200"]["content"]
    schema = operation["requestBody"]["content"]["application/json"]["schema"]
    assert schema["properties"]["ids"]["maxItems"] == watch.MAX_IDS


async def test_many_closed_already_are_sent_a_few_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(watch, "REPORT_BATCH", 2)
    async with running_bridge(tmp_path, TOKENS) as daemon:
        ids = [await create(daemon) for _ in range(5)]
        for rid in ids:
            await answer(daemon, rid)
        for token in (RELAY, ANN):  # read through one query (act_for_others) and one by one
            async with watching(daemon.base_url, [*ids, "0000000000000000000"], headers=auth(token)) as stream:
                events = await stream.until(7)
            if token == RELAY:
                assert sorted(stream.closed_ids()) == sorted(ids)
            else:  # ann created none of them: each is missing to her
                assert [kind for kind, _ in events[:6]] == ["missing"] * 6
            assert events[6] == ("end", {"open": [], "reason": "done"})


async def test_an_id_made_to_forge_events_is_only_reported_missing(tmp_path: Path) -> None:
    forged = 'x\n\nevent: closed\ndata: {"id": "x"}\n\n'
    async with running_bridge(tmp_path, TOKENS) as daemon:
        async with watching(daemon.base_url, [forged, "../v1/sources", "' OR 1=1 --"], headers=auth(RELAY)) as stream:
            events = await stream.until(4)
        assert sorted(data["id"] for kind, data in events[:3]) == sorted([forged, "../v1/sources", "' OR 1=1 --"])
        assert [kind for kind, _ in events] == ["missing", "missing", "missing", "end"]


async def test_an_answer_by_another_process_on_the_sqlite_file_reaches_the_stream(tmp_path: Path) -> None:
    async with running_bridge(tmp_path, TOKENS) as daemon:
        ids = [await create(daemon), await create(daemon)]
        config = tmp_path / "cli.yaml"
        config.write_text(f"store: {{url: '{daemon.settings.store.url}'}}\nsources: [{{type: webhook}}]\n")
        async with watching(daemon.base_url, ids, headers=auth(RELAY)) as stream:
            cli = await asyncio.create_subprocess_exec(
                str(Path(sys.executable).parent / "hitl-bridge"), "-c", str(config), "answer", "--offline", ids[1],
                "no", "--as", "bob", stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, cwd=tmp_path)
            out, _ = await asyncio.wait_for(cli.communicate(), 60)
            assert cli.returncode == 0, out.decode()
            [(kind, data)] = await stream.until(1)  # the store's follower saw the foreign commit
        assert (kind, data["id"], data["answer"]["values"]) == ("closed", ids[1], {"ok": "no"})


async def test_a_stream_takes_as_many_ids_as_the_limit(tmp_path: Path) -> None:
    ids = [f"r_{n:019d}" for n in range(watch.MAX_IDS)]  # the bridge's id length: all in the default body limit
    async with running_bridge(tmp_path) as daemon:
        rid = await create(daemon)
        async with watching(daemon.base_url, [rid, *ids[1:]]) as stream:
            await wait_for(lambda: len(stream.events) >= watch.MAX_IDS - 1, 60)  # each unknown one: missing
            assert daemon.service.changes.watched_count() == 1
            await answer(daemon, rid)
            events = await stream.until(watch.MAX_IDS + 1)
        assert {kind for kind, _ in events[:-2]} == {"missing"}
        assert events[-2][0] == "closed" and events[-1] == ("end", {"open": [], "reason": "done"})
