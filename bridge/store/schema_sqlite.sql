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
  step_due_at TEXT
);
CREATE UNIQUE INDEX IF NOT EXISTS ux_requests_external ON requests(source, external_id) WHERE external_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS ix_requests_state ON requests(state, created_at);
CREATE INDEX IF NOT EXISTS ix_requests_created ON requests(created_at);
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
CREATE TABLE IF NOT EXISTS kv (
  namespace TEXT NOT NULL,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  expires_at TEXT,
  PRIMARY KEY (namespace, key)
);
