/* tickets.c - the PostgreSQL backend's stream tickets (store.h: store_ticket_add,
 * store_ticket_take), in the table stream_tickets that every process sees
 * (migrations/postgres/0012-stream-tickets.sql). Drawing one counts the tickets and adds
 * it under a transaction-scoped advisory lock, so two processes drawing at once cannot both
 * pass a bound; using one is a single DELETE ... RETURNING, so of two processes offered the
 * same ticket exactly one gets it.
 */
#include "pg-int.h"

#include <string.h>

/* The advisory lock the draws take (session leases use the migration key plus theirs,
 * storage/postgres/open.c: this key is below them all). */
#define PG_TICKETS_LOCK (0x63617264706f7374LL - 1)

/* Inside the transaction, the lock held: delete the expired tickets, count the live ones. */
static bool count(struct store_conn *c, const struct store_ticket *k, int64_t now_ms,
                  struct store_ticket_room *room, struct err *e)
{
    struct pg_params a = {0};
    pg_int(&a, PG_TICKETS_LOCK);
    if (!pg_do(c, "SELECT pg_advisory_xact_lock($1::bigint)", &a, NULL, "lock the tickets", e))
        return false;
    struct pg_params b = {0};
    pg_int(&b, now_ms);
    if (!pg_do(c, "DELETE FROM stream_tickets WHERE expires_ms <= $1", &b, NULL,
               "delete expired tickets", e))
        return false;
    struct pg_params d = {0};
    pg_int(&d, k->player);
    PGresult *r = pg_run(c,
                         "SELECT count(*) FILTER (WHERE player_id = $1), count(*),"
                         " coalesce(min(expires_ms) FILTER (WHERE player_id = $1), 0)"
                         " FROM stream_tickets",
                         &d, "count tickets", e);
    if (!r)
        return false;
    room->held = (int)pg_get_int(r, 0, 0);
    room->all = (int)pg_get_int(r, 0, 1);
    room->first_expiry = pg_get_int(r, 0, 2);
    PQclear(r);
    return true;
}

bool pg_ticket_add(struct store_conn *c, const struct store_ticket *k, int64_t now_ms,
                   int per_player, int in_all, struct store_ticket_room *room, struct err *e)
{
    *room = (struct store_ticket_room){0};
    if (!pg_begin(c, e))
        return false;
    bool ok = count(c, k, now_ms, room, e);
    if (ok && room->held < per_player && room->all < in_all) {
        struct pg_params a = {0};
        pg_bytes(&a, k->hash, STORE_HASH_BYTES);
        pg_int(&a, k->player);
        pg_int(&a, k->match);
        pg_int(&a, k->expires_ms);
        ok = room->added = pg_do(c,
                                 "INSERT INTO stream_tickets (hash, player_id, match_id,"
                                 " expires_ms) VALUES ($1, $2, $3, $4)",
                                 &a, NULL, "add a ticket", e);
    }
    if (ok && pg_commit(c, e))
        return true;
    store_postgres_backend.rollback(c); /* (none left if the commit failed) */
    room->added = false;
    return false;
}

bool pg_ticket_take(struct store_conn *c, const uint8_t hash[STORE_HASH_BYTES],
                    struct store_ticket *out, struct err *e)
{
    *out = (struct store_ticket){0};
    struct pg_params a = {0};
    pg_bytes(&a, hash, STORE_HASH_BYTES);
    PGresult *r = pg_run(c,
                         "DELETE FROM stream_tickets WHERE hash = $1"
                         " RETURNING player_id, match_id, expires_ms",
                         &a, "take a ticket", e);
    if (!r)
        return false;
    bool found = PQntuples(r) > 0;
    if (found) {
        memcpy(out->hash, hash, STORE_HASH_BYTES);
        out->player = pg_get_int(r, 0, 0);
        out->match = pg_get_int(r, 0, 1);
        out->expires_ms = pg_get_int(r, 0, 2);
    }
    PQclear(r);
    return found || err_set(e, ERR_NOT_FOUND, "not_found", "no such stream ticket");
}
