-- 003_sensitive_scopes_table.sql: equal in effect to memoryd's migration of the same name (do not rename: memoryd
-- records applied migrations by file name).
-- Per-scope sensitivity registry, as memoryd's code writes it.

CREATE TABLE IF NOT EXISTS sensitive_scopes (
  scope_hash TEXT PRIMARY KEY,
  scope_root TEXT NOT NULL,
  marked_at  TEXT NOT NULL
);
