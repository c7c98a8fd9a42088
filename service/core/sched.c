/* sched.c - the deadline scheduler: a thread that, once a second or when woken, runs the
 * clock of every active match whose deadline or reminder time has come (matches.c does the
 * work under the match's lock: reminders, and the timeout policy for late seats), and
 * cancels the pending matches whose invitation expired.
 *
 * Several processes over one PostgreSQL database (docs/scaling.md): this work is done by one
 * of them at a time, the one that holds the clock's lease (store_lease: an advisory lock on
 * its connection, freed by the server when the process dies). The others keep asking, once
 * a second, and the first to ask after the holder died takes it over. On SQLite the lease is
 * always this process's.
 */
#include "core.h"
#include "log.h"

#include <time.h>

/* Whether this process runs the clock now; says so in the log when that changes. */
static bool clock_lease(struct api_app *app, bool *had)
{
    struct err e;
    bool held = false;
    lock_take(&app->db_lock);
    bool ok = store_lease(app->store, STORE_LEASE_CLOCK, &held, &e);
    lock_drop(&app->db_lock);
    if (!ok)
        log_msg(LOG_LEVEL_ERROR, "clock", "the clock's lease: %s", e.msg);
    if (held != *had)
        log_msg(LOG_LEVEL_INFO, "clock", held ? "this process runs the clock now"
                                              : "another process runs the clock now");
    *had = held;
    return held;
}

void *api_scheduler(void *arg)
{
    thread_name("scheduler");
    struct api_app *app = arg;
    bool leased = false;
    while (!app->stopping) {
        atomic_store(&app->beat_scheduler, api_beat_now());
        int64_t ids[64];
        struct err e;
        int64_t now = api_now_ms(app) / 1000;
        int n = 0;
        if (clock_lease(app, &leased)) {
            lock_take(&app->db_lock);
            n = store_matches_due(app->store, now, ids, 64, &e);
            lock_drop(&app->db_lock);
        }
        for (int i = 0; i < n && !app->stopping; i++)
            api_match_clock_tick(app, ids[i]);
        if (leased)
            api_invitations_sweep(app); /* pending matches whose invitation expired */
        if (n == 64)
            continue; /* more are due */
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_sec += 1;
        lock_take(&app->wake_lock);
        if (!app->stopping)
            lock_timedwait(&app->tick, &app->wake_lock, &ts);
        lock_drop(&app->wake_lock);
    }
    return NULL;
}
