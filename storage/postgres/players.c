/* players.c - the PostgreSQL backend's players (insert, look up by token hash, get, their
 * email address and its confirmation, token rotation), the log of confirmation emails, and
 * every vacation a player took. As storage/sqlite/players.c and vacations.c.
 */
#include "pg-int.h"

#include <stdlib.h>

bool pg_player_insert(struct store_conn *c, struct store_player *p,
                      const uint8_t token_hash[STORE_HASH_BYTES], struct err *e)
{
    struct pg_params a = {0};
    pg_text(&a, p->name);
    pg_text(&a, p->email);
    pg_text(&a, p->webhook_url);
    pg_bytes(&a, token_hash, STORE_HASH_BYTES);
    pg_int(&a, p->created_at);
    pg_text(&a, p->webhook_secret);
    pg_text(&a, p->prefs);
    PGresult *r = pg_run(c,
                         "INSERT INTO players (name, email, webhook_url, token_hash, created_at,"
                         " webhook_secret, prefs) VALUES ($1, $2, $3, $4, $5, $6,"
                         " coalesce($7::text, '{}')) RETURNING id",
                         &a, "insert player", e);
    if (!r)
        return false;
    p->id = pg_get_int(r, 0, 0);
    PQclear(r);
    return true;
}

#define PLAYER_COLUMNS                                                                         \
    "SELECT id, name, email, webhook_url, created_at, webhook_secret, webhook_disabled, prefs," \
    " coalesce(vacation_from, 0), coalesce(vacation_until, 0), coalesce(vacation_year, 0),"     \
    " vacation_days_used, email_confirmed FROM players "

static bool read_player(struct store_conn *c, const char *sql, struct pg_params *a,
                        struct store_player *out, struct err *e)
{
    PGresult *r = pg_run(c, sql, a, "read player", e);
    if (!r)
        return false;
    if (PQntuples(r) == 0) {
        PQclear(r);
        return err_set(e, ERR_NOT_FOUND, "not_found", "no such player");
    }
    out->id = pg_get_int(r, 0, 0);
    out->name = pg_get_text(r, 0, 1);
    out->email = pg_get_text(r, 0, 2);
    out->webhook_url = pg_get_text(r, 0, 3);
    out->created_at = pg_get_int(r, 0, 4);
    out->webhook_secret = pg_get_text(r, 0, 5);
    out->webhook_disabled = pg_get_bool(r, 0, 6);
    out->prefs = pg_get_text(r, 0, 7);
    out->vacation_from = pg_get_int(r, 0, 8);
    out->vacation_until = pg_get_int(r, 0, 9);
    out->vacation_year = (int)pg_get_int(r, 0, 10);
    out->vacation_days_used = (int)pg_get_int(r, 0, 11);
    out->email_confirmed = pg_get_bool(r, 0, 12);
    PQclear(r);
    return true;
}

bool pg_player_by_token(struct store_conn *c, const uint8_t token_hash[STORE_HASH_BYTES],
                        struct store_player *out, struct err *e)
{
    struct pg_params a = {0};
    pg_bytes(&a, token_hash, STORE_HASH_BYTES);
    return read_player(c, PLAYER_COLUMNS "WHERE token_hash = $1", &a, out, e);
}

bool pg_player_get(struct store_conn *c, int64_t id, struct store_player *out, struct err *e)
{
    struct pg_params a = {0};
    pg_int(&a, id);
    return read_player(c, PLAYER_COLUMNS "WHERE id = $1", &a, out, e);
}

/* A statement that must change exactly one row of players. */
static bool one_player(struct store_conn *c, const char *sql, struct pg_params *a,
                       const char *what, struct err *e)
{
    int64_t n = 0;
    if (!pg_do(c, sql, a, &n, what, e))
        return false;
    return n == 1 || err_set(e, ERR_NOT_FOUND, "not_found", "no such player");
}

bool pg_player_webhook_gone(struct store_conn *c, int64_t id, const char *url, struct err *e)
{
    struct pg_params a = {0};
    pg_int(&a, id);
    pg_text(&a, url);
    return pg_do(c, "UPDATE players SET webhook_disabled = true WHERE id = $1 AND webhook_url = $2",
                 &a, NULL, "disable a webhook", e);
}

bool pg_player_update(struct store_conn *c, const struct store_player *p, struct err *e)
{
    struct pg_params a = {0};
    pg_text(&a, p->webhook_url);
    pg_text(&a, p->webhook_secret);
    pg_bool(&a, p->webhook_disabled);
    pg_text(&a, p->prefs);
    pg_int_or_null(&a, p->vacation_from);
    pg_int_or_null(&a, p->vacation_until);
    pg_int_or_null(&a, p->vacation_year);
    pg_int(&a, p->vacation_days_used);
    pg_int(&a, p->id);
    return one_player(c,
                      "UPDATE players SET webhook_url = $1, webhook_secret = $2,"
                      " webhook_disabled = $3, prefs = coalesce($4::text, '{}'),"
                      " vacation_from = $5, vacation_until = $6, vacation_year = $7,"
                      " vacation_days_used = $8 WHERE id = $9",
                      &a, "update player", e);
}

bool pg_player_email_set(struct store_conn *c, int64_t id, const char *email,
                         const uint8_t *code_hash, int64_t expires, struct err *e)
{
    struct pg_params a = {0};
    pg_text(&a, email);
    pg_bytes(&a, code_hash, STORE_HASH_BYTES);
    if (code_hash)
        pg_int(&a, expires);
    else
        pg_null(&a);
    pg_int(&a, id);
    return one_player(c,
                      "UPDATE players SET email = $1, email_confirmed = false,"
                      " email_code_hash = $2, email_code_expires = $3 WHERE id = $4",
                      &a, "set an email address", e);
}

bool pg_player_email_confirm(struct store_conn *c, int64_t id, const uint8_t *code_hash,
                             int64_t now, struct err *e)
{
    struct pg_params a = {0};
    pg_int(&a, id);
    pg_bytes(&a, code_hash, STORE_HASH_BYTES);
    pg_int(&a, now);
    int64_t n = 0;
    if (!pg_do(c,
               "UPDATE players SET email_confirmed = true, email_code_hash = NULL,"
               " email_code_expires = NULL WHERE id = $1 AND email IS NOT NULL"
               " AND ($2::bytea IS NULL OR (email_code_hash = $2::bytea AND"
               " email_code_expires > $3))",
               &a, &n, "confirm an email address", e))
        return false;
    if (n == 1)
        return true;
    if (code_hash)
        return err_set(e, ERR_INVALID, "bad_code",
                       "that is not the code of the last confirmation email, or it expired");
    return err_set(e, ERR_NOT_FOUND, "no_email", "the player has no email address");
}

bool pg_player_token_set(struct store_conn *c, int64_t id,
                         const uint8_t token_hash[STORE_HASH_BYTES], struct err *e)
{
    struct pg_params a = {0};
    pg_bytes(&a, token_hash, STORE_HASH_BYTES);
    pg_int(&a, id);
    return one_player(c, "UPDATE players SET token_hash = $1 WHERE id = $2", &a, "set a token",
                      e);
}

bool pg_confirmations_count(struct store_conn *c, int64_t player, const char *address,
                            int64_t since, int *count, int64_t *oldest, struct err *e)
{
    struct pg_params a = {0};
    if (address)
        pg_text(&a, address);
    else
        pg_int(&a, player);
    pg_int(&a, since);
    PGresult *r = pg_run(c,
                         address ? "SELECT count(*), coalesce(min(at), 0) FROM"
                                   " email_confirmations WHERE address = $1 AND at >= $2"
                                 : "SELECT count(*), coalesce(min(at), 0) FROM"
                                   " email_confirmations WHERE player_id = $1 AND at >= $2",
                         &a, "count confirmation emails", e);
    if (!r)
        return false;
    *count = (int)pg_get_int(r, 0, 0);
    *oldest = pg_get_int(r, 0, 1);
    PQclear(r);
    return true;
}

bool pg_confirmation_add(struct store_conn *c, int64_t player, const char *address, int64_t at,
                         struct err *e)
{
    struct pg_params a = {0};
    pg_int(&a, player);
    pg_text(&a, address);
    pg_int(&a, at);
    return pg_do(c, "INSERT INTO email_confirmations (player_id, address, at) VALUES ($1, $2, $3)",
                 &a, NULL, "record a confirmation email", e);
}

/* ---- Vacations ------------------------------------------------------------------------------ */

bool pg_vacation_add(struct store_conn *c, int64_t player, int64_t from, int64_t until,
                     struct err *e)
{
    struct pg_params a = {0};
    pg_int(&a, player);
    pg_int(&a, from);
    pg_int(&a, until);
    return pg_do(c, "INSERT INTO vacations (player, from_s, until_s) VALUES ($1, $2, $3)", &a,
                 NULL, "add vacation", e);
}

bool pg_vacation_end(struct store_conn *c, int64_t player, int64_t now, struct err *e)
{
    /* A vacation that never began pauses nothing: it is dropped, not kept at length 0. */
    struct pg_params a = {0};
    pg_int(&a, player);
    pg_int(&a, now);
    return pg_do(c,
                 "DELETE FROM vacations WHERE player = $1 AND from_s >= $2 AND until_s > $2",
                 &a, NULL, "drop vacation", e) &&
           pg_do(c,
                 "UPDATE vacations SET until_s = $2 WHERE player = $1 AND from_s < $2"
                 " AND until_s > $2",
                 &a, NULL, "end vacation", e);
}

int pg_vacations_of(struct store_conn *c, int64_t player, int64_t after,
                    struct store_vacation *out, int max, struct err *e)
{
    struct pg_params a = {0};
    pg_int(&a, player);
    pg_int(&a, after);
    pg_int(&a, max);
    PGresult *r = pg_run(c,
                         "SELECT from_s, until_s FROM vacations WHERE player = $1"
                         " AND until_s > $2 ORDER BY from_s LIMIT $3",
                         &a, "read vacations", e);
    if (!r)
        return -1;
    int n = PQntuples(r);
    for (int i = 0; i < n; i++)
        out[i] = (struct store_vacation){pg_get_int(r, i, 0), pg_get_int(r, i, 1)};
    PQclear(r);
    return n;
}

bool pg_vacations_latest(struct store_conn *c,
                         void (*fn)(void *cls, int64_t player, int64_t until), void *cls,
                         struct err *e)
{
    PGresult *r = pg_run(c, "SELECT player, max(until_s) FROM vacations GROUP BY player", NULL,
                         "latest vacations", e);
    if (!r)
        return false;
    for (int i = 0; i < PQntuples(r); i++)
        fn(cls, pg_get_int(r, i, 0), pg_get_int(r, i, 1));
    PQclear(r);
    return true;
}
