/* api-matches.c - the HTTP handlers of matches: each reads its request into the typed input
 * of one operation of the domain core (core/matches.c), calls it, and answers with what it
 * returns, a refusal through api_problem_from_err. Nothing here decides anything about a
 * match: the only refusals written here are those the body shows by itself (400, an unknown
 * game, a player listed twice).
 */
#include "handlers.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Answer with an operation's answer (JSON text, taken), or with its refusal. */
static void answer(struct api_reply *r, bool ok, int status, char *text, size_t len,
                   const struct err *e)
{
    if (!ok) {
        free(text);
        api_problem_from_err(r, e);
        return;
    }
    r->status = status;
    r->text = text;
    r->text_len = len;
}

bool api_clock_parse(json_t *v, enum rules_game_id g, struct api_clock *c, struct api_reply *r)
{
    struct err e;
    return core_clock_parse(v, g, c, &e) || api_problem_from_err(r, &e);
}

bool api_match_started(const struct api_match *m, struct api_reply *r)
{
    struct err e;
    return core_match_started(m, &e) || api_problem_from_err(r, &e);
}

/* ---- POST /v1/matches ---------------------------------------------------------------------- */

/* The body of a new match, read into `spec`: {"game", "players", "options"?, "clock"?,
 * "league"?}. ERR_MALFORMED (400) or ERR_INVALID (unknown_game, duplicate_player). */
static bool spec_parse(json_t *body, struct core_match_spec *spec, struct err *e)
{
    if (!json_is_object(body))
        return err_set(e, ERR_MALFORMED, "bad_request", "the body must be a JSON object");
    json_t *game = json_object_get(body, "game");
    json_t *players = json_object_get(body, "players");
    json_t *options = json_object_get(body, "options");
    json_t *league = json_object_get(body, "league");
    if (!game || !players)
        return err_set(e, ERR_MALFORMED, "missing_field", "\"game\" and \"players\" are required");
    if (!json_is_string(game) || !json_is_array(players) ||
        (options && !json_is_null(options) && !json_is_object(options)))
        return err_set(e, ERR_MALFORMED, "bad_request",
                       "\"game\" is a string, \"players\" an array of player ids, \"options\" an "
                       "object");
    if (!api_game_parse(game, &spec->game, e))
        return false;
    spec->nplayers = json_array_size(players);
    for (size_t i = 0; i < spec->nplayers; i++) {
        json_t *id = json_array_get(players, i);
        if (!json_is_integer(id))
            return err_set(e, ERR_MALFORMED, "bad_request",
                           "\"players\" holds player ids (integers)");
        if (i >= RULES_MAX_SEATS)
            continue;
        spec->players[i] = json_integer_value(id);
        for (size_t k = 0; k < i; k++)
            if (spec->players[k] == spec->players[i])
                return err_set(e, ERR_INVALID, "duplicate_player",
                               "player %lld is listed twice; each seat needs its own player",
                               (long long)spec->players[i]);
    }
    spec->options = options && !json_is_null(options) ? options : NULL;
    spec->clock = json_object_get(body, "clock");
    /* (A league that is no id, or 0, is one no league has: unknown_league.) */
    spec->league = !league || json_is_null(league) ? 0
                   : json_is_integer(league) && json_integer_value(league) > 0
                       ? json_integer_value(league)
                       : -1;
    return true;
}

void api_match_create(struct api_app *app, const struct api_caller *c, json_t *body,
                      const char *idem_key, const uint8_t request_hash[API_SHA256_BYTES], struct api_reply *r)
{
    struct core_idem idem = {.scope = c->operator ? 0 : c->player, .key = idem_key,
                             .hash = request_hash};
    struct core_match_spec spec = {0};
    struct core_answer a = {0};
    int64_t id;
    struct err e;
    /* Who asks, then a retry's stored answer, then the body: in the order they always came. */
    bool ok = core_match_creator(c, &e) && core_idem_replay(app, &idem, &a, &e);
    if (ok && !a.text)
        ok = spec_parse(body, &spec, &e) && core_match_create(app, c, &spec, &idem, &id, &a, &e);
    answer(r, ok, a.status, a.text, a.len, &e);
}

/* ---- Reading ------------------------------------------------------------------------------- */

void api_match_get(struct api_app *app, const struct api_caller *c, int64_t id,
                   struct api_reply *r)
{
    char *view = NULL;
    size_t len = 0;
    struct err e;
    bool ok = core_match_view(app, c, id, &view, &len, &e);
    answer(r, ok, 200, view, len, &e);
}

void api_match_log(struct api_app *app, const struct api_caller *c, int64_t id,
                   struct api_reply *r)
{
    struct err e;
    json_t *log = core_match_log(app, c, id, &e);
    if (!log) {
        api_problem_from_err(r, &e);
        return;
    }
    r->status = 200;
    r->body = log;
}

void api_match_replay(struct api_app *app, int64_t id, struct api_reply *r)
{
    struct err e;
    json_t *replay = core_match_replay(app, id, &e);
    if (!replay) {
        api_problem_from_err(r, &e);
        return;
    }
    r->status = 200;
    r->body = replay;
}

void api_match_consent(struct api_app *app, const struct api_caller *c, int64_t id, bool accept,
                       struct api_reply *r)
{
    char *view = NULL;
    size_t len = 0;
    struct err e;
    bool ok = core_match_consent(app, c, id, accept, &view, &len, &e);
    answer(r, ok, 200, view, len, &e);
}

/* ---- POST /v1/matches/{id}/moves ----------------------------------------------------------- */

/* The body of a move, {"move", "seq"?}, read into `in`; false with e (ERR_MALFORMED). */
static bool move_parse(json_t *body, struct core_move *in, struct err *e)
{
    if (!json_is_object(body))
        return err_set(e, ERR_MALFORMED, "bad_request", "the body must be a JSON object");
    json_t *move = json_object_get(body, "move");
    json_t *seq = json_object_get(body, "seq");
    if (!move)
        return err_set(e, ERR_MALFORMED, "missing_field", "\"move\" is required");
    if (!json_is_string(move) || (seq && !json_is_null(seq) && !json_is_integer(seq)))
        return err_set(e, ERR_MALFORMED, "bad_request",
                       "\"move\" is a string and \"seq\" an integer");
    in->text = json_string_value(move);
    in->len = json_string_length(move);
    in->has_seq = json_is_integer(seq);
    in->seq = in->has_seq ? json_integer_value(seq) : 0;
    return true;
}

/* A move that waits for its group commit: what the core fills before it resumes the
 * request, and the request's own resume, which finds the answer in r. Freed by the last of
 * the resume and the handler's return (either may come first). */
struct move_wait {
    struct api_reply *r;
    struct api_async request;
    struct core_answer out;
    struct err e;
    atomic_int refs;
};

static void move_wait_drop(struct move_wait *mw)
{
    if (atomic_fetch_sub(&mw->refs, 1) == 1)
        free(mw);
}

static void move_wait_suspend(void *cls)
{
    struct move_wait *mw = cls;
    mw->request.suspend(mw->request.cls);
}

static void move_wait_resume(void *cls, bool retry)
{
    struct move_wait *mw = cls;
    if (!retry)
        answer(mw->r, mw->out.status != 0, mw->out.status, mw->out.text, mw->out.len, &mw->e);
    struct api_async request = mw->request;
    move_wait_drop(mw);
    request.resume(request.cls, retry);
}

void api_match_move(struct api_app *app, const struct api_caller *c, int64_t id, json_t *body,
                    const char *idem_key, const uint8_t request_hash[API_SHA256_BYTES], struct api_reply *r,
                    const struct api_async *async)
{
    struct core_idem idem = {.scope = c->player, .key = idem_key, .hash = request_hash};
    struct core_move in = {0};
    struct err unreadable;
    if (!move_parse(body, &in, &unreadable))
        in.unreadable = &unreadable;
    struct move_wait *mw = calloc(1, sizeof *mw);
    if (!mw) {
        api_problem(r, 500, "nomem", "out of memory");
        return;
    }
    mw->r = r;
    mw->request = *async;
    atomic_init(&mw->refs, 2);
    struct api_async wait = {.suspend = move_wait_suspend, .resume = move_wait_resume,
                             .cls = mw};
    enum core_progress p = core_match_move(app, c, id, &in, &idem, &mw->out, &wait, &mw->e);
    if (p != CORE_SUSPENDED) {
        answer(r, p == CORE_DONE, mw->out.status, mw->out.text, mw->out.len, &mw->e);
        move_wait_drop(mw); /* (no resume comes) */
    }
    move_wait_drop(mw);
}

/* ---- POST /v1/matches/{id}/events/ticket, POST /v1/players/me/events/ticket (id 0) -------- */

void api_match_ticket(struct api_app *app, const struct api_caller *c, int64_t id,
                      struct api_reply *r)
{
    char ticket[API_TICKET_CHARS], url[160];
    int64_t expires_ms;
    struct err e;
    if (!core_stream_ticket_issue(app, c, id, ticket, &expires_ms, &e)) {
        api_problem_from_err(r, &e);
        return;
    }
    if (id)
        snprintf(url, sizeof url, "/v1/matches/%lld/events?ticket=%s", (long long)id, ticket);
    else
        snprintf(url, sizeof url, "/v1/players/me/events?ticket=%s", ticket);
    r->status = 201;
    r->body = json_pack("{s:s, s:i, s:s}", "ticket", ticket, "expires_in", API_TICKET_SECONDS,
                        "events", url);
    if (!r->body)
        api_problem(r, 500, "nomem", "out of memory");
}
