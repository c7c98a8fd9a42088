/* commit.c - group commit. The writes of the move path (a move, the chance events it makes
 * due, the summary, the notifications, the idempotent answer) are queued, and one thread at
 * a time, the committer of the moment, runs every write queued since the last batch inside
 * one transaction, each in a savepoint of its own, and commits them together. Under load
 * many moves share a commit, and with `durability = power` one fdatasync; alone, a move is
 * committed at once (nobody waits to fill a batch). A write that fails is undone alone (its
 * savepoint); a commit that fails fails the whole batch. Each write hears the outcome
 * through its done callback, in queue order, after the commit.
 *
 * Who writes: with `durability = crash` a thread that queues a write while nobody is
 * writing leads the batch itself (no hand-over, no wake-up: the common case when the
 * service is not busy); writes queued while a batch is written wait for the next, which the
 * committer thread runs, so that the leading thread goes back to its connections. With
 * `durability = power` the committer thread writes every batch: each waits for the disk,
 * and an HTTP thread waiting there would leave its connections unserved. A write that is
 * waited for (api_write_wait) is always written by the committer thread: its caller may
 * hold its match's lock, and the batch's done callbacks take their matches' locks. A
 * thread that queues a write must not hold db_lock.
 */
#include "core.h"
#include "handlers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* At most this many writes share a transaction, so that a long queue still answers the
 * first in line soon. */
#define COMMIT_BATCH_MAX 256

/* The WAL is copied back into the database once it holds this many frames (SQLite's own
 * default for its automatic checkpoints, which commits would otherwise run themselves). */
#define CHECKPOINT_FRAMES 1000

/* Take the writes queued (at most COMMIT_BATCH_MAX), write them in one transaction, and
 * tell each its outcome. Called by whoever is the committer at the time. */
static void run_batch(struct api_app *app)
{
    struct api_committer *c = &app->committer;
    lock_take(&c->lock);
    struct api_write *batch = c->head, *last = batch;
    if (!batch) {
        lock_drop(&c->lock);
        return;
    }
    int n = 1;
    while (last->next && n < COMMIT_BATCH_MAX) {
        last = last->next;
        n++;
    }
    c->head = last->next;
    if (!c->head)
        c->tail = &c->head;
    last->next = NULL;
    lock_drop(&c->lock);

    struct err e;
    lock_take(&app->db_lock);
    bool ok = store_begin(app->store, &e);
    for (struct api_write *w = batch; w; w = w->next) {
        if (!ok) {
            w->ok = false;
            w->e = e;
            continue;
        }
        w->ok = store_savepoint(app->store, &w->e) && w->run(app, w, &w->e);
        if (w->ok) {
            ok = store_release(app->store, &e);
        } else if (!store_rollback_to(app->store, &e)) {
            ok = false;
        }
    }
    ok = ok && store_commit(app->store, &e);
    if (!ok) {
        store_rollback(app->store);
        for (struct api_write *w = batch; w; w = w->next)
            if (w->ok) {
                w->ok = false;
                w->e = e;
            }
    }
    lock_drop(&app->db_lock);
    if (api_outbox_take_added() && ok) /* (written by the runs, on this thread) */
        api_wake(app);
    lock_take(&c->lock);
    c->batches++;
    c->writes += (uint64_t)n;
    if (c->wal_frames >= CHECKPOINT_FRAMES)
        pthread_cond_signal(&c->cp_wake);
    lock_drop(&c->lock);
    for (struct api_write *w = batch, *next; w; w = next) {
        next = w->next; /* done may free w */
        w->done(app, w);
    }
}

/* The committer thread: it takes over when a batch ends with more writes queued (so that
 * the thread that led it goes back to its own work), and runs batches until none are left. */
static void *committer_main(void *arg)
{
    struct api_app *app = arg;
    struct api_committer *c = &app->committer;
    lock_take(&c->lock);
    for (;;) {
        while (!c->handoff && !c->stop)
            lock_wait(&c->wake, &c->lock);
        if (!c->handoff)
            break; /* stopping, and nothing handed over */
        c->handoff = false;
        while (c->head) {
            lock_drop(&c->lock);
            run_batch(app);
            lock_take(&c->lock);
        }
        c->active = false;
    }
    lock_drop(&c->lock);
    return NULL;
}

/* The checkpointer thread: a PASSIVE checkpoint whenever the WAL has grown past
 * CHECKPOINT_FRAMES (checked after every batch, and once a second for the writes that do
 * not go through the committer). */
static void *checkpointer_main(void *arg)
{
    struct api_app *app = arg;
    struct api_committer *c = &app->committer;
    lock_take(&c->lock);
    while (!c->stop) {
        if (c->wal_frames < CHECKPOINT_FRAMES) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_sec += 1;
            lock_timedwait(&c->cp_wake, &c->lock, &until);
            continue;
        }
        c->wal_frames = 0; /* (the next commit says how many are left) */
        lock_drop(&c->lock);
        struct err e;
        if (!store_checkpoint(c->cp_store, &e))
            fprintf(stderr, "cardpostd: checkpoint: %s\n", e.msg);
        lock_take(&c->lock);
        c->checkpoints++;
    }
    lock_drop(&c->lock);
    return NULL;
}

bool api_committer_start(struct api_app *app, struct err *e)
{
    struct api_committer *c = &app->committer;
    c->tail = &c->head;
    if (!(c->cp_store = store_open(app->config.db, e)) ||
        !store_checkpoint_elsewhere(app->store, &c->wal_frames, e))
        return false;
    if (pthread_create(&c->checkpointer, NULL, checkpointer_main, app) != 0)
        return err_set(e, ERR_IO, "threads", "cannot start the checkpointer");
    c->cp_started = true;
    if (pthread_create(&c->thread, NULL, committer_main, app) != 0)
        return err_set(e, ERR_IO, "threads", "cannot start the committer");
    c->started = true;
    return true;
}

void api_committer_stop(struct api_app *app)
{
    struct api_committer *c = &app->committer;
    lock_take(&c->lock);
    c->stop = true;
    pthread_cond_signal(&c->wake);
    pthread_cond_signal(&c->cp_wake);
    lock_drop(&c->lock);
    if (c->started)
        pthread_join(c->thread, NULL); /* it empties the queue first if it was handed one */
    if (c->cp_started)
        pthread_join(c->checkpointer, NULL);
    c->started = c->cp_started = false;
    store_close(c->cp_store);
    c->cp_store = NULL;
}

/* Queue `w`. With `lead`, a thread that finds nobody writing writes the batch itself
 * (durability crash); without, the committer thread does. */
static void submit(struct api_app *app, struct api_write *w, bool lead)
{
    struct api_committer *c = &app->committer;
    w->next = NULL;
    lock_take(&c->lock);
    *c->tail = w;
    c->tail = &w->next;
    if (c->active) { /* a batch is being written: this write goes in the next */
        lock_drop(&c->lock);
        return;
    }
    c->active = true;
    if (app->config.durable_power || !lead) {
        /* Each batch waits for the disk: not on this thread, which has connections to
         * serve meanwhile (and holds db_lock for it, which its readers would wait for).
         * Nor on a thread that may hold its match's lock (a waited write). */
        c->handoff = true;
        pthread_cond_signal(&c->wake);
        lock_drop(&c->lock);
        return;
    }
    /* Nobody is writing: this thread leads a batch itself, sparing a hand-over to the
     * committer thread (and the wait for it) when the service is not busy. */
    lock_drop(&c->lock);
    run_batch(app);
    lock_take(&c->lock);
    if (c->head) { /* more came meanwhile: the committer thread carries on */
        c->handoff = true;
        pthread_cond_signal(&c->wake);
    } else {
        c->active = false;
    }
    lock_drop(&c->lock);
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
