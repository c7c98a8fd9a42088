-- 0019: the held rows by when they are due, as SQLite's 0019: the update that holds an
-- unreachable destination's rows due with a failed try (storage/postgres/outbox.c
-- UNREACHABLE_SQL) seeks to them instead of reading every row held for the destination.
DROP INDEX outbox_email_held;
DROP INDEX outbox_webhook_held;
CREATE INDEX outbox_email_held ON outbox(email_next) WHERE email_held;
CREATE INDEX outbox_webhook_held ON outbox(destination, webhook_next) WHERE webhook_held;
