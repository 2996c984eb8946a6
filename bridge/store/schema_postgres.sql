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
  step_due_at TIMESTAMPTZ
);
CREATE UNIQUE INDEX IF NOT EXISTS ux_requests_external ON requests(source, external_id) WHERE external_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS ix_requests_state ON requests(state, created_at);
CREATE INDEX IF NOT EXISTS ix_requests_created ON requests(created_at);
-- requests.step_due_at and outbox.source came later: pg_rows.migrate adds them to older databases first
DROP INDEX IF EXISTS ix_requests_timed;
CREATE INDEX IF NOT EXISTS ix_requests_timers ON requests(state)
  WHERE deadline IS NOT NULL OR next_reminder_at IS NOT NULL OR next_escalation_at IS NOT NULL
  OR step_due_at IS NOT NULL;
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
CREATE TABLE IF NOT EXISTS votes (
  request_id TEXT NOT NULL,
  voter TEXT NOT NULL,
  value TEXT NOT NULL,
  name TEXT NOT NULL,
  at TIMESTAMPTZ NOT NULL,
  seq BIGINT GENERATED ALWAYS AS IDENTITY,
  PRIMARY KEY (request_id, voter)
);
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
