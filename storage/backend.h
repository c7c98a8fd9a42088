/* backend.h - what a storage backend provides, and the `struct store` the service holds: a
 * backend's table of operations and its connection. store.c chooses the backend from the
 * database's address and forwards each store_ call to it; commit.c writes group commits over
 * its transactions. Not for other components: the service sees only store.h.
 *
 * A backend (storage/sqlite/, storage/postgres/) defines its own `struct store_conn` (one
 * connection, used by one thread at a time) and fills a `struct store_backend`: open and
 * close, the transactions, the upkeep hooks (SQLite: its WAL checkpointer), the file-level
 * operations (backup, restore, probe), and every operation of STORE_OPS below, each with
 * the contract store.h writes down for its store_ twin. docs/decisions.md "The storage
 * interface (issue 14)" says what a second one has to do.
 */
#ifndef CARDPOST_STORAGE_BACKEND_H
#define CARDPOST_STORAGE_BACKEND_H

#include <stdint.h>

#include "store.h"

/* A backend's connection: each backend completes this type in its own files. */
struct store_conn;
/* A backend's listening connection (store_listen), likewise. */
struct store_listen_conn;

/* The operations that go straight to the backend: X(return type, name, the parameters after
 * the connection, the arguments they pass). store.c makes `store_<name>(struct store *s,
 * ...)` of each, a backend provides `<name>(struct store_conn *c, ...)`. STORE_LIST unwraps a
 * parenthesised list. */
#define STORE_LIST(...) __VA_ARGS__
#define STORE_OPS(X)                                                                              \
    /* transactions */                                                                            \
    X(bool, begin, (struct err *e), (e))                                                          \
    X(bool, commit, (struct err *e), (e))                                                         \
    X(bool, savepoint, (struct err *e), (e))                                                      \
    X(bool, release, (struct err *e), (e))                                                        \
    X(bool, rollback_to, (struct err *e), (e))                                                    \
    /* players */                                                                                 \
    X(bool, player_insert,                                                                        \
      (struct store_player *p, const uint8_t token_hash[STORE_HASH_BYTES], struct err *e),        \
      (p, token_hash, e))                                                                         \
    X(bool, player_by_token,                                                                      \
      (const uint8_t token_hash[STORE_HASH_BYTES], struct store_player *out, struct err *e),      \
      (token_hash, out, e))                                                                       \
    X(bool, player_get, (int64_t id, struct store_player *out, struct err *e), (id, out, e))      \
    X(bool, player_update, (const struct store_player *p, struct err *e), (p, e))                 \
    X(bool, player_webhook_gone, (int64_t id, const char *url, struct err *e), (id, url, e))      \
    X(bool, player_email_set,                                                                     \
      (int64_t id, const char *email, const uint8_t *code_hash, int64_t expires,                  \
       struct err *e),                                                                            \
      (id, email, code_hash, expires, e))                                                         \
    X(bool, player_email_confirm,                                                                 \
      (int64_t id, const uint8_t *code_hash, int64_t now, struct err *e),                         \
      (id, code_hash, now, e))                                                                    \
    X(bool, player_token_set,                                                                     \
      (int64_t id, const uint8_t token_hash[STORE_HASH_BYTES], struct err *e),                    \
      (id, token_hash, e))                                                                        \
    X(bool, confirmations_count,                                                                  \
      (int64_t player, const char *address, int64_t since, int *count, int64_t *oldest,           \
       struct err *e),                                                                            \
      (player, address, since, count, oldest, e))                                                 \
    X(bool, confirmation_add,                                                                     \
      (int64_t player, const char *address, int64_t at, struct err *e),                           \
      (player, address, at, e))                                                                   \
    /* matches */                                                                                 \
    X(bool, match_insert, (struct store_match *m, struct err *e), (m, e))                         \
    X(bool, match_get, (int64_t id, struct store_match *out, struct err *e), (id, out, e))        \
    X(bool, match_update, (const struct store_match *m, struct err *e), (m, e))                   \
    X(int, matches_of_player, (int64_t player, int64_t *out, int max, struct err *e),             \
      (player, out, max, e))                                                                      \
    X(bool, match_invitation, (const struct store_match *m, struct err *e), (m, e))               \
    X(int, invitations_due, (int64_t now, int64_t *out, int max, struct err *e),                  \
      (now, out, max, e))                                                                         \
    X(int, matches_due, (int64_t now, int64_t *out, int max, struct err *e),                      \
      (now, out, max, e))                                                                         \
    X(bool, match_lock, (int64_t id, int64_t rev, struct err *e), (id, rev, e))                   \
    X(bool, match_changed, (int64_t id, int64_t seq, int64_t *rev, struct err *e),                \
      (id, seq, rev, e))                                                                          \
    X(bool, match_rev, (int64_t id, int64_t *rev, struct err *e), (id, rev, e))                   \
    X(bool, notify, (const char *payload, struct err *e), (payload, e))                           \
    X(bool, league_lock, (int64_t league, struct err *e), (league, e))                            \
    X(int, active_matches_of_player,                                                              \
      (int64_t player, int64_t after, bool clocked, int64_t *out, int max, struct err *e),        \
      (player, after, clocked, out, max, e))                                                      \
    /* vacations */                                                                               \
    X(bool, vacation_add, (int64_t player, int64_t from, int64_t until, struct err *e),           \
      (player, from, until, e))                                                                   \
    X(bool, vacation_end, (int64_t player, int64_t now, struct err *e), (player, now, e))         \
    X(int, vacations_of,                                                                          \
      (int64_t player, int64_t after, struct store_vacation *out, int max, struct err *e),        \
      (player, after, out, max, e))                                                               \
    X(bool, vacations_latest,                                                                     \
      (void (*fn)(void *cls, int64_t player, int64_t until), void *cls, struct err *e),           \
      (fn, cls, e))                                                                               \
    /* events */                                                                                  \
    X(bool, event_append, (int64_t match, const struct store_event *ev, struct err *e),           \
      (match, ev, e))                                                                             \
    X(bool, events_each,                                                                          \
      (int64_t match, bool (*fn)(void *ctx, const struct store_event *ev, struct err *e),         \
       void *ctx, struct err *e),                                                                 \
      (match, fn, ctx, e))                                                                        \
    X(bool, events_range,                                                                         \
      (int64_t match, int64_t from, int64_t until,                                                \
       bool (*fn)(void *ctx, const struct store_event *ev, struct err *e), void *ctx,             \
       struct err *e),                                                                            \
      (match, from, until, fn, ctx, e))                                                           \
    /* idempotency keys and settings */                                                           \
    X(bool, idem_get,                                                                             \
      (int64_t player, const char *key, struct store_idem *out, struct err *e),                   \
      (player, key, out, e))                                                                      \
    X(bool, idem_put,                                                                             \
      (int64_t player, const char *key, const struct store_idem *r, int64_t now,                  \
       struct err *e),                                                                            \
      (player, key, r, now, e))                                                                   \
    X(bool, setting_get,                                                                          \
      (const char *key, void *out, size_t max, size_t *len, struct err *e),                       \
      (key, out, max, len, e))                                                                    \
    X(bool, setting_put, (const char *key, const void *value, size_t len, struct err *e),         \
      (key, value, len, e))                                                                       \
    X(bool, setting_init, (const char *key, void *value, size_t len, struct err *e),              \
      (key, value, len, e))                                                                       \
    /* stream tickets */                                                                          \
    X(bool, ticket_add,                                                                           \
      (const struct store_ticket *k, int64_t now_ms, int per_player, int in_all,                  \
       struct store_ticket_room *room, struct err *e),                                            \
      (k, now_ms, per_player, in_all, room, e))                                                   \
    X(bool, ticket_take,                                                                          \
      (const uint8_t hash[STORE_HASH_BYTES], struct store_ticket *out, struct err *e),            \
      (hash, out, e))                                                                             \
    /* leagues */                                                                                 \
    X(bool, league_insert, (struct store_league *l, struct err *e), (l, e))                       \
    X(bool, league_get, (int64_t id, struct store_league *out, struct err *e), (id, out, e))      \
    X(bool, league_counts, (struct store_league *l, struct err *e), (l, e))                       \
    X(int, leagues, (struct store_league *out, int max, struct err *e), (out, max, e))            \
    X(int, player_leagues,                                                                        \
      (int64_t player, struct store_league *out, unsigned *roles, int max, struct err *e),        \
      (player, out, roles, max, e))                                                               \
    X(bool, member_add, (int64_t league, int64_t player, int64_t now, struct err *e),             \
      (league, player, now, e))                                                                   \
    X(bool, member_leave, (int64_t league, int64_t player, int64_t now, struct err *e),           \
      (league, player, now, e))                                                                   \
    X(bool, member_is, (int64_t league, int64_t player, bool *current, struct err *e),            \
      (league, player, current, e))                                                               \
    X(int, members, (int64_t league, struct store_member *out, int max, struct err *e),           \
      (league, out, max, e))                                                                      \
    X(int, league_matches,                                                                        \
      (int64_t league, int64_t player, bool active_only, int64_t before, int64_t *out,            \
       int max, struct err *e),                                                                   \
      (league, player, active_only, before, out, max, e))                                         \
    X(bool, league_match_count, (int64_t league, int64_t *n, struct err *e), (league, n, e))      \
    X(bool, league_take, (int64_t league, struct err *e), (league, e))                            \
    X(bool, invitation_add, (int64_t league, int64_t player, int64_t now, struct err *e),         \
      (league, player, now, e))                                                                   \
    X(bool, invitation_drop, (int64_t league, int64_t player, struct err *e),                     \
      (league, player, e))                                                                        \
    X(int, invitations, (int64_t league, struct store_member *out, int max, struct err *e),       \
      (league, out, max, e))                                                                      \
    X(bool, league_size, (int64_t league, int64_t *n, struct err *e), (league, n, e))             \
    X(bool, league_seatings,                                                                      \
      (int64_t league, void (*fn)(void *ctx, const int64_t *players, int n), void *ctx,           \
       struct err *e),                                                                            \
      (league, fn, ctx, e))                                                                       \
    X(bool, standing_get,                                                                         \
      (int64_t league, int64_t player, struct store_standing *out, struct err *e),                \
      (league, player, out, e))                                                                   \
    X(bool, standing_put, (int64_t league, const struct store_standing *st, struct err *e),       \
      (league, st, e))                                                                            \
    X(int, standings,                                                                             \
      (int64_t league, bool low_wins, struct store_standing *out, int max, struct err *e),        \
      (league, low_wins, out, max, e))                                                            \
    /* the outbox (outbox_add apart: store.c counts the rows it adds) */                          \
    X(bool, outbox_get, (int64_t id, struct store_outbox *out, struct err *e), (id, out, e))      \
    X(bool, outbox_next, (int channel, int64_t *when_ms, struct err *e),                          \
      (channel, when_ms, e))                                                                      \
    X(bool, outbox_settle, (const struct store_settle *rows, int n, struct err *e),              \
      (rows, n, e))                                                                               \
    X(int, outbox_of_player,                                                                      \
      (int64_t player, int64_t before, struct store_outbox *out, int max, struct err *e),         \
      (player, before, out, max, e))                                                              \
    X(int, attempts_of, (int64_t outbox, struct store_attempt *out, int max, struct err *e),      \
      (outbox, out, max, e))                                                                      \
    X(bool, outbox_redeliver, (int64_t id, int64_t now_ms, struct err *e), (id, now_ms, e))       \
    X(bool, outbox_backlog, (int64_t pending[2], int64_t dead[2], struct err *e),                 \
      (pending, dead, e))                                                                         \
    X(int, outbox_claim,                                                                          \
      (int channel, int64_t now_ms, int64_t claimed_until, const char *skip_ids,                  \
       const char *rooms, int room, int window, struct store_outbox *out, int max,                \
       struct err *e),                                                                            \
      (channel, now_ms, claimed_until, skip_ids, rooms, room, window, out, max, e))               \
    X(bool, outbox_claims_reset, (struct err *e), (e))                                            \
    X(bool, file_sizes, (int64_t *db_bytes, int64_t *wal_bytes, struct err *e),                   \
      (db_bytes, wal_bytes, e))                                                                   \
    X(bool, lease, (int64_t key, bool *held, struct err *e), (key, held, e))

struct store_backend {
    const char *name;            /* for messages: "sqlite" */

    /* Open a connection to the database at `path` (the address without its scheme), creating
     * and migrating it as store_open says; NULL with e filled on failure. */
    struct store_conn *(*open)(const char *path, enum store_durability d, struct err *e);
    /* Close; accepts NULL. */
    void (*close)(struct store_conn *c);
    /* store_version: the schema version the database records. */
    int (*version)(struct store_conn *c);
    /* store_rollback: undo the open transaction, if there is one. */
    void (*rollback)(struct store_conn *c);
    /* store_outbox_add (store.c counts the rows it adds, for the committer). */
    bool (*outbox_add)(struct store_conn *c, struct store_outbox *o, struct err *e);

    /* The upkeep a connection that writes group commits needs, if any (SQLite: copy the WAL
     * back into the database once it has grown; commits on `c` then no longer do that
     * themselves). commit.c starts it with the committer, pokes it after each batch is
     * answered, before the next (whoever ran the batch: on `c`, under the committer's lock
     * hook), asks its counts for the figures (store_commit_figures' `checkpoints`,
     * `writebacks`, `asides`, `frames_inline`), and stops it before closing `c`. NULL
     * members: none. */
    bool (*upkeep_start)(struct store_conn *c, struct err *e);
    void (*upkeep_poke)(struct store_conn *c);
    void (*upkeep_count)(struct store_conn *c, struct store_commit_figures *out);
    void (*upkeep_stop)(struct store_conn *c);

    /* The operations on a database by its address alone (store.h: store_backup,
     * store_check_copy, store_in_use, store_restore, store_probe), and the number of
     * migrations this build carries for it. */
    bool (*backup)(const char *path, const char *out, struct store_copy_info *info,
                   struct err *e);
    bool (*check_copy)(const char *path, struct store_copy_info *info, struct err *e);
    bool (*in_use)(const char *path, bool *in_use, struct err *e);
    bool (*restore)(const char *backup, const char *path, bool force,
                    struct store_copy_info *info, struct err *e);
    bool (*probe)(const char *path, struct err *e);
    int (*migration_count)(void);

    /* Several processes on one database (store.h): NULL members for a backend whose
     * database is one process's (SQLite). */
    struct store_listen_conn *(*listen)(const char *path, struct err *e);
    bool (*listener_wait)(struct store_listen_conn *l, int timeout_ms,
                          void (*fn)(void *cls, const char *payload), void *cls, struct err *e);
    void (*listener_close)(struct store_listen_conn *l);
    /* store_announce_changes (the whole process's setting). */
    void (*announce)(bool on);

#define STORE_BACKEND_MEMBER(ret, op, params, args)                                               \
    ret (*op)(struct store_conn *c, STORE_LIST params);
    STORE_OPS(STORE_BACKEND_MEMBER)
#undef STORE_BACKEND_MEMBER
};

/* The backends this build has. */
extern const struct store_backend store_sqlite_backend;
extern const struct store_backend store_postgres_backend;

/* Until called again with NULL, this thread's calls on `s` go to `own` (another connection
 * to s's database) instead: the committer's pool (commit.c) runs the service's writes, which
 * name the service's store, each on a connection of its own. */
void store_bind(const struct store *s, struct store *own);

/* What the service holds: the backend, its connection, and what the committer asks. */
struct store {
    const struct store_backend *backend;
    struct store_conn *conn;
    enum store_durability durability;
    char *path;                  /* the address as the backend takes it */
    uint64_t outbox_rows;        /* rows store_outbox_add wrote on this connection, ever: the
                                  * committer tells the writes that added some */
};

#endif
