CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS requests (
  id TEXT PRIMARY KEY,
  source TEXT NOT NULL,
  external_id TEXT,
  state TEXT NOT NULL,
  route TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  deadline TEXT,
  next_reminder_at TEXT,
  next_escalation_at TEXT,
  body TEXT NOT NULL,
  step_due_at TEXT,
  resume INTEGER NOT NULL DEFAULT 0,
  created_by TEXT NOT NULL DEFAULT '',
  next_at TEXT GENERATED ALWAYS AS (CASE WHEN state IN ('pending','posted') THEN nullif(min(
    coalesce(deadline, '9999'), coalesce(next_reminder_at, '9999'), coalesce(next_escalation_at, '9999'),
    coalesce(step_due_at, '9999')), '9999') END) VIRTUAL
);
-- requests.step_due_at, resume, next_at, created_by and outbox.source came later: sqlite_rows.migrate adds them first.
-- created_by: the verified creator ('' for none): an external_id is its creator's own (one index per source and creator)
-- next_at: an open request's earliest timer, kept by SQLite itself (the scheduler arms from it, id + instant),
-- resume: an open request with an escalation level or a claimed step (the scheduler loads those whole at start)
DROP INDEX IF EXISTS ux_requests_external;
CREATE UNIQUE INDEX IF NOT EXISTS ux_requests_creator_external ON requests(source, created_by, external_id)
  WHERE external_id IS NOT NULL;
DROP INDEX IF EXISTS ix_requests_state;
DROP INDEX IF EXISTS ix_requests_created;
CREATE INDEX IF NOT EXISTS ix_requests_state_page ON requests(state, created_at, id);
CREATE INDEX IF NOT EXISTS ix_requests_page ON requests(created_at, id);
CREATE INDEX IF NOT EXISTS ix_requests_next ON requests(next_at, id, resume) WHERE next_at IS NOT NULL;
-- how many requests each state holds, kept by triggers: /metrics and the inbox tabs read it, not the rows
CREATE TABLE IF NOT EXISTS request_counts (
  state TEXT NOT NULL,
  shard INTEGER NOT NULL,
  n INTEGER NOT NULL,
  PRIMARY KEY (state, shard)
);
CREATE TRIGGER IF NOT EXISTS tr_requests_count_insert AFTER INSERT ON requests BEGIN
  INSERT INTO request_counts (state, shard, n) VALUES (new.state, 0, 1)
    ON CONFLICT (state, shard) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER IF NOT EXISTS tr_requests_count_update AFTER UPDATE OF state ON requests
  WHEN old.state <> new.state BEGIN
  INSERT INTO request_counts (state, shard, n) VALUES (new.state, 0, 1)
    ON CONFLICT (state, shard) DO UPDATE SET n = n + 1;
  INSERT INTO request_counts (state, shard, n) VALUES (old.state, 0, -1)
    ON CONFLICT (state, shard) DO UPDATE SET n = n - 1;
END;
CREATE TRIGGER IF NOT EXISTS tr_requests_count_delete AFTER DELETE ON requests BEGIN
  INSERT INTO request_counts (state, shard, n) VALUES (old.state, 0, -1)
    ON CONFLICT (state, shard) DO UPDATE SET n = n - 1;
END;
CREATE TABLE IF NOT EXISTS events (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  request_id TEXT NOT NULL,
  at TEXT NOT NULL,
  kind TEXT NOT NULL,
  actor TEXT NOT NULL,
  data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS ix_events_request ON events(request_id, id);
CREATE TABLE IF NOT EXISTS posts (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  request_id TEXT NOT NULL,
  channel TEXT NOT NULL,
  target TEXT NOT NULL,
  ref TEXT NOT NULL,
  ok INTEGER NOT NULL,
  error TEXT,
  at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS ix_posts_request ON posts(request_id, channel);
CREATE TABLE IF NOT EXISTS outbox (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  request_id TEXT NOT NULL,
  state TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  due_at TEXT NOT NULL,
  created_at TEXT NOT NULL,
  last_error TEXT,
  dead INTEGER NOT NULL DEFAULT 0,
  done INTEGER NOT NULL DEFAULT 0,
  source TEXT
);
CREATE INDEX IF NOT EXISTS ix_outbox_due ON outbox(done, dead, due_at);
CREATE INDEX IF NOT EXISTS ix_outbox_failing ON outbox(source) WHERE done=0 AND dead=0 AND attempts>0;
CREATE INDEX IF NOT EXISTS ix_outbox_request ON outbox(request_id);
CREATE TABLE IF NOT EXISTS votes (
  request_id TEXT NOT NULL,
  voter TEXT NOT NULL,
  value TEXT NOT NULL,
  name TEXT NOT NULL,
  at TEXT NOT NULL,
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
  created_at TEXT NOT NULL,
  expires_at TEXT,
  revoked_at TEXT,
  revoked_by TEXT
);
CREATE INDEX IF NOT EXISTS ix_grants_tool ON grants(tool, source, route) WHERE revoked_at IS NULL;
CREATE TABLE IF NOT EXISTS kv (
  namespace TEXT NOT NULL,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  expires_at TEXT,
  PRIMARY KEY (namespace, key)
);
