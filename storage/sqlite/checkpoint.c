/* checkpoint.c - the WAL's checkpoints: the SQLite backend's upkeep of the connection that
 * writes group commits (backend.h). Commits on that connection no longer copy the WAL back
 * into the database themselves (wal_autocheckpoint=0), which would stall the commit that
 * crossed the threshold before it is answered. Once the WAL has grown past
 * CHECKPOINT_FRAMES, a connection and a thread of their own copy it back (a PASSIVE
 * checkpoint: the copy aside) while the commits go on; then whoever runs the batches copies
 * what came meanwhile itself, between two batches (sqlite_upkeep_poke, after the first one's
 * writes are answered), and the next commit starts the WAL over.
 *
 * Between two batches, because no commit can overtake it there: a checkpoint must have
 * copied the last frame for the WAL to start over, and one racing the commits never does.
 * From a thread of its own alone (until issue 18) the WAL stayed past the threshold, and a
 * checkpoint ran after nearly every commit, each with two fdatasyncs of its own competing
 * with the commits' (docs/benchmarks.md "One checkpoint per 4,000 frames"). Between two
 * batches alone, every batch waited for the whole copy, 4 ms under load twice a second, and
 * with them the moves of every match: half of the slowest hundredth of the moves were those
 * (docs/benchmarks.md "A checkpoint copied aside"). Now the copy between two batches is the
 * hundred or so frames of the copy aside's own time. If a reader held the WAL (it did not
 * start over), the next copy waits until CHECKPOINT_AGAIN more frames have come, not the
 * next batch. The database grows by DB_CHUNK at a time, so that a checkpoint's sync seldom
 * has its size to write too.
 *
 * With STORE_DURABLE_CRASH (synchronous=NORMAL) commits do not sync the WAL: a checkpoint
 * does, before it copies the frames back, and so it waited for the disk to take the whole
 * WAL at once, 16 MiB written since the last one (at 4,000 frames then): 15 to 24 ms in
 * which no batch ran, against 3 ms with STORE_DURABLE_POWER, whose commits had synced their
 * frames one by one. So, with crash durability, the upkeep starts the writeback of the WAL
 * every WAL_KICK_FRAMES frames (sync_file_range, which does not wait for it), and the
 * checkpoint's sync finds little left to write (docs/benchmarks.md "Webhook claims by
 * destination; crash durability's batches").
 */
#define _GNU_SOURCE /* sync_file_range */
#include "sqlite-int.h"

#include "lock.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Sixteen times SQLite's own default for its automatic checkpoints (64 MiB of WAL): a page
 * a move rewrites (its match's row, the newest page of its events) is copied back once per
 * checkpoint, however many commits wrote it, so fewer checkpoints copy fewer pages a move
 * (docs/benchmarks.md "Streams written straight to their sockets"). At 4,000 frames the
 * committer read and wrote twice the pages a move, and stopped for a checkpoint (2.8 ms)
 * every 150 ms under load, in which 4 in 100 moves waited but 41 of the slowest 100
 * (docs/benchmarks.md "A load generator without libcurl"). */
#define CHECKPOINT_FRAMES 16000
#define CHECKPOINT_AGAIN 4000
/* After a copy aside, the writer copies the rest itself if at most this many frames came
 * meanwhile (about a hundred under load); more, and the next copy is aside again. */
#define FINISH_FRAMES 4000
/* The database file grows by this much at a time (SQLITE_FCNTL_CHUNK_SIZE, on both
 * connections that copy into it): a checkpoint that extends the file has its sync wait for
 * the new size too (1.3 to 2.1 ms against 0.7 to 1.1 without, under load), and the database
 * grows about 450 KB a second under load. */
#define DB_CHUNK (4 << 20)
/* About a MiB of WAL (4 KiB pages). */
#define WAL_KICK_FRAMES 256

struct sqlite_checkpointer {
    atomic_int wal_frames;        /* after the writer's last commit (its WAL hook) */
    int frames_then;              /* wal_frames at the last checkpoint (0: none since the WAL
                                   * started over); read and written only between batches,
                                   * which run one at a time */
    atomic_uint_fast64_t checkpoints, writebacks, asides, frames_inline;
    int wal_fd;                   /* synchronous=NORMAL: the WAL, to start its writeback
                                   * (-1: synchronous=FULL, or it could not be opened) */
    int kicked;                   /* wal_frames at its last start (between batches) */
    /* The copy aside: a connection and a thread of its own (NULL: none, a database in
     * memory or one it could not open; the checkpoints are then the writer's alone). */
    sqlite3 *aside;
    pthread_t thread;
    pthread_mutex_t lock;         /* guards what follows */
    pthread_cond_t wake;
    enum { ASIDE_IDLE, ASIDE_ASKED, ASIDE_DONE } state;
    int aside_copied;             /* frames of the WAL copied back after the last copy aside
                                   * (its pnCkpt) */
    bool stop;
};

/* The WAL's own descriptor when commits do not sync it (synchronous=NORMAL), or -1. */
static int wal_to_kick(struct store_conn *s)
{
    const char *db = sqlite3_db_filename(s->db, "main");
    if (s->commits_sync || !db || !db[0])
        return -1;
    return open(sqlite3_filename_wal(db), O_RDONLY | O_CLOEXEC);
}

/* sqlite3_wal_hook: count the frames the WAL holds after each commit. */
static int wal_frames(void *arg, sqlite3 *db, const char *name, int frames)
{
    (void)db, (void)name;
    atomic_store((atomic_int *)arg, frames);
    return SQLITE_OK;
}

/* The thread that copies aside: a PASSIVE checkpoint on its own connection whenever asked.
 * It takes no lock of the service's: SQLite's own (the WAL index's) keep it and the
 * writer's commits apart, and commits go on while it copies. */
static void *aside_main(void *arg)
{
    thread_name("checkpoint");
    struct sqlite_checkpointer *k = arg;
    pthread_mutex_lock(&k->lock);
    for (;;) {
        while (k->state != ASIDE_ASKED && !k->stop)
            pthread_cond_wait(&k->wake, &k->lock);
        if (k->stop)
            break;
        pthread_mutex_unlock(&k->lock);
        int frames = 0, copied = 0;
        if (sqlite3_wal_checkpoint_v2(k->aside, NULL, SQLITE_CHECKPOINT_PASSIVE, &frames,
                                      &copied) != SQLITE_OK) {
            fprintf(stderr, "cardpostd: checkpoint aside: %s\n", sqlite3_errmsg(k->aside));
            copied = 0;
        }
        atomic_fetch_add(&k->asides, 1);
        pthread_mutex_lock(&k->lock);
        k->aside_copied = copied;
        k->state = ASIDE_DONE;
    }
    pthread_mutex_unlock(&k->lock);
    return NULL;
}

/* Have `db`'s database file grow DB_CHUNK at a time when this connection extends it. */
static void grow_in_chunks(sqlite3 *db)
{
    int chunk = DB_CHUNK;
    sqlite3_file_control(db, "main", SQLITE_FCNTL_CHUNK_SIZE, &chunk);
}

/* The connection that copies aside, to the writer's database with its durability (a
 * checkpoint syncs the WAL before it copies, the database after), with the WAL open (a
 * first read opens it: a checkpoint on a connection that has read nothing does nothing).
 * It runs no statement: no page cache, no lookaside (SQLite's 120 KB of slots for a
 * connection's small allocations), no schema read. */
static sqlite3 *aside_open(struct store_conn *s)
{
    const char *path = sqlite3_db_filename(s->db, "main");
    sqlite3 *db = NULL;
    if (!path || !path[0] ||
        sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) !=
            SQLITE_OK ||
        sqlite3_db_config(db, SQLITE_DBCONFIG_LOOKASIDE, NULL, 0, 0) != SQLITE_OK ||
        sqlite3_exec(db,
                     s->commits_sync ? "PRAGMA synchronous=FULL; PRAGMA cache_size=0;"
                                     : "PRAGMA synchronous=NORMAL; PRAGMA cache_size=0;",
                     NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_exec(db, "PRAGMA user_version", NULL, NULL, NULL) != SQLITE_OK) {
        sqlite3_close(db);
        return NULL;
    }
    grow_in_chunks(db);
    return db;
}

bool sqlite_upkeep_start(struct store_conn *s, struct err *e)
{
    struct sqlite_checkpointer *k = calloc(1, sizeof *k);
    if (!k)
        return err_set(e, ERR_NOMEM, "nomem", "out of memory");
    char *msg = NULL;
    if (sqlite3_exec(s->db, "PRAGMA wal_autocheckpoint=0;", NULL, NULL, &msg) != SQLITE_OK) {
        err_set(e, ERR_IO, "sqlite", "%s", msg ? msg : "wal_autocheckpoint failed");
        sqlite3_free(msg);
        free(k);
        return false;
    }
    k->wal_fd = wal_to_kick(s);
    grow_in_chunks(s->db);
    pthread_mutex_init(&k->lock, NULL);
    pthread_cond_init(&k->wake, NULL);
    k->aside = aside_open(s);
    if (k->aside && pthread_create(&k->thread, NULL, aside_main, k) != 0) {
        sqlite3_close(k->aside);
        k->aside = NULL;
    }
    sqlite3_wal_hook(s->db, wal_frames, &k->wal_frames);
    s->checkpointer = k;
    return true;
}

/* A PASSIVE checkpoint on the writer itself, between two batches; the frames it copies past
 * `copied` (what a copy aside left) are counted in frames_inline. */
static void checkpoint_here(struct store_conn *s, struct sqlite_checkpointer *k, int copied)
{
    int frames = 0, now = 0;
    if (sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_PASSIVE, &frames, &now) !=
        SQLITE_OK)
        fprintf(stderr, "cardpostd: checkpoint: %s\n", sqlite3_errmsg(s->db));
    if (now > copied)
        atomic_fetch_add(&k->frames_inline, (uint_fast64_t)(now - copied));
    atomic_fetch_add(&k->checkpoints, 1);
}

void sqlite_upkeep_poke(struct store_conn *s)
{
    struct sqlite_checkpointer *k = s->checkpointer;
    if (!k)
        return;
    int frames = atomic_load(&k->wal_frames);
    if (frames < k->kicked) /* (it started over) */
        k->kicked = 0;
    if (k->wal_fd >= 0 && frames - k->kicked >= WAL_KICK_FRAMES) {
        sync_file_range(k->wal_fd, 0, 0, SYNC_FILE_RANGE_WRITE);
        k->kicked = frames;
        atomic_fetch_add(&k->writebacks, 1);
    }
    pthread_mutex_lock(&k->lock);
    if (k->state == ASIDE_ASKED) { /* (a copy aside under way: commits go on) */
        pthread_mutex_unlock(&k->lock);
        return;
    }
    bool done = k->state == ASIDE_DONE;
    int copied = k->aside_copied;
    k->state = ASIDE_IDLE;
    if (frames < CHECKPOINT_FRAMES) {
        pthread_mutex_unlock(&k->lock);
        k->frames_then = 0; /* (it started over) */
        return;
    }
    if (done) { /* the rest here, if little came since: then the WAL starts over */
        pthread_mutex_unlock(&k->lock);
        if (frames - copied <= FINISH_FRAMES)
            checkpoint_here(s, k, copied);
        k->frames_then = frames;
        return;
    }
    if (k->frames_then > 0 && frames < k->frames_then + CHECKPOINT_AGAIN) {
        pthread_mutex_unlock(&k->lock);
        return; /* a reader kept it from starting over: not at every batch */
    }
    if (k->aside) {
        k->state = ASIDE_ASKED;
        pthread_cond_signal(&k->wake);
        pthread_mutex_unlock(&k->lock);
        return;
    }
    pthread_mutex_unlock(&k->lock);
    checkpoint_here(s, k, 0);
    k->frames_then = frames;
}

void sqlite_upkeep_count(struct store_conn *s, struct store_commit_figures *out)
{
    struct sqlite_checkpointer *k = s->checkpointer;
    out->checkpoints = k ? atomic_load(&k->checkpoints) : 0;
    out->writebacks = k ? atomic_load(&k->writebacks) : 0;
    out->asides = k ? atomic_load(&k->asides) : 0;
    out->frames_inline = k ? atomic_load(&k->frames_inline) : 0;
}

void sqlite_upkeep_stop(struct store_conn *s)
{
    struct sqlite_checkpointer *k = s->checkpointer;
    if (!k)
        return;
    if (k->aside) {
        pthread_mutex_lock(&k->lock);
        k->stop = true;
        pthread_cond_signal(&k->wake);
        pthread_mutex_unlock(&k->lock);
        pthread_join(k->thread, NULL); /* (a copy under way ends first) */
        sqlite3_close(k->aside);
    }
    pthread_mutex_destroy(&k->lock);
    pthread_cond_destroy(&k->wake);
    sqlite3_wal_hook(s->db, NULL, NULL);
    if (k->wal_fd >= 0)
        close(k->wal_fd);
    s->checkpointer = NULL;
    free(k);
}
