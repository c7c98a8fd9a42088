-- 0013: a move's lock and check of its match's row in the server, so that a transaction can
-- send its statements without waiting for each answer (libpq's pipeline mode,
-- storage/postgres/open.c): the row is locked and its version (xmin) compared with the one
-- the process holds, and a mismatch is an error that undoes everything sent after it, up to
-- the COMMIT. serialization_failure (40001) reads as "stale_match" (pg_fail), no_data_found
-- (P0002) as "not_found".
CREATE FUNCTION cardpost_lock_match(match BIGINT, rev BIGINT) RETURNS VOID
LANGUAGE plpgsql AS $$
DECLARE
    current BIGINT;
BEGIN
    SELECT xmin::text::bigint INTO current FROM matches WHERE id = match FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no such match' USING ERRCODE = 'no_data_found';
    END IF;
    IF current <> rev THEN
        RAISE EXCEPTION 'match % changed meanwhile (another process)', match
            USING ERRCODE = 'serialization_failure';
    END IF;
END
$$;
