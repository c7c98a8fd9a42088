-- 0010-outbox-dead.sql (PostgreSQL): as ../0010-outbox-dead.sql.
CREATE INDEX outbox_dead ON outbox(channel) WHERE status = 'dead';
