"""What only the PostgreSQL store has: its url, text escaping, connection errors, schemas."""

from __future__ import annotations

import asyncio
import socket
import sys
from pathlib import Path

import asyncpg
import pytest

from bridge.config import Settings
from bridge.health import Health, Status
from bridge.store import StoreError, StoreUnavailable, Vote, open_store_from_url, redact_url
from bridge.store.pg_support import MARKER, PostgresURL, decode_text, encode_text
from bridge.store.postgres import PostgresStore
from tests.harness import wait_for
from tests.store.conftest import with_search_path
from tests.store.helpers import at


@pytest.mark.parametrize("text", ["", "plain", "ünïcode 🚀", "back\\slash", "\\u0000", '"quoted"', "tab\tnl\n"])
def test_ordinary_text_is_stored_as_is(text: str) -> None:
    assert encode_text(text) == text
    assert decode_text(text) == text


def test_unstorable_text_is_escaped_one_to_one() -> None:
    nasty = ["\x00", "a\x00b", MARKER, MARKER + "x", MARKER + "\\u0000", "\ud800", "x\udfff\x00", "\x00" * 3]
    encoded = [encode_text(t) for t in nasty]
    assert all("\x00" not in e for e in encoded)
    for e in encoded:
        e.encode("utf-8")  # PostgreSQL text takes it: no NUL, no lone surrogate
    assert len(set(encoded)) == len(nasty)  # injective: lookups by encoded key stay exact
    assert [decode_text(e) for e in encoded] == nasty
    assert not set(encoded) & {"\x00", "a\x00b", "x", "\\u0000", "a\\u0000b"}


def test_url_options_and_server_settings() -> None:
    opts = PostgresURL.parse("postgresql://app@db.internal:6432/bridge?search_path=hitl&pool_max=25&pool_min=2"
                             "&statement_cache_size=0")
    assert (opts.pool_min, opts.pool_max, opts.statement_cache_size) == (2, 25, 0)
    assert opts.dsn == "postgresql://app@db.internal:6432/bridge?search_path=hitl"
    assert opts.server_settings == {"application_name": "hitl-bridge"}
    named = PostgresURL.parse("postgres://app@db/bridge?application_name=replica-2")
    assert named.server_settings == {} and named.dsn.endswith("application_name=replica-2")
    with pytest.raises(ValueError, match=r"pool_max=.*whole number"):
        PostgresURL.parse("postgresql://app@db/bridge?pool_max=lots")
    with pytest.raises(ValueError, match="pool_min <= pool_max"):
        PostgresURL.parse("postgresql://app@db/bridge?pool_min=5&pool_max=2")


def test_passwords_never_show_in_urls_we_print() -> None:
    assert redact_url("postgresql://app:hunter2@db:5432/bridge") == "postgresql://app:***@db:5432/bridge"
    assert "s3cret" not in redact_url("postgresql://app@db/bridge?password=s3cret&search_path=x")
    assert "search_path=x" in redact_url("postgresql://app@db/bridge?password=s3cret&search_path=x")
    assert redact_url("sqlite:///./.hitl-bridge/bridge.db") == "sqlite:///./.hitl-bridge/bridge.db"
    store = PostgresStore("postgresql://app:hunter2@db/bridge")
    assert "hunter2" not in repr(store)
    with pytest.raises(StoreError) as excinfo:
        open_store_from_url("mysql://root:hunter2@db/x")
    assert "hunter2" not in str(excinfo.value)


async def test_malformed_urls_are_store_errors() -> None:
    with pytest.raises(StoreError, match="bad store url"):
        PostgresStore("postgresql://app@db/bridge?pool_max=lots")
    store = PostgresStore("postgresql://app:hunter2@127.0.0.1:notaport/bridge", connect_timeout=3)
    with pytest.raises(StoreError, match="cannot open PostgreSQL store") as excinfo:
        await store.open()
    assert "hunter2" not in str(excinfo.value)


def test_config_selects_the_postgres_store() -> None:
    settings = Settings.model_validate({"store": {"url": "postgresql://hitl@127.0.0.1:5432/hitl"}})
    assert isinstance(open_store_from_url(settings.store.url), PostgresStore)


async def test_unreachable_server_is_a_clear_store_error() -> None:
    with socket.socket() as sock:  # a port that was just free: nothing listens there
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    store = PostgresStore(f"postgresql://app:hunter2@127.0.0.1:{port}/bridge", connect_timeout=3)
    with pytest.raises(StoreError, match="cannot open PostgreSQL store") as excinfo:
        await store.open()
    assert "hunter2" not in str(excinfo.value) and "***" in str(excinfo.value)
    with pytest.raises(StoreError, match="not open"):
        await store.count_by_state()


@pytest.mark.postgres
async def test_missing_schema_names_the_fix(postgres_admin_url: str) -> None:
    store = PostgresStore(with_search_path(postgres_admin_url, "hitl_no_such_schema_here"))
    with pytest.raises(StoreError, match="CREATE SCHEMA"):
        await store.open()


@pytest.mark.postgres
async def test_a_server_that_refuses_writes_is_store_read_only(postgres_url: str) -> None:
    """A standby, or a session made read-only: the start is a clear error, and on a store
    already open the probe reports it failing."""
    writable = PostgresStore(postgres_url)
    await writable.open()
    try:
        assert (await writable.check()).ok
    finally:
        await writable.close()
    read_only = PostgresStore(postgres_url + "&default_transaction_read_only=on")
    with pytest.raises(StoreUnavailable, match="store read-only: the PostgreSQL server refuses writes") as excinfo:
        await read_only.open()
    assert "primary" in excinfo.value.fix


@pytest.mark.postgres
async def test_after_a_fault_the_store_checks_itself_until_it_is_well(postgres_url: str) -> None:
    """A fault (here a lost connection, reported as a replica meets it) makes the store
    failing at once; it then checks itself, so the recovery shows without anyone asking."""
    store = PostgresStore(postgres_url)
    await store.open()
    health = Health()
    store.watch(health)
    try:
        store.report_fault(StoreUnavailable("store unavailable: PostgreSQL connection lost: test"))
        failing = health.current("store")
        assert failing is not None and failing.status is Status.failing
        await wait_for(lambda: (found := health.current("store")) is not None and found.ok, timeout=20)
    finally:
        await store.close()


@pytest.mark.postgres
async def test_lone_surrogates_round_trip(postgres_url: str) -> None:
    # SQLite cannot encode these at all; PostgreSQL keeps whatever an adapter hands over.
    store = PostgresStore(postgres_url)
    await store.open()
    try:
        text = "name\ud800\x00"
        await store.kv_put(text, text, {"v": text})
        assert await store.kv_get(text, text) == {"v": text}
        assert await store.add_vote(Vote("r_1", text, "yes", text, at(1))) is True
        assert await store.add_vote(Vote("r_1", text, "no", text, at(2))) is False
        assert [(v.voter, v.name) for v in await store.list_votes("r_1")] == [(text, text)]
        await store.add_event("r_1", "refused", text, {"who": text}, at(1))
        [event] = await store.list_events("r_1")
        assert (event.actor, event.data) == (text, {"who": text})
    finally:
        await store.close()


@pytest.mark.postgres
async def test_store_survives_a_killed_connection(
    postgres_admin_url: str, postgres_url: str
) -> None:
    import asyncpg

    store = PostgresStore(postgres_url + "&pool_min=1&pool_max=1&application_name=hitl-kill-me")
    await store.open()
    try:
        admin = await asyncpg.connect(postgres_admin_url)
        try:
            killed = await admin.fetchval(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE application_name='hitl-kill-me' AND pid <> pg_backend_pid()"
            )
        finally:
            await admin.close()
        assert killed == 1
        # asyncpg notices the dead connection and replaces it; if a call still meets it,
        # the caller gets a StoreError (never a raw driver error) and the next call works
        try:
            assert await store.count_by_state() == {}
        except StoreError as exc:
            assert "connection lost" in str(exc)
        assert await store.count_by_state() == {}
    finally:
        await store.close()


def test_example_replicas_config_is_valid() -> None:
    from bridge.config import load_settings

    env = {"HITL_BRIDGE_DATABASE_URL": "postgresql://hitl:pw@db.internal:5432/hitl?search_path=hitl",
           "BRIDGE_SECRET_KEY": "k" * 32, "BRIDGE_API_TOKEN": "t" * 32, "SLACK_BOT_TOKEN": "xoxb-1",
           "SLACK_SIGNING_SECRET": "s" * 32}
    config = Path(__file__).resolve().parents[2] / "config" / "replicas-postgres.yaml"
    settings = load_settings(str(config), env=env)
    assert isinstance(open_store_from_url(settings.store.url), PostgresStore)
    assert settings.secrets.key == "k" * 32


@pytest.mark.postgres
async def test_doctor_and_serve_never_print_the_password(tmp_path: Path, postgres_url: str) -> None:
    # trust auth on the test server ignores the password, so it can be anything
    url = postgres_url.replace("postgresql://postgres@", "postgresql://postgres:hunter2@", 1)
    assert "hunter2" in url
    config = tmp_path / "bridge.yaml"
    config.write_text(f"store: {{url: '{url}'}}\nhttp: {{listen: '127.0.0.1:0'}}\n")
    exe = Path(sys.executable).parent / "hitl-bridge"
    proc = await asyncio.create_subprocess_exec(
        str(exe), "-c", str(config), "doctor", stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        cwd=tmp_path,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), timeout=60)
    text = out.decode()
    assert "[ok] store: postgresql://postgres:***@127.0.0.1" in text, text
    assert "hunter2" not in text
    serve = await asyncio.create_subprocess_exec(
        str(exe), "-c", str(config), "serve", stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        cwd=tmp_path,
    )
    stdout = serve.stdout
    assert stdout is not None
    lines: list[str] = []
    try:
        async def until_listening() -> None:
            while "listening on" not in "".join(lines):
                line = await stdout.readline()
                if not line:
                    return
                lines.append(line.decode())

        await asyncio.wait_for(until_listening(), timeout=60)
    finally:
        serve.terminate()
        rest, _ = await asyncio.wait_for(serve.communicate(), timeout=30)
    text = "".join(lines) + rest.decode()
    assert "(store postgresql://postgres:***@127.0.0.1" in text, text
    assert "hunter2" not in text


async def test_one_replica_holds_a_role_until_it_resigns_or_its_session_dies(
    postgres_admin_url: str, postgres_url: str
) -> None:
    first, second = PostgresStore(postgres_url), PostgresStore(postgres_url + "&application_name=hitl-lead-b")
    elsewhere = PostgresStore(with_search_path(postgres_admin_url, "another_bridge"))
    await first.open()
    await second.open()
    try:
        assert await first.try_lead("telegram-polling:1") is True
        assert await second.try_lead("telegram-polling:1") is False
        assert await first.try_lead("telegram-polling:1") is True  # the check of a held role
        assert await second.try_lead("telegram-polling:2") is True  # another role
        assert await elsewhere.try_lead("telegram-polling:1") is True  # another schema, another bridge
        await first.resign("telegram-polling:1")
        assert await second.try_lead("telegram-polling:1") is True
        assert await first.try_lead("telegram-polling:1") is False
        # the holder's session dies (database restart, network): it learns so, the role is free
        admin = await asyncpg.connect(postgres_admin_url)
        try:
            await admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                "WHERE application_name = 'hitl-lead-b'")
        finally:
            await admin.close()
        assert await second.try_lead("telegram-polling:1") is False
        assert await first.try_lead("telegram-polling:1") is True
    finally:
        await first.close()
        await second.close()
        await elsewhere.close()


@pytest.mark.postgres
async def test_a_replica_starting_beside_busy_ones_takes_no_table_locks(postgres_url: str) -> None:
    """An up-to-date schema is not touched at start: a replica opening the store while others
    write must not run DDL (CREATE INDEX IF NOT EXISTS locks the table and deadlocked with
    live writes)."""
    first = PostgresStore(postgres_url)
    await first.open()
    await first.close()
    conn = await asyncpg.connect(postgres_url)  # search_path comes with the url
    try:
        async with conn.transaction():  # a writer holding the table, as a busy replica does
            await conn.execute("LOCK TABLE requests IN ROW EXCLUSIVE MODE")
            second = PostgresStore(postgres_url)
            await asyncio.wait_for(second.open(), 10)  # DDL would wait for the lock here
            await second.close()
    finally:
        await conn.close()
