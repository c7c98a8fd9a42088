/* outbox.c - the transactional outbox: notifications written in the same transaction as the
 * change that caused them, picked up by the delivery workers when due, with every attempt
 * recorded; and what a player or the operator can ask of them (list, redeliver).
 *
 * One row a notification (migration 0015), each channel's delivery in columns of its own
 * (email_*, webhook_*: a status NULL where that channel does not deliver it). What the
 * store's functions take and give is a delivery, one channel of a row, under the id
 * STORE_DELIVERY_ID (the row's times two, plus one for the webhook): a statement about a
 * channel is written once for each (OUTBOX_PER_CHANNEL, outbox-sql.h), and cached in a
 * slot of each. A row is written to outbox_fresh first, and taken into outbox when a claim
 * wants it ("Fresh rows" below, migration 0020).
 */
#include "sqlite-int.h"
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

/* ---- A player's rows (migration 0018) -------------------------------------------------------
 * outbox_players holds (player_id, id) of the rows up to outbox_indexed.upto; the rows past it
 * are added in one sorted insert once OUTBOX_INDEX_BATCH of them have come, in the transaction
 * of the row that made them that many. An index kept at every insert took each row into its
 * player's part of it: a page changed (and written to the WAL, and again at the checkpoint)
 * for nearly every row of a commit. A player's listing reads the rows past the mark from the
 * outbox itself (at most about a batch of them, in id order) and the rest through the table. */
#define OUTBOX_INDEX_BATCH 1024

static bool index_players(struct store_conn *s, struct err *e)
{
    if (s->outbox_unindexed < 0) { /* (first time on this connection: how many are past it) */
        sqlite3_stmt *st = sqlite_stmt(s, SQL_OUTBOX_UNINDEXED,
                                       "SELECT (SELECT count(*) FROM outbox WHERE id > u) +"
                                       " (SELECT count(*) FROM outbox_fresh WHERE id > u)"
                                       " FROM (SELECT upto AS u FROM outbox_indexed)",
                                       e);
        if (!st)
            return false;
        int rc = sqlite3_step(st);
        if (rc == SQLITE_ROW)
            s->outbox_unindexed = sqlite3_column_int(st, 0);
        sqlite3_reset(st);
        if (rc != SQLITE_ROW)
            return sqlite_fail(s, e, "count the outbox's rows past its player index");
    } else {
        s->outbox_unindexed++;
    }
    if (s->outbox_unindexed < OUTBOX_INDEX_BATCH)
        return true;
    sqlite3_stmt *add = sqlite_stmt(s, SQL_OUTBOX_INDEX,
                                    "INSERT INTO outbox_players (player_id, id) SELECT"
                                    " player_id, id FROM (SELECT player_id, id FROM outbox"
                                    " WHERE id > (SELECT upto FROM outbox_indexed) UNION ALL"
                                    " SELECT player_id, id FROM outbox_fresh WHERE id >"
                                    " (SELECT upto FROM outbox_indexed)) ORDER BY player_id, id",
                                    e);
    sqlite3_stmt *mark = add ? sqlite_stmt(s, SQL_OUTBOX_INDEXED,
                                           "UPDATE outbox_indexed SET upto = max("
                                           "coalesce((SELECT max(id) FROM outbox), 0),"
                                           " coalesce((SELECT max(id) FROM outbox_fresh), 0))",
                                           e)
                             : NULL;
    if (!mark)
        return false;
    int rc = sqlite3_step(add);
    sqlite3_reset(add);
    if (rc == SQLITE_DONE) {
        rc = sqlite3_step(mark);
        sqlite3_reset(mark);
    }
    if (rc != SQLITE_DONE)
        return sqlite_fail(s, e, "add the outbox's rows to its player index");
    /* (none past it in this transaction; were it rolled back, the rows are past the mark
     * again, and the next batch takes them) */
    s->outbox_unindexed = 0;
    return true;
}

/* A fresh row as OUTBOX_ROW_LIST gives a row of outbox: pending by each of its channels, never
 * tried (as the view outbox_all gives it, for a read by id). */
#define FRESH_ROW_LIST                                                                         \
    " id, player_id, type, coalesce(match_id, 0), coalesce(seq, 0), webhook_id, body,"         \
    " created_at, coalesce(seat, -1), coalesce(deadline, 0), destination,"                     \
    " iif(channels & 1, 'pending', NULL), 0, iif(channels & 1, next_attempt, 0), 0, NULL,"    \
    " iif(channels & 2, 'pending', NULL), 0, iif(channels & 2, next_attempt, 0), 0, NULL "

/* A claim that comes back short takes fresh rows into outbox, the oldest FRESH_TAKE at most,
 * when some are for its channel and a destination with room (fresh_wanted). */
#define FRESH_TAKE 64

/* ---- Fresh rows (migration 0020) -----------------------------------------------------------
 * A notification is written to outbox_fresh: its row as written, keyed by its id alone, no
 * other index. Into outbox, with the indexes its deliveries need (seven), each row cost a
 * move's transaction about 32,000 instructions and several pages of the WAL a commit. A
 * claim that comes back short takes the fresh rows it could deliver into outbox
 * (fresh_wanted, take_fresh), in id order, the same ids kept; every read of a row by its
 * id, a player or a count reads both tables. Ids come from outbox_add alone, the largest of
 * both tables' plus one, read once a transaction (no other writer meanwhile).
 * docs/decisions.md "A notification's row is an append". */

/* ---- What outbox_fresh holds ----------------------------------------------------------------
 * How many fresh rows each channel has, the webhooks' by destination: what a short claim asks
 * before it takes any (fresh_wanted). Kept on the connection that writes (SQLite: the
 * process's one): read from the table at first use, then counted at each row added and
 * taken; forgotten, to be read again, when a savepoint or a transaction that added or took
 * fresh rows is undone (sqlite_outbox_forget). */

struct fresh_dest {
    char *dest;                   /* NULL: an empty slot */
    int64_t n;                    /* its fresh rows by webhook */
};

struct fresh_counts {
    int64_t email, webhook;       /* fresh rows by each channel */
    int cap, used;                /* slots (a power of two), and those holding a destination */
    struct fresh_dest *slot;
};

static void fresh_free(struct fresh_counts *fc)
{
    if (!fc)
        return;
    for (int i = 0; i < fc->cap; i++)
        free(fc->slot[i].dest);
    free(fc->slot);
    free(fc);
}

void sqlite_outbox_forget(struct store_conn *s)
{
    fresh_free(s->fresh);
    s->fresh = NULL;
}

static uint64_t fresh_hash(const char *dest)
{
    uint64_t h = 1469598103934665603u; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)dest; *p; p++)
        h = (h ^ *p) * 1099511628211u;
    return h;
}

/* The slot of `dest`: found, or (add) made; NULL when absent (or out of memory). */
static struct fresh_dest *fresh_slot(struct fresh_counts *fc, const char *dest, bool add)
{
    if (add && (fc->used + 1) * 2 > fc->cap) {
        /* Full: made again without the destinations that have no fresh row left (a player's
         * old webhooks), twice the size if they were all alive. */
        int live = 0, cap = 16;
        for (int i = 0; i < fc->cap; i++)
            live += fc->slot[i].dest && fc->slot[i].n != 0;
        while ((live + 1) * 2 > cap)
            cap *= 2;
        struct fresh_dest *slot = calloc((size_t)cap, sizeof *slot);
        if (!slot)
            return NULL;
        for (int i = 0; i < fc->cap; i++) {
            if (!fc->slot[i].dest || !fc->slot[i].n) {
                free(fc->slot[i].dest);
                continue;
            }
            uint64_t k = fresh_hash(fc->slot[i].dest) & (uint64_t)(cap - 1);
            while (slot[k].dest)
                k = (k + 1) & (uint64_t)(cap - 1);
            slot[k] = fc->slot[i];
        }
        free(fc->slot);
        fc->slot = slot;
        fc->cap = cap;
        fc->used = live;
    }
    if (!fc->cap)
        return NULL;
    uint64_t k = fresh_hash(dest) & (uint64_t)(fc->cap - 1);
    while (fc->slot[k].dest && strcmp(fc->slot[k].dest, dest))
        k = (k + 1) & (uint64_t)(fc->cap - 1);
    if (fc->slot[k].dest || !add)
        return fc->slot[k].dest ? &fc->slot[k] : NULL;
    if (!(fc->slot[k].dest = strdup(dest)))
        return NULL;
    fc->used++;
    return &fc->slot[k];
}

/* Count `n` rows (negative: taken) of `channels` for webhook destination `dest`. False
 * without memory. */
static bool fresh_count(struct fresh_counts *fc, int channels, const char *dest, int64_t n)
{
    if (channels & STORE_CHANNEL_BIT(STORE_EMAIL))
        fc->email += n;
    if (!(channels & STORE_CHANNEL_BIT(STORE_WEBHOOK)))
        return true;
    fc->webhook += n;
    struct fresh_dest *d = fresh_slot(fc, dest, n > 0);
    if (d)
        d->n += n;
    return d || n <= 0;
}

/* The counts, read from the table if not known. NULL (e filled) on failure. */
static struct fresh_counts *fresh_counts(struct store_conn *s, struct err *e)
{
    if (s->fresh)
        return s->fresh;
    sqlite3_stmt *st = sqlite_stmt(s, SQL_OUTBOX_FRESH_COUNTS,
                                   "SELECT destination, sum(channels & 1),"
                                   " sum(channels >> 1 & 1) FROM outbox_fresh GROUP BY"
                                   " destination",
                                   e);
    struct fresh_counts *fc = st ? calloc(1, sizeof *fc) : NULL;
    if (!fc) {
        if (st)
            err_set(e, ERR_NOMEM, "nomem", "out of memory");
        return NULL;
    }
    int rc;
    bool ok = true;
    while (ok && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *dest = (const char *)sqlite3_column_text(st, 0);
        fc->email += sqlite3_column_int64(st, 1);
        int64_t hooks = sqlite3_column_int64(st, 2);
        if (hooks)
            ok = fresh_count(fc, STORE_CHANNEL_BIT(STORE_WEBHOOK), dest ? dest : "", hooks);
    }
    sqlite3_reset(st);
    if (!ok || rc != SQLITE_DONE) {
        fresh_free(fc);
        if (!ok)
            err_set(e, ERR_NOMEM, "nomem", "out of memory");
        else
            sqlite_fail(s, e, "count the fresh rows");
        return NULL;
    }
    s->fresh = fc;
    return fc;
}

/* Count row(s) added or taken on the connection's counts, if it keeps them (the table is read
 * at first use otherwise); the savepoint that did it is marked, so that its undoing forgets
 * them. */
static void fresh_touch(struct store_conn *s, int channels, const char *dest, int64_t n)
{
    s->fresh_touched = true;
    if (s->fresh && !fresh_count(s->fresh, channels, dest, n))
        sqlite_outbox_forget(s); /* (out of memory: read again) */
}

/* The id of the next row: the largest in either table, plus one (read at the first row of a
 * transaction; then counted). */
static int64_t next_row_id(struct store_conn *s, struct err *e)
{
    if (s->outbox_next_id > 0 && !sqlite3_get_autocommit(s->db))
        return s->outbox_next_id++;
    sqlite3_stmt *st = sqlite_stmt(s, SQL_OUTBOX_NEXT_ID,
                                   "SELECT max(coalesce((SELECT max(id) FROM outbox), 0),"
                                   " coalesce((SELECT max(id) FROM outbox_fresh), 0)) + 1",
                                   e);
    if (!st)
        return 0;
    int rc = sqlite3_step(st);
    int64_t id = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    sqlite3_reset(st);
    if (rc != SQLITE_ROW) {
        sqlite_fail(s, e, "number an outbox row");
        return 0;
    }
    s->outbox_next_id = id + 1;
    return id;
}

bool sqlite_outbox_add(struct store_conn *s, struct store_outbox *o, struct err *e)
{
    sqlite3_stmt *st = sqlite_stmt(s, SQL_OUTBOX_ADD,
                                   "INSERT INTO outbox_fresh (id, player_id, type, match_id,"
                                   " seq, webhook_id, body, created_at, seat, deadline,"
                                   " destination, channels, next_attempt)"
                                   " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                                   e);
    int64_t id = st ? next_row_id(s, e) : 0;
    if (!id)
        return false;
    int channels = o->channels ? o->channels : STORE_CHANNEL_BIT(o->channel);
    bool webhook = channels & STORE_CHANNEL_BIT(STORE_WEBHOOK);
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int64(st, 2, o->player);
    sqlite3_bind_text(st, 3, o->type, -1, SQLITE_STATIC);
    if (o->match)
        sqlite3_bind_int64(st, 4, o->match);
    else
        sqlite3_bind_null(st, 4);
    sqlite3_bind_int64(st, 5, o->seq);
    sqlite3_bind_text(st, 6, o->webhook_id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 7, o->body, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 8, o->created_at);
    if (o->seat >= 0)
        sqlite3_bind_int(st, 9, o->seat);
    else
        sqlite3_bind_null(st, 9);
    if (o->deadline)
        sqlite3_bind_int64(st, 10, o->deadline);
    else
        sqlite3_bind_null(st, 10);
    sqlite3_bind_text(st, 11, webhook ? o->destination : "", -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 12, channels);
    sqlite3_bind_int64(st, 13, o->next_attempt);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return sqlite_fail(s, e, "add to the outbox");
    fresh_touch(s, channels, webhook ? o->destination : "", 1);
    int first = channels & STORE_CHANNEL_BIT(STORE_EMAIL) ? STORE_EMAIL : STORE_WEBHOOK;
    o->id = STORE_DELIVERY_ID(id, first);
    return index_players(s, e);
}

static int index_of(const char *const *names, int n, const unsigned char *text)
{
    for (int i = 0; i < n; i++)
        if (text && !strcmp(names[i], (const char *)text))
            return i;
    return 0;
}

/* Whether the row `st` is at (OUTBOX_ROW_LIST) is delivered by `channel`. */
static bool has_channel(sqlite3_stmt *st, int channel)
{
    return sqlite3_column_type(st, OUTBOX_ROW_COMMON + channel * OUTBOX_ROW_CHANNEL) != SQLITE_NULL;
}

/* The delivery by `channel` of the row `st` is at (OUTBOX_ROW_LIST). */
static void read_delivery(sqlite3_stmt *st, int channel, struct store_outbox *o)
{
    memset(o, 0, sizeof *o);
    o->id = STORE_DELIVERY_ID(sqlite3_column_int64(st, 0), channel);
    o->player = sqlite3_column_int64(st, 1);
    o->channel = channel;
    snprintf(o->type, sizeof o->type, "%s", (const char *)sqlite3_column_text(st, 2));
    o->match = sqlite3_column_int64(st, 3);
    o->seq = sqlite3_column_int64(st, 4);
    snprintf(o->webhook_id, sizeof o->webhook_id, "%s", (const char *)sqlite3_column_text(st, 5));
    o->body = sqlite_column_text(st, 6);
    o->created_at = sqlite3_column_int64(st, 7);
    o->seat = sqlite3_column_int(st, 8);
    o->deadline = sqlite3_column_int64(st, 9);
    if (channel == STORE_WEBHOOK)
        snprintf(o->destination, sizeof o->destination, "%s",
                 (const char *)sqlite3_column_text(st, 10));
    int c = OUTBOX_ROW_COMMON + channel * OUTBOX_ROW_CHANNEL;
    o->status = index_of(status_names, 3, sqlite3_column_text(st, c));
    o->attempts = sqlite3_column_int(st, c + 1);
    o->next_attempt = sqlite3_column_int64(st, c + 2);
    o->delivered_at = sqlite3_column_int64(st, c + 3);
    o->last_error = sqlite_column_text(st, c + 4);
}

#define ALL_CHANNELS (-1)

/* The deliveries by `channel` of the rows of `st` (ALL_CHANNELS: each row's, its webhook's
 * first, those with an id below `below`): at most `max` into `out`. The count, or -1 (e
 * filled). */
static int read_rows(struct store_conn *s, sqlite3_stmt *st, int channel, int64_t below,
                     struct store_outbox *out, int max, struct err *e)
{
    int n = 0, rc = SQLITE_DONE;
    while (n < max && (rc = sqlite3_step(st)) == SQLITE_ROW)
        for (int c = STORE_WEBHOOK; c >= STORE_EMAIL && n < max; c--)
            if (channel == ALL_CHANNELS
                    ? has_channel(st, c) &&
                          STORE_DELIVERY_ID(sqlite3_column_int64(st, 0), c) < below
                    : c == channel)
                read_delivery(st, c, &out[n++]);
    sqlite3_reset(st);
    if (n < max && rc != SQLITE_DONE) {
        for (int i = 0; i < n; i++)
            store_outbox_finish(&out[i]);
        sqlite_fail(s, e, "read the outbox");
        return -1;
    }
    return n;
}

#define GET_SQL(ch, c, dest)                                                                   \
    "SELECT" OUTBOX_ROW_LIST "FROM outbox_all WHERE id = ? AND " ch "_status IS NOT NULL"

bool sqlite_outbox_get(struct store_conn *s, int64_t id, struct store_outbox *out, struct err *e)
{
    static const char *const sql[2] = OUTBOX_PER_CHANNEL(GET_SQL);
    if (id < 0)
        return err_set(e, ERR_NOT_FOUND, "not_found", "no such delivery");
    int channel = channel_of(id);
    sqlite3_stmt *st = sqlite_stmt(s, SQL_OUTBOX_GET + channel, sql[channel], e);
    if (!st)
        return false;
    sqlite3_bind_int64(st, 1, id >> 1);
    int n = read_rows(s, st, channel, INT64_MAX, out, 1, e);
    if (n == 0)
        return err_set(e, ERR_NOT_FOUND, "not_found", "no such delivery");
    return n == 1;
}

/* (min() of a partial index's column: one step into the index; and the channel's among the
 * fresh rows a claim takes next: those past them, once these are taken, by a claim of either
 * channel) */
#define NEXT_SQL(ch, c, dest)                                                                  \
    "SELECT min(coalesce((SELECT min(" ch "_next) FROM outbox WHERE " ch "_status ="          \
    " 'pending'), 9223372036854775807), coalesce((SELECT min(next_attempt) FROM (SELECT"     \
    " next_attempt, channels FROM outbox_fresh ORDER BY id LIMIT " OUTBOX_NUMBER(FRESH_TAKE)  \
    ") WHERE channels & (1 << " c ")), 9223372036854775807))"

bool sqlite_outbox_next(struct store_conn *s, int channel, int64_t *when_ms, struct err *e)
{
    static const char *const sql[2] = OUTBOX_PER_CHANNEL(NEXT_SQL);
    sqlite3_stmt *st = sqlite_stmt(s, SQL_OUTBOX_NEXT + channel, sql[channel], e);
    if (!st)
        return false;
    int rc = sqlite3_step(st);
    bool found = rc == SQLITE_ROW && sqlite3_column_int64(st, 0) != INT64_MAX;
    if (found)
        *when_ms = sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
    if (rc != SQLITE_ROW)
        return sqlite_fail(s, e, "next due notification");
    return found || err_set(e, ERR_NOT_FOUND, "not_found", "nothing pending");
}

/* A delivery to the destination of row ?2's `channel` succeeded at ?1: the rows held waiting for
 * that destination (by the same channel) are due now, STORE_RECOVER_BATCH of them at most,
 * those due first (the held index's order: migration 0019), the rest at the next success. */
#define RECOVERED_SQL(ch, c, dest)                                                             \
    "UPDATE outbox SET " ch "_next = ?1, " ch "_held = 0 WHERE id IN (SELECT id FROM outbox"   \
    " INDEXED BY outbox_" ch "_held WHERE " ch "_held = 1 AND " ch "_status = 'pending' AND"   \
    " " dest " = (SELECT " dest " FROM outbox WHERE id = ?2) ORDER BY " ch "_next"             \
    " LIMIT " OUTBOX_NUMBER(STORE_RECOVER_BATCH) ")"

static bool recovered(struct store_conn *s, int channel, int64_t row, int64_t at_ms,
                      struct err *e)
{
    static const char *const sql[2] = OUTBOX_PER_CHANNEL(RECOVERED_SQL);
    sqlite3_stmt *st = sqlite_stmt(s, SQL_OUTBOX_RECOVERED + channel, sql[channel], e);
    if (!st)
        return false;
    sqlite3_bind_int64(st, 1, at_ms);
    sqlite3_bind_int64(st, 2, row);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE || sqlite_fail(s, e, "retry a recovered destination");
}

/* The destination of row ?1's `channel` could not be reached at ?2: its other rows held for
 * it (an earlier attempt could not reach it either) and due again wait with this one (until
 * ?3 or a success there) instead of each being tried in turn. A row never tried is tried
 * once all the same. Through the partial index of the held rows, never the backlog. */
#define UNREACHABLE_SQL(ch, c, dest)                                                           \
    "UPDATE outbox INDEXED BY outbox_" ch "_held SET " ch "_next = ?3"                         \
    " WHERE " ch "_held = 1 AND " ch "_status = 'pending' AND " ch "_next <= ?2 AND"           \
    " coalesce(" ch "_claimed, 0) <= ?2 AND " dest " = (SELECT " dest " FROM outbox"           \
    " WHERE id = ?1) AND id <> ?1"

static bool unreachable(struct store_conn *s, int channel, int64_t row, int64_t at_ms,
                        int64_t next_ms, struct err *e)
{
    static const char *const sql[2] = OUTBOX_PER_CHANNEL(UNREACHABLE_SQL);
    sqlite3_stmt *st = sqlite_stmt(s, SQL_OUTBOX_UNREACHABLE + channel, sql[channel], e);
    if (!st)
        return false;
    sqlite3_bind_int64(st, 1, row);
    sqlite3_bind_int64(st, 2, at_ms);
    sqlite3_bind_int64(st, 3, next_ms);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE || sqlite_fail(s, e, "hold the rows of an unreachable destination");
}

#define RECORD_SQL(ch, c, dest)                                                                \
    "UPDATE outbox SET " ch "_status = ?1, " ch "_attempts = ?2, " ch "_next = ?3,"            \
    " " ch "_delivered_at = CASE WHEN ?4 THEN ?5 ELSE " ch "_delivered_at END,"                \
    " " ch "_error = CASE WHEN ?4 THEN " ch "_error ELSE ?6 END,"                               \
    " " ch "_held = ?8 AND ?1 = 'pending', " ch "_claimed = NULL WHERE id = ?7"

static bool take_rows(struct store_conn *s, int64_t from, int64_t to, int channels,
                      const char *rooms, struct err *e);

/* The update of a record (RECORD_SQL, `st`) of row `row`: false on failure (e filled); *found
 * whether the row was in outbox. */
static bool record_row(struct store_conn *s, sqlite3_stmt *st, int64_t row,
                       const struct store_attempt *a, int status, int attempts,
                       int64_t next_attempt, bool *found, struct err *e)
{
    sqlite3_bind_text(st, 1, status_names[status], -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 2, attempts);
    sqlite3_bind_int64(st, 3, next_attempt);
    sqlite3_bind_int(st, 4, a->ok);
    sqlite3_bind_int64(st, 5, a->at);
    sqlite3_bind_text(st, 6, a->error, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 7, row);
    sqlite3_bind_int(st, 8, a->unreachable);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    *found = sqlite3_changes(s->db) == 1;
    return rc == SQLITE_DONE || sqlite_fail(s, e, "update outbox");
}

/* The statements of one row's record (store_outbox_settle), in the open transaction. */
static bool record_one(struct store_conn *s, const struct store_settle *r, struct err *e)
{
    static const char *const sql[2] = OUTBOX_PER_CHANNEL(RECORD_SQL);
    const struct store_attempt *a = r->a;
    int channel = channel_of(r->id);
    int64_t row = r->id >> 1;
    int status = r->status, attempts = r->attempts;
    int64_t next_attempt = r->next_attempt;
    /* The row's new state, then its attempt (which refers to it). A row never claimed may
     * be fresh still: taken first, then updated. */
    sqlite3_stmt *st = sqlite_stmt(s, SQL_OUTBOX_RECORD + channel, sql[channel], e);
    bool found = false;
    bool ok = st && record_row(s, st, row, a, status, attempts, next_attempt, &found, e);
    if (ok && !found)
        ok = take_rows(s, row, row,
                       STORE_CHANNEL_BIT(STORE_EMAIL) | STORE_CHANNEL_BIT(STORE_WEBHOOK), NULL,
                       e) &&
             record_row(s, st, row, a, status, attempts, next_attempt, &found, e);
    if (ok) {
        st = sqlite_stmt(s, SQL_ATTEMPT_ADD,
                         "INSERT INTO delivery_attempts (outbox_id, channel, at, ok, status,"
                         " error, duration_ms) VALUES (?, ?, ?, ?, ?, ?, ?)",
                         e);
        ok = st != NULL;
    }
    if (ok) {
        sqlite3_bind_int64(st, 1, row);
        sqlite3_bind_text(st, 2, channel_names[channel], -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, a->at);
        sqlite3_bind_int(st, 4, a->ok);
        if (a->status)
            sqlite3_bind_int64(st, 5, a->status);
        else
            sqlite3_bind_null(st, 5);
        if (a->error[0])
            sqlite3_bind_text(st, 6, a->error, -1, SQLITE_STATIC);
        else
            sqlite3_bind_null(st, 6);
        sqlite3_bind_int64(st, 7, a->duration_ms);
        ok = sqlite3_step(st) == SQLITE_DONE || sqlite_fail(s, e, "record attempt");
        sqlite3_reset(st);
    }
    if (ok && a->ok)
        ok = recovered(s, channel, row, a->at, e);
    if (ok && !a->ok && a->unreachable && status == STORE_PENDING)
        ok = unreachable(s, channel, row, a->at, next_attempt, e);
    return ok;
}

#define RELEASE_SQL(ch, c, dest) "UPDATE outbox SET " ch "_claimed = NULL WHERE id = ?"

static bool release_one(struct store_conn *s, int64_t id, struct err *e)
{
    static const char *const sql[2] = OUTBOX_PER_CHANNEL(RELEASE_SQL);
    int channel = channel_of(id);
    sqlite3_stmt *st = sqlite_stmt(s, SQL_OUTBOX_RELEASE + channel, sql[channel], e);
    if (!st)
        return false;
    sqlite3_bind_int64(st, 1, id >> 1);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE || sqlite_fail(s, e, "release a claim");
}

/* One writer: the rows are taken in the order given. */
bool sqlite_outbox_settle(struct store_conn *s, const struct store_settle *rows, int n,
                          struct err *e)
{
    /* In a transaction already (a write of a group commit): its statements only. */
    bool own = sqlite3_get_autocommit(s->db);
    if (own && !sqlite_begin(s, e))
        return false;
    bool ok = true;
    for (int i = 0; ok && i < n; i++)
        ok = rows[i].a ? record_one(s, &rows[i], e) : release_one(s, rows[i].id, e);
    if (ok && own)
        ok = sqlite_commit(s, e);
    if (!ok && own)
        sqlite_rollback(s);
    return ok;
}

/* A player's rows newest first, each giving its webhook's delivery, then its email's (the
 * deliveries' ids in descending order), those below `before` (0: all), `max` at most: those
 * past outbox_players' mark read in the outbox's order, then those it holds. */
int sqlite_outbox_of_player(struct store_conn *s, int64_t player, int64_t before,
                            struct store_outbox *out, int max, struct err *e)
{
    sqlite3_stmt *st = sqlite_stmt(
        s, SQL_OUTBOX_OF_PLAYER,
        "SELECT" OUTBOX_ROW_LIST "FROM outbox WHERE id > (SELECT upto FROM outbox_indexed)"
        " AND id < ?2 AND player_id = ?1"
        " UNION ALL SELECT" FRESH_ROW_LIST "FROM outbox_fresh WHERE id >"
        " (SELECT upto FROM outbox_indexed) AND id < ?2 AND player_id = ?1"
        " UNION ALL SELECT" OUTBOX_ROW_LIST "FROM outbox WHERE id IN (SELECT id FROM"
        " outbox_players WHERE player_id = ?1 AND id < ?2 ORDER BY id DESC LIMIT ?3)"
        " UNION ALL SELECT" FRESH_ROW_LIST "FROM outbox_fresh WHERE id IN (SELECT id FROM"
        " outbox_players WHERE player_id = ?1 AND id < ?2 ORDER BY id DESC LIMIT ?3)"
        " ORDER BY 1 DESC LIMIT ?3",
        e);
    if (!st)
        return -1;
    if (before <= 0)
        before = INT64_MAX;
    sqlite3_bind_int64(st, 1, player);
    sqlite3_bind_int64(st, 2, before / 2 + before % 2); /* the rows of an id below it */
    sqlite3_bind_int(st, 3, max);
    return read_rows(s, st, ALL_CHANNELS, before, out, max, e);
}

int sqlite_attempts_of(struct store_conn *s, int64_t outbox, struct store_attempt *out, int max,
                       struct err *e)
{
    sqlite3_stmt *st = sqlite_stmt(s, SQL_ATTEMPTS_OF,
                                   "SELECT at, ok, coalesce(status, 0), coalesce(error, ''),"
                                   " duration_ms FROM delivery_attempts WHERE outbox_id = ?"
                                   " AND channel = ? ORDER BY id LIMIT ?",
                                   e);
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, outbox >> 1);
    sqlite3_bind_text(st, 2, channel_names[channel_of(outbox)], -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 3, max);
    int n = 0, rc = SQLITE_DONE;
    while (n < max && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct store_attempt *a = &out[n++];
        a->at = sqlite3_column_int64(st, 0);
        a->ok = sqlite3_column_int(st, 1);
        a->status = (long)sqlite3_column_int64(st, 2);
        snprintf(a->error, sizeof a->error, "%s", (const char *)sqlite3_column_text(st, 3));
        a->duration_ms = sqlite3_column_int64(st, 4);
    }
    sqlite3_reset(st);
    if (n < max && rc != SQLITE_DONE) {
        sqlite_fail(s, e, "read attempts");
        return -1;
    }
    return n;
}

#define REDELIVER_SQL(ch, c, dest)                                                             \
    "UPDATE outbox SET " ch "_status = 'pending', " ch "_next = ? WHERE id = ? AND"            \
    " " ch "_status IS NOT NULL"

bool sqlite_outbox_redeliver(struct store_conn *s, int64_t id, int64_t now_ms, struct err *e)
{
    static const char *const sql[2] = OUTBOX_PER_CHANNEL(REDELIVER_SQL);
    if (id < 0)
        return err_set(e, ERR_NOT_FOUND, "not_found", "no such delivery");
    int channel = channel_of(id);
    sqlite3_stmt *st = sqlite_stmt(s, SQL_OUTBOX_REDELIVER + channel, sql[channel], e);
    if (!st)
        return false;
    sqlite3_bind_int64(st, 1, now_ms);
    sqlite3_bind_int64(st, 2, id >> 1);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return sqlite_fail(s, e, "redeliver");
    if (sqlite3_changes(s->db) == 1)
        return true;
    /* (a fresh row: pending and due already, if it has that channel) */
    st = sqlite_stmt(s, SQL_OUTBOX_FRESH_HAS, "SELECT 1 FROM outbox_fresh WHERE id = ?1 AND"
                                              " channels & ?2", e);
    if (!st)
        return false;
    sqlite3_bind_int64(st, 1, id >> 1);
    sqlite3_bind_int(st, 2, STORE_CHANNEL_BIT(channel));
    rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return sqlite_fail(s, e, "redeliver");
    return rc == SQLITE_ROW || err_set(e, ERR_NOT_FOUND, "not_found", "no such delivery");
}

/* The backlog: a count per channel and status, each through its partial index (the due
 * rows' for the pending, the dead rows' for the dead), never the whole table; and the fresh
 * rows, pending by their channels (one pass over them). */
bool sqlite_outbox_backlog(struct store_conn *s, int64_t pending[2], int64_t dead[2],
                           struct err *e)
{
    sqlite3_stmt *st = sqlite_stmt(s, SQL_OUTBOX_BACKLOG,
                                   "SELECT (SELECT count(*) FROM outbox INDEXED BY"
                                   " outbox_email_due WHERE email_status = 'pending'),"
                                   " (SELECT count(*) FROM outbox INDEXED BY outbox_webhook_due"
                                   " WHERE webhook_status = 'pending'),"
                                   " (SELECT count(*) FROM outbox INDEXED BY outbox_email_dead"
                                   " WHERE email_status = 'dead'),"
                                   " (SELECT count(*) FROM outbox INDEXED BY"
                                   " outbox_webhook_dead WHERE webhook_status = 'dead'),"
                                   " fresh_email, fresh_webhook FROM (SELECT"
                                   " coalesce(sum(channels & 1), 0) AS fresh_email,"
                                   " coalesce(sum(channels >> 1 & 1), 0) AS fresh_webhook"
                                   " FROM outbox_fresh)",
                                   e);
    if (!st)
        return false;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        pending[STORE_EMAIL] = sqlite3_column_int64(st, 0) + sqlite3_column_int64(st, 4);
        pending[STORE_WEBHOOK] = sqlite3_column_int64(st, 1) + sqlite3_column_int64(st, 5);
        dead[STORE_EMAIL] = sqlite3_column_int64(st, 2);
        dead[STORE_WEBHOOK] = sqlite3_column_int64(st, 3);
    }
    sqlite3_reset(st);
    return rc == SQLITE_ROW || sqlite_fail(s, e, "count the outbox");
}

/* A claim, on the one connection that writes (SQLite has one process; the lease still
 * keeps a row from being claimed twice by its threads): the rows found (claim_in_window,
 * claim_by_destination), then an UPDATE ... RETURNING of each (claim_ids). What is
 * left out (the ids, each destination's rows past its room) is decided here, not in SQL:
 * as SQL terms they cost a temporary table each (the `NOT IN` lists), a sort for a window
 * function, and a JSON parse for every row (a destination's room): about 1.2 million
 * instructions a claim, three times these statements'. */

/* The ids and rooms a claim is given (store_outbox_claim), read from their JSON by SQLite's
 * json_each: `ids` a delivery id each, `dests` and `rooms` a destination's room each. */
struct claim_args {
    int64_t *ids;
    int nids;
    char **dests;
    int64_t *rooms;
    int ndests;
    int room, max; /* (room: of any other destination, 0: none; max: the claim's) */
};

static void claim_args_finish(struct claim_args *a)
{
    for (int i = 0; i < a->ndests; i++)
        free(a->dests[i]);
    free(a->dests);
    free(a->rooms);
    free(a->ids);
}

/* `v` (`*cap` elements of `size` bytes) with room for element `n`: `v` itself, or the block
 * it grew into (*cap updated), or NULL without memory (`v` untouched). */
static void *room_for(void *v, int *cap, int n, size_t size)
{
    if (n < *cap)
        return v;
    int more = *cap ? *cap * 2 : 16;
    void *grown = realloc(v, (size_t)more * size);
    if (grown)
        *cap = more;
    return grown;
}

static bool claim_args_read(struct store_conn *s, const char *skip_ids, const char *rooms,
                            int room, int max, struct claim_args *a, struct err *e)
{
    *a = (struct claim_args){.room = room, .max = max};
    sqlite3_stmt *st = sqlite_stmt(s, SQL_JSON_EACH, "SELECT key, value FROM json_each(?1)", e);
    if (!st)
        return false;
    int cap_ids = 0, cap_dests = 0, cap_rooms = 0, rc = SQLITE_DONE;
    bool nomem = false;
    sqlite3_bind_text(st, 1, skip_ids ? skip_ids : "[]", -1, SQLITE_STATIC);
    while (!nomem && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t *ids = room_for(a->ids, &cap_ids, a->nids, sizeof *ids);
        if (!(nomem = !ids)) {
            a->ids = ids;
            a->ids[a->nids++] = sqlite3_column_int64(st, 1);
        }
    }
    sqlite3_reset(st);
    if (!nomem && rc == SQLITE_DONE) {
        sqlite3_bind_text(st, 1, rooms ? rooms : "{}", -1, SQLITE_STATIC);
        while (!nomem && (rc = sqlite3_step(st)) == SQLITE_ROW) {
            const char *key = (const char *)sqlite3_column_text(st, 0);
            char **dests = room_for(a->dests, &cap_dests, a->ndests, sizeof *dests);
            if (dests)
                a->dests = dests;
            int64_t *left = room_for(a->rooms, &cap_rooms, a->ndests, sizeof *left);
            if (left)
                a->rooms = left;
            char *dest = dests && left ? strdup(key ? key : "") : NULL;
            if (!(nomem = !dest)) {
                a->dests[a->ndests] = dest;
                a->rooms[a->ndests++] = sqlite3_column_int64(st, 1);
            }
        }
        sqlite3_reset(st);
    }
    sqlite3_clear_bindings(st);
    if (nomem || rc != SQLITE_DONE) {
        claim_args_finish(a);
        return nomem ? err_set(e, ERR_NOMEM, "nomem", "out of memory")
                     : sqlite_fail(s, e, "read a claim's ids and rooms");
    }
    return true;
}

/* Whether delivery id `id` is among those left out. */
static bool claim_skips(const struct claim_args *a, int64_t id)
{
    for (int i = 0; i < a->nids; i++)
        if (a->ids[i] == id)
            return true;
    return false;
}

/* How many rows of destination `dest` a claim may take: all it takes (`max`) without a
 * destination, its room if the caller gave one, else the room of any other (0: `max`). */
static int64_t claim_room(const struct claim_args *a, const char *dest)
{
    if (!dest[0])
        return a->max;
    for (int i = 0; i < a->ndests; i++)
        if (!strcmp(a->dests[i], dest))
            return a->rooms[i];
    return a->room > 0 ? a->room : a->max;
}

/* Claim rows `ids` (`n` row ids) of `channel` until `claimed_until`: an UPDATE of each, then
 * a read of it (the count read into `out`, or -1). One cached statement a row, not one with
 * an `IN` list: SQLite fills a temporary table for the list at every claim, which cost more
 * than the few rows a claim takes. Nor with RETURNING, which SQLite also collects in a
 * temporary table before it gives the first row: 54,000 instructions a row against 30,000
 * for the UPDATE and the SELECT (one writer, inside the claim's transaction: the same). */
#define CLAIM_IDS_SQL(ch, c, dest) "UPDATE outbox SET " ch "_claimed = ?1 WHERE id = ?2"

static int claim_ids(struct store_conn *s, int channel, int64_t claimed_until,
                     const int64_t *ids, int n, struct store_outbox *out, int max, struct err *e)
{
    static const char *const sql[2] = OUTBOX_PER_CHANNEL(CLAIM_IDS_SQL);
    static const char *const get_sql[2] = OUTBOX_PER_CHANNEL(GET_SQL);
    if (n == 0)
        return 0;
    sqlite3_stmt *take = sqlite_stmt(s, SQL_OUTBOX_CLAIM_IDS + channel, sql[channel], e);
    sqlite3_stmt *get =
        take ? sqlite_stmt(s, SQL_OUTBOX_GET + channel, get_sql[channel], e) : NULL;
    if (!get)
        return -1;
    int got = 0;
    sqlite3_bind_int64(take, 1, claimed_until);
    for (int i = 0; i < n && got < max; i++) {
        sqlite3_bind_int64(take, 2, ids[i]);
        int rc = sqlite3_step(take);
        sqlite3_reset(take);
        int one = 0;
        if (rc != SQLITE_DONE) {
            sqlite_fail(s, e, "claim a delivery");
            one = -1;
        } else if (sqlite3_changes(s->db) == 1) {
            sqlite3_bind_int64(get, 1, ids[i]);
            one = read_rows(s, get, channel, INT64_MAX, out + got, max - got, e);
        }
        if (one < 0) {
            for (int k = 0; k < got; k++)
                store_outbox_finish(&out[k]);
            return -1;
        }
        got += one;
    }
    return got;
}

/* The first `window` rows due in the index's order (no sort), or every row due (window 0:
 * the email worker's, whose rows have no destination); of them, the first `max` not left
 * out, no more of a destination's than its room. */
#define WINDOW_SQL(ch, c, dest)                                                                \
    "SELECT id, " dest " FROM outbox WHERE " ch "_status = 'pending' AND " ch "_next <= ?1"    \
    " AND coalesce(" ch "_claimed, 0) <= ?1 ORDER BY " ch "_next, id LIMIT ?2"

static int claim_in_window(struct store_conn *s, int channel, int64_t now_ms,
                           int64_t claimed_until, const struct claim_args *a, int window,
                           struct store_outbox *out, int max, struct err *e)
{
    static const char *const sql[2] = OUTBOX_PER_CHANNEL(WINDOW_SQL);
    sqlite3_stmt *st = sqlite_stmt(s, SQL_OUTBOX_WINDOW + channel, sql[channel], e);
    if (!st)
        return -1;
    /* (the rows taken, and the destinations met with how many of theirs are taken) */
    int64_t *ids = malloc((size_t)(max > 0 ? max : 1) * sizeof *ids);
    int cap = window > 0 ? window : 64, ndest = 0, n = 0, rc = SQLITE_DONE;
    char **dests = calloc((size_t)cap, sizeof *dests);
    int *taken = calloc((size_t)cap, sizeof *taken);
    if (!ids || !dests || !taken)
        rc = SQLITE_NOMEM;
    sqlite3_bind_int64(st, 1, now_ms);
    sqlite3_bind_int(st, 2, window > 0 ? window : -1);
    while (rc == SQLITE_DONE && n < max && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        rc = SQLITE_DONE;
        int64_t id = sqlite3_column_int64(st, 0);
        const char *dest = (const char *)sqlite3_column_text(st, 1);
        if (claim_skips(a, STORE_DELIVERY_ID(id, channel)))
            continue;
        int d = 0;
        while (d < ndest && strcmp(dests[d], dest ? dest : ""))
            d++;
        if (d == ndest) { /* (no window: as many destinations as rows) */
            int cap_taken = cap;
            char **nd = room_for(dests, &cap, ndest, sizeof *nd);
            if (nd)
                dests = nd;
            int *nt = room_for(taken, &cap_taken, ndest, sizeof *nt);
            if (nt)
                taken = nt;
            if (!nd || !nt || !(dests[ndest] = strdup(dest ? dest : ""))) {
                rc = SQLITE_NOMEM;
                break;
            }
            taken[ndest++] = 0;
        }
        if (taken[d] >= claim_room(a, dests[d]))
            continue;
        taken[d]++;
        ids[n++] = id;
    }
    sqlite3_reset(st);
    for (int d = 0; d < ndest; d++)
        free(dests[d]);
    free(dests);
    free(taken);
    int got = -1;
    if (rc == SQLITE_NOMEM)
        err_set(e, ERR_NOMEM, "nomem", "out of memory");
    else if (rc != SQLITE_DONE && rc != SQLITE_ROW)
        sqlite_fail(s, e, "find the rows due");
    else
        got = claim_ids(s, channel, claimed_until, ids, n, out, max, e);
    free(ids);
    return got;
}

/* A due webhook row found by claim_by_destination, before it is claimed. */
struct due_row {
    int64_t id, next;
};

/* Put row `r` among the `*n` best (earliest due, then lowest id) of `best`, which holds at
 * most `max`: false when it is not among them (nor is any later row of its destination). */
static bool keep_due(struct due_row *best, int *n, int max, struct due_row r)
{
    int at = *n;
    while (at > 0 && (best[at - 1].next > r.next ||
                      (best[at - 1].next == r.next && best[at - 1].id > r.id)))
        at--;
    if (at >= max)
        return false;
    int moved = *n < max ? *n - at : *n - at - 1;
    memmove(&best[at + 1], &best[at], (size_t)moved * sizeof *best);
    best[at] = r;
    if (*n < max)
        (*n)++;
    return true;
}

/* The webhook claim without a window (the dispatcher's look past the first rows due, once a
 * second while some destination is full): the same rows as a scan of every due row in due
 * order would give, the first `max` due among every destination within its room, found
 * through the index by destination (outbox_webhook_destination_due, migration 0017). For
 * each destination with pending rows, one step to it (a seek past the previous one's
 * entries, however many) and its first rows due, as many as its room, none for a full
 * one. A scan in due order read every row of a full destination's backlog at each look
 * (150,000 rows: 62 to 83 ms), where this reads a few index entries a destination
 * (docs/benchmarks.md "A look past a full destination by destination").
 *
 * With `most` > 0, the walk gives up before it claims anything once it meets more than
 * `most` destinations with pending rows: CLAIM_TOO_WIDE (claim_walk). */
#define CLAIM_TOO_WIDE (-2)
static int claim_by_destination(struct store_conn *s, int64_t now_ms, int64_t claimed_until,
                                const struct claim_args *a, struct store_outbox *out, int max,
                                int most, struct err *e)
{
    sqlite3_stmt *first_dest = sqlite_stmt(
        s, SQL_OUTBOX_FIRST_DESTINATION,
        "SELECT destination FROM outbox WHERE webhook_status = 'pending' ORDER BY destination"
        " LIMIT 1",
        e);
    sqlite3_stmt *next_dest = sqlite_stmt(
        s, SQL_OUTBOX_NEXT_DESTINATION,
        "SELECT destination FROM outbox WHERE webhook_status = 'pending' AND destination > ?1"
        " ORDER BY destination LIMIT 1",
        e);
    sqlite3_stmt *due = sqlite_stmt(
        s, SQL_OUTBOX_DESTINATION_DUE,
        "SELECT id, webhook_next FROM outbox WHERE webhook_status = 'pending' AND"
        " destination = ?1 AND webhook_next <= ?2 AND coalesce(webhook_claimed, 0) <= ?2"
        " ORDER BY webhook_next, id",
        e);
    if (!first_dest || !next_dest || !due)
        return -1;
    struct due_row *best = malloc((size_t)(max > 0 ? max : 1) * sizeof *best);
    if (!best) {
        err_set(e, ERR_NOMEM, "nomem", "out of memory");
        return -1;
    }
    char *dest = NULL; /* (NULL: the first destination is next) */
    int n = 0, rc = SQLITE_DONE, met = 0;
    bool too_wide = false;
    sqlite3_bind_int64(due, 2, now_ms);
    for (;;) {
        sqlite3_stmt *step = dest ? next_dest : first_dest;
        if (dest)
            sqlite3_bind_text(next_dest, 1, dest, -1, SQLITE_STATIC);
        rc = sqlite3_step(step);
        char *d = rc == SQLITE_ROW ? strdup((const char *)sqlite3_column_text(step, 0)) : NULL;
        sqlite3_reset(step);
        if (rc != SQLITE_ROW)
            break;
        free(dest);
        if (!(dest = d)) {
            rc = SQLITE_NOMEM;
            break;
        }
        if (most > 0 && ++met > most) {
            too_wide = true;
            break;
        }
        int64_t room = claim_room(a, dest), taken = 0;
        if (room <= 0)
            continue;
        sqlite3_bind_text(due, 1, dest, -1, SQLITE_STATIC);
        while (taken < room && (rc = sqlite3_step(due)) == SQLITE_ROW) {
            struct due_row r = {sqlite3_column_int64(due, 0), sqlite3_column_int64(due, 1)};
            if (claim_skips(a, STORE_DELIVERY_ID(r.id, STORE_WEBHOOK)))
                continue;
            if (!keep_due(best, &n, max, r))
                break;
            taken++;
        }
        sqlite3_reset(due);
        if (rc != SQLITE_ROW && rc != SQLITE_DONE)
            break;
        rc = SQLITE_DONE;
    }
    sqlite3_clear_bindings(next_dest);
    sqlite3_clear_bindings(due);
    free(dest);
    int got = -1;
    if (too_wide) {
        got = CLAIM_TOO_WIDE;
    } else if (rc == SQLITE_NOMEM) {
        err_set(e, ERR_NOMEM, "nomem", "out of memory");
    } else if (rc != SQLITE_DONE) {
        sqlite_fail(s, e, "find the webhooks due");
    } else {
        int64_t *ids = malloc((size_t)(n > 0 ? n : 1) * sizeof *ids);
        for (int i = 0; ids && i < n; i++)
            ids[i] = best[i].id;
        got = ids ? claim_ids(s, STORE_WEBHOOK, claimed_until, ids, n, out, max, e)
                  : (err_set(e, ERR_NOMEM, "nomem", "out of memory"), -1);
        free(ids);
    }
    free(best);
    return got;
}

/* How many destinations a webhook claim within a window walks to first (claim_walk). */
#define CLAIM_WALK_DESTINATIONS 8

/* A webhook claim within a window, on a database with few destinations: their rows by
 * destination (claim_by_destination), which finds the same rows as the window and more.
 * The window is a guess at where the rows a claim may take are: the first rows due, which
 * may all be a full destination's (a receiver with a backlog, its room taken by the
 * deliveries in flight), read at every claim only to be passed over. With one busy
 * destination that was 64 rows read a claim to take one, about 130,000 instructions in a
 * claim of 213,000 (docs/benchmarks.md "Webhook claims by destination; crash durability's
 * batches"). A walk reads a few index entries a destination; past CLAIM_WALK_DESTINATIONS
 * of them it gives up before it claims anything, and claims within the window go straight
 * to it for a second. The result is exact either way: the first rows due within every
 * destination's room when the walk ends, a window's when it gave up. PostgreSQL claims
 * within its window as before. */
static int claim_walk(struct store_conn *s, int64_t now_ms, int64_t claimed_until,
                      const struct claim_args *a, int window, struct store_outbox *out, int max,
                      struct err *e)
{
    int64_t until = s->walk_skipped_until;
    if (now_ms >= until || now_ms < until - 1000) { /* (none, over, or the clock went back) */
        int n = claim_by_destination(s, now_ms, claimed_until, a, out, max,
                                     CLAIM_WALK_DESTINATIONS, e);
        s->walk_skipped_until = n == CLAIM_TOO_WIDE ? now_ms + 1000 : 0;
        if (n != CLAIM_TOO_WIDE)
            return n;
    }
    return claim_in_window(s, STORE_WEBHOOK, now_ms, claimed_until, a, window, out, max, e);
}

/* The fresh rows a take may take: of a channel among parameter `bits`, for a destination with
 * room in parameter `rooms` (a claim's rooms, JSON: those at 0 or less have none). */
#define FRESH_FILTER(bits, rooms)                                                              \
    " channels & " bits " AND destination NOT IN (SELECT key FROM json_each(" rooms ")"        \
    " WHERE value <= 0)"

/* Take the fresh rows with ids from `from` to `to` that FRESH_FILTER lets through (`channels`
 * bits, `rooms`: NULL for all) into outbox, pending by their channels, the same ids. In the
 * caller's transaction: a row is in one table or the other, never both or neither. */
static bool take_rows(struct store_conn *s, int64_t from, int64_t to, int channels,
                      const char *rooms, struct err *e)
{
    sqlite3_stmt *which = sqlite_stmt(s, SQL_OUTBOX_FRESH_WHICH,
                                      "SELECT channels, destination FROM outbox_fresh WHERE"
                                      " id >= ?1 AND id <= ?2 AND" FRESH_FILTER("?3", "?4"),
                                      e);
    sqlite3_stmt *take = which ? sqlite_stmt(s, SQL_OUTBOX_FRESH_TAKE,
                                             "INSERT INTO outbox (id, player_id, type,"
                                             " match_id, seq, webhook_id, body, created_at,"
                                             " seat, deadline, destination, email_status,"
                                             " email_next, webhook_status, webhook_next)"
                                             " SELECT id, player_id, type, match_id, seq,"
                                             " webhook_id, body, created_at, seat, deadline,"
                                             " destination,"
                                             " iif(channels & 1, 'pending', NULL),"
                                             " iif(channels & 1, next_attempt, NULL),"
                                             " iif(channels & 2, 'pending', NULL),"
                                             " iif(channels & 2, next_attempt, NULL)"
                                             " FROM outbox_fresh WHERE id >= ?1 AND id <= ?2"
                                             " AND" FRESH_FILTER("?3", "?4") " ORDER BY id",
                                             e)
                               : NULL;
    sqlite3_stmt *drop = take ? sqlite_stmt(s, SQL_OUTBOX_FRESH_DROP,
                                            "DELETE FROM outbox_fresh WHERE id >= ?1 AND"
                                            " id <= ?2 AND" FRESH_FILTER("?3", "?4"),
                                            e)
                              : NULL;
    if (!drop)
        return false;
    sqlite3_stmt *each[3] = {which, take, drop};
    for (int i = 0; i < 3; i++) {
        sqlite3_bind_int64(each[i], 1, from);
        sqlite3_bind_int64(each[i], 2, to);
        sqlite3_bind_int(each[i], 3, channels);
        sqlite3_bind_text(each[i], 4, rooms ? rooms : "{}", -1, SQLITE_STATIC);
    }
    int rc;
    while ((rc = sqlite3_step(which)) == SQLITE_ROW)
        fresh_touch(s, sqlite3_column_int(which, 0),
                    (const char *)sqlite3_column_text(which, 1), -1);
    sqlite3_reset(which);
    for (int i = 1; rc == SQLITE_DONE && i < 3; i++) {
        rc = sqlite3_step(each[i]);
        sqlite3_reset(each[i]);
    }
    for (int i = 0; i < 3; i++)
        sqlite3_clear_bindings(each[i]); /* (rooms: the caller's text) */
    return rc == SQLITE_DONE || sqlite_fail(s, e, "take fresh rows into the outbox");
}

/* Take the oldest fresh rows that a claim of `channel` with `rooms` could deliver into
 * outbox (FRESH_TAKE at most; each with all its channels): how many, or -1 (e filled). The
 * rows of destinations without room are passed over: a backlog of theirs ahead costs a
 * take the reading of it, not its rows' taking. */
static int take_fresh(struct store_conn *s, int channel, const char *rooms, struct err *e)
{
    sqlite3_stmt *range = sqlite_stmt(s, SQL_OUTBOX_FRESH_LAST,
                                      "SELECT min(id), max(id), count(*) FROM (SELECT id FROM"
                                      " outbox_fresh WHERE" FRESH_FILTER("?1", "?2")
                                      " ORDER BY id LIMIT "
                                      OUTBOX_NUMBER(FRESH_TAKE) ")",
                                      e);
    if (!range)
        return -1;
    int bits = STORE_CHANNEL_BIT(channel);
    const char *r = channel == STORE_WEBHOOK && rooms ? rooms : "{}";
    sqlite3_bind_int(range, 1, bits);
    sqlite3_bind_text(range, 2, r, -1, SQLITE_STATIC);
    int rc = sqlite3_step(range);
    int64_t from = rc == SQLITE_ROW ? sqlite3_column_int64(range, 0) : 0;
    int64_t to = rc == SQLITE_ROW ? sqlite3_column_int64(range, 1) : 0;
    int n = rc == SQLITE_ROW ? sqlite3_column_int(range, 2) : 0;
    sqlite3_reset(range);
    sqlite3_clear_bindings(range);
    if (rc != SQLITE_ROW) {
        sqlite_fail(s, e, "find the fresh rows");
        return -1;
    }
    if (n == 0)
        return 0;
    return take_rows(s, from, to, bits, r, e) ? n : -1;
}

/* Whether claim `a`, which came back short, wants fresh rows, having claimed `out` (`n`
 * rows): 1, 0, or -1 (e filled). It does when outbox_fresh holds rows of its channel for a
 * destination whose rows in outbox ran out before its room did: any email (the relay's rows
 * ran out, or the claim would not be short); a webhook destination, when it has room and
 * the claim took fewer of its rows than that. A destination without room (its deliveries
 * in flight at its limit), or whose rows in outbox fill its room, gets no more taken: its
 * backlog stays fresh, an append, until its deliveries reach it; another's row is taken as
 * soon as it comes, with the rows before it. */
static int fresh_wanted(struct store_conn *s, int channel, const struct claim_args *a,
                        const struct store_outbox *out, int n, struct err *e)
{
    struct fresh_counts *fc = fresh_counts(s, e);
    if (!fc)
        return -1;
    if (channel == STORE_EMAIL)
        return fc->email > 0;
    /* (every fresh webhook row, but those of the destinations left out: without room, or
     * with their room taken by this claim) */
    int64_t left = fc->webhook;
    for (int i = 0; i < a->ndests && left > 0; i++) {
        struct fresh_dest *d = a->rooms[i] <= 0 ? fresh_slot(fc, a->dests[i], false) : NULL;
        if (d)
            left -= d->n;
    }
    for (int i = 0; i < n && left > 0; i++) {
        const char *dest = out[i].destination;
        int seen = 0, k;
        for (k = 0; k < i && strcmp(out[k].destination, dest); k++)
            ;
        if (k < i)
            continue; /* (counted at its first row) */
        for (k = i; k < n; k++)
            seen += !strcmp(out[k].destination, dest);
        struct fresh_dest *d = seen >= claim_room(a, dest) ? fresh_slot(fc, dest, false) : NULL;
        if (d)
            left -= d->n;
    }
    return left > 0;
}

static int claim_once(struct store_conn *s, int channel, int64_t now_ms, int64_t claimed_until,
                      const struct claim_args *a, int window, struct store_outbox *out, int max,
                      struct err *e)
{
    return channel != STORE_WEBHOOK
               ? claim_in_window(s, channel, now_ms, claimed_until, a, window, out, max, e)
           : window <= 0 ? claim_by_destination(s, now_ms, claimed_until, a, out, max, 0, e)
                         : claim_walk(s, now_ms, claimed_until, a, window, out, max, e);
}

int sqlite_outbox_claim(struct store_conn *s, int channel, int64_t now_ms, int64_t claimed_until,
                        const char *skip_ids, const char *rooms, int room, int window,
                        struct store_outbox *out, int max, struct err *e)
{
    struct claim_args a;
    if (!claim_args_read(s, skip_ids, rooms, room, max, &a, e))
        return -1;
    int n = claim_once(s, channel, now_ms, claimed_until, &a, window, out, max, e);
    /* Short: fresh rows taken if some are wanted; claimed at once if none was (else the
     * next claim takes them: this one's rooms are partly used). */
    int wanted = n >= 0 && n < max ? fresh_wanted(s, channel, &a, out, n, e) : 0;
    int took = wanted > 0 ? take_fresh(s, channel, rooms, e) : wanted;
    if (took < 0 && n > 0)
        for (int i = 0; i < n; i++)
            store_outbox_finish(&out[i]);
    if (took < 0)
        n = -1;
    else if (took > 0 && n == 0)
        n = claim_once(s, channel, now_ms, claimed_until, &a, window, out, max, e);
    claim_args_finish(&a);
    return n;
}

/* One process holds a SQLite database: a claim found at start is a dead process's. */
bool sqlite_outbox_claims_reset(struct store_conn *s, struct err *e)
{
    char *msg = NULL;
    if (sqlite3_exec(s->db,
                     "UPDATE outbox SET email_claimed = NULL WHERE email_status = 'pending' AND"
                     " email_claimed IS NOT NULL;"
                     "UPDATE outbox SET webhook_claimed = NULL WHERE webhook_status = 'pending'"
                     " AND webhook_claimed IS NOT NULL",
                     NULL, NULL, &msg) == SQLITE_OK)
        return true;
    sqlite3_free(msg);
    return sqlite_fail(s, e, "reset the claims");
}
