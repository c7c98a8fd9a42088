/* test_commit.c - storage's group commit (storage/commit.c) on real SQLite files in a temp
 * dir, or with CARDPOST_TEST_PG=<postgresql:// address> on a PostgreSQL database emptied
 * before each test (meson test commit_pg; the checkpointer's test is SQLite's alone), with
 * real threads: a failing write's savepoint undoes only its own rows while the
 * rest of its batch commits; writes queued while a batch is written share the next one
 * (fewer batches than writes under concurrent submitters), whoever leads; done callbacks see
 * ok or the error; stopping writes everything queued; outbox rows wake the delivery workers
 * only once committed; the checkpointer copies a grown WAL back. On PostgreSQL there are no
 * batches (the server's group commit, through the committer's pool): the same writes each
 * commit in a transaction of their own, a failing one alone undone, concurrent ones all
 * committed, the figures counting one "batch" per write. A second plain connection (sqlite3
 * or libpq) counts what was written.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <libpq-fe.h>
#include <sqlite3.h>

#include "store.h"
#include "testdb.h"

/* The PostgreSQL database the tests run on (CARDPOST_TEST_PG), or NULL: SQLite files. */
static const char *pg_url;

static void pg_quiet(void *arg, const char *message)
{
    (void)arg, (void)message;
}

/* Run `sql` on its own connection to pg_url; its first value, or 0. */
static int64_t pg_exec(const char *sql)
{
    PGconn *db = PQconnectdb(pg_url);
    if (PQstatus(db) != CONNECTION_OK)
        fail_msg("connect to %s: %s", pg_url, PQerrorMessage(db));
    PQsetNoticeProcessor(db, pg_quiet, NULL);
    PGresult *r = PQexec(db, sql);
    ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
        fail_msg("%s: %s", sql, PQresultErrorMessage(r));
    int64_t v = st == PGRES_TUPLES_OK && PQntuples(r) > 0 && !PQgetisnull(r, 0, 0)
                    ? strtoll(PQgetvalue(r, 0, 0), NULL, 10)
                    : 0;
    PQclear(r);
    PQfinish(db);
    return v;
}

struct fixture {
    char dir[64];
    char path[512];
    struct store *s;
    struct store_committer *c;
    pthread_mutex_t db_lock;      /* the hooks' lock, as the service's db_lock */
    atomic_int outbox_wakes;      /* calls of the outbox_added hook */
    atomic_int hook_batches, hook_writes;  /* what the figures hook was told */
    atomic_llong hook_ns;                  /* the commits' time in all */
    atomic_int answering, answered;        /* calls of those hooks */
    pthread_mutex_t lock;         /* guards done, and the gate of a blocking write */
    pthread_cond_t cond;
    int done;                     /* done callbacks so far */
};

/* One write: a player named `name` (token hash from `n`), then with `outbox` a notification
 * for them, then with `fail` an error (its savepoint undoes both). With `gate`, run waits
 * for the test to open it (so that a batch is being written while others queue). */
struct twrite {
    struct store_write w;
    struct fixture *f;
    int n;
    bool fail, outbox, gate;
    bool seen_ok, seen_outbox;    /* what done was told */
    bool seen_answering;          /* done called between the answering and answered hooks */
    struct err seen_e;
    bool finished;
    pthread_t ran_on;             /* the thread that ran it */
    int runs;                     /* calls of its run */
};

static bool gate_started, gate_open;

static void db_lock(void *cls)
{
    pthread_mutex_lock(&((struct fixture *)cls)->db_lock);
}

static void db_unlock(void *cls)
{
    pthread_mutex_unlock(&((struct fixture *)cls)->db_lock);
}

static void outbox_added(void *cls)
{
    atomic_fetch_add(&((struct fixture *)cls)->outbox_wakes, 1);
}

/* Whether this thread is between the answering and answered hooks (a pool's threads each
 * give their own write's answer). */
static _Thread_local bool answers_open;

static void answering_hook(void *cls)
{
    assert_false(answers_open);
    answers_open = true;
    atomic_fetch_add(&((struct fixture *)cls)->answering, 1);
}

/* (The answered hook comes after the batch's done callbacks: a test that counts it waits for
 * it, as for them.) */
static void answered_hook(void *cls)
{
    struct fixture *f = cls;
    assert_true(answers_open);
    answers_open = false;
    pthread_mutex_lock(&f->lock);
    atomic_fetch_add(&f->answered, 1);
    pthread_cond_broadcast(&f->cond);
    pthread_mutex_unlock(&f->lock);
}

static bool twrite_run(void *cls, struct store_write *w, struct err *e)
{
    struct fixture *f = cls;
    struct twrite *t = (struct twrite *)w;
    t->ran_on = pthread_self();
    t->runs++;
    if (t->gate) {
        pthread_mutex_lock(&f->lock);
        gate_started = true;
        pthread_cond_broadcast(&f->cond);
        while (!gate_open)
            pthread_cond_wait(&f->cond, &f->lock);
        pthread_mutex_unlock(&f->lock);
    }
    char name[32];
    snprintf(name, sizeof name, "p%d", t->n);
    uint8_t hash[STORE_HASH_BYTES] = {0};
    memcpy(hash, &t->n, sizeof t->n);
    struct store_player p = {.name = name, .created_at = 1};
    if (!store_player_insert(f->s, &p, hash, e))
        return false;
    if (t->outbox) {
        struct store_outbox o = {.player = p.id, .channel = STORE_WEBHOOK, .body = "{}",
                                 .next_attempt = 1, .created_at = 1};
        snprintf(o.type, sizeof o.type, "turn");
        snprintf(o.webhook_id, sizeof o.webhook_id, "msg_%d", t->n);
        if (!store_outbox_add(f->s, &o, e))
            return false;
    }
    if (t->fail)
        return err_set(e, ERR_CONFLICT, "refused", "write %d refused", t->n);
    return true;
}

static void twrite_done(void *cls, struct store_write *w)
{
    struct fixture *f = cls;
    struct twrite *t = (struct twrite *)w;
    t->seen_ok = w->ok;
    t->seen_outbox = w->outbox;
    t->seen_e = w->e;
    t->seen_answering = answers_open;
    pthread_mutex_lock(&f->lock);
    t->finished = true;
    f->done++;
    pthread_cond_broadcast(&f->cond);
    pthread_mutex_unlock(&f->lock);
}

static void twrite_init(struct twrite *t, struct fixture *f, int n)
{
    *t = (struct twrite){.w = {.run = twrite_run, .done = twrite_done}, .f = f, .n = n};
}

static void wait_done(struct fixture *f, int n)
{
    pthread_mutex_lock(&f->lock);
    while (f->done < n)
        pthread_cond_wait(&f->cond, &f->lock);
    pthread_mutex_unlock(&f->lock);
}

static void wait_answered(struct fixture *f, int n)
{
    pthread_mutex_lock(&f->lock);
    while (atomic_load(&f->answered) < n)
        pthread_cond_wait(&f->cond, &f->lock);
    pthread_mutex_unlock(&f->lock);
}

/* The figures hook: each batch's writes and its commit's time, added up. */
static void figures_hook(void *cls, int writes, bool ok, double commit_seconds)
{
    struct fixture *f = cls;
    (void)ok;
    atomic_fetch_add(&f->hook_batches, 1);
    atomic_fetch_add(&f->hook_writes, writes);
    atomic_fetch_add(&f->hook_ns, (long long)(commit_seconds * 1e9));
}

/* A committer on a fresh database with durability `d`. */
static void start(struct fixture *f, enum store_durability d)
{
    struct err e;
    f->s = store_open_durable(f->path, d, &e);
    assert_non_null(f->s);
    struct store_committer_hooks hooks = {
        .cls = f, .lock = db_lock, .unlock = db_unlock, .outbox_added = outbox_added,
        .figures = figures_hook, .answering = answering_hook, .answered = answered_hook};
    f->c = store_committer_create(f->s, &hooks, &e);
    assert_non_null(f->c);
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    snprintf(f->dir, sizeof f->dir, "/tmp/test_commit.XXXXXX");
    if (!mkdtemp(f->dir)) {
        free(f);
        return -1;
    }
    snprintf(f->path, sizeof f->path, "%s/cardpost.db", f->dir);
    if (pg_url) { /* a fresh, empty database for each test */
        pg_exec("DROP SCHEMA public CASCADE; CREATE SCHEMA public");
        snprintf(f->path, sizeof f->path, "%s", pg_url);
    }
    pthread_mutex_init(&f->db_lock, NULL);
    pthread_mutex_init(&f->lock, NULL);
    pthread_cond_init(&f->cond, NULL);
    gate_started = gate_open = false;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    store_committer_destroy(f->c);
    store_close(f->s);
    if (!pg_url)
        tdb_remove(f->path);
    rmdir(f->dir);
    pthread_mutex_destroy(&f->db_lock);
    pthread_mutex_destroy(&f->lock);
    pthread_cond_destroy(&f->cond);
    free(f);
    return 0;
}

/* One integer from `sql` run on a separate connection to the same database. */
static int64_t peek_int(const struct fixture *f, const char *sql)
{
    if (pg_url)
        return pg_exec(sql);
    sqlite3 *db;
    assert_int_equal(sqlite3_open_v2(f->path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

static int64_t players_named(const struct fixture *f, int n)
{
    char sql[96];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM players WHERE name = 'p%d'", n);
    return peek_int(f, sql);
}

static struct store_commit_figures figures(struct fixture *f)
{
    struct store_commit_figures k;
    store_committer_figures(f->c, &k);
    return k;
}

static void *submit_one(void *arg)
{
    struct twrite *t = arg;
    store_committer_submit(t->f->c, &t->w, true);
    return NULL;
}

/* Write 0 leads a batch from a thread of its own and holds it open until writes 1 to 3 are
 * queued: they share the next batch, which the committer thread writes. Write 2 fails: its
 * savepoint undoes its player and its outbox row, and writes 1 and 3 commit all the same
 * (the batch was written first without savepoints, rolled back at write 2, and written again
 * with a savepoint a write: writes 1 and 2 ran twice, and their first runs left nothing);
 * each done callback hears its own outcome, between the answering and answered hooks that
 * come once a batch. On PostgreSQL the pool's threads write each in
 * a transaction of its own (writes 1 to 3 wait for the hooks' lock that write 0 holds): the
 * same outcomes, in four commits. */
static void test_failing_write_undone_alone(void **state)
{
    struct fixture *f = *state;
    start(f, STORE_DURABLE_CRASH);
    struct twrite t[4];
    for (int i = 0; i < 4; i++)
        twrite_init(&t[i], f, i);
    t[0].gate = true;
    t[1].outbox = t[2].outbox = true;
    t[2].fail = true;
    pthread_t leader;
    assert_int_equal(pthread_create(&leader, NULL, submit_one, &t[0]), 0);
    pthread_mutex_lock(&f->lock);
    while (!gate_started)
        pthread_cond_wait(&f->cond, &f->lock);
    pthread_mutex_unlock(&f->lock);
    for (int i = 1; i < 4; i++)
        store_committer_submit(f->c, &t[i].w, true); /* (a batch is being written: queued) */
    assert_int_equal(f->done, 0);
    pthread_mutex_lock(&f->lock);
    gate_open = true;
    pthread_cond_broadcast(&f->cond);
    pthread_mutex_unlock(&f->lock);
    pthread_join(leader, NULL);
    wait_done(f, 4);

    assert_true(t[0].seen_ok && t[1].seen_ok && t[3].seen_ok);
    assert_false(t[2].seen_ok);
    assert_int_equal(t[0].runs, 1);
    for (int i = 1; i < 4; i++) /* (the first pass stopped at write 2) */
        assert_int_equal(t[i].runs, pg_url || i == 3 ? 1 : 2);
    assert_int_equal(t[2].seen_e.code, ERR_CONFLICT);
    assert_string_equal(t[2].seen_e.tag, "refused");
    assert_string_equal(t[2].seen_e.msg, "write 2 refused");
    assert_true(t[1].seen_outbox);
    assert_false(t[0].seen_outbox || t[2].seen_outbox || t[3].seen_outbox);
    for (int i = 0; i < 4; i++)
        assert_int_equal(players_named(f, i), i == 2 ? 0 : 1);
    assert_int_equal(peek_int(f, "SELECT count(*) FROM outbox_all"), 1);
    assert_int_equal(peek_int(f, "SELECT count(*) FROM outbox_all WHERE webhook_id = 'msg_1'"), 1);
    struct store_commit_figures k = figures(f);
    assert_int_equal(k.batches, pg_url ? 4 : 2);
    assert_int_equal(k.writes, 4);
    assert_int_equal(atomic_load(&f->outbox_wakes), 1); /* (write 1's row committed) */
    /* Every answer was given between the answering and answered hooks, which came once a
     * batch (the service wakes the threads a batch's answers concern once, after them). */
    for (int i = 0; i < 4; i++)
        assert_true(t[i].seen_answering);
    wait_answered(f, pg_url ? 4 : 2);
    assert_int_equal(atomic_load(&f->answering), pg_url ? 4 : 2);
    assert_int_equal(atomic_load(&f->answered), pg_url ? 4 : 2);
}

/* A failing write that added outbox rows wakes nobody: its rows were undone. (On SQLite a
 * write submitted while nobody writes, and none has written for a millisecond, is written
 * on the submitting thread, done before the submit returns; on PostgreSQL a pool's thread
 * writes it: waited for. The second may go to the committer thread: waited for.) */
static void test_undone_outbox_wakes_nobody(void **state)
{
    struct fixture *f = *state;
    start(f, STORE_DURABLE_CRASH);
    struct twrite t;
    twrite_init(&t, f, 7);
    t.outbox = t.fail = true;
    store_committer_submit(f->c, &t.w, true); /* (nobody writing: written on this thread) */
    if (pg_url)
        wait_done(f, 1);
    assert_true(t.finished);
    assert_false(t.seen_ok || t.seen_outbox);
    assert_int_equal(atomic_load(&f->outbox_wakes), 0);
    assert_int_equal(peek_int(f, "SELECT count(*) FROM outbox_all"), 0);
    twrite_init(&t, f, 8);
    t.outbox = true;
    store_committer_submit(f->c, &t.w, true);
    wait_done(f, 2);
    assert_true(t.finished && t.seen_ok && t.seen_outbox);
    assert_int_equal(atomic_load(&f->outbox_wakes), 1);
}

/* SQLite, durable to a crash: a write submitted while nobody writes is written on the
 * submitting thread when the service is quiet (the first, and one a few milliseconds after
 * the last batch), and by the committer thread when a batch ended less than a millisecond
 * ago (busy: the submitting thread goes back to its requests, and the committer takes the
 * next ones with it). A submit right after a batch goes to the committer thread in one of
 * twenty tries at least (each would need the machine to stall the test for a millisecond
 * between the two). */
static void test_busy_writes_go_to_the_committer(void **state)
{
    struct fixture *f = *state;
    if (pg_url)
        skip();
    start(f, STORE_DURABLE_CRASH);
    struct twrite a, b;
    bool handed = false;
    int done = 0;
    for (int i = 0; i < 20 && !handed; i++) {
        struct timespec quiet = {0, 5 * 1000 * 1000};
        nanosleep(&quiet, NULL);
        twrite_init(&a, f, 100 + 2 * i);
        store_committer_submit(f->c, &a.w, true);
        assert_true(a.finished); /* (quiet: on this thread) */
        assert_true(pthread_equal(a.ran_on, pthread_self()));
        twrite_init(&b, f, 101 + 2 * i);
        store_committer_submit(f->c, &b.w, true);
        done += 2;
        wait_done(f, done);
        assert_true(b.seen_ok);
        handed = !pthread_equal(b.ran_on, pthread_self());
    }
    assert_true(handed);
}

#define SUBMITTERS 8
#define EACH 40

struct submitter {
    struct fixture *f;
    int first;
    struct twrite t[EACH];
};

/* Submit EACH writes one after the other, each waited for (as a request waits for its
 * move), each holding its batch a little (as a disk would). */
static bool slow_run(void *cls, struct store_write *w, struct err *e)
{
    struct timespec nap = {0, 300 * 1000};
    nanosleep(&nap, NULL);
    return twrite_run(cls, w, e);
}

static void *submitter_main(void *arg)
{
    struct submitter *s = arg;
    for (int i = 0; i < EACH; i++) {
        struct twrite *t = &s->t[i];
        twrite_init(t, s->f, s->first + i);
        t->w.run = slow_run;
        store_committer_submit(s->f->c, &t->w, true);
        pthread_mutex_lock(&s->f->lock);
        while (!t->finished)
            pthread_cond_wait(&s->f->cond, &s->f->lock);
        pthread_mutex_unlock(&s->f->lock);
    }
    return NULL;
}

/* SUBMITTERS threads submitting EACH writes each, all finished on return. */
static struct submitter *submit_from_threads(struct fixture *f)
{
    static struct submitter sub[SUBMITTERS];
    pthread_t th[SUBMITTERS];
    for (int i = 0; i < SUBMITTERS; i++) {
        sub[i] = (struct submitter){.f = f, .first = i * EACH};
        assert_int_equal(pthread_create(&th[i], NULL, submitter_main, &sub[i]), 0);
    }
    for (int i = 0; i < SUBMITTERS; i++)
        pthread_join(th[i], NULL);
    return sub;
}

static void concurrent(struct fixture *f, enum store_durability d)
{
    start(f, d);
    struct submitter *sub = submit_from_threads(f);
    for (int i = 0; i < SUBMITTERS; i++)
        for (int j = 0; j < EACH; j++) {
            assert_true(sub[i].t[j].seen_ok);
            assert_int_equal(sub[i].t[j].runs, 1); /* (no write failed: no savepoints) */
        }
    assert_int_equal(peek_int(f, "SELECT count(*) FROM players"), SUBMITTERS * EACH);
    struct store_commit_figures k = figures(f);
    assert_int_equal(k.writes, SUBMITTERS * EACH);
    if (pg_url) /* each write its own transaction: the server groups the commits */
        assert_int_equal(k.batches, k.writes);
    else
        assert_true(k.batches < k.writes);
    /* The figures hook heard of every batch and write, each commit timed. */
    assert_int_equal(f->hook_batches, k.batches);
    assert_int_equal(f->hook_writes, k.writes);
    assert_true(f->hook_ns > 0);
    fprintf(stderr, "%s: %llu writes in %llu batches\n",
            d == STORE_DURABLE_POWER ? "power" : "crash", (unsigned long long)k.writes,
            (unsigned long long)k.batches);
}

/* Writes queued while a batch is being written are written together (on PostgreSQL: all
 * committed, each alone, several at once on the pool's connections). */
static void test_concurrent_writes_share_batches(void **state)
{
    concurrent(*state, STORE_DURABLE_CRASH);
}

/* The same when the committer thread writes every batch. */
static void test_concurrent_writes_share_batches_power(void **state)
{
    concurrent(*state, STORE_DURABLE_POWER);
}

static void *destroy_main(void *arg)
{
    struct fixture *f = arg;
    store_committer_destroy(f->c);
    return NULL;
}

/* Stopping writes everything queued: the committer thread is held in a batch (its lock
 * taken) while more writes queue, and the stop comes before it may go on. */
static void test_stop_writes_everything_queued(void **state)
{
    struct fixture *f = *state;
    start(f, STORE_DURABLE_POWER);
    enum { N = 50 };
    static struct twrite t[N];
    pthread_mutex_lock(&f->db_lock);
    for (int i = 0; i < N; i++) {
        twrite_init(&t[i], f, i);
        store_committer_submit(f->c, &t[i].w, true);
    }
    pthread_t stopper;
    assert_int_equal(pthread_create(&stopper, NULL, destroy_main, f), 0);
    struct timespec nap = {0, 50 * 1000 * 1000};
    nanosleep(&nap, NULL);
    assert_int_equal(f->done, 0);
    pthread_mutex_unlock(&f->db_lock);
    pthread_join(stopper, NULL);
    f->c = NULL;
    assert_int_equal(f->done, N);
    for (int i = 0; i < N; i++)
        assert_true(t[i].seen_ok);
    assert_int_equal(peek_int(f, "SELECT count(*) FROM players"), N);
}

/* A setting of `n` zero bytes, written in one write. */
static bool blob_put(struct fixture *f, const char *key, size_t n, struct err *e)
{
    char *blob = calloc(1, n);
    if (!blob)
        return err_set(e, ERR_NOMEM, "nomem", "out of memory");
    bool ok = store_setting_put(f->s, key, blob, n, e);
    free(blob);
    return ok;
}

/* Enough written to grow the WAL past the checkpoints' threshold: it is copied back into
 * the database, and the figures count it. */
static bool big_run(void *cls, struct store_write *w, struct err *e)
{
    (void)w;
    return blob_put(cls, "big", 68 << 20, e); /* (past CHECKPOINT_FRAMES: 16,000 pages of 4 KiB) */
}

/* The figures once `writebacks` and `asides` have been counted (the upkeep runs after a
 * batch's writes are answered, by the committer thread; a copy aside on a thread of its
 * own: they may still be running), or after 5 s; then a little later, to see that no more
 * come. */
static struct store_commit_figures upkept(struct fixture *f, uint64_t writebacks,
                                          uint64_t asides)
{
    struct store_commit_figures k = figures(f);
    for (int i = 0; i < 500 && (k.writebacks < writebacks || k.asides < asides); i++) {
        struct timespec nap = {0, 10 * 1000 * 1000};
        nanosleep(&nap, NULL);
        k = figures(f);
    }
    struct timespec settle = {0, 20 * 1000 * 1000};
    nanosleep(&settle, NULL);
    return figures(f);
}

static bool mib_run(void *cls, struct store_write *w, struct err *e)
{
    (void)w;
    return blob_put(cls, "mib", 1 << 20, e); /* (past WAL_KICK_FRAMES: 256 pages of 4 KiB) */
}

/* Write `n` with `run`, submitted as a request would and waited for (the `done`th write
 * done): it succeeded. */
static void write_waited(struct fixture *f, struct twrite *t, int n,
                         bool (*run)(void *, struct store_write *, struct err *), int done)
{
    twrite_init(t, f, n);
    t->w.run = run;
    store_committer_submit(f->c, &t->w, true);
    wait_done(f, done);
    assert_true(t->seen_ok);
}

/* A grown WAL is copied back by a connection and a thread of their own while the commits go
 * on; the committer copies only what came meanwhile itself, between two batches, where no
 * commit can overtake the copy, and the next commit starts the WAL over. Here the 68 MiB
 * write's 17,000 frames are copied aside, and the committer copies at most the small
 * writes' (before, it copied them all between two batches, and every write waited). */
static void test_checkpointer(void **state)
{
    struct fixture *f = *state;
    if (pg_url)
        skip(); /* SQLite's WAL; PostgreSQL checkpoints by itself */
    start(f, STORE_DURABLE_POWER);
    struct twrite t, after[2];
    write_waited(f, &t, -1, big_run, 1);
    submit_from_threads(f); /* (while it is copied aside, or after) */
    struct store_commit_figures k = upkept(f, 0, 1);
    assert_int_equal(k.asides, 1);
    /* A batch whose upkeep copies the rest (if commits came during the copy), then one
     * whose commit starts the WAL over. */
    write_waited(f, &after[0], -2, twrite_run, 2 + SUBMITTERS * EACH);
    write_waited(f, &after[1], -3, twrite_run, 3 + SUBMITTERS * EACH);
    k = figures(f);
    fprintf(stderr, "%llu batches, %llu copies aside, %llu checkpoints copying %llu frames\n",
            (unsigned long long)k.batches, (unsigned long long)k.asides,
            (unsigned long long)k.checkpoints, (unsigned long long)k.frames_inline);
    assert_true(k.batches > 2);
    assert_int_equal(k.asides, 1);
    assert_true(k.checkpoints <= 1);
    assert_true(k.frames_inline < 1000);
    assert_int_equal(k.writebacks, 0); /* (its commits sync the WAL themselves) */
    /* The WAL started over: it holds the small commits' frames alone. */
    sqlite3 *db;
    assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "SELECT count(*) FROM players", NULL, NULL, NULL),
                     SQLITE_OK); /* (it opens the WAL) */
    int frames = -1, copied = -1;
    assert_int_equal(
        sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_PASSIVE, &frames, &copied),
        SQLITE_OK);
    sqlite3_close(db);
    fprintf(stderr, "the WAL holds %d frames\n", frames);
    assert_true(frames >= 0 && frames < 1000);
}

/* A 20 MiB write (5,120 frames and more: past the 4,000 frames the checkpoints waited for
 * before, short of CHECKPOINT_FRAMES) is left in the WAL: no checkpoint copies it back. */
static bool mid_run(void *cls, struct store_write *w, struct err *e)
{
    (void)w;
    return blob_put(cls, "mid", 20 << 20, e);
}

static void test_checkpoint_waits_for_16000_frames(void **state)
{
    struct fixture *f = *state;
    if (pg_url)
        skip();
    start(f, STORE_DURABLE_POWER);
    struct twrite t;
    write_waited(f, &t, -1, mid_run, 1);
    write_waited(f, &t, 1, twrite_run, 2); /* (a batch after it: the upkeep ran between) */
    struct timespec settle = {0, 200 * 1000 * 1000}; /* (an upkeep under way is counted) */
    nanosleep(&settle, NULL);
    assert_int_equal(figures(f).asides, 0);
    assert_int_equal(figures(f).checkpoints, 0);
}

/* Durable to a crash, commits do not sync the WAL: the upkeep starts its writeback as it
 * grows (about every MiB), so that a checkpoint's sync does not wait for the whole WAL at
 * once. A 1 MiB write: one writeback and no checkpoint; then the 68 MiB one: one more
 * writeback, then its copy aside. */
static void test_crash_wal_written_back(void **state)
{
    struct fixture *f = *state;
    if (pg_url)
        skip();
    start(f, STORE_DURABLE_CRASH);
    struct twrite t;
    write_waited(f, &t, -1, mib_run, 1);
    struct store_commit_figures k = upkept(f, 1, 0);
    assert_int_equal(k.writebacks, 1);
    assert_int_equal(k.asides, 0);
    write_waited(f, &t, -2, big_run, 2);
    k = upkept(f, 2, 1);
    assert_int_equal(k.writebacks, 2);
    assert_int_equal(k.asides, 1);
}

int main(void)
{
    pg_url = getenv("CARDPOST_TEST_PG");
    if (pg_url && !*pg_url)
        pg_url = NULL;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_failing_write_undone_alone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_undone_outbox_wakes_nobody, setup, teardown),
        cmocka_unit_test_setup_teardown(test_busy_writes_go_to_the_committer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_writes_share_batches, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_writes_share_batches_power, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_stop_writes_everything_queued, setup, teardown),
        cmocka_unit_test_setup_teardown(test_checkpointer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_checkpoint_waits_for_16000_frames, setup, teardown),
        cmocka_unit_test_setup_teardown(test_crash_wal_written_back, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
