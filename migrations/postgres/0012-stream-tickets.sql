-- 0012-stream-tickets.sql (PostgreSQL): the event streams' single-use tickets where every
-- process sees them, so a ticket drawn on one process opens a stream on another (docs/scaling.md
-- "What each process keeps"). Only a ticket's sha256 is kept; it is deleted when used
-- (DELETE ... RETURNING: once, whichever process asks first) and once expired (at the next
-- ticket drawn). UNLOGGED: a ticket lives 30 seconds, so it is not worth the WAL; a crash of
-- the server empties the table, and browsers draw new ones.
CREATE UNLOGGED TABLE stream_tickets (
    hash       BYTEA PRIMARY KEY,               -- sha256 of the ticket
    player_id  BIGINT NOT NULL,
    match_id   BIGINT NOT NULL,
    expires_ms BIGINT NOT NULL                  -- the service's Unix ms
);
CREATE INDEX stream_tickets_player ON stream_tickets(player_id);
