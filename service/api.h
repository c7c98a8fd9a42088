/* api.h - the inside of cardpostd: the application object shared by every request, the
 * match table (each active match's log and state in memory, one lock per match), and the
 * handlers behind the REST API of spec/service.md. http.c turns HTTP into calls of these.
 */
#ifndef CARDPOST_API_H
#define CARDPOST_API_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "err.h"
#include "store.h"
#include "turnlog.h"

#define API_MAX_BODY (64 * 1024)

/* A time source, so that tests can drive the clock (deadlines come later). */
typedef int64_t (*api_clock_fn)(void);

/* One match in memory: its log, the replayed state, and who sits where. `lock` orders
 * everything that touches it; `changed` wakes the event streams after each new event. */
struct api_match {
    int64_t id;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    struct tlog *log;
    struct tlog_replay replay;
    uint32_t chance_events;               /* k of the next chance event */
    int64_t players[RULES_MAX_SEATS];
    uint8_t seed[TLOG_SEED_BYTES];
    char commitment[TLOG_HEX_BYTES];
    int64_t created_by;
    int64_t created_at;
    int64_t finished_at;
};

struct api_app {
    struct store *store;          /* guarded by db_lock */
    pthread_mutex_t db_lock;
    pthread_mutex_t table_lock;   /* guards the match table itself */
    struct api_match **matches;   /* indexed by id; NULL: not loaded yet */
    size_t nmatches;
    uint8_t operator_hash[32];    /* sha256 of the operator token */
    bool has_operator;
    volatile int stopping;        /* set on SIGTERM: event streams end */
    api_clock_fn now_ms;
};

/* Who is calling: nobody (no Authorization header), a player, or the operator. */
struct api_caller {
    bool authenticated;
    bool operator;
    int64_t player;               /* 0 unless a player */
};

/* An HTTP answer: status, and a JSON body (owned; NULL for none). Errors carry a
 * problem+json body built by api_problem. */
struct api_reply {
    int status;
    json_t *body;
    bool problem;
};

/* Fill `r` with a problem+json answer: type, title, status, detail. Returns false. */
bool api_problem(struct api_reply *r, int status, const char *type, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The one mapping from an error value to an HTTP problem (used for what is not a 4xx
 * chosen on the spot: ERR_NOT_FOUND 404, ERR_INVALID 422, ERR_ILLEGAL 422, others 500). */
bool api_problem_from_err(struct api_reply *r, const struct err *e);

/* Create and destroy the application; `db` is the database path. */
struct api_app *api_app_create(const char *db, const char *operator_token, struct err *e);
void api_app_destroy(struct api_app *app);

/* Authenticate an Authorization header value (NULL: none). False with a 401 in r. */
bool api_authenticate(struct api_app *app, const char *authorization, struct api_caller *c,
                      struct api_reply *r);

/* The handlers. `body` is the parsed request JSON (NULL when there was none). Each fills
 * `r`; `idem_key` (or NULL) is the Idempotency-Key header, `request_hash` the sha256 of
 * method, path and body. */
void api_player_create(struct api_app *app, json_t *body, struct api_reply *r);
void api_match_create(struct api_app *app, const struct api_caller *c, json_t *body,
                      const char *idem_key, const uint8_t request_hash[32], struct api_reply *r);
void api_match_get(struct api_app *app, const struct api_caller *c, int64_t id,
                   struct api_reply *r);
void api_match_move(struct api_app *app, const struct api_caller *c, int64_t id, json_t *body,
                    const char *idem_key, const uint8_t request_hash[32], struct api_reply *r);
void api_match_log(struct api_app *app, const struct api_caller *c, int64_t id,
                   struct api_reply *r);

/* Look up (loading it from the database if needed) a match. NULL with a 404 in r. */
struct api_match *api_match_find(struct api_app *app, int64_t id, struct api_reply *r);

/* The seat `c` holds in `m`, or -1 (spectator). Call with m->lock held. */
int api_match_seat(const struct api_match *m, const struct api_caller *c);

/* The caller's view of `m` (service.md: id, game, status, seq, to_move, you, totals,
 * view, legal, deadline, ...). Call with m->lock held. */
json_t *api_match_view(struct api_app *app, struct api_match *m, int seat);

/* The event stream: the SSE messages for events of `m` after `after` (a seq; -1 for
 * all), as the seat sees them, appended to `out` (a growing text). Returns the seq of the
 * last event covered. Call with m->lock held. */
int64_t api_match_stream_chunk(struct api_app *app, struct api_match *m, int seat,
                               int64_t after, char **out, size_t *len);

#endif
