-- 105_engram_imports.sql: engram's record of what each importer brought in, so a second run adds nothing.
-- One row per imported item (a session memory or a pending promotion), keyed by the item's stable id in its
-- own system, with the pointer to where it came from (file, line, id). memoryd never reads it.

CREATE TABLE IF NOT EXISTS engram_imports (
    source_key   TEXT PRIMARY KEY,   -- "<system>:<the item's own id>"
    system       TEXT NOT NULL,      -- openrelix | cognirelay | codex | eternego
    kind         TEXT NOT NULL,      -- session | promotion | supersede (a proposed link)
    memory_slug  TEXT,               -- the session memory written (session), the newer one (supersede)
    promotion_id INTEGER,            -- the promotion queued (kind = promotion)
    origin       TEXT NOT NULL,      -- file[:line] [(id)] under the imported path
    imported_at  TEXT NOT NULL
);

CREATE INDEX IF NOT EXISTS engram_imports_by_system ON engram_imports(system);
