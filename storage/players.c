/* players.c - the players table: insert, look up by token hash, get by id. The bearer
 * token itself is never stored, only its SHA-256.
 */
#include "store-int.h"

#include <stdlib.h>

void store_player_finish(struct store_player *p)
{
    if (!p)
        return;
    free(p->name);
    free(p->email);
    free(p->webhook_url);
    free(p->webhook_secret);
    free(p->prefs);
    p->name = p->email = p->webhook_url = p->webhook_secret = p->prefs = NULL;
}

bool store_player_insert(struct store *s, struct store_player *p,
                         const uint8_t token_hash[STORE_HASH_BYTES], struct err *e)
{
    sqlite3_stmt *st = store_stmt(s, SQL_PLAYER_INSERT,
                                  "INSERT INTO players (name, email, webhook_url, token_hash,"
                                  " created_at, webhook_secret, prefs) VALUES (?, ?, ?, ?, ?, ?,"
                                  " coalesce(?, '{}'))",
                                  e);
    if (!st)
        return false;
    sqlite3_bind_text(st, 1, p->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, p->email, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, p->webhook_url, -1, SQLITE_STATIC);
    sqlite3_bind_blob(st, 4, token_hash, STORE_HASH_BYTES, SQLITE_STATIC);
    sqlite3_bind_int64(st, 5, p->created_at);
    sqlite3_bind_text(st, 6, p->webhook_secret, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 7, p->prefs, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return store_fail(s, e, "insert player");
    p->id = sqlite3_last_insert_rowid(s->db);
    return true;
}

static bool read_player(struct store *s, sqlite3_stmt *st, struct store_player *out,
                        struct err *e)
{
    int rc = sqlite3_step(st);
    if (rc == SQLITE_DONE) {
        sqlite3_reset(st);
        return err_set(e, ERR_NOT_FOUND, "not_found", "no such player");
    }
    if (rc != SQLITE_ROW) {
        sqlite3_reset(st);
        return store_fail(s, e, "read player");
    }
    out->id = sqlite3_column_int64(st, 0);
    out->name = store_column_text(st, 1);
    out->email = store_column_text(st, 2);
    out->webhook_url = store_column_text(st, 3);
    out->created_at = sqlite3_column_int64(st, 4);
    out->webhook_secret = store_column_text(st, 5);
    out->webhook_disabled = sqlite3_column_int(st, 6);
    out->prefs = store_column_text(st, 7);
    out->vacation_from = sqlite3_column_int64(st, 8);
    out->vacation_until = sqlite3_column_int64(st, 9);
    out->vacation_year = sqlite3_column_int(st, 10);
    out->vacation_days_used = sqlite3_column_int(st, 11);
    sqlite3_reset(st);
    return true;
}

#define PLAYER_COLUMNS                                                                         \
    "SELECT id, name, email, webhook_url, created_at, webhook_secret, webhook_disabled, prefs," \
    " coalesce(vacation_from, 0), coalesce(vacation_until, 0), coalesce(vacation_year, 0),"     \
    " vacation_days_used FROM players "

bool store_player_by_token(struct store *s, const uint8_t token_hash[STORE_HASH_BYTES],
                           struct store_player *out, struct err *e)
{
    sqlite3_stmt *st =
        store_stmt(s, SQL_PLAYER_BY_TOKEN, PLAYER_COLUMNS "WHERE token_hash = ?", e);
    if (!st)
        return false;
    sqlite3_bind_blob(st, 1, token_hash, STORE_HASH_BYTES, SQLITE_STATIC);
    return read_player(s, st, out, e);
}

bool store_player_get(struct store *s, int64_t id, struct store_player *out, struct err *e)
{
    sqlite3_stmt *st = store_stmt(s, SQL_PLAYER_GET, PLAYER_COLUMNS "WHERE id = ?", e);
    if (!st)
        return false;
    sqlite3_bind_int64(st, 1, id);
    return read_player(s, st, out, e);
}

static void bind_time(sqlite3_stmt *st, int i, int64_t v)
{
    if (v)
        sqlite3_bind_int64(st, i, v);
    else
        sqlite3_bind_null(st, i);
}

bool store_player_update(struct store *s, const struct store_player *p, struct err *e)
{
    sqlite3_stmt *st = store_stmt(s, SQL_PLAYER_UPDATE,
                                  "UPDATE players SET email = ?, webhook_url = ?,"
                                  " webhook_secret = ?, webhook_disabled = ?,"
                                  " prefs = coalesce(?, '{}'), vacation_from = ?,"
                                  " vacation_until = ?, vacation_year = ?,"
                                  " vacation_days_used = ? WHERE id = ?",
                                  e);
    if (!st)
        return false;
    sqlite3_bind_text(st, 1, p->email, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, p->webhook_url, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, p->webhook_secret, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 4, p->webhook_disabled);
    sqlite3_bind_text(st, 5, p->prefs, -1, SQLITE_STATIC);
    bind_time(st, 6, p->vacation_from);
    bind_time(st, 7, p->vacation_until);
    bind_time(st, 8, p->vacation_year);
    sqlite3_bind_int(st, 9, p->vacation_days_used);
    sqlite3_bind_int64(st, 10, p->id);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return store_fail(s, e, "update player");
    if (sqlite3_changes(s->db) != 1)
        return err_set(e, ERR_NOT_FOUND, "not_found", "no such player");
    return true;
}
