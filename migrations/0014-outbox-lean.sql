-- rebuild: outbox (the foreign keys are off while it runs, and checked before its commit)
-- 0014: an outbox row that costs what it needs (issue 18). The table is rebuilt (SQLite
-- changes a column's constraints no other way) without two costs every insert paid for
-- nothing: the unique index on webhook_id (never looked up: an id is "msg_", the time and 48
-- random bits, docs/decisions.md), and the `IN (...)` checks of channel and status, which
-- SQLite evaluates through a temporary table at each insert (the same checks, written as
-- comparisons). Columns, rows, ids and the other indexes are as before; delivery_attempts
-- refers to the new table by its name.
CREATE TABLE outbox_new (
    id            INTEGER PRIMARY KEY,
    player_id     INTEGER NOT NULL REFERENCES players(id),
    channel       TEXT NOT NULL CHECK (channel = 'email' OR channel = 'webhook'),
    type          TEXT NOT NULL,          -- match_started, turn, reminder, timeout, match_over
    match_id      INTEGER REFERENCES matches(id),
    seq           INTEGER,
    webhook_id    TEXT NOT NULL,          -- msg_...: the same on every retry
    body          TEXT NOT NULL,          -- '' when rendered at delivery (seat set)
    status        TEXT NOT NULL DEFAULT 'pending'
                  CHECK (status = 'pending' OR status = 'delivered' OR status = 'dead'),
    attempts      INTEGER NOT NULL DEFAULT 0,
    next_attempt  INTEGER NOT NULL,       -- Unix milliseconds
    created_at    INTEGER NOT NULL,       -- Unix milliseconds
    delivered_at  INTEGER,
    last_error    TEXT,
    seat          INTEGER,                -- set: body '' and rendered at delivery
    deadline      INTEGER,                -- Unix seconds, or NULL: no deadline
    destination   TEXT NOT NULL DEFAULT '',  -- webhook: host:port
    held          INTEGER NOT NULL DEFAULT 0,  -- last try: unreachable
    claimed_until INTEGER                 -- Unix ms: a process delivers it
);
INSERT INTO outbox_new (id, player_id, channel, type, match_id, seq, webhook_id, body, status,
                        attempts, next_attempt, created_at, delivered_at, last_error, seat,
                        deadline, destination, held, claimed_until)
    SELECT id, player_id, channel, type, match_id, seq, webhook_id, body, status, attempts,
           next_attempt, created_at, delivered_at, last_error, seat, deadline, destination,
           held, claimed_until
    FROM outbox;
DROP TABLE outbox;
ALTER TABLE outbox_new RENAME TO outbox;
CREATE INDEX outbox_due ON outbox(channel, next_attempt) WHERE status = 'pending';
CREATE INDEX outbox_by_player ON outbox(player_id, id);
CREATE INDEX outbox_dead ON outbox(channel) WHERE status = 'dead';
CREATE INDEX outbox_held ON outbox(channel, destination) WHERE held = 1;
