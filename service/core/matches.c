/* matches.c - the domain core's match operations (core.h "Matches: the operations"), each
 * with a typed input and a struct err, for the HTTP handlers (http/api-matches.c), the mail
 * gateway, the clock and the league scheduler alike: creating a match with its committed
 * seed, the move path (validate on a copy, then one transaction: the new events, the cached
 * summary and state snapshot, the notifications, the idempotency record; then publish),
 * consent, the caller's view, the log and the replay as the caller may see them (read back
 * from SQLite), the clock, and the messages of the event stream. cache.c keeps the matches
 * in memory.
 */
#include "buf.h"
#include "core.h"
#include "metrics.h"
#include "log.h"

#include <stddef.h>
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

/* ---- Names -------------------------------------------------------------------------------- */

/* m's player names from the database (a new match), and in *willing the seats whose
 * players may be seated without being asked; ERR_NOT_FOUND for an unknown player. Call
 * with db_lock held. */
static bool set_player_names(struct api_app *app, struct api_match *m, uint32_t *willing,
                             struct err *e)
{
    assert(lock_held(&app->read_lock));
    struct store_player p[RULES_MAX_SEATS] = {0};
    char *names[RULES_MAX_SEATS] = {0};
    int n = m->replay.state.nseats;
    bool ok = true;
    *willing = 0;
    for (int s = 0; ok && s < n; s++) {
        ok = store_player_get(app->reader, m->players[s], &p[s], e);
        names[s] = p[s].name;
        if (ok && api_prefs_seat_without_asking(p[s].prefs))
            *willing |= 1u << s;
    }
    ok = ok && api_match_set_names(m, names, n, e);
    for (int s = 0; s < n; s++)
        store_player_finish(&p[s]);
    return ok;
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

/* The clock settings of `m` (or null), as its view shows them. */
static void clock_write(struct jw *w, const struct api_match *m)
{
    if (m->clock.move_seconds) {
        jw_object_begin(w, "clock");
        jw_int(w, "move_seconds", m->clock.move_seconds);
        jw_string(w, "policy", m->clock.forfeit ? "forfeit" : "auto");
        jw_int(w, "reminder_seconds", m->clock.reminder_seconds);
        jw_object_end(w);
    } else {
        jw_null(w, "clock");
    }
}

/* A view's opening: the match's id, game, options and players (with whether each agreed,
 * for a match not started). */
static void view_players(struct jw *w, const struct api_match *m, const struct rules_state *st,
                         bool accepted)
{
    jw_object_begin(w, NULL);
    jw_int(w, "id", m->id);
    jw_string(w, "game", rules_game_name((enum rules_game_id)st->game));
    tlog_options_write(w, "options", (enum rules_game_id)st->game, &m->options);
    jw_array_begin(w, "players");
    for (int s = 0; s < st->nseats; s++) {
        const char *name = api_match_name(m, s);
        jw_object_begin(w, NULL);
        jw_int(w, "seat", s);
        jw_int(w, "id", m->players[s]);
        if (name)
            jw_string(w, "name", name);
        if (accepted)
            jw_bool(w, "accepted", (m->accepted >> s) & 1);
        jw_object_end(w);
    }
    jw_array_end(w);
}

void api_match_head_build(struct api_match *m)
{
    struct jw w;
    jw_init(&w);
    view_players(&w, m, &m->replay.state, false);
    jw_object_end(&w);
    size_t len;
    char *text = jw_finish(&w, &len);
    free(m->head);
    m->head = NULL;
    if (!text)
        return;
    memmove(text, text + 1, len - 2); /* (the members, without their braces) */
    text[len - 2] = '\0';
    m->head = text;
    m->head_len = len - 2;
}

/* The members every view of a started match opens with (view_players), copied. */
static void view_head(struct jw *w, const struct api_match *m, const struct rules_state *st)
{
    if (m->head)
        jw_object_begin_with(w, NULL, m->head, m->head_len);
    else
        view_players(w, m, st, false);
}

/* Where the match stands for `seat`: seq, who is to move, the seat, the totals (`totals`
 * false: zeros, before the first deal) and the target. */
static void view_turn(struct jw *w, const struct rules_state *st, int64_t seq, uint32_t to_move,
                      int seat, bool totals)
{
    jw_int(w, "seq", seq);
    tlog_seats_write(w, "to_move", to_move);
    if (seat >= 0)
        jw_int(w, "you", seat);
    else
        jw_null(w, "you");
    jw_array_begin(w, "totals");
    for (int s = 0; s < st->nseats; s++)
        jw_int(w, NULL, totals ? st->totals[s] : 0);
    jw_array_end(w);
    jw_int(w, "target", st->target);
}

/* The view of a match that has not started: pending (who accepted, who is awaited, until
 * when) or cancelled (declined, expired). No cards, no seed, no clock running. */
static char *invitation_view_text(const struct api_match *m, int seat, size_t *len)
{
    const struct rules_state *st = &m->replay.state;
    uint32_t all = (1u << st->nseats) - 1;
    struct jw w;
    jw_init(&w);
    view_players(&w, m, st, true);
    bool pending = m->invitation == STORE_MATCH_PENDING;
    jw_string(&w, "status", pending ? "pending" : "cancelled");
    if (!pending)
        jw_string(&w, "cancelled", m->invitation == STORE_MATCH_DECLINED ? "declined" : "expired");
    view_turn(&w, st, 0, 0, seat, false);
    jw_null(&w, "view");
    jw_array_begin(&w, "legal");
    jw_array_end(&w);
    jw_null(&w, "deadline");
    clock_write(&w, m);
    jw_null(&w, "seed_commitment");
    if (m->league)
        jw_int(&w, "league", m->league);
    jw_object_begin(&w, "invitation");
    tlog_seats_write(&w, "accepted", m->accepted & all);
    tlog_seats_write(&w, "waiting_for", pending ? all & ~m->accepted : 0);
    if (pending)
        jw_int(&w, "expires_at", m->invited_until);
    else
        jw_null(&w, "expires_at");
    jw_object_end(&w);
    jw_object_end(&w);
    return jw_finish(&w, len);
}

/* A started match's view (api_match_view_text) written into `w`: with all its legal moves
 * if there are at most `legal_all`, else the first `legal_few` and their number in all as
 * "legal_count" (RULES_MAX_LEGAL: all of them, and no count). */
static void view_write(struct jw *w, const struct api_match *m, const struct tlog_replay *rp,
                       int64_t seq, int seat, int legal_all, int legal_few)
{
    const struct rules_state *st = &rp->state;
    view_head(w, m, st);
    jw_string(w, "status", st->over ? "finished" : "active");
    view_turn(w, st, seq, rules_to_move(st), seat, true);
    tlog_view_write(w, "view", st, seat);
    int legal = tlog_moves_write_first(w, "legal", st, seat, legal_all, legal_few);
    if (legal > legal_all)
        jw_int(w, "legal_count", legal);
    if (!st->over && m->clock.deadline)
        jw_int(w, "deadline", m->clock.deadline);
    else
        jw_null(w, "deadline");
    clock_write(w, m);
    jw_string(w, "seed_commitment", m->commitment);
    if (st->over) {
        char seed_hex[TLOG_HEX_BYTES];
        tlog_hex(m->seed, sizeof m->seed, seed_hex);
        jw_string(w, "seed", seed_hex);
        json_t *result = tlog_result_json(rp);
        char *text = json_dumps(result, JSON_COMPACT);
        json_decref(result);
        if (text)
            jw_raw(w, "result", text, strlen(text));
        else
            w->b.failed = true;
        free(text);
    }
    jw_object_end(w);
}

/* The room a view's text starts with: most views fit (a buffer grows from 1 KiB by
 * doubling, three reallocations for a Hearts seat about to pass), and the text is short-lived
 * (an answer, sent; a feed's, copied to a block of its size: kept_copy). */
#define VIEW_ROOM 4096

char *api_match_view_text_cut(const struct api_match *m, const struct tlog_replay *rp,
                              int64_t seq, int seat, int legal_all, int legal_few, size_t *len)
{
    if (m->invitation != STORE_MATCH_STARTED)
        return invitation_view_text(m, seat, len);
    struct jw w;
    jw_init(&w);
    buf_reserve(&w.b, VIEW_ROOM);
    view_write(&w, m, rp, seq, seat, legal_all, legal_few);
    return jw_finish(&w, len);
}

char *api_match_view_text(const struct api_match *m, const struct tlog_replay *rp, int64_t seq,
                          int seat, size_t *len)
{
    return api_match_view_text_cut(m, rp, seq, seat, RULES_MAX_LEGAL, RULES_MAX_LEGAL, len);
}

/* The tree is the text read back: one writer of the view, so that the streams, webhooks and
 * emails show exactly what GET shows. */
json_t *api_match_view_of(const struct api_match *m, const struct tlog_replay *rp, int64_t seq,
                          int seat, int legal_all, int legal_few)
{
    size_t len;
    char *text = api_match_view_text_cut(m, rp, seq, seat, legal_all, legal_few, &len);
    json_t *j = text ? json_loadb(text, len, 0, NULL) : NULL;
    free(text);
    return j;
}

/* ---- Committing events -------------------------------------------------------------------- */

/* The events of one change (a move and the chance events it makes due, or a new match's
 * deal), collected until its transaction stores them. */
#define NEW_EVENTS_MAX 8
#define EVENT_TEXT_MAX                                                                         \
    (RULES_MOVE_TEXT_MAX > RULES_NCARDS * 3 + 1 ? RULES_MOVE_TEXT_MAX : RULES_NCARDS * 3 + 1)

struct new_events {
    int n;
    struct store_event ev[NEW_EVENTS_MAX];
    char text[NEW_EVENTS_MAX][EVENT_TEXT_MAX];  /* each event's body */
};

/* One more event of `kind`; its body is to be written into the text it points to. */
static struct store_event *new_event(struct new_events *ne, int kind, struct err *e)
{
    if (ne->n == NEW_EVENTS_MAX) {
        err_set(e, ERR_IO, "too_many_events", "one change made more than %d events",
                NEW_EVENTS_MAX);
        return NULL;
    }
    struct store_event *ev = &ne->ev[ne->n];
    *ev = (struct store_event){.kind = kind, .body = ne->text[ne->n]};
    ne->text[ne->n++][0] = '\0';
    return ev;
}

/* Deal (or shuffle) from the seed until no chance event is due; applies to `rp` and adds
 * to `ne`. `k` counts chance events. */
static bool settle_chance(struct api_match *m, struct tlog_replay *rp, uint32_t *k,
                          struct new_events *ne, struct err *e)
{
    enum rules_due due;
    while ((due = rules_due(&rp->state)) != RULES_DUE_NONE) {
        rules_card cards[RULES_NCARDS];
        int n = tlog_derive(m->seed, *k, &rp->state, cards);
        int kind = due == RULES_DUE_DEAL ? STORE_DEAL : STORE_SHUFFLE;
        struct store_event *ev = new_event(ne, kind, e);
        if (!ev || !tlog_replay_chance(rp, due, cards, n, e))
            return false;
        cards_text(cards, n, ne->text[ne->n - 1]);
        (*k)++;
    }
    return true;
}

/* Whether two clocks write the same columns of a match row (store_match_update). */
static bool clock_same(const struct api_clock *a, const struct api_clock *b)
{
    return a->deadline == b->deadline && a->turn_started == b->turn_started &&
           a->reminded == b->reminded && a->wake_at == b->wake_at;
}

/* "[a,b,...]" (JSON), a text of its own of its size: a move writes two (to_move, totals),
 * which a writer's 1 KiB buffers made two of the largest allocations of its thread. */
static char *ints_text(const int32_t *v, int n)
{
    char text[2 + RULES_MAX_SEATS * 12 + BUF_DECIMAL_MAX];
    char *p = text;
    *p++ = '[';
    for (int i = 0; i < n; i++) {
        if (i > 0)
            *p++ = ',';
        p = buf_decimal_at(p, v[i]);
    }
    *p++ = ']';
    *p = '\0';
    return strdup(text);
}

/* The summary columns for a replay and a clock; free row's strings after. */
static void summary_of(const struct tlog_replay *rp, int64_t nevents, int64_t now,
                       const struct api_clock *clock, struct store_match *row)
{
    const struct rules_state *st = &rp->state;
    row->deadline = clock->deadline;
    row->turn_started = clock->turn_started;
    row->reminded = clock->reminded;
    row->wake_at = clock->wake_at;
    int32_t to_move[RULES_MAX_SEATS];
    int n = 0;
    for (uint32_t mask = rules_to_move(st), s = 0; s < RULES_MAX_SEATS; s++)
        if ((mask >> s) & 1)
            to_move[n++] = (int32_t)s;
    row->to_move = ints_text(to_move, n);
    row->totals = ints_text(st->totals, st->nseats);
    row->finished = st->over;
    row->seq = nevents;
    row->result = NULL;
    if (st->over) {
        json_t *result = tlog_result_json(rp);
        row->result = json_dumps(result, JSON_COMPACT);
        json_decref(result);
        row->finished_at = now / 1000;
    }
}

/* Write the events of `ne` to the database as seq `from` on. */
static bool store_events(struct api_app *app, int64_t match, struct new_events *ne, int64_t from,
                         int64_t now, struct err *e)
{
    for (int i = 0; i < ne->n; i++) {
        ne->ev[i].seq = from + i;
        ne->ev[i].at = now;
        if (!store_event_append(app->store, match, &ne->ev[i], e))
            return false;
    }
    return true;
}

bool core_idem_replay(struct api_app *app, const struct core_idem *idem, struct core_answer *out,
                      struct err *e)
{
    out->text = NULL;
    if (!idem || !idem->key)
        return true;
    struct store_idem rec;
    lock_take(&app->db_lock);
    bool found = store_idem_get(app->store, idem->scope, idem->key, &rec, e);
    lock_drop(&app->db_lock);
    if (!found)
        return e->code == ERR_NOT_FOUND;
    bool same = memcmp(rec.request, idem->hash, API_SHA256_BYTES) == 0;
    if (same) {
        out->status = rec.status;
        out->text = rec.body; /* the answer as it was sent */
        out->len = strlen(rec.body);
        rec.body = NULL;
    }
    store_idem_finish(&rec);
    return same || err_set(e, ERR_INVALID, "idempotency_key_reused",
                           "this Idempotency-Key was used for a different request");
}

/* Remember the answer `text` (JSON) to the request of `idem` (NULL or no key: nothing). */
static bool idem_save(struct api_app *app, const struct core_idem *idem, int status,
                      const char *text, int64_t now, struct err *e)
{
    if (!idem || !idem->key)
        return true;
    if (!text)
        return err_set(e, ERR_NOMEM, "nomem", "out of memory");
    struct store_idem rec = {.status = status, .body = (char *)text};
    memcpy(rec.request, idem->hash, API_SHA256_BYTES);
    return store_idem_put(app->store, idem->scope, idem->key, &rec, now / 1000, e);
}

/* ---- Creating a match --------------------------------------------------------------------- */

#define DEFAULT_MOVE_SECONDS (72 * 3600)
#define DEFAULT_REMINDER_SECONDS (24 * 3600)

/* The "clock" of a new match: absent means the default (72 hours a move, `auto`, a reminder
 * 24 hours before; no clock for real-time games), null means none. */
bool core_clock_parse(json_t *v, enum rules_game_id g, struct api_clock *c, struct err *e)
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
        return err_set(e, ERR_MALFORMED, "bad_request", "\"clock\" is an object or null");
    const char *k;
    json_t *x;
    json_object_foreach(v, k, x) {
        if (strcmp(k, "move_seconds") && strcmp(k, "policy") && strcmp(k, "reminder_seconds"))
            return err_set(e, ERR_INVALID, "bad_clock", "unknown clock setting '%s'", k);
    }
    json_t *move = json_object_get(v, "move_seconds");
    json_t *policy = json_object_get(v, "policy");
    json_t *reminder = json_object_get(v, "reminder_seconds");
    if (!json_is_integer(move) || json_integer_value(move) < 1 ||
        json_integer_value(move) > 366 * 86400)
        return err_set(e, ERR_INVALID, "bad_clock",
                       "clock.move_seconds is a whole number of seconds, 1 to a year");
    c->move_seconds = json_integer_value(move);
    if (policy && !json_is_null(policy)) {
        if (!json_is_string(policy) ||
            (strcmp(json_string_value(policy), "auto") &&
             strcmp(json_string_value(policy), "forfeit")))
            return err_set(e, ERR_INVALID, "bad_clock", "clock.policy is auto or forfeit");
        c->forfeit = !strcmp(json_string_value(policy), "forfeit");
    }
    c->reminder_seconds = c->move_seconds > DEFAULT_REMINDER_SECONDS * 2
                              ? DEFAULT_REMINDER_SECONDS
                              : c->move_seconds / 3;
    if (reminder && !json_is_null(reminder)) {
        if (!json_is_integer(reminder) || json_integer_value(reminder) < 0 ||
            json_integer_value(reminder) >= c->move_seconds)
            return err_set(e, ERR_INVALID, "bad_clock",
                           "clock.reminder_seconds is 0 (none) or less than move_seconds");
        c->reminder_seconds = json_integer_value(reminder);
    }
    return true;
}

/* A new match's rows, written by the committer (core_match_create). */
struct create_write {
    struct api_match *m;
    int seat;                     /* the creator's, for the stored answer (-1: none) */
    struct store_match *row;
    struct new_events *ne;
    int64_t now;
    const struct core_idem *idem;
};

/* An "invitation" notification to each seat of pending `m` that has not agreed yet. */
static bool invite_seats(struct api_app *app, const struct api_match *m, int64_t now,
                         struct err *e)
{
    for (int s = 0; s < m->replay.state.nseats; s++)
        if (!((m->accepted >> s) & 1) &&
            !api_outbox_notify(app, m, 0, &m->replay, s, "invitation", now, NULL, e))
            return false;
    return true;
}

/* Refuse one more match in league `league`, which has `count`. */
static bool league_full(int64_t league, int64_t count, struct err *e)
{
    return err_set(e, ERR_INVALID, "league_match_limit",
                   "league %lld has %lld matches, the most a league may have "
                   "(league_max_matches)",
                   (long long)league, (long long)count);
}

static bool create_run(struct api_app *app, void *ctx, struct err *e)
{
    struct create_write *cw = ctx;
    struct api_match *m = cw->m;
    /* A league's room again, in the write: creations checked at once (each before the
     * other's commit) are counted here one after the other. */
    int64_t count = 0;
    if (m->league &&
        (!store_league_take(app->store, m->league, e) ||
         !store_league_match_count(app->store, m->league, &count, e) ||
         (count >= app->config.league_max_matches && !league_full(m->league, count, e))))
        return false;
    if (!store_match_insert(app->store, cw->row, e))
        return false;
    m->id = cw->row->id;
    api_match_head_build(m);
    size_t len;
    bool keyed = cw->idem && cw->idem->key;
    char *reply = keyed ? api_match_view_text(m, &m->replay, m->seq, cw->seat, &len) : NULL;
    bool ok = (!keyed || reply || err_set(e, ERR_NOMEM, "nomem", "out of memory")) &&
              store_events(app, m->id, cw->ne, 0, cw->now, e) &&
              (m->invitation == STORE_MATCH_PENDING
                   ? invite_seats(app, m, cw->now, e)
                   : api_outbox_changed(app, m, m->seq, NULL, &m->replay, -1, -1, cw->now, NULL,
                                        e)) &&
              idem_save(app, cw->idem, 201, reply, cw->now, e) &&
              store_match_changed(app->store, m->id, m->seq, &m->rev, e);
    free(reply);
    return ok;
}

bool core_caller_known(const struct api_caller *c, const char *detail, struct err *e)
{
    return c->authenticated || err_set(e, ERR_UNAUTHORIZED, "unauthorized", "%s", detail);
}

bool core_match_creator(const struct api_caller *c, struct err *e)
{
    return core_caller_known(c, "creating a match needs a player's or the operator's token", e);
}

/* The league `spec` names (lg->id 0: none), checked: it exists, the match is one of its game
 * with its options and clock, and it has room for one more (as committed: the write checks
 * again, create_run). Read on the reading connection, never waiting for a batch. */
static bool create_league(struct api_app *app, const struct core_match_spec *spec,
                          struct store_league *lg, struct err *e)
{
    if (!spec->league)
        return true;
    lock_take(&app->read_lock);
    bool found = store_league_get(app->reader, spec->league, lg, e);
    lock_drop(&app->read_lock);
    if (!found)
        return err_set(e, ERR_INVALID, "unknown_league", "no such league");
    if (strcmp(lg->game, rules_game_name(spec->game)) != 0 || spec->options)
        return err_set(e, ERR_INVALID, "league_rules",
                       "a match of league %lld is a %s match with the league's options",
                       (long long)lg->id, lg->game);
    if (spec->clock)
        return err_set(e, ERR_INVALID, "league_clock",
                       "a match of league %lld uses the league's clock: leave out \"clock\"",
                       (long long)lg->id);
    int64_t count = 0;
    lock_take(&app->read_lock);
    found = store_league_match_count(app->reader, lg->id, &count, e);
    lock_drop(&app->read_lock);
    if (found && count >= app->config.league_max_matches)
        return league_full(lg->id, count, e);
    return found;
}

/* The options of a new match (the league's, or the request's; without an explicit "seats",
 * the number of players is the number of seats), and as many players as seats. */
static bool create_options(const struct core_match_spec *spec, const struct store_league *lg,
                           struct rules_options *o, struct err *e)
{
    json_t *opts = lg->id          ? json_loads(lg->options, 0, NULL)
                   : spec->options ? json_deep_copy(spec->options)
                                   : json_object();
    if (!json_object_get(opts, "seats"))
        json_object_set_new(opts, "seats", json_integer((json_int_t)spec->nplayers));
    struct err oe;
    bool ok = tlog_options_parse(spec->game, opts, o, &oe);
    json_decref(opts);
    if (!ok)
        return err_set(e, ERR_INVALID, "bad_option", "%s", oe.msg);
    if ((size_t)o->seats != spec->nplayers)
        return err_set(e, ERR_INVALID, "wrong_player_count",
                       "%s with %d seats needs %d players, not %zu", rules_game_name(spec->game),
                       o->seats, o->seats, spec->nplayers);
    return true;
}

/* Whether `c` may create a match of these players (NULL: the league's schedule may), and
 * every player of a league match is a member of it. */
static bool create_allowed(struct api_app *app, const struct api_caller *c,
                           const struct core_match_spec *spec, const struct store_league *lg,
                           struct err *e)
{
    bool seated = false; /* (create_options made sure that nplayers <= RULES_MAX_SEATS) */
    for (size_t i = 0; c && i < spec->nplayers; i++)
        seated |= spec->players[i] == c->player;
    if (c && !c->operator && !seated)
        return err_set(e, ERR_FORBIDDEN, "forbidden",
                       "a player may only create a match in which they sit");
    for (size_t i = 0; lg->id && i < spec->nplayers; i++) {
        bool current = false;
        struct err me;
        lock_take(&app->read_lock);
        bool member = store_member_is(app->reader, lg->id, spec->players[i], &current, &me);
        lock_drop(&app->read_lock);
        if (!member || !current)
            return err_set(e, ERR_INVALID, "not_member",
                           "player %lld is not a member of league %lld",
                           (long long)spec->players[i], (long long)lg->id);
    }
    return true;
}

/* The new match in memory and as its row (free the row's strings after), and its first
 * events: started (seed, first deal, clock) when nobody is to be asked (`ask` false) or
 * everybody asked lets themselves be seated without asking; else pending. */
static struct api_match *create_build(struct api_app *app, const struct api_caller *c,
                                      const struct core_match_spec *spec,
                                      const struct rules_options *o, const struct api_clock *clock,
                                      int64_t league, bool ask, int64_t now, struct store_match *row,
                                      struct new_events *ne, struct err *e)
{
    struct api_match *m = api_match_new();
    if (!m || !rules_init(&m->replay.state, spec->game, o, e)) {
        api_match_free(m);
        err_set(e, ERR_IO, "internal", "cannot create the match");
        return NULL;
    }
    m->options = *o;
    memcpy(m->players, spec->players, sizeof m->players);
    m->created_by = c && !c->operator ? c->player : 0;
    m->created_at = now / 1000;
    m->league = league;
    m->clock = *clock;
    /* (on the reading connection: a new match's players never wait for a batch being
     * written, nor does the HTTP thread that creates it) */
    lock_take(&app->read_lock);
    uint32_t willing = 0, all = (1u << o->seats) - 1;
    bool ok = set_player_names(app, m, &willing, e);
    lock_drop(&app->read_lock);
    if (!ok && e->code == ERR_NOT_FOUND)
        err_set(e, ERR_INVALID, "unknown_player", "every entry of \"players\" must be a player id");
    int seat = c ? api_match_seat(m, c) : -1;
    m->accepted = !ask ? all : willing | (seat >= 0 ? 1u << seat : 0);
    ne->n = 0;
    if (ok && m->accepted != all) {
        /* Pending: no seed, no deal, no clock until every seat has agreed. */
        m->invitation = STORE_MATCH_PENDING;
        m->invited_until = now / 1000 + app->config.invitation_seconds;
    } else if (ok) {
        ok = tlog_seed_random(m->seed, e) &&
             settle_chance(m, &m->replay, &m->chance_events, ne, e);
        tlog_commitment(m->seed, m->commitment);
        m->clock = api_clock_after(app, m, NULL, &m->replay.state, -1, now / 1000);
    }
    m->seq = ne->n;
    *row = (struct store_match){
        .game = (char *)rules_game_name(spec->game), .seats = o->seats,
        .created_by = m->created_by, .created_at = m->created_at, .invitation = m->invitation,
        .accepted = m->accepted, .invited_until = m->invited_until,
        .move_seconds = m->clock.move_seconds, .forfeit = m->clock.forfeit,
        .reminder_seconds = m->clock.reminder_seconds, .league = league};
    json_t *opts_json = tlog_options_json(spec->game, o);
    row->options = json_dumps(opts_json, JSON_COMPACT);
    json_decref(opts_json);
    memcpy(row->players, spec->players, sizeof row->players);
    memcpy(row->seed, m->seed, sizeof row->seed);
    memcpy(row->commitment, m->commitment, sizeof row->commitment);
    summary_of(&m->replay, m->seq, now, &m->clock, row);
    row->state = api_match_snapshot(&m->replay, m->seq, m->chance_events, &row->state_len);
    if (ok && (!row->state || !row->options))
        ok = err_set(e, ERR_NOMEM, "nomem", "out of memory");
    if (!ok) {
        api_match_free(m);
        return NULL;
    }
    return m;
}

/* Free the strings of a match row made here (summary_of, create_build). */
static void row_finish(struct store_match *row)
{
    free(row->options);
    free(row->to_move);
    free(row->totals);
    free(row->result);
    free(row->state);
}

/* Everything a new match needs that is read, not made: its league (checked), its options,
 * that the caller may create it, and its clock. */
static bool create_check(struct api_app *app, const struct api_caller *c,
                         const struct core_match_spec *spec, struct store_league *lg,
                         struct rules_options *o, struct api_clock *clock, struct err *e)
{
    if (!create_league(app, spec, lg, e) || !create_options(spec, lg, o, e) ||
        !create_allowed(app, c, spec, lg, e))
        return false;
    json_t *league_clock = lg->id && lg->clock ? json_loads(lg->clock, JSON_DECODE_ANY, NULL)
                                               : NULL;
    bool ok = core_clock_parse(league_clock ? league_clock : spec->clock, spec->game, clock, e);
    json_decref(league_clock);
    return ok;
}

bool core_match_create(struct api_app *app, const struct api_caller *c,
                       const struct core_match_spec *spec, const struct core_idem *idem,
                       int64_t *id, struct core_answer *answer, struct err *e)
{
    *id = 0;
    if (answer)
        *answer = (struct core_answer){0};
    if (c && !core_match_creator(c, e))
        return false;
    struct store_league lg = {0};
    struct rules_options o;
    struct api_clock clock;
    bool ok = create_check(app, c, spec, &lg, &o, &clock, e);
    /* Who must be asked (docs/security.md "Consent"): nobody when the operator creates it,
     * or a league's organiser or its schedule (its members agreed by joining); else every
     * other seat. */
    bool ask = c && !c->operator && !(lg.id && c->player == lg.organizer);
    int64_t league = lg.id;
    store_league_finish(&lg);
    if (!ok)
        return false;
    int64_t now = api_now_ms(app);
    struct store_match row = {0};
    struct new_events ne;
    struct api_match *m = create_build(app, c, spec, &o, &clock, league, ask, now, &row, &ne, e);
    if (m) {
        /* Written by group commit with the moves (not here under db_lock: with durability
         * power its fdatasync would hold every other writer and reader). */
        struct create_write cw = {.m = m, .seat = c ? api_match_seat(m, c) : -1, .row = &row,
                                  .ne = &ne, .now = now, .idem = idem};
        ok = api_write_wait(app, create_run, &cw, e);
    }
    row_finish(&row);
    if (!m || !ok) {
        api_match_free(m);
        /* A request with the same key committed first (checked before, racing us): its
         * answer. */
        struct core_answer first = {0};
        struct err ie;
        if (answer && !core_idem_replay(app, idem, &first, &ie))
            *e = ie;
        else if (first.text)
            *answer = first;
        return first.text != NULL;
    }
    api_wake(app);
    struct api_match *placed = api_match_insert(app, m, e);
    if (!placed)
        return false;
    api_match_changed(app, placed); /* (the players' streams learn of it: http.c) */
    *id = placed->id;
    if (answer) {
        lock_take(&placed->lock);
        answer->status = 201;
        answer->text = api_match_view_text(placed, &placed->replay, placed->seq,
                                           c ? api_match_seat(placed, c) : -1, &answer->len);
        lock_drop(&placed->lock);
    }
    api_match_release(app, placed);
    return !answer || answer->text || err_set(e, ERR_NOMEM, "nomem", "out of memory");
}

/* ---- Consent: a pending match accepted, declined or expired ------------------------------- */

bool core_match_started(const struct api_match *m, struct err *e)
{
    if (m->invitation == STORE_MATCH_PENDING)
        return err_set(e, ERR_CONFLICT, "match_pending",
                       "match %lld has not started: it waits until every seat accepts "
                       "(POST /v1/matches/%lld/accept)",
                       (long long)m->id, (long long)m->id);
    if (m->invitation != STORE_MATCH_STARTED)
        return err_set(e, ERR_CONFLICT, "match_cancelled",
                       "match %lld was cancelled (%s): it never started", (long long)m->id,
                       m->invitation == STORE_MATCH_DECLINED ? "declined" : "expired");
    return true;
}

/* The consent columns of `m` as a row to write. */
static struct store_match consent_row(const struct api_match *m)
{
    struct store_match row = {.id = m->id,
                              .invitation = m->invitation,
                              .accepted = m->accepted,
                              .finished = m->invitation == STORE_MATCH_DECLINED ||
                                          m->invitation == STORE_MATCH_EXPIRED,
                              .finished_at = m->finished_at};
    memcpy(row.seed, m->seed, sizeof row.seed);
    memcpy(row.commitment, m->commitment, sizeof row.commitment);
    return row;
}

/* A change of a match's row, written by the committer: the row locked and checked against
 * the version this process holds (another process may have changed it: api_stale), then the
 * change, then the version after it (also telling the other processes). */
struct guarded {
    int64_t id, rev, seq;
    int64_t *rev_after;
};

static bool guard_begin(struct api_app *app, const struct guarded *g, struct err *e)
{
    return store_match_lock(app->store, g->id, g->rev, e);
}

static bool guard_end(struct api_app *app, const struct guarded *g, struct err *e)
{
    return store_match_changed(app->store, g->id, g->seq, g->rev_after, e);
}

struct consent_change {
    struct guarded g;
    struct store_match *row;
};

static bool consent_run(struct api_app *app, void *ctx, struct err *e)
{
    struct consent_change *cc = ctx;
    return guard_begin(app, &cc->g, e) && store_match_invitation(app->store, cc->row, e) &&
           guard_end(app, &cc->g, e);
}

/* After a change of `m` refused because another process changed it first: m reloaded
 * (m->lock held, not busy), its streams woken; e stays the refusal. */
static void resync(struct api_app *app, struct api_match *m)
{
    bool changed = false;
    struct err re;
    if (!api_match_refresh(app, m, &changed, &re))
        log_msg(LOG_LEVEL_ERROR, "match", "match %lld: reloading: %s", (long long)m->id, re.msg);
    if (changed)
        api_match_changed(app, m);
}

/* Record that the seats in `accepted` agreed to pending `m`, or cancel it (`cancel`:
 * STORE_MATCH_DECLINED or STORE_MATCH_EXPIRED; else STORE_MATCH_PENDING). m->lock held. */
static bool consent_write(struct api_app *app, struct api_match *m, uint32_t accepted,
                          int cancel, int64_t now_ms, struct err *e)
{
    assert(lock_held(&m->lock));
    struct api_match at; /* (a draft: m changes only once it is durable) */
    api_match_draft(&at, m);
    at.accepted = accepted;
    at.invitation = cancel;
    if (cancel != STORE_MATCH_PENDING)
        at.finished_at = now_ms / 1000;
    struct store_match row = consent_row(&at);
    int64_t rev = m->rev;
    struct consent_change cc = {{m->id, m->rev, m->seq, &rev}, &row};
    if (!api_write_wait(app, consent_run, &cc, e)) {
        if (api_stale(e))
            resync(app, m);
        return false;
    }
    m->rev = rev;
    m->accepted = at.accepted;
    m->invitation = at.invitation;
    m->finished_at = at.finished_at;
    api_match_changed(app, m);
    return true;
}

/* Starting a pending match: its rows, written by the committer. */
struct start_write {
    struct guarded g;
    const struct api_match *at;   /* the match as it starts */
    struct store_match *row;
    struct new_events *ne;
    int64_t now;
};

static bool start_run(struct api_app *app, void *ctx, struct err *e)
{
    struct start_write *sw = ctx;
    const struct api_match *at = sw->at;
    return guard_begin(app, &sw->g, e) && store_match_invitation(app->store, sw->row, e) &&
           store_match_update(app->store, sw->row, e) &&
           store_events(app, at->id, sw->ne, 0, sw->now, e) &&
           api_outbox_changed(app, at, at->seq, NULL, &at->replay, -1, -1, sw->now, NULL, e) &&
           guard_end(app, &sw->g, e);
}

/* Every seat agreed: the match starts exactly as a match created by the operator does
 * (the seed drawn, its commitment published, the first deal, the clock, match_started).
 * m->lock held. */
static bool start_pending(struct api_app *app, struct api_match *m, int64_t now,
                          struct err *e)
{
    assert(lock_held(&m->lock));
    struct api_match at;
    api_match_draft(&at, m);
    struct new_events ne;
    ne.n = 0;
    at.chance_events = 0;
    at.invitation = STORE_MATCH_STARTED;
    at.accepted = (1u << m->replay.state.nseats) - 1;
    if (!tlog_seed_random(at.seed, e) || !tlog_replay_copy(&at.replay, &m->replay, e))
        return false;
    tlog_commitment(at.seed, at.commitment);
    bool ok = settle_chance(&at, &at.replay, &at.chance_events, &ne, e);
    struct store_match row = consent_row(&at);
    if (ok) {
        at.seq = ne.n;
        at.clock = api_clock_after(app, &at, NULL, &at.replay.state, -1, now / 1000);
        summary_of(&at.replay, at.seq, now, &at.clock, &row);
        row.state = api_match_snapshot(&at.replay, at.seq, at.chance_events, &row.state_len);
        ok = row.state || err_set(e, ERR_NOMEM, "nomem", "out of memory");
    }
    if (ok) {
        struct start_write sw = {.g = {m->id, m->rev, at.seq, &at.rev}, .at = &at, .row = &row,
                                 .ne = &ne, .now = now};
        ok = api_write_wait(app, start_run, &sw, e);
        if (!ok && api_stale(e))
            resync(app, m);
    }
    if (ok) {
        tlog_replay_finish(&m->replay);
        m->replay = at.replay;
        api_match_to_move_noted(m);
        at.replay = (struct tlog_replay){0};
        memcpy(m->seed, at.seed, sizeof m->seed);
        memcpy(m->commitment, at.commitment, sizeof m->commitment);
        m->seq = at.seq;
        m->rev = at.rev;
        m->chance_events = at.chance_events;
        m->clock = at.clock;
        m->invitation = STORE_MATCH_STARTED;
        m->accepted = at.accepted;
        api_match_changed(app, m);
        api_wake(app);
    }
    tlog_replay_finish(&at.replay);
    row_finish(&row);
    return ok;
}

/* The caller's answer (in `seat`, -1: none) to `m` as it stands (m->lock held). */
static bool consent_decide(struct api_app *app, struct api_match *m, int seat, bool accept,
                           struct err *e)
{
    bool ok;
    if (seat < 0)
        ok = err_set(e, ERR_FORBIDDEN, "forbidden", "you hold no seat in match %lld",
                     (long long)m->id);
    else if (m->invitation == STORE_MATCH_STARTED && !accept)
        ok = err_set(e, ERR_CONFLICT, "match_started", "match %lld has started: resign instead",
                     (long long)m->id);
    else
        ok = core_match_started(m, e) || m->invitation == STORE_MATCH_PENDING;
    if (ok && m->invitation == STORE_MATCH_PENDING) {
        int64_t now = api_now_ms(app);
        uint32_t all = (1u << m->replay.state.nseats) - 1;
        uint32_t accepted = m->accepted | (1u << seat);
        if (!accept)
            ok = consent_write(app, m, m->accepted, STORE_MATCH_DECLINED, now, e);
        else if (accepted == all)
            ok = start_pending(app, m, now, e);
        else if (accepted != m->accepted)
            ok = consent_write(app, m, accepted, STORE_MATCH_PENDING, now, e);
    }
    return ok;
}

bool core_match_consent(struct api_app *app, const struct api_caller *c, int64_t id,
                        bool accept, char **view, size_t *len, struct err *e)
{
    struct api_match *m = core_caller_known(c, "answering an invitation needs the seat's token", e)
                              ? api_match_find(app, id, e)
                              : NULL;
    if (!m)
        return false;
    lock_take(&m->lock);
    int seat = api_match_seat(m, c);
    /* Another process may answer for another seat at the same time: the change of the one
     * that comes second is refused (api_stale), its copy reloaded, and it is judged again. */
    bool ok = consent_decide(app, m, seat, accept, e);
    for (int again = 0; !ok && api_stale(e) && again < 16; again++)
        ok = consent_decide(app, m, seat, accept, e);
    /* (Accepting a match that started is answered as the acceptance was: a retry.) */
    if (ok && !(*view = api_match_view_text(m, &m->replay, m->seq, seat, len)))
        ok = err_set(e, ERR_NOMEM, "nomem", "out of memory");
    lock_drop(&m->lock);
    api_match_release(app, m);
    return ok;
}

/* Cancel pending match `id` (`why`: STORE_MATCH_DECLINED or STORE_MATCH_EXPIRED), if it
 * still is and, for an expiry, its time has come. */
static bool cancel_pending(struct api_app *app, int64_t id, int why, struct err *e)
{
    struct api_match *m = api_match_find(app, id, e);
    if (!m)
        return false;
    lock_take(&m->lock);
    int64_t now = api_now_ms(app);
    bool ok = false;
    for (int again = 0; again < 16 && (again == 0 || api_stale(e)); again++) { /* (consent) */
        err_clear(e);
        ok = m->invitation == STORE_MATCH_PENDING &&
             (why != STORE_MATCH_EXPIRED || m->invited_until <= now / 1000) &&
             consent_write(app, m, m->accepted, why, now, e);
    }
    lock_drop(&m->lock);
    api_match_release(app, m);
    return ok;
}

void api_invitations_sweep(struct api_app *app)
{
    for (int batch = 0; batch < 16 && !app->stopping; batch++) {
        int64_t ids[64];
        struct err e;
        lock_take(&app->db_lock);
        int n = store_invitations_due(app->store, api_now_ms(app) / 1000, ids, 64, &e);
        lock_drop(&app->db_lock);
        int done = 0;
        for (int i = 0; i < n && !app->stopping; i++)
            done += cancel_pending(app, ids[i], STORE_MATCH_EXPIRED, &e);
        if (n < 64 || done == 0)
            break;
    }
}

/* ---- Reading ------------------------------------------------------------------------------ */

bool core_match_view(struct api_app *app, const struct api_caller *c, int64_t id, char **view,
                     size_t *len, struct err *e)
{
    struct api_match *m = api_match_find(app, id, e);
    if (!m)
        return false;
    lock_take(&m->lock);
    *view = api_match_view_text(m, &m->replay, m->seq, api_match_seat(m, c), len);
    lock_drop(&m->lock);
    api_match_release(app, m);
    return *view || err_set(e, ERR_NOMEM, "nomem", "out of memory");
}

/* Match `id`, found and started, locked: for reading its log. */
static struct api_match *find_started(struct api_app *app, int64_t id, struct err *e)
{
    struct api_match *m = api_match_find(app, id, e);
    if (!m)
        return NULL;
    lock_take(&m->lock);
    if (core_match_started(m, e))
        return m;
    lock_drop(&m->lock);
    api_match_release(app, m);
    return NULL;
}

json_t *core_match_log(struct api_app *app, const struct api_caller *c, int64_t id,
                       struct err *e)
{
    struct api_match *m = find_started(app, id, e);
    if (!m)
        return NULL;
    struct tlog *events = api_match_log_read(app, m, m->seq, e);
    json_t *log = events ? tlog_redacted_json(events, api_match_seat(m, c)) : NULL;
    lock_drop(&m->lock);
    api_match_release(app, m);
    tlog_destroy(events);
    if (events && !log)
        err_set(e, ERR_IO, "corrupt_match", "the log of match %lld does not replay",
                (long long)id);
    return log;
}

/* ---- Replay of a finished match ---------------------------------------------------------- */

/* One step of a replay: event `i` of the log and the state after it, as everybody sees it. */
static json_t *replay_step(const struct tlog_event *ev, size_t i, const struct rules_state *st)
{
    json_t *totals = json_array();
    for (int s = 0; s < st->nseats; s++)
        json_array_append_new(totals, json_integer(st->totals[s]));
    json_t *event = tlog_event_json(ev);
    json_object_set_new(event, "seq", json_integer((json_int_t)i));
    return json_pack("{s:I, s:o, s:o, s:o, s:I, s:o}", "seq", (json_int_t)i, "event", event,
                     "view", tlog_view_json(st, RULES_SEAT_ALL), "totals", totals, "hands_done",
                     (json_int_t)st->hands_done, "to_move", json_integer(rules_to_move(st)));
}

/* Every step of `log`, replayed; NULL with e when it does not replay. */
static json_t *replay_steps(const struct tlog *log, struct err *e)
{
    struct rules_state st;
    json_t *steps = json_array();
    bool ok = rules_init(&st, log->game, &log->options, e);
    for (size_t i = 0; ok && i < log->nevents; i++) {
        const struct tlog_event *ev = &log->events[i];
        if (ev->kind == TLOG_MOVE) {
            struct rules_move mv;
            ok = rules_move_parse(ev->move, ev->move_len, &mv, e) &&
                 rules_apply(&st, (int)ev->seat, &mv, e);
        } else {
            ok = rules_chance(&st, ev->kind == TLOG_DEAL ? RULES_DUE_DEAL : RULES_DUE_SHUFFLE,
                              ev->cards, ev->ncards, e);
        }
        if (ok)
            json_array_append_new(steps, replay_step(ev, i, &st));
    }
    if (!ok) {
        json_decref(steps);
        return NULL;
    }
    return steps;
}

json_t *core_match_replay(struct api_app *app, int64_t id, struct err *e)
{
    struct api_match *m = find_started(app, id, e);
    if (!m)
        return NULL;
    if (!m->replay.state.over) {
        lock_drop(&m->lock);
        api_match_release(app, m);
        err_set(e, ERR_CONFLICT, "match_running",
                "match %lld is still running: its replay opens when it is over", (long long)id);
        return NULL;
    }
    /* Over, it changes no more: the steps are built after the lock is let go. */
    json_t *head = api_match_view_of(m, &m->replay, m->seq, -1, RULES_MAX_LEGAL, RULES_MAX_LEGAL);
    struct tlog *log = api_match_log_read(app, m, m->seq, e);
    lock_drop(&m->lock);
    api_match_release(app, m);
    if (!log) {
        json_decref(head);
        return NULL;
    }
    json_t *steps = replay_steps(log, e);
    tlog_destroy(log);
    if (!steps) {
        json_decref(head);
        char why[sizeof e->msg];
        memcpy(why, e->msg, sizeof why);
        err_set(e, ERR_IO, "corrupt_match", "the log of match %lld does not replay: %s",
                (long long)id, why);
        return NULL;
    }
    json_object_set_new(head, "steps", steps);
    json_object_del(head, "legal");
    return head;
}

/* ---- The move path ------------------------------------------------------------------------ */

/* A move on its way to the disk. It is prepared under the match's lock (validated on a
 * copy of the state, its chance events dealt, the summary, the snapshot and the answer
 * written), then handed to the committer (commit.c), which writes it in one transaction
 * with the moves of other matches: the events, the summary and clock, the notifications,
 * and (with a key) the idempotent answer. Only once that is durable is it published (the
 * match's state replaced, its streams woken) and answered. Until then the match is busy:
 * the state everybody sees is the committed one, and a second move waits its turn. */
struct move_write {
    struct api_write w;
    struct api_match *m;
    /* `m` as the write sees it: its state before the move, its clock after, who watches.
     * A copy, so that the committer reads no field another thread may change. */
    struct api_match at;
    int seat;
    bool automatic;
    struct tlog_replay next;      /* the state after the move and its chance events */
    uint32_t k;                   /* chance events after it */
    int64_t seq, now;
    int64_t rev;                  /* the row's version after it (store_match_changed) */
    struct new_events ne;
    struct store_match row;
    char *answer;                 /* the mover's view after the move (or NULL) */
    size_t answer_len;
    struct core_idem idem;        /* its key (owned) or NULL; hash: request_hash */
    uint8_t request_hash[API_SHA256_BYTES];
    struct core_answer *out;      /* a request's move: where its answer goes */
    struct err *out_e;            /* or why it failed */
    struct api_async async;
    struct api_notes notes;       /* its notifications, ready to insert */
};

static void move_write_free(struct move_write *mw)
{
    if (!mw)
        return;
    tlog_replay_finish(&mw->next);
    api_notes_free(&mw->notes);
    row_finish(&mw->row);
    free(mw->answer);
    free((char *)mw->idem.key);
    free(mw);
}

/* Prepare `seat`'s move to `m` (m->lock held, the match not busy). NULL with e filled when
 * it cannot be played: ERR_ILLEGAL with the engine's tag, or no memory. */
static struct move_write *move_prepare(struct api_app *app, struct api_match *m, int seat,
                                       const struct rules_move *mv, bool automatic,
                                       const struct core_idem *idem, bool answer, struct err *e)
{
    assert(lock_held(&m->lock));
    struct move_write *mw = calloc(1, sizeof *mw);
    if (!mw) {
        err_set(e, ERR_NOMEM, "nomem", "out of memory");
        return NULL;
    }
    mw->m = m;
    mw->seat = seat;
    mw->automatic = automatic;
    mw->k = m->chance_events;
    if (!tlog_replay_copy(&mw->next, &m->replay, e) || !tlog_replay_move(&mw->next, seat, mv, e))
        goto fail;
    struct store_event *ev = new_event(&mw->ne, STORE_MOVE, e);
    ev->seat = seat;
    ev->automatic = automatic;
    rules_move_format(mv, mw->ne.text[0], sizeof mw->ne.text[0]);
    if (!settle_chance(m, &mw->next, &mw->k, &mw->ne, e))
        goto fail;
    mw->seq = m->seq + mw->ne.n;
    mw->now = api_now_ms(app);
    api_match_draft(&mw->at, m);
    /* A timed-out seat that still has something to do (it took the trick and leads) gets a
     * fresh clock like any mover, or it would time out again at once. */
    mw->at.clock = api_clock_after(app, m, &m->replay.state, &mw->next.state, seat,
                                   mw->now / 1000);
    mw->row.id = m->id;
    summary_of(&mw->next, mw->seq, mw->now, &mw->at.clock, &mw->row);
    mw->row.clock_kept = !m->replay.state.over && !mw->next.state.over &&
                         clock_same(&m->clock, &mw->at.clock); /* (m's is the row's) */
    mw->row.state = api_match_snapshot(&mw->next, mw->seq, mw->k, &mw->row.state_len);
    if (answer)
        mw->answer = api_match_view_text(&mw->at, &mw->next, mw->seq, seat, &mw->answer_len);
    /* The notifications are built here, on this thread, not in the committer's transaction. */
    if (!api_outbox_changed(app, &mw->at, mw->seq, &m->replay, &mw->next, automatic ? -1 : seat,
                            automatic ? seat : -1, mw->now, &mw->notes, e))
        goto fail;
    bool keyed = idem && idem->key;
    if (keyed) {
        mw->idem = (struct core_idem){.scope = idem->scope, .key = strdup(idem->key),
                                      .hash = mw->request_hash};
        memcpy(mw->request_hash, idem->hash, sizeof mw->request_hash);
    }
    if (!mw->row.state || (answer && !mw->answer) || (keyed && !mw->idem.key)) {
        err_set(e, ERR_NOMEM, "nomem", "out of memory");
        goto fail;
    }
    return mw;
fail:
    move_write_free(mw);
    return NULL;
}

/* The committer runs this inside its transaction (db_lock held). */
static bool move_run(struct api_app *app, struct api_write *w, struct err *e)
{
    struct move_write *mw = (struct move_write *)w;
    const struct api_match *at = &mw->at;
    struct guarded g = {at->id, at->rev, mw->seq, &mw->rev};
    return guard_begin(app, &g, e) && store_events(app, at->id, &mw->ne, at->seq, mw->now, e) &&
           store_match_update(app->store, &mw->row, e) &&
           api_outbox_write(app, &mw->notes, mw->now, e) &&
           (!at->league || !mw->next.state.over || at->replay.state.over ||
            api_league_match_finished(app, at, &mw->next, e)) &&
           idem_save(app, &mw->idem, 201, mw->answer, mw->now, e) && guard_end(app, &g, e);
}

static bool move_run_waited(struct api_app *app, void *ctx, struct err *e)
{
    return move_run(app, ctx, e);
}

static void feed_publish(struct api_app *app, struct api_match *m,
                         const struct rules_state *before, const struct new_events *ne,
                         int64_t from, int mover, const char *view, size_t view_len);
static void feed_settle(struct api_app *app, struct api_match *m);
static void feed_source_free(void *source);

/* The move is durable: it becomes the match's state (m->lock held); its events go out to
 * the event streams once, in the match's feed (the caller wakes them: api_match_changed). */
static void move_publish(struct api_app *app, struct api_match *m, struct move_write *mw)
{
    assert(lock_held(&m->lock));
    metrics_move_accepted();
    bool streams = false;
    for (int v = 0; v <= RULES_MAX_SEATS; v++)
        streams = streams || m->stream_vis[v] > 0;
    struct rules_state before;
    int64_t from = m->seq;
    if (streams) {
        feed_settle(app, m);
        before = m->replay.state;
    }
    tlog_replay_finish(&m->replay);
    m->replay = mw->next;
    mw->next = (struct tlog_replay){0};
    api_match_to_move_noted(m);
    m->seq = mw->seq;
    m->rev = mw->rev;
    m->chance_events = mw->k;
    m->clock = mw->at.clock;
    if (m->replay.state.over)
        m->finished_at = mw->now / 1000;
    if (streams) /* (the mover's answer is its visibility's state: rendered once, not twice) */
        feed_publish(app, m, &before, &mw->ne, from, mw->automatic ? -1 : mw->seat,
                     mw->answer, mw->answer_len);
}

/* A request's move, after its group commit (on the committer thread). */
static void move_done(struct api_app *app, struct api_write *w)
{
    struct move_write *mw = (struct move_write *)w;
    struct api_match *m = mw->m;
    struct core_answer *out = mw->out;
    /* Another process changed the match first: this process's copy is reloaded, and the
     * request judged again from the start against it (stale_seq, not_your_turn, ... or
     * played after the other's). */
    bool again = !w->ok && api_stale(&w->e);
    lock_take(&m->lock);
    if (w->ok) {
        move_publish(app, m, mw);
        *out = (struct core_answer){.status = 201, .text = mw->answer, .len = mw->answer_len};
        mw->answer = NULL;
    } else if (again) {
        m->busy = false;
        resync(app, m);
    } else {
        /* With a stored answer, a request with the same key committed first, racing us. */
        if (core_idem_replay(app, &mw->idem, out, mw->out_e) && !out->text)
            *mw->out_e = w->e;
        if (!out->text) {
            out->status = 0;
            metrics_move_refused(mw->out_e->tag);
        }
    }
    m->busy = false;
    pthread_cond_broadcast(&m->idle);
    struct api_waiter *waiters = m->waiters;
    m->waiters = NULL;
    lock_drop(&m->lock);
    while (waiters) { /* the requests that came while it was busy: their turn now */
        struct api_waiter *next = waiters->next;
        waiters->async.resume(waiters->async.cls, true);
        free(waiters);
        waiters = next;
    }
    mw->async.resume(mw->async.cls, again);
    /* The mover's answer first, then the streams (hundreds may watch). */
    if (w->ok)
        api_match_changed(app, m);
    api_match_release(app, m);
    move_write_free(mw);
}

/* Play `seat`'s move in `m` and wait until it is durable and published (m->lock held: the
 * clock, play by email, a player leaving a league). `reply` (or NULL) gets the seat's view.
 * An illegal move fails with ERR_ILLEGAL and the engine's tag; nothing changes then. */
static bool commit_move(struct api_app *app, struct api_match *m, int seat,
                        const struct rules_move *mv, bool automatic, char **reply,
                        size_t *reply_len, struct err *e)
{
    assert(lock_held(&m->lock));
    while (m->busy) /* a request's move is on its way: after it */
        lock_wait(&m->idle, &m->lock);
    struct move_write *mw =
        move_prepare(app, m, seat, mv, automatic, NULL, reply != NULL, e);
    if (!mw)
        return false;
    bool ok = api_write_wait(app, move_run_waited, mw, e);
    if (!ok && api_stale(e))
        resync(app, m);
    if (ok) {
        move_publish(app, m, mw);
        api_match_changed(app, m);
        if (reply) {
            *reply = mw->answer;
            *reply_len = mw->answer_len;
            mw->answer = NULL;
        }
    }
    move_write_free(mw);
    return ok;
}

/* Why the caller's move may not be played in `m` now (m->lock held, not busy): false with e.
 * The refusals come in the order they always have. */
static bool move_check(struct api_app *app, struct api_match *m, int seat, const struct core_move *in, const struct core_idem *idem,
                       struct core_answer *out, struct rules_move *mv, struct err *e)
{
    if (seat < 0)
        return err_set(e, ERR_FORBIDDEN, "forbidden", "you hold no seat in match %lld",
                       (long long)m->id);
    if (!core_idem_replay(app, idem, out, e) || out->text)
        return false; /* (a stored answer is answered by the caller) */
    if (in->unreadable) {
        *e = *in->unreadable;
        return false;
    }
    if (!core_match_started(m, e))
        return false;
    if (m->replay.state.over)
        return err_set(e, ERR_CONFLICT, "match_over", "match %lld is over", (long long)m->id);
    if (in->has_seq && in->seq != m->seq)
        return err_set(e, ERR_CONFLICT, "stale_seq", "the match is at seq %lld, not %lld",
                       (long long)m->seq, (long long)in->seq);
    if (!rules_move_parse(in->text, in->len, mv, e))
        return false;
    if (mv->verb != RULES_RESIGN && !(rules_to_move(&m->replay.state) & (1u << seat)))
        return err_set(e, ERR_CONFLICT, "not_your_turn", "seat %d has nothing to do now", seat);
    return true;
}

/* Judge the caller's move and prepare its write (move_check, move_prepare) on a copy found
 * without a read of its row (api_match_find_held): a refusal is made only on a copy that is
 * the row's, so that another process's move never makes one (not_your_turn, stale_seq, an
 * illegal card, ...). A move accepted on a stale copy is refused by its write and judged
 * again (move_done). m->lock held, not busy. NULL with e (or a stored answer in out). */
static struct move_write *move_judge(struct api_app *app, struct api_match *m, int seat,
                                     const struct core_move *in, const struct core_idem *idem,
                                     struct core_answer *out, struct err *e)
{
    for (int look = 0;; look++) {
        struct rules_move mv;
        struct move_write *mw = move_check(app, m, seat, in, idem, out, &mv, e)
                                    ? move_prepare(app, m, seat, &mv, false, idem, true, e)
                                    : NULL;
        if (mw || out->text || !app->shared || look == 1 || e->code == ERR_NOMEM)
            return mw; /* (a stored answer; or the copy is the one there is) */
        bool changed = false;
        if (!api_match_refresh(app, m, &changed, e) || !changed)
            return NULL; /* (e: the refusal, or why the row could not be read) */
        api_match_changed(app, m);
        *e = (struct err){0};
    }
}

enum core_progress core_match_move(struct api_app *app, const struct api_caller *c, int64_t id,
                                   const struct core_move *in, const struct core_idem *idem,
                                   struct core_answer *out, const struct api_async *async,
                                   struct err *e)
{
    *out = (struct core_answer){0};
    /* (on a shared database the copy in memory is judged as it is: its write checks the
     * row, and a refusal looks again at a fresh copy, move_judge) */
    struct api_match *m = core_caller_known(c, "a move needs the seat's player token", e)
                              ? api_match_find_held(app, id, e)
                              : NULL;
    if (!m) {
        metrics_move_refused(e->tag);
        return CORE_FAILED;
    }
    enum core_progress done = CORE_FAILED;
    lock_take(&m->lock);
    if (m->busy) {
        /* Its last move is not durable yet: this one is judged after it, from the start. */
        struct api_waiter *w = malloc(sizeof *w);
        if (!w) {
            err_set(e, ERR_NOMEM, "nomem", "out of memory");
            goto out;
        }
        w->async = *async;
        w->next = m->waiters;
        m->waiters = w;
        async->suspend(async->cls);
        done = CORE_SUSPENDED;
        goto out;
    }
    int seat = api_match_seat(m, c);
    struct move_write *mw = move_judge(app, m, seat, in, idem, out, e);
    if (!mw) {
        done = out->text ? CORE_DONE : CORE_FAILED;
        goto out;
    }
    /* To the committer; move_done answers. The match's reference goes with it. */
    mw->w.run = move_run;
    mw->w.done = move_done;
    mw->out = out;
    mw->out_e = e;
    mw->async = *async;
    m->busy = true;
    lock_drop(&m->lock); /* (its done takes it) */
    api_write_submit(app, &mw->w);  /* (mw may be gone already: it was written here) */
    async->suspend(async->cls);     /* unless the answer came already */
    return CORE_SUSPENDED;
out:
    if (done == CORE_FAILED)
        metrics_move_refused(e->tag);
    lock_drop(&m->lock);
    api_match_release(app, m);
    return done;
}

bool api_match_play(struct api_app *app, struct api_match *m, int seat,
                    const struct rules_move *mv, struct err *e)
{
    assert(lock_held(&m->lock));
    if (m->invitation != STORE_MATCH_STARTED)
        return err_set(e, ERR_ILLEGAL, m->invitation == STORE_MATCH_PENDING ? "match_pending"
                                                                      : "match_cancelled",
                       "match %lld has not started", (long long)m->id);
    return commit_move(app, m, seat, mv, false, NULL, NULL, e);
}

bool api_match_forfeit(struct api_app *app, int64_t id, int64_t player, struct err *e)
{
    struct api_match *m = api_match_find(app, id, e);
    if (!m)
        return false;
    lock_take(&m->lock);
    struct api_caller c = {.authenticated = true, .player = player};
    int seat = api_match_seat(m, &c);
    struct rules_move mv = {.verb = RULES_RESIGN, .card = RULES_NO_CARD};
    bool ok;
    if (m->invitation == STORE_MATCH_PENDING) /* not started: declined, not forfeited */
        ok = seat >= 0 &&
             consent_write(app, m, m->accepted, STORE_MATCH_DECLINED, api_now_ms(app), e);
    else
        ok = seat >= 0 && m->invitation == STORE_MATCH_STARTED && !m->replay.state.over &&
             commit_move(app, m, seat, &mv, false, NULL, NULL, e);
    lock_drop(&m->lock);
    api_match_release(app, m);
    return ok;
}

/* ---- The clock ---------------------------------------------------------------------------- */

/* Rewrite the match row's summary and clock. Call with m->lock and db_lock held, inside a
 * transaction or not. */
static bool save_clock(struct api_app *app, struct api_match *m, int64_t now_ms, struct err *e)
{
    assert(lock_held(&m->lock));
    assert(lock_held(&app->db_lock));
    struct store_match row = {.id = m->id};
    summary_of(&m->replay, m->seq, now_ms, &m->clock, &row);
    if (m->replay.state.over)
        row.finished_at = m->finished_at;
    bool ok = store_match_update(app->store, &row, e);
    row_finish(&row);
    return ok;
}

/* The clock's log line (log.h): what it did to which seat of `m`. Never the move a timeout
 * played (it may be a card of the seat's hand). */
static void log_clock(const struct api_match *m, const char *action, int seat)
{
    struct log_line l;
    if (!log_begin(&l, LOG_LEVEL_INFO, "clock"))
        return;
    log_str(&l, "action", action);
    log_int(&l, "match", m->id);
    log_int(&l, "seat", seat);
    log_int(&l, "player", m->players[seat]);
    log_end(&l);
}

void api_match_clock_tick(struct api_app *app, int64_t id)
{
    struct err e;
    struct api_match *m = api_match_find(app, id, &e);
    if (!m)
        return;
    lock_take(&m->lock);
    if (m->invitation != STORE_MATCH_STARTED) { /* no clock runs before a match starts */
        lock_drop(&m->lock);
        api_match_release(app, m);
        return;
    }
    /* Each timeout is a move; a bound keeps a confused clock from spinning. */
    for (int round = 0; round < 4 * RULES_MAX_SEATS; round++) {
        while (m->busy) /* a move on its way sets the clock it saw: after it */
            lock_wait(&m->idle, &m->lock);
        const struct rules_state *st = &m->replay.state;
        if (st->over || !m->clock.move_seconds)
            break;
        int64_t now_ms = api_now_ms(app), now = now_ms / 1000;
        uint32_t to_move = rules_to_move(st), remind = 0;
        int late = -1;
        for (int s = 0; s < st->nseats; s++) {
            if (!((to_move >> s) & 1))
                continue;
            int64_t d = api_seat_deadline(app, m->players[s], m->clock.turn_started,
                                          m->clock.move_seconds);
            if (d <= now) {
                if (late < 0)
                    late = s;
                continue;
            }
            /* Its reminder, once a turn, reminder_seconds before its own deadline; a seat away
             * then is reminded once it is back, if its time still runs. */
            if (m->clock.reminder_seconds && !((m->clock.reminded >> s) & 1) &&
                now >= d - m->clock.reminder_seconds &&
                !api_player_away_until(app, m->players[s], now))
                remind |= 1u << s;
        }
        if (late >= 0) {
            struct rules_move mv = {.verb = RULES_RESIGN, .card = RULES_NO_CARD};
            if (!m->clock.forfeit) {
                struct rules_move first[RULES_MAX_LEGAL];
                if (rules_legal(st, late, first, RULES_MAX_LEGAL) > 0)
                    mv = first[0];
            }
            if (!commit_move(app, m, late, &mv, true, NULL, NULL, &e)) {
                if (api_stale(&e)) /* another process moved first: look again */
                    continue;
                log_msg(LOG_LEVEL_ERROR, "clock", "match %lld: timeout of seat %d failed: %s",
                        (long long)id, late, e.msg);
                break;
            }
            metrics_clock_timeout();
            log_clock(m, m->clock.forfeit ? "timeout_forfeit" : "timeout_auto", late);
            continue;
        }
        /* Nobody is late: send the reminders due, and keep the deadline and the next visit. */
        struct api_clock saved = m->clock;
        m->clock.reminded |= remind;
        api_clock_plan(app, m, st, &m->clock, now);
        if (!remind && m->clock.deadline == saved.deadline && m->clock.wake_at == saved.wake_at)
            break;
        int64_t rev = m->rev;
        struct guarded g = {m->id, m->rev, m->seq, &rev};
        lock_take(&app->db_lock);
        bool ok = store_begin(app->store, &e) && guard_begin(app, &g, &e);
        for (int s = 0; ok && s < st->nseats; s++)
            if ((remind >> s) & 1)
                ok = api_outbox_notify(app, m, m->seq, &m->replay, s, "reminder", now_ms, NULL,
                                       &e);
        ok = ok && save_clock(app, m, now_ms, &e) && guard_end(app, &g, &e) &&
             store_commit(app->store, &e);
        if (!ok) {
            store_rollback(app->store);
            m->clock = saved;
            if (!api_stale(&e))
                log_msg(LOG_LEVEL_ERROR, "clock", "match %lld: clock: %s", (long long)id, e.msg);
        } else {
            m->rev = rev;
        }
        lock_drop(&app->db_lock);
        if (!ok && api_stale(&e)) { /* another process changed it: look again */
            resync(app, m);
            continue;
        }
        for (int s = 0; ok && s < st->nseats; s++)
            if ((remind >> s) & 1)
                log_clock(m, "reminder", s);
        if (ok && remind) {
            metrics_clock_reminders(rules_popcount(remind));
            api_wake(app);
        }
        break;
    }
    lock_drop(&m->lock);
    api_match_release(app, m);
}

void api_player_clocks_changed(struct api_app *app, int64_t player)
{
    int64_t ids[256], after = 0;
    for (;;) {
        struct err e;
        lock_take(&app->db_lock);
        int n = store_active_matches_of_player(app->store, player, after, true, ids, 256,
                                               &e);
        lock_drop(&app->db_lock);
        if (n < 0)
            log_msg(LOG_LEVEL_ERROR, "clock", "clocks of player %lld: %s", (long long)player,
                    e.msg);
        for (int i = 0; i < n; i++)
            api_match_clock_tick(app, ids[i]);
        if (n < 256)
            return;
        after = ids[n - 1];
    }
}

/* ---- The event stream --------------------------------------------------------------------- */

/* The most a message's head takes, but for its event's name. */
#define HEAD_MAX (4 + BUF_DECIMAL_MAX + 8 + 7)

/* A message's head, "id: N\nevent: E\ndata: ", written at p (room for HEAD_MAX and the
 * event's name; no printf: one per stream message, several a move): where it ends. */
static char *head_at(char *p, int64_t id, const char *event)
{
    size_t n = strlen(event);
    memcpy(p, "id: ", 4);
    p = buf_decimal_at(p + 4, id);
    memcpy(p, "\nevent: ", 8);
    memcpy(p + 8, event, n);
    p += 8 + n;
    memcpy(p, "\ndata: ", 7);
    return p + 7;
}

static void append_head(struct buf *b, int64_t id, const char *event)
{
    char *p = buf_reserve(b, HEAD_MAX + strlen(event));
    if (p)
        buf_commit(b, head_at(p, id, event));
}

/* One SSE message: its id, its event name and its data, one line of JSON. A tree that is
 * missing (a view or an event that could not be built) fails the buffer. */
static void append_message(struct buf *b, int64_t id, const char *event, json_t *data)
{
    char *text = data ? json_dumps(data, JSON_COMPACT) : NULL;
    if (!text) {
        b->failed = true;
        return;
    }
    append_head(b, id, event);
    buf_puts(b, text);
    buf_put(b, "\n\n", 2);
    free(text);
}

/* The `state` message of `seat`: its view (api_match_view_text: the bytes GET answers,
 * written once as text, no tree) at m's latest seq. Call with m->lock held. */
static void append_view(struct buf *b, int64_t id, const char *view, size_t len)
{
    append_head(b, id, "state");
    buf_put(b, view, len);
    buf_put(b, "\n\n", 2);
}

/* The state message of the view `view` (a text of its own, its length and a little more:
 * it is kept for a few commits) in *len; NULL without memory. */
static char *state_text(int64_t id, const char *view, size_t view_len, size_t *len)
{
    char *text = malloc(HEAD_MAX + 5 + view_len + 3);
    if (!text)
        return NULL;
    char *p = head_at(text, id, "state");
    memcpy(p, view, view_len);
    memcpy(p + view_len, "\n\n", 3);
    *len = (size_t)(p + view_len + 2 - text);
    return text;
}

/* The same, the view written straight into `b` (no text of its own to copy). */
static void append_state(struct buf *b, const struct api_match *m, int seat)
{
    if (m->invitation != STORE_MATCH_STARTED) {
        size_t len;
        char *view = api_match_view_text(m, &m->replay, m->seq, seat, &len);
        if (!view)
            b->failed = true;
        else
            append_view(b, m->seq - 1, view, len);
        free(view);
        return;
    }
    append_head(b, m->seq - 1, "state");
    struct jw w;
    jw_init(&w);
    w.b = *b; /* (the writer goes on from b's text: a view is one value, no comma before) */
    view_write(&w, m, &m->replay, m->seq, seat, RULES_MAX_LEGAL, RULES_MAX_LEGAL);
    if (w.depth != 0)
        w.b.failed = true;
    *b = w.b;
    buf_put(b, "\n\n", 2);
}

void api_match_stream_state(const struct api_match *m, int seat, char **out, size_t *len)
{
    assert(lock_held(&m->lock));
    struct buf b = BUF_INIT;
    append_state(&b, m, seat);
    *out = buf_finish(&b, len);
    if (!*out)
        *len = 0;
}

int64_t api_match_stream_chunk(struct api_app *app, struct api_match *m, int seat,
                               int64_t after, char **out, size_t *len)
{
    assert(lock_held(&m->lock));
    int64_t last = m->seq - 1;
    if (last <= after)
        return after;
    struct err e;
    metrics_stream_log_read();
    struct tlog *events = api_match_log_read(app, m, m->seq, &e);
    json_t *log = events ? tlog_redacted_json(events, seat) : NULL;
    tlog_destroy(events);
    if (!log) {
        /* Nothing is sent, not even the state (its events would be missing before it): the
         * stream asks again at its next wake-up. */
        if (!events)
            log_msg(LOG_LEVEL_ERROR, "stream", "match %lld: event stream: %s",
                    (long long)m->id, e.msg);
        return after;
    }
    struct buf b = BUF_INIT;
    if (*out)
        buf_put(&b, *out, *len);
    free(*out);
    bool whole = m->replay.state.over;
    size_t i;
    json_t *ev;
    json_array_foreach(json_object_get(log, "events"), i, ev) {
        int64_t seq = whole ? (int64_t)i : json_integer_value(json_object_get(ev, "seq"));
        if (seq <= after)
            continue;
        if (whole)
            json_object_set_new(ev, "seq", json_integer(seq));
        append_message(&b, seq, "event", ev);
    }
    json_decref(log);
    append_state(&b, m, seat);
    /* Without memory nothing is sent: the stream asks again at its next wake-up. */
    *out = buf_finish(&b, len);
    if (!*out)
        *len = 0;
    return *out ? last : after;
}

/* ---- The event streams' feed -------------------------------------------------------------- */

/* A visibility's index in api_match.stream_vis and api_feed.text: the seat, or the last one
 * for the spectators. */
static int vis_of(int seat)
{
    return seat >= 0 && seat < RULES_MAX_SEATS ? seat : RULES_MAX_SEATS;
}

void api_feed_release(struct api_feed *f)
{
    if (!f || atomic_fetch_sub(&f->refs, 1) != 1)
        return;
    for (int v = 0; v <= RULES_MAX_SEATS; v++)
        free(f->text[v]);
    feed_source_free(f->source);
    free(f);
}

void api_match_streams_add(struct api_match *m, int seat, int delta, bool events)
{
    assert(lock_held(&m->lock));
    m->stream_vis[vis_of(seat)] += delta;
    if (events)
        m->stream_events += delta;
    for (int v = 0; v <= RULES_MAX_SEATS; v++)
        if (m->stream_vis[v] > 0)
            return;
    while (m->feed) { /* the last stream closed */
        struct api_feed *older = m->feed->older;
        api_feed_release(m->feed);
        m->feed = older;
    }
    m->feed_len = 0;
}

static void feed_fill(struct api_app *app, struct api_match *m, struct api_feed *f, int v,
                      bool with_state);
static void feed_trim(struct api_match *m);

struct api_feed *api_match_feed_get(struct api_app *app, struct api_match *m, int seat,
                                    int64_t after, bool events)
{
    assert(lock_held(&m->lock));
    int v = vis_of(seat);
    for (struct api_feed *f = m->feed; f; f = f->older)
        if (f->after == after) {
            if (events && !f->events)
                return NULL; /* (a stream that opened after the commit: the log has them) */
            if (!f->text[v] && f->want[v] && f == m->feed && f->last == m->seq - 1)
                feed_fill(app, m, f, v, true); /* the first of its streams renders it */
            if (!f->text[v])
                return NULL;
            atomic_fetch_add(&f->refs, 1);
            return f;
        }
    return NULL;
}

/* Cards as the events store them ("QS 2C ..."); -1 if one is not a card. */
static int event_cards(const char *text, rules_card *out)
{
    int n = 0;
    while (*text && n < RULES_NCARDS) {
        size_t len = strcspn(text, " ");
        if (!rules_card_parse(text, len, &out[n++]))
            return -1;
        text += len;
        text += strspn(text, " ");
    }
    return n;
}

/* The first `len` bytes of `text` (a malloc'd text, taken) in a block of their own, to be
 * kept: a feed's texts live for up to API_FEED_KEEP_LATER commits. Not realloc: glibc
 * shrinks a block where it is, and the rest of it becomes a hole that only a smaller block
 * can take; with every commit's texts shrunk so (a state's 4 to 8 KiB to its 5 KiB, then,
 * trimmed, to its events' 200 bytes), the heap of 64 matches' feeds was more holes than
 * blocks (docs/benchmarks.md "A feed's texts copied, not shrunk": 22.3 MiB then, 18.6 now).
 * `text` itself when there is no memory for the copy. */
static char *kept_copy(char *text, size_t len)
{
    char *copy = malloc(len + 1);
    if (!copy) {
        text[len] = '\0';
        return text;
    }
    memcpy(copy, text, len);
    copy[len] = '\0';
    free(text);
    return copy;
}

/* What a feed entry's texts are made from: the state before the commit's events, and the
 * events (their bodies copied in), while some visibility's text is still to be rendered. */
struct feed_source {
    struct rules_state before;
    struct new_events ne;
    int64_t from;
    int mover;              /* the seat whose view after the commit is `view`, or -1 */
    char *events;           /* the event messages, once rendered, when every visibility's
                             * are the same (every move open, or the match over): the
                             * others' copy them (feed_render) */
    size_t events_len;
    size_t view_len;
    char view[];            /* (the mover's answer, copied) */
};

static void feed_source_free(void *source)
{
    struct feed_source *src = source;
    if (src)
        free(src->events);
    free(src);
}

/* The event messages of src's commit as `seat` sees them, appended to `out` (feed_render);
 * kept in src when every visibility's are the same. */
static void feed_events(const struct api_match *m, struct feed_source *src, int seat,
                        struct buf *out)
{
    const struct new_events *ne = &src->ne;
    int64_t from = src->from;
    struct rules_state st = src->before;
    struct rules_secrecy_info info[NEW_EVENTS_MAX];
    struct tlog_event tev[NEW_EVENTS_MAX];
    bool pending[NEW_EVENTS_MAX] = {false};
    bool whole = m->replay.state.over; /* over: the whole log is public */
    for (int i = 0; i < ne->n; i++) {
        const struct store_event *ev = &ne->ev[i];
        memset(&tev[i], 0, sizeof tev[i]);
        info[i] = (struct rules_secrecy_info){.kind = RULES_OPEN, .receiver = -1};
        if (ev->kind == STORE_MOVE) {
            struct rules_move mv;
            tev[i].kind = TLOG_MOVE;
            tev[i].seat = ev->seat;
            tev[i].automatic = ev->automatic;
            tev[i].move = (char *)ev->body;
            tev[i].move_len = strlen(ev->body);
            if (rules_move_parse(ev->body, tev[i].move_len, &mv, NULL)) {
                rules_move_secrecy(&st, ev->seat, &mv, &info[i]);
                rules_apply(&st, ev->seat, &mv, NULL);
            }
            pending[i] = info[i].kind != RULES_OPEN;
        } else {
            int n = event_cards(ev->body, tev[i].cards);
            tev[i].kind = ev->kind == STORE_DEAL ? TLOG_DEAL : TLOG_SHUFFLE;
            tev[i].ncards = (uint8_t)(n > 0 ? n : 0);
            rules_chance(&st, ev->kind == STORE_DEAL ? RULES_DUE_DEAL : RULES_DUE_SHUFFLE,
                         tev[i].cards, tev[i].ncards, NULL);
        }
        /* A secret move resolves at the first state where its seat is no longer pending. */
        uint32_t still = rules_secret_pending(&st);
        for (int k = 0; k <= i; k++)
            if (pending[k] && !((still >> ne->ev[k].seat) & 1))
                pending[k] = false;
    }
    bool alike = true; /* (every visibility's messages the same: each move open, or all) */
    for (int i = 0; i < ne->n; i++)
        if (ne->ev[i].kind == STORE_MOVE && info[i].kind != RULES_OPEN)
            alike = whole;
    size_t start = out->len;
    struct buf b = *out;
    for (int i = 0; i < ne->n; i++) {
        const struct store_event *ev = &ne->ev[i];
        if (!whole && ev->kind != STORE_MOVE)
            continue; /* (deals and shuffles are public once the match is over) */
        /* (written as text, as tlog_event_json and json_pack would give it: no tree) */
        struct jw w;
        append_head(&b, from + i, "event");
        jw_init(&w);
        w.b = b;
        jw_object_begin(&w, NULL);
        if (whole || info[i].kind == RULES_OPEN || ev->seat == seat ||
            (!pending[i] && info[i].kind == RULES_SECRET) ||
            (!pending[i] && info[i].receiver >= 0 && info[i].receiver == seat)) {
            tlog_event_members(&w, &tev[i]);
        } else if (pending[i]) {
            jw_int(&w, "seat", ev->seat);
            jw_null(&w, "move");
            jw_bool(&w, "secret", true);
        } else {
            struct rules_move mv;
            rules_move_parse(ev->body, tev[i].move_len, &mv, NULL);
            jw_int(&w, "seat", ev->seat);
            jw_string(&w, "move", rules_verb_name((enum rules_verb)mv.verb));
            jw_int(&w, "cards", rules_popcount(mv.cards));
        }
        jw_int(&w, "seq", from + i);
        jw_object_end(&w);
        b = w.b;
        buf_put(&b, "\n\n", 2);
    }
    *out = b;
    if (alike && !b.failed) { /* (kept for the other visibilities: a copy of its size) */
        src->events = malloc(b.len - start + 1);
        if (src->events) {
            memcpy(src->events, b.p + start, b.len - start);
            src->events_len = b.len - start;
        }
    }
}

/* The messages of one commit's events (src->ne: the log's events from seq src->from on,
 * after the state src->before) as `seat` sees them, then its state message: the same text
 * the log read back gives (api_match_stream_chunk, tlog_redacted_json) when these are its
 * last events. Event messages every visibility sees alike (each move open, or the match
 * over: nothing in them depends on the seat) are rendered once, kept in src, and copied for
 * the other visibilities (m->lock held: src is the match's). */
static char *feed_render(struct api_app *app, struct api_match *m, struct feed_source *src,
                         int seat, const char *view, size_t view_len, bool with_state,
                         size_t *len, size_t *events_len)
{
    struct buf b = BUF_INIT;
    if (with_state)
        buf_reserve(&b, VIEW_ROOM);
    if (src && src->events) { /* (no source: the state alone, api_feed.events) */
        buf_put(&b, src->events, src->events_len);
        metrics_stream_events_copied();
    } else if (src)
        feed_events(m, src, seat, &b);
    *events_len = b.len;
    /* (without its state: a commit with a newer one after it, whose state is stale) */
    if (with_state && view) /* (the seat's view already written: the mover's answer) */
        append_view(&b, m->seq - 1, view, view_len);
    else if (with_state)
        append_state(&b, m, seat);
    char *text = buf_finish(&b, len); /* (NULL: that visibility's streams read the log) */
    /* (kept for a few commits: its length, not the buffer's doubled capacity, 256 streams'
     * feeds are megabytes) */
    return text ? kept_copy(text, *len) : NULL;
}

/* Render entry `f`'s text for visibility `v` (m unchanged since f's commit: m->lock held).
 * Without memory it stays NULL: those streams read the log instead. */
static void feed_fill(struct api_app *app, struct api_match *m, struct api_feed *f, int v,
                      bool with_state)
{
    struct feed_source *src = f->source;
    if (!src && f->events)
        return; /* (m has changed since: settled) */
    metrics_stream_render();
    bool mover = src && v == src->mover;
    f->text[v] = feed_render(app, m, src, v < RULES_MAX_SEATS ? v : -1,
                             mover ? src->view : NULL, mover ? src->view_len : 0, with_state,
                             &f->len[v], &f->events_len[v]);
    f->want[v] = false;
}

/* Before m changes (m->lock held): the newest entry's texts that its streams have not
 * rendered yet are rendered now, while m is still the state they show: their events only,
 * for a stream sent them from now on is sent the newer commit's state after them. */
static void feed_settle(struct api_app *app, struct api_match *m)
{
    struct api_feed *f = m->feed;
    if (!f || !f->source || f->last != m->seq - 1)
        return;
    for (int v = 0; v <= RULES_MAX_SEATS && f->events; v++)
        if (f->want[v] && !f->text[v] && m->stream_vis[v] > 0)
            feed_fill(app, m, f, v, false);
    feed_source_free(f->source);
    f->source = NULL;
}

/* After a commit of `ne` (m->lock held, m its new state): an entry at the head of m's feed
 * for its messages, to be rendered once for every visibility with a stream open, by the
 * first of its streams (api_match_feed_get). Without memory the streams fall back to
 * reading the log. */
static void feed_publish(struct api_app *app, struct api_match *m,
                         const struct rules_state *before, const struct new_events *ne,
                         int64_t from, int mover, const char *view, size_t view_len)
{
    (void)app;
    if (!view)
        mover = -1, view_len = 0;
    struct api_feed *f = calloc(1, sizeof *f);
    if (!f)
        return;
    atomic_init(&f->refs, 1);
    f->after = from - 1;
    f->last = m->seq - 1;
    f->events = m->stream_events > 0;
    for (int v = 0; v <= RULES_MAX_SEATS; v++)
        f->want[v] = m->stream_vis[v] > 0;
    f->older = m->feed;
    m->feed = f;
    m->feed_len++;
    if (!f->events) {
        /* States alone: the others' are rendered from m while f is its newest entry
         * (api_match_feed_get), the mover's is its answer, copied once. */
        if (mover >= 0 && f->want[mover] &&
            (f->text[mover] = state_text(m->seq - 1, view, view_len, &f->len[mover]))) {
            metrics_stream_render();
            f->want[mover] = false;
        }
        feed_trim(m);
        return;
    }
    struct feed_source *src = malloc(sizeof *src + view_len + 1);
    if (!src) {
        feed_trim(m);
        return; /* (its streams read the log) */
    }
    src->before = *before;
    /* (the events made, not the whole array's room: 1.9 KB a commit; the bodies point into
     * the copy's own text) */
    src->ne.n = ne->n;
    for (int i = 0; i < ne->n; i++) {
        src->ne.ev[i] = ne->ev[i];
        size_t n = strlen(ne->ev[i].body) + 1;
        memcpy(src->ne.text[i], ne->ev[i].body, n < EVENT_TEXT_MAX ? n : EVENT_TEXT_MAX);
        src->ne.text[i][EVENT_TEXT_MAX - 1] = '\0';
        src->ne.ev[i].body = src->ne.text[i];
    }
    src->from = from;
    src->mover = mover;
    src->events = NULL;
    src->events_len = 0;
    src->view_len = view_len;
    if (view)
        memcpy(src->view, view, view_len);
    src->view[view_len] = '\0';
    f->source = src;
    feed_trim(m);
}

/* Entry `g` beyond the API_FEED_KEEP newest (m->lock held): only a stream woken later
 * (http.c) still wants it, and only its events, so its states go, unless a stream is
 * sending one (a reference can only be taken under m->lock, so one reference is the
 * match's). */
static void feed_trim_entry(struct api_feed *g)
{
    if (g->trimmed || atomic_load(&g->refs) != 1)
        return;
    g->trimmed = true;
    for (int v = 0; v <= RULES_MAX_SEATS; v++) {
        g->want[v] = false;
        char *t = g->text[v];
        if (!t || g->len[v] == g->events_len[v])
            continue;
        if (g->events) {
            g->text[v] = kept_copy(t, g->events_len[v]);
            g->len[v] = g->events_len[v];
        } else { /* (a state alone, stale: nothing in it for a stream woken later) */
            free(t);
            g->text[v] = NULL;
            g->len[v] = g->events_len[v] = 0;
        }
    }
}

/* Drop m's feed entries older than `g`, its `kept`-th (m->lock held; a stream sending one
 * holds its own reference). */
static void feed_cut(struct api_match *m, struct api_feed *g, int kept)
{
    struct api_feed *drop = g->older;
    g->older = NULL;
    m->feed_len = kept;
    while (drop) {
        struct api_feed *older = drop->older;
        api_feed_release(drop);
        drop = older;
    }
}

/* Keep API_FEED_KEEP entries whole, and older ones' events for the streams woken later: at
 * least API_FEED_KEEP_LATER, API_FEED_KEEP_EVENTS while spectators watch (m->lock held).
 * A commit trims the entry it made older than the whole ones; the oldest are dropped a
 * quarter of `keep` at a time, by a walk of the list that also trims an entry a stream was
 * sending when its turn came. (Walked at every commit, the list cost a cache miss an entry:
 * 16 a move, 256 on a match with spectators.) */
static void feed_trim(struct api_match *m)
{
    if (m->stream_events == 0) { /* (players' streams alone, which are sent the newest state:
                                  * nothing older is sent, no event is; docs/benchmarks.md
                                  * "States alone") */
        struct api_feed *g = m->feed;
        for (int i = 1; g && i < API_FEED_KEEP; i++)
            g = g->older;
        if (g)
            feed_cut(m, g, API_FEED_KEEP);
        return;
    }
    int keep = m->stream_vis[RULES_MAX_SEATS] > 0 ? API_FEED_KEEP_EVENTS : API_FEED_KEEP_LATER;
    struct api_feed *g = m->feed;
    for (int i = 0; g && i < API_FEED_KEEP; i++)
        g = g->older;
    if (g)
        feed_trim_entry(g);
    if (m->feed_len < keep + keep / 4)
        return;
    int kept = 1;
    for (g = m->feed; g->older; g = g->older) {
        if (kept >= API_FEED_KEEP)
            feed_trim_entry(g->older);
        if (++kept == keep) {
            feed_cut(m, g->older, keep);
            return;
        }
    }
    m->feed_len = kept; /* (counted again) */
}
