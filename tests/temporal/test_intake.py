"""The temporal source's intake (`POST /v1/temporal/<name>/requests`) and the workflow side's
reading of the bridge's payload: retries find the same request, bad bodies get clear errors.
A real daemon; no Temporal server is needed to ask (only to answer)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hitl_bridge_client.temporal import read_outcome

from adapters.temporal.intake import IntakeRefused, WorkflowRef, external_id, parse_ask
from tests.harness import running_bridge

TOKEN = "temporal-intake-token"
PATH = "/v1/temporal/temporal/requests"


def ask(**workflow: Any) -> dict[str, Any]:
    ref = {"namespace": "default", "workflow_id": "deploy-1", "run_id": "run-1", "key": "deploy", **workflow}
    return {"request": {"title": "Deploy?", "questions": [{"id": "ok", "kind": "confirm", "prompt": "Deploy?"}]},
            "workflow": ref}


@pytest.fixture
async def http(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    config = {"http": {"api_tokens": {"worker": TOKEN}, "max_body_bytes": 65536},
              "sources": [{"type": "webhook"}, {"type": "temporal", "address": "127.0.0.1:9"}]}
    async with running_bridge(tmp_path, config) as daemon:
        async with httpx.AsyncClient(base_url=daemon.base_url,
                                     headers={"authorization": f"Bearer {TOKEN}"}) as client:
            yield client


async def test_a_retried_activity_finds_its_request(http: httpx.AsyncClient) -> None:
    first = await http.post(PATH, json=ask())
    again = await http.post(PATH, json=ask())
    other_run = await http.post(PATH, json=ask(run_id="run-2"))
    assert (first.status_code, again.status_code, other_run.status_code) == (201, 200, 201)
    assert first.json()["id"] == again.json()["id"] != other_run.json()["id"]
    assert first.json()["source"] == "temporal"
    assert first.json()["created_by"] == "api:worker"


@pytest.mark.parametrize(("body", "says"), [
    ([1, 2], "JSON object"),
    ({"request": ask()["request"]}, "workflow"),
    (ask(namespace="payments"), "serves namespace 'default'"),
    (ask(handler="no spaces allowed"), "handler"),
    (ask(deliver_as="email"), "deliver_as"),
    (ask(extra="x"), "extra"),
    ({**ask(), "request": {**ask()["request"], "questions": [{"id": "pw", "kind": "secret", "prompt": "Password?"}]}},
     "secret answer would be kept in clear"),
    (ask(workflow_id=""), "workflow_id"),
    (ask(key="k" * 201), "key"),
])
async def test_bad_bodies_are_refused_with_the_field_named(http: httpx.AsyncClient, body: Any, says: str) -> None:
    reply = await http.post(PATH, json=body)
    assert reply.status_code == 422, reply.text
    assert says in reply.json()["detail"]


async def test_forged_broken_and_oversized_bodies(http: httpx.AsyncClient) -> None:
    no_token = await http.post(PATH, json=ask(), headers={"authorization": "Bearer wrong"})
    assert no_token.status_code == 401
    broken = await http.post(PATH, content=b'{"request": ', headers={"content-type": "application/json"})
    assert broken.status_code == 422 and "not valid JSON" in broken.json()["detail"]
    surrogate = await http.post(PATH, content=json.dumps(ask(key="\ud800")).encode(),
                                headers={"content-type": "application/json"})
    assert surrogate.status_code == 422 and "lone surrogate" in surrogate.json()["detail"]
    huge = ask()
    huge["request"]["context"] = {"blob": "x" * 70_000}
    assert (await http.post(PATH, json=huge)).status_code == 413


def test_external_id_is_short_and_distinct_for_any_workflow_id() -> None:
    request, ref = parse_ask(ask(workflow_id="w" * 1000), "default")
    assert request.external_id is not None and len(request.external_id) <= 200
    assert request.context["temporal"]["run_id"] == "run-1" and ref["deliver_as"] == "update"
    a, _ = parse_ask(ask(key="a"), "default")
    b, _ = parse_ask(ask(key="b"), "default")
    assert a.external_id != b.external_id
    with pytest.raises(IntakeRefused):
        parse_ask("not an object", "default")
    ref = WorkflowRef(namespace="default", workflow_id="deploy-1", run_id="run-1", key="deploy")
    assert parse_ask(ask(), "default")[0].external_id == external_id(ref)


@pytest.mark.parametrize("payload", [
    None, [], {"state": "answered"}, {"request_id": "r", "state": "maybe"},
    {"request_id": "r", "state": "answered", "values": ["yes"]}, {"request_id": "r" * 201, "state": "answered"},
])
def test_the_workflow_refuses_malformed_answers(payload: Any) -> None:
    with pytest.raises(ValueError):
        read_outcome(payload)


def test_the_workflow_reads_the_bridges_payload() -> None:
    outcome = read_outcome({"request_id": "r_1", "state": "answered", "values": {"ok": "yes"},
                            "responder": "slack:U1", "reason": 5})
    assert outcome.values == {"ok": "yes"} and outcome.responder == "slack:U1" and outcome.reason is None


def test_the_helper_says_what_to_install_when_the_sdk_is_missing() -> None:
    import subprocess
    import sys

    probe = "import sys; sys.modules['temporalio'] = None; import hitl_bridge_client.temporal"
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert run.returncode == 1 and "pip install 'hitl-bridge-client[temporal]'" in run.stderr
