/* api-leagues.c - the HTTP edge of leagues: creating one, listing and reading them, members
 * joining, invited and leaving, the standings; and a match's summary as every listing shows
 * it. Each handler parses the request into the typed input of one operation (core.h),
 * calls it, and writes its answer or maps its error (api_problem_from_err). Scheduling
 * (POST /v1/leagues/{id}/schedule {"rounds"?}) calls core_league_schedule, which creates the
 * matches through core_match_create.
 */
#include "core.h"
#include "handlers.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Whether anyone with a token asks (else the 401, in r). */
static bool need_caller(const struct api_caller *c, struct err *e, struct api_reply *r)
{
    return core_need_caller(c, e) || api_problem_from_err(r, e);
}

static json_t *league_json(const struct store_league *l)
{
    json_t *j = json_pack("{s:I, s:s, s:s, s:o, s:o, s:o, s:o, s:i, s:i, s:i, s:I}", "id",
                          (json_int_t)l->id, "name", l->name, "game", l->game, "options",
                          json_loads(l->options, 0, NULL), "clock",
                          l->clock ? json_loads(l->clock, JSON_DECODE_ANY, NULL) : json_null(),
                          "points", json_loads(l->points, 0, NULL), "organizer",
                          l->organizer ? json_integer(l->organizer) : json_null(), "members",
                          l->members, "matches_active", l->matches_active, "matches_finished",
                          l->matches_finished, "created_at", (json_int_t)l->created_at);
    return j;
}

/* A pending or cancelled match's invitation: who accepted, who is awaited, until when. */
static json_t *invitation_json(const struct store_match *m)
{
    json_t *accepted = json_array(), *waiting = json_array();
    for (int s = 0; s < m->seats && s < STORE_MAX_SEATS; s++)
        json_array_append_new((m->accepted >> s) & 1 ? accepted : waiting, json_integer(s));
    if (m->invitation != STORE_MATCH_PENDING)
        json_array_clear(waiting);
    return json_pack("{s:o, s:o, s:o}", "accepted", accepted, "waiting_for", waiting,
                     "expires_at",
                     m->invitation == STORE_MATCH_PENDING ? json_integer(m->invited_until)
                                                          : json_null());
}

/* A match as the listings show it, from its stored summary. */
static json_t *summary_json(const struct store_match *m)
{
    json_t *players = json_array();
    for (int s = 0; s < m->seats && s < STORE_MAX_SEATS; s++)
        json_array_append_new(players, json_pack("{s:i, s:I, s:s?}", "seat", s, "id",
                                                 (json_int_t)m->players[s], "name",
                                                 m->names[s]));
    json_t *opts = json_loads(m->options, 0, NULL);
    const char *status = m->invitation == STORE_MATCH_PENDING   ? "pending"
                         : m->invitation != STORE_MATCH_STARTED ? "cancelled"
                         : m->finished                          ? "finished"
                                                                : "active";
    json_t *j = json_pack("{s:I, s:s, s:I, s:o, s:o, s:o, s:O, s:o, s:o}", "id",
                          (json_int_t)m->id, "status", status, "seq", (json_int_t)m->seq,
                          "players", players, "to_move", json_loads(m->to_move, 0, NULL),
                          "totals", json_loads(m->totals, 0, NULL), "target",
                          json_object_get(opts, "target"), "result",
                          m->result ? json_loads(m->result, 0, NULL) : json_null(), "deadline",
                          m->deadline && !m->finished ? json_integer(m->deadline)
                                                      : json_null());
    json_object_set_new(j, "game", json_string(m->game));
    json_object_set_new(j, "league", m->league ? json_integer(m->league) : json_null());
    if (m->invitation != STORE_MATCH_STARTED) {
        json_object_set_new(j, "invitation", invitation_json(m));
        if (m->invitation != STORE_MATCH_PENDING)
            json_object_set_new(j, "cancelled",
                                json_string(m->invitation == STORE_MATCH_DECLINED ? "declined"
                                                                                  : "expired"));
    }
    json_decref(opts);
    return j;
}

json_t *api_match_summaries_json(const struct store_match *rows, int n)
{
    json_t *list = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(list, summary_json(&rows[i]));
    return list;
}

/* The "points" of a new league as JSON text: the request's (one number from 0 per place,
 * kept as written), else seats - 1 for the first place down to 0; NULL with a problem. */
static char *points_text(json_t *points, int seats, struct api_reply *r)
{
    json_t *pts = json_array();
    if (points && json_is_array(points)) {
        if (json_array_size(points) != (size_t)seats) {
            json_decref(pts);
            api_problem(r, 422, "invalid_field", "\"points\" gives points for each of the %d "
                                                 "places",
                        seats);
            return NULL;
        }
        size_t i;
        json_t *p;
        json_array_foreach(points, i, p) {
            if (!json_is_number(p) || json_number_value(p) < 0 || json_number_value(p) > 1e6) {
                json_decref(pts);
                api_problem(r, 422, "invalid_field", "\"points\" are numbers from 0");
                return NULL;
            }
            json_array_append(pts, p);
        }
    } else {
        for (int i = 0; i < seats; i++)
            json_array_append_new(pts, json_integer(seats - 1 - i));
    }
    char *text = json_dumps(pts, JSON_COMPACT);
    json_decref(pts);
    if (!text)
        api_problem(r, 500, "nomem", "out of memory");
    return text;
}

/* The request's name, game and options (in that order of checks) into `in`. */
static bool league_parse(json_t *body, struct core_league_new *in, struct api_reply *r)
{
    json_t *name = json_object_get(body, "name"), *game = json_object_get(body, "game");
    json_t *options = json_object_get(body, "options"), *points = json_object_get(body, "points");
    if (!name || !game)
        return api_problem(r, 400, "missing_field", "\"name\" and \"game\" are required");
    if (!json_is_string(name) || !json_is_string(game) ||
        (options && !json_is_null(options) && !json_is_object(options)) ||
        (points && !json_is_null(points) && !json_is_array(points)))
        return api_problem(r, 400, "bad_request", "\"name\" and \"game\" are strings, "
                                                  "\"options\" an object, \"points\" an array");
    size_t name_len = json_string_length(name);
    if (name_len == 0 || name_len > 100 || strlen(json_string_value(name)) != name_len)
        return api_problem(r, 422, "invalid_field", "\"name\" is 1 to 100 characters");
    in->name = json_string_value(name);
    struct err e;
    if (!api_game_parse(game, &in->game, &e))
        return api_problem_from_err(r, &e);
    if (!tlog_options_parse(in->game, options, &in->options, &e))
        return api_problem(r, 422, "bad_option", "%s", e.msg);
    return true;
}

void api_league_create(struct api_app *app, const struct api_caller *c, json_t *body,
                       struct api_reply *r)
{
    struct err e;
    if (!need_caller(c, &e, r))
        return;
    if (!json_is_object(body)) {
        api_problem(r, 400, "bad_request", "the body must be a JSON object");
        return;
    }
    struct core_league_new in = {0};
    struct api_clock parsed;
    json_t *clock = json_object_get(body, "clock");
    char *points = NULL, *clock_text = NULL;
    if (!league_parse(body, &in, r) || !api_clock_parse(clock, in.game, &parsed, r) ||
        !(points = points_text(json_object_get(body, "points"), in.options.seats, r)))
        return;
    clock_text = clock ? json_dumps(clock, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    in.clock = clock_text;
    in.points = points;
    struct store_league l;
    if (core_league_create(app, c, &in, &l, &e)) {
        r->status = 201;
        r->body = league_json(&l);
        store_league_finish(&l);
    } else {
        api_problem_from_err(r, &e);
    }
    free(points);
    free(clock_text);
}

void api_leagues_list(struct api_app *app, struct api_reply *r)
{
    struct store_league *rows;
    struct err e;
    int n = core_leagues_list(app, &rows, &e);
    if (n < 0) {
        api_problem_from_err(r, &e);
        return;
    }
    json_t *list = json_array();
    for (int i = 0; i < n; i++) {
        json_array_append_new(list, league_json(&rows[i]));
        store_league_finish(&rows[i]);
    }
    free(rows);
    r->status = 200;
    r->body = json_pack("{s:o}", "leagues", list);
}

/* GET /v1/players/me/leagues: the listing's leagues, each with what the caller is in it. */
void api_player_leagues(struct api_app *app, const struct api_caller *c, struct api_reply *r)
{
    struct store_league *rows;
    unsigned *roles;
    struct err e;
    int n = core_player_leagues(app, c, &rows, &roles, &e);
    if (n < 0) {
        api_problem_from_err(r, &e);
        return;
    }
    json_t *list = json_array();
    for (int i = 0; i < n; i++) {
        json_t *j = league_json(&rows[i]);
        json_object_set_new(j, "member", json_boolean(roles[i] & STORE_LEAGUE_MEMBER));
        json_object_set_new(j, "invited", json_boolean(roles[i] & STORE_LEAGUE_INVITED));
        json_array_append_new(list, j);
        store_league_finish(&rows[i]);
    }
    free(rows);
    free(roles);
    r->status = 200;
    r->body = json_pack("{s:o}", "leagues", list);
}

void api_league_get(struct api_app *app, int64_t id, struct api_reply *r)
{
    struct core_league_view v;
    struct err e;
    if (!core_league_get(app, id, &v, &e)) {
        api_problem_from_err(r, &e);
        return;
    }
    json_t *j = league_json(&v.league);
    json_t *members = json_array(), *invited = json_array();
    json_t *matches = api_match_summaries_json(v.matches, v.nmatches);
    for (int i = 0; i < v.nmembers; i++) {
        const struct store_member *m = &v.members[i];
        json_array_append_new(members, json_pack("{s:I, s:s?, s:I, s:o}", "id",
                                                 (json_int_t)m->player, "name", m->name,
                                                 "joined_at", (json_int_t)m->joined_at,
                                                 "left_at", m->left_at ? json_integer(m->left_at)
                                                                       : json_null()));
    }
    for (int i = 0; i < v.ninvited; i++)
        json_array_append_new(invited, json_pack("{s:I, s:s?, s:I}", "id",
                                                 (json_int_t)v.invited[i].player, "name",
                                                 v.invited[i].name, "invited_at",
                                                 (json_int_t)v.invited[i].joined_at));
    core_league_view_finish(&v);
    json_object_set_new(j, "members", members);
    json_object_set_new(j, "invited", invited);
    json_object_set_new(j, "matches", matches);
    r->status = 200;
    r->body = j;
}

/* Joining (the player's own token), an organiser's invitation, or the operator adding a
 * member (docs/api.md "Leagues", docs/security.md "Consent"). */
void api_league_member_add(struct api_app *app, const struct api_caller *c, int64_t id,
                           json_t *body, struct api_reply *r)
{
    struct err e;
    if (!need_caller(c, &e, r))
        return;
    json_t *who = body ? json_object_get(body, "player") : NULL;
    int64_t player = c->player;
    if (who && !json_is_null(who)) {
        if (!json_is_integer(who)) {
            api_problem(r, 400, "bad_request", "\"player\" is a player id");
            return;
        }
        player = json_integer_value(who);
    }
    enum core_join how;
    char *name;
    int64_t at;
    if (!core_league_member_add(app, c, id, player, &how, &name, &at, &e)) {
        api_problem_from_err(r, &e);
        return;
    }
    r->status = how == CORE_JOINED ? 201 : 202;
    r->body = json_pack("{s:I, s:I, s:s, s:s, s:I}", "league", (json_int_t)id, "player",
                        (json_int_t)player, "name", name, "status",
                        how == CORE_JOINED ? "member" : "invited",
                        how == CORE_JOINED ? "joined_at" : "invited_at", (json_int_t)at);
    free(name);
}

void api_league_member_remove(struct api_app *app, const struct api_caller *c, int64_t id,
                              int64_t player, struct api_reply *r)
{
    bool uninvited;
    int64_t *forfeited;
    int n;
    struct err e;
    if (!core_league_member_remove(app, c, id, player, &uninvited, &forfeited, &n, &e)) {
        api_problem_from_err(r, &e);
        return;
    }
    r->status = 200;
    if (uninvited) {
        r->body = json_pack("{s:I, s:I}", "league", (json_int_t)id, "uninvited",
                            (json_int_t)player);
        return;
    }
    json_t *list = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(list, json_integer(forfeited[i]));
    free(forfeited);
    r->body = json_pack("{s:I, s:o}", "left", (json_int_t)player, "forfeited", list);
}

void api_league_standings(struct api_app *app, int64_t id, struct api_reply *r)
{
    struct store_standing *rows;
    struct err e;
    int n = core_league_standings(app, id, &rows, &e);
    if (n < 0) {
        api_problem_from_err(r, &e);
        return;
    }
    json_t *list = json_array();
    for (int i = 0; i < n; i++) {
        const struct store_standing *s = &rows[i];
        json_array_append_new(
            list, json_pack("{s:i, s:I, s:s?, s:i, s:i, s:i, s:i, s:f, s:I, s:I, s:f}", "rank",
                            i + 1, "player", (json_int_t)s->player, "name", s->name, "played",
                            s->played, "won", s->won, "drawn", s->drawn, "lost", s->lost,
                            "points", s->points, "for", (json_int_t)s->points_for, "against",
                            (json_int_t)s->points_against, "rating",
                            round(s->rating * 10) / 10));
        store_standing_finish(&rows[i]);
    }
    free(rows);
    r->status = 200;
    r->body = json_pack("{s:I, s:o}", "league", (json_int_t)id, "standings", list);
}

void api_league_schedule(struct api_app *app, const struct api_caller *c, int64_t id,
                         json_t *body, struct api_reply *r)
{
    /* Absent or null: the default (0). A value out of 1 to 100 (-1) is refused by the core,
     * after who asks and which league. */
    json_t *v = body ? json_object_get(body, "rounds") : NULL;
    int rounds = !v || json_is_null(v) ? 0
                 : json_is_integer(v) && json_integer_value(v) >= 1 && json_integer_value(v) <= 100
                     ? (int)json_integer_value(v)
                     : -1;
    int64_t *ids;
    size_t n;
    struct err e;
    if (!core_league_schedule(app, c, id, rounds, &ids, &n, &e)) {
        api_problem_from_err(r, &e);
        return;
    }
    json_t *made = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(made, json_integer(ids[i]));
    free(ids);
    r->status = 201;
    r->body = json_pack("{s:o}", "matches", made);
}
