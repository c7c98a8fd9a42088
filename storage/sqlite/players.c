/* players.c - the players table: insert, look up by token hash, get by id, their email
 * address and its confirmation, token rotation; and the log of confirmation emails that
 * their rate limits count. The bearer token itself is never stored, only its SHA-256, and
 * the same for a confirmation code.
 */
#include "sqlite-int.h"

#include <stdlib.h>

bool sqlite_player_insert(struct store_conn *s, struct store_player *p,
                          const uint8_t token_hash[STORE_HASH_BYTES], struct err *e)
{
    sqlite3_stmt *st = sqlite_stmt(s, SQL_PLAYER_INSERT,
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
        return sqlite_fail(s, e, "insert player");
    p->id = sqlite3_last_insert_rowid(s->db);
    return true;
}

static bool read_player(struct store_conn *s, sqlite3_stmt *st, struct store_player *out,
                        struct err *e)
{
    int rc = sqlite3_step(st);
    if (rc == SQLITE_DONE) {
        sqlite3_reset(st);
        return err_set(e, ERR_NOT_FOUND, "not_found", "no such player");
    }
    if (rc != SQLITE_ROW) {
        sqlite3_reset(st);
        return sqlite_fail(s, e, "read player");
    }
    out->id = sqlite3_column_int64(st, 0);
    out->name = sqlite_column_text(st, 1);
    out->email = sqlite_column_text(st, 2);
    out->webhook_url = sqlite_column_text(st, 3);
    out->created_at = sqlite3_column_int64(st, 4);
    out->webhook_secret = sqlite_column_text(st, 5);
    out->webhook_disabled = sqlite3_column_int(st, 6);
    out->prefs = sqlite_column_text(st, 7);
    out->vacation_from = sqlite3_column_int64(st, 8);
    out->vacation_until = sqlite3_column_int64(st, 9);
    out->vacation_year = sqlite3_column_int(st, 10);
    out->vacation_days_used = sqlite3_column_int(st, 11);
    out->email_confirmed = sqlite3_column_int(st, 12);
    sqlite3_reset(st);
    return true;
}

#define PLAYER_COLUMNS                                                                         \
    "SELECT id, name, email, webhook_url, created_at, webhook_secret, webhook_disabled, prefs," \
    " coalesce(vacation_from, 0), coalesce(vacation_until, 0), coalesce(vacation_year, 0),"     \
    " vacation_days_used, email_confirmed FROM players "

bool sqlite_player_by_token(struct store_conn *s, const uint8_t token_hash[STORE_HASH_BYTES],
                            struct store_player *out, struct err *e)
{
    sqlite3_stmt *st =
        sqlite_stmt(s, SQL_PLAYER_BY_TOKEN, PLAYER_COLUMNS "WHERE token_hash = ?", e);
    if (!st)
        return false;
    sqlite3_bind_blob(st, 1, token_hash, STORE_HASH_BYTES, SQLITE_STATIC);
    return read_player(s, st, out, e);
}

bool sqlite_player_get(struct store_conn *s, int64_t id, struct store_player *out, struct err *e)
{
    sqlite3_stmt *st = sqlite_stmt(s, SQL_PLAYER_GET, PLAYER_COLUMNS "WHERE id = ?", e);
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

bool sqlite_player_webhook_gone(struct store_conn *s, int64_t id, const char *url,
                                struct err *e)
{
    sqlite3_stmt *st = sqlite_stmt(s, SQL_PLAYER_WEBHOOK_GONE,
                                   "UPDATE players SET webhook_disabled = 1"
                                   " WHERE id = ? AND webhook_url = ?",
                                   e);
    if (!st)
        return false;
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_text(st, 2, url, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE || sqlite_fail(s, e, "disable a webhook");
}

bool sqlite_player_update(struct store_conn *s, const struct store_player *p, struct err *e)
{
    sqlite3_stmt *st = sqlite_stmt(s, SQL_PLAYER_UPDATE,
                                   "UPDATE players SET webhook_url = ?,"
                                   " webhook_secret = ?, webhook_disabled = ?,"
                                   " prefs = coalesce(?, '{}'), vacation_from = ?,"
                                   " vacation_until = ?, vacation_year = ?,"
                                   " vacation_days_used = ? WHERE id = ?",
                                   e);
    if (!st)
        return false;
    sqlite3_bind_text(st, 1, p->webhook_url, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, p->webhook_secret, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 3, p->webhook_disabled);
    sqlite3_bind_text(st, 4, p->prefs, -1, SQLITE_STATIC);
    bind_time(st, 5, p->vacation_from);
    bind_time(st, 6, p->vacation_until);
    bind_time(st, 7, p->vacation_year);
    sqlite3_bind_int(st, 8, p->vacation_days_used);
    sqlite3_bind_int64(st, 9, p->id);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return sqlite_fail(s, e, "update player");
    if (sqlite3_changes(s->db) != 1)
        return err_set(e, ERR_NOT_FOUND, "not_found", "no such player");
    return true;
}

/* One UPDATE of player `id` that must change exactly one row. */
static bool step_one(struct store_conn *s, sqlite3_stmt *st, const char *what, struct err *e)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return sqlite_fail(s, e, what);
    if (sqlite3_changes(s->db) != 1)
        return err_set(e, ERR_NOT_FOUND, "not_found", "no such player");
    return true;
}

bool sqlite_player_email_set(struct store_conn *s, int64_t id, const char *email,
                             const uint8_t *code_hash, int64_t expires, struct err *e)
{
    sqlite3_stmt *st = sqlite_stmt(s, SQL_PLAYER_EMAIL_SET,
                                   "UPDATE players SET email = ?, email_confirmed = 0,"
                                   " email_code_hash = ?, email_code_expires = ? WHERE id = ?",
                                   e);
    if (!st)
        return false;
    sqlite3_bind_text(st, 1, email, -1, SQLITE_STATIC);
    if (code_hash) {
        sqlite3_bind_blob(st, 2, code_hash, STORE_HASH_BYTES, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, expires);
    }
    sqlite3_bind_int64(st, 4, id);
    return step_one(s, st, "set an email address", e);
}

bool sqlite_player_email_confirm(struct store_conn *s, int64_t id, const uint8_t *code_hash,
                                 int64_t now, struct err *e)
{
    /* (?2 IS NULL: the operator; else the code must match and be in time) */
    sqlite3_stmt *st = sqlite_stmt(s, SQL_PLAYER_EMAIL_CONFIRM,
                                   "UPDATE players SET email_confirmed = 1, email_code_hash = NULL,"
                                   " email_code_expires = NULL WHERE id = ?1 AND email IS NOT NULL"
                                   " AND (?2 IS NULL OR (email_code_hash = ?2 AND"
                                   " email_code_expires > ?3))",
                                   e);
    if (!st)
        return false;
    sqlite3_bind_int64(st, 1, id);
    if (code_hash)
        sqlite3_bind_blob(st, 2, code_hash, STORE_HASH_BYTES, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, now);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return sqlite_fail(s, e, "confirm an email address");
    if (sqlite3_changes(s->db) == 1)
        return true;
    if (code_hash)
        return err_set(e, ERR_INVALID, "bad_code",
                       "that is not the code of the last confirmation email, or it expired");
    return err_set(e, ERR_NOT_FOUND, "no_email", "the player has no email address");
}

bool sqlite_player_token_set(struct store_conn *s, int64_t id,
                             const uint8_t token_hash[STORE_HASH_BYTES], struct err *e)
{
    sqlite3_stmt *st =
        sqlite_stmt(s, SQL_PLAYER_TOKEN_SET, "UPDATE players SET token_hash = ? WHERE id = ?", e);
    if (!st)
        return false;
    sqlite3_bind_blob(st, 1, token_hash, STORE_HASH_BYTES, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, id);
    return step_one(s, st, "set a token", e);
}

bool sqlite_confirmations_count(struct store_conn *s, int64_t player, const char *address,
                                int64_t since, int *count, int64_t *oldest, struct err *e)
{
    sqlite3_stmt *st =
        address ? sqlite_stmt(s, SQL_CONFIRM_COUNT_ADDRESS,
                              "SELECT count(*), coalesce(min(at), 0) FROM email_confirmations"
                              " WHERE address = ? AND at >= ?",
                              e)
                : sqlite_stmt(s, SQL_CONFIRM_COUNT_PLAYER,
                              "SELECT count(*), coalesce(min(at), 0) FROM email_confirmations"
                              " WHERE player_id = ? AND at >= ?",
                              e);
    if (!st)
        return false;
    if (address)
        sqlite3_bind_text(st, 1, address, -1, SQLITE_STATIC);
    else
        sqlite3_bind_int64(st, 1, player);
    sqlite3_bind_int64(st, 2, since);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *count = sqlite3_column_int(st, 0);
        *oldest = sqlite3_column_int64(st, 1);
    }
    sqlite3_reset(st);
    return rc == SQLITE_ROW || sqlite_fail(s, e, "count confirmation emails");
}

bool sqlite_confirmation_add(struct store_conn *s, int64_t player, const char *address, int64_t at,
                             struct err *e)
{
    sqlite3_stmt *st = sqlite_stmt(s, SQL_CONFIRM_ADD,
                                   "INSERT INTO email_confirmations (player_id, address, at)"
                                   " VALUES (?, ?, ?)",
                                   e);
    if (!st)
        return false;
    sqlite3_bind_int64(st, 1, player);
    sqlite3_bind_text(st, 2, address, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, at);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE || sqlite_fail(s, e, "record a confirmation email");
}
