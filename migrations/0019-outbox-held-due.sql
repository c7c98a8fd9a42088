-- 0019: the held rows by when they are due (issue 18). A delivery that cannot reach its
-- destination holds that destination's other rows due with it (storage/sqlite/outbox.c
-- UNREACHABLE_SQL: those due by then, of the same destination). Keyed by the held flag alone
-- (emails) or by the destination alone (webhooks), the index gave every held row of the
-- destination to each such update, to be passed over by its next attempt: with a receiver
-- down, every new row's failed try read the whole of the outage's rows so far (100,000 after
-- ten seconds of the benchmark), and moves went at less than half their rate. Keyed by when
-- they are due as well, the update seeks to the rows due by then and reads no other.
DROP INDEX outbox_email_held;
DROP INDEX outbox_webhook_held;
CREATE INDEX outbox_email_held ON outbox(email_next) WHERE email_held = 1;
CREATE INDEX outbox_webhook_held ON outbox(destination, webhook_next) WHERE webhook_held = 1;
