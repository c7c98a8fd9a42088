/* vacations.c - every vacation a player took: the pauses that move their seats' deadlines
 * (docs/api.md "Deadlines"). A player is on at most one vacation at a time, so a player's
 * vacations never overlap.
 */
#include "sqlite-int.h"

bool sqlite_vacation_add(struct store_conn *s, int64_t player, int64_t from, int64_t until,
                         struct err *e)
{
    sqlite3_stmt *st = sqlite_stmt(s, SQL_VACATION_ADD,
                                   "INSERT INTO vacations (player, from_s, until_s)"
                                   " VALUES (?, ?, ?)",
                                   e);
    if (!st)
        return false;
    sqlite3_bind_int64(st, 1, player);
    sqlite3_bind_int64(st, 2, from);
    sqlite3_bind_int64(st, 3, until);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE || sqlite_fail(s, e, "add vacation");
}

bool sqlite_vacation_end(struct store_conn *s, int64_t player, int64_t now, struct err *e)
{
    /* A vacation that never began pauses nothing: it is dropped, not kept at length 0. */
    sqlite3_stmt *st = sqlite_stmt(s, SQL_VACATION_DROP,
                                   "DELETE FROM vacations WHERE player = ?1 AND from_s >= ?2"
                                   " AND until_s > ?2",
                                   e);
    if (!st)
        return false;
    sqlite3_bind_int64(st, 1, player);
    sqlite3_bind_int64(st, 2, now);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return sqlite_fail(s, e, "drop vacation");
    st = sqlite_stmt(s, SQL_VACATION_END,
                     "UPDATE vacations SET until_s = ?2 WHERE player = ?1 AND from_s < ?2"
                     " AND until_s > ?2",
                     e);
    if (!st)
        return false;
    sqlite3_bind_int64(st, 1, player);
    sqlite3_bind_int64(st, 2, now);
    rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE || sqlite_fail(s, e, "end vacation");
}

int sqlite_vacations_of(struct store_conn *s, int64_t player, int64_t after,
                        struct store_vacation *out, int max, struct err *e)
{
    sqlite3_stmt *st = sqlite_stmt(s, SQL_VACATIONS_OF,
                                   "SELECT from_s, until_s FROM vacations WHERE player = ?"
                                   " AND until_s > ? ORDER BY from_s LIMIT ?",
                                   e);
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, player);
    sqlite3_bind_int64(st, 2, after);
    sqlite3_bind_int(st, 3, max);
    int n = 0, rc;
    while (n < max && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        out[n].from = sqlite3_column_int64(st, 0);
        out[n].until = sqlite3_column_int64(st, 1);
        n++;
    }
    if (n < max && rc != SQLITE_DONE) {
        sqlite3_reset(st);
        sqlite_fail(s, e, "read vacations");
        return -1;
    }
    sqlite3_reset(st);
    return n;
}

bool sqlite_vacations_latest(struct store_conn *s,
                             void (*fn)(void *cls, int64_t player, int64_t until), void *cls,
                             struct err *e)
{
    sqlite3_stmt *st = sqlite_stmt(s, SQL_VACATIONS_LATEST,
                                   "SELECT player, max(until_s) FROM vacations GROUP BY player", e);
    if (!st)
        return false;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        fn(cls, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1));
    sqlite3_reset(st);
    return rc == SQLITE_DONE || sqlite_fail(s, e, "latest vacations");
}
