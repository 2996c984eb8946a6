"""Standing approvals in the inbox (HTML forms, no JS), on the emailed answer page and on the
"Standing approvals" page: a grant button approves and grants; the check step says what it
will grant; requests a grant decided read "Decided automatically"; the page lists grants and
revokes them behind CSRF. Hostile input: a forged or unoffered key, a pattern wider than the
default, a revocation without (or with a wrong) CSRF token, an unknown or malformed grant id."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bridge.links import link_for
from tests.harness import running_bridge
from tests.web.helpers import Person, create, text_of


def call(command: str, *, tool: str = "Bash", session: str | None = "sess-1") -> dict[str, Any]:
    return {"title": f"Allow {tool}: {command}", "engine": "claude", "tool": tool, "session": session,
            "context": {"command": command},
            "questions": [{"id": "approve", "kind": "confirm", "prompt": "Allow?"}]}


async def test_a_grant_button_in_the_inbox_approves_grants_and_decides_the_next_call(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as bridge, Person(bridge.base_url) as person:
        rid = await create(bridge, call("npm test -- --watch=false"))
        page = await person.open(rid)
        for label in ("Allow once", "Allow for this session", "Allow for 1 hour", "Always allow this"):
            assert label in page.text
        assert 'name="grant" value="span:3600"' in page.text
        assert 'name="grant_pattern"' in page.text and 'value="Bash(npm test:*)"' in page.text

        check = await person.submit(f"/inbox/r/{rid}/confirm", {"grant": "span:3600"})
        assert check.status_code == 200 and "You are about to approve and allow for 1 hour" in text_of(check.text)
        assert 'name="grant" value="span:3600"' in check.text  # posted again with the answer
        assert (await bridge.service.get(rid)).is_open  # type: ignore[union-attr]

        response = await person.submit(f"/inbox/r/{rid}/answer", {"grant": "span:3600", "grant_pattern": "x"})
        assert response.status_code == 303, response.text
        stored = await bridge.service.get(rid)
        assert stored is not None and stored.answer is not None and stored.answer.values == {"approve": "yes"}
        made = stored.answer.grant
        assert made is not None and made.pattern == "Bash"  # for a span the typed pattern is not read
        shown = text_of((await person.get(f"/inbox/r/{rid}")).text)
        assert "Allowed for 1 hour by local" in shown and "until" in shown

        decided = await create(bridge, call("git status"))
        auto = await bridge.service.get(decided)
        assert auto is not None and auto.answer is not None and auto.answer.responder.platform == "grant"
        view = text_of((await person.get(f"/inbox/r/{decided}")).text)
        assert f"Approved automatically by grant {stored.answer.grant.grant_id}" in view
        assert "Decided automatically" in view
        listing = text_of((await person.get("/inbox?view=all")).text)
        assert "Decided automatically" in listing
        other = await create(bridge, call("./src/app.py", tool="Edit"))
        assert (await bridge.service.get(other)).is_open  # type: ignore[union-attr]


async def test_always_allow_takes_a_narrower_pattern_and_refuses_a_wider_one(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as bridge, Person(bridge.base_url) as person:
        rid = await create(bridge, call("npm test -- --watch=false"))
        await person.open(rid)
        for wider in ("Bash(*)", "Bash", "Edit(./src/**)", "Bash(npm test:*) && rm -rf /"):
            refused = await person.submit(f"/inbox/r/{rid}/answer", {"grant": "always", "grant_pattern": wider})
            assert refused.status_code == 422, wider
            assert "pattern refused" in text_of(refused.text)
        assert (await bridge.service.get(rid)).is_open and await bridge.service.list_grants() == []  # type: ignore[union-attr]
        await person.open(rid)
        ok = await person.submit(f"/inbox/r/{rid}/answer",
                                 {"grant": "always", "grant_pattern": "Bash(npm test -- --watch=false)"})
        assert ok.status_code == 303, ok.text
        [grant] = await bridge.service.list_grants()
        assert grant.scope == "always" and grant.pattern == "Bash(npm test -- --watch=false)"


async def test_forged_or_unoffered_grant_keys_record_nothing(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as bridge, Person(bridge.base_url) as person:
        rid = await create(bridge, call("make build", session=None))
        page = await person.open(rid)
        assert "Allow for this session" not in page.text
        for key in ("session", "span:99999999", "forever", "span:-1", "x" * 5000, ""):
            refused = await person.submit(f"/inbox/r/{rid}/answer", {"grant": key})
            assert refused.status_code == 422, key
            assert "not offered" in refused.text or "not valid" in refused.text
        rejecting = await person.submit(f"/inbox/r/{rid}/answer", {"q.approve": "no", "grant": "span:3600"})
        assert rejecting.status_code == 422 and "goes with an approval" in rejecting.text
        plain = await create(bridge, {"title": "Pick", "questions": [
            {"id": "c", "kind": "choice", "prompt": "Which?", "options": ["a", "b"]}]})
        await person.open(plain)
        refused = await person.submit(f"/inbox/r/{plain}/answer", {"q.c": "a", "grant": "span:3600"})
        assert refused.status_code == 422
        assert await bridge.service.list_grants() == []
        assert (await bridge.service.get(rid)).is_open and (await bridge.service.get(plain)).is_open  # type: ignore[union-attr]


async def test_the_standing_approvals_page_lists_and_revokes_behind_csrf(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as bridge, Person(bridge.base_url) as person:
        empty = await person.get("/inbox/grants")
        assert empty.status_code == 200 and "No standing approvals." in text_of(empty.text)
        rid = await create(bridge, call("npm test"))
        await person.open(rid)
        assert (await person.submit(f"/inbox/r/{rid}/answer", {"grant": "span:3600"})).status_code == 303
        [grant] = await bridge.service.list_grants()
        page = await person.get("/inbox/grants")
        shown = text_of(page.text)
        assert "Allowed for 1 hour" in shown and "local" in shown and "Bash" in shown
        assert f'action="/inbox/grants/{grant.id}/revoke"' in page.text

        revoke = f"/inbox/grants/{grant.id}/revoke"
        for csrf in ("", "forged-token"):
            refused = await person.submit(revoke, {}, csrf=csrf)
            assert refused.status_code == 403
        no_field = await person.http.post(revoke, data={})
        assert no_field.status_code == 403
        assert [g.id for g in await bridge.service.list_grants()] == [grant.id]
        for bad in ("g_unknown", "bad%20id"):
            missing = await person.submit(f"/inbox/grants/{bad}/revoke", {})
            assert missing.status_code == 404

        done = await person.submit(revoke, {})
        assert done.status_code == 303 and done.headers["location"] == "/inbox/grants?done=revoked"
        after = text_of((await person.get(done.headers["location"])).text)
        assert "was revoked" in after and "No standing approvals." in after
        assert await bridge.service.list_grants() == []
        events = await bridge.store.list_events(rid)
        assert [(e.kind, e.actor) for e in events if e.kind == "grant_revoked"] == [("grant_revoked", "web:local")]
        asked = await create(bridge, call("npm test"))
        assert (await bridge.service.get(asked)).is_open  # type: ignore[union-attr]


async def test_the_emailed_answer_page_offers_and_makes_grants(tmp_path: Path) -> None:
    async with running_bridge(tmp_path) as bridge, Person(bridge.base_url) as person:
        rid = await create(bridge, call("npm test"))
        link = await link_for(bridge.store, rid, "email:ann@example.com", deadline=None)
        page = await person.get(f"/inbox/a/{link.token}")
        assert page.status_code == 200 and 'name="grant" value="span:3600"' in page.text
        forged = await person.submit(f"/inbox/a/{link.token}", {"grant": "span:7"})
        assert forged.status_code == 422 and (await bridge.service.get(rid)).is_open  # type: ignore[union-attr]
        response = await person.submit(f"/inbox/a/{link.token}", {"grant": "span:3600"})
        assert response.status_code == 303, response.text
        [grant] = await bridge.service.list_grants()
        assert grant.granted_by == "email:ann@example.com"
        assert "Allowed for 1 hour by ann@example.com" in text_of((await person.get(f"/inbox/a/{link.token}")).text)
