/* leagues.c - leagues: creating them, members joining and leaving (leaving forfeits the
 * running matches), round-robin scheduling (every pairing for two-seat games, balanced
 * tables for the others), and the standings, updated in the very transaction that
 * finishes a league match (docs/api.md "Leagues").
 */
#include "core.h"
#include "handlers.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_MEMBERS 4096
#define ELO_K 32.0

static bool need_caller(const struct api_caller *c, struct api_reply *r)
{
    return c->authenticated ||
           api_problem(r, 401, "unauthorized", "this needs a player's or the operator's token");
}

/* Load a league; false with a 404 (or 500) in r. Takes db_lock itself. */
static bool load_league(struct api_app *app, int64_t id, struct store_league *l,
                        struct api_reply *r)
{
    struct err e;
    pthread_mutex_lock(&app->db_lock);
    bool ok = store_league_get(app->store, id, l, &e);
    pthread_mutex_unlock(&app->db_lock);
    return ok || api_problem_from_err(r, &e);
}

static bool organizer(const struct api_caller *c, const struct store_league *l)
{
    return c->operator || (c->player && c->player == l->organizer);
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

void api_league_create(struct api_app *app, const struct api_caller *c, json_t *body,
                       struct api_reply *r)
{
    if (!need_caller(c, r))
        return;
    if (!json_is_object(body)) {
        api_problem(r, 400, "bad_request", "the body must be a JSON object");
        return;
    }
    json_t *name = json_object_get(body, "name"), *game = json_object_get(body, "game");
    json_t *options = json_object_get(body, "options"), *points = json_object_get(body, "points");
    json_t *clock = json_object_get(body, "clock");
    if (!name || !game) {
        api_problem(r, 400, "missing_field", "\"name\" and \"game\" are required");
        return;
    }
    if (!json_is_string(name) || !json_is_string(game) ||
        (options && !json_is_null(options) && !json_is_object(options)) ||
        (points && !json_is_null(points) && !json_is_array(points))) {
        api_problem(r, 400, "bad_request", "\"name\" and \"game\" are strings, \"options\" an "
                                           "object, \"points\" an array");
        return;
    }
    size_t name_len = json_string_length(name);
    if (name_len == 0 || name_len > 100 || strlen(json_string_value(name)) != name_len) {
        api_problem(r, 422, "invalid_field", "\"name\" is 1 to 100 characters");
        return;
    }
    enum rules_game_id g;
    struct err ge;
    if (!api_game_parse(game, &g, &ge)) {
        api_problem_from_err(r, &ge);
        return;
    }
    struct rules_options o;
    struct err e;
    if (!tlog_options_parse(g, options, &o, &e)) {
        api_problem(r, 422, "bad_option", "%s", e.msg);
        return;
    }
    struct api_clock parsed;
    if (!api_clock_parse(clock, g, &parsed, r))
        return;
    json_t *pts = json_array();
    if (points && json_is_array(points)) {
        if (json_array_size(points) != (size_t)o.seats) {
            json_decref(pts);
            api_problem(r, 422, "invalid_field", "\"points\" gives points for each of the %d "
                                                 "places",
                        o.seats);
            return;
        }
        size_t i;
        json_t *p;
        json_array_foreach(points, i, p) {
            if (!json_is_number(p) || json_number_value(p) < 0 || json_number_value(p) > 1e6) {
                json_decref(pts);
                api_problem(r, 422, "invalid_field", "\"points\" are numbers from 0");
                return;
            }
            json_array_append(pts, p);
        }
    } else {
        for (int i = 0; i < o.seats; i++)
            json_array_append_new(pts, json_integer(o.seats - 1 - i));
    }
    json_t *opts = tlog_options_json(g, &o);
    struct store_league l = {
        .name = (char *)json_string_value(name),
        .game = (char *)rules_game_name(g),
        .options = json_dumps(opts, JSON_COMPACT),
        .clock = clock ? json_dumps(clock, JSON_COMPACT | JSON_ENCODE_ANY) : NULL,
        .points = json_dumps(pts, JSON_COMPACT),
        .organizer = c->operator ? 0 : c->player,
        .created_at = api_now_ms(app) / 1000,
    };
    json_decref(opts);
    json_decref(pts);
    pthread_mutex_lock(&app->db_lock);
    bool ok = store_league_insert(app->store, &l, &e);
    pthread_mutex_unlock(&app->db_lock);
    if (ok) {
        r->status = 201;
        r->body = league_json(&l);
    } else {
        api_problem_from_err(r, &e);
    }
    free(l.options);
    free(l.clock);
    free(l.points);
}

void api_leagues_list(struct api_app *app, struct api_reply *r)
{
    struct store_league *rows = calloc(500, sizeof *rows);
    struct err e;
    if (!rows) {
        api_problem(r, 500, "nomem", "out of memory");
        return;
    }
    pthread_mutex_lock(&app->db_lock);
    int n = store_leagues(app->store, rows, 500, &e);
    pthread_mutex_unlock(&app->db_lock);
    if (n < 0) {
        free(rows);
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

json_t *api_match_summary(struct api_app *app, int64_t id, struct err *e)
{
    struct store_match m;
    if (!store_match_get(app->store, id, &m, e))
        return NULL;
    json_t *players = json_array();
    for (int s = 0; s < m.seats && s < STORE_MAX_SEATS; s++)
        json_array_append_new(players, json_pack("{s:i, s:I, s:s?}", "seat", s, "id",
                                                 (json_int_t)m.players[s], "name",
                                                 m.names[s]));
    json_t *opts = json_loads(m.options, 0, NULL);
    const char *status = m.invitation == STORE_MATCH_PENDING   ? "pending"
                         : m.invitation != STORE_MATCH_STARTED ? "cancelled"
                         : m.finished                          ? "finished"
                                                               : "active";
    json_t *j = json_pack("{s:I, s:s, s:I, s:o, s:o, s:o, s:O, s:o, s:o}", "id", (json_int_t)m.id,
                          "status", status, "seq", (json_int_t)m.seq,
                          "players", players, "to_move", json_loads(m.to_move, 0, NULL),
                          "totals", json_loads(m.totals, 0, NULL), "target",
                          json_object_get(opts, "target"), "result",
                          m.result ? json_loads(m.result, 0, NULL) : json_null(), "deadline",
                          m.deadline && !m.finished ? json_integer(m.deadline) : json_null());
    json_object_set_new(j, "game", json_string(m.game));
    json_object_set_new(j, "league", m.league ? json_integer(m.league) : json_null());
    if (m.invitation != STORE_MATCH_STARTED) {
        json_t *accepted = json_array(), *waiting = json_array();
        for (int s = 0; s < m.seats && s < STORE_MAX_SEATS; s++)
            json_array_append_new((m.accepted >> s) & 1 ? accepted : waiting, json_integer(s));
        if (m.invitation != STORE_MATCH_PENDING)
            json_array_clear(waiting);
        json_object_set_new(j, "invitation",
                            json_pack("{s:o, s:o, s:o}", "accepted", accepted, "waiting_for",
                                      waiting, "expires_at",
                                      m.invitation == STORE_MATCH_PENDING
                                          ? json_integer(m.invited_until)
                                          : json_null()));
        if (m.invitation != STORE_MATCH_PENDING)
            json_object_set_new(j, "cancelled", json_string(m.invitation == STORE_MATCH_DECLINED
                                                                ? "declined"
                                                                : "expired"));
    }
    json_decref(opts);
    store_match_finish(&m);
    return j;
}

/* The organiser's invitations waiting: [{id, name, invited_at}], or NULL. */
static json_t *invited_json(struct api_app *app, int64_t id)
{
    struct store_member *rows = calloc(MAX_MEMBERS, sizeof *rows);
    struct err e;
    int n = -1;
    if (rows) {
        pthread_mutex_lock(&app->db_lock);
        n = store_invitations(app->store, id, rows, MAX_MEMBERS, &e);
        pthread_mutex_unlock(&app->db_lock);
    }
    json_t *list = n >= 0 ? json_array() : NULL;
    for (int i = 0; i < n; i++) {
        json_array_append_new(list, json_pack("{s:I, s:s?, s:I}", "id",
                                              (json_int_t)rows[i].player, "name", rows[i].name,
                                              "invited_at", (json_int_t)rows[i].joined_at));
        store_member_finish(&rows[i]);
    }
    free(rows);
    return list;
}

void api_league_get(struct api_app *app, int64_t id, struct api_reply *r)
{
    struct store_league l;
    struct err ce;
    if (!load_league(app, id, &l, r))
        return;
    pthread_mutex_lock(&app->db_lock);
    bool counted = store_league_counts(app->store, &l, &ce);
    pthread_mutex_unlock(&app->db_lock);
    if (!counted) {
        store_league_finish(&l);
        api_problem_from_err(r, &ce);
        return;
    }
    json_t *j = league_json(&l);
    store_league_finish(&l);
    struct store_member *members = calloc(MAX_MEMBERS, sizeof *members);
    int64_t ids[200];
    struct err e;
    int nm = -1, n = -1;
    json_t *list = json_array(), *mlist = json_array();
    pthread_mutex_lock(&app->db_lock);
    if (members)
        nm = store_members(app->store, id, members, MAX_MEMBERS, &e);
    if (nm >= 0)
        n = store_league_matches(app->store, id, 0, false, 0, ids, 200, &e);
    for (int i = 0; i < n; i++) {
        json_t *one = api_match_summary(app, ids[i], &e);
        if (one)
            json_array_append_new(mlist, one);
    }
    pthread_mutex_unlock(&app->db_lock);
    for (int i = 0; i < nm; i++) {
        json_array_append_new(list, json_pack("{s:I, s:s?, s:I, s:o}", "id",
                                              (json_int_t)members[i].player, "name",
                                              members[i].name, "joined_at",
                                              (json_int_t)members[i].joined_at, "left_at",
                                              members[i].left_at ? json_integer(members[i].left_at)
                                                                 : json_null()));
        store_member_finish(&members[i]);
    }
    free(members);
    if (nm < 0 || n < 0) {
        json_decref(j);
        json_decref(list);
        json_decref(mlist);
        api_problem_from_err(r, &e);
        return;
    }
    json_t *invited = invited_json(app, id);
    if (!invited) {
        json_decref(j);
        json_decref(list);
        json_decref(mlist);
        api_problem(r, 500, "internal", "cannot read the invitations");
        return;
    }
    json_object_set_new(j, "members", list);
    json_object_set_new(j, "invited", invited);
    json_object_set_new(j, "matches", mlist);
    r->status = 200;
    r->body = j;
}

/* Joining (the player's own token), an organiser's invitation, or the operator adding a
 * member (docs/api.md "Leagues", docs/security.md "Consent"). */
void api_league_member_add(struct api_app *app, const struct api_caller *c, int64_t id,
                           json_t *body, struct api_reply *r)
{
    struct store_league l;
    if (!need_caller(c, r) || !load_league(app, id, &l, r))
        return;
    json_t *who = body ? json_object_get(body, "player") : NULL;
    int64_t player = c->player;
    if (who && !json_is_null(who)) {
        if (!json_is_integer(who)) {
            store_league_finish(&l);
            api_problem(r, 400, "bad_request", "\"player\" is a player id");
            return;
        }
        player = json_integer_value(who);
    }
    if (!player) {
        store_league_finish(&l);
        api_problem(r, 400, "missing_field", "name the \"player\" to add");
        return;
    }
    if (player != c->player && !organizer(c, &l)) {
        store_league_finish(&l);
        api_problem(r, 403, "forbidden", "only the organizer invites other players");
        return;
    }
    store_league_finish(&l);
    struct store_player p = {0};
    struct store_standing st = {0};
    struct err e;
    int64_t now = api_now_ms(app) / 1000;
    pthread_mutex_lock(&app->db_lock);
    bool ok = store_player_get(app->store, player, &p, &e);
    if (!ok && e.code == ERR_NOT_FOUND) {
        pthread_mutex_unlock(&app->db_lock);
        api_problem(r, 422, "unknown_player", "no player %lld", (long long)player);
        return;
    }
    /* Consent: the player themself, the operator, or a player who lets others enrol them
     * without asking; anyone else is invited and joins by accepting. */
    bool enrol = player == c->player || c->operator || api_prefs_seat_without_asking(p.prefs);
    bool current = false;
    int64_t size = 0;
    struct err none;
    ok = ok && store_begin(app->store, &e);
    if (ok && store_member_is(app->store, id, player, &current, &none) && current)
        ok = err_set(&e, ERR_INVALID, "already_member", "player %lld is a member already",
                     (long long)player);
    /* Joining answers an invitation waiting; then members and invitations are counted. */
    if (ok && enrol && !store_invitation_drop(app->store, id, player, &none) &&
        none.code != ERR_NOT_FOUND)
        ok = err_set(&e, none.code, none.tag, "%s", none.msg);
    ok = ok && store_league_size(app->store, id, &size, &e);
    if (ok && size >= app->config.league_max_members)
        ok = err_set(&e, ERR_INVALID, "league_full",
                     "a league has at most %d members and invitations (league_max_members)",
                     app->config.league_max_members);
    if (ok && enrol) {
        /* A new member appears in the table at once, with nothing played. */
        ok = store_member_add(app->store, id, player, now, &e) &&
             store_standing_get(app->store, id, player, &st, &e) &&
             store_standing_put(app->store, id, &st, &e);
        store_standing_finish(&st);
    } else if (ok) {
        ok = store_invitation_add(app->store, id, player, now, &e);
    }
    ok = ok && store_commit(app->store, &e);
    if (!ok)
        store_rollback(app->store);
    pthread_mutex_unlock(&app->db_lock);
    if (!ok) {
        if (!strcmp(e.tag, "already_member") || !strcmp(e.tag, "already_invited"))
            api_problem(r, 409, e.tag, "%s", e.msg);
        else if (!strcmp(e.tag, "league_full"))
            api_problem(r, 422, e.tag, "%s", e.msg);
        else
            api_problem_from_err(r, &e);
    } else if (enrol) {
        r->status = 201;
        r->body = json_pack("{s:I, s:I, s:s, s:s, s:I}", "league", (json_int_t)id, "player",
                            (json_int_t)player, "name", p.name, "status", "member", "joined_at",
                            (json_int_t)now);
    } else {
        r->status = 202;
        r->body = json_pack("{s:I, s:I, s:s, s:s, s:I}", "league", (json_int_t)id, "player",
                            (json_int_t)player, "name", p.name, "status", "invited",
                            "invited_at", (json_int_t)now);
    }
    store_player_finish(&p);
}

void api_league_member_remove(struct api_app *app, const struct api_caller *c, int64_t id,
                              int64_t player, struct api_reply *r)
{
    struct store_league l;
    if (!need_caller(c, r) || !load_league(app, id, &l, r))
        return;
    bool allowed = organizer(c, &l) || c->player == player;
    store_league_finish(&l);
    if (!allowed) {
        api_problem(r, 403, "forbidden", "only the organizer removes other players");
        return;
    }
    struct err e;
    enum { PAGE = 256 };
    int64_t ids[PAGE];
    pthread_mutex_lock(&app->db_lock);
    /* An invitation waiting is declined (by the player) or withdrawn (by the organiser). */
    bool invited = store_invitation_drop(app->store, id, player, &e);
    bool ok = invited || (e.code == ERR_NOT_FOUND &&
                          store_member_leave(app->store, id, player, api_now_ms(app) / 1000, &e));
    pthread_mutex_unlock(&app->db_lock);
    if (!ok) {
        api_problem_from_err(r, &e);
        return;
    }
    if (invited) {
        r->status = 200;
        r->body = json_pack("{s:I, s:I}", "league", (json_int_t)id, "uninvited",
                            (json_int_t)player);
        return;
    }
    /* Leaving forfeits: resign every running league match of the player, page by page
     * (a pending one is declined). */
    json_t *forfeited = json_array();
    for (int64_t before = 0;;) {
        pthread_mutex_lock(&app->db_lock);
        int n = store_league_matches(app->store, id, player, true, before, ids, PAGE, &e);
        pthread_mutex_unlock(&app->db_lock);
        if (n < 0) {
            json_decref(forfeited);
            api_problem_from_err(r, &e);
            return;
        }
        for (int i = 0; i < n; i++)
            if (api_match_forfeit(app, ids[i], player, &e))
                json_array_append_new(forfeited, json_integer(ids[i]));
        if (n < PAGE)
            break;
        before = ids[n - 1];
    }
    r->status = 200;
    r->body = json_pack("{s:I, s:o}", "left", (json_int_t)player, "forfeited", forfeited);
}

/* ---- Scheduling --------------------------------------------------------------------------- */

struct meets {
    int n;
    const int64_t *ids;
    uint16_t *count;         /* n x n: how often i and j sat at one table */
    int *sat_out;            /* rounds each sat out */
};

static int index_of(const struct meets *mt, int64_t player)
{
    for (int i = 0; i < mt->n; i++)
        if (mt->ids[i] == player)
            return i;
    return -1;
}

static void count_table(void *ctx, const int64_t *players, int n)
{
    struct meets *mt = ctx;
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++) {
            int i = index_of(mt, players[a]), j = index_of(mt, players[b]);
            if (i >= 0 && j >= 0) {
                mt->count[i * mt->n + j]++;
                mt->count[j * mt->n + i]++;
            }
        }
}

/* The schedule being made: the league, its current members, and the matches made so far. */
struct schedule {
    struct api_app *app;
    int64_t league;
    enum rules_game_id game;
    int seats, n;                 /* seats a table; current members */
    int64_t *members;             /* n of them */
    int64_t *made;                /* the matches created, in order */
    size_t nmade, cap;
};

/* Create one league match of `players` through the one path every match takes (validation,
 * seed, first deal, notifications), on the league's behalf: nobody is asked. */
static bool schedule_match(struct schedule *sc, const int64_t *players, struct err *e)
{
    struct core_match_spec spec = {.game = sc->game, .nplayers = (size_t)sc->seats,
                                   .league = sc->league};
    memcpy(spec.players, players, (size_t)sc->seats * sizeof *players);
    int64_t id;
    if (!core_match_create(sc->app, NULL, &spec, NULL, &id, NULL, e))
        return false;
    if (sc->nmade == sc->cap) {
        size_t cap = sc->cap ? 2 * sc->cap : 64;
        int64_t *grown = realloc(sc->made, cap * sizeof *grown);
        if (!grown)
            return err_set(e, ERR_NOMEM, "nomem", "out of memory");
        sc->made = grown;
        sc->cap = cap;
    }
    sc->made[sc->nmade++] = id;
    return true;
}

/* Two seats: every pair once per round; who sits first alternates. */
static bool schedule_pairs(struct schedule *sc, int rounds, struct err *e)
{
    const int64_t *ids = sc->members;
    for (int round = 0; round < rounds; round++)
        for (int a = 0; a < sc->n; a++)
            for (int b = a + 1; b < sc->n; b++) {
                bool swap = (round + a + b) % 2;
                int64_t pair[2] = {swap ? ids[b] : ids[a], swap ? ids[a] : ids[b]};
                if (!schedule_match(sc, pair, e))
                    return false;
            }
    return true;
}

/* One round's tables: who plays (those who sat out most, then in a rotating order), and
 * each table filled with the players who met it least. */
static bool schedule_round(struct schedule *sc, struct meets *mt, int round, bool *used,
                           int *order, struct err *e)
{
    int n = sc->n, seats = sc->seats, tables = n / seats;
    for (int i = 0; i < n; i++)
        order[i] = (i + round * tables * seats) % n;
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && mt->sat_out[order[j]] > mt->sat_out[order[j - 1]]; j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    memset(used, 0, (size_t)n * sizeof *used);
    for (int i = tables * seats; i < n; i++) {
        mt->sat_out[order[i]]++;
        used[order[i]] = true; /* sits out this round */
    }
    for (int t = 0; t < tables; t++) {
        int table[RULES_MAX_SEATS], k = 0;
        for (int i = 0; i < n && k == 0; i++)
            if (!used[order[i]]) {
                table[k++] = order[i];
                used[order[i]] = true;
            }
        while (k < seats) {
            /* The player who has met this table least. */
            int best = -1;
            long best_cost = 0;
            for (int i = 0; i < n; i++) {
                int p = order[i];
                if (used[p])
                    continue;
                long cost = 0;
                for (int x = 0; x < k; x++)
                    cost += mt->count[p * n + table[x]];
                if (best < 0 || cost < best_cost) {
                    best = p;
                    best_cost = cost;
                }
            }
            table[k++] = best;
            used[best] = true;
        }
        int64_t players[RULES_MAX_SEATS];
        for (int x = 0; x < seats; x++)
            players[x] = sc->members[table[(x + round) % seats]];
        count_table(mt, players, seats);
        if (!schedule_match(sc, players, e))
            return false;
    }
    return true;
}

/* More seats: balanced tables, round after round, from how often members met so far. */
static bool schedule_tables(struct schedule *sc, int rounds, struct err *e)
{
    int n = sc->n;
    struct meets mt = {.n = n, .ids = sc->members};
    mt.count = calloc((size_t)n * (size_t)n, sizeof *mt.count);
    mt.sat_out = calloc((size_t)n, sizeof *mt.sat_out);
    bool *used = calloc((size_t)n, sizeof *used);
    int *order = calloc((size_t)n, sizeof *order);
    bool ok = (mt.count && mt.sat_out && used && order) ||
              err_set(e, ERR_NOMEM, "nomem", "out of memory");
    if (ok) {
        pthread_mutex_lock(&sc->app->db_lock);
        ok = store_league_seatings(sc->app->store, sc->league, count_table, &mt, e);
        pthread_mutex_unlock(&sc->app->db_lock);
    }
    for (int round = 0; ok && round < rounds; round++)
        ok = schedule_round(sc, &mt, round, used, order, e);
    free(used);
    free(order);
    free(mt.count);
    free(mt.sat_out);
    return ok;
}

/* The league's current members into sc->members; false with e. */
static bool schedule_members(struct schedule *sc, struct err *e)
{
    struct store_member *members = calloc(MAX_MEMBERS, sizeof *members);
    sc->members = calloc(MAX_MEMBERS, sizeof *sc->members);
    int nm = -1;
    if (members && sc->members) {
        pthread_mutex_lock(&sc->app->db_lock);
        nm = store_members(sc->app->store, sc->league, members, MAX_MEMBERS, e);
        pthread_mutex_unlock(&sc->app->db_lock);
    }
    sc->n = 0;
    for (int i = 0; i < nm; i++) {
        if (!members[i].left_at)
            sc->members[sc->n++] = members[i].player;
        store_member_finish(&members[i]);
    }
    free(members);
    return nm >= 0 || err_set(e, ERR_IO, "internal", "cannot read the members");
}

/* How many rounds (0: the default) and whether that many fit: per request and per league,
 * before anything is written. */
static bool schedule_bounds(struct schedule *sc, int *rounds, const char *game, struct err *e)
{
    int n = sc->n, seats = sc->seats;
    if (n < seats)
        return err_set(e, ERR_INVALID, "not_enough_members",
                       "a %s table needs %d members; the league has %d", game, seats, n);
    if (!*rounds)
        *rounds = seats == 2 ? 1 : (n - 1 + seats - 2) / (seats - 1);
    int64_t planned = (int64_t)*rounds * (seats == 2 ? (int64_t)n * (n - 1) / 2 : n / seats);
    int64_t existing = 0;
    pthread_mutex_lock(&sc->app->db_lock);
    bool counted = store_league_match_count(sc->app->store, sc->league, &existing, e);
    pthread_mutex_unlock(&sc->app->db_lock);
    if (!counted)
        return false;
    if (planned > sc->app->config.schedule_max_matches)
        return err_set(e, ERR_INVALID, "schedule_too_large",
                       "this schedule would create %lld matches; one request may create at most "
                       "%d (schedule_max_matches): ask for fewer rounds",
                       (long long)planned, sc->app->config.schedule_max_matches);
    if (existing + planned > sc->app->config.league_max_matches)
        return err_set(e, ERR_INVALID, "league_match_limit",
                       "league %lld has %lld matches; %lld more would pass the most a league may "
                       "have, %d (league_max_matches)",
                       (long long)sc->league, (long long)existing, (long long)planned,
                       sc->app->config.league_max_matches);
    return true;
}

bool core_league_schedule(struct api_app *app, const struct api_caller *c, int64_t id,
                          int rounds, int64_t **ids, size_t *n, struct err *e)
{
    *ids = NULL;
    *n = 0;
    if (!core_caller_known(c, "this needs a player's or the operator's token", e))
        return false;
    struct store_league l;
    pthread_mutex_lock(&app->db_lock);
    bool ok = store_league_get(app->store, id, &l, e);
    pthread_mutex_unlock(&app->db_lock);
    if (!ok)
        return false;
    struct schedule sc = {.app = app, .league = id};
    rules_game_lookup(l.game, &sc.game);
    json_t *opts = json_loads(l.options, 0, NULL);
    sc.seats = (int)json_integer_value(json_object_get(opts, "seats"));
    json_decref(opts);
    if (!organizer(c, &l))
        ok = err_set(e, ERR_FORBIDDEN, "forbidden", "only the league's organizer schedules");
    else if (rounds < 0 || rounds > 100)
        ok = err_set(e, ERR_INVALID, "invalid_field", "\"rounds\" is 1 to 100");
    ok = ok && schedule_members(&sc, e) && schedule_bounds(&sc, &rounds, l.game, e) &&
         (sc.seats == 2 ? schedule_pairs(&sc, rounds, e) : schedule_tables(&sc, rounds, e));
    store_league_finish(&l);
    free(sc.members);
    if (!ok) {
        free(sc.made);
        return false;
    }
    *ids = sc.made;
    *n = sc.nmade;
    return true;
}

/* ---- Standings ---------------------------------------------------------------------------- */

void api_league_standings(struct api_app *app, int64_t id, struct api_reply *r)
{
    struct store_league l;
    if (!load_league(app, id, &l, r))
        return;
    enum rules_game_id g = RULES_GAME_HEARTS;
    rules_game_lookup(l.game, &g);
    store_league_finish(&l);
    struct store_standing *rows = calloc(MAX_MEMBERS, sizeof *rows);
    struct err e;
    int n = -1;
    if (rows) {
        pthread_mutex_lock(&app->db_lock);
        n = store_standings(app->store, id, rules_game_low_wins(g), rows, MAX_MEMBERS, &e);
        pthread_mutex_unlock(&app->db_lock);
    }
    if (n < 0) {
        free(rows);
        api_problem(r, 500, "internal", "cannot read the standings");
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

bool api_league_match_finished(struct api_app *app, const struct api_match *m,
                               const struct tlog_replay *rp, struct err *e)
{
    struct store_league l;
    if (!store_league_get(app->store, m->league, &l, e))
        return false;
    json_t *points = json_loads(l.points, 0, NULL);
    store_league_finish(&l);
    struct rules_result res;
    rules_result(&rp->state, &res);
    int n = res.nseats;
    int group[RULES_MAX_SEATS];       /* index of the seat's place */
    double share[RULES_MAX_SEATS];    /* league points, shared places split */
    for (int p = 0, pos = 0, i = 0; p < res.nplaces; p++) {
        double sum = 0;
        for (int k = 0; k < res.place_size[p]; k++)
            sum += json_number_value(json_array_get(points, (size_t)(pos + k)));
        for (int k = 0; k < res.place_size[p]; k++, i++) {
            group[res.order[i]] = p;
            share[res.order[i]] = sum / res.place_size[p];
        }
        pos += res.place_size[p];
    }
    json_decref(points);
    struct store_standing st[RULES_MAX_SEATS];
    bool ok = true;
    for (int s = 0; s < n; s++)
        ok = store_standing_get(app->store, m->league, m->players[s], &st[s], e) && ok;
    int64_t sum = 0;
    for (int s = 0; s < n; s++)
        sum += res.totals[s];
    double delta[RULES_MAX_SEATS] = {0};
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++) {
            if (a == b)
                continue;
            double score = group[a] < group[b] ? 1 : group[a] == group[b] ? 0.5 : 0;
            double expect = 1 / (1 + pow(10, (st[b].rating - st[a].rating) / 400));
            delta[a] += ELO_K / (n - 1) * (score - expect);
        }
    bool shared_first = res.place_size[0] > 1;
    for (int s = 0; ok && s < n; s++) {
        st[s].played++;
        if (group[s] == 0 && !shared_first)
            st[s].won++;
        else if (group[s] == 0)
            st[s].drawn++;
        else
            st[s].lost++;
        st[s].points += share[s];
        st[s].points_for += res.totals[s];
        st[s].points_against += sum - res.totals[s];
        st[s].rating += delta[s];
        ok = store_standing_put(app->store, m->league, &st[s], e);
    }
    for (int s = 0; s < n; s++)
        store_standing_finish(&st[s]);
    return ok;
}
