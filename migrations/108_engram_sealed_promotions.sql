-- 108_engram_sealed_promotions.sql: promotions of sensitive scopes that engram decided, sealed under the scope's
-- key. engram keeps no plaintext copy of them (migration 106's copy leaves them out), so memoryd's rebuild-index
-- would otherwise erase those decisions for good. Status and times are in clear (they are no secret, and `check`
-- names a lost decision without the key); the row itself (title, body, triggers, ...) is AES-256-GCM sealed.
CREATE TABLE IF NOT EXISTS engram_sealed_promotions (
    id          INTEGER PRIMARY KEY,
    scope_hash  TEXT NOT NULL,
    status      TEXT NOT NULL,
    decided_at  TEXT,
    sealed      BLOB NOT NULL
);
