-- 0019: SQLite's 0019 keeps a notification never tried out of the due indexes, and finds
-- such rows by id after a mark of each channel, which its one process moves on as it claims
-- them. Several PostgreSQL processes cannot keep such a mark (an id is drawn at insert and
-- seen at commit: a row drawn below the mark could commit after the claim that moved it,
-- as 0018 says), and their claims take rows FOR UPDATE SKIP LOCKED through the indexes.
-- PostgreSQL keeps every pending row in them; nothing changes here (the same schema version
-- on both sides, for migrate-db).
SELECT 1;
