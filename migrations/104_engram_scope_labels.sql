-- 104_engram_scope_labels.sql: names people give scopes in engram (memoryd knows scopes only by a hash of
-- the project directory, and not every scope's directory can be found again).

CREATE TABLE IF NOT EXISTS engram_scope_labels (
    scope_hash  TEXT PRIMARY KEY,
    label       TEXT NOT NULL,
    set_at      TEXT NOT NULL
);
