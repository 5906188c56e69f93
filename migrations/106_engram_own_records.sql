-- 106_engram_own_records.sql: what engram keeps so that memoryd's `rebuild-index` (which deletes index.db and
-- builds it again from the .md files only) loses nothing engram needs. These live in engram.db, beside index.db.

-- The root's identity, also written into index.db (engram_identity): an index.db without it, or with another
-- one, was rebuilt or replaced since engram last wrote.
CREATE TABLE IF NOT EXISTS engram_root (
    root_id     TEXT PRIMARY KEY,
    created_at  TEXT NOT NULL
);

-- memoryd's sensitive_scopes rows, kept in step with index.db while it is the same index: after a rebuild they
-- say which scopes were sensitive (memoryd's next save there would otherwise be written in plaintext).
CREATE TABLE IF NOT EXISTS engram_sensitive_scopes (
    scope_hash  TEXT PRIMARY KEY,
    scope_root  TEXT,
    marked_at   TEXT,
    key_source  TEXT
);

-- memoryd's promotions rows (of scopes that are not sensitive: their text stays out of engram's files), kept in
-- step the same way, so the queue and the decisions in it survive a rebuild.
CREATE TABLE IF NOT EXISTS engram_promotions (
    id                   INTEGER PRIMARY KEY,
    source_session_slug  TEXT NOT NULL,
    proposed_type        TEXT NOT NULL,
    proposed_title       TEXT NOT NULL,
    proposed_body        TEXT NOT NULL,
    proposed_triggers    TEXT NOT NULL,
    dura_score           TEXT NOT NULL,
    reasoning            TEXT,
    proposed_supersedes  TEXT NOT NULL DEFAULT '[]',
    scope_hash           TEXT NOT NULL,
    status               TEXT NOT NULL,
    created_at           TEXT NOT NULL,
    decided_at           TEXT
);
