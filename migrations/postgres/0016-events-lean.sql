-- 0016-events-lean.sql (PostgreSQL): nothing to change. ../0016-events-lean.sql rebuilds
-- SQLite's event log so that its kind check is not evaluated through a temporary table at
-- every insert; PostgreSQL's `IN` checks cost nothing (as 0014's). The step is recorded all
-- the same, so both backends count the same migrations.
SELECT 1;
