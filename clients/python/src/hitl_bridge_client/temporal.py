"""Ask people from a Temporal workflow: an activity creates the request, the bridge answers
with a workflow update (or signal). Needs `temporalio` (`pip install hitl-bridge-client[temporal]`).

On the worker, register the activity::

    activities = BridgeActivities(AsyncClient("http://127.0.0.1:8787", token=...))
    Worker(client, task_queue="deploys", workflows=[Deploy], activities=[activities.create_request])

In the workflow, make a `People` in `__init__` (it registers the answer handler) and ask::

    with workflow.unsafe.imports_passed_through():
        from hitl_bridge_client.temporal import People

    @workflow.defn
    class Deploy:
        def __init__(self) -> None:
            self.people = People()

        @workflow.run
        async def run(self, service: str) -> str:
            answer = await self.people.ask(
                {"title": f"Deploy {service}?", "questions": [{"id": "ok", "kind": "confirm", "prompt": "Deploy?"}]},
                key="deploy")
            return answer.values["ok"]

The request's external id is made from the workflow run and `key`, so a retried activity
finds the request it made; the bridge sends the answer as an update whose id is the
request id, so a retried delivery is the same update. A workflow that ends (or is reset)
while the request is open makes the bridge withdraw it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from hitl_bridge_client.calls import Call, part
from hitl_bridge_client.errors import BridgeRefused

try:
    from temporalio import activity, workflow
    from temporalio.common import RetryPolicy
    from temporalio.exceptions import ApplicationError
except ImportError as exc:  # pragma: no cover - the message is the point
    raise ImportError("hitl_bridge_client.temporal needs the Temporal SDK: "
                      "pip install 'hitl-bridge-client[temporal]'") from exc

#: the activity's registered name (the workflow calls it by name: no activity code in the sandbox)
CREATE_ACTIVITY = "hitl_bridge.create_request"
#: the update (and signal) the bridge sends the outcome to
ANSWER_HANDLER = "hitl_bridge_answer"
CLOSED_STATES = frozenset({"answered", "expired", "cancelled"})


@dataclass(frozen=True)
class PersonAnswer:
    """The outcome the bridge sent: the answer's values, who gave it, and the final state."""

    request_id: str
    state: str
    values: dict[str, Any] | None
    responder: str | None = None
    reason: str | None = None
    via: str | None = None
    answered_at: str | None = None


class RequestClosed(ApplicationError):
    """The request closed without an answer (cancelled in the bridge, or expired): the
    workflow's `ask` raises it, non-retryable, with the state."""

    def __init__(self, outcome: PersonAnswer) -> None:
        super().__init__(f"request {outcome.request_id} was {outcome.state} without an answer",
                         outcome.state, type="RequestClosed", non_retryable=True)
        self.outcome = outcome


def read_outcome(payload: Any) -> PersonAnswer:
    """The bridge's payload as a PersonAnswer; a ValueError for anything else (the update's
    validator refuses it before it reaches the workflow's history)."""
    if not isinstance(payload, dict):
        raise ValueError("the answer must be a JSON object")
    request_id, state, values = payload.get("request_id"), payload.get("state"), payload.get("values")
    if not isinstance(request_id, str) or not request_id or len(request_id) > 200:
        raise ValueError("request_id: missing or not a short string")
    if state not in CLOSED_STATES:
        raise ValueError(f"state: one of {sorted(CLOSED_STATES)}")
    if values is not None and not isinstance(values, dict):
        raise ValueError("values: an object or null")
    extra = {k: payload.get(k) if isinstance(payload.get(k), str) else None
             for k in ("responder", "reason", "via", "answered_at")}
    return PersonAnswer(request_id=request_id, state=state, values=values, **extra)


class People:
    """Workflow-side: asks through the activity and waits for the bridge's update. Make one
    in the workflow's `__init__` (handlers must exist before the first update arrives)."""

    def __init__(self, handler: str = ANSWER_HANDLER, *, deliver_as: str = "update",
                 source: str = "temporal") -> None:
        if deliver_as not in ("update", "signal"):
            raise ValueError("deliver_as: 'update' or 'signal'")
        self.handler, self.deliver_as, self.source = handler, deliver_as, source
        self.outcomes: dict[str, PersonAnswer] = {}
        if deliver_as == "update":
            workflow.set_update_handler(handler, self._on_update, validator=self._validate)
        else:
            workflow.set_signal_handler(handler, self._on_signal)

    def _validate(self, payload: Any) -> None:
        read_outcome(payload)

    def _on_update(self, payload: Any) -> str:
        outcome = read_outcome(payload)
        if outcome.request_id in self.outcomes:
            return "already recorded"  # the bridge retried: the first one stands
        self.outcomes[outcome.request_id] = outcome
        return "recorded"

    def _on_signal(self, payload: Any) -> None:
        try:
            outcome = read_outcome(payload)
        except ValueError:
            workflow.logger.warning("hitl-bridge: a malformed answer signal was ignored")
            return
        self.outcomes.setdefault(outcome.request_id, outcome)

    async def ask(self, request: dict[str, Any], *, key: str, max_wait: timedelta | None = None,
                  activity_timeout: timedelta = timedelta(seconds=60),
                  retry_policy: RetryPolicy | None = None) -> PersonAnswer:
        """Create the request (the activity, retried safely) and wait for its outcome.
        Raises RequestClosed when it closed without an answer, and asyncio.TimeoutError
        after `max_wait` (the request stays open in the bridge until it expires there)."""
        ask = {"request": request, "key": key, "handler": self.handler,
               "deliver_as": self.deliver_as, "source": self.source}
        request_id: str = await workflow.execute_activity(
            CREATE_ACTIVITY, ask, start_to_close_timeout=activity_timeout,
            retry_policy=retry_policy or RetryPolicy(maximum_interval=timedelta(seconds=30)),
            result_type=str)
        await workflow.wait_condition(lambda: request_id in self.outcomes, timeout=max_wait)
        outcome = self.outcomes[request_id]
        if outcome.values is None:
            raise RequestClosed(outcome)
        return outcome


class BridgeActivities:
    """Worker-side: the activity that creates the request through the bridge's HTTP API."""

    def __init__(self, client: Any) -> None:
        self.client = client  # a hitl_bridge_client.AsyncClient

    @activity.defn(name=CREATE_ACTIVITY)
    async def create_request(self, ask: dict[str, Any]) -> str:
        """POST the request with the run that waits; the request id (the same on a retry)."""
        info = activity.info()
        source = str(ask.get("source") or "temporal")
        body = {"request": ask.get("request"), "workflow": {
            "namespace": info.workflow_namespace, "workflow_id": info.workflow_id,
            "run_id": info.workflow_run_id, "key": ask.get("key"), "handler": ask.get("handler"),
            "deliver_as": ask.get("deliver_as"), "workflow_type": info.workflow_type}}

        def flow() -> Any:
            view = yield Call("POST", f"/v1/temporal/{source}/requests", json=body, resend=True, creates=True)
            return str(part(view, "id"))

        try:
            request_id: str = await self.client._run(flow())
        except BridgeRefused as exc:
            if exc.status in (408, 429) or exc.status >= 500:
                raise  # the bridge is busy or restarting: Temporal retries the activity
            # the same body would be refused again: fail the ask, not retry it forever
            raise ApplicationError(str(exc), exc.status, type="RequestRefused", non_retryable=True) from None
        return request_id


__all__ = ["ANSWER_HANDLER", "CREATE_ACTIVITY", "BridgeActivities", "People", "PersonAnswer",
           "RequestClosed", "read_outcome"]
