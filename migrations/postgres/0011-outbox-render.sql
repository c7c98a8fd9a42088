-- 0011-outbox-render.sql (PostgreSQL): as ../0011-outbox-render.sql.
ALTER TABLE outbox ADD COLUMN seat INTEGER;
ALTER TABLE outbox ADD COLUMN deadline BIGINT;
ALTER TABLE outbox ADD COLUMN destination TEXT NOT NULL DEFAULT '';
ALTER TABLE outbox ADD COLUMN held BOOLEAN NOT NULL DEFAULT false;
ALTER TABLE outbox ADD COLUMN claimed_until BIGINT;
CREATE INDEX outbox_held ON outbox(channel, destination) WHERE held;
