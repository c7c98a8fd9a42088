-- 0020: SQLite's outbox_fresh has no counterpart here: PostgreSQL's processes write their
-- notifications into outbox itself, in the change's transaction (storage/postgres/outbox.c),
-- and their commits do not queue behind one writer. outbox_all is the outbox, as SQLite's
-- view of the same name gives its rows fresh or not: what reads every row may use either.
CREATE VIEW outbox_all AS SELECT * FROM outbox;
