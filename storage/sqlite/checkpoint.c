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
 */
#include "sqlite-int.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

/* Four times SQLite's own default for its automatic checkpoints (16 MiB of WAL): a page a
 * move rewrites (its match's row, the newest page of its events) is copied back once per
 * checkpoint, however many commits wrote it, so fewer checkpoints copy fewer pages a move
 * (docs/benchmarks.md "Streams written straight to their sockets"). */
#define CHECKPOINT_FRAMES 4000
#define CHECKPOINT_AGAIN 1000

struct sqlite_checkpointer {
    atomic_int wal_frames;        /* after the writer's last commit (its WAL hook) */
    int frames_then;              /* wal_frames at the last checkpoint (0: none since the WAL
                                   * started over); read and written only between batches,
                                   * which run one at a time */
    atomic_uint_fast64_t checkpoints;
};

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

uint64_t sqlite_upkeep_count(struct store_conn *s)
{
    struct sqlite_checkpointer *k = s->checkpointer;
    return k ? atomic_load(&k->checkpoints) : 0;
}

void sqlite_upkeep_stop(struct store_conn *s)
{
    struct sqlite_checkpointer *k = s->checkpointer;
    if (!k)
        return;
    sqlite3_wal_hook(s->db, NULL, NULL);
    s->checkpointer = NULL;
    free(k);
}
