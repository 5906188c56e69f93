-- 109_engram_snooze.sql: a promotion snoozed until a time leaves engram's queue until then and comes back on its
-- own; memoryd still sees it pending (its status is not touched).
ALTER TABLE engram_promotion_notes ADD COLUMN snoozed_until TEXT;
