"""SIGHUP on a real `hitl-bridge serve`: a good config swaps the routes (and says what changed,
and what needs a restart); a bad one is refused and the running config stays. The daemon
logs JSON lines (`log_format: json`) all along."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import sys
from pathlib import Path
from typing import Any

import httpx

from bridge.config import load_settings
from bridge.reload import plan_reload
from tests.harness import wait_for


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def config_text(tmp_path: Path, port: int, routes: str, extra: str = "") -> str:
    return (f"store: {{url: 'sqlite:///{tmp_path}/bridge.db'}}\nhttp: {{listen: '127.0.0.1:{port}'}}\n"
            f"log_format: json\nsources: [{{type: webhook}}]\n{extra}routes:\n{routes}")


OPS = "  - {name: deploys, match: {team: ops}, notify: ['web:ops']}\n"
OPS_MOVED = ("  - {name: payments, match: {team: pay}, notify: ['web:pay']}\n"
             "  - {name: deploys, match: {team: ops}, notify: ['web:oncall'], responders: ['web:ana']}\n")


def log_lines(path: Path) -> list[dict[str, Any]]:
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            out.append({"message": line})  # a line that is not JSON fails the test below
    return out


async def test_sighup_applies_a_good_config_and_keeps_the_running_one_when_bad(tmp_path: Path) -> None:
    port = free_port()
    config = tmp_path / "hitl-bridge.yaml"
    config.write_text(config_text(tmp_path, port, OPS))
    log = tmp_path / "daemon.log"
    exe = Path(sys.executable).parent / "hitl-bridge"
    with log.open("w") as out:
        proc = await asyncio.create_subprocess_exec(
            str(exe), "serve", "--config", str(config), stdout=out, stderr=asyncio.subprocess.STDOUT, cwd=tmp_path,
            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    base = f"http://127.0.0.1:{port}"
    try:
        async with httpx.AsyncClient(base_url=base) as http:
            async def up() -> bool:
                try:
                    return (await http.get("/healthz")).status_code == 200
                except httpx.HTTPError:
                    return False

            await wait_for(up, 30)

            async def targets_for(team: str) -> list[str]:
                created = await http.post("/v1/requests", json={
                    "title": "Deploy?", "labels": {"team": team},
                    "questions": [{"kind": "confirm", "prompt": "Go?"}]})
                return list(created.json()["targets"])

            def said(text: str) -> bool:
                return any(text in str(line.get("message")) for line in log_lines(log))

            assert await targets_for("ops") == ["web:ops"]

            config.write_text(config_text(tmp_path, port, OPS_MOVED, "delivery: {timeout: 20s}\n"))
            proc.send_signal(signal.SIGHUP)
            await wait_for(lambda: said("config reloaded from"), 15)
            assert await targets_for("ops") == ["web:oncall"]
            assert await targets_for("pay") == ["web:pay"]
            reloaded = next(line for line in log_lines(log) if line.get("event") == "reloaded")
            assert reloaded["changes"] == ["route payments added", "route deploys: notify, responders changed"]
            assert said(f"reload: delivery changed in {config}; it takes effect after a restart")

            config.write_text(config_text(tmp_path, port, "  - {name: deploys, notify: ['slack:#deploys']}\n"))
            proc.send_signal(signal.SIGHUP)
            await wait_for(lambda: said("reload refused, the running config stays"), 15)
            assert await targets_for("ops") == ["web:oncall"]  # still the last good routes

            config.write_text(config_text(tmp_path, port, "  - {name: deploys, match: {team: '${TEAM}'}}\n"))
            proc.send_signal(signal.SIGHUP)
            await wait_for(lambda: said("routes[0].match.team: ${TEAM} is not set"), 15)
            assert await targets_for("ops") == ["web:oncall"]
            metrics = (await http.get("/metrics")).text
            assert 'hitl_config_reloads_total{result="ok"} 1.0' in metrics
            assert 'hitl_config_reloads_total{result="refused"} 2.0' in metrics
            assert "hitl_config_last_reload_successful 0.0" in metrics
            assert (await http.get("/readyz")).status_code == 200

            reader, writer = await asyncio.open_connection("127.0.0.1", port)  # uvicorn logs this one
            writer.write(b"\x16\x03\x01 this is not HTTP\r\n\r\n")
            await writer.drain()
            await reader.read()
            writer.close()
            await wait_for(lambda: said("Invalid HTTP request received."), 15)
    finally:
        proc.terminate()
        await asyncio.wait_for(proc.wait(), 30)
    lines = log_lines(log)  # every line JSON, uvicorn's too
    assert all("level" in line and "time" in line for line in lines), [ln for ln in lines if "level" not in ln]
    refused = next(line for line in lines if str(line["message"]).startswith("reload refused"))
    assert refused["level"] == "ERROR" and "target 'slack:#deploys' has no configured channel" in refused["message"]
    created = [line for line in lines if line.get("event") == "created"]
    assert len(created) == 5 and all(line["request_id"].startswith("r_") for line in created)


def test_a_reload_plan_names_what_changed_and_what_needs_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(config_text(tmp_path, 8787, OPS))
    current = load_settings(str(path), env={})
    path.write_text(config_text(tmp_path, 9999, OPS_MOVED))
    plan = plan_reload(current, load_settings(str(path), env={}))
    assert plan.needs_restart == ["http"]
    assert plan.settings.http.port == 8787  # kept: the listen address needs a restart
    assert [r.name for r in plan.settings.routes] == ["payments", "deploys"]
    assert plan.settings.origin == str(path)
    swapped = "".join(reversed(OPS_MOVED.splitlines(keepends=True)))
    path.write_text(config_text(tmp_path, 8787, swapped))
    plan = plan_reload(load_settings(str(path), env={}).model_copy(update={"routes": plan.settings.routes}),
                       load_settings(str(path), env={}))
    assert plan.changes == ["route order changed (first match wins)"] and plan.needs_restart == []
