-- 0007-reserved.sql: a placeholder so that this branch (sec-consent) builds while 0007 is
-- written on another branch (vacations). Delete this file when that 0007 is merged.
SELECT 1;
