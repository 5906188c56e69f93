-- 100_engram_audit_outbox.sql: engram's own table (the 100_engram_ prefix cannot collide with memoryd's
-- numbered migrations, and memoryd ignores rows it does not know in _schema_migrations).
-- The audit outbox: each engram mutation stores its audit event here in the same transaction as its index
-- change, then appends it to audit/audit.jsonl and deletes the row. A crash in between leaves the event here,
-- and `engram repair` appends it, so no committed change goes unaudited.

CREATE TABLE IF NOT EXISTS engram_audit_outbox (
    op_id      TEXT PRIMARY KEY,
    event      TEXT NOT NULL,    -- JSON: actor, event_type, scope_hash, target_id, details
    created_at TEXT NOT NULL
);
