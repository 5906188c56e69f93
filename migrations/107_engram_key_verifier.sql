-- 107_engram_key_verifier.sql: proof of memoryd's master passphrase for this root, so that a typo is refused
-- before anything is encrypted under it even when no encrypted file exists to try it on (every sensitive scope
-- unmarked, or the first one being marked). One row: a constant sealed with AES-256-GCM under a key derived from
-- the passphrase (PBKDF2-HMAC-SHA256, memoryd's iteration count, a random salt). It opens only with the right
-- passphrase and says nothing else about it: guessing it costs what guessing any .md.enc of the root costs.
CREATE TABLE IF NOT EXISTS engram_key_verifier (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    salt        TEXT NOT NULL,
    kdf_iters   INTEGER NOT NULL,
    sealed      TEXT NOT NULL,
    set_at      TEXT NOT NULL
);
