/* store.h - cardpost's SQLite storage: opening and migrating the database, transactions,
 * players, matches with their seats, the append-only event log, and idempotency keys.
 *
 * A `struct store` is one SQLite connection in WAL mode; it is not thread-safe (the service
 * serialises its use). Strings handed in are borrowed; strings handed out in structs are
 * owned by the struct and released by its _finish function. Every function that can fail
 * returns bool and fills `struct err` (ERR_NOT_FOUND when a row does not exist, ERR_IO for
 * SQLite errors, ERR_INVALID for a constraint such as a duplicate).
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

/* Open (creating if needed) the database at `path`, set WAL mode, foreign keys and a busy
 * timeout, and apply every migration not yet recorded. NULL on failure. A database that
 * records a newer version than this build carries is opened as it is (migrations only add). */
struct store *store_open(const char *path, struct err *e);

/* Close; accepts NULL. */
void store_close(struct store *s);

/* The schema version recorded in the database (the number of the last migration). */
int store_version(struct store *s);

/* Number of migrations this build carries. */
int store_migration_count(void);

/* Transactions. begin takes the write lock at once (BEGIN IMMEDIATE). */
bool store_begin(struct store *s, struct err *e);
bool store_commit(struct store *s, struct err *e);
void store_rollback(struct store *s);

/* ---- Players ---------------------------------------------------------------------------- */

struct store_player {
    int64_t id;
    char *name;
    char *email;         /* or NULL */
    char *webhook_url;   /* or NULL */
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

/* ---- Matches --------------------------------------------------------------------------- */

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
    int64_t deadline;            /* 0: none */
    int64_t finished_at;         /* 0 while active */
};

void store_match_finish(struct store_match *m);

/* Insert a match with its seats; `m->id` receives the new id. */
bool store_match_insert(struct store *s, struct store_match *m, struct err *e);

bool store_match_get(struct store *s, int64_t id, struct store_match *out, struct err *e);

/* Rewrite the cached summary (finished, seq, to_move, totals, result, deadline,
 * finished_at) of match `m->id`. */
bool store_match_update(struct store *s, const struct store_match *m, struct err *e);

/* Ids of the matches in which `player` holds a seat, newest first, at most `max`. */
int store_matches_of_player(struct store *s, int64_t player, int64_t *out, int max,
                            struct err *e);

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

#endif
