-- 0008-consent.sql (PostgreSQL): as ../0008-consent.sql.

ALTER TABLE matches ADD COLUMN invitation TEXT
    CHECK (invitation IN ('pending', 'declined', 'expired'));
ALTER TABLE matches ADD COLUMN accepted BIGINT NOT NULL DEFAULT 0;
ALTER TABLE matches ADD COLUMN invited_until BIGINT;
CREATE INDEX matches_invitations_due ON matches(invited_until) WHERE invitation = 'pending';

CREATE TABLE league_invitations (
    league_id  BIGINT NOT NULL REFERENCES leagues(id),
    player_id  BIGINT NOT NULL REFERENCES players(id),
    invited_at BIGINT NOT NULL,
    PRIMARY KEY (league_id, player_id)
);
