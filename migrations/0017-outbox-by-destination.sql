-- 0017: the pending webhooks by destination (issue 18). The dispatcher looks past the first
-- rows due once a second while a destination's slots are all busy, for the rows of the
-- others; in due order alone that look read every row of the busy destination's backlog
-- (150,000 rows: about 100 ms a look). Through this index it steps from one destination to
-- the next and reads only the first rows due of each (storage/sqlite/outbox.c
-- claim_by_destination).
CREATE INDEX outbox_webhook_destination_due ON outbox(destination, webhook_next)
    WHERE webhook_status = 'pending';
