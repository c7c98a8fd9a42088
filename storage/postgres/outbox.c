/* outbox.c - the PostgreSQL backend's transactional outbox: notifications written in the
 * transaction of the change that caused them, picked up when due, every attempt recorded.
 * As storage/sqlite/outbox.c; several processes share the outbox: each claims the rows it
 * delivers (FOR UPDATE SKIP LOCKED, then a lease in claimed_until), so a row is delivered by
 * one process at a time, and a process that dies leaves its rows to the others once the
 * lease runs out.
 */
#include "pg-int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const channel_names[] = {"email", "webhook"};
static const char *const status_names[] = {"pending", "delivered", "dead"};

bool pg_outbox_add(struct store_conn *c, struct store_outbox *o, struct err *e)
{
    struct pg_params a = {0};
    pg_int(&a, o->player);
    pg_text(&a, channel_names[o->channel]);
    pg_text(&a, o->type);
    pg_int_or_null(&a, o->match);
    pg_int(&a, o->seq);
    pg_text(&a, o->webhook_id);
    pg_text(&a, o->body);
    pg_int(&a, o->next_attempt);
    pg_int(&a, o->created_at);
    if (o->seat >= 0)
        pg_int(&a, o->seat);
    else
        pg_null(&a);
    pg_int_or_null(&a, o->deadline);
    pg_text(&a, o->destination);
    o->id = 0;
    if (c->in_txn) /* (sent without waiting: nobody needs the id of a row written there) */
        return pg_do(c,
                     "INSERT INTO outbox (player_id, channel, type, match_id, seq, webhook_id,"
                     " body, status, attempts, next_attempt, created_at, seat, deadline,"
                     " destination) VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', 0, $8,"
                     " $9, $10, $11, $12)",
                     &a, NULL, "add to the outbox", e);
    PGresult *r = pg_run(c,
                         "INSERT INTO outbox (player_id, channel, type, match_id, seq, webhook_id,"
                         " body, status, attempts, next_attempt, created_at, seat, deadline,"
                         " destination) VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', 0, $8,"
                         " $9, $10, $11, $12) RETURNING id",
                         &a, "add to the outbox", e);
    if (!r)
        return false;
    o->id = pg_get_int(r, 0, 0);
    PQclear(r);
    return true;
}

/* The columns read_rows reads, in its order (also what a claim returns). */
#define OUTBOX_LIST                                                                            \
    " id, player_id, channel, type, coalesce(match_id, 0), coalesce(seq, 0),"                  \
    " webhook_id, body, status, attempts, next_attempt, created_at,"                           \
    " coalesce(delivered_at, 0), last_error, coalesce(seat, -1), coalesce(deadline, 0),"       \
    " destination "
#define OUTBOX_COLUMNS "SELECT" OUTBOX_LIST "FROM outbox "

static int index_of(const char *const *names, int n, const char *text)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(names[i], text))
            return i;
    return 0;
}

/* The rows of `sql` into out, at most `max`: the count, or -1. */
static int read_rows(struct store_conn *c, const char *sql, struct pg_params *a,
                     struct store_outbox *out, int max, struct err *e)
{
    PGresult *r = pg_run(c, sql, a, "read the outbox", e);
    if (!r)
        return -1;
    int n = PQntuples(r) < max ? PQntuples(r) : max;
    for (int i = 0; i < n; i++) {
        struct store_outbox *o = &out[i];
        memset(o, 0, sizeof *o);
        o->id = pg_get_int(r, i, 0);
        o->player = pg_get_int(r, i, 1);
        o->channel = index_of(channel_names, 2, PQgetvalue(r, i, 2));
        snprintf(o->type, sizeof o->type, "%s", PQgetvalue(r, i, 3));
        o->match = pg_get_int(r, i, 4);
        o->seq = pg_get_int(r, i, 5);
        snprintf(o->webhook_id, sizeof o->webhook_id, "%s", PQgetvalue(r, i, 6));
        o->body = pg_get_text(r, i, 7);
        o->status = index_of(status_names, 3, PQgetvalue(r, i, 8));
        o->attempts = (int)pg_get_int(r, i, 9);
        o->next_attempt = pg_get_int(r, i, 10);
        o->created_at = pg_get_int(r, i, 11);
        o->delivered_at = pg_get_int(r, i, 12);
        o->last_error = pg_get_text(r, i, 13);
        o->seat = (int)pg_get_int(r, i, 14);
        o->deadline = pg_get_int(r, i, 15);
        snprintf(o->destination, sizeof o->destination, "%s", PQgetvalue(r, i, 16));
    }
    PQclear(r);
    return n;
}

bool pg_outbox_get(struct store_conn *c, int64_t id, struct store_outbox *out, struct err *e)
{
    struct pg_params a = {0};
    pg_int(&a, id);
    int n = read_rows(c, OUTBOX_COLUMNS "WHERE id = $1", &a, out, 1, e);
    if (n == 0)
        return err_set(e, ERR_NOT_FOUND, "not_found", "no such delivery");
    return n == 1;
}

int pg_outbox_due(struct store_conn *c, int channel, int64_t now_ms, struct store_outbox *out,
                  int max, struct err *e)
{
    struct pg_params a = {0};
    pg_text(&a, channel_names[channel]);
    pg_int(&a, now_ms);
    pg_int(&a, max);
    return read_rows(c,
                     OUTBOX_COLUMNS "WHERE status = 'pending' AND channel = $1 AND"
                                    " next_attempt <= $2 ORDER BY next_attempt, id LIMIT $3",
                     &a, out, max, e);
}

bool pg_outbox_next(struct store_conn *c, int channel, int64_t *when_ms, struct err *e)
{
    struct pg_params a = {0};
    pg_text(&a, channel_names[channel]);
    PGresult *r = pg_run(c,
                         "SELECT min(next_attempt) FROM outbox WHERE status = 'pending'"
                         " AND channel = $1",
                         &a, "next due notification", e);
    if (!r)
        return false;
    bool found = PQntuples(r) == 1 && !PQgetisnull(r, 0, 0);
    if (found)
        *when_ms = pg_get_int(r, 0, 0);
    PQclear(r);
    return found || err_set(e, ERR_NOT_FOUND, "not_found", "nothing pending");
}

bool pg_outbox_record(struct store_conn *c, int64_t id, const struct store_attempt *at,
                      int status, int attempts, int64_t next_attempt, struct err *e)
{
    /* In a transaction already (a write of a group commit): its statements only. */
    bool own = PQtransactionStatus(c->db) == PQTRANS_IDLE;
    if (own && !pg_begin(c, e))
        return false;
    struct pg_params a = {0};
    pg_int(&a, id);
    pg_int(&a, at->at);
    pg_bool(&a, at->ok);
    pg_int_or_null(&a, at->status);
    pg_text(&a, at->error[0] ? at->error : NULL);
    pg_int(&a, at->duration_ms);
    struct pg_params u = {0};
    pg_text(&u, status_names[status]);
    pg_int(&u, attempts);
    pg_int(&u, next_attempt);
    pg_bool(&u, at->ok);
    pg_int(&u, at->at);
    pg_text(&u, at->error);
    pg_int(&u, id);
    pg_bool(&u, at->unreachable);
    struct pg_params v = {0};
    pg_int(&v, at->at);
    pg_int(&v, id);
    struct pg_params h = {0};
    pg_int(&h, id);
    pg_int(&h, at->at);
    pg_int(&h, next_attempt);
    bool hold = !at->ok && at->unreachable && status == STORE_PENDING;
    bool ok = pg_do(c,
                    "INSERT INTO delivery_attempts (outbox_id, at, ok, status, error,"
                    " duration_ms) VALUES ($1, $2, $3, $4, $5, $6)",
                    &a, NULL, "record attempt", e) &&
              pg_do(c,
                    "UPDATE outbox SET status = $1, attempts = $2, next_attempt = $3,"
                    " delivered_at = CASE WHEN $4::boolean THEN $5 ELSE delivered_at END,"
                    " last_error = CASE WHEN $4::boolean THEN last_error ELSE $6 END,"
                    " held = $8::boolean AND $1 = 'pending', claimed_until = NULL"
                    " WHERE id = $7",
                    &u, NULL, "update outbox", e) &&
              /* a success: the rows held waiting for its destination are due now */
              (!at->ok ||
               pg_do(c,
                     "UPDATE outbox SET next_attempt = $1, held = false WHERE held AND"
                     " status = 'pending' AND (channel, destination) = (SELECT channel,"
                     " destination FROM outbox WHERE id = $2)",
                     &v, NULL, "retry a recovered destination", e)) &&
              /* unreachable: its other rows held for it and due again wait with it */
              (!hold ||
               pg_do(c,
                     "UPDATE outbox SET next_attempt = $3 WHERE held AND"
                     " status = 'pending' AND next_attempt <= $2"
                     " AND coalesce(claimed_until, 0) <= $2 AND (channel, destination) ="
                     " (SELECT channel, destination FROM outbox WHERE id = $1) AND id <> $1",
                     &h, NULL, "hold the rows of an unreachable destination", e)) &&
              (!own || pg_commit(c, e));
    if (!ok && own && PQtransactionStatus(c->db) != PQTRANS_IDLE)
        pg_do(c, "ROLLBACK", NULL, NULL, "rollback", NULL);
    return ok;
}

int pg_outbox_of_player(struct store_conn *c, int64_t player, int64_t before,
                        struct store_outbox *out, int max, struct err *e)
{
    struct pg_params a = {0};
    pg_int(&a, player);
    pg_int(&a, before);
    pg_int(&a, max);
    return read_rows(c,
                     OUTBOX_COLUMNS "WHERE player_id = $1 AND ($2::bigint = 0 OR id < $2)"
                                    " ORDER BY id DESC LIMIT $3",
                     &a, out, max, e);
}

int pg_attempts_of(struct store_conn *c, int64_t outbox, struct store_attempt *out, int max,
                   struct err *e)
{
    struct pg_params a = {0};
    pg_int(&a, outbox);
    pg_int(&a, max);
    PGresult *r = pg_run(c,
                         "SELECT at, ok, coalesce(status, 0), coalesce(error, ''), duration_ms"
                         " FROM delivery_attempts WHERE outbox_id = $1 ORDER BY id LIMIT $2",
                         &a, "read attempts", e);
    if (!r)
        return -1;
    int n = PQntuples(r) < max ? PQntuples(r) : max;
    for (int i = 0; i < n; i++) {
        struct store_attempt *t = &out[i];
        t->at = pg_get_int(r, i, 0);
        t->ok = pg_get_bool(r, i, 1);
        t->status = (long)pg_get_int(r, i, 2);
        snprintf(t->error, sizeof t->error, "%s", PQgetvalue(r, i, 3));
        t->duration_ms = pg_get_int(r, i, 4);
    }
    PQclear(r);
    return n;
}

bool pg_outbox_redeliver(struct store_conn *c, int64_t id, int64_t now_ms, struct err *e)
{
    struct pg_params a = {0};
    pg_int(&a, now_ms);
    pg_int(&a, id);
    int64_t n = 0;
    if (!pg_do(c, "UPDATE outbox SET status = 'pending', next_attempt = $1 WHERE id = $2", &a,
               &n, "redeliver", e))
        return false;
    return n == 1 || err_set(e, ERR_NOT_FOUND, "not_found", "no such delivery");
}

int pg_outbox_upcoming(struct store_conn *c, int channel, const char *skip_ids,
                       const char *skip_players, struct store_outbox *out, int max,
                       struct err *e)
{
    struct pg_params a = {0};
    pg_text(&a, channel_names[channel]);
    pg_text(&a, skip_ids ? skip_ids : "[]");
    pg_text(&a, skip_players ? skip_players : "[]");
    pg_int(&a, max);
    return read_rows(c,
                     OUTBOX_COLUMNS "WHERE status = 'pending' AND channel = $1 AND id NOT IN"
                                    " (SELECT jsonb_array_elements_text($2::jsonb)::bigint)"
                                    " AND player_id NOT IN"
                                    " (SELECT jsonb_array_elements_text($3::jsonb)::bigint)"
                                    " ORDER BY next_attempt, id LIMIT $4",
                     &a, out, max, e);
}

/* The backlog: a count per channel and status, each through its partial index. */
bool pg_outbox_backlog(struct store_conn *c, int64_t pending[2], int64_t dead[2], struct err *e)
{
    PGresult *r = pg_run(c,
                         "SELECT 0, channel, count(*) FROM outbox WHERE status = 'pending'"
                         " GROUP BY channel UNION ALL SELECT 1, channel, count(*) FROM outbox"
                         " WHERE status = 'dead' GROUP BY channel",
                         NULL, "count the outbox", e);
    if (!r)
        return false;
    pending[0] = pending[1] = dead[0] = dead[1] = 0;
    for (int i = 0; i < PQntuples(r); i++) {
        int channel = index_of(channel_names, 2, PQgetvalue(r, i, 1));
        (pg_get_int(r, i, 0) ? dead : pending)[channel] = pg_get_int(r, i, 2);
    }
    PQclear(r);
    return true;
}

int pg_outbox_claim(struct store_conn *c, int channel, int64_t now_ms, int64_t claimed_until,
                    const char *skip_ids, const char *skip_dests, int window,
                    struct store_outbox *out, int max, struct err *e)
{
    struct pg_params a = {0};
    pg_text(&a, channel_names[channel]);
    pg_int(&a, now_ms);
    pg_int(&a, claimed_until);
    pg_text(&a, skip_ids ? skip_ids : "[]");
    pg_text(&a, skip_dests ? skip_dests : "[]");
    pg_int(&a, max);
    pg_int_or_null(&a, window); /* (LIMIT NULL: no limit) */
    /* The rows another process is claiming at this instant are skipped, not waited for;
     * once its claim commits, claimed_until keeps them out until the lease runs out. */
    /* With a window: the first rows due (read without locks), then those of them not left
     * out, locked and checked again (their status and claim: a claim another process
     * committed meanwhile); without: the due rows in the index's order until enough are
     * found. */
    const char *sql =
        window > 0
            ? "UPDATE outbox SET claimed_until = $3 WHERE id IN (SELECT id FROM outbox"
              " WHERE id IN (SELECT id FROM outbox WHERE status = 'pending' AND"
              " channel = $1 AND next_attempt <= $2 AND coalesce(claimed_until, 0) <= $2"
              " ORDER BY next_attempt, id LIMIT $7) AND status = 'pending' AND"
              " coalesce(claimed_until, 0) <= $2 AND id NOT IN"
              " (SELECT jsonb_array_elements_text($4::jsonb)::bigint) AND destination"
              " NOT IN (SELECT jsonb_array_elements_text($5::jsonb))"
              " ORDER BY next_attempt, id LIMIT $6 FOR UPDATE SKIP LOCKED)"
              " RETURNING" OUTBOX_LIST
            : "UPDATE outbox SET claimed_until = $3 WHERE id IN (SELECT id FROM outbox"
              " WHERE status = 'pending' AND channel = $1 AND next_attempt <= $2 AND"
              " coalesce(claimed_until, 0) <= $2 AND id NOT IN"
              " (SELECT jsonb_array_elements_text($4::jsonb)::bigint) AND destination"
              " NOT IN (SELECT jsonb_array_elements_text($5::jsonb)) AND $7::bigint IS NULL"
              " ORDER BY next_attempt, id LIMIT $6 FOR UPDATE SKIP LOCKED)"
              " RETURNING" OUTBOX_LIST;
    return read_rows(c, sql, &a, out, max, e);
}

bool pg_outbox_release(struct store_conn *c, int64_t id, struct err *e)
{
    struct pg_params a = {0};
    pg_int(&a, id);
    return pg_do(c, "UPDATE outbox SET claimed_until = NULL WHERE id = $1", &a, NULL,
                 "release a claim", e);
}

/* Other processes may be delivering: their claims stay until their leases run out. */
bool pg_outbox_claims_reset(struct store_conn *c, struct err *e)
{
    (void)c;
    (void)e;
    return true;
}
