/* matches.c - the PostgreSQL backend's matches (seats, cached summary, state snapshot), the
 * append-only event log of each match, idempotency keys and the service's settings. As
 * storage/sqlite/matches.c and idempotency.c.
 */
#include "pg-int.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const invitation_names[] = {NULL, "pending", "declined", "expired"};

static const char *invitation_name(int invitation)
{
    return invitation > STORE_MATCH_STARTED && invitation <= STORE_MATCH_EXPIRED
               ? invitation_names[invitation]
               : NULL;
}

bool pg_match_insert(struct store_conn *c, struct store_match *m, struct err *e)
{
    struct pg_params a = {0};
    pg_text(&a, m->game);
    pg_text(&a, m->options);
    pg_int(&a, m->seats);
    pg_bytes(&a, m->seed, sizeof m->seed);
    pg_text(&a, m->commitment);
    pg_int_or_null(&a, m->created_by);
    pg_int(&a, m->created_at);
    pg_text(&a, m->finished ? "finished" : "active");
    pg_int(&a, m->seq);
    pg_text(&a, m->to_move ? m->to_move : "[]");
    pg_text(&a, m->totals ? m->totals : "[]");
    pg_text(&a, m->result);
    pg_int_or_null(&a, m->deadline);
    pg_int_or_null(&a, m->finished_at);
    pg_int_or_null(&a, m->move_seconds);
    pg_text(&a, m->forfeit ? "forfeit" : "auto");
    pg_int_or_null(&a, m->reminder_seconds);
    pg_int_or_null(&a, m->turn_started);
    pg_int(&a, m->reminded);
    pg_int_or_null(&a, m->league);
    pg_bytes(&a, m->state, m->state_len);
    pg_text(&a, invitation_name(m->invitation));
    pg_int(&a, m->accepted);
    pg_int_or_null(&a, m->invited_until);
    pg_int_or_null(&a, m->wake_at);
    PGresult *r = pg_run(
        c,
        "INSERT INTO matches (game, options, seats, seed, seed_commitment, created_by,"
        " created_at, status, seq, to_move, totals, result, deadline, finished_at,"
        " move_seconds, timeout_policy, reminder_seconds, turn_started, reminded, league_id,"
        " state, invitation, accepted, invited_until, wake_at) VALUES ($1, $2, $3, $4, $5, $6,"
        " $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23,"
        " $24, $25) RETURNING id",
        &a, "insert match", e);
    if (!r)
        return false;
    m->id = pg_get_int(r, 0, 0);
    PQclear(r);
    for (int seat = 0; seat < m->seats; seat++) {
        struct pg_params s = {0};
        pg_int(&s, m->id);
        pg_int(&s, seat);
        pg_int(&s, m->players[seat]);
        if (!pg_do(c, "INSERT INTO match_seats (match_id, seat, player_id) VALUES ($1, $2, $3)",
                   &s, NULL, "insert seat", e))
            return false;
    }
    return true;
}

bool pg_match_get(struct store_conn *c, int64_t id, struct store_match *out, struct err *e)
{
    memset(out, 0, sizeof *out);
    struct pg_params a = {0};
    pg_int(&a, id);
    PGresult *r = pg_run(
        c,
        "SELECT id, game, options, seats, seed, seed_commitment, coalesce(created_by, 0),"
        " created_at, status = 'finished', seq, to_move, totals, result,"
        " coalesce(deadline, 0), coalesce(finished_at, 0), coalesce(move_seconds, 0),"
        " timeout_policy = 'forfeit', coalesce(reminder_seconds, 0),"
        " coalesce(turn_started, 0), reminded, coalesce(league_id, 0), state,"
        " coalesce(invitation, ''), accepted, coalesce(invited_until, 0),"
        " coalesce(wake_at, 0), xmin::text::bigint FROM matches WHERE id = $1",
        &a, "read match", e);
    if (!r)
        return false;
    if (PQntuples(r) == 0) {
        PQclear(r);
        return err_set(e, ERR_NOT_FOUND, "not_found", "no such match");
    }
    out->id = pg_get_int(r, 0, 0);
    out->game = pg_get_text(r, 0, 1);
    out->options = pg_get_text(r, 0, 2);
    out->seats = (int)pg_get_int(r, 0, 3);
    uint8_t seed[sizeof out->seed + 1];
    if (pg_get_bytes(r, 0, 4, seed, sizeof seed) == sizeof out->seed)
        memcpy(out->seed, seed, sizeof out->seed);
    snprintf(out->commitment, sizeof out->commitment, "%s", PQgetvalue(r, 0, 5));
    out->created_by = pg_get_int(r, 0, 6);
    out->created_at = pg_get_int(r, 0, 7);
    out->finished = pg_get_bool(r, 0, 8);
    out->seq = pg_get_int(r, 0, 9);
    out->to_move = pg_get_text(r, 0, 10);
    out->totals = pg_get_text(r, 0, 11);
    out->result = pg_get_text(r, 0, 12);
    out->deadline = pg_get_int(r, 0, 13);
    out->finished_at = pg_get_int(r, 0, 14);
    out->move_seconds = pg_get_int(r, 0, 15);
    out->forfeit = pg_get_bool(r, 0, 16);
    out->reminder_seconds = pg_get_int(r, 0, 17);
    out->turn_started = pg_get_int(r, 0, 18);
    out->reminded = (uint32_t)pg_get_int(r, 0, 19);
    out->league = pg_get_int(r, 0, 20);
    out->state = pg_get_blob(r, 0, 21, &out->state_len);
    const char *inv = PQgetvalue(r, 0, 22);
    for (int i = STORE_MATCH_PENDING; i <= STORE_MATCH_EXPIRED; i++)
        if (!strcmp(inv, invitation_names[i]))
            out->invitation = i;
    out->accepted = (uint32_t)pg_get_int(r, 0, 23);
    out->invited_until = pg_get_int(r, 0, 24);
    out->wake_at = pg_get_int(r, 0, 25);
    out->rev = pg_get_int(r, 0, 26);
    PQclear(r);

    r = pg_run(c,
               "SELECT ms.seat, ms.player_id, p.name FROM match_seats ms"
               " JOIN players p ON p.id = ms.player_id WHERE ms.match_id = $1 ORDER BY ms.seat",
               &a, "read seats", e);
    if (!r) {
        store_match_finish(out);
        return false;
    }
    for (int i = 0; i < PQntuples(r); i++) {
        int seat = (int)pg_get_int(r, i, 0);
        if (seat >= 0 && seat < STORE_MAX_SEATS) {
            out->players[seat] = pg_get_int(r, i, 1);
            free(out->names[seat]);
            out->names[seat] = pg_get_text(r, i, 2);
        }
    }
    PQclear(r);
    return true;
}

/* A statement that must change exactly one match (`id`). */
static bool one_match(struct store_conn *c, const char *sql, struct pg_params *a, int64_t id,
                      const char *what, struct err *e)
{
    return pg_expect(c, sql, a, PG_EXPECT_ONE_CHANGED, id, 0, NULL, what, e);
}

bool pg_match_update(struct store_conn *c, const struct store_match *m, struct err *e)
{
    struct pg_params a = {0};
    pg_text(&a, m->finished ? "finished" : "active");
    pg_int(&a, m->seq);
    pg_text(&a, m->to_move ? m->to_move : "[]");
    pg_text(&a, m->totals ? m->totals : "[]");
    pg_text(&a, m->result);
    pg_int_or_null(&a, m->deadline);
    pg_int_or_null(&a, m->finished_at);
    pg_int_or_null(&a, m->turn_started);
    pg_int(&a, m->reminded);
    pg_bytes(&a, m->state, m->state_len);
    pg_int_or_null(&a, m->wake_at);
    pg_int(&a, m->id);
    if (c->in_txn && c->locked == m->id) { /* (its version read back with it) */
        c->written = m->id;
        return pg_expect(c,
                         "UPDATE matches SET status = $1, seq = $2, to_move = $3, totals = $4,"
                         " result = $5, deadline = $6, finished_at = $7, turn_started = $8,"
                         " reminded = $9, state = coalesce($10, state), wake_at = $11"
                         " WHERE id = $12 RETURNING xmin::text::bigint",
                         &a, PG_EXPECT_FILL, m->id, 0, &c->written_rev, "update match", e);
    }
    return one_match(c,
                     "UPDATE matches SET status = $1, seq = $2, to_move = $3, totals = $4,"
                     " result = $5, deadline = $6, finished_at = $7, turn_started = $8,"
                     " reminded = $9, state = coalesce($10, state), wake_at = $11"
                     " WHERE id = $12",
                     &a, m->id, "update match", e);
}

bool pg_match_invitation(struct store_conn *c, const struct store_match *m, struct err *e)
{
    struct pg_params a = {0};
    pg_text(&a, invitation_name(m->invitation));
    pg_int(&a, m->accepted);
    pg_bytes(&a, m->seed, sizeof m->seed);
    pg_text(&a, m->commitment);
    pg_text(&a, m->finished ? "finished" : "active");
    pg_int_or_null(&a, m->finished_at);
    pg_int(&a, m->id);
    return one_match(c,
                     "UPDATE matches SET invitation = $1, accepted = $2, seed = $3,"
                     " seed_commitment = $4, status = $5, finished_at = $6 WHERE id = $7",
                     &a, m->id, "update invitation", e);
}

/* The ids of the first column of `sql`'s rows, at most `max`; the count, or -1. */
static int ids(struct store_conn *c, const char *sql, struct pg_params *a, int64_t *out, int max,
               const char *what, struct err *e)
{
    PGresult *r = pg_run(c, sql, a, what, e);
    if (!r)
        return -1;
    int n = PQntuples(r) < max ? PQntuples(r) : max;
    for (int i = 0; i < n; i++)
        out[i] = pg_get_int(r, i, 0);
    PQclear(r);
    return n;
}

int pg_matches_of_player(struct store_conn *c, int64_t player, int64_t *out, int max,
                         struct err *e)
{
    struct pg_params a = {0};
    pg_int(&a, player);
    pg_int(&a, max);
    return ids(c,
               "SELECT match_id FROM match_seats WHERE player_id = $1 ORDER BY match_id DESC"
               " LIMIT $2",
               &a, out, max, "matches of player", e);
}

int pg_invitations_due(struct store_conn *c, int64_t now, int64_t *out, int max, struct err *e)
{
    struct pg_params a = {0};
    pg_int(&a, now);
    pg_int(&a, max);
    return ids(c,
               "SELECT id FROM matches WHERE invitation = 'pending' AND invited_until <= $1"
               " ORDER BY invited_until LIMIT $2",
               &a, out, max, "expired invitations", e);
}

int pg_matches_due(struct store_conn *c, int64_t now, int64_t *out, int max, struct err *e)
{
    struct pg_params a = {0};
    pg_int(&a, now);
    pg_int(&a, max);
    return ids(c,
               "SELECT id FROM matches WHERE status = 'active' AND wake_at <= $1"
               " ORDER BY wake_at LIMIT $2",
               &a, out, max, "due matches", e);
}

int pg_active_matches_of_player(struct store_conn *c, int64_t player, int64_t after, bool clocked,
                                int64_t *out, int max, struct err *e)
{
    struct pg_params a = {0};
    pg_int(&a, player);
    pg_int(&a, after);
    pg_int(&a, clocked ? 1 : 0);
    pg_int(&a, max);
    return ids(c,
               "SELECT m.id FROM matches m JOIN match_seats ms ON ms.match_id = m.id"
               " WHERE ms.player_id = $1 AND m.id > $2 AND m.status = 'active' AND"
               " ($3 = 0 OR m.move_seconds > 0) ORDER BY m.id LIMIT $4",
               &a, out, max, "active matches", e);
}

/* ---- Events -------------------------------------------------------------------------------- */

static const char *const kind_names[] = {"deal", "shuffle", "move"};

bool pg_event_append(struct store_conn *c, int64_t match, const struct store_event *ev,
                     struct err *e)
{
    struct pg_params a = {0};
    pg_int(&a, match);
    pg_int(&a, ev->seq);
    pg_text(&a, kind_names[ev->kind]);
    if (ev->kind == STORE_MOVE)
        pg_int(&a, ev->seat);
    else
        pg_null(&a);
    pg_text(&a, ev->body);
    pg_bool(&a, ev->automatic);
    pg_int(&a, ev->at);
    return pg_do(c,
                 "INSERT INTO events (match_id, seq, kind, seat, body, auto, at)"
                 " VALUES ($1, $2, $3, $4, $5, $6, $7)",
                 &a, NULL, "append event", e);
}

bool pg_events_range(struct store_conn *c, int64_t match, int64_t from, int64_t until,
                     bool (*fn)(void *ctx, const struct store_event *ev, struct err *e),
                     void *ctx, struct err *e)
{
    struct pg_params a = {0};
    pg_int(&a, match);
    pg_int(&a, from);
    pg_int(&a, until);
    PGresult *r = pg_run(c,
                         "SELECT seq, kind, coalesce(seat, -1), body, auto, at FROM events"
                         " WHERE match_id = $1 AND seq >= $2 AND seq < $3 ORDER BY seq",
                         &a, "read events", e);
    if (!r)
        return false;
    bool ok = true;
    for (int i = 0; ok && i < PQntuples(r); i++) {
        const char *kind = PQgetvalue(r, i, 1);
        struct store_event ev = {
            .seq = pg_get_int(r, i, 0),
            .kind = !strcmp(kind, "deal")      ? STORE_DEAL
                    : !strcmp(kind, "shuffle") ? STORE_SHUFFLE
                                               : STORE_MOVE,
            .seat = (int)pg_get_int(r, i, 2),
            .body = PQgetvalue(r, i, 3),
            .automatic = pg_get_bool(r, i, 4),
            .at = pg_get_int(r, i, 5),
        };
        ok = fn(ctx, &ev, e);
    }
    PQclear(r);
    return ok;
}

bool pg_events_each(struct store_conn *c, int64_t match,
                    bool (*fn)(void *ctx, const struct store_event *ev, struct err *e),
                    void *ctx, struct err *e)
{
    return pg_events_range(c, match, 0, INT64_MAX, fn, ctx, e);
}

/* ---- Idempotency keys and settings --------------------------------------------------------- */

bool pg_idem_get(struct store_conn *c, int64_t player, const char *key, struct store_idem *out,
                 struct err *e)
{
    memset(out, 0, sizeof *out);
    struct pg_params a = {0};
    pg_int(&a, player);
    pg_text(&a, key);
    PGresult *r = pg_run(c,
                         "SELECT request, status, body FROM idempotency WHERE player_id = $1"
                         " AND key = $2",
                         &a, "read idempotency key", e);
    if (!r)
        return false;
    if (PQntuples(r) == 0) {
        PQclear(r);
        return err_set(e, ERR_NOT_FOUND, "not_found", "no such key");
    }
    uint8_t request[STORE_HASH_BYTES + 1];
    if (pg_get_bytes(r, 0, 0, request, sizeof request) == STORE_HASH_BYTES)
        memcpy(out->request, request, STORE_HASH_BYTES);
    out->status = (int)pg_get_int(r, 0, 1);
    out->body = pg_get_text(r, 0, 2);
    PQclear(r);
    return true;
}

bool pg_idem_put(struct store_conn *c, int64_t player, const char *key,
                 const struct store_idem *r, int64_t now, struct err *e)
{
    struct pg_params a = {0};
    pg_int(&a, player);
    pg_text(&a, key);
    pg_bytes(&a, r->request, STORE_HASH_BYTES);
    pg_int(&a, r->status);
    pg_text(&a, r->body);
    pg_int(&a, now);
    return pg_do(c,
                 "INSERT INTO idempotency (player_id, key, request, status, body, created_at)"
                 " VALUES ($1, $2, $3, $4, $5, $6)",
                 &a, NULL, "save idempotency key", e);
}

bool pg_setting_get(struct store_conn *c, const char *key, void *out, size_t max, size_t *len,
                    struct err *e)
{
    struct pg_params a = {0};
    pg_text(&a, key);
    PGresult *r = pg_run(c, "SELECT value FROM settings WHERE key = $1", &a, "read setting", e);
    if (!r)
        return false;
    if (PQntuples(r) == 0) {
        PQclear(r);
        return err_set(e, ERR_NOT_FOUND, "not_found", "no setting %s", key);
    }
    *len = pg_get_bytes(r, 0, 0, out, max);
    PQclear(r);
    return true;
}

bool pg_setting_put(struct store_conn *c, const char *key, const void *value, size_t len,
                    struct err *e)
{
    struct pg_params a = {0};
    pg_text(&a, key);
    pg_bytes(&a, value, len);
    return pg_do(c,
                 "INSERT INTO settings (key, value) VALUES ($1, $2)"
                 " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                 &a, NULL, "write setting", e);
}

bool pg_setting_init(struct store_conn *c, const char *key, void *value, size_t len,
                     struct err *e)
{
    struct pg_params a = {0};
    pg_text(&a, key);
    pg_bytes(&a, value, len);
    size_t got = 0;
    return pg_do(c, "INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                 &a, NULL, "write setting", e) &&
           pg_setting_get(c, key, value, len, &got, e);
}

/* ---- Several processes on one database --------------------------------------------------------
 * A row's version is its xmin: the (sub)transaction that wrote its current version. Every
 * change of the row changes it, whoever made it; a lock (FOR UPDATE) does not. Read back in
 * the transaction that changed the row, it is what every reader sees after the commit. */

bool pg_match_lock(struct store_conn *c, int64_t id, int64_t rev, struct err *e)
{
    struct pg_params a = {0};
    pg_int(&a, id);
    pg_int(&a, rev);
    /* (checked in the server: migrations/postgres/0013; the transaction's next statements
     * go out without waiting for it, open.c) */
    if (!pg_do(c, "SELECT cardpost_lock_match($1, $2)", &a, NULL, "lock match", e))
        return false;
    c->locked = c->in_txn ? id : 0;
    return true;
}

/* Whether changes are announced (store_announce_changes): the process's setting. */
static atomic_bool announce = true;

void pg_announce(bool on)
{
    atomic_store(&announce, on);
}

/* A match's version (one statement text, so one prepared statement, for every reader). */
static const char version_sql[] = "SELECT xmin::text::bigint FROM matches WHERE id = $1";

bool pg_match_changed(struct store_conn *c, int64_t id, int64_t seq, int64_t *rev,
                      struct err *e)
{
    struct pg_params a = {0};
    pg_int(&a, id);
    bool told = atomic_load(&announce);
    /* Announced after the commit (open.c: pg_commit), in the same round trip: a transaction
     * that NOTIFYs holds a lock of the whole database from its NOTIFY to the end of its
     * commit, its WAL flush included, so that every move would wait for the flush of the
     * one before it. */
    bool after = told && c->in_txn && c->nchanged < PG_MAX_CHANGED;
    if (told && !after) {
        pg_int(&a, seq);
        return pg_expect(c,
                         "SELECT xmin::text::bigint, pg_notify('" PG_CHANNEL "', 'm ' || id"
                         " || ' ' || xmin::text || ' ' || $2::bigint) FROM matches"
                         " WHERE id = $1",
                         &a, PG_EXPECT_FILL, id, 0, rev, "match changed", e);
    }
    if (after) {
        c->changed[c->nchanged].id = id;
        c->changed[c->nchanged++].seq = seq;
    }
    if (c->in_txn && c->written == id) { /* (it came back with the update: no statement) */
        c->rev_into = rev;
        return true;
    }
    /* (*rev is filled when the answer is read: at the latest, the commit) */
    return pg_expect(c, version_sql, &a, PG_EXPECT_FILL, id, 0, rev, "match changed", e);
}

bool pg_match_rev(struct store_conn *c, int64_t id, int64_t *rev, struct err *e)
{
    struct pg_params a = {0};
    pg_int(&a, id);
    PGresult *r = pg_run(c, version_sql, &a, "read match version", e);
    if (!r)
        return false;
    bool found = PQntuples(r) == 1;
    *rev = found ? pg_get_int(r, 0, 0) : 0;
    PQclear(r);
    return found || err_set(e, ERR_NOT_FOUND, "not_found", "no such match");
}

/* A transaction's advisory lock on a league: the two-key form, whose keys never meet the
 * one-key locks (the migrations'); the first key says "a league's standings". */
#define PG_LEAGUE_LOCK "1279607111" /* 0x4c454147, "LEAG" */

bool pg_league_lock(struct store_conn *c, int64_t league, struct err *e)
{
    struct pg_params a = {0};
    pg_int(&a, league);
    return pg_do(c,
                 "SELECT pg_advisory_xact_lock(" PG_LEAGUE_LOCK ", ($1::bigint & 2147483647)::int)",
                 &a, NULL, "lock league", e);
}

bool pg_notify(struct store_conn *c, const char *payload, struct err *e)
{
    struct pg_params a = {0};
    pg_text(&a, payload);
    return pg_do(c, "SELECT pg_notify('" PG_CHANNEL "', $1)", &a, NULL, "notify", e);
}
