/* idempotency.c - Idempotency-Key records: the first answer to a POST, kept so that a
 * retry with the same key gets it again instead of acting twice; and the few settings the
 * service keeps for itself (its mail-signing key).
 */
#include "sqlite-int.h"

#include <stdlib.h>
#include <string.h>

bool sqlite_idem_get(struct store_conn *s, int64_t player, const char *key, struct store_idem *out,
                     struct err *e)
{
    memset(out, 0, sizeof *out);
    sqlite3_stmt *st = sqlite_stmt(s, SQL_IDEM_GET,
                                   "SELECT request, status, body FROM idempotency"
                                   " WHERE player_id = ? AND key = ?",
                                   e);
    if (!st)
        return false;
    sqlite3_bind_int64(st, 1, player);
    sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc != SQLITE_ROW) {
        sqlite3_reset(st);
        if (rc == SQLITE_DONE)
            return err_set(e, ERR_NOT_FOUND, "not_found", "no such key");
        return sqlite_fail(s, e, "read idempotency key");
    }
    if (sqlite3_column_bytes(st, 0) == STORE_HASH_BYTES)
        memcpy(out->request, sqlite3_column_blob(st, 0), STORE_HASH_BYTES);
    out->status = sqlite3_column_int(st, 1);
    out->body = sqlite_column_text(st, 2);
    sqlite3_reset(st);
    return true;
}

bool sqlite_idem_put(struct store_conn *s, int64_t player, const char *key,
                     const struct store_idem *r, int64_t now, struct err *e)
{
    sqlite3_stmt *st = sqlite_stmt(s, SQL_IDEM_PUT,
                                   "INSERT INTO idempotency (player_id, key, request, status, body,"
                                   " created_at) VALUES (?, ?, ?, ?, ?, ?)",
                                   e);
    if (!st)
        return false;
    sqlite3_bind_int64(st, 1, player);
    sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
    sqlite3_bind_blob(st, 3, r->request, STORE_HASH_BYTES, SQLITE_STATIC);
    sqlite3_bind_int(st, 4, r->status);
    sqlite3_bind_text(st, 5, r->body, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 6, now);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE || sqlite_fail(s, e, "save idempotency key");
}

bool sqlite_setting_get(struct store_conn *s, const char *key, void *out, size_t max,
                        size_t *len, struct err *e)
{
    sqlite3_stmt *st = sqlite_stmt(s, SQL_SETTING_GET, "SELECT value FROM settings WHERE key = ?",
                                   e);
    if (!st)
        return false;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        size_t n = (size_t)sqlite3_column_bytes(st, 0);
        *len = n < max ? n : max;
        memcpy(out, sqlite3_column_blob(st, 0), *len);
    }
    sqlite3_reset(st);
    if (rc == SQLITE_DONE)
        return err_set(e, ERR_NOT_FOUND, "not_found", "no setting %s", key);
    return rc == SQLITE_ROW || sqlite_fail(s, e, "read setting");
}

/* Write `key` with one of the two statements: replace it, or keep what is there. */
static bool setting_write(struct store_conn *s, bool replace, const char *key, const void *value,
                          size_t len, struct err *e)
{
    sqlite3_stmt *st =
        replace ? sqlite_stmt(s, SQL_SETTING_PUT,
                              "INSERT OR REPLACE INTO settings (key, value) VALUES (?, ?)", e)
                : sqlite_stmt(s, SQL_SETTING_INIT,
                              "INSERT OR IGNORE INTO settings (key, value) VALUES (?, ?)", e);
    if (!st)
        return false;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_blob(st, 2, value, (int)len, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE || sqlite_fail(s, e, "write setting");
}

bool sqlite_setting_put(struct store_conn *s, const char *key, const void *value, size_t len,
                        struct err *e)
{
    return setting_write(s, true, key, value, len, e);
}

bool sqlite_setting_init(struct store_conn *s, const char *key, void *value, size_t len,
                         struct err *e)
{
    if (!setting_write(s, false, key, value, len, e))
        return false;
    size_t got = 0;
    return sqlite_setting_get(s, key, value, len, &got, e);
}
