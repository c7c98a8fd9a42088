-- 0002-notifications.sql: what turn notifications and the clock need. Players get a webhook
-- secret, notification preferences and vacation days; matches get their clock (time per
-- move, timeout policy, reminder); the transactional outbox holds every notification a
-- move causes, written in the move's own transaction, and every delivery attempt is kept.

ALTER TABLE players ADD COLUMN webhook_secret TEXT;
ALTER TABLE players ADD COLUMN webhook_disabled INTEGER NOT NULL DEFAULT 0;  -- a 410 Gone
ALTER TABLE players ADD COLUMN prefs TEXT NOT NULL DEFAULT '{}';             -- JSON
ALTER TABLE players ADD COLUMN vacation_from INTEGER;                        -- Unix seconds
ALTER TABLE players ADD COLUMN vacation_until INTEGER;
ALTER TABLE players ADD COLUMN vacation_year INTEGER;                        -- the year counted
ALTER TABLE players ADD COLUMN vacation_days_used INTEGER NOT NULL DEFAULT 0;

ALTER TABLE matches ADD COLUMN move_seconds INTEGER;      -- time per move; NULL: no clock
ALTER TABLE matches ADD COLUMN timeout_policy TEXT NOT NULL DEFAULT 'auto'
    CHECK (timeout_policy IN ('auto', 'forfeit'));
ALTER TABLE matches ADD COLUMN reminder_seconds INTEGER;  -- a reminder this long before
ALTER TABLE matches ADD COLUMN turn_started INTEGER;      -- Unix seconds: the clock's start
ALTER TABLE matches ADD COLUMN reminded INTEGER NOT NULL DEFAULT 0;  -- this turn's reminder went

CREATE INDEX matches_by_deadline ON matches(deadline) WHERE status = 'active';

CREATE TABLE outbox (
    id           INTEGER PRIMARY KEY,
    player_id    INTEGER NOT NULL REFERENCES players(id),
    channel      TEXT NOT NULL CHECK (channel IN ('email', 'webhook')),
    type         TEXT NOT NULL,          -- match_started, turn, reminder, timeout, match_over
    match_id     INTEGER REFERENCES matches(id),
    seq          INTEGER,
    webhook_id   TEXT NOT NULL UNIQUE,   -- msg_...: the same on every retry
    body         TEXT NOT NULL,          -- webhook: the JSON sent; email: {"to","subject","text"}
    status       TEXT NOT NULL DEFAULT 'pending'
                 CHECK (status IN ('pending', 'delivered', 'dead')),
    attempts     INTEGER NOT NULL DEFAULT 0,
    next_attempt INTEGER NOT NULL,       -- Unix milliseconds
    created_at   INTEGER NOT NULL,       -- Unix milliseconds
    delivered_at INTEGER,
    last_error   TEXT
);
CREATE INDEX outbox_due ON outbox(channel, next_attempt) WHERE status = 'pending';
CREATE INDEX outbox_by_player ON outbox(player_id, id);

CREATE TABLE delivery_attempts (
    id          INTEGER PRIMARY KEY,
    outbox_id   INTEGER NOT NULL REFERENCES outbox(id),
    at          INTEGER NOT NULL,        -- Unix milliseconds
    ok          INTEGER NOT NULL,
    status      INTEGER,                 -- the HTTP status or SMTP reply code, if any
    error       TEXT,
    duration_ms INTEGER NOT NULL
);
CREATE INDEX delivery_attempts_by_outbox ON delivery_attempts(outbox_id);
