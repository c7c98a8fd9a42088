/* store.h - cardpost's storage, as the service sees it: opening and migrating the database,
 * transactions and group commits, players, matches with their seats, the append-only event
 * log, leagues, the outbox, idempotency keys, backups.
 *
 * A `struct store` is one connection to the database, through the backend its address
 * chooses (store_open; storage/backend.h: SQLite in storage/sqlite/, PostgreSQL in
 * storage/postgres/); it is not thread-safe (the service serialises its use). Strings
 * handed in are borrowed; strings handed out in structs are owned by the struct and
 * released by its _finish function. Every function that can fail returns bool and fills
 * `struct err` (ERR_NOT_FOUND when a row does not exist, ERR_IO for the database's errors,
 * ERR_INVALID for a constraint such as a duplicate).
 */
#ifndef CARDPOST_STORE_H
#define CARDPOST_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

#define STORE_MAX_SEATS 10
#define STORE_HASH_BYTES 32

struct store;

/* Open (creating if needed) the database at `url` and apply every migration not yet
 * recorded. NULL on failure. A database that records a newer version than this build
 * carries is opened as it is (migrations only add). The address chooses the backend: a file
 * path, or `sqlite:` and a path, is a SQLite database; a `postgres://` or `postgresql://`
 * URI (as libpq takes it) is a PostgreSQL database, which must exist (its tables are
 * created); any other `scheme://` is refused (ERR_INVALID "no_backend"). */
struct store *store_open(const char *url, struct err *e);

/* What a commit survives: a crash of the process (no sync to the disk per commit), or also
 * a power loss (each commit waits for the disk). */
enum store_durability { STORE_DURABLE_CRASH, STORE_DURABLE_POWER };

/* store_open with a chosen durability (store_open: STORE_DURABLE_CRASH). */
struct store *store_open_durable(const char *url, enum store_durability d, struct err *e);

/* Close; accepts NULL. */
void store_close(struct store *s);

/* The schema version recorded in the database (the number of the last migration). */
int store_version(struct store *s);

/* Number of migrations this build carries. */
int store_migration_count(void);

/* Transactions. begin takes the database's write lock at once (no other writer until the
 * commit or rollback), so a transaction never fails halfway for want of it. */
bool store_begin(struct store *s, struct err *e);
bool store_commit(struct store *s, struct err *e);
void store_rollback(struct store *s);

/* Inside a transaction: a savepoint, then either released (kept) or rolled back to (its
 * changes undone, the transaction going on): one write of a group commit. */
bool store_savepoint(struct store *s, struct err *e);
bool store_release(struct store *s, struct err *e);
bool store_rollback_to(struct store *s, struct err *e);

/* ---- Players ---------------------------------------------------------------------------- */

struct store_player {
    int64_t id;
    char *name;
    char *email;           /* or NULL */
    bool email_confirmed;  /* its owner sent back the confirmation code (or the operator
                            * confirmed it); only a confirmed address gets email */
    char *webhook_url;     /* or NULL */
    char *webhook_secret;  /* or NULL */
    bool webhook_disabled; /* the endpoint answered 410 Gone */
    char *prefs;           /* notification preferences, JSON text ("{}": defaults) */
    int64_t vacation_from, vacation_until;   /* Unix seconds; 0: none */
    int vacation_year, vacation_days_used;
    int64_t created_at;
};

void store_player_finish(struct store_player *p);

/* Insert a player; `p->id` receives the new id. */
bool store_player_insert(struct store *s, struct store_player *p,
                         const uint8_t token_hash[STORE_HASH_BYTES], struct err *e);

/* The player whose token hashes to `token_hash`. */
bool store_player_by_token(struct store *s, const uint8_t token_hash[STORE_HASH_BYTES],
                           struct store_player *out, struct err *e);

bool store_player_get(struct store *s, int64_t id, struct store_player *out, struct err *e);

/* Rewrite what a player may change: webhook_url, webhook_secret, webhook_disabled, prefs
 * and the vacation fields of player `p->id` (the email address changes only through
 * store_player_email_set, so that no stale copy of the record undoes a confirmation). */
bool store_player_update(struct store *s, const struct store_player *p, struct err *e);

/* Player `id`'s webhook answered 410 Gone at `url`: disabled, if that is still its
 * webhook_url (a player who changed it meanwhile keeps the new one on). Nothing else of the
 * record is written, so no stale copy undoes a change made during the delivery. */
bool store_player_webhook_gone(struct store *s, int64_t id, const char *url, struct err *e);

/* Give player `id` the address `email` (NULL: none), unconfirmed, waiting for the code whose
 * sha256 is `code_hash` (NULL: no code) until `expires` (Unix seconds). */
bool store_player_email_set(struct store *s, int64_t id, const char *email,
                            const uint8_t *code_hash, int64_t expires, struct err *e);

/* Confirm player `id`'s address: with `code_hash`, only if it is the pending code's and
 * `now` is before its expiry (else ERR_INVALID "bad_code"); NULL: the operator confirms
 * without a code. ERR_NOT_FOUND when the player does not exist or has no address. */
bool store_player_email_confirm(struct store *s, int64_t id, const uint8_t *code_hash,
                                int64_t now, struct err *e);

/* Replace player `id`'s token hash (a rotation or a revocation: the old token stops
 * working). ERR_NOT_FOUND when the player does not exist. */
bool store_player_token_set(struct store *s, int64_t id,
                            const uint8_t token_hash[STORE_HASH_BYTES], struct err *e);

/* Confirmation emails queued at or after `since` (Unix seconds) for `player` (when
 * `address` is NULL) or to `address` (lower case; then `player` is ignored): their count in
 * *count and the time of the oldest in *oldest (0 when none). */
bool store_confirmations_count(struct store *s, int64_t player, const char *address,
                               int64_t since, int *count, int64_t *oldest, struct err *e);

/* Record a confirmation email queued for `player` to `address` (lower case) at `at`. */
bool store_confirmation_add(struct store *s, int64_t player, const char *address, int64_t at,
                            struct err *e);

/* ---- Matches --------------------------------------------------------------------------- */

/* Where a match stands on consent (migrations/0008-consent.sql): started (every seat
 * agreed, or nobody had to be asked), pending (waiting for the seats that did not accept
 * yet: no seed, no events, no clock), or cancelled by a decline or by its expiry. */
enum store_invitation {
    STORE_MATCH_STARTED,
    STORE_MATCH_PENDING,
    STORE_MATCH_DECLINED,
    STORE_MATCH_EXPIRED,
};

struct store_match {
    int64_t id;
    char *game;
    char *options;               /* JSON text */
    int seats;
    int64_t players[STORE_MAX_SEATS];
    uint8_t seed[32];
    char commitment[65];
    int64_t created_by;          /* 0: the operator */
    int64_t created_at;
    /* the cached summary */
    bool finished;
    int64_t seq;
    char *to_move;               /* JSON text */
    char *totals;                /* JSON text */
    char *result;                /* JSON text, or NULL while active */
    int64_t deadline;            /* Unix seconds; 0: none */
    int64_t finished_at;         /* 0 while active */
    /* the clock */
    int64_t move_seconds;        /* 0: no clock */
    bool forfeit;                /* timeout policy: forfeit (resign), else auto (first legal) */
    int64_t reminder_seconds;    /* 0: no reminder */
    int64_t turn_started;        /* Unix seconds */
    uint32_t reminded;           /* the seats reminded this turn (bit s: seat s) */
    int64_t wake_at;             /* Unix seconds: when the clock next has work; 0: none */
    /* store_match_update: the row is active and stays so, and its clock (deadline,
     * turn_started, reminded, wake_at) is the one it holds already, so that a backend may
     * leave those columns be (SQLite: their indexes not rewritten at every move) */
    bool clock_kept;
    int64_t league;              /* 0: none */
    int invitation;              /* enum store_invitation */
    uint32_t accepted;           /* pending: a bit per seat that agreed */
    int64_t invited_until;       /* pending: when it expires (Unix seconds) */
    /* the service's snapshot of its replayed state after `seq` events: opaque bytes here
     * (service/core/matches.c says what they are), or NULL for none */
    void *state;
    size_t state_len;
    /* filled by store_match_get: the seats' player names */
    char *names[STORE_MAX_SEATS];
    /* filled by store_match_get: the row's version, which every change of the row changes
     * (PostgreSQL: its xmin; SQLite, one process's file: 0), for a process to tell whether
     * its copy is the database's (store_match_lock) */
    int64_t rev;
};

void store_match_finish(struct store_match *m);

/* Insert a match with its seats and its state snapshot (if any); `m->id` receives the new
 * id. The names are not read. */
bool store_match_insert(struct store *s, struct store_match *m, struct err *e);

/* A match, its seats and their players' names, and its state snapshot. */
bool store_match_get(struct store *s, int64_t id, struct store_match *out, struct err *e);

/* Rewrite the cached summary (finished, seq, to_move, totals, result, deadline,
 * finished_at), the clock's turn_started and reminded, and the state snapshot unless
 * `m->state` is NULL (then the stored one stays) of match `m->id`. With `m->clock_kept`
 * the caller vouches that status, result, finished_at and the clock's columns are the
 * row's already: they may be left as they are. */
bool store_match_update(struct store *s, const struct store_match *m, struct err *e);

/* Ids of the matches in which `player` holds a seat, newest first, at most `max`. */
int store_matches_of_player(struct store *s, int64_t player, int64_t *out, int max,
                            struct err *e);

/* Rewrite the consent of match `m->id`: invitation, accepted, seed and seed_commitment,
 * and status and finished_at (a cancelled match is finished, without a result). */
bool store_match_invitation(struct store *s, const struct store_match *m, struct err *e);

/* Ids of pending matches whose invitation expired at `now` (Unix seconds), at most `max`. */
int store_invitations_due(struct store *s, int64_t now, int64_t *out, int max, struct err *e);

/* Ids of active matches whose clock has work (wake_at) at or before `now` (Unix seconds),
 * earliest first, at most `max`. */
int store_matches_due(struct store *s, int64_t now, int64_t *out, int max, struct err *e);

/* Ids above `after` of the active matches (only those with a clock if `clocked`) in which
 * `player` sits, in order, at most `max` (page with the last id). */
int store_active_matches_of_player(struct store *s, int64_t player, int64_t after, bool clocked,
                                   int64_t *out, int max, struct err *e);

/* ---- Several processes on one database (PostgreSQL) ------------------------------------
 * Each process caches matches; the row's version (store_match.rev) says whether a copy is
 * the database's. A change of a match locks its row first and checks the version its
 * process read (store_match_lock), so that of two processes changing a match at once the
 * second waits, then finds its copy stale and reloads; after its changes it reads the new
 * version (store_match_changed), which also tells the other processes at the commit
 * (store_listener). On SQLite, one process's file, these do nothing and versions are 0. */

/* Inside a transaction: lock match `id`'s row until the commit and check that its version
 * is `rev`. ERR_CONFLICT "stale_match" when it is not (another process changed it),
 * ERR_NOT_FOUND when the match does not exist. A backend that sends a transaction's
 * statements without waiting for their answers (PostgreSQL) may report either from a later
 * call of the transaction, at the latest store_commit; nothing is committed then. */
bool store_match_lock(struct store *s, int64_t id, int64_t rev, struct err *e);

/* Inside the transaction that changed match `id` (now at `seq` events): its version after
 * the change into *rev, and a notification "m ID REV SEQ" on the database's channel that
 * the other processes' listeners get once it commits. *rev may be filled only by
 * store_commit (PostgreSQL, see store_match_lock): it must live until then. */
bool store_match_changed(struct store *s, int64_t id, int64_t seq, int64_t *rev,
                         struct err *e);

/* Match `id`'s version as committed (store_match.rev), into *rev. */
bool store_match_rev(struct store *s, int64_t id, int64_t *rev, struct err *e);

/* Whether the changes of matches are told to the other processes (store_match_changed's
 * notification; on at the start), for the whole process: a process that hears no other on
 * its database turns it off, and on again as soon as it hears one (service/core/shared.c),
 * so that a process alone spends nothing on telling nobody. Nothing for a backend whose
 * database is one process's. */
void store_announce_changes(const char *url, bool on);

/* Tell the other processes `payload` (at most 200 bytes) on the database's channel, at the
 * commit of the transaction (at once outside one). */
bool store_notify(struct store *s, const char *payload, struct err *e);

/* Inside a transaction: hold league `id`'s standings until the commit (a match of it
 * finishing on another process waits), so that two finishes do not both read the same
 * standings and the second overwrite the first's. */
bool store_league_lock(struct store *s, int64_t league, struct err *e);

/* Whether several processes may share the database (PostgreSQL): their caches must then
 * be checked against it. */
bool store_shared(const struct store *s);

/* A connection of its own that listens on the database's channel. NULL with e: ERR_INVALID
 * "not_shared" for a backend without one (SQLite), or the database's error. */
struct store_listener;
struct store_listener *store_listen(const char *url, struct err *e);

/* Wait up to `timeout_ms` for notifications and call fn(cls, payload) for each that came
 * (the payload is valid during the call). False with e when the connection was lost: close
 * the listener, open another, and catch up (notifications sent meanwhile are lost). */
bool store_listener_wait(struct store_listener *l, int timeout_ms,
                         void (*fn)(void *cls, const char *payload), void *cls, struct err *e);

/* Close; accepts NULL. */
void store_listener_close(struct store_listener *l);

/* The event streams' single-use tickets (service/core/tickets.c) where every process sees
 * them: a ticket drawn on one process opens a stream on any. Only the ticket's sha256 is
 * stored. Outside a transaction (each is one of its own). On SQLite, one process's file,
 * the service keeps them in memory: both fail with ERR_INVALID "not_shared". */
struct store_ticket {
    uint8_t hash[STORE_HASH_BYTES];
    int64_t player, match;
    int64_t expires_ms;
};

/* What store_ticket_add found: whether it added the ticket; the unexpired tickets the
 * player held before (`held`) and the earliest expiry among them, and those of everyone
 * (`all`). */
struct store_ticket_room {
    bool added;
    int held, all;
    int64_t first_expiry;
};

/* Delete the tickets expired at `now_ms`, then add `k` unless its player holds `per_player`
 * unexpired tickets or everyone `in_all` (room->added false then: not an error). The count
 * and the insert are one at a time across processes, so the bounds hold exactly. */
bool store_ticket_add(struct store *s, const struct store_ticket *k, int64_t now_ms,
                      int per_player, int in_all, struct store_ticket_room *room,
                      struct err *e);

/* Take (delete) the ticket whose sha256 is `hash` and fill *out: once, whichever process
 * asks first. ERR_NOT_FOUND when there is none (used, or never drawn); an expired one is
 * taken and returned like any other (the caller compares expires_ms). */
bool store_ticket_take(struct store *s, const uint8_t hash[STORE_HASH_BYTES],
                       struct store_ticket *out, struct err *e);

/* ---- Vacations ------------------------------------------------------------------------------ */

/* One vacation of a player: the clock of their seats is paused from `from` to `until`
 * (Unix seconds). */
struct store_vacation {
    int64_t from, until;
};

/* Record a vacation of `player`. */
bool store_vacation_add(struct store *s, int64_t player, int64_t from, int64_t until,
                        struct err *e);

/* End `player`'s vacation running at `now` at `now` (forgotten if it began at `now`). */
bool store_vacation_end(struct store *s, int64_t player, int64_t now, struct err *e);

/* `player`'s vacations that end after `after`, by start: at most `max` into `out`; the
 * number, or -1. */
int store_vacations_of(struct store *s, int64_t player, int64_t after,
                       struct store_vacation *out, int max, struct err *e);

/* Call fn(cls, player, until) with the end of each player's latest vacation. */
bool store_vacations_latest(struct store *s, void (*fn)(void *cls, int64_t player, int64_t until),
                            void *cls, struct err *e);

/* ---- Events ---------------------------------------------------------------------------- */

enum store_event_kind { STORE_DEAL, STORE_SHUFFLE, STORE_MOVE };

struct store_event {
    int64_t seq;
    int kind;                    /* enum store_event_kind */
    int seat;                    /* moves */
    const char *body;            /* move text, or the cards "QS 2C ..." of a deal/shuffle */
    bool automatic;
    int64_t at;                  /* Unix milliseconds */
};

/* Append one event; fails (ERR_INVALID) if that seq exists already. */
bool store_event_append(struct store *s, int64_t match, const struct store_event *ev,
                        struct err *e);

/* Call `fn` for each event of `match` in seq order. The event is valid during the call
 * only. Stops with false (and e from fn) when fn returns false. */
bool store_events_each(struct store *s, int64_t match,
                       bool (*fn)(void *ctx, const struct store_event *ev, struct err *e),
                       void *ctx, struct err *e);

/* The same for the events with from <= seq < until only. */
bool store_events_range(struct store *s, int64_t match, int64_t from, int64_t until,
                        bool (*fn)(void *ctx, const struct store_event *ev, struct err *e),
                        void *ctx, struct err *e);

/* ---- Idempotency keys ------------------------------------------------------------------ */

struct store_idem {
    uint8_t request[STORE_HASH_BYTES];
    int status;
    char *body;
};

void store_idem_finish(struct store_idem *r);

bool store_idem_get(struct store *s, int64_t player, const char *key, struct store_idem *out,
                    struct err *e);

bool store_idem_put(struct store *s, int64_t player, const char *key,
                    const struct store_idem *r, int64_t now, struct err *e);

/* ---- Settings the service keeps ------------------------------------------------------------ */

/* The value of `key` (at most `max` bytes into `out`, the length in *len); ERR_NOT_FOUND. */
bool store_setting_get(struct store *s, const char *key, void *out, size_t max, size_t *len,
                       struct err *e);
/* Set `key` to `value`, whether it was set or not. */
bool store_setting_put(struct store *s, const char *key, const void *value, size_t len,
                       struct err *e);
/* Set `key` unless it is set already (first writer wins); then read back what is stored. */
bool store_setting_init(struct store *s, const char *key, void *value, size_t len,
                        struct err *e);

/* ---- Leagues ------------------------------------------------------------------------------- */

struct store_league {
    int64_t id;
    char *name;
    char *game;
    char *options;               /* JSON text */
    char *clock;                 /* JSON text, or NULL for the default clock */
    char *points;                /* JSON text: points by place */
    int64_t organizer;           /* 0: the operator */
    int64_t created_at;
    /* counts, filled by store_leagues and store_league_counts (store_league_get leaves them
     * 0: counting a league's matches takes time that grows with them) */
    int members, matches_active, matches_finished;
};

void store_league_finish(struct store_league *l);
bool store_league_insert(struct store *s, struct store_league *l, struct err *e);
bool store_league_get(struct store *s, int64_t id, struct store_league *out, struct err *e);
/* Fill l's counts: current members, active and finished matches. */
bool store_league_counts(struct store *s, struct store_league *l, struct err *e);
/* Leagues, newest first, at most `max`. */
int store_leagues(struct store *s, struct store_league *out, int max, struct err *e);
/* What a player is in a league (store_player_leagues' roles, bits; the organiser is
 * l->organizer). */
enum { STORE_LEAGUE_MEMBER = 1, STORE_LEAGUE_INVITED = 2 };
/* The leagues `player` organises, plays in (a current member) or is invited to (an
 * invitation waiting), newest first, at most `max`, with their counts; roles[i] says what
 * the player is in out[i]. The number, or -1 with e. */
int store_player_leagues(struct store *s, int64_t player, struct store_league *out,
                         unsigned *roles, int max, struct err *e);

struct store_member {
    int64_t player;
    char *name;
    int64_t joined_at;
    int64_t left_at;             /* 0: still a member */
};

void store_member_finish(struct store_member *m);
/* Add `player` (again, if they had left). ERR_INVALID "already_member" if a member. */
bool store_member_add(struct store *s, int64_t league, int64_t player, int64_t now,
                      struct err *e);
/* Mark `player` as having left. ERR_NOT_FOUND unless a current member. */
bool store_member_leave(struct store *s, int64_t league, int64_t player, int64_t now,
                        struct err *e);
bool store_member_is(struct store *s, int64_t league, int64_t player, bool *current,
                     struct err *e);
/* Members in joining order (left ones too, with left_at), at most `max`. */
int store_members(struct store *s, int64_t league, struct store_member *out, int max,
                  struct err *e);

/* Ids of a league's matches, newest first (only running ones with `active_only`), at most
 * `max`; with `player` (non-zero) only those in which that player sits; with `before`
 * (non-zero) only ids below it (the next page). */
int store_league_matches(struct store *s, int64_t league, int64_t player, bool active_only,
                         int64_t before, int64_t *out, int max, struct err *e);

/* How many matches league `league` has had (any status). */
bool store_league_match_count(struct store *s, int64_t league, int64_t *n, struct err *e);

/* Inside a write that may add a match or a member to league `league`: the league is the
 * write's until its transaction ends, so that what it counts of the league after this
 * stays true until then (PostgreSQL: the league's row locked FOR NO KEY UPDATE, another
 * such write waiting for this one's end, its statements after it seeing this one's rows;
 * SQLite: one writer, nothing to take). A league's limits checked after it hold however
 * many writes come at once, from however many processes. */
bool store_league_take(struct store *s, int64_t league, struct err *e);

/* The organiser's invitations to a league (league_invitations). Invite: ERR_INVALID
 * "already_invited" when one is waiting. Drop: false (ERR_NOT_FOUND) when none was. */
bool store_invitation_add(struct store *s, int64_t league, int64_t player, int64_t now,
                          struct err *e);
bool store_invitation_drop(struct store *s, int64_t league, int64_t player, struct err *e);
/* The invitations waiting (player, name, joined_at: when invited), oldest first, at most
 * `max`. */
int store_invitations(struct store *s, int64_t league, struct store_member *out, int max,
                      struct err *e);
/* A league's size as league_max_members bounds it: current members plus invitations. */
bool store_league_size(struct store *s, int64_t league, int64_t *n, struct err *e);

/* Call fn with the seats (player ids in seat order) of every match of the league. */
bool store_league_seatings(struct store *s, int64_t league,
                           void (*fn)(void *ctx, const int64_t *players, int n), void *ctx,
                           struct err *e);

struct store_standing {
    int64_t player;
    char *name;                  /* filled by store_standings */
    int played, won, drawn, lost;
    double points;
    int64_t points_for, points_against;
    double rating;
};

void store_standing_finish(struct store_standing *st);
/* A player's standing; a player with none yet gets zeros and rating 1500 (found = false). */
bool store_standing_get(struct store *s, int64_t league, int64_t player,
                        struct store_standing *out, struct err *e);
bool store_standing_put(struct store *s, int64_t league, const struct store_standing *st,
                        struct err *e);
/* The table in order: points, wins, score difference (reversed when `low_wins`), rating,
 * player id. At most `max` rows; names filled. */
int store_standings(struct store *s, int64_t league, bool low_wins, struct store_standing *out,
                    int max, struct err *e);

/* ---- The outbox: notifications to deliver, and every attempt ----------------------------- */

enum store_channel { STORE_EMAIL, STORE_WEBHOOK };
enum store_delivery { STORE_PENDING, STORE_DELIVERED, STORE_DEAD };

/* One outbox row a notification (migration 0015): its recipient, what it is about, and for
 * each channel that delivers it that channel's state. A delivery is one channel of a row,
 * and what the functions below read, claim and record: its id is the row's times two, plus
 * one for the webhook (STORE_DELIVERY_ID), so a row's deliveries list newest first by id. */
#define STORE_DELIVERY_ID(row, channel) ((row) * 2 + (channel))
#define STORE_CHANNEL_BIT(channel) (1 << (channel))

struct store_outbox {
    int64_t id;                  /* the delivery's (STORE_DELIVERY_ID) */
    int64_t player;
    int channel;                 /* enum store_channel */
    int channels;                /* store_outbox_add: the row's channels (STORE_CHANNEL_BIT
                                  * of each, or'd); 0: `channel` alone */
    char type[24];               /* match_started, turn, reminder, timeout, match_over */
    int64_t match;               /* 0: none */
    int64_t seq;
    char webhook_id[48];
    char *body;                  /* what is sent; "" when rendered at delivery (seat >= 0) */
    int seat;                    /* the recipient's seat, its body rendered at each attempt
                                  * from (match, seq, seat, type, deadline, created_at); -1:
                                  * none, the body is what is sent */
    int64_t deadline;            /* Unix seconds: the turn's deadline when written; 0: none */
    char destination[280];       /* webhook: "host:port" when written; email: "" (the relay);
                                  * store_outbox_add: the webhook's */
    int status;                  /* enum store_delivery */
    int attempts;
    int64_t next_attempt;        /* Unix milliseconds */
    int64_t created_at;
    int64_t delivered_at;        /* 0: not delivered */
    char *last_error;            /* or NULL */
};

struct store_attempt {
    int64_t at;                  /* Unix milliseconds */
    bool ok;
    long status;                 /* HTTP status or SMTP code, 0 if none */
    char error[200];
    int64_t duration_ms;
    bool unreachable;            /* failed: the destination could not be reached at all */
};

void store_outbox_finish(struct store_outbox *o);

/* Add a notification, one row pending on each of its channels (`o->channels`, or
 * `o->channel` alone), due at `o->next_attempt`; `o->id` receives its first channel's
 * delivery id, except inside a PostgreSQL transaction (0 there: its statements are sent
 * without waiting for their answers). */
bool store_outbox_add(struct store *s, struct store_outbox *o, struct err *e);

bool store_outbox_get(struct store *s, int64_t id, struct store_outbox *out, struct err *e);

/* The earliest next_attempt of a pending notification of the channel (one read of an
 * index: claims are not looked at, so a time already past may be a row being delivered);
 * false (with e ERR_NOT_FOUND) when none is pending. */
bool store_outbox_next(struct store *s, int channel, int64_t *when_ms, struct err *e);

/* Record an attempt and the notification's new status, attempts and next_attempt, in one
 * transaction (error from the attempt becomes last_error), and end its claim. A failure
 * that could not reach the destination (a->unreachable) leaves the row held: waiting for
 * that destination, and with it the other rows held for that destination and due at
 * a->at (due at `next_attempt` now: not tried each in turn; a row never tried is tried once
 * all the same). An attempt that succeeded makes the rows held for the same channel and
 * destination due at a->at (the short retry after a destination recovers), the
 * STORE_RECOVER_BATCH due first: each success after it takes the next ones, so that the
 * backlog of a long outage never stops the commits of moves behind one large update. Inside
 * an open transaction (a write of a group commit) it only adds its statements to it. */
#define STORE_RECOVER_BATCH 512
bool store_outbox_record(struct store *s, int64_t id, const struct store_attempt *a, int status,
                         int attempts, int64_t next_attempt, struct err *e);

/* What one write does to one claimed delivery: records an attempt (`a`, as
 * store_outbox_record), or gives the claim back untried (`a` NULL: store_outbox_release). */
struct store_settle {
    int64_t id;
    const struct store_attempt *a;
    int status, attempts;
    int64_t next_attempt;
};

/* The records and releases of `n` claimed deliveries, in one transaction (or, inside an open
 * one, its statements only). PostgreSQL takes every row they name first, in the order of
 * their ids, so that two such writes at once (the email and the webhook workers, whose
 * channels share a row; two processes) never each hold a row the other waits for. */
bool store_outbox_settle(struct store *s, const struct store_settle *rows, int n,
                         struct err *e);

/* A player's deliveries, newest first, with ids below `before` (0: from the newest). */
int store_outbox_of_player(struct store *s, int64_t player, int64_t before,
                           struct store_outbox *out, int max, struct err *e);

/* The attempts of one delivery, oldest first. */
int store_attempts_of(struct store *s, int64_t outbox, struct store_attempt *out, int max,
                      struct err *e);

/* Make a delivery pending again, due at `now_ms` (its webhook-id stays). */
bool store_outbox_redeliver(struct store *s, int64_t id, int64_t now_ms, struct err *e);

/* The outbox's backlog by channel (enum store_channel): deliveries pending and dead (each
 * counted through a partial index of its status, so cheap enough for every scrape). */
bool store_outbox_backlog(struct store *s, int64_t pending[2], int64_t dead[2], struct err *e);

/* The sizes of the database's files in bytes: the database, and its write-ahead log (0 when
 * the backend keeps none, or it is absent). */
bool store_file_sizes(struct store *s, int64_t *db_bytes, int64_t *wal_bytes, struct err *e);

/* `cardpost migrate-db FROM TO` (storage/migrate.c): copy every table of the SQLite database
 * `from` into the PostgreSQL database `to` (a postgresql:// address), both first migrated as
 * cardpostd would; in one transaction, each identity's sequence set past the ids copied.
 * Refused (ERR_CONFLICT "not_empty") when `to` holds any row; ERR_INVALID "schema" when the
 * two sides' tables or columns differ. The caller then checks the copy (service/client/). */
struct store_migrate_info {
    int version;                 /* the schema version of both */
    int tables;                  /* tables copied */
    int64_t rows;                /* rows copied */
    int64_t *matches;            /* the ids of the matches copied, in order (malloc'd) */
    size_t nmatches;
};
bool store_migrate_db(const char *from, const char *to, struct store_migrate_info *info,
                      struct err *e);
void store_migrate_info_finish(struct store_migrate_info *info);

/* The duties one process at a time does for the whole database (the deadline clock, the
 * invitations' expiry: service/core/sched.c), each under a key of enum store_lease_key.
 * *held: whether this connection holds the lease on `key` now, taking it when nobody does.
 * SQLite: one process owns the file, so always. PostgreSQL: a session-level advisory lock,
 * kept until the connection ends, so when its process dies the server frees it and the
 * next process that asks takes it over (docs/scaling.md "The clock's lease"). */
enum store_lease_key { STORE_LEASE_CLOCK = 1 };
bool store_lease(struct store *s, int64_t key, bool *held, struct err *e);

/* Claim pending notifications of a channel due at `now_ms` and not claimed (or whose claim
 * ran out), earliest first, leaving out `skip_ids` (a JSON array of integers), and taking
 * no more rows of a destination than its room: `rooms` (a JSON object, e.g. {"h:80": 0,
 * "h:81": 1}) gives the room of each destination the caller delivers to already (0: none
 * more, all the deliveries at once it may have), `room` that of any other (0: no limit;
 * rows without a destination have none either), so that no row is claimed only to be
 * given back. Among the first `window` rows due (0: all; so that rows for busy
 * destinations piling up make no claim read all of them): each is the caller's to
 * deliver until `claimed_until` (Unix ms, the lease), or until it records an attempt
 * (store_outbox_record) or releases it. Several processes on one database never claim a
 * row at once (PostgreSQL: FOR UPDATE SKIP LOCKED; SQLite: one process). At most `max`
 * into `out` (finish each). Returns the count, or -1. */
int store_outbox_claim(struct store *s, int channel, int64_t now_ms, int64_t claimed_until,
                       const char *skip_ids, const char *rooms, int room, int window,
                       struct store_outbox *out, int max, struct err *e);

/* Give a claimed notification back untried (it is due again for anyone). */
bool store_outbox_release(struct store *s, int64_t id, struct err *e);

/* Forget the claims of processes that are gone, at start: SQLite (which one process holds)
 * all of them; PostgreSQL none (their leases run out; others may be delivering). */
bool store_outbox_claims_reset(struct store *s, struct err *e);
/* ---- Backups ----------------------------------------------------------------------------- */

/* What a checked copy of a database holds. */
struct store_copy_info {
    int version;               /* its schema version */
    int64_t bytes;             /* its size */
};

/* Copy the database at `db_url` (possibly open in cardpostd, which goes on writing) to the
 * new file `out`: the backend's online backup in one read transaction, so the copy is the
 * database as it was at one instant after the call began; a single file, synced. The copy
 * passes the backend's integrity check and records the database's schema version before it
 * takes the name `out` (it is written beside it first); on failure nothing is left. Fails
 * ERR_INVALID "exists" if `out` exists. */
bool store_backup(const char *db_url, const char *out, struct store_copy_info *info,
                  struct err *e);

/* Check a copy (of the backend `path` names, as store_open chooses): readable, passing the
 * integrity check, recording a schema version (ERR_INVALID "corrupt" or "not_cardpost"
 * otherwise). */
bool store_check_copy(const char *path, struct store_copy_info *info, struct err *e);

/* Whether another process holds the database at `db_url` open. A missing database: false. */
bool store_in_use(const char *db_url, bool *in_use, struct err *e);

/* Replace (or create) the database at `db_url` with the checked backup `backup`: refused
 * (ERR_INVALID "in_use") while a process holds `db_url` open, and (ERR_INVALID "exists")
 * when it exists and `force` is false. The backup is checked (store_check_copy, and no newer
 * schema than this build's), copied beside the database and checked again, then put in its
 * place at once (a rename: atomic), the old database's side files removed. */
bool store_restore(const char *backup, const char *db_url, bool force,
                   struct store_copy_info *info, struct err *e);

/* A trivial read on a connection of its own (the readiness check): the database at
 * `db_url` can be opened and its schema version read. */
bool store_probe(const char *db_url, struct err *e);

/* ---- Group commit (commit.c) ------------------------------------------------------------ */

/* One write of a group commit. `run(cls, w, e)` does its statements inside the batch's
 * transaction (a write that fails is undone alone, its batch's others committed); `done(cls,
 * w)` is called after the batch committed or failed, the store no longer in use, with `ok`
 * and `e` filled (ok means durable) and `outbox` saying whether the write added outbox rows
 * (store_outbox_add) that are now committed. `done` may free `w`. `run` may be called
 * twice, the first time in a transaction that is rolled back (a batch is first written
 * without savepoints, and again with one a write when a write of it failed: commit.c): it
 * leaves nothing in memory that the rollback does not undo, or that its second call does
 * not set again. */
struct store_write {
    bool (*run)(void *cls, struct store_write *w, struct err *e);
    void (*done)(void *cls, struct store_write *w);
    bool ok;
    struct err e;
    bool outbox;
    struct store_write *next;    /* the committer's queue */
};

/* What the committer's user gives it: `cls` for every callback; `lock` and `unlock` around
 * each batch (the store's other users take the same lock: the committer holds it while it
 * writes); `outbox_added` after a batch that committed outbox rows (the delivery workers
 * have work); `figures` after every batch, with the writes in it, whether it committed, and
 * the seconds the backend's commit took (with STORE_DURABLE_POWER: the wait for the disk),
 * for the service's metrics; `answering` and `answered` around the done callbacks of a batch
 * (of one write, on a shared database), which the service uses to wake the threads its
 * answers concern once for all of them. Any callback may be NULL. */
/* The connections a shared database's committer writes on when hooks.pool is 0. */
#define STORE_POOL_DEFAULT 8

struct store_committer_hooks {
    void *cls;
    int pool;   /* a shared database (store_shared): no batches, each write a transaction
                 * of its own, on `pool` connections writing at once (0: STORE_POOL_DEFAULT;
                 * commit.c). Not used on an unshared one (SQLite), which batches. */
    void (*lock)(void *cls);
    void (*unlock)(void *cls);
    void (*outbox_added)(void *cls);
    void (*figures)(void *cls, int writes, bool ok, double commit_seconds);
    void (*answering)(void *cls);
    void (*answered)(void *cls);
};

/* The committer: it writes the writes queued since the last batch in one transaction, and
 * commits them together. A thread that queues a write while nobody is writing leads the
 * batch itself (STORE_DURABLE_CRASH: no hand-over when the service is not busy); writes
 * queued while a batch is written go into the next, which the committer's own thread
 * writes. With STORE_DURABLE_POWER that thread writes every batch (each waits for the disk,
 * which no caller should). It also runs the backend's upkeep (SQLite: its checkpointer).
 * On a shared database (PostgreSQL) it batches nothing: its pool's threads write each write
 * in a transaction of its own, and the server groups their commits (hooks.pool). */
struct store_committer;

/* A committer writing on `s` (borrowed: it outlives the committer), its thread and the
 * backend's upkeep started (which may open a connection of its own to s's database). NULL
 * with e on failure. */
struct store_committer *store_committer_create(struct store *s,
                                               const struct store_committer_hooks *hooks,
                                               struct err *e);

/* Write everything queued, stop the threads and free; accepts NULL. Nobody may submit
 * during or after. */
void store_committer_destroy(struct store_committer *c);

/* Queue a write for the next group commit; its done callback tells the outcome. With
 * `lead`, a caller that finds nobody writing (and durability crash) writes the batch itself,
 * done callbacks included: it must then hold neither the hooks' lock nor anything a done
 * callback takes. Without, the committer thread writes it. On a shared database a pool's
 * thread always writes it (`lead` unused). */
void store_committer_submit(struct store_committer *c, struct store_write *w, bool lead);

/* What the committer did so far: batches committed, the writes in them, and the upkeep
 * runs (SQLite: WAL checkpoints, and the writebacks of the WAL it started when commits do
 * not sync it: checkpoint.c). */
struct store_commit_figures {
    uint64_t batches, writes, checkpoints, writebacks;
    uint64_t asides;         /* (SQLite) copies of the WAL by a thread of their own */
    uint64_t frames_inline;  /* (SQLite) frames the checkpoints between batches copied */
};

void store_committer_figures(struct store_committer *c, struct store_commit_figures *out);

#endif
