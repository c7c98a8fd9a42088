-- 0012: the event streams' tickets in a table, for PostgreSQL's several processes
-- (postgres/0012-stream-tickets.sql). One process owns a SQLite file and keeps its tickets
-- in memory (service/core/tickets.c): the table is here so that both backends have the same
-- tables, migration for migration (cardpost migrate-db copies every table), and stays empty.
CREATE TABLE stream_tickets (
    hash       BLOB PRIMARY KEY,                -- sha256 of the ticket
    player_id  INTEGER NOT NULL,
    match_id   INTEGER NOT NULL,
    expires_ms INTEGER NOT NULL                 -- the service's Unix ms
) WITHOUT ROWID;
