/* leagues.c - the PostgreSQL backend's leagues, their members, invitations and matches, and
 * the standings table. As storage/sqlite/leagues.c.
 */
#include "pg-int.h"

#include <stdlib.h>
#include <string.h>

bool pg_league_insert(struct store_conn *c, struct store_league *l, struct err *e)
{
    struct pg_params a = {0};
    pg_text(&a, l->name);
    pg_text(&a, l->game);
    pg_text(&a, l->options);
    pg_text(&a, l->clock);
    pg_text(&a, l->points);
    pg_int_or_null(&a, l->organizer);
    pg_int(&a, l->created_at);
    PGresult *r = pg_run(c,
                         "INSERT INTO leagues (name, game, options, clock, points, organizer,"
                         " created_at) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
                         &a, "insert league", e);
    if (!r)
        return false;
    l->id = pg_get_int(r, 0, 0);
    PQclear(r);
    return true;
}

#define LEAGUE_COLUMNS                                                                         \
    "SELECT l.id, l.name, l.game, l.options, l.clock, l.points, coalesce(l.organizer, 0),"    \
    " l.created_at,"                                                                           \
    " (SELECT count(*) FROM league_members m WHERE m.league_id = l.id AND m.left_at IS NULL)," \
    " (SELECT count(*) FROM matches x WHERE x.league_id = l.id AND x.status = 'active'),"      \
    " (SELECT count(*) FROM matches x WHERE x.league_id = l.id AND x.status = 'finished')"     \
    " FROM leagues l "

/* The league's row without the counts, which grow with its matches (pg_league_counts). */
#define LEAGUE_ROW                                                                             \
    "SELECT l.id, l.name, l.game, l.options, l.clock, l.points, coalesce(l.organizer, 0),"    \
    " l.created_at, 0, 0, 0 FROM leagues l "

static void read_league(const PGresult *r, int i, struct store_league *l)
{
    memset(l, 0, sizeof *l);
    l->id = pg_get_int(r, i, 0);
    l->name = pg_get_text(r, i, 1);
    l->game = pg_get_text(r, i, 2);
    l->options = pg_get_text(r, i, 3);
    l->clock = pg_get_text(r, i, 4);
    l->points = pg_get_text(r, i, 5);
    l->organizer = pg_get_int(r, i, 6);
    l->created_at = pg_get_int(r, i, 7);
    l->members = (int)pg_get_int(r, i, 8);
    l->matches_active = (int)pg_get_int(r, i, 9);
    l->matches_finished = (int)pg_get_int(r, i, 10);
}

bool pg_league_get(struct store_conn *c, int64_t id, struct store_league *out, struct err *e)
{
    struct pg_params a = {0};
    pg_int(&a, id);
    PGresult *r = pg_run(c, LEAGUE_ROW "WHERE l.id = $1", &a, "read league", e);
    if (!r)
        return false;
    bool found = PQntuples(r) > 0;
    if (found)
        read_league(r, 0, out);
    PQclear(r);
    return found || err_set(e, ERR_NOT_FOUND, "not_found", "no such league");
}

bool pg_league_counts(struct store_conn *c, struct store_league *l, struct err *e)
{
    struct pg_params a = {0};
    pg_int(&a, l->id);
    PGresult *r = pg_run(c, LEAGUE_COLUMNS "WHERE l.id = $1", &a, "count league", e);
    if (!r)
        return false;
    bool found = PQntuples(r) > 0;
    if (found) {
        l->members = (int)pg_get_int(r, 0, 8);
        l->matches_active = (int)pg_get_int(r, 0, 9);
        l->matches_finished = (int)pg_get_int(r, 0, 10);
    }
    PQclear(r);
    return found || err_set(e, ERR_NOT_FOUND, "not_found", "no such league");
}

/* A player's leagues: the organiser's, the current member's, the invited player's. */
int pg_player_leagues(struct store_conn *c, int64_t player, struct store_league *out,
                      unsigned *roles, int max, struct err *e)
{
    struct pg_params a = {0};
    pg_int(&a, player);
    pg_int(&a, max);
    PGresult *r = pg_run(
        c,
        "SELECT l.id, l.name, l.game, l.options, l.clock, l.points, coalesce(l.organizer, 0),"
        " l.created_at,"
        " (SELECT count(*) FROM league_members m WHERE m.league_id = l.id AND m.left_at IS NULL),"
        " (SELECT count(*) FROM matches x WHERE x.league_id = l.id AND x.status = 'active'),"
        " (SELECT count(*) FROM matches x WHERE x.league_id = l.id AND x.status = 'finished'),"
        " EXISTS (SELECT 1 FROM league_members m WHERE m.league_id = l.id AND m.player_id = $1"
        " AND m.left_at IS NULL),"
        " EXISTS (SELECT 1 FROM league_invitations i WHERE i.league_id = l.id AND"
        " i.player_id = $1)"
        " FROM leagues l WHERE l.organizer = $1"
        " OR l.id IN (SELECT league_id FROM league_members WHERE player_id = $1 AND"
        " left_at IS NULL)"
        " OR l.id IN (SELECT league_id FROM league_invitations WHERE player_id = $1)"
        " ORDER BY l.id DESC LIMIT $2",
        &a, "list a player's leagues", e);
    if (!r)
        return -1;
    int n = PQntuples(r) < max ? PQntuples(r) : max;
    for (int i = 0; i < n; i++) {
        read_league(r, i, &out[i]);
        roles[i] = (pg_get_bool(r, i, 11) ? STORE_LEAGUE_MEMBER : 0) |
                   (pg_get_bool(r, i, 12) ? STORE_LEAGUE_INVITED : 0);
    }
    PQclear(r);
    return n;
}

int pg_leagues(struct store_conn *c, struct store_league *out, int max, struct err *e)
{
    struct pg_params a = {0};
    pg_int(&a, max);
    PGresult *r = pg_run(c, LEAGUE_COLUMNS "ORDER BY l.id DESC LIMIT $1", &a, "list leagues", e);
    if (!r)
        return -1;
    int n = PQntuples(r) < max ? PQntuples(r) : max;
    for (int i = 0; i < n; i++)
        read_league(r, i, &out[i]);
    PQclear(r);
    return n;
}

bool pg_member_is(struct store_conn *c, int64_t league, int64_t player, bool *current,
                  struct err *e)
{
    struct pg_params a = {0};
    pg_int(&a, league);
    pg_int(&a, player);
    PGresult *r = pg_run(c,
                         "SELECT left_at IS NULL FROM league_members WHERE league_id = $1"
                         " AND player_id = $2",
                         &a, "read member", e);
    if (!r)
        return false;
    bool found = PQntuples(r) > 0;
    *current = found && pg_get_bool(r, 0, 0);
    PQclear(r);
    return found || err_set(e, ERR_NOT_FOUND, "not_member", "player %lld is not in league %lld",
                            (long long)player, (long long)league);
}

bool pg_member_add(struct store_conn *c, int64_t league, int64_t player, int64_t now,
                   struct err *e)
{
    bool current = false;
    struct err why;
    if (pg_member_is(c, league, player, &current, &why) && current)
        return err_set(e, ERR_INVALID, "already_member", "player %lld is a member already",
                       (long long)player);
    struct pg_params a = {0};
    pg_int(&a, league);
    pg_int(&a, player);
    pg_int(&a, now);
    return pg_do(c,
                 "INSERT INTO league_members (league_id, player_id, joined_at) VALUES ($1, $2,"
                 " $3) ON CONFLICT (league_id, player_id) DO UPDATE SET"
                 " joined_at = excluded.joined_at, left_at = NULL",
                 &a, NULL, "add member", e);
}

bool pg_member_leave(struct store_conn *c, int64_t league, int64_t player, int64_t now,
                     struct err *e)
{
    struct pg_params a = {0};
    pg_int(&a, now);
    pg_int(&a, league);
    pg_int(&a, player);
    int64_t n = 0;
    if (!pg_do(c,
               "UPDATE league_members SET left_at = $1 WHERE league_id = $2 AND player_id = $3"
               " AND left_at IS NULL",
               &a, &n, "remove member", e))
        return false;
    return n == 1 || err_set(e, ERR_NOT_FOUND, "not_member", "player %lld is not a member",
                             (long long)player);
}

int pg_members(struct store_conn *c, int64_t league, struct store_member *out, int max,
               struct err *e)
{
    struct pg_params a = {0};
    pg_int(&a, league);
    pg_int(&a, max);
    PGresult *r = pg_run(c,
                         "SELECT m.player_id, p.name, m.joined_at, coalesce(m.left_at, 0)"
                         " FROM league_members m JOIN players p ON p.id = m.player_id"
                         " WHERE m.league_id = $1 ORDER BY m.joined_at, m.player_id LIMIT $2",
                         &a, "list members", e);
    if (!r)
        return -1;
    int n = PQntuples(r) < max ? PQntuples(r) : max;
    for (int i = 0; i < n; i++)
        out[i] = (struct store_member){.player = pg_get_int(r, i, 0),
                                       .name = pg_get_text(r, i, 1),
                                       .joined_at = pg_get_int(r, i, 2),
                                       .left_at = pg_get_int(r, i, 3)};
    PQclear(r);
    return n;
}

int pg_league_matches(struct store_conn *c, int64_t league, int64_t player, bool active_only,
                      int64_t before, int64_t *out, int max, struct err *e)
{
    struct pg_params a = {0};
    pg_int(&a, league);
    pg_bool(&a, active_only);
    pg_int(&a, player);
    pg_int(&a, max);
    pg_int(&a, before);
    PGresult *r = pg_run(
        c,
        "SELECT m.id FROM matches m WHERE m.league_id = $1 AND (NOT $2::boolean OR"
        " m.status = 'active') AND ($3::bigint = 0 OR EXISTS (SELECT 1 FROM match_seats x"
        " WHERE x.match_id = m.id AND x.player_id = $3)) AND ($5::bigint = 0 OR m.id < $5)"
        " ORDER BY m.id DESC LIMIT $4",
        &a, "league matches", e);
    if (!r)
        return -1;
    int n = PQntuples(r) < max ? PQntuples(r) : max;
    for (int i = 0; i < n; i++)
        out[i] = pg_get_int(r, i, 0);
    PQclear(r);
    return n;
}

/* The one number `sql` answers into *n. */
static bool count(struct store_conn *c, const char *sql, struct pg_params *a, int64_t *n,
                  const char *what, struct err *e)
{
    PGresult *r = pg_run(c, sql, a, what, e);
    if (!r)
        return false;
    *n = PQntuples(r) ? pg_get_int(r, 0, 0) : 0;
    PQclear(r);
    return true;
}

bool pg_league_match_count(struct store_conn *c, int64_t league, int64_t *n, struct err *e)
{
    struct pg_params a = {0};
    pg_int(&a, league);
    return count(c, "SELECT count(*) FROM matches WHERE league_id = $1", &a, n,
                 "count league matches", e);
}

/* The league's row locked (FOR NO KEY UPDATE: the foreign keys of a match's or a member's
 * insert take only a share of its key, and do not wait for it). A statement that begins
 * after the lock is granted sees the rows of the transaction that held it. */
bool pg_league_take(struct store_conn *c, int64_t league, struct err *e)
{
    struct pg_params a = {0};
    pg_int(&a, league);
    return pg_do(c, "SELECT 1 FROM leagues WHERE id = $1 FOR NO KEY UPDATE", &a, NULL,
                 "take the league", e);
}

bool pg_invitation_add(struct store_conn *c, int64_t league, int64_t player, int64_t now,
                       struct err *e)
{
    struct pg_params a = {0};
    pg_int(&a, league);
    pg_int(&a, player);
    pg_int(&a, now);
    int64_t n = 0;
    if (!pg_do(c,
               "INSERT INTO league_invitations (league_id, player_id, invited_at)"
               " VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
               &a, &n, "invite", e))
        return false;
    return n == 1 || err_set(e, ERR_INVALID, "already_invited", "player %lld is invited already",
                             (long long)player);
}

bool pg_invitation_drop(struct store_conn *c, int64_t league, int64_t player, struct err *e)
{
    struct pg_params a = {0};
    pg_int(&a, league);
    pg_int(&a, player);
    int64_t n = 0;
    if (!pg_do(c, "DELETE FROM league_invitations WHERE league_id = $1 AND player_id = $2", &a,
               &n, "drop invitation", e))
        return false;
    return n == 1 || err_set(e, ERR_NOT_FOUND, "not_invited", "player %lld is not invited",
                             (long long)player);
}

int pg_invitations(struct store_conn *c, int64_t league, struct store_member *out, int max,
                   struct err *e)
{
    struct pg_params a = {0};
    pg_int(&a, league);
    pg_int(&a, max);
    PGresult *r = pg_run(c,
                         "SELECT i.player_id, p.name, i.invited_at FROM league_invitations i"
                         " JOIN players p ON p.id = i.player_id WHERE i.league_id = $1"
                         " ORDER BY i.invited_at, i.player_id LIMIT $2",
                         &a, "list invitations", e);
    if (!r)
        return -1;
    int n = PQntuples(r) < max ? PQntuples(r) : max;
    for (int i = 0; i < n; i++)
        out[i] = (struct store_member){.player = pg_get_int(r, i, 0),
                                       .name = pg_get_text(r, i, 1),
                                       .joined_at = pg_get_int(r, i, 2)};
    PQclear(r);
    return n;
}

bool pg_league_size(struct store_conn *c, int64_t league, int64_t *n, struct err *e)
{
    struct pg_params a = {0};
    pg_int(&a, league);
    return count(c,
                 "SELECT (SELECT count(*) FROM league_members WHERE league_id = $1 AND"
                 " left_at IS NULL) + (SELECT count(*) FROM league_invitations WHERE"
                 " league_id = $1)",
                 &a, n, "league size", e);
}

bool pg_league_seatings(struct store_conn *c, int64_t league,
                        void (*fn)(void *ctx, const int64_t *players, int n), void *ctx,
                        struct err *e)
{
    struct pg_params a = {0};
    pg_int(&a, league);
    PGresult *r = pg_run(c,
                         "SELECT x.match_id, x.player_id FROM match_seats x JOIN matches m ON"
                         " m.id = x.match_id WHERE m.league_id = $1 ORDER BY x.match_id, x.seat",
                         &a, "league seatings", e);
    if (!r)
        return false;
    int64_t match = -1, players[STORE_MAX_SEATS];
    int n = 0;
    for (int i = 0; i < PQntuples(r); i++) {
        int64_t id = pg_get_int(r, i, 0);
        if (id != match && n > 0) {
            fn(ctx, players, n);
            n = 0;
        }
        match = id;
        if (n < STORE_MAX_SEATS)
            players[n++] = pg_get_int(r, i, 1);
    }
    if (n > 0)
        fn(ctx, players, n);
    PQclear(r);
    return true;
}

#define STANDING_COLUMNS                                                                       \
    "SELECT s.player_id, p.name, s.played, s.won, s.drawn, s.lost, s.points, s.points_for,"   \
    " s.points_against, s.rating FROM standings s JOIN players p ON p.id = s.player_id "

static void read_standing(const PGresult *r, int i, struct store_standing *out)
{
    out->player = pg_get_int(r, i, 0);
    out->name = pg_get_text(r, i, 1);
    out->played = (int)pg_get_int(r, i, 2);
    out->won = (int)pg_get_int(r, i, 3);
    out->drawn = (int)pg_get_int(r, i, 4);
    out->lost = (int)pg_get_int(r, i, 5);
    out->points = pg_get_double(r, i, 6);
    out->points_for = pg_get_int(r, i, 7);
    out->points_against = pg_get_int(r, i, 8);
    out->rating = pg_get_double(r, i, 9);
}

bool pg_standing_get(struct store_conn *c, int64_t league, int64_t player,
                     struct store_standing *out, struct err *e)
{
    memset(out, 0, sizeof *out);
    out->player = player;
    out->rating = 1500;
    struct pg_params a = {0};
    pg_int(&a, league);
    pg_int(&a, player);
    PGresult *r = pg_run(c, STANDING_COLUMNS "WHERE s.league_id = $1 AND s.player_id = $2", &a,
                         "read standing", e);
    if (!r)
        return false;
    if (PQntuples(r) > 0)
        read_standing(r, 0, out);
    PQclear(r);
    return true;
}

bool pg_standing_put(struct store_conn *c, int64_t league, const struct store_standing *st,
                     struct err *e)
{
    struct pg_params a = {0};
    pg_int(&a, league);
    pg_int(&a, st->player);
    pg_int(&a, st->played);
    pg_int(&a, st->won);
    pg_int(&a, st->drawn);
    pg_int(&a, st->lost);
    pg_double(&a, st->points);
    pg_int(&a, st->points_for);
    pg_int(&a, st->points_against);
    pg_double(&a, st->rating);
    return pg_do(c,
                 "INSERT INTO standings (league_id, player_id, played, won, drawn, lost, points,"
                 " points_for, points_against, rating) VALUES ($1, $2, $3, $4, $5, $6, $7, $8,"
                 " $9, $10) ON CONFLICT (league_id, player_id) DO UPDATE SET"
                 " played = excluded.played, won = excluded.won, drawn = excluded.drawn,"
                 " lost = excluded.lost, points = excluded.points,"
                 " points_for = excluded.points_for, points_against = excluded.points_against,"
                 " rating = excluded.rating",
                 &a, NULL, "write standing", e);
}

int pg_standings(struct store_conn *c, int64_t league, bool low_wins,
                 struct store_standing *out, int max, struct err *e)
{
    struct pg_params a = {0};
    pg_int(&a, league);
    pg_bool(&a, low_wins);
    pg_int(&a, max);
    PGresult *r = pg_run(c,
                         STANDING_COLUMNS "WHERE s.league_id = $1 ORDER BY s.points DESC,"
                                          " s.won DESC, CASE WHEN $2::boolean THEN"
                                          " s.points_against - s.points_for"
                                          " ELSE s.points_for - s.points_against END DESC,"
                                          " s.rating DESC, s.player_id LIMIT $3",
                         &a, "standings", e);
    if (!r)
        return -1;
    int n = PQntuples(r) < max ? PQntuples(r) : max;
    for (int i = 0; i < n; i++) {
        memset(&out[i], 0, sizeof out[i]);
        read_standing(r, i, &out[i]);
    }
    PQclear(r);
    return n;
}
