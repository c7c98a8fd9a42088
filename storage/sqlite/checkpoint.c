/* checkpoint.c - the WAL's checkpoints: the SQLite backend's upkeep of the connection that
 * writes group commits (backend.h). Commits on that connection no longer copy the WAL back
 * into the database themselves (wal_autocheckpoint=0), which would stall the commit that
 * crossed the threshold before it is answered. Whoever runs the batches does it instead,
 * between two, after the first one's writes are answered (sqlite_upkeep_poke): a PASSIVE
 * checkpoint once the WAL has grown past CHECKPOINT_FRAMES.
 *
 * Between two batches, because no commit can overtake it there. A checkpoint from a
 * thread of its own (until issue 18) raced the commits: a commit that began before it had
 * copied the last frame kept the WAL from starting over, so once past the threshold the WAL
 * stayed past it, and a checkpoint ran after nearly every commit, each with two fdatasyncs
 * of its own competing with the commits' (docs/benchmarks.md "One checkpoint per 4,000
 * frames"). Here the checkpoint copies every frame readers allow, and the next commit starts
 * the WAL over. If a reader held it (the WAL did not start over), the next checkpoint waits
 * until CHECKPOINT_AGAIN more frames have come, not the next batch.
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

#include <fcntl.h>
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
/* About a MiB of WAL (4 KiB pages). */
#define WAL_KICK_FRAMES 256

struct sqlite_checkpointer {
    atomic_int wal_frames;        /* after the writer's last commit (its WAL hook) */
    int frames_then;              /* wal_frames at the last checkpoint (0: none since the WAL
                                   * started over); read and written only between batches,
                                   * which run one at a time */
    atomic_uint_fast64_t checkpoints, writebacks;
    int wal_fd;                   /* synchronous=NORMAL: the WAL, to start its writeback
                                   * (-1: synchronous=FULL, or it could not be opened) */
    int kicked;                   /* wal_frames at its last start (between batches) */
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
    sqlite3_wal_hook(s->db, wal_frames, &k->wal_frames);
    s->checkpointer = k;
    return true;
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
    if (frames < CHECKPOINT_FRAMES) {
        k->frames_then = 0; /* (it started over) */
        return;
    }
    if (k->frames_then > 0 && frames < k->frames_then + CHECKPOINT_AGAIN)
        return; /* a reader kept it from starting over: not at every batch */
    if (sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL) !=
        SQLITE_OK)
        fprintf(stderr, "cardpostd: checkpoint: %s\n", sqlite3_errmsg(s->db));
    k->frames_then = frames;
    atomic_fetch_add(&k->checkpoints, 1);
}

void sqlite_upkeep_count(struct store_conn *s, uint64_t *checkpoints, uint64_t *writebacks)
{
    struct sqlite_checkpointer *k = s->checkpointer;
    *checkpoints = k ? atomic_load(&k->checkpoints) : 0;
    *writebacks = k ? atomic_load(&k->writebacks) : 0;
}

void sqlite_upkeep_stop(struct store_conn *s)
{
    struct sqlite_checkpointer *k = s->checkpointer;
    if (!k)
        return;
    sqlite3_wal_hook(s->db, NULL, NULL);
    if (k->wal_fd >= 0)
        close(k->wal_fd);
    s->checkpointer = NULL;
    free(k);
}
