/* leagues.c - leagues, their members and matches, and the standings table that the service
 * updates in the transaction finishing each league match.
 */
#include "sqlite-int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool sqlite_league_insert(struct store_conn *s, struct store_league *l, struct err *e)
{
    sqlite3_stmt *st = sqlite_stmt(s, SQL_LEAGUE_INSERT,
                                   "INSERT INTO leagues (name, game, options, clock, points,"
                                   " organizer, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                                   e);
    if (!st)
        return false;
    sqlite3_bind_text(st, 1, l->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, l->game, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, l->options, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, l->clock, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, l->points, -1, SQLITE_STATIC);
    if (l->organizer)
        sqlite3_bind_int64(st, 6, l->organizer);
    else
        sqlite3_bind_null(st, 6);
    sqlite3_bind_int64(st, 7, l->created_at);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return sqlite_fail(s, e, "insert league");
    l->id = sqlite3_last_insert_rowid(s->db);
    return true;
}

#define LEAGUE_COLUMNS                                                                         \
    "SELECT l.id, l.name, l.game, l.options, l.clock, l.points, coalesce(l.organizer, 0),"    \
    " l.created_at,"                                                                           \
    " (SELECT count(*) FROM league_members m WHERE m.league_id = l.id AND m.left_at IS NULL)," \
    " (SELECT count(*) FROM matches x WHERE x.league_id = l.id AND x.status = 'active'),"      \
    " (SELECT count(*) FROM matches x WHERE x.league_id = l.id AND x.status = 'finished')"     \
    " FROM leagues l "

/* The league's row without the counts, which grow with its matches (sqlite_league_counts). */
#define LEAGUE_ROW                                                                             \
    "SELECT l.id, l.name, l.game, l.options, l.clock, l.points, coalesce(l.organizer, 0),"    \
    " l.created_at, 0, 0, 0 FROM leagues l "

static void read_league(sqlite3_stmt *st, struct store_league *l)
{
    memset(l, 0, sizeof *l);
    l->id = sqlite3_column_int64(st, 0);
    l->name = sqlite_column_text(st, 1);
    l->game = sqlite_column_text(st, 2);
    l->options = sqlite_column_text(st, 3);
    l->clock = sqlite_column_text(st, 4);
    l->points = sqlite_column_text(st, 5);
    l->organizer = sqlite3_column_int64(st, 6);
    l->created_at = sqlite3_column_int64(st, 7);
    l->members = sqlite3_column_int(st, 8);
    l->matches_active = sqlite3_column_int(st, 9);
    l->matches_finished = sqlite3_column_int(st, 10);
}

bool sqlite_league_get(struct store_conn *s, int64_t id, struct store_league *out, struct err *e)
{
    sqlite3_stmt *st = sqlite_stmt(s, SQL_LEAGUE_GET, LEAGUE_ROW "WHERE l.id = ?", e);
    if (!st)
        return false;
    sqlite3_bind_int64(st, 1, id);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        read_league(st, out);
    sqlite3_reset(st);
    if (rc == SQLITE_DONE)
        return err_set(e, ERR_NOT_FOUND, "not_found", "no such league");
    return rc == SQLITE_ROW || sqlite_fail(s, e, "read league");
}

bool sqlite_league_counts(struct store_conn *s, struct store_league *l, struct err *e)
{
    sqlite3_stmt *st = sqlite_stmt(s, SQL_LEAGUE_COUNTS, LEAGUE_COLUMNS "WHERE l.id = ?", e);
    if (!st)
        return false;
    sqlite3_bind_int64(st, 1, l->id);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        l->members = sqlite3_column_int(st, 8);
        l->matches_active = sqlite3_column_int(st, 9);
        l->matches_finished = sqlite3_column_int(st, 10);
    }
    sqlite3_reset(st);
    if (rc == SQLITE_DONE)
        return err_set(e, ERR_NOT_FOUND, "not_found", "no such league");
    return rc == SQLITE_ROW || sqlite_fail(s, e, "count league");
}

int sqlite_leagues(struct store_conn *s, struct store_league *out, int max, struct err *e)
{
    sqlite3_stmt *st = sqlite_stmt(s, SQL_LEAGUES, LEAGUE_COLUMNS "ORDER BY l.id DESC LIMIT ?", e);
    if (!st)
        return -1;
    sqlite3_bind_int(st, 1, max);
    int n = 0, rc = SQLITE_DONE;
    while (n < max && (rc = sqlite3_step(st)) == SQLITE_ROW)
        read_league(st, &out[n++]);
    sqlite3_reset(st);
    if (n < max && rc != SQLITE_DONE) {
        for (int i = 0; i < n; i++)
            store_league_finish(&out[i]);
        sqlite_fail(s, e, "list leagues");
        return -1;
    }
    return n;
}

/* A player's leagues: the organiser's, the current member's, the invited player's (no index
 * leads from a player to their memberships: the two small tables are scanned; docs/decisions.md
 * "Leagues in the browser (issue 17)"). */
int sqlite_player_leagues(struct store_conn *s, int64_t player, struct store_league *out,
                          unsigned *roles, int max, struct err *e)
{
    sqlite3_stmt *st = sqlite_stmt(
        s, SQL_PLAYER_LEAGUES,
        "SELECT l.id, l.name, l.game, l.options, l.clock, l.points, coalesce(l.organizer, 0),"
        " l.created_at,"
        " (SELECT count(*) FROM league_members m WHERE m.league_id = l.id AND m.left_at IS NULL),"
        " (SELECT count(*) FROM matches x WHERE x.league_id = l.id AND x.status = 'active'),"
        " (SELECT count(*) FROM matches x WHERE x.league_id = l.id AND x.status = 'finished'),"
        " EXISTS (SELECT 1 FROM league_members m WHERE m.league_id = l.id AND m.player_id = ?1"
        " AND m.left_at IS NULL),"
        " EXISTS (SELECT 1 FROM league_invitations i WHERE i.league_id = l.id AND"
        " i.player_id = ?1)"
        " FROM leagues l WHERE l.organizer = ?1"
        " OR l.id IN (SELECT league_id FROM league_members WHERE player_id = ?1 AND"
        " left_at IS NULL)"
        " OR l.id IN (SELECT league_id FROM league_invitations WHERE player_id = ?1)"
        " ORDER BY l.id DESC LIMIT ?2",
        e);
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, player);
    sqlite3_bind_int(st, 2, max);
    int n = 0, rc = SQLITE_DONE;
    while (n < max && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        roles[n] = (sqlite3_column_int(st, 11) ? STORE_LEAGUE_MEMBER : 0) |
                   (sqlite3_column_int(st, 12) ? STORE_LEAGUE_INVITED : 0);
        read_league(st, &out[n++]);
    }
    sqlite3_reset(st);
    if (n < max && rc != SQLITE_DONE) {
        for (int i = 0; i < n; i++)
            store_league_finish(&out[i]);
        sqlite_fail(s, e, "list a player's leagues");
        return -1;
    }
    return n;
}

bool sqlite_member_is(struct store_conn *s, int64_t league, int64_t player, bool *current,
                      struct err *e)
{
    sqlite3_stmt *st = sqlite_stmt(s, SQL_MEMBER_IS,
                                   "SELECT left_at IS NULL FROM league_members WHERE league_id = ?"
                                   " AND player_id = ?",
                                   e);
    if (!st)
        return false;
    sqlite3_bind_int64(st, 1, league);
    sqlite3_bind_int64(st, 2, player);
    int rc = sqlite3_step(st);
    *current = rc == SQLITE_ROW && sqlite3_column_int(st, 0);
    sqlite3_reset(st);
    if (rc == SQLITE_DONE)
        return err_set(e, ERR_NOT_FOUND, "not_member", "player %lld is not in league %lld",
                       (long long)player, (long long)league);
    return rc == SQLITE_ROW || sqlite_fail(s, e, "read member");
}

bool sqlite_member_add(struct store_conn *s, int64_t league, int64_t player, int64_t now,
                       struct err *e)
{
    bool current = false;
    struct err why;
    if (sqlite_member_is(s, league, player, &current, &why) && current)
        return err_set(e, ERR_INVALID, "already_member", "player %lld is a member already",
                       (long long)player);
    sqlite3_stmt *st = sqlite_stmt(s, SQL_MEMBER_ADD,
                                   "INSERT INTO league_members (league_id, player_id, joined_at)"
                                   " VALUES (?, ?, ?) ON CONFLICT (league_id, player_id) DO"
                                   " UPDATE SET joined_at = excluded.joined_at, left_at = NULL",
                                   e);
    if (!st)
        return false;
    sqlite3_bind_int64(st, 1, league);
    sqlite3_bind_int64(st, 2, player);
    sqlite3_bind_int64(st, 3, now);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE || sqlite_fail(s, e, "add member");
}

bool sqlite_member_leave(struct store_conn *s, int64_t league, int64_t player, int64_t now,
                         struct err *e)
{
    sqlite3_stmt *st = sqlite_stmt(s, SQL_MEMBER_LEAVE,
                                   "UPDATE league_members SET left_at = ? WHERE league_id = ? AND"
                                   " player_id = ? AND left_at IS NULL",
                                   e);
    if (!st)
        return false;
    sqlite3_bind_int64(st, 1, now);
    sqlite3_bind_int64(st, 2, league);
    sqlite3_bind_int64(st, 3, player);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return sqlite_fail(s, e, "remove member");
    if (sqlite3_changes(s->db) != 1)
        return err_set(e, ERR_NOT_FOUND, "not_member", "player %lld is not a member",
                       (long long)player);
    return true;
}

int sqlite_members(struct store_conn *s, int64_t league, struct store_member *out, int max,
                   struct err *e)
{
    sqlite3_stmt *st = sqlite_stmt(s, SQL_MEMBERS,
                                   "SELECT m.player_id, p.name, m.joined_at, coalesce(m.left_at, 0)"
                                   " FROM league_members m JOIN players p ON p.id = m.player_id"
                                   " WHERE m.league_id = ? ORDER BY m.joined_at, m.player_id"
                                   " LIMIT ?",
                                   e);
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, league);
    sqlite3_bind_int(st, 2, max);
    int n = 0, rc = SQLITE_DONE;
    while (n < max && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct store_member *m = &out[n++];
        m->player = sqlite3_column_int64(st, 0);
        m->name = sqlite_column_text(st, 1);
        m->joined_at = sqlite3_column_int64(st, 2);
        m->left_at = sqlite3_column_int64(st, 3);
    }
    sqlite3_reset(st);
    if (n < max && rc != SQLITE_DONE) {
        for (int i = 0; i < n; i++)
            store_member_finish(&out[i]);
        sqlite_fail(s, e, "list members");
        return -1;
    }
    return n;
}

int sqlite_league_matches(struct store_conn *s, int64_t league, int64_t player, bool active_only,
                          int64_t before, int64_t *out, int max, struct err *e)
{
    sqlite3_stmt *st = sqlite_stmt(
        s, SQL_LEAGUE_MATCHES,
        "SELECT m.id FROM matches m WHERE m.league_id = ?1 AND (NOT ?2 OR m.status = 'active')"
        " AND (?3 = 0 OR EXISTS (SELECT 1 FROM match_seats x WHERE x.match_id = m.id AND"
        " x.player_id = ?3)) AND (?5 = 0 OR m.id < ?5) ORDER BY m.id DESC LIMIT ?4",
        e);
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, league);
    sqlite3_bind_int(st, 2, active_only);
    sqlite3_bind_int64(st, 3, player);
    sqlite3_bind_int(st, 4, max);
    sqlite3_bind_int64(st, 5, before);
    int n = 0, rc = SQLITE_DONE;
    while (n < max && (rc = sqlite3_step(st)) == SQLITE_ROW)
        out[n++] = sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
    if (n < max && rc != SQLITE_DONE) {
        sqlite_fail(s, e, "league matches");
        return -1;
    }
    return n;
}

bool sqlite_league_match_count(struct store_conn *s, int64_t league, int64_t *n, struct err *e)
{
    sqlite3_stmt *st = sqlite_stmt(s, SQL_LEAGUE_MATCH_COUNT,
                                   "SELECT count(*) FROM matches WHERE league_id = ?", e);
    if (!st)
        return false;
    sqlite3_bind_int64(st, 1, league);
    int rc = sqlite3_step(st);
    *n = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    sqlite3_reset(st);
    return rc == SQLITE_ROW || sqlite_fail(s, e, "count league matches");
}

/* (One writer: nothing to take.) */
bool sqlite_league_take(struct store_conn *s, int64_t league, struct err *e)
{
    (void)s, (void)league, (void)e;
    return true;
}

bool sqlite_invitation_add(struct store_conn *s, int64_t league, int64_t player, int64_t now,
                           struct err *e)
{
    sqlite3_stmt *st = sqlite_stmt(s, SQL_INVITE_ADD,
                                   "INSERT INTO league_invitations (league_id, player_id,"
                                   " invited_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                                   e);
    if (!st)
        return false;
    sqlite3_bind_int64(st, 1, league);
    sqlite3_bind_int64(st, 2, player);
    sqlite3_bind_int64(st, 3, now);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return sqlite_fail(s, e, "invite");
    if (sqlite3_changes(s->db) != 1)
        return err_set(e, ERR_INVALID, "already_invited", "player %lld is invited already",
                       (long long)player);
    return true;
}

bool sqlite_invitation_drop(struct store_conn *s, int64_t league, int64_t player, struct err *e)
{
    sqlite3_stmt *st = sqlite_stmt(s, SQL_INVITE_DROP,
                                   "DELETE FROM league_invitations WHERE league_id = ? AND"
                                   " player_id = ?",
                                   e);
    if (!st)
        return false;
    sqlite3_bind_int64(st, 1, league);
    sqlite3_bind_int64(st, 2, player);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return sqlite_fail(s, e, "drop invitation");
    if (sqlite3_changes(s->db) != 1)
        return err_set(e, ERR_NOT_FOUND, "not_invited", "player %lld is not invited",
                       (long long)player);
    return true;
}

int sqlite_invitations(struct store_conn *s, int64_t league, struct store_member *out, int max,
                       struct err *e)
{
    sqlite3_stmt *st = sqlite_stmt(s, SQL_INVITES,
                                   "SELECT i.player_id, p.name, i.invited_at FROM"
                                   " league_invitations i JOIN players p ON p.id = i.player_id"
                                   " WHERE i.league_id = ? ORDER BY i.invited_at, i.player_id"
                                   " LIMIT ?",
                                   e);
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, league);
    sqlite3_bind_int(st, 2, max);
    int n = 0, rc = SQLITE_DONE;
    while (n < max && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct store_member *m = &out[n++];
        *m = (struct store_member){.player = sqlite3_column_int64(st, 0),
                                   .name = sqlite_column_text(st, 1),
                                   .joined_at = sqlite3_column_int64(st, 2)};
    }
    sqlite3_reset(st);
    if (n < max && rc != SQLITE_DONE) {
        for (int i = 0; i < n; i++)
            store_member_finish(&out[i]);
        sqlite_fail(s, e, "list invitations");
        return -1;
    }
    return n;
}

bool sqlite_league_size(struct store_conn *s, int64_t league, int64_t *n, struct err *e)
{
    sqlite3_stmt *st = sqlite_stmt(s, SQL_LEAGUE_SIZE,
                                   "SELECT (SELECT count(*) FROM league_members WHERE"
                                   " league_id = ?1 AND left_at IS NULL) + (SELECT count(*) FROM"
                                   " league_invitations WHERE league_id = ?1)",
                                   e);
    if (!st)
        return false;
    sqlite3_bind_int64(st, 1, league);
    int rc = sqlite3_step(st);
    *n = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    sqlite3_reset(st);
    return rc == SQLITE_ROW || sqlite_fail(s, e, "league size");
}

bool sqlite_league_seatings(struct store_conn *s, int64_t league,
                            void (*fn)(void *ctx, const int64_t *players, int n), void *ctx,
                            struct err *e)
{
    sqlite3_stmt *st = sqlite_stmt(s, SQL_LEAGUE_SEATINGS,
                                   "SELECT x.match_id, x.player_id FROM match_seats x JOIN"
                                   " matches m ON m.id = x.match_id WHERE m.league_id = ?"
                                   " ORDER BY x.match_id, x.seat",
                                   e);
    if (!st)
        return false;
    sqlite3_bind_int64(st, 1, league);
    int64_t match = -1, players[STORE_MAX_SEATS];
    int n = 0, rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0);
        if (id != match && n > 0) {
            fn(ctx, players, n);
            n = 0;
        }
        match = id;
        if (n < STORE_MAX_SEATS)
            players[n++] = sqlite3_column_int64(st, 1);
    }
    sqlite3_reset(st);
    if (n > 0)
        fn(ctx, players, n);
    return rc == SQLITE_DONE || sqlite_fail(s, e, "league seatings");
}

#define STANDING_COLUMNS                                                                       \
    "SELECT s.player_id, p.name, s.played, s.won, s.drawn, s.lost, s.points, s.points_for,"   \
    " s.points_against, s.rating FROM standings s JOIN players p ON p.id = s.player_id "

static void read_standing(sqlite3_stmt *st, struct store_standing *out)
{
    out->player = sqlite3_column_int64(st, 0);
    out->name = sqlite_column_text(st, 1);
    out->played = sqlite3_column_int(st, 2);
    out->won = sqlite3_column_int(st, 3);
    out->drawn = sqlite3_column_int(st, 4);
    out->lost = sqlite3_column_int(st, 5);
    out->points = sqlite3_column_double(st, 6);
    out->points_for = sqlite3_column_int64(st, 7);
    out->points_against = sqlite3_column_int64(st, 8);
    out->rating = sqlite3_column_double(st, 9);
}

bool sqlite_standing_get(struct store_conn *s, int64_t league, int64_t player,
                         struct store_standing *out, struct err *e)
{
    memset(out, 0, sizeof *out);
    out->player = player;
    out->rating = 1500;
    sqlite3_stmt *st = sqlite_stmt(s, SQL_STANDING_GET,
                                   STANDING_COLUMNS "WHERE s.league_id = ? AND s.player_id = ?", e);
    if (!st)
        return false;
    sqlite3_bind_int64(st, 1, league);
    sqlite3_bind_int64(st, 2, player);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        read_standing(st, out);
    sqlite3_reset(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE || sqlite_fail(s, e, "read standing");
}

bool sqlite_standing_put(struct store_conn *s, int64_t league, const struct store_standing *r,
                         struct err *e)
{
    sqlite3_stmt *st = sqlite_stmt(
        s, SQL_STANDING_PUT,
        "INSERT OR REPLACE INTO standings (league_id, player_id, played, won, drawn, lost,"
        " points, points_for, points_against, rating) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        e);
    if (!st)
        return false;
    sqlite3_bind_int64(st, 1, league);
    sqlite3_bind_int64(st, 2, r->player);
    sqlite3_bind_int(st, 3, r->played);
    sqlite3_bind_int(st, 4, r->won);
    sqlite3_bind_int(st, 5, r->drawn);
    sqlite3_bind_int(st, 6, r->lost);
    sqlite3_bind_double(st, 7, r->points);
    sqlite3_bind_int64(st, 8, r->points_for);
    sqlite3_bind_int64(st, 9, r->points_against);
    sqlite3_bind_double(st, 10, r->rating);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE || sqlite_fail(s, e, "write standing");
}

int sqlite_standings(struct store_conn *s, int64_t league, bool low_wins,
                     struct store_standing *out, int max, struct err *e)
{
    sqlite3_stmt *st = sqlite_stmt(
        s, SQL_STANDINGS,
        STANDING_COLUMNS "WHERE s.league_id = ?1 ORDER BY s.points DESC, s.won DESC,"
                         " CASE WHEN ?2 THEN s.points_against - s.points_for"
                         " ELSE s.points_for - s.points_against END DESC, s.rating DESC,"
                         " s.player_id LIMIT ?3",
        e);
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, league);
    sqlite3_bind_int(st, 2, low_wins);
    sqlite3_bind_int(st, 3, max);
    int n = 0, rc = SQLITE_DONE;
    while (n < max && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        memset(&out[n], 0, sizeof out[n]);
        read_standing(st, &out[n++]);
    }
    sqlite3_reset(st);
    if (n < max && rc != SQLITE_DONE) {
        for (int i = 0; i < n; i++)
            store_standing_finish(&out[i]);
        sqlite_fail(s, e, "standings");
        return -1;
    }
    return n;
}
