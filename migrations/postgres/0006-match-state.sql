-- 0006-match-state.sql (PostgreSQL): as ../0006-match-state.sql.
ALTER TABLE matches ADD COLUMN state BYTEA;  -- NULL: none yet (replay the events)
