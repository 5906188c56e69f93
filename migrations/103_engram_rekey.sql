-- 103_engram_rekey.sql: a rekey in progress. While a scope has a row here, some of its files are encrypted
-- with the new key and some with the old; `engram check` says so, and running the rekey again (with both keys)
-- finishes it. The row goes when the last file has been re-encrypted.

CREATE TABLE IF NOT EXISTS engram_rekey (
    scope_hash  TEXT PRIMARY KEY,
    started_at  TEXT NOT NULL,
    new_source  TEXT NOT NULL            -- passphrase | random
);
