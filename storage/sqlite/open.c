/* open.c - the SQLite backend: opening the database (WAL, foreign keys, busy timeout),
 * applying the embedded migrations in order inside one transaction each, transactions, and
 * the backend's table of operations (backend.h) that store.c calls through.
 */
#include "sqlite-int.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool sqlite_fail(struct store_conn *s, struct err *e, const char *what)
{
    int code = s && s->db ? sqlite3_extended_errcode(s->db) : SQLITE_ERROR;
    const char *msg = s && s->db ? sqlite3_errmsg(s->db) : "no database";
    bool constraint = (code & 0xff) == SQLITE_CONSTRAINT;
    return err_set(e, constraint ? ERR_INVALID : ERR_IO, constraint ? "constraint" : "sqlite",
                   "%s: %s", what, msg);
}

char *sqlite_column_text(sqlite3_stmt *st, int col)
{
    const unsigned char *t = sqlite3_column_text(st, col);
    if (!t)
        return NULL;
    return strdup((const char *)t);
}

sqlite3_stmt *sqlite_stmt(struct store_conn *s, int slot, const char *sql, struct err *e)
{
    if (!s->stmts[slot] &&
        sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &s->stmts[slot], NULL) !=
            SQLITE_OK) {
        sqlite_fail(s, e, "prepare");
        return NULL;
    }
    sqlite3_reset(s->stmts[slot]);
    sqlite3_clear_bindings(s->stmts[slot]);
    return s->stmts[slot];
}

static bool exec(struct store_conn *s, const char *sql, struct err *e)
{
    char *msg = NULL;
    if (sqlite3_exec(s->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        err_set(e, ERR_IO, "sqlite", "%s", msg ? msg : "exec failed");
        sqlite3_free(msg);
        return false;
    }
    return true;
}

/* The database's file and its WAL beside it (PATH-wal), by their sizes on disk. */
bool sqlite_file_sizes(struct store_conn *s, int64_t *db_bytes, int64_t *wal_bytes,
                       struct err *e)
{
    const char *path = sqlite3_db_filename(s->db, "main");
    struct stat st;
    if (!path || !*path || stat(path, &st) != 0)
        return err_set(e, ERR_IO, "io", "cannot see the database's file");
    *db_bytes = (int64_t)st.st_size;
    char wal[4096];
    snprintf(wal, sizeof wal, "%s-wal", path);
    *wal_bytes = stat(wal, &st) == 0 ? (int64_t)st.st_size : 0;
    return true;
}

/* One process owns a SQLite file (the daemon holds it open; restore refuses then): every
 * lease is its own. */
bool sqlite_lease(struct store_conn *s, int64_t key, bool *held, struct err *e)
{
    (void)s, (void)key, (void)e;
    *held = true;
    return true;
}

int sqlite_version(struct store_conn *s)
{
    sqlite3_stmt *st;
    int v = 0;
    if (sqlite3_prepare_v2(s->db, "SELECT max(version) FROM schema_migrations", -1, &st, NULL) ==
        SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW)
            v = sqlite3_column_int(st, 0);
        sqlite3_finalize(st);
    }
    return v;
}

int sqlite_migration_count(void)
{
    return store_nmigrations;
}

/* The first line of a migration that rebuilds a table (migrate). */
#define REBUILD_MARK "-- rebuild:"

/* Whether every foreign key of the database finds its row (PRAGMA foreign_key_check). */
static bool references_hold(struct store_conn *s, struct err *e)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, "PRAGMA foreign_key_check", -1, &st, NULL) != SQLITE_OK)
        return sqlite_fail(s, e, "check the references");
    int rc = sqlite3_step(st);
    char table[128] = "";
    if (rc == SQLITE_ROW)
        snprintf(table, sizeof table, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    if (rc == SQLITE_ROW)
        return err_set(e, ERR_IO, "migration", "a row of %s refers to nothing", table);
    return rc == SQLITE_DONE || sqlite_fail(s, e, "check the references");
}

static bool migrate(struct store_conn *s, struct err *e)
{
    if (!exec(s,
              "CREATE TABLE IF NOT EXISTS schema_migrations ("
              " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)",
              e))
        return false;
    /* Every migration the database has not recorded, by its number (not only those above
     * the highest recorded: numbers may have gaps that a later build fills). A database
     * from a newer build records higher numbers, and those this build lacks are left. */
    sqlite3_stmt *have = NULL;
    if (sqlite3_prepare_v2(s->db, "SELECT 1 FROM schema_migrations WHERE version = ?", -1,
                           &have, NULL) != SQLITE_OK)
        return sqlite_fail(s, e, "read the migrations");
    for (int i = 0; i < store_nmigrations; i++) {
        const struct store_migration *m = &store_migrations[i];
        sqlite3_reset(have);
        sqlite3_bind_int(have, 1, m->version);
        bool applied = sqlite3_step(have) == SQLITE_ROW;
        sqlite3_reset(have);
        if (applied)
            continue;
        /* A migration that rebuilds a table others refer to (a new table, the rows copied,
         * the old one dropped and the new one renamed: the way SQLite changes a column's
         * constraints) says so on its first line. It runs with the foreign keys off (their
         * pragma cannot change inside a transaction), and the references are checked
         * before its commit: it leaves none unmatched, or it is undone. */
        bool rebuild = !strncmp(m->sql, REBUILD_MARK, strlen(REBUILD_MARK));
        if (rebuild && !exec(s, "PRAGMA foreign_keys=OFF", e))
            return false;
        if (!exec(s, "BEGIN IMMEDIATE", e))
            return false;
        sqlite3_stmt *st = NULL;
        bool ok = exec(s, m->sql, e) && (!rebuild || references_hold(s, e)) &&
                  sqlite3_prepare_v2(s->db,
                                     "INSERT INTO schema_migrations VALUES (?, ?, unixepoch())",
                                     -1, &st, NULL) == SQLITE_OK;
        if (ok) {
            sqlite3_bind_int(st, 1, m->version);
            sqlite3_bind_text(st, 2, m->name, -1, SQLITE_STATIC);
            ok = sqlite3_step(st) == SQLITE_DONE || sqlite_fail(s, e, "record migration");
        } else if (e && e->code == ERR_OK) {
            sqlite_fail(s, e, "migration");
        }
        sqlite3_finalize(st);
        ok = ok && exec(s, "COMMIT", e);
        if (!ok)
            exec(s, "ROLLBACK", NULL);
        if (rebuild && !exec(s, "PRAGMA foreign_keys=ON", ok ? e : NULL))
            ok = false;
        if (!ok) {
            char why[sizeof e->msg];
            snprintf(why, sizeof why, "%s", e ? e->msg : "");
            sqlite3_finalize(have);
            return err_set(e, ERR_IO, "migration", "migration %s failed: %s", m->name, why);
        }
    }
    sqlite3_finalize(have);
    return true;
}

/* Make `path` readable and writable by its owner only (creating it, empty, with `create`):
 * the database holds secrets (running matches' seeds, the play+ signing key, webhook
 * secrets). SQLite creates the -wal and -shm files with the database file's own mode, so a
 * database created 0600 keeps them 0600 too; existing files open to others are narrowed.
 * Only by path: opening and closing a descriptor of a file that another connection of this
 * process has open would drop that connection's POSIX locks (fcntl locks belong to the
 * process and file, and any close releases them). Failures are left to SQLite's open to
 * report. */
static void keep_private(const char *path, bool create)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        int fd = create ? open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, 0600)
                        : -1;
        if (fd >= 0) /* (new: nobody else holds it, so nobody's locks are dropped) */
            close(fd);
        return;
    }
    if (S_ISREG(st.st_mode) && (st.st_mode & 077))
        chmod(path, st.st_mode & 0700);
}

static void keep_files_private(const char *path)
{
    if (!path[0] || !strcmp(path, ":memory:") || !strncmp(path, "file:", 5))
        return;
    keep_private(path, true);
    size_t n = strlen(path);
    char *side = malloc(n + 16);
    if (!side)
        return;
    static const char *const suffix[] = {"-wal", "-shm", "-journal"};
    for (int i = 0; i < 3; i++) {
        memcpy(side, path, n);
        memcpy(side + n, suffix[i], strlen(suffix[i]) + 1);
        keep_private(side, false);
    }
    free(side);
}

/* What a savepoint's sub-journal (the pages a write changed, kept so that a failed write
 * alone is undone) may hold in memory before SQLite moves it to a temporary file: 126 KiB
 * (31 pages) instead of 64 KiB. Creating a match, or a move that ends one, with its
 * notifications changes 16 to 30 pages, over the default; and a spilled sub-journal stays a
 * file until the transaction ends, so every later write of that group commit went through
 * temporary-file writes too (12 KB a move with notifications on: docs/benchmarks.md
 * "Notifications, counted again"). SQLite allocates it as one chunk of this size: below
 * glibc's 128 KiB threshold it comes from the heap and is reused, where a larger one would
 * be mapped and unmapped at every write. Set once, before SQLite is first initialised. */
#define SUBJOURNAL_IN_MEMORY (126 * 1024)

/* And no page cache starts with SQLite's bulk allocation of 20 pages (87 KB): each page is
 * allocated when first used. A connection's cache fills past 20 pages anyway; but every
 * temporary table has a page cache of its own, and a statement builds them (an outbox claim
 * five or six, for its `IN` lists and its RETURNING rows), each for a page or two.
 * And no memory statistics (sqlite3_memory_used, nothing here reads them): with them on,
 * the default, every allocation and free SQLite makes takes a process-wide mutex to count
 * itself, about a tenth of a statement's instructions (3,300 of an outbox row's 33,200:
 * docs/benchmarks.md "SQLite without its memory statistics"), and the committer and the
 * readers took the same mutex. */
static void sqlite_configure(void)
{
    sqlite3_config(SQLITE_CONFIG_STMTJRNL_SPILL, SUBJOURNAL_IN_MEMORY);
    sqlite3_config(SQLITE_CONFIG_PAGECACHE, NULL, 0, 0);
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

struct store_conn *sqlite_open_durable(const char *path, enum store_durability d, struct err *e)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, sqlite_configure);
    struct store_conn *s = calloc(1, sizeof *s);
    if (!s) {
        err_set(e, ERR_NOMEM, "nomem", "out of memory");
        return NULL;
    }
    s->outbox_unindexed = -1; /* (read at its first outbox row) */
    s->commits_sync = d == STORE_DURABLE_POWER;
    keep_files_private(path);
    /* (A connection whose commits sync the WAL has its frames written in one write a
     * commit: gather.c.) */
    if (sqlite3_open_v2(path, &s->db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        d == STORE_DURABLE_POWER ? sqlite_gather_vfs() : NULL) != SQLITE_OK) {
        sqlite_fail(s, e, path);
        goto fail;
    }
    sqlite3_busy_timeout(s->db, 10000);
    /* WAL with synchronous=NORMAL (STORE_DURABLE_CRASH): a committed transaction survives
     * a crash of the process (it is in the WAL file, which the kernel holds); a power loss
     * may lose the last commits but never corrupts the database. synchronous=FULL
     * (STORE_DURABLE_POWER): each commit waits for the WAL to reach the disk (fdatasync),
     * so it survives a power loss too. docs/benchmarks.md says what each costs. A page
     * cache of 512 KiB instead of SQLite's 2 MiB: the hot pages (the b-trees' upper levels,
     * the matches in play) fit, the rest is a read from the operating system's cache, and
     * the daemon stays 1.5 MiB smaller once the database outgrows 2 MiB (docs/benchmarks.md
     * "Memory"). */
    if (!exec(s, "PRAGMA journal_mode=WAL; PRAGMA foreign_keys=ON; PRAGMA cache_size=-512;",
              e) ||
        !exec(s, d == STORE_DURABLE_POWER ? "PRAGMA synchronous=FULL;"
                                          : "PRAGMA synchronous=NORMAL;", e) ||
        !migrate(s, e))
        goto fail;
    return s;
fail:
    sqlite_close(s);
    return NULL;
}

void sqlite_close(struct store_conn *s)
{
    if (!s)
        return;
    sqlite_upkeep_stop(s);
    sqlite_outbox_forget(s);
    for (int i = 0; i < SQL_NSTATEMENTS; i++)
        sqlite3_finalize(s->stmts[i]);
    sqlite3_close(s->db);
    free(s);
}

static bool step_done(struct store_conn *s, int slot, const char *sql, struct err *e)
{
    sqlite3_stmt *st = sqlite_stmt(s, slot, sql, e);
    if (!st)
        return false;
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE || sqlite_fail(s, e, sql);
}

/* (What the outbox counts of its fresh rows is forgotten when a savepoint or transaction that
 * changed them is undone: outbox.c "What outbox_fresh holds".) A savepoint's changes become
 * its transaction's at its end, or before the next one begins. */
static void fresh_to_transaction(struct store_conn *s)
{
    s->fresh_touched_txn = s->fresh_touched_txn || s->fresh_touched;
    s->fresh_touched = false;
}

bool sqlite_begin(struct store_conn *s, struct err *e)
{
    s->outbox_next_id = 0; /* (read again: another process may have written since) */
    s->fresh_touched = s->fresh_touched_txn = false;
    return step_done(s, SQL_BEGIN, "BEGIN IMMEDIATE", e);
}

bool sqlite_commit(struct store_conn *s, struct err *e)
{
    if (!step_done(s, SQL_COMMIT, "COMMIT", e))
        return false;
    s->fresh_touched = s->fresh_touched_txn = false;
    return true;
}

void sqlite_rollback(struct store_conn *s)
{
    if (sqlite3_get_autocommit(s->db))
        return;
    if (s->fresh_touched || s->fresh_touched_txn)
        sqlite_outbox_forget(s);
    s->fresh_touched = s->fresh_touched_txn = false;
    step_done(s, SQL_ROLLBACK, "ROLLBACK", NULL);
}

bool sqlite_savepoint(struct store_conn *s, struct err *e)
{
    fresh_to_transaction(s);
    return step_done(s, SQL_SAVEPOINT, "SAVEPOINT w", e);
}

bool sqlite_release(struct store_conn *s, struct err *e)
{
    fresh_to_transaction(s);
    return step_done(s, SQL_RELEASE, "RELEASE w", e);
}

bool sqlite_rollback_to(struct store_conn *s, struct err *e)
{
    if (s->fresh_touched)
        sqlite_outbox_forget(s);
    s->fresh_touched = false;
    return step_done(s, SQL_ROLLBACK_TO, "ROLLBACK TO w", e) &&
           step_done(s, SQL_RELEASE, "RELEASE w", e);
}

const struct store_backend store_sqlite_backend = {
    .name = "sqlite",
    .open = sqlite_open_durable,
    .close = sqlite_close,
    .version = sqlite_version,
    .rollback = sqlite_rollback,
    .outbox_add = sqlite_outbox_add,
    .upkeep_start = sqlite_upkeep_start,
    .upkeep_poke = sqlite_upkeep_poke,
    .upkeep_count = sqlite_upkeep_count,
    .upkeep_stop = sqlite_upkeep_stop,
    .backup = sqlite_backup,
    .check_copy = sqlite_check_copy,
    .in_use = sqlite_in_use,
    .restore = sqlite_restore,
    .probe = sqlite_probe,
    .migration_count = sqlite_migration_count,
#define SQLITE_MEMBER(ret, op, params, args) .op = sqlite_##op,
    STORE_OPS(SQLITE_MEMBER)
#undef SQLITE_MEMBER
};
