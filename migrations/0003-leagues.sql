-- 0003-leagues.sql: leagues with their members, the league of a match, and the standings,
-- which are updated in the same transaction that finishes a league match.

CREATE TABLE leagues (
    id         INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    game       TEXT NOT NULL,
    options    TEXT NOT NULL,            -- JSON, every option explicit (seats = table size)
    clock      TEXT,                     -- the "clock" of its matches as JSON; NULL: default
    points     TEXT NOT NULL,            -- JSON array: league points for 1st, 2nd, ... place
    organizer  INTEGER REFERENCES players(id),  -- NULL: the operator
    created_at INTEGER NOT NULL
);

CREATE TABLE league_members (
    league_id  INTEGER NOT NULL REFERENCES leagues(id),
    player_id  INTEGER NOT NULL REFERENCES players(id),
    joined_at  INTEGER NOT NULL,
    left_at    INTEGER,                  -- NULL while a member
    PRIMARY KEY (league_id, player_id)
) WITHOUT ROWID;

ALTER TABLE matches ADD COLUMN league_id INTEGER REFERENCES leagues(id);
CREATE INDEX matches_by_league ON matches(league_id, status, id) WHERE league_id IS NOT NULL;

CREATE TABLE standings (
    league_id      INTEGER NOT NULL REFERENCES leagues(id),
    player_id      INTEGER NOT NULL REFERENCES players(id),
    played         INTEGER NOT NULL DEFAULT 0,
    won            INTEGER NOT NULL DEFAULT 0,
    drawn          INTEGER NOT NULL DEFAULT 0,
    lost           INTEGER NOT NULL DEFAULT 0,
    points         REAL NOT NULL DEFAULT 0,
    points_for     INTEGER NOT NULL DEFAULT 0,
    points_against INTEGER NOT NULL DEFAULT 0,
    rating         REAL NOT NULL DEFAULT 1500,
    PRIMARY KEY (league_id, player_id)
) WITHOUT ROWID;
