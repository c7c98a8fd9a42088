-- 0011: notifications that cost what they are (issue 18) and delivered by one process at a
-- time (issue 15). A row written since holds what its delivery needs to be reproduced, not
-- its rendered body: the recipient's seat, the turn's deadline as it was when the row was
-- written, the match and seq (already there); the email or webhook body is rendered at each
-- attempt from the match's log, the same bytes every time. Rows whose `seat` is NULL (all
-- those written before this migration, and invitations, replies and confirmations, rendered
-- when written) are still sent as their `body` says. `destination` and `held` give the
-- short retry after a destination recovers; `claimed_until` is the lease of the process
-- delivering a row (docs/decisions.md "Notifications rendered at delivery").
ALTER TABLE outbox ADD COLUMN seat INTEGER;              -- set: body '' and rendered at delivery
ALTER TABLE outbox ADD COLUMN deadline INTEGER;          -- Unix seconds, or NULL: no deadline
ALTER TABLE outbox ADD COLUMN destination TEXT NOT NULL DEFAULT '';  -- webhook: host:port
ALTER TABLE outbox ADD COLUMN held INTEGER NOT NULL DEFAULT 0;  -- last try: unreachable
ALTER TABLE outbox ADD COLUMN claimed_until INTEGER;     -- Unix ms: a process delivers it
CREATE INDEX outbox_held ON outbox(channel, destination) WHERE held = 1;
