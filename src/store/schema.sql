-- causeway store, schema version 1. Applied by src/store/migrate.c, which
-- holds the later migrations (v2: index events_io; v3: indexes events_retx,
-- events_oom, events_pagealloc); the version lives in
-- PRAGMA user_version. Every table that holds observations
-- carries the node it came from so databases from many hosts can be merged.

CREATE TABLE sessions (
  id              INTEGER PRIMARY KEY,
  node            TEXT NOT NULL,
  kind            TEXT NOT NULL,          -- 'trace' or 'demo:<scenario>'
  started_wall_ns INTEGER NOT NULL,
  ended_wall_ns   INTEGER,
  mono_to_wall_ns INTEGER NOT NULL,       -- wall = mono + this (last measured)
  host            TEXT, kernel TEXT, gpu TEXT, driver TEXT, cuda TEXT, python TEXT,
  rank            INTEGER, local_rank INTEGER, world_size INTEGER,
  command         TEXT
);

-- Every traced call and instant event. Block I/O requests are events of
-- source 'io' whose duration is issue->complete.
CREATE TABLE events (
  id           INTEGER PRIMARY KEY,
  node         TEXT NOT NULL,
  seq          INTEGER NOT NULL,          -- per-node sequence
  session_id   INTEGER,
  wall_ns      INTEGER NOT NULL,
  mono_ns      INTEGER NOT NULL,          -- start of the call
  pid          INTEGER NOT NULL,
  tid          INTEGER NOT NULL,
  cgroup_id    INTEGER,
  comm         TEXT,
  source       TEXT NOT NULL,
  op           TEXT NOT NULL,
  duration_ns  INTEGER NOT NULL DEFAULT 0,
  arg0 INTEGER, arg1 INTEGER, arg2 INTEGER, arg3 INTEGER,
  bytes        INTEGER,                   -- bytes moved or allocated, when meaningful
  detail       TEXT,                      -- kernel name, memcpy direction, rwbs, ...
  ret          INTEGER,                   -- return code; NULL for instant events
  device       INTEGER,                   -- CUDA device, NULL unknown
  stack_id     INTEGER,                   -- stacks.id
  py_stack_id  INTEGER,                   -- py_stacks.id
  anomalous    INTEGER NOT NULL DEFAULT 0 -- slower than 3x the op's running median
);
-- explain fetches an op's slow calls straight from this index. It is
-- partial: only anomalous events (slower than 3x the op's running median
-- when written) are indexed, which keeps the insert path fast; queries must
-- say `anomalous = 1` to use it.
CREATE INDEX events_slow ON events (op, duration_ns) WHERE anomalous = 1;

-- Native stacks, interned by hash of their frames.
CREATE TABLE stacks (
  id     INTEGER PRIMARY KEY,
  hash   INTEGER NOT NULL UNIQUE,
  depth  INTEGER NOT NULL,
  frames TEXT NOT NULL                    -- one symbolized frame per line, innermost first
);

-- Python code objects seen, per node and process.
CREATE TABLE py_code (
  id          INTEGER PRIMARY KEY,
  node        TEXT NOT NULL,
  pid         INTEGER NOT NULL,
  address     INTEGER NOT NULL,
  file        TEXT, function TEXT, qualname TEXT,
  firstlineno INTEGER,
  UNIQUE (node, pid, address, file, qualname)
);

-- Python stacks, interned by hash of (file, line, function) of every frame.
CREATE TABLE py_stacks (
  id           INTEGER PRIMARY KEY,
  hash         INTEGER NOT NULL UNIQUE,
  depth        INTEGER NOT NULL,
  frames       TEXT NOT NULL,             -- JSON array of {file,line,function}, innermost first
  user_file    TEXT,                      -- first frame in user code
  user_line    INTEGER,
  user_function TEXT
);

-- Per-thread off-CPU intervals of traced threads.
CREATE TABLE offcpu (
  id           INTEGER PRIMARY KEY,
  node         TEXT NOT NULL,
  session_id   INTEGER,
  pid          INTEGER NOT NULL,
  tid          INTEGER NOT NULL,
  comm         TEXT,
  start_mono_ns INTEGER NOT NULL,
  end_mono_ns  INTEGER NOT NULL,
  wall_ns      INTEGER NOT NULL,
  duration_ns  INTEGER NOT NULL,
  reason       TEXT NOT NULL,             -- 'preempted' or 'blocked'
  cpu          INTEGER,
  by_pid       INTEGER, by_tid INTEGER, by_comm TEXT, by_cgroup_id INTEGER,
  waker_pid    INTEGER, waker_comm TEXT
);
CREATE INDEX offcpu_tid_time ON offcpu (tid, start_mono_ns);

CREATE TABLE snapshots (
  id              INTEGER PRIMARY KEY,
  node            TEXT NOT NULL,
  session_id      INTEGER,
  mono_ns         INTEGER NOT NULL,
  wall_ns         INTEGER NOT NULL,
  cpu_pct         REAL, mem_pct REAL,
  swap_used_bytes INTEGER,
  load1           REAL,
  ncpu            INTEGER,
  page_alloc_per_s INTEGER,
  io_bytes_per_s  INTEGER,
  io_busy_pct     REAL
);
CREATE INDEX snapshots_time ON snapshots (mono_ns);

CREATE TABLE processes (
  node        TEXT NOT NULL,
  pid         INTEGER NOT NULL,
  ppid        INTEGER,
  comm        TEXT,
  cmdline     TEXT,
  cgroup_id   INTEGER,
  rank        INTEGER, local_rank INTEGER, world_size INTEGER,
  start_wall_ns INTEGER,
  exit_code   INTEGER,
  PRIMARY KEY (node, pid)
);

CREATE TABLE threads (
  node TEXT NOT NULL,
  tid  INTEGER NOT NULL,
  pid  INTEGER NOT NULL,
  comm TEXT,
  PRIMARY KEY (node, tid)
);

CREATE TABLE cgroups (
  node      TEXT NOT NULL,
  cgroup_id INTEGER NOT NULL,
  path      TEXT,
  container TEXT,
  PRIMARY KEY (node, cgroup_id)
);

CREATE TABLE kernel_names (
  node   TEXT NOT NULL,
  pid    INTEGER NOT NULL,
  handle INTEGER NOT NULL,
  name   TEXT NOT NULL,
  PRIMARY KEY (node, pid, handle)
);

-- Causal chains. explain and demo append; trace's passes append a row
-- per incident and extend it while the incident goes on (docs/trace.md).
-- Pruned last under a size cap, oldest first (docs/schema.md "Retention").
CREATE TABLE chains (
  id              INTEGER PRIMARY KEY,
  node            TEXT NOT NULL,
  created_wall_ns INTEGER NOT NULL,
  from_wall_ns    INTEGER, to_wall_ns INTEGER,
  severity        TEXT NOT NULL,
  kind            TEXT NOT NULL,
  op              TEXT NOT NULL,
  count           INTEGER, slow_count INTEGER,
  p50_ns          INTEGER, p99_ns INTEGER,
  tail_ratio      REAL,
  explained_share REAL,
  pid INTEGER, tid INTEGER, rank INTEGER,
  python_file TEXT, python_line INTEGER, python_function TEXT,
  summary         TEXT NOT NULL,
  json            TEXT NOT NULL           -- the whole chain as explain --json prints it
);

-- Per-second aggregates per node, source and op. hist is a log-linear
-- histogram of durations (see src/util/hist.h), so percentiles over any
-- window come from summing seconds rather than scanning events.
CREATE TABLE aggregates (
  node    TEXT NOT NULL,
  source  TEXT NOT NULL,
  op      TEXT NOT NULL,
  second  INTEGER NOT NULL,               -- wall-clock second
  count   INTEGER NOT NULL,
  sum_ns  INTEGER NOT NULL,
  max_ns  INTEGER NOT NULL,
  hist    BLOB NOT NULL,
  PRIMARY KEY (node, source, op, second)
);

-- Loss and health counters per session: nothing is dropped uncounted.
CREATE TABLE counters (
  node       TEXT NOT NULL,
  session_id INTEGER NOT NULL,
  name       TEXT NOT NULL,
  value      INTEGER NOT NULL,
  PRIMARY KEY (node, session_id, name)
);

CREATE TABLE meta (
  key   TEXT PRIMARY KEY,
  value TEXT
);
