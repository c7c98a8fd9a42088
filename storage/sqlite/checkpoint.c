/* checkpoint.c - the WAL's checkpointer: the SQLite backend's upkeep of the connection that
 * writes group commits (backend.h). Commits on that connection no longer copy the WAL back
 * into the database themselves (wal_autocheckpoint=0), which would stall the batch that
 * crossed the threshold; a thread with a connection of its own does it instead, a PASSIVE
 * checkpoint (as far as readers allow) whenever the WAL has grown past CHECKPOINT_FRAMES,
 * checked after every batch (sqlite_upkeep_poke) and once a second for the commits that do
 * not go through the committer.
 */
#include "sqlite-int.h"
#include "lock.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* Four times SQLite's own default for its automatic checkpoints (16 MiB of WAL): a page a
 * move rewrites (its match's row, the newest page of its events) is copied back once per
 * checkpoint, however many commits wrote it, so fewer checkpoints copy fewer pages a move
 * (docs/benchmarks.md "Streams written straight to their sockets"). */
#define CHECKPOINT_FRAMES 4000

struct sqlite_checkpointer {
    struct store_conn *conn;      /* its own connection */
    pthread_mutex_t lock;         /* guards stop, checkpoints; wake's */
    pthread_cond_t wake;
    bool stop;
    uint64_t checkpoints;
    atomic_int wal_frames;        /* after the writer's last commit (its WAL hook) */
    pthread_t thread;
};

/* sqlite3_wal_hook: count the frames the WAL holds after each commit. */
static int wal_frames(void *arg, sqlite3 *db, const char *name, int frames)
{
    (void)db, (void)name;
    atomic_store((atomic_int *)arg, frames);
    return SQLITE_OK;
}

static void *checkpointer_main(void *arg)
{
    thread_name("checkpointer");
    struct sqlite_checkpointer *k = arg;
    pthread_mutex_lock(&k->lock);
    while (!k->stop) {
        if (atomic_load(&k->wal_frames) < CHECKPOINT_FRAMES) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_sec += 1;
            pthread_cond_timedwait(&k->wake, &k->lock, &until);
            continue;
        }
        atomic_store(&k->wal_frames, 0); /* (the next commit says how many are left) */
        pthread_mutex_unlock(&k->lock);
        if (sqlite3_wal_checkpoint_v2(k->conn->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL,
                                      NULL) != SQLITE_OK)
            fprintf(stderr, "cardpostd: checkpoint: %s\n", sqlite3_errmsg(k->conn->db));
        pthread_mutex_lock(&k->lock);
        k->checkpoints++;
    }
    pthread_mutex_unlock(&k->lock);
    return NULL;
}

bool sqlite_upkeep_start(struct store_conn *s, const char *path, struct err *e)
{
    struct sqlite_checkpointer *k = calloc(1, sizeof *k);
    if (!k)
        return err_set(e, ERR_NOMEM, "nomem", "out of memory");
    pthread_mutex_init(&k->lock, NULL);
    pthread_cond_init(&k->wake, NULL);
    char *msg = NULL;
    if (!(k->conn = sqlite_open_durable(path, STORE_DURABLE_CRASH, e)))
        goto fail;
    if (sqlite3_exec(s->db, "PRAGMA wal_autocheckpoint=0;", NULL, NULL, &msg) != SQLITE_OK) {
        err_set(e, ERR_IO, "sqlite", "%s", msg ? msg : "wal_autocheckpoint failed");
        sqlite3_free(msg);
        goto fail;
    }
    sqlite3_wal_hook(s->db, wal_frames, &k->wal_frames);
    if (pthread_create(&k->thread, NULL, checkpointer_main, k) != 0) {
        sqlite3_wal_hook(s->db, NULL, NULL);
        err_set(e, ERR_IO, "threads", "cannot start the checkpointer");
        goto fail;
    }
    s->checkpointer = k;
    return true;
fail:
    sqlite_close(k->conn);
    pthread_mutex_destroy(&k->lock);
    pthread_cond_destroy(&k->wake);
    free(k);
    return false;
}

void sqlite_upkeep_poke(struct store_conn *s)
{
    struct sqlite_checkpointer *k = s->checkpointer;
    if (!k || atomic_load(&k->wal_frames) < CHECKPOINT_FRAMES)
        return;
    pthread_mutex_lock(&k->lock);
    pthread_cond_signal(&k->wake);
    pthread_mutex_unlock(&k->lock);
}

uint64_t sqlite_upkeep_count(struct store_conn *s)
{
    struct sqlite_checkpointer *k = s->checkpointer;
    if (!k)
        return 0;
    pthread_mutex_lock(&k->lock);
    uint64_t n = k->checkpoints;
    pthread_mutex_unlock(&k->lock);
    return n;
}

void sqlite_upkeep_stop(struct store_conn *s)
{
    struct sqlite_checkpointer *k = s->checkpointer;
    if (!k)
        return;
    pthread_mutex_lock(&k->lock);
    k->stop = true;
    pthread_cond_signal(&k->wake);
    pthread_mutex_unlock(&k->lock);
    pthread_join(k->thread, NULL);
    sqlite3_wal_hook(s->db, NULL, NULL);
    s->checkpointer = NULL;
    sqlite_close(k->conn);
    pthread_mutex_destroy(&k->lock);
    pthread_cond_destroy(&k->wake);
    free(k);
}
