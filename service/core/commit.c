/* commit.c - the service's writes through storage's group commit (storage/commit.c says
 * how batches are written and who writes them). The committer writes on app->store holding
 * db_lock, like every other user of that connection; after a batch that committed outbox
 * rows it wakes the delivery workers. An api_write is the storage write of an app's
 * callbacks. A thread that queues a write must hold no match's lock unless that match has no
 * write in flight (done callbacks take their match's lock) and must not hold db_lock.
 */
#include "core.h"
#include "metrics.h"

#include <stddef.h>

static void db_lock(void *cls)
{
    struct api_app *app = cls;
    lock_take(&app->db_lock);
}

static void db_unlock(void *cls)
{
    struct api_app *app = cls;
    lock_drop(&app->db_lock);
}

static void outbox_added(void *cls)
{
    api_wake(cls);
}

static void figures(void *cls, int writes, bool ok, double commit_seconds)
{
    (void)cls;
    metrics_commit(writes, ok, commit_seconds);
}

/* A batch's answers wake the threads they concern (the HTTP thread, the streams' writer)
 * once, after the last of them (api_wakes_hold). */
static void answering(void *cls)
{
    (void)cls;
    api_wakes_hold();
}

static void answered(void *cls)
{
    (void)cls;
    api_wakes_release();
}

bool api_committer_start(struct api_app *app, struct err *e)
{
    struct store_committer_hooks hooks = {
        .cls = app, .pool = app->config.db_pool, .lock = db_lock, .unlock = db_unlock,
        .outbox_added = outbox_added, .figures = figures, .answering = answering,
        .answered = answered};
    return (app->committer = store_committer_create(app->store, &hooks, e)) != NULL;
}

void api_committer_stop(struct api_app *app)
{
    store_committer_destroy(app->committer); /* it writes everything queued first */
    app->committer = NULL;
}

static struct api_write *write_of(struct store_write *sw)
{
    return (struct api_write *)((char *)sw - offsetof(struct api_write, sw));
}

static bool write_run(void *cls, struct store_write *sw, struct err *e)
{
    struct api_write *w = write_of(sw);
    return w->run(cls, w, e);
}

static void write_done(void *cls, struct store_write *sw)
{
    struct api_write *w = write_of(sw);
    w->ok = sw->ok;
    w->e = sw->e;
    w->done(cls, w); /* (may free w) */
}

/* Queue `w`. With `lead`, a thread that finds nobody writing may write the batch itself
 * (storage/commit.c); without, the committer thread does. */
static void submit(struct api_app *app, struct api_write *w, bool lead)
{
    w->sw = (struct store_write){.run = write_run, .done = write_done};
    store_committer_submit(app->committer, &w->sw, lead);
}

void api_write_submit(struct api_app *app, struct api_write *w)
{
    assert(lock_none_held()); /* (it may write the batch here: see submit) */
    submit(app, w, true);
}

/* ---- Waiting for a write ------------------------------------------------------------------- */

struct waited {
    struct api_write w;
    bool (*run)(struct api_app *app, void *ctx, struct err *e);
    void *ctx;
    struct lock lock;
    pthread_cond_t cond;
    bool finished;
};

static bool waited_run(struct api_app *app, struct api_write *w, struct err *e)
{
    struct waited *x = (struct waited *)w;
    return x->run(app, x->ctx, e);
}

static void waited_done(struct api_app *app, struct api_write *w)
{
    (void)app;
    struct waited *x = (struct waited *)w;
    lock_take(&x->lock);
    x->finished = true;
    pthread_cond_signal(&x->cond);
    lock_drop(&x->lock);
}

bool api_write_wait(struct api_app *app, bool (*run)(struct api_app *app, void *ctx, struct err *e),
                    void *ctx, struct err *e)
{
    struct waited x = {.w = {.run = waited_run, .done = waited_done}, .run = run, .ctx = ctx};
    lock_init(&x.lock, API_LOCK_WAITED, "waited write");
    pthread_cond_init(&x.cond, NULL);
    assert(!lock_held(&app->db_lock));
    /* The waiting thread may hold its match's lock, and a batch's done callbacks take
     * their matches' locks: the committer thread writes it, never a thread holding a
     * match (core.h "Locks": no two matches' locks held together). */
    submit(app, &x.w, false);
    lock_take(&x.lock);
    while (!x.finished)
        lock_wait(&x.cond, &x.lock);
    lock_drop(&x.lock);
    lock_finish(&x.lock);
    pthread_cond_destroy(&x.cond);
    if (!x.w.ok && e)
        *e = x.w.e;
    return x.w.ok;
}
