/* matches.c - matches with their seats, cached summary and state snapshot, and the
 * append-only event log of each match.
 */
#include "sqlite-int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void bind_blob_or_null(sqlite3_stmt *st, int i, const void *p, size_t len)
{
    if (p)
        sqlite3_bind_blob(st, i, p, (int)len, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, i);
}

static void bind_int64_or_null(sqlite3_stmt *st, int i, int64_t v)
{
    if (v)
        sqlite3_bind_int64(st, i, v);
    else
        sqlite3_bind_null(st, i);
}

static const char *const invitation_names[] = {NULL, "pending", "declined", "expired"};

static void bind_invitation(sqlite3_stmt *st, int i, int invitation)
{
    if (invitation > STORE_MATCH_STARTED && invitation <= STORE_MATCH_EXPIRED)
        sqlite3_bind_text(st, i, invitation_names[invitation], -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, i);
}

bool sqlite_match_insert(struct store_conn *s, struct store_match *m, struct err *e)
{
    sqlite3_stmt *st = sqlite_stmt(
        s, SQL_MATCH_INSERT,
        "INSERT INTO matches (game, options, seats, seed, seed_commitment, created_by,"
        " created_at, status, seq, to_move, totals, result, deadline, finished_at,"
        " move_seconds, timeout_policy, reminder_seconds, turn_started, reminded, league_id,"
        " state, invitation, accepted, invited_until, wake_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        e);
    if (!st)
        return false;
    sqlite3_bind_text(st, 1, m->game, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, m->options, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 3, m->seats);
    sqlite3_bind_blob(st, 4, m->seed, sizeof m->seed, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, m->commitment, -1, SQLITE_STATIC);
    bind_int64_or_null(st, 6, m->created_by);
    sqlite3_bind_int64(st, 7, m->created_at);
    sqlite3_bind_text(st, 8, m->finished ? "finished" : "active", -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 9, m->seq);
    sqlite3_bind_text(st, 10, m->to_move ? m->to_move : "[]", -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 11, m->totals ? m->totals : "[]", -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 12, m->result, -1, SQLITE_STATIC);
    bind_int64_or_null(st, 13, m->deadline);
    bind_int64_or_null(st, 14, m->finished_at);
    bind_int64_or_null(st, 15, m->move_seconds);
    sqlite3_bind_text(st, 16, m->forfeit ? "forfeit" : "auto", -1, SQLITE_STATIC);
    bind_int64_or_null(st, 17, m->reminder_seconds);
    bind_int64_or_null(st, 18, m->turn_started);
    sqlite3_bind_int64(st, 19, m->reminded);
    bind_int64_or_null(st, 20, m->league);
    bind_blob_or_null(st, 21, m->state, m->state_len);
    bind_invitation(st, 22, m->invitation);
    sqlite3_bind_int64(st, 23, m->accepted);
    bind_int64_or_null(st, 24, m->invited_until);
    bind_int64_or_null(st, 25, m->wake_at);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return sqlite_fail(s, e, "insert match");
    m->id = sqlite3_last_insert_rowid(s->db);

    for (int seat = 0; seat < m->seats; seat++) {
        st = sqlite_stmt(s, SQL_SEAT_INSERT,
                         "INSERT INTO match_seats (match_id, seat, player_id) VALUES (?, ?, ?)", e);
        if (!st)
            return false;
        sqlite3_bind_int64(st, 1, m->id);
        sqlite3_bind_int(st, 2, seat);
        sqlite3_bind_int64(st, 3, m->players[seat]);
        rc = sqlite3_step(st);
        sqlite3_reset(st);
        if (rc != SQLITE_DONE)
            return sqlite_fail(s, e, "insert seat");
    }
    return true;
}

bool sqlite_match_get(struct store_conn *s, int64_t id, struct store_match *out, struct err *e)
{
    memset(out, 0, sizeof *out);
    sqlite3_stmt *st = sqlite_stmt(
        s, SQL_MATCH_GET,
        "SELECT id, game, options, seats, seed, seed_commitment, coalesce(created_by, 0),"
        " created_at, status = 'finished', seq, to_move, totals, result,"
        " coalesce(deadline, 0), coalesce(finished_at, 0), coalesce(move_seconds, 0),"
        " timeout_policy = 'forfeit', coalesce(reminder_seconds, 0),"
        " coalesce(turn_started, 0), reminded, coalesce(league_id, 0), state,"
        " coalesce(invitation, ''), accepted, coalesce(invited_until, 0),"
        " coalesce(wake_at, 0) FROM matches WHERE id = ?",
        e);
    if (!st)
        return false;
    sqlite3_bind_int64(st, 1, id);
    int rc = sqlite3_step(st);
    if (rc != SQLITE_ROW) {
        sqlite3_reset(st);
        if (rc == SQLITE_DONE)
            return err_set(e, ERR_NOT_FOUND, "not_found", "no such match");
        return sqlite_fail(s, e, "read match");
    }
    out->id = sqlite3_column_int64(st, 0);
    out->game = sqlite_column_text(st, 1);
    out->options = sqlite_column_text(st, 2);
    out->seats = sqlite3_column_int(st, 3);
    if (sqlite3_column_bytes(st, 4) == (int)sizeof out->seed)
        memcpy(out->seed, sqlite3_column_blob(st, 4), sizeof out->seed);
    const unsigned char *c = sqlite3_column_text(st, 5);
    snprintf(out->commitment, sizeof out->commitment, "%s", c ? (const char *)c : "");
    out->created_by = sqlite3_column_int64(st, 6);
    out->created_at = sqlite3_column_int64(st, 7);
    out->finished = sqlite3_column_int(st, 8);
    out->seq = sqlite3_column_int64(st, 9);
    out->to_move = sqlite_column_text(st, 10);
    out->totals = sqlite_column_text(st, 11);
    out->result = sqlite_column_text(st, 12);
    out->deadline = sqlite3_column_int64(st, 13);
    out->finished_at = sqlite3_column_int64(st, 14);
    out->move_seconds = sqlite3_column_int64(st, 15);
    out->forfeit = sqlite3_column_int(st, 16);
    out->reminder_seconds = sqlite3_column_int64(st, 17);
    out->turn_started = sqlite3_column_int64(st, 18);
    out->reminded = (uint32_t)sqlite3_column_int64(st, 19);
    out->league = sqlite3_column_int64(st, 20);
    out->wake_at = sqlite3_column_int64(st, 25);
    int len = sqlite3_column_bytes(st, 21);
    const void *state = sqlite3_column_blob(st, 21);
    if (state && len > 0 && (out->state = malloc((size_t)len))) {
        memcpy(out->state, state, (size_t)len);
        out->state_len = (size_t)len;
    }
    const char *inv = (const char *)sqlite3_column_text(st, 22);
    for (int i = STORE_MATCH_PENDING; inv && i <= STORE_MATCH_EXPIRED; i++)
        if (!strcmp(inv, invitation_names[i]))
            out->invitation = i;
    out->accepted = (uint32_t)sqlite3_column_int64(st, 23);
    out->invited_until = sqlite3_column_int64(st, 24);
    sqlite3_reset(st);

    st = sqlite_stmt(s, SQL_SEATS_GET,
                     "SELECT ms.seat, ms.player_id, p.name FROM match_seats ms"
                     " JOIN players p ON p.id = ms.player_id WHERE ms.match_id = ?"
                     " ORDER BY ms.seat",
                     e);
    if (!st)
        goto fail;
    sqlite3_bind_int64(st, 1, id);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int seat = sqlite3_column_int(st, 0);
        if (seat >= 0 && seat < STORE_MAX_SEATS) {
            out->players[seat] = sqlite3_column_int64(st, 1);
            free(out->names[seat]);
            out->names[seat] = sqlite_column_text(st, 2);
        }
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) {
        sqlite_fail(s, e, "read seats");
        goto fail;
    }
    return true;
fail:
    store_match_finish(out);
    return false;
}

/* A column set by an UPDATE has its indexes rewritten, whatever its value: a move that
 * leaves the clock as it was (m->clock_kept: most moves within a second) sets only what a
 * move changes, and the deadline's and the wake-up's indexes stay as they are (about a third
 * of the statement's instructions, and their pages out of the commit's WAL frames). The
 * parameters keep their numbers in both. */
bool sqlite_match_update(struct store_conn *s, const struct store_match *m, struct err *e)
{
    sqlite3_stmt *st =
        m->clock_kept
            ? sqlite_stmt(s, SQL_MATCH_UPDATE_KEPT,
                          "UPDATE matches SET seq = ?2, to_move = ?3, totals = ?4,"
                          " state = coalesce(?10, state) WHERE id = ?12",
                          e)
            : sqlite_stmt(s, SQL_MATCH_UPDATE,
                          "UPDATE matches SET status = ?, seq = ?, to_move = ?,"
                          " totals = ?, result = ?, deadline = ?, finished_at = ?,"
                          " turn_started = ?, reminded = ?,"
                          " state = coalesce(?, state), wake_at = ? WHERE id = ?",
                          e);
    if (!st)
        return false;
    sqlite3_bind_text(st, 1, m->finished ? "finished" : "active", -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, m->seq);
    sqlite3_bind_text(st, 3, m->to_move ? m->to_move : "[]", -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, m->totals ? m->totals : "[]", -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, m->result, -1, SQLITE_STATIC);
    bind_int64_or_null(st, 6, m->deadline);
    bind_int64_or_null(st, 7, m->finished_at);
    bind_int64_or_null(st, 8, m->turn_started);
    sqlite3_bind_int64(st, 9, m->reminded);
    bind_blob_or_null(st, 10, m->state, m->state_len);
    bind_int64_or_null(st, 11, m->wake_at);
    sqlite3_bind_int64(st, 12, m->id);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return sqlite_fail(s, e, "update match");
    if (sqlite3_changes(s->db) != 1)
        return err_set(e, ERR_NOT_FOUND, "not_found", "no such match");
    return true;
}

int sqlite_matches_of_player(struct store_conn *s, int64_t player, int64_t *out, int max,
                             struct err *e)
{
    sqlite3_stmt *st = sqlite_stmt(s, SQL_MATCHES_OF_PLAYER,
                                   "SELECT match_id FROM match_seats WHERE player_id = ?"
                                   " ORDER BY match_id DESC LIMIT ?",
                                   e);
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, player);
    sqlite3_bind_int(st, 2, max);
    int n = 0, rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW && n < max)
        out[n++] = sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
        sqlite_fail(s, e, "matches of player");
        return -1;
    }
    return n;
}

bool sqlite_match_invitation(struct store_conn *s, const struct store_match *m, struct err *e)
{
    sqlite3_stmt *st = sqlite_stmt(s, SQL_MATCH_INVITATION,
                                   "UPDATE matches SET invitation = ?, accepted = ?, seed = ?,"
                                   " seed_commitment = ?, status = ?, finished_at = ?"
                                   " WHERE id = ?",
                                   e);
    if (!st)
        return false;
    bind_invitation(st, 1, m->invitation);
    sqlite3_bind_int64(st, 2, m->accepted);
    sqlite3_bind_blob(st, 3, m->seed, sizeof m->seed, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, m->commitment, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, m->finished ? "finished" : "active", -1, SQLITE_STATIC);
    bind_int64_or_null(st, 6, m->finished_at);
    sqlite3_bind_int64(st, 7, m->id);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return sqlite_fail(s, e, "update invitation");
    if (sqlite3_changes(s->db) != 1)
        return err_set(e, ERR_NOT_FOUND, "not_found", "no such match");
    return true;
}

static int ids(struct store_conn *s, sqlite3_stmt *st, int64_t *out, int max, struct err *e,
               const char *what)
{
    int n = 0, rc;
    while (n < max && (rc = sqlite3_step(st)) == SQLITE_ROW)
        out[n++] = sqlite3_column_int64(st, 0);
    if (n < max && rc != SQLITE_DONE) {
        sqlite3_reset(st);
        sqlite_fail(s, e, what);
        return -1;
    }
    sqlite3_reset(st);
    return n;
}

int sqlite_matches_due(struct store_conn *s, int64_t now, int64_t *out, int max, struct err *e)
{
    sqlite3_stmt *st = sqlite_stmt(
        s, SQL_MATCHES_DUE,
        "SELECT id FROM matches WHERE status = 'active' AND wake_at <= ?1"
        " ORDER BY wake_at LIMIT ?2",
        e);
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, now);
    sqlite3_bind_int(st, 2, max);
    return ids(s, st, out, max, e, "due matches");
}

int sqlite_invitations_due(struct store_conn *s, int64_t now, int64_t *out, int max, struct err *e)
{
    sqlite3_stmt *st = sqlite_stmt(s, SQL_INVITATIONS_DUE,
                                   "SELECT id FROM matches WHERE invitation = 'pending' AND"
                                   " invited_until <= ? ORDER BY invited_until LIMIT ?",
                                   e);
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, now);
    sqlite3_bind_int(st, 2, max);
    return ids(s, st, out, max, e, "expired invitations");
}

int sqlite_active_matches_of_player(struct store_conn *s, int64_t player, int64_t after,
                                    bool clocked, int64_t *out, int max, struct err *e)
{
    sqlite3_stmt *st = sqlite_stmt(s, SQL_ACTIVE_OF_PLAYER,
                                   "SELECT m.id FROM matches m JOIN match_seats ms ON"
                                   " ms.match_id = m.id WHERE ms.player_id = ? AND m.id > ? AND"
                                   " m.status = 'active' AND (? = 0 OR m.move_seconds > 0)"
                                   " ORDER BY m.id LIMIT ?",
                                   e);
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, player);
    sqlite3_bind_int64(st, 2, after);
    sqlite3_bind_int(st, 3, clocked ? 1 : 0);
    sqlite3_bind_int(st, 4, max);
    return ids(s, st, out, max, e, "active matches");
}

static const char *const kind_names[] = {"deal", "shuffle", "move"};

bool sqlite_event_append(struct store_conn *s, int64_t match, const struct store_event *ev,
                         struct err *e)
{
    sqlite3_stmt *st = sqlite_stmt(s, SQL_EVENT_INSERT,
                                   "INSERT INTO events (match_id, seq, kind, seat, body, auto, at)"
                                   " VALUES (?, ?, ?, ?, ?, ?, ?)",
                                   e);
    if (!st)
        return false;
    sqlite3_bind_int64(st, 1, match);
    sqlite3_bind_int64(st, 2, ev->seq);
    sqlite3_bind_text(st, 3, kind_names[ev->kind], -1, SQLITE_STATIC);
    if (ev->kind == STORE_MOVE)
        sqlite3_bind_int(st, 4, ev->seat);
    else
        sqlite3_bind_null(st, 4);
    sqlite3_bind_text(st, 5, ev->body, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 6, ev->automatic);
    sqlite3_bind_int64(st, 7, ev->at);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE || sqlite_fail(s, e, "append event");
}

bool sqlite_events_each(struct store_conn *s, int64_t match,
                        bool (*fn)(void *ctx, const struct store_event *ev, struct err *e),
                        void *ctx, struct err *e)
{
    return sqlite_events_range(s, match, 0, INT64_MAX, fn, ctx, e);
}

bool sqlite_events_range(struct store_conn *s, int64_t match, int64_t from, int64_t until,
                         bool (*fn)(void *ctx, const struct store_event *ev, struct err *e),
                         void *ctx, struct err *e)
{
    sqlite3_stmt *st = sqlite_stmt(s, SQL_EVENTS_EACH,
                                   "SELECT seq, kind, coalesce(seat, -1), body, auto, at"
                                   " FROM events WHERE match_id = ? AND seq >= ? AND seq < ?"
                                   " ORDER BY seq",
                                   e);
    if (!st)
        return false;
    sqlite3_bind_int64(st, 1, match);
    sqlite3_bind_int64(st, 2, from);
    sqlite3_bind_int64(st, 3, until);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *kind = (const char *)sqlite3_column_text(st, 1);
        struct store_event ev = {
            .seq = sqlite3_column_int64(st, 0),
            .kind = !strcmp(kind, "deal") ? STORE_DEAL
                    : !strcmp(kind, "shuffle") ? STORE_SHUFFLE
                                               : STORE_MOVE,
            .seat = sqlite3_column_int(st, 2),
            .body = (const char *)sqlite3_column_text(st, 3),
            .automatic = sqlite3_column_int(st, 4),
            .at = sqlite3_column_int64(st, 5),
        };
        if (!fn(ctx, &ev, e)) {
            sqlite3_reset(st);
            return false;
        }
    }
    sqlite3_reset(st);
    return rc == SQLITE_DONE || sqlite_fail(s, e, "read events");
}

/* ---- Several processes: not on SQLite ---------------------------------------------------------
 * A SQLite file is one process's (store.h "Several processes on one database"): its copies
 * of a match are always the file's, its transactions exclusive, nobody else listens. */

bool sqlite_match_lock(struct store_conn *s, int64_t id, int64_t rev, struct err *e)
{
    (void)s, (void)id, (void)rev, (void)e;
    return true;
}

bool sqlite_match_changed(struct store_conn *s, int64_t id, int64_t seq, int64_t *rev,
                          struct err *e)
{
    (void)s, (void)id, (void)seq, (void)e;
    *rev = 0;
    return true;
}

bool sqlite_match_rev(struct store_conn *s, int64_t id, int64_t *rev, struct err *e)
{
    (void)s, (void)id, (void)e;
    *rev = 0;
    return true;
}

bool sqlite_league_lock(struct store_conn *s, int64_t league, struct err *e)
{
    (void)s, (void)league, (void)e;
    return true;
}

bool sqlite_notify(struct store_conn *s, const char *payload, struct err *e)
{
    (void)s, (void)payload, (void)e;
    return true;
}

/* The stream tickets: the service keeps them in memory on SQLite (store.h), one process's. */

static bool not_shared(struct err *e)
{
    return err_set(e, ERR_INVALID, "not_shared",
                   "a SQLite database's stream tickets are its process's, kept in memory");
}

bool sqlite_ticket_add(struct store_conn *s, const struct store_ticket *k, int64_t now_ms,
                       int per_player, int in_all, struct store_ticket_room *room,
                       struct err *e)
{
    (void)s, (void)k, (void)now_ms, (void)per_player, (void)in_all;
    *room = (struct store_ticket_room){0};
    return not_shared(e);
}

bool sqlite_ticket_take(struct store_conn *s, const uint8_t hash[STORE_HASH_BYTES],
                        struct store_ticket *out, struct err *e)
{
    (void)s, (void)hash;
    *out = (struct store_ticket){0};
    return not_shared(e);
}
