/* gather.c - a VFS shim that gathers a commit's WAL writes into one (SQLite's VFS
 * interface, https://sqlite.org/vfs.html). SQLite writes each WAL frame in two calls, its
 * 24-byte header and its page, so a group commit of 30 moves is some 70 frames and 140
 * pwrite(2)s, then one fsync: on a paravirtualised guest each system call costs microseconds
 * of its own. The shim keeps the writes to a WAL file that follow one another in a buffer
 * and hands them to the file in one write when SQLite next does anything else with it: its
 * sync (a commit's), a read, a write elsewhere (the WAL restarting at its head), its size, a
 * truncation, a control, the close, or a full buffer. Only connections whose commits sync the
 * WAL use it (synchronous=FULL: sqlite_open_durable with STORE_DURABLE_POWER): there every
 * commit's frames reach the file before the sync that ends the commit, and so before the
 * WAL index says they exist, which is when another connection may read them. With
 * synchronous=NORMAL a commit publishes its frames without a sync, so it is not used. The
 * database file and the others pass straight through.
 */
#include "sqlite-int.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define GATHER_VFS "cardpost-gather"
/* The most one write hands on: under 128 KiB, the most the unix VFS writes in one call (its
 * seekAndWrite masks a length with 0x1ffff), so a commit of about 30 frames goes in one write,
 * a larger one in several. */
#define GATHER_BUFFER (124 * 1024)

/* A file opened through the shim: its own methods, then the real file (szOsFile bytes). */
struct gather_file {
    sqlite3_file base;          /* methods: gather_io, or the real file's own */
    sqlite3_file *real;         /* just after this struct */
    char *buf;                  /* the writes not yet handed on, from `at` (NULL: none) */
    int len;
    sqlite3_int64 at;
};

static sqlite3_vfs gather_vfs;
static sqlite3_vfs *gather_under;
static atomic_ullong gather_writes, gather_flushes;

/* Hand the gathered writes to the file. */
static int flush(struct gather_file *g)
{
    if (g->len == 0)
        return SQLITE_OK;
    int rc = g->real->pMethods->xWrite(g->real, g->buf, g->len, g->at);
    atomic_fetch_add(&gather_flushes, 1);
    g->len = 0;
    return rc;
}

static int gather_close(sqlite3_file *f)
{
    struct gather_file *g = (struct gather_file *)f;
    int rc = flush(g);
    int rc2 = g->real->pMethods->xClose(g->real);
    free(g->buf);
    g->buf = NULL;
    return rc != SQLITE_OK ? rc : rc2;
}

static int gather_read(sqlite3_file *f, void *out, int amt, sqlite3_int64 off)
{
    struct gather_file *g = (struct gather_file *)f;
    int rc = flush(g);
    return rc != SQLITE_OK ? rc : g->real->pMethods->xRead(g->real, out, amt, off);
}

/* A write that follows the ones gathered joins them; any other hands them on first. */
static int gather_write(sqlite3_file *f, const void *in, int amt, sqlite3_int64 off)
{
    struct gather_file *g = (struct gather_file *)f;
    atomic_fetch_add(&gather_writes, 1);
    if (g->len > 0 && (off != g->at + g->len || g->len + amt > GATHER_BUFFER)) {
        int rc = flush(g);
        if (rc != SQLITE_OK)
            return rc;
    }
    if (amt > GATHER_BUFFER || (!g->buf && !(g->buf = malloc(GATHER_BUFFER))))
        return g->real->pMethods->xWrite(g->real, in, amt, off);
    if (g->len == 0)
        g->at = off;
    memcpy(g->buf + g->len, in, (size_t)amt);
    g->len += amt;
    return SQLITE_OK;
}

static int gather_truncate(sqlite3_file *f, sqlite3_int64 size)
{
    struct gather_file *g = (struct gather_file *)f;
    int rc = flush(g);
    return rc != SQLITE_OK ? rc : g->real->pMethods->xTruncate(g->real, size);
}

static int gather_sync(sqlite3_file *f, int flags)
{
    struct gather_file *g = (struct gather_file *)f;
    int rc = flush(g);
    return rc != SQLITE_OK ? rc : g->real->pMethods->xSync(g->real, flags);
}

static int gather_size(sqlite3_file *f, sqlite3_int64 *size)
{
    struct gather_file *g = (struct gather_file *)f;
    int rc = flush(g);
    return rc != SQLITE_OK ? rc : g->real->pMethods->xFileSize(g->real, size);
}

/* The rest of a WAL file's methods: the real file's, after the writes are handed on. */
static int gather_lock(sqlite3_file *f, int lock)
{
    struct gather_file *g = (struct gather_file *)f;
    return g->real->pMethods->xLock(g->real, lock);
}

static int gather_unlock(sqlite3_file *f, int lock)
{
    struct gather_file *g = (struct gather_file *)f;
    return g->real->pMethods->xUnlock(g->real, lock);
}

static int gather_reserved(sqlite3_file *f, int *out)
{
    struct gather_file *g = (struct gather_file *)f;
    return g->real->pMethods->xCheckReservedLock(g->real, out);
}

static int gather_control(sqlite3_file *f, int op, void *arg)
{
    struct gather_file *g = (struct gather_file *)f;
    int rc = flush(g);
    return rc != SQLITE_OK ? rc : g->real->pMethods->xFileControl(g->real, op, arg);
}

static int gather_sector(sqlite3_file *f)
{
    struct gather_file *g = (struct gather_file *)f;
    return g->real->pMethods->xSectorSize(g->real);
}

static int gather_caps(sqlite3_file *f)
{
    struct gather_file *g = (struct gather_file *)f;
    return g->real->pMethods->xDeviceCharacteristics(g->real);
}

/* (A WAL file has no shared memory or mapping of its own: SQLite asks its database file.) */
static const sqlite3_io_methods gather_io = {
    .iVersion = 1,
    .xClose = gather_close,
    .xRead = gather_read,
    .xWrite = gather_write,
    .xTruncate = gather_truncate,
    .xSync = gather_sync,
    .xFileSize = gather_size,
    .xLock = gather_lock,
    .xUnlock = gather_unlock,
    .xCheckReservedLock = gather_reserved,
    .xFileControl = gather_control,
    .xSectorSize = gather_sector,
    .xDeviceCharacteristics = gather_caps,
};

/* Every other file: the real file's methods, its shared memory and mapping included. */
static int pass_close(sqlite3_file *f)
{
    struct gather_file *g = (struct gather_file *)f;
    return g->real->pMethods->xClose(g->real);
}

static int pass_read(sqlite3_file *f, void *out, int amt, sqlite3_int64 off)
{
    struct gather_file *g = (struct gather_file *)f;
    return g->real->pMethods->xRead(g->real, out, amt, off);
}

static int pass_write(sqlite3_file *f, const void *in, int amt, sqlite3_int64 off)
{
    struct gather_file *g = (struct gather_file *)f;
    return g->real->pMethods->xWrite(g->real, in, amt, off);
}

static int pass_truncate(sqlite3_file *f, sqlite3_int64 size)
{
    struct gather_file *g = (struct gather_file *)f;
    return g->real->pMethods->xTruncate(g->real, size);
}

static int pass_sync(sqlite3_file *f, int flags)
{
    struct gather_file *g = (struct gather_file *)f;
    return g->real->pMethods->xSync(g->real, flags);
}

static int pass_size(sqlite3_file *f, sqlite3_int64 *size)
{
    struct gather_file *g = (struct gather_file *)f;
    return g->real->pMethods->xFileSize(g->real, size);
}

static int pass_control(sqlite3_file *f, int op, void *arg)
{
    struct gather_file *g = (struct gather_file *)f;
    return g->real->pMethods->xFileControl(g->real, op, arg);
}

static int pass_shm_map(sqlite3_file *f, int region, int size, int extend, void volatile **out)
{
    struct gather_file *g = (struct gather_file *)f;
    return g->real->pMethods->xShmMap(g->real, region, size, extend, out);
}

static int pass_shm_lock(sqlite3_file *f, int offset, int n, int flags)
{
    struct gather_file *g = (struct gather_file *)f;
    return g->real->pMethods->xShmLock(g->real, offset, n, flags);
}

static void pass_shm_barrier(sqlite3_file *f)
{
    struct gather_file *g = (struct gather_file *)f;
    g->real->pMethods->xShmBarrier(g->real);
}

static int pass_shm_unmap(sqlite3_file *f, int delete_flag)
{
    struct gather_file *g = (struct gather_file *)f;
    return g->real->pMethods->xShmUnmap(g->real, delete_flag);
}

static int pass_fetch(sqlite3_file *f, sqlite3_int64 off, int amt, void **out)
{
    struct gather_file *g = (struct gather_file *)f;
    return g->real->pMethods->xFetch(g->real, off, amt, out);
}

static int pass_unfetch(sqlite3_file *f, sqlite3_int64 off, void *p)
{
    struct gather_file *g = (struct gather_file *)f;
    return g->real->pMethods->xUnfetch(g->real, off, p);
}

static const sqlite3_io_methods pass_io = {
    .iVersion = 3,
    .xClose = pass_close,
    .xRead = pass_read,
    .xWrite = pass_write,
    .xTruncate = pass_truncate,
    .xSync = pass_sync,
    .xFileSize = pass_size,
    .xLock = gather_lock,
    .xUnlock = gather_unlock,
    .xCheckReservedLock = gather_reserved,
    .xFileControl = pass_control,
    .xSectorSize = gather_sector,
    .xDeviceCharacteristics = gather_caps,
    .xShmMap = pass_shm_map,
    .xShmLock = pass_shm_lock,
    .xShmBarrier = pass_shm_barrier,
    .xShmUnmap = pass_shm_unmap,
    .xFetch = pass_fetch,
    .xUnfetch = pass_unfetch,
};

/* Open through the real VFS: a WAL file with the gathering methods, any other with the
 * real file's own (the real VFS is unix, whose files have every method of version 3). */
static int gather_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags,
                       int *out_flags)
{
    (void)vfs;
    struct gather_file *g = (struct gather_file *)f;
    memset(g, 0, sizeof *g);
    g->real = (sqlite3_file *)(g + 1);
    int rc = gather_under->xOpen(gather_under, name, g->real, flags, out_flags);
    if (rc != SQLITE_OK || !g->real->pMethods) {
        g->base.pMethods = NULL; /* (SQLite calls no method of a file that did not open) */
        return rc;
    }
    g->base.pMethods = (flags & SQLITE_OPEN_WAL) ? &gather_io : &pass_io;
    return SQLITE_OK;
}

static int gather_registered = SQLITE_ERROR;

static void gather_register(void)
{
    gather_under = sqlite3_vfs_find(NULL);
    if (!gather_under || gather_under->szOsFile <= 0 || strcmp(gather_under->zName, "unix"))
        return; /* (not the VFS the shim was written over: the commits go without it) */
    gather_vfs = *gather_under;
    gather_vfs.zName = GATHER_VFS;
    gather_vfs.szOsFile = (int)sizeof(struct gather_file) + gather_under->szOsFile;
    gather_vfs.xOpen = gather_open;
    gather_vfs.pNext = NULL;
    gather_registered = sqlite3_vfs_register(&gather_vfs, 0);
}

const char *sqlite_gather_vfs(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, gather_register);
    return gather_registered == SQLITE_OK ? GATHER_VFS : NULL;
}

void sqlite_gather_figures(uint64_t *writes, uint64_t *flushes)
{
    *writes = atomic_load(&gather_writes);
    *flushes = atomic_load(&gather_flushes);
}
