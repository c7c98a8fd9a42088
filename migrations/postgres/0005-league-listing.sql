-- 0005-league-listing.sql (PostgreSQL): as ../0005-league-listing.sql.
CREATE INDEX matches_by_league_newest ON matches(league_id, id) WHERE league_id IS NOT NULL;
