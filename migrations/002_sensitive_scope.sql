-- 002_sensitive_scope.sql: equal in effect to memoryd's migration of the same name (do not rename: memoryd
-- records applied migrations by file name).
-- Per-memory sensitivity flag (added to tables created before it existed).

ALTER TABLE memories ADD COLUMN scope_sensitive INTEGER NOT NULL DEFAULT 0;

CREATE INDEX IF NOT EXISTS idx_memories_sensitive ON memories (scope_sensitive);
