-- 101_engram_promotion_notes.sql: engram's own notes on promotions, kept beside memoryd's table rather than in
-- it, so memoryd's readers (which filter promotions on status = 'pending') see nothing unfamiliar.
-- A deferred promotion stays pending and sinks in engram's default sort; reasons a person gave are kept.

CREATE TABLE IF NOT EXISTS engram_promotion_notes (
    promotion_id  INTEGER PRIMARY KEY,   -- promotions.id (no foreign key: memoryd may delete promotions)
    deferred_at   TEXT,
    defer_reason  TEXT,
    reject_reason TEXT,
    merged_into   TEXT                   -- slug of the memory a merged promotion went into
);
