-- 0018: a player's deliveries found through a table filled in batches, not an index of the
-- outbox kept at every insert (issue 18). outbox_by_player (player_id, id) took each new row
-- into the part of the index of its player: with one player's row a move, a group commit of
-- twenty moves changed twenty pages of that index, about half of the pages each commit wrote
-- to the WAL with notifications on, and as many again at the checkpoint. outbox_players holds
-- the same pairs for the rows up to outbox_indexed.upto; the store adds the rows past it in
-- one sorted insert once 1,024 of them have come (each page of it changed once for all of
-- them), and a player's listing reads those past it from the outbox's own order
-- (storage/sqlite/outbox.c sqlite_outbox_of_player). SQLite only: PostgreSQL keeps its index
-- (its 0018 says why), and migrate-db does not copy these two tables (they are derived).
CREATE TABLE outbox_players (
    player_id INTEGER NOT NULL,
    id        INTEGER NOT NULL,  -- outbox.id
    PRIMARY KEY (player_id, id)
) WITHOUT ROWID;
INSERT INTO outbox_players (player_id, id) SELECT player_id, id FROM outbox ORDER BY player_id, id;
CREATE TABLE outbox_indexed (upto INTEGER NOT NULL);  -- one row: outbox_players holds the rows to here
INSERT INTO outbox_indexed (upto) SELECT coalesce(max(id), 0) FROM outbox;
DROP INDEX outbox_by_player;
