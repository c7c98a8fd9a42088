-- 0020: the outbox's fresh rows (issue 18). A notification is written in its change's
-- transaction to outbox_fresh: the row as written, with no index but its id, so that a
-- move's notifications cost it an append (storage/sqlite/outbox.c "Fresh
-- rows"). The delivery side takes the fresh rows into outbox, with their delivery's columns
-- and indexes, in id order and as it claims them (at the deliveries' pace), the same id kept.
CREATE TABLE outbox_fresh (
    id          INTEGER PRIMARY KEY,  -- its id in outbox once taken there
    player_id   INTEGER NOT NULL REFERENCES players(id),
    type        TEXT NOT NULL,
    match_id    INTEGER REFERENCES matches(id),
    seq         INTEGER,
    webhook_id  TEXT NOT NULL,
    body        TEXT NOT NULL,
    created_at  INTEGER NOT NULL,     -- Unix ms
    next_attempt INTEGER NOT NULL,    -- Unix ms: due then, by each of its channels
    seat        INTEGER,
    deadline    INTEGER,
    destination TEXT NOT NULL,
    channels    INTEGER NOT NULL      -- 1: email, 2: webhook, 3: both
);
-- Every row, fresh or not, as outbox's columns: what the reads by id, by player and the copy
-- to PostgreSQL (cardpost migrate-db) see. A fresh row is pending by each of its channels,
-- due when it says, never tried.
CREATE VIEW outbox_all AS
    SELECT id, player_id, type, match_id, seq, webhook_id, body, created_at, seat, deadline,
           destination, email_status, email_attempts, email_next, email_delivered_at,
           email_error, email_held, email_claimed, webhook_status, webhook_attempts,
           webhook_next, webhook_delivered_at, webhook_error, webhook_held, webhook_claimed
    FROM outbox
    UNION ALL
    SELECT id, player_id, type, match_id, seq, webhook_id, body, created_at, seat, deadline,
           destination, iif(channels & 1, 'pending', NULL), 0,
           iif(channels & 1, next_attempt, NULL), NULL, NULL, 0, NULL,
           iif(channels & 2, 'pending', NULL), 0, iif(channels & 2, next_attempt, NULL), NULL,
           NULL, 0, NULL
    FROM outbox_fresh;
