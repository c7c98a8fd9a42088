/* commit.c - group commit, over any backend's transactions and savepoints. Writes (a move,
 * the chance events it makes due, the summary, the notifications, the idempotent answer)
 * are queued, and one thread at a time, the committer of the moment, runs every write
 * queued since the last batch inside one transaction and commits them together. Under load
 * many writes share a commit, and with STORE_DURABLE_POWER one wait for the disk; alone, a
 * write is committed at once (nobody waits to fill a batch). A write that fails is undone
 * alone; a commit that fails fails the whole batch. Each write hears the outcome through its
 * done callback, in queue order, after the commit.
 *
 * A batch is written first with no savepoints: a write that fails is rare (a move is judged
 * before it is queued), and a savepoint a write cost SQLite a copy of every page the write
 * touched into its statement journal, about 4,800 instructions a move (docs/decisions.md
 * "A batch without savepoints"). When a write fails the transaction is rolled back and the
 * batch written again, each write in a savepoint of its own, the failing one undone alone
 * (store.h: a write's run may be called twice).
 *
 * Who writes: with STORE_DURABLE_CRASH a thread that queues a write while nobody is writing
 * and the last batch ended more than COMMIT_QUIET ago leads the batch itself (no hand-over,
 * no wake-up: the common case when the service is not busy); writes queued while a batch is
 * written wait for the next, which the committer thread runs, so that the leading thread
 * goes back to its own work. Under load (a batch ended less than COMMIT_QUIET ago) the
 * committer thread writes every batch as it does durable ones: a request's thread that led
 * its own write went on to the next request only after the commit, so every batch was one
 * write (docs/benchmarks.md "Webhook claims by destination; crash durability's
 * batches"). With STORE_DURABLE_POWER the committer thread writes every batch: each waits
 * for the disk, and a caller waiting there would leave its own work undone. The backend's
 * upkeep (SQLite: the WAL checkpoints) starts and stops with the committer, and is poked
 * after every batch, once its writes are answered, by whoever ran it.
 *
 * On a database that several processes share (PostgreSQL: store_shared) there is no batch:
 * each write is a transaction of its own, written by one of the pool's threads (hooks.pool
 * of them, the service's db_pool; STORE_POOL_DEFAULT when 0), each with a connection of its
 * own (store_bind). The server groups the flushes of commits that come together itself (its
 * own group commit: we build none on top), and a batch would hold the row locks of all its
 * matches until its commit, so that two processes' batches could wait for each other (a
 * deadlock the server breaks only after a second). The hooks' lock is held while a write
 * runs its statements, not while its commit waits for the disk: the pool's commits overlap.
 */
#include "backend.h"
#include "lock.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

/* At most this many writes share a transaction, so that a long queue still answers the
 * first in line soon. */
#define COMMIT_BATCH_MAX 256

/* How long after a batch the service counts as busy: a write queued sooner goes to the
 * committer thread even with STORE_DURABLE_CRASH (nanoseconds). */
#define COMMIT_QUIET 1000000

/* The most threads and connections a pool may have (hooks.pool). */
#define COMMIT_POOL_MAX 64

struct pool_worker {
    struct store_committer *c;
    struct store *s;              /* its own connection */
    pthread_t thread;
    bool started;
};

struct store_committer {
    struct store *store;
    struct store_committer_hooks hooks;
    pthread_mutex_t lock;         /* guards what follows */
    pthread_cond_t wake;
    struct store_write *head, **tail;
    bool active;                  /* a batch is being written (by a leader or the thread) */
    bool handoff;                 /* the thread is to carry on with the queue */
    bool stop, started;
    pthread_t thread;
    uint64_t batches, writes;     /* committed so far (for the figures) */
    int64_t ended_ns;             /* when the last batch ended (monotonic; 0: none yet) */
    bool upkeep;                  /* the backend's upkeep was started */
    struct pool_worker pool[COMMIT_POOL_MAX];  /* hooks.pool: no batches (pool[0].s set) */
};

/* Take up to COMMIT_BATCH_MAX writes off the queue; their count in *n. */
static struct store_write *take_batch(struct store_committer *c, int *n)
{
    pthread_mutex_lock(&c->lock);
    struct store_write *batch = c->head, *last = batch;
    *n = 0;
    if (batch) {
        *n = 1;
        while (last->next && *n < COMMIT_BATCH_MAX) {
            last = last->next;
            (*n)++;
        }
        c->head = last->next;
        if (!c->head)
            c->tail = &c->head;
        last->next = NULL;
    }
    pthread_mutex_unlock(&c->lock);
    return batch;
}

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static double mono_seconds(void)
{
    return (double)mono_ns() / 1e9;
}

/* Run write `w` in the transaction (with `saved`, in a savepoint of its own); false when
 * it failed (its error in w->e). */
static bool run_write(struct store_committer *c, struct store_write *w, bool saved)
{
    struct store *s = c->store;
    uint64_t rows = s->outbox_rows;
    w->ok = (!saved || store_savepoint(s, &w->e)) && w->run(c->hooks.cls, w, &w->e);
    w->outbox = w->ok && s->outbox_rows != rows;
    return w->ok;
}

/* Write `batch` in one transaction (first with no savepoints, then, if a write failed,
 * again with one a write); false (with e) when the transaction itself failed, which fails
 * every write. *commit_seconds: how long the backend's commit took (the wait for the disk,
 * when durable to power). */
static bool write_batch(struct store_committer *c, struct store_write *batch,
                        double *commit_seconds, struct err *e)
{
    struct store *s = c->store;
    *commit_seconds = 0;
    bool ok = store_begin(s, e), failed = false;
    for (struct store_write *w = batch; ok && !failed && w; w = w->next)
        failed = !run_write(c, w, false);
    if (failed) {
        store_rollback(s);
        if (!batch->next)
            return true; /* (alone: undone with the transaction) */
        ok = store_begin(s, e);
    }
    for (struct store_write *w = batch; w; w = w->next) {
        if (!ok) {
            w->ok = false;
            w->e = *e;
            continue;
        }
        if (!failed)
            continue; /* (written in the first pass) */
        if (run_write(c, w, true))
            ok = store_release(s, e);
        else if (!store_rollback_to(s, e))
            ok = false;
    }
    double t0 = mono_seconds();
    ok = ok && store_commit(s, e);
    *commit_seconds = mono_seconds() - t0;
    if (!ok) {
        store_rollback(s);
        for (struct store_write *w = batch; w; w = w->next)
            if (w->ok) {
                w->ok = w->outbox = false;
                w->e = *e;
            }
    }
    return ok;
}

/* Take the writes queued, write them, and tell each its outcome. Called by whoever is the
 * committer at the time. */
static void run_batch(struct store_committer *c)
{
    int n;
    struct store_write *batch = take_batch(c, &n);
    if (!batch)
        return;
    struct err e;
    double commit_seconds = 0;
    if (c->hooks.lock)
        c->hooks.lock(c->hooks.cls);
    bool ok = write_batch(c, batch, &commit_seconds, &e);
    if (c->hooks.unlock)
        c->hooks.unlock(c->hooks.cls);
    if (c->hooks.figures)
        c->hooks.figures(c->hooks.cls, n, ok, commit_seconds);
    bool outbox = false;
    for (struct store_write *w = batch; w; w = w->next)
        outbox = outbox || w->outbox;
    if (outbox && c->hooks.outbox_added)
        c->hooks.outbox_added(c->hooks.cls);
    int64_t ended = mono_ns();
    pthread_mutex_lock(&c->lock);
    c->batches++;
    c->writes += (uint64_t)n;
    c->ended_ns = ended;
    pthread_mutex_unlock(&c->lock);
    if (c->hooks.answering)
        c->hooks.answering(c->hooks.cls);
    for (struct store_write *w = batch, *next; w; w = next) {
        next = w->next; /* done may free w */
        w->done(c->hooks.cls, w);
    }
    if (c->hooks.answered)
        c->hooks.answered(c->hooks.cls);
    /* The upkeep after the answers, before the next batch: no commit overtakes it. */
    if (c->upkeep && c->store->backend->upkeep_poke) {
        if (c->hooks.lock)
            c->hooks.lock(c->hooks.cls);
        c->store->backend->upkeep_poke(c->store->conn);
        if (c->hooks.unlock)
            c->hooks.unlock(c->hooks.cls);
    }
}

/* The committer thread: it takes over when a batch ends with more writes queued (so that
 * the thread that led it goes back to its own work), and runs batches until none are left. */
static void *committer_main(void *arg)
{
    thread_name("committer");
    struct store_committer *c = arg;
    pthread_mutex_lock(&c->lock);
    for (;;) {
        while (!c->handoff && !c->stop)
            pthread_cond_wait(&c->wake, &c->lock);
        if (!c->handoff)
            break; /* stopping, and nothing handed over */
        c->handoff = false;
        while (c->head) {
            pthread_mutex_unlock(&c->lock);
            run_batch(c);
            pthread_mutex_lock(&c->lock);
        }
        c->active = false;
    }
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

/* ---- The pool (shared databases) ----------------------------------------------------------- */

/* Write `w` alone in a transaction on `s` (a pool thread's connection), and tell it. */
static void pool_write(struct store_committer *c, struct store *s, struct store_write *w)
{
    if (c->hooks.lock)
        c->hooks.lock(c->hooks.cls);
    uint64_t rows = s->outbox_rows;
    bool ok = store_begin(s, &w->e) && w->run(c->hooks.cls, w, &w->e);
    w->outbox = ok && s->outbox_rows != rows;
    if (c->hooks.unlock)
        c->hooks.unlock(c->hooks.cls);
    double t0 = mono_seconds();
    ok = ok && store_commit(s, &w->e); /* (the other threads run theirs meanwhile) */
    double commit_seconds = mono_seconds() - t0;
    if (!ok) {
        store_rollback(s);
        w->outbox = false;
    }
    w->ok = ok;
    if (c->hooks.figures)
        c->hooks.figures(c->hooks.cls, 1, ok, commit_seconds);
    if (w->outbox && c->hooks.outbox_added)
        c->hooks.outbox_added(c->hooks.cls);
    pthread_mutex_lock(&c->lock);
    c->batches++;
    c->writes++;
    pthread_mutex_unlock(&c->lock);
    if (c->hooks.answering)
        c->hooks.answering(c->hooks.cls);
    w->done(c->hooks.cls, w);
    if (c->hooks.answered)
        c->hooks.answered(c->hooks.cls);
}

/* A pool thread: the writes queued, one at a time, until it is stopped and none is left. */
static void *pool_main(void *arg)
{
    thread_name("db-pool");
    struct pool_worker *pw = arg;
    struct store_committer *c = pw->c;
    store_bind(c->store, pw->s);
    pthread_mutex_lock(&c->lock);
    for (;;) {
        while (!c->head && !c->stop)
            pthread_cond_wait(&c->wake, &c->lock);
        struct store_write *w = c->head;
        if (!w)
            break;
        c->head = w->next;
        if (!c->head)
            c->tail = &c->head;
        w->next = NULL;
        pthread_mutex_unlock(&c->lock);
        pool_write(c, pw->s, w);
        pthread_mutex_lock(&c->lock);
    }
    pthread_mutex_unlock(&c->lock);
    store_bind(c->store, NULL);
    return NULL;
}

static bool pool_start(struct store_committer *c, struct err *e)
{
    int n = c->hooks.pool > 0 ? c->hooks.pool : STORE_POOL_DEFAULT;
    for (int i = 0; i < n && i < COMMIT_POOL_MAX; i++) {
        struct pool_worker *pw = &c->pool[i];
        pw->c = c;
        if (!(pw->s = store_open_durable(c->store->path, c->store->durability, e)))
            return false;
        if (pthread_create(&pw->thread, NULL, pool_main, pw) != 0)
            return err_set(e, ERR_IO, "threads", "cannot start the committer's pool");
        pw->started = true;
    }
    return true;
}

static void pool_stop(struct store_committer *c)
{
    pthread_mutex_lock(&c->lock);
    c->stop = true;
    pthread_cond_broadcast(&c->wake);
    pthread_mutex_unlock(&c->lock);
    for (int i = 0; i < COMMIT_POOL_MAX; i++) {
        if (c->pool[i].started)
            pthread_join(c->pool[i].thread, NULL); /* (they empty the queue first) */
        store_close(c->pool[i].s);
        c->pool[i] = (struct pool_worker){0};
    }
}

/* ---- Creating and stopping ----------------------------------------------------------------- */

struct store_committer *store_committer_create(struct store *s,
                                               const struct store_committer_hooks *hooks,
                                               struct err *e)
{
    struct store_committer *c = calloc(1, sizeof *c);
    if (!c) {
        err_set(e, ERR_NOMEM, "nomem", "out of memory");
        return NULL;
    }
    c->store = s;
    if (hooks)
        c->hooks = *hooks;
    c->tail = &c->head;
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->wake, NULL);
    const struct store_backend *b = s->backend;
    if (store_shared(s)) { /* the server's group commit, through the pool */
        if (!pool_start(c, e))
            goto fail;
        return c;
    }
    if (b->upkeep_start && !(c->upkeep = b->upkeep_start(s->conn, e)))
        goto fail;
    if (pthread_create(&c->thread, NULL, committer_main, c) != 0) {
        err_set(e, ERR_IO, "threads", "cannot start the committer");
        goto fail;
    }
    c->started = true;
    return c;
fail:
    store_committer_destroy(c);
    return NULL;
}

void store_committer_destroy(struct store_committer *c)
{
    if (!c)
        return;
    pool_stop(c); /* (nothing when the pool is not used) */
    pthread_mutex_lock(&c->lock);
    c->stop = true;
    pthread_cond_signal(&c->wake);
    pthread_mutex_unlock(&c->lock);
    if (c->started)
        pthread_join(c->thread, NULL); /* it empties the queue first if it was handed one */
    while (c->head) /* (a leader's hand-over that came after the thread had gone) */
        run_batch(c);
    if (c->upkeep && c->store->backend->upkeep_stop)
        c->store->backend->upkeep_stop(c->store->conn);
    pthread_mutex_destroy(&c->lock);
    pthread_cond_destroy(&c->wake);
    free(c);
}

void store_committer_submit(struct store_committer *c, struct store_write *w, bool lead)
{
    w->next = NULL;
    pthread_mutex_lock(&c->lock);
    *c->tail = w;
    c->tail = &w->next;
    if (c->pool[0].s) { /* a pool thread takes it */
        pthread_cond_signal(&c->wake);
        pthread_mutex_unlock(&c->lock);
        return;
    }
    if (c->active) { /* a batch is being written: this write goes in the next */
        pthread_mutex_unlock(&c->lock);
        return;
    }
    c->active = true;
    if (!lead || c->store->durability == STORE_DURABLE_POWER ||
        (c->ended_ns && mono_ns() - c->ended_ns < COMMIT_QUIET)) {
        /* Each batch waits for the disk: not on this thread, which has its own work to do
         * meanwhile (and would hold the hooks' lock for it, which others would wait for).
         * Nor a thread that may not lead: one that holds a lock the batch's done callbacks
         * may want. Nor, when busy, a thread with more requests to read: the committer
         * thread writes while it reads them, and then takes them all in one batch. */
        c->handoff = true;
        pthread_cond_signal(&c->wake);
        pthread_mutex_unlock(&c->lock);
        return;
    }
    /* Nobody is writing: this thread leads a batch itself, sparing a hand-over to the
     * committer thread (and the wait for it) when the service is not busy. */
    pthread_mutex_unlock(&c->lock);
    run_batch(c);
    pthread_mutex_lock(&c->lock);
    if (c->head) { /* more came meanwhile: the committer thread carries on */
        c->handoff = true;
        pthread_cond_signal(&c->wake);
    } else {
        c->active = false;
    }
    pthread_mutex_unlock(&c->lock);
}

void store_committer_figures(struct store_committer *c, struct store_commit_figures *out)
{
    pthread_mutex_lock(&c->lock);
    out->batches = c->batches;
    out->writes = c->writes;
    pthread_mutex_unlock(&c->lock);
    out->checkpoints = out->writebacks = out->asides = out->frames_inline = 0;
    if (c->upkeep && c->store->backend->upkeep_count)
        c->store->backend->upkeep_count(c->store->conn, out);
}
