/* metrics.h - the daemon's counters and histograms for GET /metrics (docs/operations.md
 * "Monitoring"): process-wide, lock-free (C11 atomics, relaxed: each a figure of its own),
 * fixed in size, so that what they count pays a few atomic adds and never allocates. The
 * places that count call the metrics_* functions below; the exposition (http/metrics.c)
 * reads them with the gauges of the moment (metrics_write).
 */
#ifndef CARDPOST_METRICS_H
#define CARDPOST_METRICS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "err.h"

struct api_app;

/* Requests are counted by the row of the route table that answered them (at most
 * METRICS_ROUTES rows); the one more slot is for a request no row answered (a page of web/,
 * a 404, a refusal before routing). Statuses 100 to 599. */
#define METRICS_ROUTES 64
#define METRICS_NO_ROUTE METRICS_ROUTES
#define METRICS_STATUSES 500
/* The move refusals' reasons (err tags) told apart; more fall under "other". */
#define METRICS_REASONS 32
/* A histogram's buckets, besides +Inf. */
#define METRICS_BUCKETS 14

struct metrics_histogram {
    _Atomic uint64_t bucket[METRICS_BUCKETS + 1];  /* each its own (not cumulative); +Inf last */
    _Atomic uint64_t sum;                           /* of the values times the scale */
};

/* The channels of the outbox (store.h enum store_channel) and a delivery's outcomes. */
enum metrics_outcome { METRICS_DELIVERED, METRICS_RETRY, METRICS_DEAD };

/* Count a request answered by route table row `route` (-1: none) with `status`, in
 * `seconds`. */
void metrics_request(int route, int status, double seconds);

/* A move committed (any: a request's, by email, a clock's), or a request's move refused, by
 * the err tag that said why (static storage, as err.h says). */
void metrics_move_accepted(void);
void metrics_move_refused(const char *reason);

/* A group commit of `writes` writes, committed or failed, its backend commit `seconds` long
 * (storage's committer figures hook). */
void metrics_commit(int writes, bool ok, double seconds);

/* The match cache found a match in memory (hit) or loaded it (miss). */
void metrics_cache(bool hit);

/* A delivery attempt on `channel` (0 email, 1 webhook) and its outcome, `attempt_seconds`
 * long; a delivered one also `queued_seconds` after its notification was queued. */
void metrics_delivery(int channel, enum metrics_outcome outcome, double attempt_seconds,
                      double queued_seconds);

/* The clock played a late seat's move (a timeout), or queued `n` reminders. */
void metrics_clock_timeout(void);
void metrics_clock_reminders(int n);

/* The event streams: a commit's messages rendered for one visibility (a seat, or the
 * spectators) into the match's feed, shared by every stream of that visibility (its event
 * messages copied from another visibility's when every move of the commit is open); or a
 * stream's messages read back from the log (its first, or one behind the feed). */
void metrics_stream_render(void);
void metrics_stream_events_copied(void);
void metrics_stream_log_read(void);

/* What a scrape reads at its moment, besides the counters. */
struct metrics_gauges {
    int nroutes;                      /* route table rows, labels below */
    const char *const *route_method;  /* each row's method and pattern */
    const char *const *route_pattern;
    int64_t streams_open;
    int64_t cache_size, cache_limit;
    bool have_store;                  /* the store answered (its figures below) */
    int64_t pending[2], dead[2];      /* the outbox's backlog by channel */
    int64_t db_bytes, wal_bytes;
};

/* Fill the core's gauges of `g` (cache, outbox backlog, file sizes) from the app; the
 * caller fills the routes and the streams. The store's are left out (have_store false) when
 * it cannot answer. */
void metrics_gauges_read(struct api_app *app, struct metrics_gauges *g);

/* Write every metric in the Prometheus text exposition format 0.0.4 to `out`, with HELP
 * and TYPE lines, the process's resident memory and open files read from /proc. */
void metrics_write(FILE *out, const struct metrics_gauges *g);

#endif
