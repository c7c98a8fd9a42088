/* outbox.c - the PostgreSQL backend's transactional outbox: notifications written in the
 * transaction of the change that caused them, picked up when due, every attempt recorded.
 * As storage/sqlite/outbox.c (one row a notification, a delivery one channel of a row);
 * several processes share the outbox: each claims the deliveries it makes (FOR UPDATE SKIP
 * LOCKED, then a lease in the channel's `_claimed`), so a delivery is made by one process at
 * a time, and a process that dies leaves its rows to the others once the lease runs out.
 * (Two channels of one row claimed at the same instant by two processes: the second skips
 * the row, locked by the first's claim, and takes it at its next claim.)
 */
#include "pg-int.h"
#include "outbox-sql.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const channel_names[] = {"email", "webhook"};
static const char *const status_names[] = {"pending", "delivered", "dead"};

static int channel_of(int64_t id)
{
    return (int)(id & 1);
}

#define ADD_SQL                                                                                \
    "INSERT INTO outbox (player_id, type, match_id, seq, webhook_id, body, created_at, seat,"  \
    " deadline, destination, email_status, email_next, webhook_status, webhook_next)"         \
    " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)"

bool pg_outbox_add(struct store_conn *c, struct store_outbox *o, struct err *e)
{
    int channels = o->channels ? o->channels : STORE_CHANNEL_BIT(o->channel);
    bool webhook = channels & STORE_CHANNEL_BIT(STORE_WEBHOOK);
    struct pg_params a = {0};
    pg_int(&a, o->player);
    pg_text(&a, o->type);
    pg_int_or_null(&a, o->match);
    pg_int(&a, o->seq);
    pg_text(&a, o->webhook_id);
    pg_text(&a, o->body);
    pg_int(&a, o->created_at);
    if (o->seat >= 0)
        pg_int(&a, o->seat);
    else
        pg_null(&a);
    pg_int_or_null(&a, o->deadline);
    pg_text(&a, webhook ? o->destination : "");
    for (int ch = STORE_EMAIL; ch <= STORE_WEBHOOK; ch++) {
        if (channels & STORE_CHANNEL_BIT(ch)) {
            pg_text(&a, "pending");
            pg_int(&a, o->next_attempt);
        } else {
            pg_null(&a);
            pg_null(&a);
        }
    }
    int first = channels & STORE_CHANNEL_BIT(STORE_EMAIL) ? STORE_EMAIL : STORE_WEBHOOK;
    o->id = 0;
    if (c->in_txn) /* (sent without waiting: nobody needs the id of a row written there) */
        return pg_do(c, ADD_SQL, &a, NULL, "add to the outbox", e);
    PGresult *r = pg_run(c, ADD_SQL " RETURNING id", &a, "add to the outbox", e);
    if (!r)
        return false;
    o->id = STORE_DELIVERY_ID(pg_get_int(r, 0, 0), first);
    PQclear(r);
    return true;
}

static int index_of(const char *const *names, int n, const char *text)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(names[i], text))
            return i;
    return 0;
}

/* The delivery by `channel` of row `i` of `r` (OUTBOX_ROW_LIST). */
static void read_delivery(const PGresult *r, int i, int channel, struct store_outbox *o)
{
    memset(o, 0, sizeof *o);
    o->id = STORE_DELIVERY_ID(pg_get_int(r, i, 0), channel);
    o->player = pg_get_int(r, i, 1);
    o->channel = channel;
    snprintf(o->type, sizeof o->type, "%s", PQgetvalue(r, i, 2));
    o->match = pg_get_int(r, i, 3);
    o->seq = pg_get_int(r, i, 4);
    snprintf(o->webhook_id, sizeof o->webhook_id, "%s", PQgetvalue(r, i, 5));
    o->body = pg_get_text(r, i, 6);
    o->created_at = pg_get_int(r, i, 7);
    o->seat = (int)pg_get_int(r, i, 8);
    o->deadline = pg_get_int(r, i, 9);
    if (channel == STORE_WEBHOOK)
        snprintf(o->destination, sizeof o->destination, "%s", PQgetvalue(r, i, 10));
    int col = OUTBOX_ROW_COMMON + channel * OUTBOX_ROW_CHANNEL;
    o->status = index_of(status_names, 3, PQgetvalue(r, i, col));
    o->attempts = (int)pg_get_int(r, i, col + 1);
    o->next_attempt = pg_get_int(r, i, col + 2);
    o->delivered_at = pg_get_int(r, i, col + 3);
    o->last_error = pg_get_text(r, i, col + 4);
}

#define ALL_CHANNELS (-1)

/* The deliveries by `channel` of the rows of `sql` (ALL_CHANNELS: each row's, its webhook's
 * first, those with an id below `below`) into out, at most `max`: the count, or -1. */
static int read_rows(struct store_conn *c, const char *sql, struct pg_params *a, int channel,
                     int64_t below, struct store_outbox *out, int max, struct err *e)
{
    PGresult *r = pg_run(c, sql, a, "read the outbox", e);
    if (!r)
        return -1;
    int n = 0;
    for (int i = 0; i < PQntuples(r) && n < max; i++)
        for (int ch = STORE_WEBHOOK; ch >= STORE_EMAIL && n < max; ch--)
            if (channel == ALL_CHANNELS
                    ? !PQgetisnull(r, i, OUTBOX_ROW_COMMON + ch * OUTBOX_ROW_CHANNEL) &&
                          STORE_DELIVERY_ID(pg_get_int(r, i, 0), ch) < below
                    : ch == channel)
                read_delivery(r, i, ch, &out[n++]);
    PQclear(r);
    return n;
}

#define GET_SQL(ch, c, dest)                                                                   \
    "SELECT" OUTBOX_ROW_LIST "FROM outbox WHERE id = $1 AND " ch "_status IS NOT NULL"

bool pg_outbox_get(struct store_conn *c, int64_t id, struct store_outbox *out, struct err *e)
{
    static const char *const sql[2] = OUTBOX_PER_CHANNEL(GET_SQL);
    if (id < 0)
        return err_set(e, ERR_NOT_FOUND, "not_found", "no such delivery");
    struct pg_params a = {0};
    pg_int(&a, id >> 1);
    int n = read_rows(c, sql[channel_of(id)], &a, channel_of(id), INT64_MAX, out, 1, e);
    if (n == 0)
        return err_set(e, ERR_NOT_FOUND, "not_found", "no such delivery");
    return n == 1;
}

#define NEXT_SQL(ch, c, dest)                                                                  \
    "SELECT min(" ch "_next) FROM outbox WHERE " ch "_status = 'pending'"

bool pg_outbox_next(struct store_conn *c, int channel, int64_t *when_ms, struct err *e)
{
    static const char *const sql[2] = OUTBOX_PER_CHANNEL(NEXT_SQL);
    PGresult *r = pg_run(c, sql[channel], NULL, "next due notification", e);
    if (!r)
        return false;
    bool found = PQntuples(r) == 1 && !PQgetisnull(r, 0, 0);
    if (found)
        *when_ms = pg_get_int(r, 0, 0);
    PQclear(r);
    return found || err_set(e, ERR_NOT_FOUND, "not_found", "nothing pending");
}

#define RECORD_SQL(ch, c, dest)                                                                \
    "UPDATE outbox SET " ch "_status = $1, " ch "_attempts = $2, " ch "_next = $3,"            \
    " " ch "_delivered_at = CASE WHEN $4::boolean THEN $5 ELSE " ch "_delivered_at END,"       \
    " " ch "_error = CASE WHEN $4::boolean THEN " ch "_error ELSE $6 END,"                      \
    " " ch "_held = $8::boolean AND $1 = 'pending', " ch "_claimed = NULL WHERE id = $7"
/* The updates of a destination's other rows below take only the rows nobody else holds (SKIP
 * LOCKED) and nobody is delivering (`_claimed`): they never wait, so that two records of one
 * destination's rows at once (two delivery threads, or two processes) cannot wait for each
 * other's rows, a deadlock the server breaks only after deadlock_timeout (a second), with
 * every write of the process queued behind the one that waits (the pool's statements run
 * under the hooks' lock). A row left out is being written by another transaction at that
 * moment (its own claim or record, which sets its time, or a redelivery); one left held by a
 * success is taken by the destination's next success or tried at its own time. */
/* a success: the rows held waiting for its destination are due now, STORE_RECOVER_BATCH of
 * them at most, those due first (the rest at the next success) */
#define RECOVERED_SQL(ch, c, dest)                                                             \
    "UPDATE outbox SET " ch "_next = $1, " ch "_held = false WHERE id IN (SELECT id FROM"      \
    " outbox WHERE " ch "_held AND " ch "_status = 'pending' AND coalesce(" ch "_claimed, 0)"  \
    " <= $1 AND " dest " = (SELECT " dest " FROM outbox WHERE id = $2) ORDER BY " ch "_next"   \
    " LIMIT " OUTBOX_NUMBER(STORE_RECOVER_BATCH) " FOR NO KEY UPDATE SKIP LOCKED)"
/* unreachable: its other rows held for it and due again wait with it */
#define UNREACHABLE_SQL(ch, c, dest)                                                           \
    "UPDATE outbox SET " ch "_next = $3 WHERE id IN (SELECT id FROM outbox WHERE " ch "_held"  \
    " AND " ch "_status = 'pending' AND " ch "_next <= $2 AND coalesce(" ch "_claimed, 0) <="  \
    " $2 AND " dest " = (SELECT " dest " FROM outbox WHERE id = $1) AND id <> $1"              \
    " FOR NO KEY UPDATE SKIP LOCKED)"

/* The statements of one row's record (store_outbox_settle), in the transaction open on c. */
static bool record_row(struct store_conn *c, const struct store_settle *r, struct err *e)
{
    static const char *const record[2] = OUTBOX_PER_CHANNEL(RECORD_SQL);
    static const char *const recovered[2] = OUTBOX_PER_CHANNEL(RECOVERED_SQL);
    static const char *const unreachable[2] = OUTBOX_PER_CHANNEL(UNREACHABLE_SQL);
    const struct store_attempt *at = r->a;
    int channel = channel_of(r->id);
    int64_t row = r->id >> 1;
    struct pg_params a = {0};
    pg_int(&a, row);
    pg_text(&a, channel_names[channel]);
    pg_int(&a, at->at);
    pg_bool(&a, at->ok);
    pg_int_or_null(&a, at->status);
    pg_text(&a, at->error[0] ? at->error : NULL);
    pg_int(&a, at->duration_ms);
    struct pg_params u = {0};
    pg_text(&u, status_names[r->status]);
    pg_int(&u, r->attempts);
    pg_int(&u, r->next_attempt);
    pg_bool(&u, at->ok);
    pg_int(&u, at->at);
    pg_text(&u, at->error);
    pg_int(&u, row);
    pg_bool(&u, at->unreachable);
    struct pg_params v = {0};
    pg_int(&v, at->at);
    pg_int(&v, row);
    struct pg_params h = {0};
    pg_int(&h, row);
    pg_int(&h, at->at);
    pg_int(&h, r->next_attempt);
    bool hold = !at->ok && at->unreachable && r->status == STORE_PENDING;
    return pg_do(c,
                 "INSERT INTO delivery_attempts (outbox_id, channel, at, ok, status, error,"
                 " duration_ms) VALUES ($1, $2, $3, $4, $5, $6, $7)",
                 &a, NULL, "record attempt", e) &&
           pg_do(c, record[channel], &u, NULL, "update outbox", e) &&
           (!at->ok || pg_do(c, recovered[channel], &v, NULL, "retry a recovered destination",
                             e)) &&
           (!hold || pg_do(c, unreachable[channel], &h, NULL,
                           "hold the rows of an unreachable destination", e));
}

#define RELEASE_SQL(ch, c, dest) "UPDATE outbox SET " ch "_claimed = NULL WHERE id = $1"

/* The rows of several deliveries locked for the transaction, in the order of their ids, by
 * one statement (the locks of a SELECT ... ORDER BY ... FOR UPDATE are taken in its order). */
#define LOCK_ROWS_SQL                                                                          \
    "SELECT id FROM outbox WHERE id = ANY($1::bigint[]) ORDER BY id FOR NO KEY UPDATE"

/* A write's records and releases (a delivery worker's pass) take the rows they name before
 * anything else, in one order: then they wait for no row after that (their own rows are
 * theirs; the other rows they update, and a claim's, are taken with SKIP LOCKED), so that two
 * of them at once (the email and the webhook workers, whose channels share a row, or two
 * processes) never each hold a row the other waits for: a deadlock the server breaks only
 * after deadlock_timeout (a second), with every write of the process queued behind it (the
 * statement that waits is answered under the hooks' lock). CI saw one: the email worker's
 * pass and the webhook worker's each updating a row the other had updated first. */
bool pg_outbox_settle(struct store_conn *c, const struct store_settle *rows, int n,
                      struct err *e)
{
    static const char *const release[2] = OUTBOX_PER_CHANNEL(RELEASE_SQL);
    /* In a transaction already (a write of a group commit): its statements only. */
    bool own = PQtransactionStatus(c->db) == PQTRANS_IDLE;
    if (own && !pg_begin(c, e))
        return false;
    bool ok = true;
    if (n > 1) {
        size_t size = (size_t)n * 21 + 2, len = 0; /* (an id's digits and its comma) */
        char *ids = malloc(size);
        for (int i = 0; ids && i < n; i++)
            len += (size_t)snprintf(ids + len, size - len, "%c%lld", i ? ',' : '{',
                                    (long long)(rows[i].id >> 1));
        if (ids)
            snprintf(ids + len, size - len, "}");
        struct pg_params a = {0};
        pg_text(&a, ids);
        ok = ids ? pg_do(c, LOCK_ROWS_SQL, &a, NULL, "lock the rows recorded", e)
                 : err_set(e, ERR_NOMEM, "nomem", "out of memory");
        free(ids);
    }
    for (int i = 0; ok && i < n; i++) {
        const struct store_settle *r = &rows[i];
        struct pg_params a = {0};
        pg_int(&a, r->id >> 1);
        ok = r->a ? record_row(c, r, e)
                  : pg_do(c, release[channel_of(r->id)], &a, NULL, "release a claim", e);
    }
    ok = ok && (!own || pg_commit(c, e));
    if (!ok && own && PQtransactionStatus(c->db) != PQTRANS_IDLE)
        pg_do(c, "ROLLBACK", NULL, NULL, "rollback", NULL);
    return ok;
}

/* A player's rows newest first, each giving its webhook's delivery, then its email's (the
 * deliveries' ids in descending order), those below `before` (0: all), `max` at most. */
int pg_outbox_of_player(struct store_conn *c, int64_t player, int64_t before,
                        struct store_outbox *out, int max, struct err *e)
{
    if (before <= 0)
        before = INT64_MAX;
    struct pg_params a = {0};
    pg_int(&a, player);
    pg_int(&a, before / 2 + before % 2); /* the rows of an id below it */
    pg_int(&a, max);
    return read_rows(c,
                     "SELECT" OUTBOX_ROW_LIST "FROM outbox WHERE player_id = $1 AND id < $2"
                     " ORDER BY id DESC LIMIT $3",
                     &a, ALL_CHANNELS, before, out, max, e);
}

int pg_attempts_of(struct store_conn *c, int64_t outbox, struct store_attempt *out, int max,
                   struct err *e)
{
    struct pg_params a = {0};
    pg_int(&a, outbox >> 1);
    pg_text(&a, channel_names[channel_of(outbox)]);
    pg_int(&a, max);
    PGresult *r = pg_run(c,
                         "SELECT at, ok, coalesce(status, 0), coalesce(error, ''), duration_ms"
                         " FROM delivery_attempts WHERE outbox_id = $1 AND channel = $2"
                         " ORDER BY id LIMIT $3",
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

#define REDELIVER_SQL(ch, c, dest)                                                             \
    "UPDATE outbox SET " ch "_status = 'pending', " ch "_next = $1 WHERE id = $2 AND"          \
    " " ch "_status IS NOT NULL"

bool pg_outbox_redeliver(struct store_conn *c, int64_t id, int64_t now_ms, struct err *e)
{
    static const char *const sql[2] = OUTBOX_PER_CHANNEL(REDELIVER_SQL);
    if (id < 0)
        return err_set(e, ERR_NOT_FOUND, "not_found", "no such delivery");
    struct pg_params a = {0};
    pg_int(&a, now_ms);
    pg_int(&a, id >> 1);
    int64_t n = 0;
    if (!pg_do(c, sql[channel_of(id)], &a, &n, "redeliver", e))
        return false;
    return n == 1 || err_set(e, ERR_NOT_FOUND, "not_found", "no such delivery");
}

/* The backlog: a count per channel and status, each through its partial index. */
bool pg_outbox_backlog(struct store_conn *c, int64_t pending[2], int64_t dead[2], struct err *e)
{
    PGresult *r = pg_run(c,
                         "SELECT (SELECT count(*) FROM outbox WHERE email_status = 'pending'),"
                         " (SELECT count(*) FROM outbox WHERE webhook_status = 'pending'),"
                         " (SELECT count(*) FROM outbox WHERE email_status = 'dead'),"
                         " (SELECT count(*) FROM outbox WHERE webhook_status = 'dead')",
                         NULL, "count the outbox", e);
    if (!r)
        return false;
    pending[STORE_EMAIL] = pg_get_int(r, 0, 0);
    pending[STORE_WEBHOOK] = pg_get_int(r, 0, 1);
    dead[STORE_EMAIL] = pg_get_int(r, 0, 2);
    dead[STORE_WEBHOOK] = pg_get_int(r, 0, 3);
    PQclear(r);
    return true;
}

/* The rows another process is claiming at this instant are skipped, not waited for; once its
 * claim commits, the channel's `_claimed` keeps them out until the lease runs out. With a
 * window: the first rows due (read without locks), then those of them not left out,
 * numbered within their destination and kept while within its room (ROOM_SQL), locked and
 * checked again (their status and claim: a claim another process committed meanwhile);
 * without: the due rows in the index's order until enough are found (the email worker's,
 * which has no destinations: $4 and $7 unused; webhooks: by destination,
 * CLAIM_BY_DESTINATION_SQL). $1 now, $2 the lease, $3 the ids left out, $4 the rooms, $5
 * the most rows, $6 the window (NULL: none), $7 the room of a destination not in $4. */
#define ROOM_SQL(dest)                                                                         \
    "CASE WHEN " dest " = '' THEN $5 ELSE coalesce(($4::jsonb ->> " dest ")::bigint,"          \
    " nullif($7::bigint, 0), $5) END"
#define CLAIM_SQL(ch, c, dest)                                                                 \
    "UPDATE outbox SET " ch "_claimed = $2 WHERE id IN (SELECT id FROM outbox"                 \
    " WHERE id IN (SELECT id FROM (SELECT id, dest, row_number() OVER (PARTITION BY dest"      \
    " ORDER BY next, id) AS k FROM (SELECT id, " dest " AS dest, " ch "_next AS next FROM"     \
    " outbox WHERE " ch "_status = 'pending' AND " ch "_next <= $1 AND"                        \
    " coalesce(" ch "_claimed, 0) <= $1 ORDER BY " ch "_next, id LIMIT $6) w WHERE"            \
    " id * 2 + " c " NOT IN (SELECT jsonb_array_elements_text($3::jsonb)::bigint)) r"          \
    " WHERE k <= " ROOM_SQL("r.dest") ") AND " ch "_status = 'pending' AND"                    \
    " coalesce(" ch "_claimed, 0) <= $1"                                                       \
    " ORDER BY " ch "_next, id LIMIT $5 FOR UPDATE SKIP LOCKED) RETURNING" OUTBOX_ROW_LIST
#define CLAIM_ALL_SQL(ch, c, dest)                                                             \
    "UPDATE outbox SET " ch "_claimed = $2 WHERE id IN (SELECT id FROM outbox"                 \
    " WHERE " ch "_status = 'pending' AND " ch "_next <= $1 AND"                               \
    " coalesce(" ch "_claimed, 0) <= $1 AND id * 2 + " c " NOT IN"                             \
    " (SELECT jsonb_array_elements_text($3::jsonb)::bigint) AND $6::bigint IS NULL AND"        \
    " $4::jsonb IS NOT NULL AND $7::bigint IS NOT NULL"                                        \
    " ORDER BY " ch "_next, id LIMIT $5 FOR UPDATE SKIP LOCKED) RETURNING" OUTBOX_ROW_LIST

/* The webhook claim without a window (the dispatcher's look past the first rows due while a
 * destination's slots are all busy): the same rows as a scan of every due row in due order
 * would give, found by destination (outbox_webhook_destination_due, migration 0017): a
 * recursive query steps from each destination with pending rows to the next (one index
 * probe each, past a busy destination's backlog without reading it), and a LATERAL
 * subquery reads the first rows due of each, as many as its room; of those, the first $5
 * due are locked, checked again and claimed. ($6, the window, is NULL here.) */
#define CLAIM_BY_DESTINATION_SQL                                                               \
    "WITH RECURSIVE d(dest) AS ((SELECT destination FROM outbox WHERE"                         \
    " webhook_status = 'pending' ORDER BY destination LIMIT 1) UNION ALL SELECT (SELECT"       \
    " destination FROM outbox WHERE webhook_status = 'pending' AND destination > d.dest"       \
    " ORDER BY destination LIMIT 1) FROM d WHERE d.dest IS NOT NULL)"                          \
    " UPDATE outbox SET webhook_claimed = $2 WHERE id IN (SELECT id FROM outbox WHERE id IN"   \
    " (SELECT r.id FROM d CROSS JOIN LATERAL (SELECT id, webhook_next FROM outbox WHERE"       \
    " webhook_status = 'pending' AND destination = d.dest AND webhook_next <= $1 AND"          \
    " coalesce(webhook_claimed, 0) <= $1 ORDER BY webhook_next, id"                            \
    " LIMIT least($5, " ROOM_SQL("d.dest") ")) r WHERE d.dest IS NOT NULL)"                    \
    " AND webhook_status = 'pending' AND coalesce(webhook_claimed, 0) <= $1 AND id * 2 + 1"    \
    " NOT IN (SELECT jsonb_array_elements_text($3::jsonb)::bigint) AND $6::bigint IS NULL"     \
    " ORDER BY webhook_next, id LIMIT $5 FOR UPDATE SKIP LOCKED) RETURNING" OUTBOX_ROW_LIST

int pg_outbox_claim(struct store_conn *c, int channel, int64_t now_ms, int64_t claimed_until,
                    const char *skip_ids, const char *rooms, int room, int window,
                    struct store_outbox *out, int max, struct err *e)
{
    static const char *const some[2] = OUTBOX_PER_CHANNEL(CLAIM_SQL);
    static const char *const all[2] = OUTBOX_PER_CHANNEL(CLAIM_ALL_SQL);
    struct pg_params a = {0};
    pg_int(&a, now_ms);
    pg_int(&a, claimed_until);
    pg_text(&a, skip_ids ? skip_ids : "[]");
    pg_text(&a, rooms ? rooms : "{}");
    pg_int(&a, max);
    pg_int_or_null(&a, window); /* (LIMIT NULL: no limit) */
    pg_int(&a, room);
    const char *sql = window > 0                  ? some[channel]
                      : channel == STORE_WEBHOOK ? CLAIM_BY_DESTINATION_SQL
                                                 : all[channel];
    return read_rows(c, sql, &a, channel, INT64_MAX, out, max, e);
}

/* Other processes may be delivering: their claims stay until their leases run out. */
bool pg_outbox_claims_reset(struct store_conn *c, struct err *e)
{
    (void)c;
    (void)e;
    return true;
}
