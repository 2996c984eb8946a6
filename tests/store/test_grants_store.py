"""Store contract: standing approvals (schema 3), on SQLite and PostgreSQL — kept, read in
force at an instant (expiry exclusive), revoked once (a second revocation changes nothing),
hostile text kept as given; a version-2 database gains the table."""

from __future__ import annotations

from datetime import timedelta

from bridge.models import Responder
from bridge.store import Store
from bridge.store.codec import SCHEMA_VERSION
from bridge.store.concerns.grants import Grant
from tests.store.conftest import Backend
from tests.store.helpers import at


def grant(grant_id: str, **fields: object) -> Grant:
    base: dict[str, object] = dict(
        id=grant_id, scope="always", pattern="Bash(npm test:*)", tool="Bash", source="webhook", route="agents",
        granted_by="slack:U1", grantor=Responder(platform="slack", user_id="U1", name="ana", person="ana"),
        via="slack", request_id="r_1", created_at=at(0))
    base.update(fields)
    return Grant.model_validate(base)


async def test_grants_are_kept_read_in_force_and_revoked_once(store: Store) -> None:
    await store.add_grant(grant("g_a"))
    await store.add_grant(grant("g_b", scope="span", pattern="Bash", expires_at=at(3600), created_at=at(1)))
    await store.add_grant(grant("g_c", tool="Edit", pattern="Edit(//srv/**)", created_at=at(2)))
    hostile_text = "s\u0000\u202ex'; DROP TABLE grants;--"
    await store.add_grant(grant("g_d", session=hostile_text, scope="session", pattern="Bash", created_at=at(3),
                                source="web\u0000hook"))
    assert (await store.get_grant("g_a")) == grant("g_a")
    assert await store.get_grant("g_missing") is None
    assert [g.id for g in await store.grants_for("Bash", "webhook", "agents", at(10))] == ["g_a", "g_b"]
    assert [g.id for g in await store.grants_for("Bash", "webhook", "agents", at(3600))] == ["g_a"]  # expired
    assert [g.id for g in await store.grants_for("Bash", "webhook", "other", at(10))] == []
    hostile = await store.get_grant("g_d")
    assert hostile is not None and hostile.session == hostile_text and hostile.source == "web\u0000hook"
    assert [g.id for g in await store.list_grants()] == ["g_d", "g_c", "g_b", "g_a"]
    revoked = await store.revoke_grant("g_a", by="api:ops", at=at(20))
    assert revoked is not None and revoked.revoked_by == "api:ops" and revoked.revoked_at == at(20)
    again = await store.revoke_grant("g_a", by="api:other", at=at(30))
    assert again is not None and again.revoked_by == "api:ops" and again.revoked_at == at(20)
    assert await store.revoke_grant("g_missing", by="api:ops", at=at(30)) is None
    assert [g.id for g in await store.grants_for("Bash", "webhook", "agents", at(21))] == ["g_b"]
    assert [g.id for g in await store.list_grants(active_at=at(4000))] == ["g_d", "g_c"]
    assert not revoked.active(at(21)) and grant("g_b", expires_at=at(5)).active(at(4))
    assert not grant("g_b", expires_at=at(5)).active(at(5))


async def test_a_version_2_database_gains_the_grants_table(backend: Backend) -> None:
    store = await backend.open_store()
    await store.close()
    await backend.sql("DROP TABLE grants")
    await backend.sql("UPDATE meta SET value='2' WHERE key='schema_version'")
    store = await backend.open_store()
    try:
        await store.add_grant(grant("g_new", created_at=at(0) + timedelta(seconds=1)))
        assert (await store.get_grant("g_new")) is not None
    finally:
        await store.close()
    assert await backend.sql("SELECT value FROM meta WHERE key='schema_version'") == [(str(SCHEMA_VERSION),)]
    assert SCHEMA_VERSION == 3
