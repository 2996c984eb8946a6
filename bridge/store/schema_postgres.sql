-- hitl-bridge schema for PostgreSQL: the same tables and columns as schema_sqlite.sql,
-- with native types (timestamptz, boolean, identity). JSON is kept as text (not jsonb)
-- so that any string an engine sends, "\u0000" included, round-trips unchanged.
-- Created by PostgresStore.open() in the first schema of search_path; idempotent.
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS requests (
  id TEXT COLLATE "C" PRIMARY KEY,
  source TEXT NOT NULL,
  external_id TEXT,
  state TEXT NOT NULL,
  route TEXT NOT NULL,
  created_at TIMESTAMPTZ NOT NULL,
  updated_at TIMESTAMPTZ NOT NULL,
  deadline TIMESTAMPTZ,
  next_reminder_at TIMESTAMPTZ,
  next_escalation_at TIMESTAMPTZ,
  body TEXT NOT NULL,
  step_due_at TIMESTAMPTZ,
  resume BOOLEAN NOT NULL DEFAULT FALSE,
  created_by TEXT NOT NULL DEFAULT '',
  next_at TIMESTAMPTZ GENERATED ALWAYS AS (CASE WHEN state IN ('pending','posted')
    THEN LEAST(deadline, next_reminder_at, next_escalation_at, step_due_at) END) STORED
);
-- requests.step_due_at, resume, next_at, created_by and outbox.source came later: pg_rows.migrate adds them to
-- older databases first. next_at: an open request's earliest timer, kept by PostgreSQL itself (the
-- scheduler arms from it: id + instant). resume: an open request with an escalation level or a claimed
-- step (the scheduler loads those whole at start).
-- created_by: the verified creator ('' for none): an external_id is its creator's own
DROP INDEX IF EXISTS ux_requests_external;
CREATE UNIQUE INDEX IF NOT EXISTS ux_requests_creator_external ON requests(source, created_by, external_id)
  WHERE external_id IS NOT NULL;
DROP INDEX IF EXISTS ix_requests_state;
DROP INDEX IF EXISTS ix_requests_created;
DROP INDEX IF EXISTS ix_requests_timed;
DROP INDEX IF EXISTS ix_requests_timers;
CREATE INDEX IF NOT EXISTS ix_requests_state_page ON requests(state, created_at, id);
CREATE INDEX IF NOT EXISTS ix_requests_page ON requests(created_at, id);
CREATE INDEX IF NOT EXISTS ix_requests_next ON requests(next_at, id) INCLUDE (resume) WHERE next_at IS NOT NULL;
-- how many requests each state holds, kept by triggers: /metrics and the inbox tabs read it, not the
-- rows. One row per state and connection (64 shards by backend pid), so concurrent writers (replicas)
-- never wait on one counter row.
CREATE TABLE IF NOT EXISTS request_counts (
  state TEXT NOT NULL,
  shard INTEGER NOT NULL,
  n BIGINT NOT NULL,
  PRIMARY KEY (state, shard)
);
CREATE OR REPLACE FUNCTION hitl_count_requests() RETURNS trigger LANGUAGE plpgsql AS $count$
BEGIN
  IF TG_OP <> 'DELETE' THEN
    INSERT INTO request_counts AS c (state, shard, n) VALUES (NEW.state, pg_backend_pid() % 64, 1)
      ON CONFLICT (state, shard) DO UPDATE SET n = c.n + 1;
  END IF;
  IF TG_OP <> 'INSERT' THEN
    INSERT INTO request_counts AS c (state, shard, n) VALUES (OLD.state, pg_backend_pid() % 64, -1)
      ON CONFLICT (state, shard) DO UPDATE SET n = c.n - 1;
  END IF;
  RETURN NULL;
END
$count$;
DROP TRIGGER IF EXISTS tr_requests_count_insert ON requests;
CREATE TRIGGER tr_requests_count_insert AFTER INSERT ON requests FOR EACH ROW EXECUTE FUNCTION hitl_count_requests();
DROP TRIGGER IF EXISTS tr_requests_count_update ON requests;
CREATE TRIGGER tr_requests_count_update AFTER UPDATE OF state ON requests FOR EACH ROW
  WHEN (OLD.state IS DISTINCT FROM NEW.state) EXECUTE FUNCTION hitl_count_requests();
DROP TRIGGER IF EXISTS tr_requests_count_delete ON requests;
CREATE TRIGGER tr_requests_count_delete AFTER DELETE ON requests FOR EACH ROW EXECUTE FUNCTION hitl_count_requests();
CREATE TABLE IF NOT EXISTS events (
  id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  request_id TEXT NOT NULL,
  at TIMESTAMPTZ NOT NULL,
  kind TEXT NOT NULL,
  actor TEXT NOT NULL,
  data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS ix_events_request ON events(request_id, id);
CREATE TABLE IF NOT EXISTS posts (
  id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  request_id TEXT NOT NULL,
  channel TEXT NOT NULL,
  target TEXT NOT NULL,
  ref TEXT NOT NULL,
  ok BOOLEAN NOT NULL,
  error TEXT,
  at TIMESTAMPTZ NOT NULL
);
CREATE INDEX IF NOT EXISTS ix_posts_request ON posts(request_id, channel);
CREATE TABLE IF NOT EXISTS outbox (
  id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  request_id TEXT NOT NULL,
  state TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  due_at TIMESTAMPTZ NOT NULL,
  created_at TIMESTAMPTZ NOT NULL,
  last_error TEXT,
  dead BOOLEAN NOT NULL DEFAULT FALSE,
  done BOOLEAN NOT NULL DEFAULT FALSE,
  source TEXT
);
CREATE INDEX IF NOT EXISTS ix_outbox_due ON outbox(due_at) WHERE NOT done AND NOT dead;
CREATE INDEX IF NOT EXISTS ix_outbox_failing ON outbox(source) WHERE NOT done AND NOT dead AND attempts > 0;
CREATE INDEX IF NOT EXISTS ix_outbox_request ON outbox(request_id);
-- what is not done yet (pending or dead), for /metrics and the dead letters: not every entry ever delivered
CREATE INDEX IF NOT EXISTS ix_outbox_open ON outbox(dead) WHERE NOT done;
CREATE TABLE IF NOT EXISTS votes (
  request_id TEXT NOT NULL,
  voter TEXT NOT NULL,
  value TEXT NOT NULL,
  name TEXT NOT NULL,
  at TIMESTAMPTZ NOT NULL,
  seq BIGINT GENERATED ALWAYS AS IDENTITY,
  PRIMARY KEY (request_id, voter)
);
CREATE INDEX IF NOT EXISTS ix_votes_voter ON votes(voter, request_id);
-- standing approvals (schema 3): read on every decision, so a revocation holds at once everywhere
CREATE TABLE IF NOT EXISTS grants (
  id TEXT PRIMARY KEY,
  scope TEXT NOT NULL,
  pattern TEXT NOT NULL,
  tool TEXT NOT NULL,
  source TEXT NOT NULL,
  session TEXT,
  route TEXT NOT NULL,
  granted_by TEXT NOT NULL,
  grantor TEXT NOT NULL,
  via TEXT NOT NULL,
  request_id TEXT NOT NULL,
  created_at TIMESTAMPTZ NOT NULL,
  expires_at TIMESTAMPTZ,
  revoked_at TIMESTAMPTZ,
  revoked_by TEXT
);
CREATE INDEX IF NOT EXISTS ix_grants_tool ON grants(tool, source, route) WHERE revoked_at IS NULL;
CREATE TABLE IF NOT EXISTS kv (
  namespace TEXT NOT NULL,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  expires_at TIMESTAMPTZ,
  PRIMARY KEY (namespace, key)
);
-- every committed change of a request is announced to the replicas (bridge/store/pg_follow.py):
-- pg_notify inside the writing transaction is delivered at commit, never for a rollback
CREATE OR REPLACE FUNCTION hitl_bridge_notify() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  next_at TIMESTAMPTZ := CASE WHEN NEW.state IN ('pending', 'posted')
    THEN LEAST(NEW.deadline, NEW.next_reminder_at, NEW.next_escalation_at, NEW.step_due_at) END;
BEGIN
  PERFORM pg_notify(
    'hitl_bridge.' || CASE WHEN octet_length(TG_TABLE_SCHEMA) <= 48 THEN TG_TABLE_SCHEMA ELSE md5(TG_TABLE_SCHEMA) END,
    NEW.state || E'\t' || COALESCE(extract(epoch FROM next_at)::text, '') || E'\t' || NEW.id);
  RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS hitl_bridge_changed ON requests;
CREATE TRIGGER hitl_bridge_changed AFTER INSERT OR UPDATE ON requests
  FOR EACH ROW EXECUTE FUNCTION hitl_bridge_notify();
