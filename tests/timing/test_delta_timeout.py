"""Deadlines reaching a Delta Engine mailbox: `fail` writes no response.txt and marks the
request expired; `answer` writes the timeout's value like a person's answer."""

from __future__ import annotations

from pathlib import Path

from bridge.models import RequestState
from tests.delta.bridgekit import delta_config, wait_request, wait_state
from tests.delta.helpers import make_v1_10_workspace
from tests.harness import ManualClock, merge, wait_for
from tests.timing.helpers import bridge_on, kinds, step


def config(root: Path, on_timeout: dict[str, object]) -> dict[str, object]:
    return merge(delta_config([str(root / "w*")]), {
        "routes": [{"name": "delta-deploys", "match": {"source": "delta"}, "notify": ["web"],
                    "timeout": "30m", "on_timeout": on_timeout}]})


async def test_fail_leaves_the_mailbox_without_response(tmp_path: Path) -> None:
    mailbox = make_v1_10_workspace(tmp_path / "w1", request="request.confirmation.json")
    clock = ManualClock()
    async with bridge_on(tmp_path, clock, config(tmp_path, {"fail": True})) as daemon:
        request = await wait_request(daemon, lambda r: True)
        await step(daemon, clock, minutes=30)
        expired = await wait_state(daemon, request.id, "expired")
        assert expired.answer is None and expired.error is not None

        async def delivered() -> bool:
            return "delivered" in await kinds(daemon, request.id)

        await wait_for(delivered, 5)  # the outbox handed the outcome to the Delta source
        assert not (mailbox / "response.txt").exists()
        assert (await daemon.store.get_request(request.id)).state is RequestState.expired  # type: ignore[union-attr]


async def test_timeout_answer_is_written_like_a_human_answer(tmp_path: Path) -> None:
    mailbox = make_v1_10_workspace(tmp_path / "w1", request="request.confirmation.json")
    clock = ManualClock()
    async with bridge_on(tmp_path, clock, config(tmp_path, {"answer": "no"})) as daemon:
        request = await wait_request(daemon, lambda r: True)
        await step(daemon, clock, minutes=30)
        await wait_for(lambda: (mailbox / "response.txt").exists(), 5)
        assert (mailbox / "response.txt").read_text().strip().lower() in ("no", "n", "false")
        closed = await wait_state(daemon, request.id, "delivered")
        assert closed.answer is not None and closed.answer.via == "timeout"
