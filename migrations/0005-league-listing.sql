-- 0005-league-listing.sql: a league's matches newest first (GET /v1/leagues/{id} lists the
-- latest 200) walk this index backwards and stop after 200; matches_by_league (league_id,
-- status, id) made SQLite sort all of the league's matches first (55 ms at 100,000).
CREATE INDEX matches_by_league_newest ON matches(league_id, id) WHERE league_id IS NOT NULL;
