/* shared.c - several cardpostd processes on one database (PostgreSQL; docs/scaling.md):
 * the listener thread. Every commit that changes a match notifies the database's channel
 * ("m ID REV SEQ": store_match_changed), a vacation taken or ended too ("v PLAYER UNTIL"),
 * a player's notification settings ("p PLAYER"); the listener of each process hears them
 * on a connection of its own and refreshes the matches it holds in memory (waking their
 * event streams), its vacations table and the players' facts (facts.c). A
 * notification can be lost (the listener's connection dropped, the server restarted): after
 * each (re)connection, and every few seconds, it catches up by reading the rows of the
 * matches with event streams open; the others are checked at their next use anyway
 * (api_match_find compares their version with the row's). The players' facts cannot be
 * checked so: they are used only while the listener is connected, and forgotten whenever
 * it (re)connects.
 *
 * A process alone on its database tells nobody of its changes: every process says "h TAG
 * hello" (its random tag) when its listener connects, which every other answers at once
 * ("h TAG"), and "h TAG" at every catch-up; it announces its matches' changes
 * (store_announce_changes) while it has heard another within the last few catch-ups, and
 * stops when nobody answered its hello within PEERS_ANSWER_MS or nobody was heard for
 * PEERS_GONE_MS. A process that starts next to one that was alone is heard by it within
 * milliseconds of its start; a change made in between reaches the newcomer's streams at
 * its next catch-up.
 */
#include "core.h"
#include "log.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* How often the listener catches up without being told (a lost notification costs a stream
 * at most this long), and how long it waits between reconnections. */
#define LISTEN_CATCH_UP_MS 2000
#define LISTEN_RETRY_MS 250
/* How long a process goes on announcing its changes after it last heard another, and how
 * long it waits for answers to its hello. */
#define PEERS_GONE_MS (3 * LISTEN_CATCH_UP_MS + 500)
#define PEERS_ANSWER_MS 300

/* What the listener knows of the other processes (its thread's alone). */
struct peers {
    struct api_app *app;
    char tag[17];            /* this process's, hex */
    int64_t heard_ms;        /* another's tag last heard (0: never) */
    int64_t hello_ms;        /* its hello said, answers not yet counted (0: counted) */
    bool announcing;
    struct {                 /* the others heard lately (app->processes counts them) */
        char tag[17];
        int64_t ms;
    } seen[64];
};

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Whether the process announces its changes, and (the same thing) whether it is not alone
 * on the database. Becoming alone, it forgets its tokens (another process may have rotated
 * one) and will check each match against its row once more (a new epoch); becoming
 * shared, it stops trusting both before it answers anyone (heard: say_here after this). */
static void announcing(struct peers *p, bool on)
{
    struct api_app *app = p->app;
    if (on != p->announcing)
        log_msg(LOG_LEVEL_INFO, "listen", on ? "another process uses the database: this one "
                "announces its changes" : "no other process heard: this one stops "
                "announcing its changes");
    p->announcing = on;
    store_announce_changes(app->config.db, on);
    if (on) {
        atomic_store(&app->alone, false);
        api_tokens_forget_all(app);
    } else if (!atomic_load(&app->alone)) {
        api_tokens_forget_all(app);
        atomic_fetch_add(&app->alone_epoch, 1);
        atomic_store(&app->alone, true); /* (after the epoch: match_fresh reads them so) */
    }
}

/* "h TAG" on the channel: this process is here ("h TAG hello": and has just come). */
static void say_here(struct peers *p, bool hello)
{
    char payload[40];
    snprintf(payload, sizeof payload, "h %s%s", p->tag, hello ? " hello" : "");
    struct err e;
    lock_take(&p->app->db_lock);
    bool ok = store_notify(p->app->store, payload, &e);
    lock_drop(&p->app->db_lock);
    if (!ok)
        log_msg(LOG_LEVEL_ERROR, "listen", "saying here: %s", e.msg);
}

/* Note another process's tag, heard now. */
static void seen(struct peers *p, const char *tag, size_t n, int64_t now)
{
    int k = 0, oldest = 0;
    for (; k < 64 && strncmp(p->seen[k].tag, tag, n) != 0; k++)
        if (p->seen[k].ms < p->seen[oldest].ms)
            oldest = k;
    if (k == 64) { /* (new: in the slot heard the longest ago, or never) */
        k = oldest;
        snprintf(p->seen[k].tag, sizeof p->seen[k].tag, "%.*s", (int)n, tag);
    }
    p->seen[k].ms = now;
}

/* Count the processes heard within PEERS_GONE_MS, this one included. */
static void count_processes(struct peers *p, int64_t now)
{
    int n = 1;
    for (int k = 0; k < 64; k++)
        n += p->seen[k].ms && now - p->seen[k].ms <= PEERS_GONE_MS;
    atomic_store(&p->app->processes, n);
}

int api_processes(struct api_app *app)
{
    int n = atomic_load(&app->processes);
    return n > 1 ? n : 1;
}

/* One notification: a match changed, a player's vacation, or a player's row. */
static void heard(void *cls, const char *payload)
{
    struct peers *p = cls;
    struct api_app *app = p->app;
    int64_t a, b, c;
    if (payload[0] == 'h' && payload[1] == ' ') {
        size_t n = strcspn(payload + 2, " ");
        if (n != strlen(p->tag) || strncmp(payload + 2, p->tag, n) != 0) {
            /* (its own comes back too) */
            p->heard_ms = mono_ms();
            seen(p, payload + 2, n, p->heard_ms);
            count_processes(p, p->heard_ms);
            if (!p->announcing)
                announcing(p, true);
            if (!strcmp(payload + 2 + n, " hello"))
                say_here(p, false); /* (the newcomer learns of this one at once) */
        }
    } else if (sscanf(payload, "m %" SCNd64 " %" SCNd64 " %" SCNd64, &a, &b, &c) == 3) {
        /* (sent only by a process that is not alone, so never by this one if it thinks it
         * is: another is there, its listener perhaps cut off when this one said hello) */
        if (!p->announcing)
            announcing(p, true);
        api_match_heard(app, a, b, true); /* (the others: at their next find) */
    } else if (sscanf(payload, "t %" SCNd64, &a) == 1) {
        if (!p->announcing)
            announcing(p, true);
        api_tokens_forget(app, a);
    } else if (sscanf(payload, "v %" SCNd64 " %" SCNd64, &a, &b) == 2) {
        api_vacation_noted(app, a, b);
        api_facts_forget(app, a); /* (its row was rewritten with it: players.c) */
    } else if (sscanf(payload, "p %" SCNd64, &a) == 1) {
        api_facts_forget(app, a);
    }
}

/* After a (re)connection: what was missed while nobody listened. */
static void catch_up(struct api_app *app)
{
    struct err e;
    api_facts_live(app, true); /* (every entry forgotten: a change may have been missed) */
    lock_take(&app->db_lock);
    bool ok = api_vacations_load(app, &e);
    lock_drop(&app->db_lock);
    if (!ok)
        log_msg(LOG_LEVEL_ERROR, "listen", "vacations: %s", e.msg);
    api_matches_catch_up(app);
}

static void *listener_main(void *arg)
{
    thread_name("listener");
    struct api_app *app = arg;
    struct peers peers = {.app = app, .announcing = true};
    uint8_t raw[TLOG_SEED_BYTES] = {0};
    struct err te;
    if (!tlog_seed_random(raw, &te)) /* (then the clock's time tells processes apart) */
        snprintf((char *)raw, sizeof raw, "%" PRId64, mono_ms());
    tlog_hex(raw, 8, peers.tag);
    struct store_listener *l = NULL;
    int64_t last_catch_up = mono_ms();
    bool warned = false;
    while (!api_stopping(app)) {
        struct err e;
        if (!l) {
            if (!(l = store_listen(app->config.db, &e))) {
                if (!warned)
                    log_msg(LOG_LEVEL_ERROR, "listen", "%s; trying again", e.msg);
                atomic_store(&app->peers_settled, true); /* (not alone, as far as it knows) */
                warned = true;
                struct timespec ts = {0, LISTEN_RETRY_MS * 1000000L};
                nanosleep(&ts, NULL);
                continue;
            }
            if (warned)
                log_msg(LOG_LEVEL_INFO, "listen", "listening again");
            warned = false;
            /* (announcing until the answers to its hello are counted) */
            announcing(&peers, true);
            peers.hello_ms = mono_ms();
            say_here(&peers, true);
            catch_up(app);
            last_catch_up = mono_ms();
        }
        if (!store_listener_wait(l, 200, heard, &peers, &e)) {
            log_msg(LOG_LEVEL_ERROR, "listen", "%s; reconnecting", e.msg);
            api_facts_live(app, false); /* (deaf: the others' changes go unheard) */
            announcing(&peers, true);   /* (and may not hear one come) */
            store_listener_close(l);
            l = NULL;
            warned = true;
            continue;
        }
        if (peers.hello_ms && mono_ms() - peers.hello_ms >= PEERS_ANSWER_MS) {
            if (peers.heard_ms < peers.hello_ms) /* nobody answered */
                announcing(&peers, false);
            peers.hello_ms = 0;
            atomic_store(&app->peers_settled, true);
        }
        if (mono_ms() - last_catch_up >= LISTEN_CATCH_UP_MS) {
            count_processes(&peers, mono_ms());
            say_here(&peers, false);
            if (peers.announcing) /* (alone, nobody else changed anything) */
                api_matches_catch_up(app);
            last_catch_up = mono_ms();
            if (peers.announcing && last_catch_up - peers.heard_ms > PEERS_GONE_MS)
                announcing(&peers, false);
        }
    }
    store_listener_close(l);
    return NULL;
}

bool api_listener_start(struct api_app *app, struct err *e)
{
    if (!app->shared)
        return true;
    if (pthread_create(&app->listener, NULL, listener_main, app) != 0)
        return err_set(e, ERR_IO, "thread", "cannot start the listener");
    app->listener_started = true;
    /* Serve nobody before the other processes know of this one (they answered its hello,
     * having stopped trusting their memory) or it knows it is alone. */
    for (int i = 0; i < 200 && !atomic_load(&app->peers_settled); i++) {
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    return true;
}

void api_listener_stop(struct api_app *app)
{
    if (!app->listener_started)
        return;
    api_stop(app);
    pthread_join(app->listener, NULL);
    app->listener_started = false;
}

/* ---- Each thread's own connection for the reads of every request ---------------------------
 * On a shared database every request reads its token's player, and every find a match's
 * version: on the reading connection they would wait for each other (and for loads and
 * logs) under read_lock. Each thread that makes them has a connection of its own instead,
 * opened at its first such read and closed when the thread ends: no lock, no wait. */

struct quick {
    const struct api_app *app;    /* (a test makes several apps, one after the other) */
    char url[sizeof ((struct config *)0)->db];
    struct store *s;
};

static pthread_key_t quick_key;
static pthread_once_t quick_once = PTHREAD_ONCE_INIT;

static void quick_free(void *arg)
{
    struct quick *q = arg;
    store_close(q->s);
    free(q);
}

static void quick_init(void)
{
    pthread_key_create(&quick_key, quick_free);
}

struct store *api_quick_store(struct api_app *app, struct err *e)
{
    pthread_once(&quick_once, quick_init);
    struct quick *q = pthread_getspecific(quick_key);
    if (q && q->app == app && q->s && !strcmp(q->url, app->config.db))
        return q->s;
    if (!q && !(q = calloc(1, sizeof *q))) {
        err_set(e, ERR_NOMEM, "nomem", "out of memory");
        return NULL;
    }
    store_close(q->s);
    q->app = app;
    snprintf(q->url, sizeof q->url, "%s", app->config.db);
    q->s = store_open(app->config.db, e);
    pthread_setspecific(quick_key, q);
    if (!q->s && e->code == ERR_IO) /* (the server is not there now) */
        e->code = ERR_UNAVAILABLE, e->tag = "database_unavailable";
    return q->s;
}

bool api_vacation_announce(struct api_app *app, int64_t player, int64_t until, struct err *e)
{
    char payload[64];
    snprintf(payload, sizeof payload, "v %lld %lld", (long long)player, (long long)until);
    return !app->shared || store_notify(app->store, payload, e);
}

void api_token_announce(struct api_app *app, int64_t player)
{
    if (!app->shared || atomic_load(&app->alone)) /* (nobody caches tokens but the alone) */
        return;
    char payload[32];
    snprintf(payload, sizeof payload, "t %lld", (long long)player);
    struct err e;
    lock_take(&app->db_lock);
    bool ok = store_notify(app->store, payload, &e);
    lock_drop(&app->db_lock);
    if (!ok)
        log_msg(LOG_LEVEL_ERROR, "listen", "announcing a new token: %s", e.msg);
}

bool api_player_announce(struct api_app *app, int64_t player, struct err *e)
{
    char payload[32];
    snprintf(payload, sizeof payload, "p %lld", (long long)player);
    return !app->shared || store_notify(app->store, payload, e);
}
