-- 0014-outbox-lean.sql (PostgreSQL): as ../0014-outbox-lean.sql, without a rebuild: the
-- unique index on webhook_id goes (the checks' IN lists cost PostgreSQL nothing).
ALTER TABLE outbox DROP CONSTRAINT outbox_webhook_id_key;
