-- 0009-identity.sql: confirmed email addresses and the confirmation emails' rate limits
-- (docs/security.md "Identity and secrets"). An address given or changed is unconfirmed
-- until its owner sends back the code of the one confirmation email; until then no other
-- email goes there. Addresses already in the database count as confirmed.

ALTER TABLE players ADD COLUMN email_confirmed INTEGER NOT NULL DEFAULT 0;
ALTER TABLE players ADD COLUMN email_code_hash BLOB;      -- sha256 of the pending code
ALTER TABLE players ADD COLUMN email_code_expires INTEGER; -- Unix seconds
UPDATE players SET email_confirmed = 1 WHERE email IS NOT NULL;

-- Every confirmation email queued: counted per address and per player over the last hour.
CREATE TABLE email_confirmations (
    id        INTEGER PRIMARY KEY,
    player_id INTEGER NOT NULL REFERENCES players(id),
    address   TEXT NOT NULL,                 -- lower case
    at        INTEGER NOT NULL               -- Unix seconds
);
CREATE INDEX email_confirmations_by_address ON email_confirmations(address, at);
CREATE INDEX email_confirmations_by_player ON email_confirmations(player_id, at);
