"""A bridge full of requests as people meet them: one open request per kind of question,
and closed ones of every outcome (approved, rejected with a reason, answered by form, edited
arguments, a secret, expired by the timeout rule, cancelled, failed delivery, a standing
approval made and a call it decided; an open tool call that offers them), for the
browser tests. `ana` logs in with a personal token and belongs to the group `oncall`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import httpx

from bridge.daemon import Daemon
from bridge.links import link_for
from bridge.models import RequestState, Responder
from bridge.policy import GrantChoice, GrantScope
from tests.harness import wait_for
from tests.web.helpers import CHOICE, CONFIRM, EDIT, FORM, MULTI, SECRET, TEXT

ANA_TOKEN = "ana-web-token-0123456789"
BO = Responder(platform="slack", user_id="U0BO", name="bo")
CONFIG: dict[str, Any] = {
    "web": {"tokens": {"ana": ANA_TOKEN}, "poll_interval_s": 0.2},
    "people": {"ana": ["web:ana", "slack:U0ANA"], "bo": ["slack:U0BO"]},
    "groups": {"oncall": ["ana", "bo"]},
    "routes": [{"name": "two-keys", "match": {"labels.keys": "two"}, "notify": ["web"], "quorum": 2}],
}
DESCRIPTION = ("All checks passed on **staging**.\n\n- retries refunds\n- bumps TLS\n\n"
               "[notes](https://example.com/notes) | [bad](javascript:alert(1)) <b>raw</b>")
TOOL_CALL: dict[str, Any] = {"title": "Run npm test", "engine": "claude", "tool": "Bash", "session": "s-1",
                             "context": {"command": "npm test"},
                             "questions": [{"id": "approve", "kind": "confirm", "prompt": "Allow this call?"}]}
OPEN_KINDS = {"confirm": CONFIRM, "choice": CHOICE, "multi": MULTI, "text": TEXT, "secret": SECRET,
              "form": FORM, "edit": EDIT}


@dataclass
class Scene:
    daemon: Daemon
    ids: dict[str, str] = field(default_factory=dict)
    link: str = ""  # an emailed answer page (open request)
    closed_link: str = ""  # an emailed answer page of a closed request

    @property
    def base(self) -> str:
        return self.daemon.base_url


async def _create(client: httpx.AsyncClient, body: dict[str, Any]) -> str:
    response = await client.post("/v1/requests", json=body)
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


async def build(daemon: Daemon, receiver_url: str) -> Scene:
    """Fill `daemon`; `receiver_url` answers 410 to callbacks (a delivery that gives up)."""
    scene = Scene(daemon)
    service = daemon.service
    async with httpx.AsyncClient(base_url=daemon.base_url) as client:
        async def closed(name: str, body: dict[str, Any]) -> str:
            scene.ids[name] = await _create(client, {**body, "title": f"{body['title']} ({name})"})
            return scene.ids[name]

        await service.answer(await closed("approved", CONFIRM), BO, {"ok": "yes"}, via="slack")
        await service.answer(await closed("rejected", CONFIRM), BO, {"ok": "no"}, via="slack",
                             reason="change freeze until Monday")
        await service.answer(await closed("formed", FORM), BO, {"vendor": {"company": "Globex", "tier": "gold"}},
                             via="slack")
        await service.answer(await closed("edited", EDIT), BO, {"args": {"replicas": 5, "image": "api:2"}},
                             via="slack")
        await service.answer(await closed("secreted", SECRET), BO, {"password": "pw-never-shown"}, via="slack")
        await service.answer_on_timeout(await closed("timed-out", CONFIRM), "no")
        await service.cancel(await closed("cancelled", CONFIRM), actor="api:ci", reason="run deleted")
        failing = await closed("failed", {**CONFIRM, "callback": {"url": receiver_url, "secret": "s" * 32}})
        await service.answer(failing, BO, {"ok": "yes"}, via="slack")
        for name, body in OPEN_KINDS.items():
            extra = {"description": DESCRIPTION, "responders": ["group:oncall"],
                     "context": {"ticket": "SUP-1", "nested": {"a": [1, 2], "long": "x " * 300}}} \
                if name == "confirm" else {}
            scene.ids[name] = await _create(client, {**body, **extra, "timeout_s": 3600})
        scene.ids["quorum"] = await _create(client, {**CONFIRM, "title": "Two keys", "labels": {"keys": "two"}})
        # standing approvals: one made with an answer, a call it decided, a call that offers them
        await service.answer(await closed("granted", TOOL_CALL), BO, {"approve": "yes"}, via="slack",
                             grant=GrantChoice(scope=GrantScope.span, span_s=3600))
        scene.ids["decided"] = await _create(client, {**TOOL_CALL, "title": "Run npm test again"})
        scene.ids["tool"] = await _create(client, {**TOOL_CALL, "tool": "Edit", "title": "Edit src/app.ts",
                                                   "context": {"file_path": "src/app.ts"}})
    await service.answer(scene.ids["quorum"], BO, {"ok": "yes"}, via="slack")
    scene.link = "/inbox/a/" + (await link_for(daemon.store, scene.ids["confirm"], "email:bo@example.com",
                                               deadline=None)).token
    scene.closed_link = "/inbox/a/" + (await link_for(daemon.store, scene.ids["rejected"], "email:bo@example.com",
                                                      deadline=None)).token

    async def failed() -> bool:
        request = await service.get(failing)
        return request is not None and request.state is RequestState.failed

    await wait_for(failed, 10)
    await service.drain()
    return scene
