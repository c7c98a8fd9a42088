/* leagues.c - leagues: creating them, members joining and leaving (leaving forfeits the
 * running matches), round-robin scheduling (every pairing for two-seat games, balanced
 * tables for the others), and the standings, updated in the very transaction that
 * finishes a league match (docs/api.md "Leagues"). The operations of core.h;
 * http/api-leagues.c answers the requests with them.
 */
#include "core.h"

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

/* The same for an answer that only reads: on the reading connection, under read_lock, which
 * it takes itself. The listings, a league's page and its standings are read there, never on
 * the writing connection: anyone may ask for them, and under db_lock every commit waited
 * for each (docs/decisions.md "A read never waits for the writer"). */
static bool league_load_read(struct api_app *app, int64_t id, struct store_league *l,
                             struct err *e)
{
    lock_take(&app->read_lock);
    bool ok = store_league_get(app->reader, id, l, e);
    lock_drop(&app->read_lock);
    return ok;
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
    lock_take(&app->read_lock);
    int n = store_leagues(app->reader, *out, MAX, e);
    lock_drop(&app->read_lock);
    if (n < 0) {
        free(*out);
        *out = NULL;
    }
    return n;
}

int core_player_leagues(struct api_app *app, const struct api_caller *c,
                        struct store_league **out, unsigned **roles, struct err *e)
{
    enum { MAX = 500 };
    *out = NULL;
    *roles = NULL;
    if (!core_need_player(c, e))
        return -1;
    *out = calloc(MAX, sizeof **out);
    *roles = calloc(MAX, sizeof **roles);
    int n = -1;
    if (!*out || !*roles) {
        err_set(e, ERR_NOMEM, "nomem", "out of memory");
    } else {
        lock_take(&app->read_lock);
        n = store_player_leagues(app->reader, c->player, *out, *roles, MAX, e);
        lock_drop(&app->read_lock);
    }
    if (n < 0) {
        free(*out);
        free(*roles);
        *out = NULL;
        *roles = NULL;
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
 * invitations waiting of league `id` into `v`, read through `st` (the reading connection:
 * call with read_lock held). */
static bool league_read(struct store *st, int64_t id, struct core_league_view *v,
                        struct err *e)
{
    enum { MATCHES = 200 };
    int64_t ids[MATCHES];
    v->members = calloc(MAX_MEMBERS, sizeof *v->members);
    v->invited = calloc(MAX_MEMBERS, sizeof *v->invited);
    v->matches = calloc(MATCHES, sizeof *v->matches);
    if (!v->members || !v->invited || !v->matches)
        return err_set(e, ERR_NOMEM, "nomem", "out of memory");
    int nm = store_members(st, id, v->members, MAX_MEMBERS, e);
    if (nm < 0)
        return false;
    v->nmembers = nm;
    int n = store_league_matches(st, id, 0, false, 0, ids, MATCHES, e);
    if (n < 0)
        return false;
    for (int i = 0; i < n; i++) {
        struct err me;
        if (store_match_get(st, ids[i], &v->matches[v->nmatches], &me))
            v->nmatches++;
    }
    int ni = store_invitations(st, id, v->invited, MAX_MEMBERS, e);
    if (ni < 0)
        return err_set(e, ERR_IO, "internal", "cannot read the invitations");
    v->ninvited = ni;
    return true;
}

bool core_league_get(struct api_app *app, int64_t id, struct core_league_view *out,
                     struct err *e)
{
    *out = (struct core_league_view){0};
    if (!league_load_read(app, id, &out->league, e))
        return false;
    lock_take(&app->read_lock);
    bool ok = store_league_counts(app->reader, &out->league, e) &&
              league_read(app->reader, id, out, e);
    lock_drop(&app->read_lock);
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

/* Enrol player `p` in league `l`, or invite them and notify them of it: one transaction
 * (db_lock held). */
static bool member_write(struct api_app *app, const struct store_league *l,
                         const struct store_player *p, bool enrol, int64_t now, struct err *e)
{
    int64_t id = l->id, player = p->id;
    bool current = false;
    int64_t size = 0;
    struct err none;
    /* (the league taken first: a join in another process counts after this one's end) */
    bool ok = store_begin(app->store, e) && store_league_take(app->store, id, e);
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
        ok = ok && api_outbox_league_invitation(app, l, p, api_now_ms(app), e);
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
    if (!ok) {
        store_league_finish(&l);
        return false;
    }
    struct store_player p = {0};
    *at = api_now_ms(app) / 1000;
    lock_take(&app->db_lock);
    ok = store_player_get(app->store, player, &p, e);
    if (!ok && e->code == ERR_NOT_FOUND)
        err_set(e, ERR_INVALID, "unknown_player", "no player %lld", (long long)player);
    /* Consent: the player themself, the operator, or a player who lets others enrol them
     * without asking; anyone else is invited and joins by accepting. */
    bool enrol = player == c->player || c->operator || api_prefs_seat_without_asking(p.prefs);
    ok = ok && member_write(app, &l, &p, enrol, *at, e);
    lock_drop(&app->db_lock);
    store_league_finish(&l);
    if (ok && !enrol)
        api_wake(app); /* (the delivery workers: a notification waits) */
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
        lock_take(&sc->app->db_lock);
        ok = store_league_seatings(sc->app->store, sc->league, count_table, &mt, e);
        lock_drop(&sc->app->db_lock);
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
        lock_take(&sc->app->db_lock);
        nm = store_members(sc->app->store, sc->league, members, MAX_MEMBERS, e);
        lock_drop(&sc->app->db_lock);
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
    lock_take(&sc->app->db_lock);
    bool counted = store_league_match_count(sc->app->store, sc->league, &existing, e);
    lock_drop(&sc->app->db_lock);
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
    lock_take(&app->db_lock);
    bool ok = store_league_get(app->store, id, &l, e);
    lock_drop(&app->db_lock);
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

int core_league_standings(struct api_app *app, int64_t id, struct store_standing **out,
                          struct err *e)
{
    struct store_league l;
    *out = NULL;
    if (!league_load_read(app, id, &l, e))
        return -1;
    enum rules_game_id g = RULES_GAME_HEARTS;
    rules_game_lookup(l.game, &g);
    store_league_finish(&l);
    *out = calloc(MAX_MEMBERS, sizeof **out);
    int n = -1;
    if (*out) {
        lock_take(&app->read_lock);
        n = store_standings(app->reader, id, rules_game_low_wins(g), *out, MAX_MEMBERS, e);
        lock_drop(&app->read_lock);
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
    /* (Two processes finishing two of its matches at once: one after the other.) */
    if (!store_league_lock(app->store, m->league, e) ||
        !store_league_get(app->store, m->league, &l, e))
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
