-- 0015-outbox-notification.sql (PostgreSQL): as ../0015-outbox-notification.sql (one row
-- per notification, each channel's delivery in columns of its own), without a rebuild.
ALTER TABLE outbox
    ADD COLUMN email_status TEXT CHECK (email_status IN ('pending', 'delivered', 'dead')),
    ADD COLUMN email_attempts INTEGER NOT NULL DEFAULT 0,
    ADD COLUMN email_next BIGINT,
    ADD COLUMN email_delivered_at BIGINT,
    ADD COLUMN email_error TEXT,
    ADD COLUMN email_held BOOLEAN NOT NULL DEFAULT false,
    ADD COLUMN email_claimed BIGINT,
    ADD COLUMN webhook_status TEXT CHECK (webhook_status IN ('pending', 'delivered', 'dead')),
    ADD COLUMN webhook_attempts INTEGER NOT NULL DEFAULT 0,
    ADD COLUMN webhook_next BIGINT,
    ADD COLUMN webhook_delivered_at BIGINT,
    ADD COLUMN webhook_error TEXT,
    ADD COLUMN webhook_held BOOLEAN NOT NULL DEFAULT false,
    ADD COLUMN webhook_claimed BIGINT;
UPDATE outbox SET email_status = status, email_attempts = attempts, email_next = next_attempt,
                  email_delivered_at = delivered_at, email_error = last_error,
                  email_held = held, email_claimed = claimed_until
    WHERE channel = 'email';
UPDATE outbox SET webhook_status = status, webhook_attempts = attempts,
                  webhook_next = next_attempt, webhook_delivered_at = delivered_at,
                  webhook_error = last_error, webhook_held = held,
                  webhook_claimed = claimed_until
    WHERE channel = 'webhook';
ALTER TABLE delivery_attempts ADD COLUMN channel TEXT NOT NULL DEFAULT 'email'
    CHECK (channel IN ('email', 'webhook'));
UPDATE delivery_attempts d SET channel = 'webhook' FROM outbox o
    WHERE o.id = d.outbox_id AND o.channel = 'webhook';
DROP INDEX outbox_due;
DROP INDEX outbox_dead;
DROP INDEX outbox_held;
ALTER TABLE outbox DROP COLUMN channel, DROP COLUMN status, DROP COLUMN attempts,
    DROP COLUMN next_attempt, DROP COLUMN delivered_at, DROP COLUMN last_error,
    DROP COLUMN held, DROP COLUMN claimed_until;
CREATE INDEX outbox_email_due ON outbox(email_next) WHERE email_status = 'pending';
CREATE INDEX outbox_webhook_due ON outbox(webhook_next) WHERE webhook_status = 'pending';
CREATE INDEX outbox_email_dead ON outbox(email_status) WHERE email_status = 'dead';
CREATE INDEX outbox_webhook_dead ON outbox(webhook_status) WHERE webhook_status = 'dead';
CREATE INDEX outbox_email_held ON outbox(email_held) WHERE email_held;
CREATE INDEX outbox_webhook_held ON outbox(destination) WHERE webhook_held;
