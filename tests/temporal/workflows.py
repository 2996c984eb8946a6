"""Workflows that ask people through hitl_bridge_client.temporal (run by the tests' worker)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from hitl_bridge_client.temporal import People, RequestClosed


def approval(service: str) -> dict[str, Any]:
    return {"title": f"Deploy {service}?", "labels": {"service": service},
            "questions": [{"id": "ok", "kind": "confirm", "prompt": f"Deploy {service} to prod?"}]}


@workflow.defn
class DeployWorkflow:
    """Asks once (update delivery) and returns what the person said, and who."""

    def __init__(self) -> None:
        self.people = People()

    @workflow.run
    async def run(self, service: str) -> dict[str, Any]:
        try:
            answer = await self.people.ask(approval(service), key="deploy")
        except RequestClosed as exc:
            return {"closed": exc.outcome.state}
        return {"ok": (answer.values or {}).get("ok"), "by": answer.responder,
                "outcomes": len(self.people.outcomes)}


@workflow.defn
class SignalledWorkflow:
    """The same question, answered by signal."""

    def __init__(self) -> None:
        self.people = People(deliver_as="signal")

    @workflow.run
    async def run(self, service: str) -> dict[str, Any]:
        answer = await self.people.ask(approval(service), key="deploy", max_wait=timedelta(minutes=5))
        return {"ok": (answer.values or {}).get("ok")}
