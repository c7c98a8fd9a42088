-- rebuild: events (the foreign keys are off while it runs, and checked before its commit)
-- 0016: an event's insert without a temporary table (issue 18). Every move inserts one
-- event, and SQLite evaluated the `kind IN ('deal', 'shuffle', 'move')` check through an
-- ephemeral table built at each insert: a b-tree, a pager and a page cache's first 20 pages
-- (about 90 KB allocated and freed a move, and some 5 µs of a move's CPU in the daemon). The
-- same check, written as comparisons, as 0014 did for the outbox. Columns, rows and the key
-- are as before. PostgreSQL's 0016 changes nothing: its `IN` checks cost nothing.
CREATE TABLE events_new (
    match_id  INTEGER NOT NULL REFERENCES matches(id),
    seq       INTEGER NOT NULL,
    kind      TEXT NOT NULL CHECK (kind = 'deal' OR kind = 'shuffle' OR kind = 'move'),
    seat      INTEGER,                         -- move: the seat
    body      TEXT NOT NULL,                   -- move: its canonical text; deal/shuffle: the cards
    auto      INTEGER NOT NULL DEFAULT 0,
    at        INTEGER NOT NULL,                -- Unix milliseconds
    PRIMARY KEY (match_id, seq)
) WITHOUT ROWID;
INSERT INTO events_new (match_id, seq, kind, seat, body, auto, at)
    SELECT match_id, seq, kind, seat, body, auto, at FROM events;
DROP TABLE events;
ALTER TABLE events_new RENAME TO events;
