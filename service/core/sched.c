/* sched.c - the deadline scheduler: a thread that, once a second or when woken, runs the
 * clock of every active match whose deadline or reminder time has come (matches.c does the
 * work under the match's lock: reminders, and the timeout policy for late seats), and
 * cancels the pending matches whose invitation expired.
 */
#include "core.h"

#include <time.h>

void *api_scheduler(void *arg)
{
    struct api_app *app = arg;
    while (!app->stopping) {
        atomic_store(&app->beat_scheduler, api_beat_now());
        int64_t ids[64];
        struct err e;
        int64_t now = api_now_ms(app) / 1000;
        lock_take(&app->db_lock);
        int n = store_matches_due(app->store, now, ids, 64, &e);
        lock_drop(&app->db_lock);
        for (int i = 0; i < n && !app->stopping; i++)
            api_match_clock_tick(app, ids[i]);
        api_invitations_sweep(app); /* pending matches whose invitation expired */
        if (n == 64)
            continue; /* more are due */
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_sec += 1;
        lock_take(&app->wake_lock);
        if (!app->stopping)
            lock_timedwait(&app->wake, &app->wake_lock, &ts);
        lock_drop(&app->wake_lock);
    }
    return NULL;
}
