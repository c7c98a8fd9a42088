-- 0004-settings.sql (PostgreSQL): as ../0004-settings.sql.

CREATE TABLE settings (
    key   TEXT PRIMARY KEY,
    value BYTEA NOT NULL
);
