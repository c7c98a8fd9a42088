/* backup.c - online backups and restores of the database (cardpost backup|restore), and the
 * readiness probe's read. A backup is SQLite's online backup API from a connection of its
 * own, in one read transaction: a consistent snapshot while the daemon keeps writing (a WAL
 * reader never blocks the writer), never a file copy of a live WAL database. Every copy is
 * checked (PRAGMA integrity_check, the schema version) before it takes its final name.
 */
#include "sqlite-int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* SQLite's lock bytes (os_unix.c): every connection to a WAL database holds a read lock in
 * the SHARED range of the main file for as long as it is open. */
#define LOCK_FIRST 0x40000000
#define LOCK_SIZE 512

static bool sq_fail(sqlite3 *db, struct err *e, const char *what, const char *path)
{
    return err_set(e, ERR_IO, "sqlite", "%s %s: %s", what, path,
                   db ? sqlite3_errmsg(db) : "out of memory");
}

static bool open_db(const char *path, int flags, sqlite3 **db, struct err *e)
{
    if (sqlite3_open_v2(path, db, flags, NULL) != SQLITE_OK) {
        sq_fail(*db, e, "cannot open", path);
        sqlite3_close(*db);
        *db = NULL;
        return false;
    }
    sqlite3_busy_timeout(*db, 10000);
    return true;
}

/* The schema version a connection's database records; 0 when it has none. */
static int version_of(sqlite3 *db)
{
    sqlite3_stmt *st;
    int v = 0;
    if (sqlite3_prepare_v2(db, "SELECT max(version) FROM schema_migrations", -1, &st, NULL) ==
        SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW)
            v = sqlite3_column_int(st, 0);
        sqlite3_finalize(st);
    }
    return v;
}

static int64_t size_of(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (int64_t)sb.st_size : -1;
}

static bool sync_path(const char *path, bool dir, struct err *e)
{
    int fd = open(path, (dir ? O_RDONLY | O_DIRECTORY : O_RDWR) | O_CLOEXEC);
    if (fd < 0 || fsync(fd) != 0) {
        int saved = errno;
        if (fd >= 0)
            close(fd);
        return err_set(e, ERR_IO, "io", "cannot sync %s: %s", path, strerror(saved));
    }
    close(fd);
    return true;
}

/* The directory part of `path` ("." when it has none). */
static void dir_of(const char *path, char *dir, size_t size)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, size, ".");
    else if (slash == path)
        snprintf(dir, size, "/");
    else
        snprintf(dir, size, "%.*s", (int)(slash - path), path);
}

bool sqlite_check_copy(const char *path, struct store_copy_info *info, struct err *e)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    bool ok = false;
    memset(info, 0, sizeof *info);
    if (access(path, R_OK) != 0)
        return err_set(e, ERR_IO, "io", "cannot read %s: %s", path, strerror(errno));
    if (!open_db(path, SQLITE_OPEN_READONLY, &db, e))
        return false;
    if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL) != SQLITE_OK) {
        err_set(e, ERR_INVALID, "corrupt", "%s fails its integrity check: %s", path,
                sqlite3_errmsg(db));
        goto out;
    }
    int rc = sqlite3_step(st);
    const char *first = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0) : NULL;
    if (!first || strcmp(first, "ok") != 0) {
        err_set(e, ERR_INVALID, "corrupt", "%s fails its integrity check: %s", path,
                first ? first : sqlite3_errmsg(db));
        goto out;
    }
    info->version = version_of(db);
    if (info->version <= 0) {
        err_set(e, ERR_INVALID, "not_cardpost", "%s is not a cardpost database (no schema "
                "version)", path);
        goto out;
    }
    info->bytes = size_of(path);
    ok = true;
out:
    sqlite3_finalize(st);
    sqlite3_close(db);
    return ok;
}

/* Copy the database behind connection `from` into a new file `to` in one step (one read
 * transaction of `from`: a consistent snapshot), as a single file (rollback journal mode,
 * so that the copy has no -wal beside it), synced. */
static bool copy_into(sqlite3 *from, const char *to, struct err *e)
{
    sqlite3 *dst = NULL;
    if (!open_db(to, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_EXCLUSIVE, &dst,
                 e))
        return false;
    bool ok = false;
    sqlite3_backup *b = sqlite3_backup_init(dst, "main", from, "main");
    if (!b) {
        sq_fail(dst, e, "cannot copy into", to);
        goto out;
    }
    int rc;
    while ((rc = sqlite3_backup_step(b, -1)) == SQLITE_BUSY || rc == SQLITE_LOCKED)
        sqlite3_sleep(50);
    sqlite3_backup_finish(b);
    if (rc != SQLITE_DONE) {
        err_set(e, ERR_IO, "sqlite", "copying into %s: %s", to, sqlite3_errstr(rc));
        goto out;
    }
    char *msg = NULL;
    if (sqlite3_exec(dst, "PRAGMA journal_mode=DELETE", NULL, NULL, &msg) != SQLITE_OK) {
        err_set(e, ERR_IO, "sqlite", "%s: %s", to, msg ? msg : "journal mode");
        sqlite3_free(msg);
        goto out;
    }
    ok = true;
out:
    if (sqlite3_close(dst) != SQLITE_OK && ok)
        ok = err_set(e, ERR_IO, "sqlite", "cannot close %s", to);
    return ok && sync_path(to, false, e);
}

/* A fresh name beside `path`: path.SUFFIX-PID-N, not existing yet. */
static void temp_beside(const char *path, const char *suffix, char *out, size_t size)
{
    for (unsigned n = 0;; n++) {
        snprintf(out, size, "%s.%s-%ld-%u", path, suffix, (long)getpid(), n);
        if (access(out, F_OK) != 0)
            return;
    }
}

/* `path` followed by `suffix` into `out`; false when it does not fit. */
static bool side_name(const char *path, const char *suffix, char *out, size_t size)
{
    int n = snprintf(out, size, "%s%s", path, suffix);
    return n >= 0 && (size_t)n < size;
}

static void unlink_copy(const char *path)
{
    char side[4200];
    unlink(path);
    if (side_name(path, "-journal", side, sizeof side))
        unlink(side);
}

bool sqlite_backup(const char *db_path, const char *out, struct store_copy_info *info,
                   struct err *e)
{
    memset(info, 0, sizeof *info);
    if (access(out, F_OK) == 0)
        return err_set(e, ERR_INVALID, "exists", "%s exists already (a backup never replaces "
                       "a file)", out);
    if (access(db_path, R_OK | W_OK) != 0)
        return err_set(e, ERR_IO, "io", "cannot open %s: %s", db_path, strerror(errno));
    char tmp[4200];
    temp_beside(out, "partial", tmp, sizeof tmp);
    sqlite3 *src = NULL;
    if (!open_db(db_path, SQLITE_OPEN_READWRITE, &src, e))
        return false;
    int version = version_of(src);
    bool ok = false;
    if (version <= 0) {
        err_set(e, ERR_INVALID, "not_cardpost", "%s is not a cardpost database", db_path);
        goto out;
    }
    if (!copy_into(src, tmp, e) || !sqlite_check_copy(tmp, info, e))
        goto out;
    if (info->version != version) {
        err_set(e, ERR_INVALID, "version", "the copy records schema version %d, the database "
                "%d", info->version, version);
        goto out;
    }
    char dir[4200];
    dir_of(out, dir, sizeof dir);
    if (rename(tmp, out) != 0) {
        err_set(e, ERR_IO, "io", "cannot rename %s to %s: %s", tmp, out, strerror(errno));
        goto out;
    }
    ok = sync_path(dir, true, e);
out:
    sqlite3_close(src);
    if (!ok)
        unlink_copy(tmp);
    return ok;
}

bool sqlite_in_use(const char *db_path, bool *in_use, struct err *e)
{
    *in_use = false;
    int fd = open(db_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return true;
        return err_set(e, ERR_IO, "io", "cannot open %s: %s", db_path, strerror(errno));
    }
    struct flock lk = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = LOCK_FIRST,
                       .l_len = LOCK_SIZE};
    bool ok = fcntl(fd, F_GETLK, &lk) == 0;
    int saved = errno;
    close(fd);
    if (!ok)
        return err_set(e, ERR_IO, "io", "cannot test the locks of %s: %s", db_path,
                       strerror(saved));
    *in_use = lk.l_type != F_UNLCK;
    return true;
}

bool sqlite_restore(const char *backup, const char *db_path, bool force,
                    struct store_copy_info *info, struct err *e)
{
    bool in_use;
    if (!sqlite_in_use(db_path, &in_use, e))
        return false;
    if (in_use)
        return err_set(e, ERR_INVALID, "in_use", "%s is open in another process (stop "
                       "cardpostd first)", db_path);
    if (access(db_path, F_OK) == 0 && !force)
        return err_set(e, ERR_INVALID, "exists", "%s exists (--force replaces it)", db_path);
    if (!sqlite_check_copy(backup, info, e))
        return false;
    if (info->version > store_nmigrations)
        return err_set(e, ERR_INVALID, "version", "%s records schema version %d, newer than "
                       "this build's %d", backup, info->version, store_nmigrations);
    char tmp[4200];
    temp_beside(db_path, "restore", tmp, sizeof tmp);
    sqlite3 *src = NULL;
    if (!open_db(backup, SQLITE_OPEN_READONLY, &src, e))
        return false;
    struct store_copy_info copied;
    bool ok = copy_into(src, tmp, e) && sqlite_check_copy(tmp, &copied, e);
    sqlite3_close(src);
    if (ok && copied.version != info->version)
        ok = err_set(e, ERR_INVALID, "version", "the restored copy records schema version %d, "
                     "the backup %d", copied.version, info->version);
    /* Whatever journal the old database left beside it belongs to the old pages: removed
     * before the new file takes the name, never applied to it. */
    static const char *const sides[] = {"-wal", "-shm", "-journal"};
    for (size_t i = 0; ok && i < sizeof sides / sizeof sides[0]; i++) {
        char side[4200];
        if (!side_name(db_path, sides[i], side, sizeof side))
            ok = err_set(e, ERR_INVALID, "path", "%s: the name is too long", db_path);
        else if (unlink(side) != 0 && errno != ENOENT)
            ok = err_set(e, ERR_IO, "io", "cannot remove %s: %s", side, strerror(errno));
    }
    if (ok && rename(tmp, db_path) != 0)
        ok = err_set(e, ERR_IO, "io", "cannot rename %s to %s: %s", tmp, db_path,
                     strerror(errno));
    if (ok) {
        char dir[4200];
        dir_of(db_path, dir, sizeof dir);
        ok = sync_path(dir, true, e);
    } else {
        unlink_copy(tmp);
    }
    return ok;
}

bool sqlite_probe(const char *db_path, struct err *e)
{
    sqlite3 *db = NULL;
    if (!open_db(db_path, SQLITE_OPEN_READWRITE, &db, e))
        return false;
    sqlite3_busy_timeout(db, 1000);
    int v = version_of(db);
    bool ok = v > 0 || err_set(e, ERR_IO, "sqlite", "cannot read %s: %s", db_path,
                               sqlite3_errmsg(db));
    sqlite3_close(db);
    return ok;
}
