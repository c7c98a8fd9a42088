/* outbox.c - the transactional outbox: notifications written in the same transaction as the
 * move that caused them, picked up by the delivery workers when due, with every attempt
 * recorded; and what a player or the operator can ask of them (list, redeliver).
 */
#include "sqlite-int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const channel_names[] = {"email", "webhook"};
static const char *const status_names[] = {"pending", "delivered", "dead"};

bool sqlite_outbox_add(struct store_conn *s, struct store_outbox *o, struct err *e)
{
    sqlite3_stmt *st = sqlite_stmt(s, SQL_OUTBOX_ADD,
                                   "INSERT INTO outbox (player_id, channel, type, match_id, seq,"
                                   " webhook_id, body, status, attempts, next_attempt, created_at,"
                                   " seat, deadline, destination)"
                                   " VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?, ?, ?)",
                                   e);
    if (!st)
        return false;
    sqlite3_bind_int64(st, 1, o->player);
    sqlite3_bind_text(st, 2, channel_names[o->channel], -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, o->type, -1, SQLITE_STATIC);
    if (o->match)
        sqlite3_bind_int64(st, 4, o->match);
    else
        sqlite3_bind_null(st, 4);
    sqlite3_bind_int64(st, 5, o->seq);
    sqlite3_bind_text(st, 6, o->webhook_id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 7, o->body, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 8, o->next_attempt);
    sqlite3_bind_int64(st, 9, o->created_at);
    if (o->seat >= 0)
        sqlite3_bind_int(st, 10, o->seat);
    else
        sqlite3_bind_null(st, 10);
    if (o->deadline)
        sqlite3_bind_int64(st, 11, o->deadline);
    else
        sqlite3_bind_null(st, 11);
    sqlite3_bind_text(st, 12, o->destination, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return sqlite_fail(s, e, "add to the outbox");
    o->id = sqlite3_last_insert_rowid(s->db);
    return true;
}

/* The columns read_row reads, in its order (also what a claim returns). */
#define OUTBOX_LIST                                                                            \
    " id, player_id, channel, type, coalesce(match_id, 0), coalesce(seq, 0),"                  \
    " webhook_id, body, status, attempts, next_attempt, created_at,"                           \
    " coalesce(delivered_at, 0), last_error, coalesce(seat, -1), coalesce(deadline, 0),"       \
    " destination "
#define OUTBOX_COLUMNS "SELECT" OUTBOX_LIST "FROM outbox "

static int index_of(const char *const *names, int n, const unsigned char *text)
{
    for (int i = 0; i < n; i++)
        if (text && !strcmp(names[i], (const char *)text))
            return i;
    return 0;
}

static void read_row(sqlite3_stmt *st, struct store_outbox *o)
{
    memset(o, 0, sizeof *o);
    o->id = sqlite3_column_int64(st, 0);
    o->player = sqlite3_column_int64(st, 1);
    o->channel = index_of(channel_names, 2, sqlite3_column_text(st, 2));
    snprintf(o->type, sizeof o->type, "%s", (const char *)sqlite3_column_text(st, 3));
    o->match = sqlite3_column_int64(st, 4);
    o->seq = sqlite3_column_int64(st, 5);
    snprintf(o->webhook_id, sizeof o->webhook_id, "%s", (const char *)sqlite3_column_text(st, 6));
    o->body = sqlite_column_text(st, 7);
    o->status = index_of(status_names, 3, sqlite3_column_text(st, 8));
    o->attempts = sqlite3_column_int(st, 9);
    o->next_attempt = sqlite3_column_int64(st, 10);
    o->created_at = sqlite3_column_int64(st, 11);
    o->delivered_at = sqlite3_column_int64(st, 12);
    o->last_error = sqlite_column_text(st, 13);
    o->seat = sqlite3_column_int(st, 14);
    o->deadline = sqlite3_column_int64(st, 15);
    snprintf(o->destination, sizeof o->destination, "%s",
             (const char *)sqlite3_column_text(st, 16));
}

static int read_rows(struct store_conn *s, sqlite3_stmt *st, struct store_outbox *out, int max,
                     struct err *e)
{
    int n = 0, rc = SQLITE_DONE;
    while (n < max && (rc = sqlite3_step(st)) == SQLITE_ROW)
        read_row(st, &out[n++]);
    sqlite3_reset(st);
    if (n < max && rc != SQLITE_DONE) {
        for (int i = 0; i < n; i++)
            store_outbox_finish(&out[i]);
        sqlite_fail(s, e, "read the outbox");
        return -1;
    }
    return n;
}

bool sqlite_outbox_get(struct store_conn *s, int64_t id, struct store_outbox *out, struct err *e)
{
    sqlite3_stmt *st = sqlite_stmt(s, SQL_OUTBOX_GET, OUTBOX_COLUMNS "WHERE id = ?", e);
    if (!st)
        return false;
    sqlite3_bind_int64(st, 1, id);
    int n = read_rows(s, st, out, 1, e);
    if (n == 0)
        return err_set(e, ERR_NOT_FOUND, "not_found", "no such delivery");
    return n == 1;
}

int sqlite_outbox_due(struct store_conn *s, int channel, int64_t now_ms, struct store_outbox *out,
                      int max, struct err *e)
{
    sqlite3_stmt *st = sqlite_stmt(s, SQL_OUTBOX_DUE,
                                   OUTBOX_COLUMNS "WHERE status = 'pending' AND channel = ? AND"
                                                 " next_attempt <= ? ORDER BY next_attempt, id"
                                                 " LIMIT ?",
                                  e);
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, channel_names[channel], -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, now_ms);
    sqlite3_bind_int(st, 3, max);
    return read_rows(s, st, out, max, e);
}

bool sqlite_outbox_next(struct store_conn *s, int channel, int64_t *when_ms, struct err *e)
{
    sqlite3_stmt *st = sqlite_stmt(s, SQL_OUTBOX_NEXT,
                                   "SELECT min(next_attempt) FROM outbox WHERE status = 'pending'"
                                   " AND channel = ?",
                                   e);
    if (!st)
        return false;
    sqlite3_bind_text(st, 1, channel_names[channel], -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    bool found = rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL;
    if (found)
        *when_ms = sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
    if (rc != SQLITE_ROW)
        return sqlite_fail(s, e, "next due notification");
    return found || err_set(e, ERR_NOT_FOUND, "not_found", "nothing pending");
}

/* A delivery to the destination of row `id` succeeded at `at_ms`: the rows held waiting
 * for that destination (same channel) are due now. */
static bool recovered(struct store_conn *s, int64_t id, int64_t at_ms, struct err *e)
{
    sqlite3_stmt *st = sqlite_stmt(s, SQL_OUTBOX_RECOVERED,
                                   "UPDATE outbox SET next_attempt = ?1, held = 0 WHERE"
                                   " held = 1 AND status = 'pending' AND channel ="
                                   " (SELECT channel FROM outbox WHERE id = ?2) AND"
                                   " destination = (SELECT destination FROM outbox"
                                   " WHERE id = ?2)",
                                   e);
    if (!st)
        return false;
    sqlite3_bind_int64(st, 1, at_ms);
    sqlite3_bind_int64(st, 2, id);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE || sqlite_fail(s, e, "retry a recovered destination");
}

/* The destination of row `id` could not be reached at `at_ms`: its other rows held for it
 * (an earlier attempt could not reach it either) and due again wait with this one (until
 * `next_ms` or a success there) instead of each being tried in turn. A row never tried is
 * tried once all the same. Through the partial index of the held rows, never the backlog. */
static bool unreachable(struct store_conn *s, int64_t id, int64_t at_ms, int64_t next_ms,
                        struct err *e)
{
    sqlite3_stmt *st = sqlite_stmt(s, SQL_OUTBOX_UNREACHABLE,
                                   "UPDATE outbox INDEXED BY outbox_held SET next_attempt = ?3"
                                   " WHERE held = 1 AND"
                                   " status = 'pending' AND"
                                   " next_attempt <= ?2 AND coalesce(claimed_until, 0) <= ?2"
                                   " AND channel = (SELECT channel FROM outbox WHERE id = ?1)"
                                   " AND destination = (SELECT destination FROM outbox"
                                   " WHERE id = ?1) AND id <> ?1",
                                   e);
    if (!st)
        return false;
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int64(st, 2, at_ms);
    sqlite3_bind_int64(st, 3, next_ms);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE || sqlite_fail(s, e, "hold the rows of an unreachable destination");
}

bool sqlite_outbox_record(struct store_conn *s, int64_t id, const struct store_attempt *a,
                          int status, int attempts, int64_t next_attempt, struct err *e)
{
    /* In a transaction already (a write of a group commit): its statements only. */
    bool own = sqlite3_get_autocommit(s->db);
    if (own && !sqlite_begin(s, e))
        return false;
    sqlite3_stmt *st = sqlite_stmt(s, SQL_ATTEMPT_ADD,
                                   "INSERT INTO delivery_attempts (outbox_id, at, ok, status,"
                                   " error, duration_ms) VALUES (?, ?, ?, ?, ?, ?)",
                                   e);
    bool ok = st != NULL;
    if (ok) {
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_int64(st, 2, a->at);
        sqlite3_bind_int(st, 3, a->ok);
        if (a->status)
            sqlite3_bind_int64(st, 4, a->status);
        else
            sqlite3_bind_null(st, 4);
        if (a->error[0])
            sqlite3_bind_text(st, 5, a->error, -1, SQLITE_STATIC);
        else
            sqlite3_bind_null(st, 5);
        sqlite3_bind_int64(st, 6, a->duration_ms);
        ok = sqlite3_step(st) == SQLITE_DONE || sqlite_fail(s, e, "record attempt");
        sqlite3_reset(st);
    }
    if (ok) {
        st = sqlite_stmt(s, SQL_OUTBOX_RECORD,
                         "UPDATE outbox SET status = ?, attempts = ?, next_attempt = ?,"
                         " delivered_at = CASE WHEN ?4 THEN ?5 ELSE delivered_at END,"
                         " last_error = CASE WHEN ?4 THEN last_error ELSE ?6 END,"
                         " held = ?8 AND ?1 = 'pending', claimed_until = NULL WHERE id = ?7",
                         e);
        ok = st != NULL;
        if (ok) {
            sqlite3_bind_text(st, 1, status_names[status], -1, SQLITE_STATIC);
            sqlite3_bind_int(st, 2, attempts);
            sqlite3_bind_int64(st, 3, next_attempt);
            sqlite3_bind_int(st, 4, a->ok);
            sqlite3_bind_int64(st, 5, a->at);
            sqlite3_bind_text(st, 6, a->error, -1, SQLITE_STATIC);
            sqlite3_bind_int64(st, 7, id);
            sqlite3_bind_int(st, 8, a->unreachable);
            ok = sqlite3_step(st) == SQLITE_DONE || sqlite_fail(s, e, "update outbox");
            sqlite3_reset(st);
        }
    }
    if (ok && a->ok)
        ok = recovered(s, id, a->at, e);
    if (ok && !a->ok && a->unreachable && status == STORE_PENDING)
        ok = unreachable(s, id, a->at, next_attempt, e);
    if (ok && own)
        ok = sqlite_commit(s, e);
    if (!ok && own)
        sqlite_rollback(s);
    return ok;
}

int sqlite_outbox_of_player(struct store_conn *s, int64_t player, int64_t before,
                            struct store_outbox *out, int max, struct err *e)
{
    sqlite3_stmt *st = sqlite_stmt(s, SQL_OUTBOX_OF_PLAYER,
                                   OUTBOX_COLUMNS "WHERE player_id = ? AND (? = 0 OR id < ?)"
                                                 " ORDER BY id DESC LIMIT ?",
                                  e);
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, player);
    sqlite3_bind_int64(st, 2, before);
    sqlite3_bind_int64(st, 3, before);
    sqlite3_bind_int(st, 4, max);
    return read_rows(s, st, out, max, e);
}

int sqlite_attempts_of(struct store_conn *s, int64_t outbox, struct store_attempt *out, int max,
                       struct err *e)
{
    sqlite3_stmt *st = sqlite_stmt(s, SQL_ATTEMPTS_OF,
                                   "SELECT at, ok, coalesce(status, 0), coalesce(error, ''),"
                                   " duration_ms FROM delivery_attempts WHERE outbox_id = ?"
                                   " ORDER BY id LIMIT ?",
                                   e);
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, outbox);
    sqlite3_bind_int(st, 2, max);
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

bool sqlite_outbox_redeliver(struct store_conn *s, int64_t id, int64_t now_ms, struct err *e)
{
    sqlite3_stmt *st = sqlite_stmt(s, SQL_OUTBOX_REDELIVER,
                                   "UPDATE outbox SET status = 'pending', next_attempt = ?"
                                   " WHERE id = ?",
                                   e);
    if (!st)
        return false;
    sqlite3_bind_int64(st, 1, now_ms);
    sqlite3_bind_int64(st, 2, id);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return sqlite_fail(s, e, "redeliver");
    if (sqlite3_changes(s->db) != 1)
        return err_set(e, ERR_NOT_FOUND, "not_found", "no such delivery");
    return true;
}

int sqlite_outbox_upcoming(struct store_conn *s, int channel, const char *skip_ids,
                           const char *skip_players, struct store_outbox *out, int max,
                           struct err *e)
{
    sqlite3_stmt *st = sqlite_stmt(s, SQL_OUTBOX_UPCOMING,
                                   OUTBOX_COLUMNS "WHERE status = 'pending' AND channel = ?"
                                                 " AND id NOT IN (SELECT value FROM json_each(?))"
                                                 " AND player_id NOT IN"
                                                 " (SELECT value FROM json_each(?))"
                                                 " ORDER BY next_attempt, id LIMIT ?",
                                  e);
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, channel_names[channel], -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, skip_ids ? skip_ids : "[]", -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, skip_players ? skip_players : "[]", -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 4, max);
    return read_rows(s, st, out, max, e);
}

/* The backlog: a count per channel and status, each through its partial index (outbox_due
 * for the pending rows, outbox_dead for the dead: migration 0010), never the whole table. */
bool sqlite_outbox_backlog(struct store_conn *s, int64_t pending[2], int64_t dead[2],
                           struct err *e)
{
    sqlite3_stmt *st = sqlite_stmt(s, SQL_OUTBOX_BACKLOG,
                                   "SELECT 0, channel, count(*) FROM outbox"
                                   " WHERE status = 'pending' GROUP BY channel"
                                   " UNION ALL SELECT 1, channel, count(*) FROM outbox"
                                   " INDEXED BY outbox_dead WHERE status = 'dead'"
                                   " GROUP BY channel",
                                   e);
    if (!st)
        return false;
    pending[0] = pending[1] = dead[0] = dead[1] = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int channel = index_of(channel_names, 2, sqlite3_column_text(st, 1));
        (sqlite3_column_int(st, 0) ? dead : pending)[channel] = sqlite3_column_int64(st, 2);
    }
    sqlite3_reset(st);
    return rc == SQLITE_DONE || sqlite_fail(s, e, "count the outbox");
}

/* A claim: one UPDATE ... RETURNING, atomic on the one connection that writes (SQLite has
 * one process; the lease still keeps a row from being claimed twice by its threads). */
int sqlite_outbox_claim(struct store_conn *s, int channel, int64_t now_ms, int64_t claimed_until,
                        const char *skip_ids, const char *skip_dests, int window,
                        struct store_outbox *out, int max, struct err *e)
{
    /* With a window: the first rows due, then those of them not left out (a sort of the
     * window's rows); without: the due rows in the index's order, read until enough are
     * found (no sort, but as far into the backlog as it takes). */
    sqlite3_stmt *st =
        window > 0
            ? sqlite_stmt(s, SQL_OUTBOX_CLAIM,
                          "UPDATE outbox SET claimed_until = ?3 WHERE id IN"
                          " (SELECT id FROM (SELECT id, destination, next_attempt"
                          " FROM outbox WHERE status = 'pending' AND channel = ?1 AND"
                          " next_attempt <= ?2 AND coalesce(claimed_until, 0) <= ?2"
                          " ORDER BY next_attempt, id LIMIT ?7) WHERE id NOT IN"
                          " (SELECT value FROM json_each(?4)) AND destination NOT IN"
                          " (SELECT value FROM json_each(?5))"
                          " ORDER BY next_attempt, id LIMIT ?6) RETURNING" OUTBOX_LIST,
                          e)
            : sqlite_stmt(s, SQL_OUTBOX_CLAIM_ALL,
                          "UPDATE outbox SET claimed_until = ?3 WHERE id IN"
                          " (SELECT id FROM outbox WHERE status = 'pending' AND channel = ?1"
                          " AND next_attempt <= ?2 AND coalesce(claimed_until, 0) <= ?2 AND"
                          " id NOT IN (SELECT value FROM json_each(?4)) AND destination NOT IN"
                          " (SELECT value FROM json_each(?5)) AND ?7 = -1"
                          " ORDER BY next_attempt, id LIMIT ?6) RETURNING" OUTBOX_LIST,
                          e);
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, channel_names[channel], -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, now_ms);
    sqlite3_bind_int64(st, 3, claimed_until);
    sqlite3_bind_text(st, 4, skip_ids ? skip_ids : "[]", -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, skip_dests ? skip_dests : "[]", -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 6, max);
    sqlite3_bind_int(st, 7, window > 0 ? window : -1);
    return read_rows(s, st, out, max, e);
}

bool sqlite_outbox_release(struct store_conn *s, int64_t id, struct err *e)
{
    sqlite3_stmt *st = sqlite_stmt(s, SQL_OUTBOX_RELEASE,
                                   "UPDATE outbox SET claimed_until = NULL WHERE id = ?", e);
    if (!st)
        return false;
    sqlite3_bind_int64(st, 1, id);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE || sqlite_fail(s, e, "release a claim");
}

/* One process holds a SQLite database: a claim found at start is a dead process's. */
bool sqlite_outbox_claims_reset(struct store_conn *s, struct err *e)
{
    char *msg = NULL;
    if (sqlite3_exec(s->db, "UPDATE outbox SET claimed_until = NULL WHERE status = 'pending'"
                            " AND claimed_until IS NOT NULL",
                     NULL, NULL, &msg) == SQLITE_OK)
        return true;
    sqlite3_free(msg);
    return sqlite_fail(s, e, "reset the claims");
}
