"""config/monitoring: the Prometheus alert rules and the Grafana dashboard name only series a
running bridge exports (scraped live after a request went through), and are well formed."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import yaml

from tests.harness import callback_receiver, running_bridge, wait_for

MONITORING = Path(__file__).resolve().parents[2] / "config" / "monitoring"
METRIC = re.compile(r"\b((?:hitl|process|python)_[a-z_]+)\b")
PROMQL_WORDS = {"histogram_quantile"}


def rules() -> list[dict[str, object]]:
    data = yaml.safe_load((MONITORING / "alerts.yaml").read_text())
    return [rule for group in data["groups"] for rule in group["rules"]]


def dashboard_exprs() -> list[str]:
    data = json.loads((MONITORING / "grafana-dashboard.json").read_text())
    return [t["expr"] for p in data["panels"] for t in p.get("targets", [])]


def test_rules_and_panels_are_well_formed() -> None:
    names = [str(r["alert"]) for r in rules()]
    assert len(names) == len(set(names)) and {"HitlBridgeNotReady", "HitlBridgePostsFailing", "HitlBridgeDeadLetters",
                                              "HitlBridgeTimeToAnswerObjective"} <= set(names)
    for rule in rules():
        assert set(rule) >= {"alert", "expr", "labels", "annotations"}, rule["alert"]
        assert str(rule["expr"]).count("(") == str(rule["expr"]).count(")"), rule["alert"]
    data = json.loads((MONITORING / "grafana-dashboard.json").read_text())
    ids = [p["id"] for p in data["panels"]]
    assert len(ids) == len(set(ids)) and all("gridPos" in p for p in data["panels"])
    for expr in dashboard_exprs():
        assert expr.count("(") == expr.count(")"), expr


async def test_every_series_named_is_exported(tmp_path: Path) -> None:
    async with callback_receiver() as rx, running_bridge(tmp_path) as bridge, \
            httpx.AsyncClient(base_url=bridge.base_url) as http:
        rid = (await http.post("/v1/requests", json={
            "title": "Deploy?", "questions": [{"kind": "confirm", "prompt": "Go?"}],
            "callback": {"url": rx.url, "secret": "whsec-0123456789abcdef"}})).json()["id"]
        await http.post(f"/v1/requests/{rid}/answer", json={"value": "yes"})
        await wait_for(lambda: rx.received)
        await bridge.service.drain()

        async def delivered() -> bool:
            return (await http.get(f"/v1/requests/{rid}")).json()["state"] == "delivered"

        await wait_for(delivered)
        exported = {line.split("{")[0].split(" ")[0] for line in (await http.get("/metrics")).text.splitlines()
                    if line and not line.startswith("#")}
    named = {m for expr in [*(str(r["expr"]) for r in rules()), *dashboard_exprs()] for m in METRIC.findall(expr)}
    named -= PROMQL_WORDS
    assert named, "no metric found in the rules"
    assert sorted(named - exported) == []
