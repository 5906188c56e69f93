-- 102_engram_binding.sql: engram's binding manifest for encrypted memories (memoryd's format binds a .md.enc
-- only to its scope, through the AAD). One row per encrypted memory engram wrote or verified: a version that
-- grows with every write and an HMAC, keyed from the scope key, over slug, version and the file's bytes.
-- A file that no longer matches is shown as swapped or rolled back instead of being silently accepted.

CREATE TABLE IF NOT EXISTS engram_binding (
    slug         TEXT PRIMARY KEY,
    scope_hash   TEXT NOT NULL,
    version      INTEGER NOT NULL,
    updated_at   TEXT,              -- the memory's frontmatter updated_at at binding (tells a rollback)
    file_mac     TEXT NOT NULL,     -- HMAC(k, slug || version || sha256(file bytes))
    content_mac  TEXT NOT NULL,     -- HMAC(k, plaintext): the same text encrypted again is not a rollback
    bound_at     TEXT NOT NULL
);
