-- 0007-clock.sql: clocks that keep their promises (docs/api.md "Deadlines").
--  * Every vacation a player takes is kept, so that a seat's deadline counts every pause
--    inside its turn, however many vacations there were (players.vacation_from/until stay:
--    the latest one, for the player's record and the allowance).
--  * `reminded` becomes a mask of the seats reminded this turn (bit s: seat s), so that a
--    seat away at reminder time is reminded once it is back; a match that had its one
--    reminder counts every seat as reminded.
--  * `wake_at` is when the scheduler next has something to do for the match: a deadline, a
--    reminder, or a seat coming back from a vacation.

CREATE TABLE vacations (
    id       INTEGER PRIMARY KEY,
    player   INTEGER NOT NULL REFERENCES players(id),
    from_s   INTEGER NOT NULL,                  -- Unix seconds
    until_s  INTEGER NOT NULL                   -- Unix seconds; moved back when ended early
);
CREATE INDEX vacations_by_player ON vacations(player, until_s);

INSERT INTO vacations (player, from_s, until_s)
    SELECT id, vacation_from, vacation_until FROM players
    WHERE vacation_from IS NOT NULL AND vacation_until > vacation_from;

UPDATE matches SET reminded = 1023 WHERE reminded <> 0;

ALTER TABLE matches ADD COLUMN wake_at INTEGER;  -- Unix seconds, or NULL: nothing to do
UPDATE matches SET wake_at =
    CASE WHEN reminded = 0 AND reminder_seconds > 0 THEN deadline - reminder_seconds
         ELSE deadline END
    WHERE status = 'active' AND deadline IS NOT NULL;
CREATE INDEX matches_by_wake ON matches(wake_at) WHERE status = 'active';
