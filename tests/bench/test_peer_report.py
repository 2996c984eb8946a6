"""The peer comparison's pure parts (bench/peer_report.py, bench/peer_servers.py, the callback
receiver of bench/peer_workloads.py): no awaithumans install, no server, no network."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import peer_report
import peer_servers
import peer_workloads

from bridge.config import load_settings
from bridge.models import RequestIn

PEER = "awaithumans 0.1.12"
ROUNDS = [
    {"hitl-bridge": {"intake_rate": 1500.0, "callback_p50": 2.0, "rss_idle": 80.0},
     PEER: {"intake_rate": 100.0, "callback_p50": 2500.0, "rss_idle": 120.0}},
    {"hitl-bridge": {"intake_rate": 1700.0, "callback_p50": 3.0, "rss_idle": 82.0},
     PEER: {"intake_rate": 120.0, "callback_p50": 3000.0, "rss_idle": 60.0}},
    {"hitl-bridge": {"intake_rate": 1600.0, "callback_p50": 4.0, "rss_idle": 81.0},
     PEER: {"intake_rate": 110.0, "callback_p50": 4000.0, "rss_idle": 61.0}},
]


def test_the_summary_is_the_median_of_the_rounds_with_their_spread() -> None:
    summary = peer_report.summarize(ROUNDS)
    assert summary["hitl-bridge"]["intake_rate"] == peer_report.Spread(1600.0, 1500.0, 1700.0, 3)
    assert summary[PEER]["callback_p50"] == peer_report.Spread(3000.0, 2500.0, 4000.0, 3)


def test_a_figure_is_met_only_when_the_bridge_is_better_in_the_metric_s_direction() -> None:
    figures = {f.name: f for f in peer_report.figures(peer_report.summarize(ROUNDS))}
    intake = figures["intake, 16 keep-alive clients"]  # higher is better
    assert intake.met is True and "1,600 creates/s vs 110 creates/s" in intake.value and "(15×)" in intake.value
    callback = figures["answer → callback p50"]  # lower is better
    assert callback.met is True and "(1,000×)" in callback.value
    memory = figures["RSS idle"]  # the peer uses less here: the bridge is behind
    assert memory.met is False and "behind, 1.3×" in memory.value
    assert intake.target == callback.target == memory.target == "bridge ahead"


def test_a_count_of_failures_is_met_when_the_bridge_has_no_more_than_the_peer() -> None:
    def failures(ours: float, theirs: float) -> bool | None:
        summary = peer_report.summarize([{"hitl-bridge": {"intake_failed": ours}, PEER: {"intake_failed": theirs}}])
        [figure] = [f for f in peer_report.figures(summary) if f.name.startswith("intake: creates that failed")]
        assert figure.target == "bridge ≤ peer"
        return figure.met

    assert (failures(0, 0), failures(0, 3), failures(2, 1)) == (True, True, False)


def test_a_metric_one_side_did_not_measure_is_said_so_never_invented() -> None:
    rounds = [{"hitl-bridge": {"deadline_p50": 3.0}, PEER: {}}]
    summary = peer_report.summarize(rounds)
    summary.setdefault(PEER, {})
    [figure] = [f for f in peer_report.figures(summary) if f.name == "deadline → timeout callback, lateness p50"]
    assert figure.value == f"not measured on {PEER}" and figure.met is None
    table = peer_report.markdown_table(summary, {"rounds": 1})
    assert "| deadline → timeout callback, lateness p50 | 3.00 ms | not offered | - |" in table


def test_the_markdown_table_has_every_metric_both_readings_the_spread_and_the_ratio() -> None:
    table = peer_report.markdown_table(peer_report.summarize(ROUNDS), {"rounds": 3, "intake creates": 9500})
    lines = table.splitlines()
    assert lines[0] == f"| Figure | hitl-bridge | {PEER} | bridge ahead by |"
    assert len([line for line in lines if line.startswith("| ")]) == 1 + len(peer_report.METRICS)
    assert "| intake, 16 keep-alive clients | 1,600 creates/s (1,500–1,700) | 110 creates/s (100–120) | 15× |" in lines
    assert "| RSS idle | 81.0 MiB (80.0–82.0) | 61.0 MiB (60.0–120) | behind, 1.3× |" in lines
    assert "Median of 3 interleaved rounds" in table and "intake creates 9,500" in table


def test_the_comparison_needs_the_bridge_and_exactly_one_peer() -> None:
    with pytest.raises(ValueError, match="the bridge and one peer"):
        peer_report.figures(peer_report.summarize([{"hitl-bridge": {"rss_idle": 1.0}}]))


def test_readings_are_written_as_json_that_reads_back(tmp_path: Path) -> None:
    path = peer_report.write_results(tmp_path / "out", ROUNDS, {"rounds": 3}, {"cores": 2})
    assert json.loads(path.read_text()) == {"meta": {"cores": 2}, "sizes": {"rounds": 3}, "rounds": ROUNDS}


def test_the_charts_are_pngs_one_per_chart_that_has_readings(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="charts need the bench extra (matplotlib)")
    written = peer_report.write_charts(tmp_path, peer_report.summarize(ROUNDS))
    assert sorted(p.name for p in written) == ["peers-intake.png", "peers-latency.png", "peers-memory.png"]
    for path in written:
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_number_format_keeps_about_three_significant_digits() -> None:
    assert [peer_report.fmt(v, "ms") for v in (0.4567, 4.567, 45.67, 4567.0)] == [
        "0.457 ms", "4.57 ms", "45.7 ms", "4,567 ms"]
    assert peer_report.fmt_ratio(float("inf")) == "∞×"


def test_the_bridge_s_configuration_and_request_are_ones_the_bridge_accepts(tmp_path: Path) -> None:
    config = tmp_path / "bridge.yaml"
    config.write_text(peer_servers.bridge_config(f"sqlite:///{tmp_path}/b.db", 18787, "t0ken-for-the-bench-123"))
    settings = load_settings(str(config), env={})
    assert settings.log_level == "WARNING"
    assert [t.token for t in settings.http.api_tokens.values()] == ["t0ken-for-the-bench-123"]
    bridge = peer_servers.BridgePeer("hitl-bridge", "http://127.0.0.1:1", 1, "t", "/v1/requests", "x", frozenset(),
                                     tmp_path / "log")
    request = RequestIn.model_validate(bridge.create_body("k-1", timeout_s=60, callback_url="http://127.0.0.1:9/hook"))
    assert request.timeout_s == 60 and request.external_id == "k-1"


def test_awaithumans_gets_the_same_question_and_timeout_and_its_own_environment(tmp_path: Path) -> None:
    peer = peer_servers.AwaitHumansPeer(PEER, "http://127.0.0.1:1", 1, "t", "/api/tasks", "x", frozenset(), tmp_path)
    body = peer.create_body("k-1", timeout_s=60, callback_url="http://127.0.0.1:9/hook")
    assert (body["task"], body["payload"], body["timeout_seconds"], body["idempotency_key"]) == (
        peer_servers.TITLE, peer_servers.CONTEXT, 60, "k-1")
    assert peer.wait_path("abc", 120) == "/api/tasks/abc/poll?timeout=30"  # its long poll's limit
    env = peer_servers.peer_env(tmp_path, "tok")
    assert env["AWAITHUMANS_DB_PATH"] == str(tmp_path / "awaithumans.db") and env["AWAITHUMANS_LOG_LEVEL"] == "WARNING"
    assert env["AWAITHUMANS_ADMIN_API_TOKEN"] == "tok" and len(env["AWAITHUMANS_PAYLOAD_KEY"]) >= 43


def test_an_installed_peer_is_not_assumed_where_there_is_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(peer_servers, "PEER_VENV", tmp_path / "nowhere")
    assert peer_servers.peer_version() is None


async def test_the_receiver_keeps_each_request_s_first_callback_and_ignores_nameless_ones() -> None:
    receiver = peer_workloads.Receiver()
    from starlette.applications import Starlette
    from starlette.routing import Route

    app = Starlette(routes=[Route("/hook", receiver.hook, methods=["POST"])])
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://receiver") as client:
        assert (await client.post("/hook", content=b"{}", headers={"x-hitl-request-id": "r_1"})).status_code == 204
        first = receiver.arrived["r_1"]
        await client.post("/hook", content=b"again", headers={"x-hitl-request-id": "r_1"})
        await client.post("/hook", content=b"\xff" * 1000)  # no id header: not counted
        await client.post("/hook", content=b"{}", headers={"x-awaithumans-task-id": "t1"})
    assert receiver.arrived["r_1"] == first and set(receiver.arrived) == {"r_1", "t1"}
    assert await receiver.wait_for(["r_1", "t1"], within_s=1) == receiver.arrived
    with pytest.raises(RuntimeError, match="1 of 2 callbacks did not arrive"):
        await receiver.wait_for(["r_1", "never"], within_s=0.05)


@pytest.mark.parametrize(("args", "said"), [(["--rounds", "0"], "--rounds must be at least 1"),
                                             (["--rounds", "x"], "invalid int value"),
                                             (["--out", "pyproject.toml"], "not a directory")])
def test_the_command_refuses_bad_arguments_before_starting_anything(args: list[str], said: str) -> None:
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, str(root / "bench" / "peer_compare.py"), *args], cwd=root,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and said in done.stderr
    assert "installing awaithumans" not in done.stdout


def test_redraw_makes_the_table_again_from_saved_readings_and_refuses_broken_ones(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    meta = {"date": "2026-11-27 05:09 UTC", "cores": 2, "load_at_start": 1.0, "load_at_end": 2.0,
            "bridge_commit": "abc1234"}
    peer_report.write_results(tmp_path, ROUNDS, {"rounds": 3}, meta)
    command = [sys.executable, str(root / "bench" / "peer_compare.py"), "--redraw", str(tmp_path)]
    done = subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    table = (tmp_path / "peers-table.md").read_text()
    assert "| intake, 16 keep-alive clients | 1,600 creates/s (1,500–1,700) |" in table and "abc1234" in table
    for broken in ("{not json", json.dumps({"rounds": "x"}), json.dumps({"meta": {}, "sizes": {}, "rounds": [1]})):
        (tmp_path / "peers.json").write_text(broken)
        done = subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=120)
        assert done.returncode == 2 and "no readings to draw from" in done.stderr
