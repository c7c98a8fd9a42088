/* leagues.c - leagues: creating them, members joining and leaving (leaving forfeits the
 * running matches), round-robin scheduling (every pairing for two-seat games, balanced
 * tables for the others), and the standings, updated in the very transaction that
 * finishes a league match (docs/api.md "Leagues"). The operations of core.h;
 * http/api-leagues.c answers the requests with them.
 */
#include "core.h"
#include "handlers.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_MEMBERS 4096
#define ELO_K 32.0

/* Load a league. Takes db_lock itself. */
static bool league_load(struct api_app *app, int64_t id, struct store_league *l, struct err *e)
{
    lock_take(&app->db_lock);
    bool ok = store_league_get(app->store, id, l, e);
    lock_drop(&app->db_lock);
    return ok;
}

static bool need_caller(const struct api_caller *c, struct api_reply *r)
{
    struct err e;
    return core_need_caller(c, &e) || api_problem_from_err(r, &e);
}

/* Load a league; false with a 404 (or 500) in r. Takes db_lock itself. */
static bool load_league(struct api_app *app, int64_t id, struct store_league *l,
                        struct api_reply *r)
{
    struct err e;
    return league_load(app, id, l, &e) || api_problem_from_err(r, &e);
}

static bool organizer(const struct api_caller *c, const struct store_league *l)
{
    return c->operator || (c->player && c->player == l->organizer);
}

/* A copy of `s` (NULL: NULL); false without memory. */
static bool copy(char **out, const char *s, struct err *e)
{
    *out = s ? strdup(s) : NULL;
    return !s || *out || err_set(e, ERR_NOMEM, "nomem", "out of memory");
}

bool core_league_create(struct api_app *app, const struct api_caller *c,
                        const struct core_league_new *in, struct store_league *out,
                        struct err *e)
{
    *out = (struct store_league){0};
    if (!core_need_caller(c, e))
        return false;
    json_t *opts = tlog_options_json(in->game, &in->options);
    out->options = json_dumps(opts, JSON_COMPACT);
    json_decref(opts);
    out->organizer = c->operator ? 0 : c->player;
    out->created_at = api_now_ms(app) / 1000;
    bool ok = (out->options || err_set(e, ERR_NOMEM, "nomem", "out of memory")) &&
              copy(&out->name, in->name, e) && copy(&out->game, rules_game_name(in->game), e) &&
              copy(&out->clock, in->clock, e) && copy(&out->points, in->points, e);
    if (ok) {
        lock_take(&app->db_lock);
        ok = store_league_insert(app->store, out, e);
        lock_drop(&app->db_lock);
    }
    if (!ok)
        store_league_finish(out);
    return ok;
}

int core_leagues_list(struct api_app *app, struct store_league **out, struct err *e)
{
    enum { MAX = 500 };
    *out = calloc(MAX, sizeof **out);
    if (!*out) {
        err_set(e, ERR_NOMEM, "nomem", "out of memory");
        return -1;
    }
    lock_take(&app->db_lock);
    int n = store_leagues(app->store, *out, MAX, e);
    lock_drop(&app->db_lock);
    if (n < 0) {
        free(*out);
        *out = NULL;
    }
    return n;
}

void core_league_view_finish(struct core_league_view *v)
{
    if (!v)
        return;
    store_league_finish(&v->league);
    for (int i = 0; i < v->nmembers; i++)
        store_member_finish(&v->members[i]);
    for (int i = 0; i < v->ninvited; i++)
        store_member_finish(&v->invited[i]);
    for (int i = 0; i < v->nmatches; i++)
        store_match_finish(&v->matches[i]);
    free(v->members);
    free(v->invited);
    free(v->matches);
    *v = (struct core_league_view){0};
}

/* The members, the latest matches (a summary that cannot be read is left out) and the
 * invitations waiting of league `id` into `v`. Call with db_lock held. */
static bool league_read(struct api_app *app, int64_t id, struct core_league_view *v,
                        struct err *e)
{
    enum { MATCHES = 200 };
    int64_t ids[MATCHES];
    v->members = calloc(MAX_MEMBERS, sizeof *v->members);
    v->invited = calloc(MAX_MEMBERS, sizeof *v->invited);
    v->matches = calloc(MATCHES, sizeof *v->matches);
    if (!v->members || !v->invited || !v->matches)
        return err_set(e, ERR_NOMEM, "nomem", "out of memory");
    int nm = store_members(app->store, id, v->members, MAX_MEMBERS, e);
    if (nm < 0)
        return false;
    v->nmembers = nm;
    int n = store_league_matches(app->store, id, 0, false, 0, ids, MATCHES, e);
    if (n < 0)
        return false;
    for (int i = 0; i < n; i++) {
        struct err me;
        if (store_match_get(app->store, ids[i], &v->matches[v->nmatches], &me))
            v->nmatches++;
    }
    int ni = store_invitations(app->store, id, v->invited, MAX_MEMBERS, e);
    if (ni < 0)
        return err_set(e, ERR_IO, "internal", "cannot read the invitations");
    v->ninvited = ni;
    return true;
}

bool core_league_get(struct api_app *app, int64_t id, struct core_league_view *out,
                     struct err *e)
{
    *out = (struct core_league_view){0};
    if (!league_load(app, id, &out->league, e))
        return false;
    lock_take(&app->db_lock);
    bool ok = store_league_counts(app->store, &out->league, e) && league_read(app, id, out, e);
    lock_drop(&app->db_lock);
    if (!ok)
        core_league_view_finish(out);
    return ok;
}

/* Whether `c` may add `player` to `l` (themself; others: the organiser). */
static bool may_add(const struct api_caller *c, const struct store_league *l, int64_t player,
                    struct err *e)
{
    if (!player)
        return err_set(e, ERR_MALFORMED, "missing_field", "name the \"player\" to add");
    if (player != c->player && !organizer(c, l))
        return err_set(e, ERR_FORBIDDEN, "forbidden", "only the organizer invites other players");
    return true;
}

/* Enrol `player` in league `id`, or invite them: one transaction (db_lock held). */
static bool member_write(struct api_app *app, int64_t id, int64_t player, bool enrol,
                         int64_t now, struct err *e)
{
    bool current = false;
    int64_t size = 0;
    struct err none;
    bool ok = store_begin(app->store, e);
    if (ok && store_member_is(app->store, id, player, &current, &none) && current)
        ok = err_set(e, ERR_CONFLICT, "already_member", "player %lld is a member already",
                     (long long)player);
    /* Joining answers an invitation waiting; then members and invitations are counted. */
    if (ok && enrol && !store_invitation_drop(app->store, id, player, &none) &&
        none.code != ERR_NOT_FOUND)
        ok = err_set(e, none.code, none.tag, "%s", none.msg);
    ok = ok && store_league_size(app->store, id, &size, e);
    if (ok && size >= app->config.league_max_members)
        ok = err_set(e, ERR_INVALID, "league_full",
                     "a league has at most %d members and invitations (league_max_members)",
                     app->config.league_max_members);
    if (ok && enrol) {
        /* A new member appears in the table at once, with nothing played. */
        struct store_standing st = {0};
        ok = store_member_add(app->store, id, player, now, e) &&
             store_standing_get(app->store, id, player, &st, e) &&
             store_standing_put(app->store, id, &st, e);
        store_standing_finish(&st);
    } else if (ok) {
        ok = store_invitation_add(app->store, id, player, now, e);
        if (!ok && e->tag && !strcmp(e->tag, "already_invited"))
            e->code = ERR_CONFLICT;
    }
    ok = ok && store_commit(app->store, e);
    if (!ok)
        store_rollback(app->store);
    return ok;
}

bool core_league_member_add(struct api_app *app, const struct api_caller *c, int64_t id,
                            int64_t player, enum core_join *how, char **name, int64_t *at,
                            struct err *e)
{
    *name = NULL;
    struct store_league l;
    if (!core_need_caller(c, e) || !league_load(app, id, &l, e))
        return false;
    bool ok = may_add(c, &l, player, e);
    store_league_finish(&l);
    if (!ok)
        return false;
    struct store_player p = {0};
    *at = api_now_ms(app) / 1000;
    lock_take(&app->db_lock);
    ok = store_player_get(app->store, player, &p, e);
    if (!ok && e->code == ERR_NOT_FOUND)
        err_set(e, ERR_INVALID, "unknown_player", "no player %lld", (long long)player);
    /* Consent: the player themself, the operator, or a player who lets others enrol them
     * without asking; anyone else is invited and joins by accepting. */
    bool enrol = player == c->player || c->operator || api_prefs_seat_without_asking(p.prefs);
    ok = ok && member_write(app, id, player, enrol, *at, e);
    lock_drop(&app->db_lock);
    if (ok) {
        *how = enrol ? CORE_JOINED : CORE_INVITED;
        *name = p.name;
        p.name = NULL;
    }
    store_player_finish(&p);
    return ok;
}

/* Leaving forfeits: resign every running league match of `player`, page by page (a pending
 * one is declined); *forfeited gets the ids. */
static bool forfeit_all(struct api_app *app, int64_t id, int64_t player, int64_t **forfeited,
                        int *count, struct err *e)
{
    enum { PAGE = 256 };
    int64_t ids[PAGE];
    size_t cap = 0;
    for (int64_t before = 0;;) {
        lock_take(&app->db_lock);
        int n = store_league_matches(app->store, id, player, true, before, ids, PAGE, e);
        lock_drop(&app->db_lock);
        if (n < 0)
            return false;
        for (int i = 0; i < n; i++) {
            struct err fe;
            if (!api_match_forfeit(app, ids[i], player, &fe))
                continue;
            if ((size_t)*count == cap) {
                cap = cap ? 2 * cap : 16;
                int64_t *more = realloc(*forfeited, cap * sizeof *more);
                if (!more)
                    return err_set(e, ERR_NOMEM, "nomem", "out of memory");
                *forfeited = more;
            }
            (*forfeited)[(*count)++] = ids[i];
        }
        if (n < PAGE)
            return true;
        before = ids[n - 1];
    }
}

bool core_league_member_remove(struct api_app *app, const struct api_caller *c, int64_t id,
                               int64_t player, bool *uninvited, int64_t **forfeited, int *n,
                               struct err *e)
{
    *forfeited = NULL;
    *n = 0;
    struct store_league l;
    if (!core_need_caller(c, e) || !league_load(app, id, &l, e))
        return false;
    bool allowed = organizer(c, &l) || c->player == player;
    store_league_finish(&l);
    if (!allowed)
        return err_set(e, ERR_FORBIDDEN, "forbidden", "only the organizer removes other players");
    lock_take(&app->db_lock);
    /* An invitation waiting is declined (by the player) or withdrawn (by the organiser). */
    *uninvited = store_invitation_drop(app->store, id, player, e);
    bool ok = *uninvited ||
              (e->code == ERR_NOT_FOUND &&
               store_member_leave(app->store, id, player, api_now_ms(app) / 1000, e));
    lock_drop(&app->db_lock);
    if (!ok || *uninvited)
        return ok;
    if (forfeit_all(app, id, player, forfeited, n, e))
        return true;
    free(*forfeited);
    *forfeited = NULL;
    *n = 0;
    return false;
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

/* Create one league match of `players` through the ordinary path (validation, seed, first
 * deal, notifications). Returns its id, or 0 with r holding the problem. */
static int64_t create_match(struct api_app *app, int64_t league, const char *game,
                            const int64_t *players, int n, struct api_reply *r)
{
    json_t *list = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(list, json_integer(players[i]));
    json_t *body = json_pack("{s:s, s:o, s:I}", "game", game, "players", list, "league",
                             (json_int_t)league);
    struct api_caller op = {.authenticated = true, .operator = true};
    uint8_t hash[32] = {0};
    struct api_reply one = {0};
    api_match_create(app, &op, body, NULL, hash, &one);
    json_decref(body);
    json_t *made = one.status == 201 && one.text ? json_loadb(one.text, one.text_len, 0, NULL)
                                                 : NULL;
    int64_t id = made ? json_integer_value(json_object_get(made, "id")) : 0;
    json_decref(made);
    if (!id) {
        json_decref(r->body);
        free(r->text);
        *r = one;
        if (one.status == 201) /* written, but not readable back: say so */
            api_problem(r, 500, "nomem", "out of memory");
    } else {
        json_decref(one.body);
        free(one.text);
    }
    return id;
}

void api_league_schedule(struct api_app *app, const struct api_caller *c, int64_t id,
                         json_t *body, struct api_reply *r)
{
    struct store_league l;
    if (!need_caller(c, r) || !load_league(app, id, &l, r))
        return;
    struct store_member *members = NULL;
    int64_t *ids = NULL;
    int nm = -1;
    struct meets mt = {0};
    json_t *created = json_array();
    enum rules_game_id g;
    rules_game_lookup(l.game, &g);
    json_t *opts = json_loads(l.options, 0, NULL);
    int seats = (int)json_integer_value(json_object_get(opts, "seats"));
    json_decref(opts);
    if (!organizer(c, &l)) {
        api_problem(r, 403, "forbidden", "only the league's organizer schedules");
        goto out;
    }
    json_t *rounds_v = body ? json_object_get(body, "rounds") : NULL;
    if (rounds_v && !json_is_null(rounds_v) &&
        (!json_is_integer(rounds_v) || json_integer_value(rounds_v) < 1 ||
         json_integer_value(rounds_v) > 100)) {
        api_problem(r, 422, "invalid_field", "\"rounds\" is 1 to 100");
        goto out;
    }
    members = calloc(MAX_MEMBERS, sizeof *members);
    ids = calloc(MAX_MEMBERS, sizeof *ids);
    struct err e;
    if (members && ids) {
        lock_take(&app->db_lock);
        nm = store_members(app->store, id, members, MAX_MEMBERS, &e);
        lock_drop(&app->db_lock);
    }
    if (nm < 0) {
        api_problem(r, 500, "internal", "cannot read the members");
        goto out;
    }
    int n = 0;
    for (int i = 0; i < nm; i++)
        if (!members[i].left_at)
            ids[n++] = members[i].player;
    if (n < seats) {
        api_problem(r, 422, "not_enough_members", "a %s table needs %d members; the league has %d",
                    l.game, seats, n);
        goto out;
    }
    int rounds = rounds_v && json_is_integer(rounds_v)
                     ? (int)json_integer_value(rounds_v)
                     : (seats == 2 ? 1 : (n - 1 + seats - 2) / (seats - 1));
    /* Bounded before anything is written: per request and per league. */
    int64_t planned = (int64_t)rounds * (seats == 2 ? (int64_t)n * (n - 1) / 2 : n / seats);
    int64_t existing = 0;
    lock_take(&app->db_lock);
    bool counted = store_league_match_count(app->store, id, &existing, &e);
    lock_drop(&app->db_lock);
    if (!counted) {
        api_problem_from_err(r, &e);
        goto out;
    }
    if (planned > app->config.schedule_max_matches) {
        api_problem(r, 422, "schedule_too_large",
                    "this schedule would create %lld matches; one request may create at most "
                    "%d (schedule_max_matches): ask for fewer rounds",
                    (long long)planned, app->config.schedule_max_matches);
        goto out;
    }
    if (existing + planned > app->config.league_max_matches) {
        api_problem(r, 422, "league_match_limit",
                    "league %lld has %lld matches; %lld more would pass the most a league may "
                    "have, %d (league_max_matches)",
                    (long long)id, (long long)existing, (long long)planned,
                    app->config.league_max_matches);
        goto out;
    }
    if (seats == 2) {
        /* Every pair once per round; who sits first alternates. */
        for (int round = 0; round < rounds; round++)
            for (int a = 0; a < n; a++)
                for (int b = a + 1; b < n; b++) {
                    bool swap = (round + a + b) % 2;
                    int64_t pair[2] = {swap ? ids[b] : ids[a], swap ? ids[a] : ids[b]};
                    int64_t match = create_match(app, id, l.game, pair, 2, r);
                    if (!match)
                        goto out;
                    json_array_append_new(created, json_integer(match));
                }
    } else {
        mt.n = n;
        mt.ids = ids;
        mt.count = calloc((size_t)n * (size_t)n, sizeof *mt.count);
        mt.sat_out = calloc((size_t)n, sizeof *mt.sat_out);
        if (!mt.count || !mt.sat_out) {
            api_problem(r, 500, "nomem", "out of memory");
            goto out;
        }
        lock_take(&app->db_lock);
        bool ok = store_league_seatings(app->store, id, count_table, &mt, &e);
        lock_drop(&app->db_lock);
        if (!ok) {
            api_problem_from_err(r, &e);
            goto out;
        }
        int tables = n / seats;
        bool *used = calloc((size_t)n, sizeof *used);
        int *order = calloc((size_t)n, sizeof *order);
        if (!used || !order) {
            free(used);
            free(order);
            api_problem(r, 500, "nomem", "out of memory");
            goto out;
        }
        for (int round = 0; round < rounds; round++) {
            /* Who plays: those who sat out most, then in a rotating order. */
            for (int i = 0; i < n; i++)
                order[i] = (i + round * tables * seats) % n;
            for (int i = 1; i < n; i++)
                for (int j = i; j > 0 && mt.sat_out[order[j]] > mt.sat_out[order[j - 1]]; j--) {
                    int t = order[j];
                    order[j] = order[j - 1];
                    order[j - 1] = t;
                }
            memset(used, 0, (size_t)n * sizeof *used);
            for (int i = tables * seats; i < n; i++) {
                mt.sat_out[order[i]]++;
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
                            cost += mt.count[p * n + table[x]];
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
                    players[x] = ids[table[(x + round) % seats]];
                count_table(&mt, players, seats);
                int64_t match = create_match(app, id, l.game, players, seats, r);
                if (!match) {
                    free(used);
                    free(order);
                    goto out;
                }
                json_array_append_new(created, json_integer(match));
            }
        }
        free(used);
        free(order);
    }
    r->status = 201;
    r->body = json_pack("{s:O}", "matches", created);
out:
    json_decref(created);
    for (int i = 0; i < nm; i++)
        store_member_finish(&members[i]);
    free(members);
    free(ids);
    free(mt.count);
    free(mt.sat_out);
    store_league_finish(&l);
}

/* ---- Standings ---------------------------------------------------------------------------- */

int core_league_standings(struct api_app *app, int64_t id, struct store_standing **out,
                          struct err *e)
{
    struct store_league l;
    *out = NULL;
    if (!league_load(app, id, &l, e))
        return -1;
    enum rules_game_id g = RULES_GAME_HEARTS;
    rules_game_lookup(l.game, &g);
    store_league_finish(&l);
    *out = calloc(MAX_MEMBERS, sizeof **out);
    int n = -1;
    if (*out) {
        lock_take(&app->db_lock);
        n = store_standings(app->store, id, rules_game_low_wins(g), *out, MAX_MEMBERS, e);
        lock_drop(&app->db_lock);
    }
    if (n < 0) {
        free(*out);
        *out = NULL;
        err_set(e, ERR_IO, "internal", "cannot read the standings");
    }
    return n;
}

bool api_league_match_finished(struct api_app *app, const struct api_match *m,
                               const struct tlog_replay *rp, struct err *e)
{
    assert(lock_held(&app->db_lock));
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
