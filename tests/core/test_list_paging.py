"""`GET /v1/requests` pages: `next` names the last row of a full page, `before=` gives the
following one (each request once, newest first); an unknown cursor is refused."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.harness import running_bridge

CONFIRM = {"title": "Deploy api to prod?", "questions": [{"id": "ok", "kind": "confirm", "prompt": "Deploy?"}]}


async def test_pages_follow_next_until_the_end(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as daemon, httpx.AsyncClient(base_url=daemon.base_url) as client:
        made = []
        for i in range(7):
            created = await client.post("/v1/requests", json={**CONFIRM, "external_id": f"e{i}"})
            assert created.status_code == 201
            made.append(created.json()["id"])
        everything = (await client.get("/v1/requests", params={"limit": 100})).json()
        assert [r["id"] for r in everything["requests"]] == list(reversed(made))
        assert "next" not in everything
        seen: list[str] = []
        params: dict[str, str | int] = {"limit": 3}
        while True:
            page = (await client.get("/v1/requests", params=params)).json()
            seen += [r["id"] for r in page["requests"]]
            if "next" not in page:
                break
            params = {"limit": 3, "before": page["next"]}
        assert seen == list(reversed(made))
        answered = await client.post(f"/v1/requests/{made[3]}/answer", json={"value": True})
        assert answered.status_code == 200
        open_page = (await client.get("/v1/requests", params=[("state", "pending"), ("state", "posted"),
                                                              ("limit", "2"), ("before", made[5])])).json()
        assert [r["id"] for r in open_page["requests"]] == [made[4], made[2]]  # made[3] is answered
        unknown = await client.get("/v1/requests", params={"before": "r_nosuchrequest"})
        assert unknown.status_code == 400 and "before" in unknown.json()["detail"]
