-- 0013: nothing for SQLite. PostgreSQL's step of this number (postgres/0013-match-lock.sql)
-- adds a function that locks and checks a match's row in the server, for its several
-- processes; one process owns a SQLite file and checks its matches in memory. The step is
-- here so that both backends keep the same numbers.
SELECT 1;
