/* matches.c - matches in the service: the in-memory table (log + replayed state per match,
 * loaded from SQLite on first use), creating a match with its committed seed, the move
 * path (validate on a copy, then one transaction: events, cached summary, idempotency
 * record; then publish), the caller's view, the log as the caller may see it, and the
 * messages of the event stream.
 */
#include "api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Cards as stored text ----------------------------------------------------------------- */

static void cards_text(const rules_card *cards, int n, char *out)
{
    char *p = out;
    for (int i = 0; i < n; i++) {
        rules_card_format(cards[i], p);
        p += 2;
        *p++ = i + 1 < n ? ' ' : '\0';
    }
    if (n == 0)
        *out = '\0';
}

static int cards_parse(const char *text, rules_card *out)
{
    int n = 0;
    while (*text && n < RULES_NCARDS) {
        const char *end = strchr(text, ' ');
        size_t len = end ? (size_t)(end - text) : strlen(text);
        if (!rules_card_parse(text, len, &out[n]))
            return -1;
        n++;
        text += len;
        while (*text == ' ')
            text++;
    }
    return n;
}

/* ---- The table ---------------------------------------------------------------------------- */

static struct api_match *match_new(void)
{
    struct api_match *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    pthread_mutex_init(&m->lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&m->changed, &attr);
    pthread_condattr_destroy(&attr);
    return m;
}

static void match_free(struct api_match *m)
{
    if (!m)
        return;
    tlog_replay_finish(&m->replay);
    tlog_destroy(m->log);
    pthread_mutex_destroy(&m->lock);
    pthread_cond_destroy(&m->changed);
    free(m);
}

/* Put `m` in the table unless another thread did first; returns the one in the table. */
static struct api_match *table_put(struct api_app *app, struct api_match *m)
{
    pthread_mutex_lock(&app->table_lock);
    if ((size_t)m->id >= app->nmatches) {
        size_t n = app->nmatches ? app->nmatches : 64;
        while (n <= (size_t)m->id)
            n *= 2;
        struct api_match **grown = realloc(app->matches, n * sizeof *grown);
        if (!grown) {
            pthread_mutex_unlock(&app->table_lock);
            match_free(m);
            return NULL;
        }
        memset(grown + app->nmatches, 0, (n - app->nmatches) * sizeof *grown);
        app->matches = grown;
        app->nmatches = n;
    }
    struct api_match *have = app->matches[m->id];
    if (!have)
        app->matches[m->id] = have = m;
    pthread_mutex_unlock(&app->table_lock);
    if (have != m)
        match_free(m);
    return have;
}

static bool set_player_names(struct api_app *app, struct api_match *m, struct err *e)
{
    json_t *names = json_array();
    for (int s = 0; s < m->replay.state.nseats; s++) {
        struct store_player p = {0};
        if (!store_player_get(app->store, m->players[s], &p, e)) {
            json_decref(names);
            return false;
        }
        json_array_append_new(names, json_string(p.name));
        store_player_finish(&p);
    }
    tlog_set_meta(m->log, "players", names);
    json_decref(names);
    return true;
}

struct load_ctx {
    struct api_match *m;
};

static bool load_event(void *ctx, const struct store_event *ev, struct err *e)
{
    struct api_match *m = ((struct load_ctx *)ctx)->m;
    if ((size_t)ev->seq != m->log->nevents)
        return err_set(e, ERR_IO, "corrupt", "match %lld: event %lld out of order",
                       (long long)m->id, (long long)ev->seq);
    if (ev->kind == STORE_MOVE) {
        struct rules_move mv;
        return tlog_append_move(m->log, ev->seat, ev->body, ev->automatic, e) &&
               rules_move_parse(ev->body, strlen(ev->body), &mv, e) &&
               tlog_replay_move(&m->replay, ev->seat, &mv, e);
    }
    rules_card cards[RULES_NCARDS];
    int n = cards_parse(ev->body, cards);
    if (n < 0)
        return err_set(e, ERR_IO, "corrupt", "match %lld: bad cards in event %lld",
                       (long long)m->id, (long long)ev->seq);
    m->chance_events++;
    enum tlog_kind kind = ev->kind == STORE_DEAL ? TLOG_DEAL : TLOG_SHUFFLE;
    return tlog_append_chance(m->log, kind, cards, n, e) &&
           tlog_replay_chance(&m->replay, kind == TLOG_DEAL ? RULES_DUE_DEAL : RULES_DUE_SHUFFLE,
                              cards, n, e);
}

/* A fresh match object for a stored match: log metadata, options, empty replay. */
static struct api_match *match_from_row(const struct store_match *row, struct err *e)
{
    enum rules_game_id g;
    struct rules_options o;
    json_t *opts = json_loads(row->options, 0, NULL);
    bool ok = rules_game_lookup(row->game, &g) && tlog_options_parse(g, opts, &o, e);
    json_decref(opts);
    if (!ok) {
        err_set(e, ERR_IO, "corrupt", "match %lld: bad game or options", (long long)row->id);
        return NULL;
    }
    struct api_match *m = match_new();
    if (!m || !(m->log = tlog_create(g, &o, e)) ||
        !rules_init(&m->replay.state, g, &o, e)) {
        match_free(m);
        return NULL;
    }
    m->id = row->id;
    memcpy(m->players, row->players, sizeof m->players);
    memcpy(m->seed, row->seed, sizeof m->seed);
    memcpy(m->commitment, row->commitment, sizeof m->commitment);
    m->created_by = row->created_by;
    m->created_at = row->created_at;
    m->finished_at = row->finished_at;
    char seed_hex[TLOG_HEX_BYTES];
    tlog_hex(m->seed, sizeof m->seed, seed_hex);
    json_t *v = json_string(m->commitment);
    tlog_set_meta(m->log, "seed_commitment", v);
    json_decref(v);
    v = json_string(seed_hex);
    tlog_set_meta(m->log, "seed", v);
    json_decref(v);
    return m;
}

struct api_match *api_match_find(struct api_app *app, int64_t id, struct api_reply *r)
{
    if (id <= 0) {
        api_problem(r, 404, "not_found", "no such match");
        return NULL;
    }
    pthread_mutex_lock(&app->table_lock);
    struct api_match *m = (size_t)id < app->nmatches ? app->matches[id] : NULL;
    pthread_mutex_unlock(&app->table_lock);
    if (m)
        return m;

    struct store_match row;
    struct err e;
    pthread_mutex_lock(&app->db_lock);
    if (!store_match_get(app->store, id, &row, &e)) {
        pthread_mutex_unlock(&app->db_lock);
        if (e.code == ERR_NOT_FOUND)
            api_problem(r, 404, "not_found", "no such match");
        else
            api_problem_from_err(r, &e);
        return NULL;
    }
    m = match_from_row(&row, &e);
    struct load_ctx ctx = {m};
    bool ok = m && store_events_each(app->store, id, load_event, &ctx, &e) &&
              set_player_names(app, m, &e);
    pthread_mutex_unlock(&app->db_lock);
    store_match_finish(&row);
    if (!ok) {
        match_free(m);
        api_problem(r, 500, "corrupt_match", "match %lld cannot be loaded: %s", (long long)id,
                    e.msg);
        return NULL;
    }
    m = table_put(app, m);
    if (!m)
        api_problem(r, 500, "nomem", "out of memory");
    return m;
}

int api_match_seat(const struct api_match *m, const struct api_caller *c)
{
    if (!c->player)
        return -1;
    for (int s = 0; s < m->replay.state.nseats; s++)
        if (m->players[s] == c->player)
            return s;
    return -1;
}

/* ---- Views -------------------------------------------------------------------------------- */

static json_t *seats_json(uint32_t mask)
{
    json_t *a = json_array();
    for (int s = 0; s < RULES_MAX_SEATS; s++)
        if (mask & (1u << s))
            json_array_append_new(a, json_integer(s));
    return a;
}

static json_t *legal_json(const struct rules_state *st, int seat)
{
    json_t *a = json_array();
    if (seat < 0)
        return a;
    struct rules_move *moves = malloc(RULES_MAX_LEGAL * sizeof *moves);
    int n = moves ? rules_legal(st, seat, moves, RULES_MAX_LEGAL) : 0;
    for (int i = 0; i < n && i < RULES_MAX_LEGAL; i++) {
        char text[RULES_MOVE_TEXT_MAX];
        rules_move_format(&moves[i], text, sizeof text);
        json_array_append_new(a, json_string(text));
    }
    free(moves);
    return a;
}

/* The caller's view of a replay (the match's own, or a copy about to be committed). */
static json_t *view_of(const struct api_match *m, const struct tlog *log,
                       const struct tlog_replay *rp, int seat)
{
    const struct rules_state *st = &rp->state;
    json_t *players = json_array();
    json_t *names = json_object_get(log->meta, "players");
    for (int s = 0; s < st->nseats; s++)
        json_array_append_new(players,
                              json_pack("{s:i, s:I, s:O?}", "seat", s, "id",
                                        (json_int_t)m->players[s], "name",
                                        json_array_get(names, (size_t)s)));
    json_t *totals = json_array();
    for (int s = 0; s < st->nseats; s++)
        json_array_append_new(totals, json_integer(st->totals[s]));
    json_t *j = json_object();
    json_object_set_new(j, "id", json_integer(m->id));
    json_object_set_new(j, "game", json_string(rules_game_name((enum rules_game_id)st->game)));
    json_object_set_new(j, "options", tlog_options_json((enum rules_game_id)st->game,
                                                        &log->options));
    json_object_set_new(j, "players", players);
    json_object_set_new(j, "status", json_string(st->over ? "finished" : "active"));
    json_object_set_new(j, "seq", json_integer((json_int_t)log->nevents));
    json_object_set_new(j, "to_move", seats_json(rules_to_move(st)));
    json_object_set_new(j, "you", seat >= 0 ? json_integer(seat) : json_null());
    json_object_set_new(j, "totals", totals);
    json_object_set_new(j, "target", json_integer(st->target));
    json_object_set_new(j, "view", tlog_view_json(st, seat));
    json_object_set_new(j, "legal", legal_json(st, seat));
    json_object_set_new(j, "deadline", json_null());
    json_object_set_new(j, "seed_commitment", json_string(m->commitment));
    if (st->over) {
        char seed_hex[TLOG_HEX_BYTES];
        tlog_hex(m->seed, sizeof m->seed, seed_hex);
        json_object_set_new(j, "seed", json_string(seed_hex));
        json_object_set_new(j, "result", tlog_result_json(rp));
    }
    return j;
}

json_t *api_match_view(struct api_app *app, struct api_match *m, int seat)
{
    (void)app;
    return view_of(m, m->log, &m->replay, seat);
}

/* ---- Committing events -------------------------------------------------------------------- */

/* Deal (or shuffle) from the seed until no chance event is due; appends to `log` and
 * applies to `rp`. `k` counts chance events. */
static bool settle_chance(struct api_match *m, struct tlog *log, struct tlog_replay *rp,
                          uint32_t *k, struct err *e)
{
    enum rules_due due;
    while ((due = rules_due(&rp->state)) != RULES_DUE_NONE) {
        rules_card cards[RULES_NCARDS];
        int n = tlog_derive(m->seed, *k, &rp->state, cards);
        enum tlog_kind kind = due == RULES_DUE_DEAL ? TLOG_DEAL : TLOG_SHUFFLE;
        if (!tlog_append_chance(log, kind, cards, n, e) ||
            !tlog_replay_chance(rp, due, cards, n, e))
            return false;
        (*k)++;
    }
    return true;
}

/* The summary columns for a replay. Frees what it allocated into row on the next call. */
static void summary_of(const struct tlog_replay *rp, size_t nevents, int64_t now,
                       struct store_match *row)
{
    const struct rules_state *st = &rp->state;
    json_t *to_move = seats_json(rules_to_move(st));
    json_t *totals = json_array();
    for (int s = 0; s < st->nseats; s++)
        json_array_append_new(totals, json_integer(st->totals[s]));
    row->finished = st->over;
    row->seq = (int64_t)nevents;
    row->to_move = json_dumps(to_move, JSON_COMPACT);
    row->totals = json_dumps(totals, JSON_COMPACT);
    row->result = NULL;
    if (st->over) {
        json_t *result = tlog_result_json(rp);
        row->result = json_dumps(result, JSON_COMPACT);
        json_decref(result);
        row->finished_at = now / 1000;
    }
    json_decref(to_move);
    json_decref(totals);
}

/* Write events [from, log->nevents) of `log` to the database. */
static bool store_events(struct api_app *app, int64_t match, const struct tlog *log, size_t from,
                         int64_t now, struct err *e)
{
    for (size_t i = from; i < log->nevents; i++) {
        const struct tlog_event *ev = &log->events[i];
        char cards[RULES_NCARDS * 3 + 1];
        struct store_event row = {.seq = (int64_t)i, .at = now};
        if (ev->kind == TLOG_MOVE) {
            row.kind = STORE_MOVE;
            row.seat = (int)ev->seat;
            row.body = ev->move;
            row.automatic = ev->automatic;
        } else {
            row.kind = ev->kind == TLOG_DEAL ? STORE_DEAL : STORE_SHUFFLE;
            cards_text(ev->cards, ev->ncards, cards);
            row.body = cards;
        }
        if (!store_event_append(app->store, match, &row, e))
            return false;
    }
    return true;
}

/* Replay a stored idempotent answer, if there is one. True when `r` was filled. */
static bool idem_replay(struct api_app *app, int64_t scope, const char *key,
                        const uint8_t request_hash[32], struct api_reply *r)
{
    if (!key)
        return false;
    struct store_idem rec;
    struct err e;
    pthread_mutex_lock(&app->db_lock);
    bool found = store_idem_get(app->store, scope, key, &rec, &e);
    pthread_mutex_unlock(&app->db_lock);
    if (!found) {
        if (e.code != ERR_NOT_FOUND)
            api_problem_from_err(r, &e);
        return e.code != ERR_NOT_FOUND;
    }
    if (memcmp(rec.request, request_hash, 32) != 0) {
        api_problem(r, 422, "idempotency_key_reused",
                    "this Idempotency-Key was used for a different request");
    } else {
        r->status = rec.status;
        r->body = json_loads(rec.body, 0, NULL);
    }
    store_idem_finish(&rec);
    return true;
}

static bool idem_save(struct api_app *app, int64_t scope, const char *key,
                      const uint8_t request_hash[32], int status, json_t *body, int64_t now,
                      struct err *e)
{
    if (!key)
        return true;
    struct store_idem rec = {.status = status, .body = json_dumps(body, JSON_COMPACT)};
    memcpy(rec.request, request_hash, 32);
    bool ok = rec.body && store_idem_put(app->store, scope, key, &rec, now / 1000, e);
    free(rec.body);
    return ok;
}

/* ---- Creating a match --------------------------------------------------------------------- */

void api_match_create(struct api_app *app, const struct api_caller *c, json_t *body,
                      const char *idem_key, const uint8_t request_hash[32], struct api_reply *r)
{
    if (!c->authenticated) {
        api_problem(r, 401, "unauthorized", "creating a match needs a player's or the "
                                            "operator's token");
        return;
    }
    int64_t scope = c->operator ? 0 : c->player;
    if (idem_replay(app, scope, idem_key, request_hash, r))
        return;
    if (!json_is_object(body)) {
        api_problem(r, 400, "bad_request", "the body must be a JSON object");
        return;
    }
    json_t *game = json_object_get(body, "game");
    json_t *players = json_object_get(body, "players");
    json_t *options = json_object_get(body, "options");
    json_t *league = json_object_get(body, "league");
    if (!game || !players) {
        api_problem(r, 400, "missing_field", "\"game\" and \"players\" are required");
        return;
    }
    if (!json_is_string(game) || !json_is_array(players) ||
        (options && !json_is_null(options) && !json_is_object(options))) {
        api_problem(r, 400, "bad_request",
                    "\"game\" is a string, \"players\" an array of player ids, \"options\" an "
                    "object");
        return;
    }
    if (league && !json_is_null(league)) {
        api_problem(r, 422, "unknown_league", "no such league");
        return;
    }
    enum rules_game_id g;
    if (strlen(json_string_value(game)) != json_string_length(game) ||
        !rules_game_lookup(json_string_value(game), &g)) {
        api_problem(r, 422, "unknown_game",
                    "\"game\" must be hearts, horseshoe, snag, horse-thief or speed");
        return;
    }
    size_t n = json_array_size(players);
    int64_t ids[RULES_MAX_SEATS] = {0};
    bool caller_seated = false;
    for (size_t i = 0; i < n; i++) {
        json_t *id = json_array_get(players, i);
        if (!json_is_integer(id)) {
            api_problem(r, 400, "bad_request", "\"players\" holds player ids (integers)");
            return;
        }
        if (i < RULES_MAX_SEATS) {
            ids[i] = json_integer_value(id);
            caller_seated |= ids[i] == c->player;
            for (size_t k = 0; k < i; k++)
                if (ids[k] == ids[i]) {
                    api_problem(r, 422, "duplicate_player",
                                "player %lld is listed twice; each seat needs its own player",
                                (long long)ids[i]);
                    return;
                }
        }
    }
    /* Without an explicit "seats", the number of players is the number of seats. */
    json_t *opts = options && json_is_object(options) ? json_deep_copy(options) : json_object();
    if (!json_object_get(opts, "seats"))
        json_object_set_new(opts, "seats", json_integer((json_int_t)n));
    struct rules_options o;
    struct err e;
    bool ok = tlog_options_parse(g, opts, &o, &e);
    json_decref(opts);
    if (!ok) {
        api_problem(r, 422, "bad_option", "%s", e.msg);
        return;
    }
    if ((size_t)o.seats != n) {
        api_problem(r, 422, "wrong_player_count", "%s with %d seats needs %d players, not %zu",
                    rules_game_name(g), o.seats, o.seats, n);
        return;
    }
    if (!c->operator && !caller_seated) {
        api_problem(r, 403, "forbidden", "a player may only create a match in which they sit");
        return;
    }

    struct api_match *m = match_new();
    struct store_match row = {0};
    if (!m || !tlog_seed_random(m->seed, &e) || !(m->log = tlog_create(g, &o, &e)) ||
        !rules_init(&m->replay.state, g, &o, &e)) {
        match_free(m);
        api_problem(r, 500, "internal", "cannot create the match");
        return;
    }
    int64_t now = app->now_ms();
    tlog_commitment(m->seed, m->commitment);
    memcpy(m->players, ids, sizeof ids);
    m->created_by = c->operator ? 0 : c->player;
    m->created_at = now / 1000;
    char seed_hex[TLOG_HEX_BYTES];
    tlog_hex(m->seed, sizeof m->seed, seed_hex);
    json_t *v = json_string(m->commitment);
    tlog_set_meta(m->log, "seed_commitment", v);
    json_decref(v);
    v = json_string(seed_hex);
    tlog_set_meta(m->log, "seed", v);
    json_decref(v);

    json_t *opts_json = tlog_options_json(g, &o);
    row.game = (char *)rules_game_name(g);
    row.options = json_dumps(opts_json, JSON_COMPACT);
    json_decref(opts_json);
    row.seats = o.seats;
    memcpy(row.players, ids, sizeof ids);
    memcpy(row.seed, m->seed, sizeof row.seed);
    memcpy(row.commitment, m->commitment, sizeof row.commitment);
    row.created_by = m->created_by;
    row.created_at = m->created_at;

    pthread_mutex_lock(&app->db_lock);
    ok = set_player_names(app, m, &e);
    if (!ok && e.code == ERR_NOT_FOUND) {
        pthread_mutex_unlock(&app->db_lock);
        api_problem(r, 422, "unknown_player", "every entry of \"players\" must be a player id");
        goto out;
    }
    ok = ok && settle_chance(m, m->log, &m->replay, &m->chance_events, &e);
    if (ok) {
        summary_of(&m->replay, m->log->nevents, now, &row);
        ok = store_begin(app->store, &e);
        if (ok) {
            ok = store_match_insert(app->store, &row, &e);
            m->id = row.id;
            json_t *reply = ok ? view_of(m, m->log, &m->replay, api_match_seat(m, c)) : NULL;
            ok = ok && store_events(app, m->id, m->log, 0, now, &e) &&
                 idem_save(app, scope, idem_key, request_hash, 201, reply, now, &e) &&
                 store_commit(app->store, &e);
            if (!ok)
                store_rollback(app->store);
            json_decref(reply);
        }
    }
    pthread_mutex_unlock(&app->db_lock);
    if (!ok) {
        /* A request with the same key committed first (checked above, racing us): its answer. */
        if (!idem_replay(app, scope, idem_key, request_hash, r))
            api_problem_from_err(r, &e);
        goto out;
    }
    struct api_match *placed = table_put(app, m);
    m = NULL;
    if (!placed) {
        api_problem(r, 500, "nomem", "out of memory");
        goto out;
    }
    pthread_mutex_lock(&placed->lock);
    r->status = 201;
    r->body = api_match_view(app, placed, api_match_seat(placed, c));
    pthread_mutex_unlock(&placed->lock);
out:
    match_free(m);
    free(row.options);
    free(row.to_move);
    free(row.totals);
    free(row.result);
}

/* ---- Reading ------------------------------------------------------------------------------ */

void api_match_get(struct api_app *app, const struct api_caller *c, int64_t id,
                   struct api_reply *r)
{
    struct api_match *m = api_match_find(app, id, r);
    if (!m)
        return;
    pthread_mutex_lock(&m->lock);
    r->status = 200;
    r->body = api_match_view(app, m, api_match_seat(m, c));
    pthread_mutex_unlock(&m->lock);
}

void api_match_log(struct api_app *app, const struct api_caller *c, int64_t id,
                   struct api_reply *r)
{
    struct api_match *m = api_match_find(app, id, r);
    if (!m)
        return;
    pthread_mutex_lock(&m->lock);
    json_t *log = tlog_redacted_json(m->log, api_match_seat(m, c));
    pthread_mutex_unlock(&m->lock);
    if (!log) {
        api_problem(r, 500, "corrupt_match", "the log of match %lld does not replay",
                    (long long)id);
        return;
    }
    r->status = 200;
    r->body = log;
}

/* ---- The move path ------------------------------------------------------------------------ */

void api_match_move(struct api_app *app, const struct api_caller *c, int64_t id, json_t *body,
                    const char *idem_key, const uint8_t request_hash[32], struct api_reply *r)
{
    if (!c->authenticated) {
        api_problem(r, 401, "unauthorized", "a move needs the seat's player token");
        return;
    }
    struct api_match *m = api_match_find(app, id, r);
    if (!m)
        return;
    pthread_mutex_lock(&m->lock);
    struct tlog_replay next = {0};
    size_t before = m->log->nevents;
    uint32_t k = m->chance_events;
    int seat = api_match_seat(m, c);
    if (seat < 0) {
        api_problem(r, 403, "forbidden", "you hold no seat in match %lld", (long long)id);
        goto out;
    }
    if (idem_replay(app, c->player, idem_key, request_hash, r))
        goto out;
    if (!json_is_object(body)) {
        api_problem(r, 400, "bad_request", "the body must be a JSON object");
        goto out;
    }
    json_t *move = json_object_get(body, "move");
    json_t *seq = json_object_get(body, "seq");
    if (!move) {
        api_problem(r, 400, "missing_field", "\"move\" is required");
        goto out;
    }
    if (!json_is_string(move) || (seq && !json_is_null(seq) && !json_is_integer(seq))) {
        api_problem(r, 400, "bad_request", "\"move\" is a string and \"seq\" an integer");
        goto out;
    }
    if (m->replay.state.over) {
        api_problem(r, 409, "match_over", "match %lld is over", (long long)id);
        goto out;
    }
    if (seq && json_is_integer(seq) && json_integer_value(seq) != (json_int_t)before) {
        api_problem(r, 409, "stale_seq", "the match is at seq %zu, not %lld", before,
                    (long long)json_integer_value(seq));
        goto out;
    }
    struct rules_move mv;
    struct err e;
    if (!rules_move_parse(json_string_value(move), json_string_length(move), &mv, &e)) {
        api_problem(r, 422, e.tag, "%s", e.msg);
        goto out;
    }
    if (mv.verb != RULES_RESIGN && !(rules_to_move(&m->replay.state) & (1u << seat))) {
        api_problem(r, 409, "not_your_turn", "seat %d has nothing to do now", seat);
        goto out;
    }
    char text[RULES_MOVE_TEXT_MAX];
    rules_move_format(&mv, text, sizeof text);
    if (!tlog_replay_copy(&next, &m->replay, &e)) {
        api_problem_from_err(r, &e);
        goto out;
    }
    if (!tlog_replay_move(&next, seat, &mv, &e)) {
        api_problem(r, 422, e.tag, "%s", e.msg);
        goto out;
    }
    if (!tlog_append_move(m->log, seat, text, false, &e) ||
        !settle_chance(m, m->log, &next, &k, &e)) {
        tlog_truncate(m->log, before);
        api_problem_from_err(r, &e);
        goto out;
    }

    /* One transaction: the events, the cached summary, the idempotent answer. */
    int64_t now = app->now_ms();
    json_t *reply = view_of(m, m->log, &next, seat);
    struct store_match row = {.id = m->id};
    summary_of(&next, m->log->nevents, now, &row);
    pthread_mutex_lock(&app->db_lock);
    bool ok = store_begin(app->store, &e);
    if (ok) {
        ok = store_events(app, m->id, m->log, before, now, &e) &&
             store_match_update(app->store, &row, &e) &&
             idem_save(app, c->player, idem_key, request_hash, 201, reply, now, &e) &&
             store_commit(app->store, &e);
        if (!ok)
            store_rollback(app->store);
    }
    pthread_mutex_unlock(&app->db_lock);
    free(row.to_move);
    free(row.totals);
    free(row.result);
    if (!ok) {
        json_decref(reply);
        tlog_truncate(m->log, before);
        /* The same key committed first for another match, racing us: answer as idem_replay. */
        if (!idem_replay(app, c->player, idem_key, request_hash, r))
            api_problem_from_err(r, &e);
        goto out;
    }
    /* Committed: publish. */
    tlog_replay_finish(&m->replay);
    m->replay = next;
    next.hands = NULL;
    m->chance_events = k;
    if (m->replay.state.over)
        m->finished_at = now / 1000;
    pthread_cond_broadcast(&m->changed);
    r->status = 201;
    r->body = reply;
out:
    tlog_replay_finish(&next);
    pthread_mutex_unlock(&m->lock);
}

/* ---- The event stream --------------------------------------------------------------------- */

static void append(char **out, size_t *len, const char *text)
{
    size_t n = strlen(text);
    char *grown = realloc(*out, *len + n + 1);
    if (!grown)
        return;
    memcpy(grown + *len, text, n + 1);
    *out = grown;
    *len += n;
}

static void append_message(char **out, size_t *len, int64_t id, const char *event, json_t *data)
{
    char head[96];
    snprintf(head, sizeof head, "id: %lld\nevent: %s\ndata: ", (long long)id, event);
    char *text = json_dumps(data, JSON_COMPACT);
    append(out, len, head);
    append(out, len, text ? text : "null");
    append(out, len, "\n\n");
    free(text);
}

int64_t api_match_stream_chunk(struct api_app *app, struct api_match *m, int seat,
                               int64_t after, char **out, size_t *len)
{
    int64_t last = (int64_t)m->log->nevents - 1;
    if (last <= after)
        return after;
    json_t *log = tlog_redacted_json(m->log, seat);
    bool whole = m->replay.state.over;
    size_t i;
    json_t *ev;
    json_array_foreach(json_object_get(log, "events"), i, ev) {
        int64_t seq = whole ? (int64_t)i : json_integer_value(json_object_get(ev, "seq"));
        if (seq <= after)
            continue;
        if (whole)
            json_object_set_new(ev, "seq", json_integer(seq));
        append_message(out, len, seq, "event", ev);
    }
    json_decref(log);
    json_t *view = api_match_view(app, m, seat);
    append_message(out, len, last, "state", view);
    json_decref(view);
    return last;
}
