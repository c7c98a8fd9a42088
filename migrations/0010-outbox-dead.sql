-- 0010: the dead notifications counted by channel at every metrics scrape (GET /metrics,
-- docs/operations.md "Monitoring") through an index of their own, never the whole outbox.
CREATE INDEX outbox_dead ON outbox(channel) WHERE status = 'dead';
