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
    return m;
}

void api_match_free(struct api_match *m)
{
    if (!m)
        return;
    tlog_replay_finish(&m->replay);
    tlog_destroy(m->log);
    pthread_mutex_destroy(&m->lock);
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
            api_match_free(m);
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
        api_match_free(m);
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

/* The seed and its commitment as metadata of the in-memory log (the seed is served only
 * once the match is over: tlog_redacted_json). */
static void set_seed_meta(struct api_match *m)
{
    char seed_hex[TLOG_HEX_BYTES];
    tlog_hex(m->seed, sizeof m->seed, seed_hex);
    json_t *v = json_string(m->commitment);
    tlog_set_meta(m->log, "seed_commitment", v);
    json_decref(v);
    v = json_string(seed_hex);
    tlog_set_meta(m->log, "seed", v);
    json_decref(v);
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
        api_match_free(m);
        return NULL;
    }
    m->id = row->id;
    memcpy(m->players, row->players, sizeof m->players);
    memcpy(m->seed, row->seed, sizeof m->seed);
    memcpy(m->commitment, row->commitment, sizeof m->commitment);
    m->created_by = row->created_by;
    m->created_at = row->created_at;
    m->finished_at = row->finished_at;
    m->league = row->league;
    m->clock = (struct api_clock){
        .move_seconds = row->move_seconds,
        .forfeit = row->forfeit,
        .reminder_seconds = row->reminder_seconds,
        .turn_started = row->turn_started,
        .reminded = row->reminded,
        .deadline = row->deadline,
    };
    set_seed_meta(m);
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
        api_match_free(m);
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

json_t *api_match_view_of(const struct api_match *m, const struct tlog *log,
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
    json_object_set_new(j, "to_move", tlog_seats_json(rules_to_move(st)));
    json_object_set_new(j, "you", seat >= 0 ? json_integer(seat) : json_null());
    json_object_set_new(j, "totals", totals);
    json_object_set_new(j, "target", json_integer(st->target));
    json_object_set_new(j, "view", tlog_view_json(st, seat));
    json_object_set_new(j, "legal", tlog_moves_json(st, seat));
    json_object_set_new(j, "deadline", !st->over && m->clock.deadline
                                           ? json_integer(m->clock.deadline)
                                           : json_null());
    json_object_set_new(j, "clock",
                        m->clock.move_seconds
                            ? json_pack("{s:I, s:s, s:I}", "move_seconds",
                                        (json_int_t)m->clock.move_seconds, "policy",
                                        m->clock.forfeit ? "forfeit" : "auto",
                                        "reminder_seconds",
                                        (json_int_t)m->clock.reminder_seconds)
                            : json_null());
    json_object_set_new(j, "seed_commitment", json_string(m->commitment));
    if (st->over) {
        char seed_hex[TLOG_HEX_BYTES];
        tlog_hex(m->seed, sizeof m->seed, seed_hex);
        json_object_set_new(j, "seed", json_string(seed_hex));
        json_object_set_new(j, "result", tlog_result_json(rp));
    }
    return j;
}

char *api_match_view_text(const struct api_match *m, const struct tlog *log,
                          const struct tlog_replay *rp, int seat, size_t *len)
{
    const struct rules_state *st = &rp->state;
    struct jw w;
    jw_init(&w);
    jw_object_begin(&w, NULL);
    jw_int(&w, "id", m->id);
    jw_string(&w, "game", rules_game_name((enum rules_game_id)st->game));
    tlog_options_write(&w, "options", (enum rules_game_id)st->game, &log->options);
    jw_array_begin(&w, "players");
    json_t *names = json_object_get(log->meta, "players");
    for (int s = 0; s < st->nseats; s++) {
        json_t *name = json_array_get(names, (size_t)s);
        jw_object_begin(&w, NULL);
        jw_int(&w, "seat", s);
        jw_int(&w, "id", m->players[s]);
        if (json_is_string(name))
            jw_stringn(&w, "name", json_string_value(name), json_string_length(name));
        jw_object_end(&w);
    }
    jw_array_end(&w);
    jw_string(&w, "status", st->over ? "finished" : "active");
    jw_int(&w, "seq", (int64_t)log->nevents);
    tlog_seats_write(&w, "to_move", rules_to_move(st));
    if (seat >= 0)
        jw_int(&w, "you", seat);
    else
        jw_null(&w, "you");
    jw_array_begin(&w, "totals");
    for (int s = 0; s < st->nseats; s++)
        jw_int(&w, NULL, st->totals[s]);
    jw_array_end(&w);
    jw_int(&w, "target", st->target);
    tlog_view_write(&w, "view", st, seat);
    tlog_moves_write(&w, "legal", st, seat);
    if (!st->over && m->clock.deadline)
        jw_int(&w, "deadline", m->clock.deadline);
    else
        jw_null(&w, "deadline");
    if (m->clock.move_seconds) {
        jw_object_begin(&w, "clock");
        jw_int(&w, "move_seconds", m->clock.move_seconds);
        jw_string(&w, "policy", m->clock.forfeit ? "forfeit" : "auto");
        jw_int(&w, "reminder_seconds", m->clock.reminder_seconds);
        jw_object_end(&w);
    } else {
        jw_null(&w, "clock");
    }
    jw_string(&w, "seed_commitment", m->commitment);
    if (st->over) {
        char seed_hex[TLOG_HEX_BYTES];
        tlog_hex(m->seed, sizeof m->seed, seed_hex);
        jw_string(&w, "seed", seed_hex);
        json_t *result = tlog_result_json(rp);
        char *text = json_dumps(result, JSON_COMPACT);
        json_decref(result);
        if (text)
            jw_raw(&w, "result", text, strlen(text));
        else
            w.failed = true;
        free(text);
    }
    jw_object_end(&w);
    return jw_finish(&w, len);
}

json_t *api_match_view(struct api_app *app, struct api_match *m, int seat)
{
    (void)app;
    return api_match_view_of(m, m->log, &m->replay, seat);
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

/* The clock after a change from `before` (NULL: the match starts) to `after`: it starts
 * again when a seat gets something to do that it had not, or the mover still has; it
 * stops when the match is over. */
static struct api_clock clock_after(const struct api_clock *c, const struct rules_state *before,
                                    const struct rules_state *after, int mover, int64_t now_s)
{
    struct api_clock n = *c;
    if (!c->move_seconds || after->over) {
        n.deadline = 0;
        return n;
    }
    uint32_t tb = before ? rules_to_move(before) : 0, ta = rules_to_move(after);
    bool restart = !before || (ta & ~tb) || (mover >= 0 && ((ta >> mover) & 1));
    if (restart) {
        n.turn_started = now_s;
        n.reminded = false;
    }
    n.deadline = ta ? n.turn_started + n.move_seconds : 0;
    return n;
}

/* The summary columns for a replay and a clock; free row's strings after. */
static void summary_of(const struct tlog_replay *rp, size_t nevents, int64_t now,
                       const struct api_clock *clock, struct store_match *row)
{
    const struct rules_state *st = &rp->state;
    row->deadline = clock->deadline;
    row->turn_started = clock->turn_started;
    row->reminded = clock->reminded;
    json_t *to_move = tlog_seats_json(rules_to_move(st));
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
        r->text = rec.body; /* the answer as it was sent */
        r->text_len = strlen(rec.body);
        rec.body = NULL;
    }
    store_idem_finish(&rec);
    return true;
}

/* Remember the answer `text` (JSON) to the request with this key. */
static bool idem_save(struct api_app *app, int64_t scope, const char *key,
                      const uint8_t request_hash[32], int status, const char *text, int64_t now,
                      struct err *e)
{
    if (!key)
        return true;
    if (!text)
        return err_set(e, ERR_NOMEM, "nomem", "out of memory");
    struct store_idem rec = {.status = status, .body = (char *)text};
    memcpy(rec.request, request_hash, 32);
    return store_idem_put(app->store, scope, key, &rec, now / 1000, e);
}

/* ---- Creating a match --------------------------------------------------------------------- */

#define DEFAULT_MOVE_SECONDS (72 * 3600)
#define DEFAULT_REMINDER_SECONDS (24 * 3600)

/* The "clock" of a new match: absent means the default (72 hours a move, `auto`, a reminder
 * 24 hours before; no clock for real-time games), null means none. */
bool api_clock_parse(json_t *v, enum rules_game_id g, struct api_clock *c, struct api_reply *r)
{
    memset(c, 0, sizeof *c);
    if (!v) {
        if (!rules_game_realtime(g)) {
            c->move_seconds = DEFAULT_MOVE_SECONDS;
            c->reminder_seconds = DEFAULT_REMINDER_SECONDS;
        }
        return true;
    }
    if (json_is_null(v))
        return true;
    if (!json_is_object(v))
        return api_problem(r, 400, "bad_request", "\"clock\" is an object or null");
    const char *k;
    json_t *x;
    json_object_foreach(v, k, x) {
        if (strcmp(k, "move_seconds") && strcmp(k, "policy") && strcmp(k, "reminder_seconds"))
            return api_problem(r, 422, "bad_clock", "unknown clock setting '%s'", k);
    }
    json_t *move = json_object_get(v, "move_seconds");
    json_t *policy = json_object_get(v, "policy");
    json_t *reminder = json_object_get(v, "reminder_seconds");
    if (!json_is_integer(move) || json_integer_value(move) < 1 ||
        json_integer_value(move) > 366 * 86400)
        return api_problem(r, 422, "bad_clock",
                           "clock.move_seconds is a whole number of seconds, 1 to a year");
    c->move_seconds = json_integer_value(move);
    if (policy && !json_is_null(policy)) {
        if (!json_is_string(policy) ||
            (strcmp(json_string_value(policy), "auto") &&
             strcmp(json_string_value(policy), "forfeit")))
            return api_problem(r, 422, "bad_clock", "clock.policy is auto or forfeit");
        c->forfeit = !strcmp(json_string_value(policy), "forfeit");
    }
    c->reminder_seconds = c->move_seconds > DEFAULT_REMINDER_SECONDS * 2
                              ? DEFAULT_REMINDER_SECONDS
                              : c->move_seconds / 3;
    if (reminder && !json_is_null(reminder)) {
        if (!json_is_integer(reminder) || json_integer_value(reminder) < 0 ||
            json_integer_value(reminder) >= c->move_seconds)
            return api_problem(r, 422, "bad_clock",
                               "clock.reminder_seconds is 0 (none) or less than move_seconds");
        c->reminder_seconds = json_integer_value(reminder);
    }
    return true;
}

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
    struct store_league lg = {0};
    if (league && !json_is_null(league)) {
        struct err le;
        bool found = json_is_integer(league);
        if (found) {
            pthread_mutex_lock(&app->db_lock);
            found = store_league_get(app->store, json_integer_value(league), &lg, &le);
            pthread_mutex_unlock(&app->db_lock);
        }
        if (!found) {
            api_problem(r, 422, "unknown_league", "no such league");
            return;
        }
        if (strcmp(lg.game, json_string_value(game)) != 0 ||
            (options && !json_is_null(options))) {
            api_problem(r, 422, "league_rules",
                        "a match of league %lld is a %s match with the league's options",
                        (long long)lg.id, lg.game);
            store_league_finish(&lg);
            return;
        }
    }
    /* Without an explicit "seats", the number of players is the number of seats. */
    json_t *opts = lg.id                                   ? json_loads(lg.options, 0, NULL)
                   : options && json_is_object(options) ? json_deep_copy(options)
                                                         : json_object();
    if (!json_object_get(opts, "seats"))
        json_object_set_new(opts, "seats", json_integer((json_int_t)n));
    struct rules_options o;
    struct err e;
    bool ok = tlog_options_parse(g, opts, &o, &e);
    json_decref(opts);
    if (!ok) {
        store_league_finish(&lg);
        api_problem(r, 422, "bad_option", "%s", e.msg);
        return;
    }
    if ((size_t)o.seats != n) {
        store_league_finish(&lg);
        api_problem(r, 422, "wrong_player_count", "%s with %d seats needs %d players, not %zu",
                    rules_game_name(g), o.seats, o.seats, n);
        return;
    }
    if (!c->operator && !caller_seated) {
        store_league_finish(&lg);
        api_problem(r, 403, "forbidden", "a player may only create a match in which they sit");
        return;
    }
    if (lg.id) {
        for (size_t i = 0; i < n; i++) {
            bool current = false;
            struct err me;
            pthread_mutex_lock(&app->db_lock);
            bool member = store_member_is(app->store, lg.id, ids[i], &current, &me);
            pthread_mutex_unlock(&app->db_lock);
            if (!member || !current) {
                api_problem(r, 422, "not_member", "player %lld is not a member of league %lld",
                            (long long)ids[i], (long long)lg.id);
                store_league_finish(&lg);
                return;
            }
        }
    }
    struct api_clock clock;
    json_t *clock_req = json_object_get(body, "clock");
    json_t *league_clock = lg.id && lg.clock && !clock_req
                               ? json_loads(lg.clock, JSON_DECODE_ANY, NULL)
                               : NULL;
    int64_t league_id = lg.id;
    store_league_finish(&lg);
    bool clock_ok = api_clock_parse(league_clock ? league_clock : clock_req, g, &clock, r);
    json_decref(league_clock);
    if (!clock_ok)
        return;

    struct api_match *m = match_new();
    struct store_match row = {0};
    if (!m || !tlog_seed_random(m->seed, &e) || !(m->log = tlog_create(g, &o, &e)) ||
        !rules_init(&m->replay.state, g, &o, &e)) {
        api_match_free(m);
        api_problem(r, 500, "internal", "cannot create the match");
        return;
    }
    int64_t now = api_now_ms(app);
    tlog_commitment(m->seed, m->commitment);
    memcpy(m->players, ids, sizeof ids);
    m->created_by = c->operator ? 0 : c->player;
    m->created_at = now / 1000;
    set_seed_meta(m);

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
        m->clock = clock_after(&clock, NULL, &m->replay.state, -1, now / 1000);
        row.move_seconds = m->clock.move_seconds;
        row.forfeit = m->clock.forfeit;
        row.reminder_seconds = m->clock.reminder_seconds;
        row.league = m->league = league_id;
        summary_of(&m->replay, m->log->nevents, now, &m->clock, &row);
        ok = store_begin(app->store, &e);
        if (ok) {
            ok = store_match_insert(app->store, &row, &e);
            m->id = row.id;
            size_t len;
            char *reply = ok && idem_key ? api_match_view_text(m, m->log, &m->replay,
                                                               api_match_seat(m, c), &len)
                                         : NULL;
            ok = ok && store_events(app, m->id, m->log, 0, now, &e) &&
                 api_outbox_changed(app, m, m->log, NULL, &m->replay, -1, -1, now, &e) &&
                 idem_save(app, scope, idem_key, request_hash, 201, reply, now, &e) &&
                 store_commit(app->store, &e);
            if (!ok)
                store_rollback(app->store);
            free(reply);
        }
    }
    pthread_mutex_unlock(&app->db_lock);
    if (!ok) {
        /* A request with the same key committed first (checked above, racing us): its answer. */
        if (!idem_replay(app, scope, idem_key, request_hash, r))
            api_problem_from_err(r, &e);
        goto out;
    }
    api_wake(app);
    struct api_match *placed = table_put(app, m);
    m = NULL;
    if (!placed) {
        api_problem(r, 500, "nomem", "out of memory");
        goto out;
    }
    pthread_mutex_lock(&placed->lock);
    r->status = 201;
    r->text = api_match_view_text(placed, placed->log, &placed->replay,
                                  api_match_seat(placed, c), &r->text_len);
    pthread_mutex_unlock(&placed->lock);
    if (!r->text)
        api_problem(r, 500, "nomem", "out of memory");
out:
    api_match_free(m);
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
    r->text = api_match_view_text(m, m->log, &m->replay, api_match_seat(m, c), &r->text_len);
    pthread_mutex_unlock(&m->lock);
    if (!r->text)
        api_problem(r, 500, "nomem", "out of memory");
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

/* ---- Replay of a finished match ---------------------------------------------------------- */

void api_match_replay(struct api_app *app, int64_t id, struct api_reply *r)
{
    struct api_match *m = api_match_find(app, id, r);
    if (!m)
        return;
    pthread_mutex_lock(&m->lock);
    if (!m->replay.state.over) {
        pthread_mutex_unlock(&m->lock);
        api_problem(r, 409, "match_running",
                    "match %lld is still running: its replay opens when it is over",
                    (long long)id);
        return;
    }
    json_t *head = api_match_view_of(m, m->log, &m->replay, -1);
    struct rules_state st;
    struct err e;
    json_t *steps = json_array();
    bool ok = rules_init(&st, m->log->game, &m->log->options, &e);
    for (size_t i = 0; ok && i < m->log->nevents; i++) {
        const struct tlog_event *ev = &m->log->events[i];
        if (ev->kind == TLOG_MOVE) {
            struct rules_move mv;
            ok = rules_move_parse(ev->move, ev->move_len, &mv, &e) &&
                 rules_apply(&st, (int)ev->seat, &mv, &e);
        } else {
            ok = rules_chance(&st, ev->kind == TLOG_DEAL ? RULES_DUE_DEAL : RULES_DUE_SHUFFLE,
                              ev->cards, ev->ncards, &e);
        }
        if (!ok)
            break;
        json_t *totals = json_array();
        for (int s = 0; s < st.nseats; s++)
            json_array_append_new(totals, json_integer(st.totals[s]));
        json_t *event = tlog_event_json(ev);
        json_object_set_new(event, "seq", json_integer((json_int_t)i));
        json_array_append_new(steps,
                              json_pack("{s:I, s:o, s:o, s:o, s:I, s:o}", "seq", (json_int_t)i,
                                        "event", event, "view", tlog_view_json(&st, RULES_SEAT_ALL),
                                        "totals", totals, "hands_done",
                                        (json_int_t)st.hands_done, "to_move",
                                        json_integer(rules_to_move(&st))));
    }
    pthread_mutex_unlock(&m->lock);
    if (!ok) {
        json_decref(head);
        json_decref(steps);
        api_problem(r, 500, "corrupt_match", "the log of match %lld does not replay: %s",
                    (long long)id, e.msg);
        return;
    }
    json_object_set_new(head, "steps", steps);
    json_object_del(head, "legal");
    r->status = 200;
    r->body = head;
}

/* ---- The move path ------------------------------------------------------------------------ */

/* Apply `seat`'s move to `m` and commit it: the event and any chance events it makes due, the
 * summary and the clock, the notifications, and (with a key) the idempotent answer, in one
 * transaction; then publish. Call with m->lock held. `reply` (or NULL) gets the seat's view.
 * An illegal move fails with ERR_ILLEGAL and the engine's tag; nothing changes then. */
static bool commit_move(struct api_app *app, struct api_match *m, int seat,
                        const struct rules_move *mv, bool automatic, int64_t idem_scope,
                        const char *idem_key, const uint8_t *request_hash, char **reply,
                        size_t *reply_len, struct err *e)
{
    struct tlog_replay next = {0};
    size_t before = m->log->nevents;
    uint32_t k = m->chance_events;
    char text[RULES_MOVE_TEXT_MAX];
    rules_move_format(mv, text, sizeof text);
    if (!tlog_replay_copy(&next, &m->replay, e))
        return false;
    if (!tlog_replay_move(&next, seat, mv, e))
        goto fail;
    if (!tlog_append_move(m->log, seat, text, automatic, e) ||
        !settle_chance(m, m->log, &next, &k, e)) {
        tlog_truncate(m->log, before);
        goto fail;
    }

    int64_t now = api_now_ms(app);
    struct api_clock saved = m->clock;
    /* A timed-out seat that still has something to do (it took the trick and leads) gets a
     * fresh clock like any mover, or it would time out again at once. */
    m->clock = clock_after(&m->clock, &m->replay.state, &next.state, seat, now / 1000);
    size_t answer_len = 0;
    char *answer = reply ? api_match_view_text(m, m->log, &next, seat, &answer_len) : NULL;
    if (reply && !answer) {
        m->clock = saved;
        tlog_truncate(m->log, before);
        err_set(e, ERR_NOMEM, "nomem", "out of memory");
        goto fail;
    }
    struct store_match row = {.id = m->id};
    summary_of(&next, m->log->nevents, now, &m->clock, &row);
    pthread_mutex_lock(&app->db_lock);
    bool ok = store_begin(app->store, e);
    if (ok) {
        ok = store_events(app, m->id, m->log, before, now, e) &&
             store_match_update(app->store, &row, e) &&
             api_outbox_changed(app, m, m->log, &m->replay, &next, automatic ? -1 : seat,
                                automatic ? seat : -1, now, e) &&
             (!m->league || !next.state.over || m->replay.state.over ||
              api_league_match_finished(app, m, &next, e)) &&
             idem_save(app, idem_scope, idem_key, request_hash, 201, answer, now, e) &&
             store_commit(app->store, e);
        if (!ok)
            store_rollback(app->store);
    }
    pthread_mutex_unlock(&app->db_lock);
    free(row.to_move);
    free(row.totals);
    free(row.result);
    if (!ok) {
        m->clock = saved;
        free(answer);
        tlog_truncate(m->log, before);
        goto fail;
    }
    /* Committed: publish. */
    tlog_replay_finish(&m->replay);
    m->replay = next;
    m->chance_events = k;
    if (m->replay.state.over)
        m->finished_at = now / 1000;
    api_match_changed(app, m);
    if (reply) {
        *reply = answer;
        *reply_len = answer_len;
    }
    return true;
fail:
    tlog_replay_finish(&next);
    return false;
}

void api_match_move(struct api_app *app, const struct api_caller *c, int64_t id, json_t *body,
                    const char *idem_key, const uint8_t request_hash[32], struct api_reply *r,
                    const struct api_async *async)
{
    (void)async;
    if (!c->authenticated) {
        api_problem(r, 401, "unauthorized", "a move needs the seat's player token");
        return;
    }
    struct api_match *m = api_match_find(app, id, r);
    if (!m)
        return;
    pthread_mutex_lock(&m->lock);
    size_t before = m->log->nevents;
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
    char *reply = NULL;
    size_t reply_len = 0;
    if (!commit_move(app, m, seat, &mv, false, c->player, idem_key, request_hash, &reply,
                     &reply_len, &e)) {
        if (e.code == ERR_ILLEGAL)
            api_problem(r, 422, e.tag, "%s", e.msg);
        /* The same key committed first for another match, racing us: answer as idem_replay. */
        else if (!idem_replay(app, c->player, idem_key, request_hash, r))
            api_problem_from_err(r, &e);
        goto out;
    }
    r->status = 201;
    r->text = reply;
    r->text_len = reply_len;
out:
    pthread_mutex_unlock(&m->lock);
}

bool api_match_play(struct api_app *app, struct api_match *m, int seat,
                    const struct rules_move *mv, struct err *e)
{
    return commit_move(app, m, seat, mv, false, 0, NULL, NULL, NULL, NULL, e);
}

bool api_match_forfeit(struct api_app *app, int64_t id, int64_t player, struct err *e)
{
    struct api_reply r = {0};
    struct api_match *m = api_match_find(app, id, &r);
    json_decref(r.body);
    if (!m)
        return err_set(e, ERR_NOT_FOUND, "not_found", "no such match");
    pthread_mutex_lock(&m->lock);
    struct api_caller c = {.authenticated = true, .player = player};
    int seat = api_match_seat(m, &c);
    struct rules_move mv = {.verb = RULES_RESIGN, .card = RULES_NO_CARD};
    bool ok = seat >= 0 && !m->replay.state.over &&
              commit_move(app, m, seat, &mv, false, 0, NULL, NULL, NULL, NULL, e);
    pthread_mutex_unlock(&m->lock);
    return ok;
}

/* ---- The clock ---------------------------------------------------------------------------- */

/* When `seat`'s time runs out: the turn's deadline, moved on by the part of the player's
 * vacation that falls inside the turn (a vacation pauses the clock). */
static int64_t seat_deadline(struct api_app *app, const struct api_match *m, int seat)
{
    int64_t base = m->clock.turn_started + m->clock.move_seconds;
    struct store_player p = {0};
    struct err e;
    pthread_mutex_lock(&app->db_lock);
    bool ok = store_player_get(app->store, m->players[seat], &p, &e);
    pthread_mutex_unlock(&app->db_lock);
    int64_t from = p.vacation_from, until = p.vacation_until;
    store_player_finish(&p);
    if (!ok || until <= m->clock.turn_started || from >= base || until <= from)
        return base;
    int64_t start = from > m->clock.turn_started ? from : m->clock.turn_started;
    return base + (until - start);
}

static bool on_vacation(struct api_app *app, const struct api_match *m, int seat, int64_t now)
{
    struct store_player p = {0};
    struct err e;
    pthread_mutex_lock(&app->db_lock);
    bool ok = store_player_get(app->store, m->players[seat], &p, &e);
    pthread_mutex_unlock(&app->db_lock);
    bool on = ok && p.vacation_from <= now && now < p.vacation_until;
    store_player_finish(&p);
    return on;
}

/* Rewrite the match row's summary and clock. Call with m->lock and db_lock held, inside a
 * transaction or not. */
static bool save_clock(struct api_app *app, struct api_match *m, int64_t now_ms, struct err *e)
{
    struct store_match row = {.id = m->id};
    summary_of(&m->replay, m->log->nevents, now_ms, &m->clock, &row);
    if (m->replay.state.over)
        row.finished_at = m->finished_at;
    bool ok = store_match_update(app->store, &row, e);
    free(row.to_move);
    free(row.totals);
    free(row.result);
    return ok;
}

void api_match_clock_tick(struct api_app *app, int64_t id)
{
    struct api_reply r = {0};
    struct api_match *m = api_match_find(app, id, &r);
    json_decref(r.body);
    if (!m)
        return;
    pthread_mutex_lock(&m->lock);
    struct err e;
    /* Each timeout is a move; a bound keeps a confused clock from spinning. */
    for (int round = 0; round < 4 * RULES_MAX_SEATS; round++) {
        if (m->replay.state.over || !m->clock.move_seconds)
            break;
        int64_t now_ms = api_now_ms(app), now = now_ms / 1000;
        uint32_t to_move = rules_to_move(&m->replay.state);
        int late = -1;
        int64_t earliest = 0;
        for (int s = 0; s < m->replay.state.nseats; s++) {
            if (!((to_move >> s) & 1))
                continue;
            int64_t d = seat_deadline(app, m, s);
            if (d <= now && late < 0)
                late = s;
            else if (!earliest || d < earliest)
                earliest = d;
        }
        if (late >= 0) {
            struct rules_move mv = {.verb = RULES_RESIGN, .card = RULES_NO_CARD};
            if (!m->clock.forfeit) {
                struct rules_move first[RULES_MAX_LEGAL];
                if (rules_legal(&m->replay.state, late, first, RULES_MAX_LEGAL) > 0)
                    mv = first[0];
            }
            if (!commit_move(app, m, late, &mv, true, 0, NULL, NULL, NULL, NULL, &e)) {
                fprintf(stderr, "cardpostd: match %lld: timeout of seat %d failed: %s\n",
                        (long long)id, late, e.msg);
                break;
            }
            continue;
        }
        /* Nobody is late: remind the seats to move once, reminder_seconds before the earliest
         * of their deadlines (a vacation moves it on), and keep that deadline. */
        int64_t deadline = earliest ? earliest : m->clock.deadline;
        bool remind = !m->clock.reminded && m->clock.reminder_seconds &&
                      now >= deadline - m->clock.reminder_seconds;
        if (!remind && deadline == m->clock.deadline)
            break;
        uint32_t away = 0;
        for (int s = 0; remind && s < m->replay.state.nseats; s++)
            if (((to_move >> s) & 1) && on_vacation(app, m, s, now))
                away |= 1u << s;
        struct api_clock saved = m->clock;
        m->clock.deadline = deadline;
        pthread_mutex_lock(&app->db_lock);
        bool ok = store_begin(app->store, &e);
        if (ok && remind) {
            m->clock.reminded = true;
            for (int s = 0; ok && s < m->replay.state.nseats; s++)
                if (((to_move & ~away) >> s) & 1)
                    ok = api_outbox_notify(app, m, m->log, &m->replay, s, "reminder", now_ms,
                                           &e);
        }
        ok = ok && save_clock(app, m, now_ms, &e) && store_commit(app->store, &e);
        if (!ok) {
            store_rollback(app->store);
            m->clock = saved;
            fprintf(stderr, "cardpostd: match %lld: clock: %s\n", (long long)id, e.msg);
        }
        pthread_mutex_unlock(&app->db_lock);
        if (ok && remind)
            api_wake(app);
        break;
    }
    pthread_mutex_unlock(&m->lock);
}

void api_player_clocks_changed(struct api_app *app, int64_t player)
{
    int64_t ids[256];
    struct err e;
    pthread_mutex_lock(&app->db_lock);
    int n = store_clocked_matches_of_player(app->store, player, ids, 256, &e);
    pthread_mutex_unlock(&app->db_lock);
    for (int i = 0; i < n; i++)
        api_match_clock_tick(app, ids[i]);
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
