-- 0004-settings.sql: values the service keeps for itself across restarts, such as the key
-- that signs the play+ reply addresses of turn emails.

CREATE TABLE settings (
    key   TEXT PRIMARY KEY,
    value BLOB NOT NULL
) WITHOUT ROWID;
