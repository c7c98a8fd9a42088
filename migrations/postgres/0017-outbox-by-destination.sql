-- 0017: the pending webhooks by destination (issue 18), as SQLite's 0017: the dispatcher's
-- look past the first rows due, for the destinations whose slots are not all busy, steps
-- from one destination to the next (a recursive query) and reads each one's first rows due
-- (a LATERAL subquery), not a busy destination's whole backlog in due order
-- (storage/postgres/outbox.c CLAIM_BY_DESTINATION_SQL).
CREATE INDEX outbox_webhook_destination_due ON outbox(destination, webhook_next)
    WHERE webhook_status = 'pending';
