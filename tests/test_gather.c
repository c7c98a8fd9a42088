/* test_gather.c - a commit's WAL writes gathered into one (storage/sqlite/gather.c): the
 * writing connection of a database opened for power-loss durability hands SQLite's many
 * small writes of a commit to the WAL file in about one write, and every commit is on the
 * file, whole, before another connection (SQLite's own VFS) may read it: that connection
 * sees each commit at once, and the database reopened holds them all.
 */
#include "sqlite/sqlite-int.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#define COMMITS 50
#define ROWS 20         /* a commit: 20 rows of 2,000 bytes, some ten pages */

static int64_t count_rows(sqlite3 *db)
{
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT count(*) FROM t", -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int64_t n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return n;
}

/* A fresh directory for a test's database, and its removal. */
struct place {
    char dir[32];
    char path[64];
};

static void place_make(struct place *p)
{
    snprintf(p->dir, sizeof p->dir, "/tmp/cardpost-gather-XXXXXX");
    assert_non_null(mkdtemp(p->dir));
    snprintf(p->path, sizeof p->path, "%s/g.db", p->dir);
}

static void place_remove(const struct place *p)
{
    char cmd[64];
    snprintf(cmd, sizeof cmd, "rm -rf %s", p->dir);
    assert_int_equal(system(cmd), 0);
}

static void test_commits_gathered(void **state)
{
    (void)state;
    struct place pl;
    place_make(&pl);
    const char *path = pl.path;
    struct err e;
    struct store_conn *w = sqlite_open_durable(path, STORE_DURABLE_POWER, &e);
    assert_non_null(w);
    assert_int_equal(sqlite3_exec(w->db, "CREATE TABLE t (k INTEGER PRIMARY KEY, v BLOB)",
                                  NULL, NULL, NULL), SQLITE_OK);
    sqlite3 *r;
    assert_int_equal(sqlite3_open_v2(path, &r, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    uint64_t writes0, flushes0, writes1, flushes1;
    sqlite_gather_figures(&writes0, &flushes0);
    for (int i = 0; i < COMMITS; i++) {
        assert_int_equal(sqlite3_exec(w->db,
                                      "BEGIN IMMEDIATE;"
                                      "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1"
                                      " FROM n WHERE x < 20)"
                                      " INSERT INTO t (v) SELECT randomblob(2000) FROM n;"
                                      "COMMIT;", NULL, NULL, NULL), SQLITE_OK);
        /* (SQLite's own VFS, another file descriptor: what the file holds) */
        assert_int_equal(count_rows(r), (int64_t)(i + 1) * ROWS);
    }
    sqlite_gather_figures(&writes1, &flushes1);
    uint64_t writes = writes1 - writes0, flushes = flushes1 - flushes0;
    print_message("%d commits: %llu writes gathered into %llu\n", COMMITS,
                  (unsigned long long)writes, (unsigned long long)flushes);
    assert_true(writes >= (uint64_t)COMMITS * ROWS);   /* two a frame, ten frames a commit */
    assert_true(flushes >= COMMITS && flushes <= 2 * COMMITS);
    sqlite3_close(r);
    sqlite_close(w);
    assert_int_equal(sqlite3_open_v2(path, &r, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(count_rows(r), (int64_t)COMMITS * ROWS);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(r, "PRAGMA integrity_check", -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(st, 0), "ok");
    sqlite3_finalize(st);
    sqlite3_close(r);
    place_remove(&pl);
}

/* A connection that does not sync its commits (crash durability) writes as SQLite does. */
static void test_crash_durability_not_gathered(void **state)
{
    (void)state;
    struct place pl;
    place_make(&pl);
    struct err e;
    struct store_conn *w = sqlite_open_durable(pl.path, STORE_DURABLE_CRASH, &e);
    assert_non_null(w);
    uint64_t writes0, flushes0, writes1, flushes1;
    sqlite_gather_figures(&writes0, &flushes0);
    assert_int_equal(sqlite3_exec(w->db, "CREATE TABLE t (k INTEGER PRIMARY KEY, v BLOB);"
                                         "INSERT INTO t (v) VALUES (randomblob(9000));",
                                  NULL, NULL, NULL), SQLITE_OK);
    sqlite_gather_figures(&writes1, &flushes1);
    assert_true(writes1 == writes0 && flushes1 == flushes0);
    sqlite_close(w);
    place_remove(&pl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_commits_gathered),
        cmocka_unit_test(test_crash_durability_not_gathered),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
