-- 0008-consent.sql: consent (spec/service.md "Trust, consent and limits"). A match that a
-- player creates with other players waits, pending, until every other seat accepts: it has
-- no seed, no events and no clock yet; a decline or its expiry cancels it. Its `status`
-- stays 'active' while pending and becomes 'finished' when cancelled (no result): the
-- column's CHECK cannot change without rebuilding the table, and `invitation` says which.
-- Existing matches have no invitation (NULL): they started. An organiser's invitation to a
-- league waits in league_invitations until the player joins; existing members stay members.

ALTER TABLE matches ADD COLUMN invitation TEXT
    CHECK (invitation IN ('pending', 'declined', 'expired'));  -- NULL: started
ALTER TABLE matches ADD COLUMN accepted INTEGER NOT NULL DEFAULT 0;  -- bit per seat that agreed
ALTER TABLE matches ADD COLUMN invited_until INTEGER;               -- Unix seconds: expiry
CREATE INDEX matches_invitations_due ON matches(invited_until) WHERE invitation = 'pending';

CREATE TABLE league_invitations (
    league_id  INTEGER NOT NULL REFERENCES leagues(id),
    player_id  INTEGER NOT NULL REFERENCES players(id),
    invited_at INTEGER NOT NULL,             -- Unix seconds
    PRIMARY KEY (league_id, player_id)
) WITHOUT ROWID;
