-- 0018: SQLite's 0018 finds a player's deliveries through a table filled in batches instead
-- of an index kept at every insert (a commit of twenty moves changed twenty pages of it). Its
-- batches go by an id mark, which several PostgreSQL processes cannot keep: an id is drawn when
-- a row is inserted and seen when its transaction commits, so a row drawn below the mark could
-- commit after the batch that set it and be left out. PostgreSQL keeps outbox_by_player;
-- nothing changes here (the same schema version on both sides, for migrate-db).
SELECT 1;
