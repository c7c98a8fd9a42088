-- 0006-match-state.sql: a snapshot of each match's replayed state, rewritten in the same
-- transaction as every event, so that cardpostd loads a match by reading its row instead of
-- replaying its whole log. The bytes belong to the build that wrote them: service/matches.c
-- tags them with a layout id, and a build that does not know the tag replays the events.

ALTER TABLE matches ADD COLUMN state BLOB;  -- NULL: none yet (replay the events)
