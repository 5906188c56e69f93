-- 111_engram_allowlist.sql: hosts a person trusts (their own domains, an installer host engram does not know). A
-- poisoning finding whose addresses are all on this list is lowered to review, never hidden; each change of the
-- list is audited.
CREATE TABLE IF NOT EXISTS engram_allowlist (
    host        TEXT PRIMARY KEY,
    added_at    TEXT NOT NULL,
    note        TEXT
);
