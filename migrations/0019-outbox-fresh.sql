-- 0019: a notification never tried is in none of the due indexes (issue 18). A row is
-- written due at once; its channels' next attempt is NULL while no attempt has been made
-- ("fresh"), and the three partial indexes of the rows due take only rows with a next
-- attempt: a row tried once and to be tried again, held for its destination, given back
-- to the indexes by a claim that passed it over, or redelivered. A row delivered at its
-- first try never enters them and never leaves them: its insert changes the table's page
-- and the player batch's, not three indexes' (about half of the insert's cost, and their
-- pages in the WAL). Claims find the fresh rows by id after outbox_fresh's mark of each
-- channel: every row at or below it is not fresh by that channel (storage/sqlite/outbox.c
-- "Fresh rows"). SQLite only: PostgreSQL's claims by several processes keep the indexes
-- (its 0019 says why); migrate-db copies a fresh row's next attempt as its creation time.
DROP INDEX outbox_email_due;
DROP INDEX outbox_webhook_due;
DROP INDEX outbox_webhook_destination_due;
CREATE INDEX outbox_email_due ON outbox(email_next)
    WHERE email_status = 'pending' AND email_next IS NOT NULL;
CREATE INDEX outbox_webhook_due ON outbox(webhook_next)
    WHERE webhook_status = 'pending' AND webhook_next IS NOT NULL;
CREATE INDEX outbox_webhook_destination_due ON outbox(destination, webhook_next)
    WHERE webhook_status = 'pending' AND webhook_next IS NOT NULL;
CREATE TABLE outbox_fresh (                -- one row: the rows past each mark may be fresh
    email_upto   INTEGER NOT NULL,
    webhook_upto INTEGER NOT NULL
);
INSERT INTO outbox_fresh (email_upto, webhook_upto)
    SELECT coalesce(max(id), 0), coalesce(max(id), 0) FROM outbox;
