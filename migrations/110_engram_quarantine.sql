-- 110_engram_quarantine.sql: memories engram quarantined (the poisoning screen's findings, or a person's word). A
-- quarantined memory is soft-forgotten in its frontmatter and the index, a state memoryd's injection and search
-- skip and its rebuild-index keeps (it reads the file); this row says it was engram's quarantine, not decay, and
-- what state `engram release` restores.
CREATE TABLE IF NOT EXISTS engram_quarantine (
    slug        TEXT PRIMARY KEY,
    was         TEXT NOT NULL,
    rules       TEXT NOT NULL DEFAULT '[]',
    at          TEXT NOT NULL
);
