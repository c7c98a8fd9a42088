-- 0001-init.sql: players, matches with their seats, the append-only event log of each
-- match, and idempotency keys. Applied once by storage/migrate.c; version 1.

CREATE TABLE players (
    id          INTEGER PRIMARY KEY,
    name        TEXT NOT NULL,
    email       TEXT,
    webhook_url TEXT,
    token_hash  BLOB NOT NULL UNIQUE,          -- sha256 of the bearer token; the token is never stored
    created_at  INTEGER NOT NULL               -- Unix seconds
);

CREATE TABLE matches (
    id              INTEGER PRIMARY KEY,
    game            TEXT NOT NULL,
    options         TEXT NOT NULL,             -- JSON, every option explicit
    seats           INTEGER NOT NULL,
    seed            BLOB NOT NULL,             -- secret until the match is over
    seed_commitment TEXT NOT NULL,             -- hex(sha256(seed)), public from the start
    created_by      INTEGER REFERENCES players(id),  -- NULL: the operator
    created_at      INTEGER NOT NULL,
    -- the cached summary, rewritten in the same transaction as every event
    status          TEXT NOT NULL CHECK (status IN ('active', 'finished')),
    seq             INTEGER NOT NULL,          -- events in the log so far
    to_move         TEXT NOT NULL,             -- JSON array of seats
    totals          TEXT NOT NULL,             -- JSON array
    result          TEXT,                      -- JSON result object once finished
    deadline        INTEGER,                   -- Unix seconds, or NULL
    finished_at     INTEGER
);

CREATE TABLE match_seats (
    match_id  INTEGER NOT NULL REFERENCES matches(id),
    seat      INTEGER NOT NULL,
    player_id INTEGER NOT NULL REFERENCES players(id),
    PRIMARY KEY (match_id, seat),
    UNIQUE (match_id, player_id)
) WITHOUT ROWID;

CREATE INDEX match_seats_by_player ON match_seats(player_id);

-- The turn log. seq is the event's index in the match's full log (chance events included).
CREATE TABLE events (
    match_id  INTEGER NOT NULL REFERENCES matches(id),
    seq       INTEGER NOT NULL,
    kind      TEXT NOT NULL CHECK (kind IN ('deal', 'shuffle', 'move')),
    seat      INTEGER,                         -- move: the seat
    body      TEXT NOT NULL,                   -- move: its canonical text; deal/shuffle: the cards
    auto      INTEGER NOT NULL DEFAULT 0,
    at        INTEGER NOT NULL,                -- Unix milliseconds
    PRIMARY KEY (match_id, seq)
) WITHOUT ROWID;

-- A retried POST with the same Idempotency-Key gets the first answer.
CREATE TABLE idempotency (
    player_id  INTEGER NOT NULL,               -- 0: the operator
    key        TEXT NOT NULL,
    request    BLOB NOT NULL,                  -- sha256 of method, path and body
    status     INTEGER NOT NULL,
    body       TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (player_id, key)
) WITHOUT ROWID;
