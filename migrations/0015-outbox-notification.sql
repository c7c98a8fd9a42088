-- rebuild: outbox (the foreign keys are off while it runs, and checked before its commit)
-- 0015: one outbox row per notification (docs/service.md "Data flow of a move", issue 18).
-- A notification went to each channel its player wants as a row of its own; a row now
-- carries each channel's delivery in columns of its own (email_*, webhook_*; a channel's
-- status NULL: not by that channel), so a turn told by email and webhook is one insert, one
-- entry of the index by player and one check of each foreign key instead of two. A delivery
-- (what GET /v1/players/me/deliveries lists, and redeliver names) is a row's channel: its
-- id is the row's id times two, plus one for the webhook. Every row written before keeps
-- its id and holds its one channel; its attempts say which channel they were by.
-- The columns: what the notification is (type: match_started, turn, reminder, timeout, ...;
-- webhook_id: msg_..., the same on every retry; body: '' when rendered at delivery, seat set;
-- created_at: Unix ms; deadline: Unix seconds, NULL for none; destination: the webhook's
-- host:port), then each channel's delivery: its status (NULL: not by that channel), attempts,
-- next attempt (Unix ms), delivery time, last error, held (the last try could not reach the
-- destination: the relay for email) and claimed (Unix ms: a process delivers it until then).
CREATE TABLE outbox_new (
    id                   INTEGER PRIMARY KEY,
    player_id            INTEGER NOT NULL REFERENCES players(id),
    type                 TEXT NOT NULL,
    match_id             INTEGER REFERENCES matches(id),
    seq                  INTEGER,
    webhook_id           TEXT NOT NULL,
    body                 TEXT NOT NULL,
    created_at           INTEGER NOT NULL,
    seat                 INTEGER,
    deadline             INTEGER,
    destination          TEXT NOT NULL DEFAULT '',
    email_status         TEXT CHECK (email_status = 'pending' OR email_status = 'delivered'
                                     OR email_status = 'dead'),
    email_attempts       INTEGER NOT NULL DEFAULT 0,
    email_next           INTEGER,
    email_delivered_at   INTEGER,
    email_error          TEXT,
    email_held           INTEGER NOT NULL DEFAULT 0,
    email_claimed        INTEGER,
    webhook_status       TEXT CHECK (webhook_status = 'pending' OR
                                     webhook_status = 'delivered' OR webhook_status = 'dead'),
    webhook_attempts     INTEGER NOT NULL DEFAULT 0,
    webhook_next         INTEGER,
    webhook_delivered_at INTEGER,
    webhook_error        TEXT,
    webhook_held         INTEGER NOT NULL DEFAULT 0,
    webhook_claimed      INTEGER
);
INSERT INTO outbox_new (id, player_id, type, match_id, seq, webhook_id, body, created_at, seat,
                        deadline, destination,
                        email_status, email_attempts, email_next, email_delivered_at,
                        email_error, email_held, email_claimed,
                        webhook_status, webhook_attempts, webhook_next, webhook_delivered_at,
                        webhook_error, webhook_held, webhook_claimed)
    SELECT id, player_id, type, match_id, seq, webhook_id, body, created_at, seat, deadline,
           destination,
           iif(channel = 'email', status, NULL), iif(channel = 'email', attempts, 0),
           iif(channel = 'email', next_attempt, NULL), iif(channel = 'email', delivered_at, NULL),
           iif(channel = 'email', last_error, NULL), iif(channel = 'email', held, 0),
           iif(channel = 'email', claimed_until, NULL),
           iif(channel = 'webhook', status, NULL), iif(channel = 'webhook', attempts, 0),
           iif(channel = 'webhook', next_attempt, NULL),
           iif(channel = 'webhook', delivered_at, NULL),
           iif(channel = 'webhook', last_error, NULL), iif(channel = 'webhook', held, 0),
           iif(channel = 'webhook', claimed_until, NULL)
    FROM outbox;
ALTER TABLE delivery_attempts ADD COLUMN channel TEXT NOT NULL DEFAULT 'email'
    CHECK (channel = 'email' OR channel = 'webhook');
UPDATE delivery_attempts SET channel = 'webhook'
    WHERE outbox_id IN (SELECT id FROM outbox WHERE channel = 'webhook');
DROP TABLE outbox;
ALTER TABLE outbox_new RENAME TO outbox;
CREATE INDEX outbox_by_player ON outbox(player_id, id);
CREATE INDEX outbox_email_due ON outbox(email_next) WHERE email_status = 'pending';
CREATE INDEX outbox_webhook_due ON outbox(webhook_next) WHERE webhook_status = 'pending';
CREATE INDEX outbox_email_dead ON outbox(email_status) WHERE email_status = 'dead';
CREATE INDEX outbox_webhook_dead ON outbox(webhook_status) WHERE webhook_status = 'dead';
CREATE INDEX outbox_email_held ON outbox(email_held) WHERE email_held = 1;
CREATE INDEX outbox_webhook_held ON outbox(destination) WHERE webhook_held = 1;
