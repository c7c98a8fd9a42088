/* routes.c - the REST API as one table (routes_api) and the matcher over it (routes.h).
 * A request's path and method find a route, a 404 (no pattern) or a 405 with the
 * path's methods; the route says who may call, what body it takes and which handler
 * answers. Each handler below only hands the parsed request to its core.h function.
 */
#include "routes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Who may call ------------------------------------------------------------------------- */

static const struct route_auth
    anyone = {ROUTE_ANYONE, NULL, NULL, NULL},
    player = {ROUTE_PLAYER, NULL, "this needs a player's token", "this is a player's own"},
    operator = {ROUTE_OPERATOR, NULL, "this needs the operator's token",
                "only the operator does this"},
    either = {ROUTE_EITHER, NULL, "this needs a player's or the operator's token", NULL},
    creator = {ROUTE_EITHER, NULL,
               "creating a match needs a player's or the operator's token", NULL},
    mover = {ROUTE_EITHER, NULL, "a move needs the seat's player token", NULL},
    invitee = {ROUTE_EITHER, NULL, "answering an invitation needs the seat's token", NULL},
    ticket_taker = {ROUTE_PLAYER, NULL, "a stream ticket needs the seat's player token",
                    "a stream ticket is for a seat of the match"},
    player_ticket_taker = {ROUTE_PLAYER, NULL, "a stream ticket needs the player's token",
                           "a player's stream is a player's own"},
    redeliverer = {ROUTE_OPERATOR, NULL, "this needs the operator's token",
                   "only the operator redelivers"},
    mail_gateway = {ROUTE_OPERATOR, NULL, "inbound mail needs the operator's token",
                    "only the mail gateway (operator token) posts mail"},
    /* (These two have always answered 401 with the type "forbidden".) */
    figures = {ROUTE_OPERATOR, "forbidden", "the service's figures are the operator's",
               "the service's figures are the operator's"},
    clock_mover = {ROUTE_OPERATOR, "forbidden", "only the operator moves the clock",
                   "only the operator moves the clock"};

bool routes_allow(const struct route *rt, const struct api_caller *c, struct api_reply *r)
{
    const struct route_auth *a = rt->auth;
    if (a->need == ROUTE_ANYONE)
        return true;
    if (!c->authenticated)
        return api_problem(r, 401, a->unauthorized_type ? a->unauthorized_type : "unauthorized",
                           "%s", a->unauthorized);
    if ((a->need == ROUTE_PLAYER && !c->player) || (a->need == ROUTE_OPERATOR && !c->operator))
        return api_problem(r, 403, "forbidden", "%s", a->forbidden);
    return true;
}

/* ---- The handlers: the parsed request to the core ----------------------------------------- */

static void healthz(const struct route_call *k, struct api_reply *r)
{
    (void)k;
    r->status = 200;
    r->body = json_pack("{s:s}", "status", "ok");
}

/* The API's description (docs/openapi.json, built into the daemon), sent as it is written. */
static void openapi(const struct route_call *k, struct api_reply *r)
{
    (void)k;
    r->text = malloc(routes_openapi_json_len);
    if (!r->text) {
        api_problem(r, 500, "nomem", "out of memory");
        return;
    }
    memcpy(r->text, routes_openapi_json, routes_openapi_json_len);
    r->text_len = routes_openapi_json_len;
    r->status = 200;
}

static void ready(const struct route_call *k, struct api_reply *r)
{
    api_ready(k->app, r);
}

static void mail_inbound(const struct route_call *k, struct api_reply *r)
{
    const char *rcpt =
        MHD_lookup_connection_value(k->conn, MHD_HEADER_KIND, "X-Cardpost-Recipient");
    const char *cut = MHD_lookup_connection_value(k->conn, MHD_HEADER_KIND, "X-Cardpost-Truncated");
    api_mail_inbound(k->app, k->caller, k->raw ? k->raw : "", k->raw_len, rcpt,
                     cut ? strtoll(cut, NULL, 10) : 0, r);
}

static void player_create(const struct route_call *k, struct api_reply *r)
{
    api_player_create(k->app, k->body, r);
}

static void player_me(const struct route_call *k, struct api_reply *r)
{
    api_player_me(k->app, k->caller, r);
}

static void player_update(const struct route_call *k, struct api_reply *r)
{
    api_player_update(k->app, k->caller, k->body, r);
}

static void token_rotate(const struct route_call *k, struct api_reply *r)
{
    api_token_rotate(k->app, k->caller, r);
}

static void email_confirm(const struct route_call *k, struct api_reply *r)
{
    api_email_confirm(k->app, k->caller, k->body, r);
}

static void token_issue(const struct route_call *k, struct api_reply *r)
{
    api_token_issue(k->app, k->caller, k->id[0], false, r);
}

static void token_revoke(const struct route_call *k, struct api_reply *r)
{
    api_token_issue(k->app, k->caller, k->id[0], true, r);
}

static void email_confirm_by_operator(const struct route_call *k, struct api_reply *r)
{
    api_email_confirm_by_operator(k->app, k->caller, k->id[0], r);
}

static void player_deliveries(const struct route_call *k, struct api_reply *r)
{
    api_player_deliveries(k->app, k->caller, r);
}

static void player_matches(const struct route_call *k, struct api_reply *r)
{
    api_player_matches(k->app, k->caller, r);
}

static void vacation_take(const struct route_call *k, struct api_reply *r)
{
    api_player_vacation(k->app, k->caller, k->body, false, r);
}

static void vacation_end(const struct route_call *k, struct api_reply *r)
{
    api_player_vacation(k->app, k->caller, k->body, true, r);
}

static void admin_stats(const struct route_call *k, struct api_reply *r)
{
    api_admin_stats(k->app, k->caller, r);
}

static void admin_clock(const struct route_call *k, struct api_reply *r)
{
    api_admin_clock(k->app, k->caller, k->body, r);
}

static void match_create(const struct route_call *k, struct api_reply *r)
{
    api_match_create(k->app, k->caller, k->body, k->idem, k->request_hash, r);
}

static void player_leagues(const struct route_call *k, struct api_reply *r)
{
    api_player_leagues(k->app, k->caller, r);
}

static void leagues_list(const struct route_call *k, struct api_reply *r)
{
    api_leagues_list(k->app, r);
}

static void league_create(const struct route_call *k, struct api_reply *r)
{
    api_league_create(k->app, k->caller, k->body, r);
}

static void league_get(const struct route_call *k, struct api_reply *r)
{
    api_league_get(k->app, k->id[0], r);
}

static void league_standings(const struct route_call *k, struct api_reply *r)
{
    api_league_standings(k->app, k->id[0], r);
}

static void league_member_add(const struct route_call *k, struct api_reply *r)
{
    api_league_member_add(k->app, k->caller, k->id[0], k->body, r);
}

static void league_schedule(const struct route_call *k, struct api_reply *r)
{
    api_league_schedule(k->app, k->caller, k->id[0], k->body, r);
}

static void league_member_remove(const struct route_call *k, struct api_reply *r)
{
    api_league_member_remove(k->app, k->caller, k->id[0], k->id[1], r);
}

static void delivery_redeliver(const struct route_call *k, struct api_reply *r)
{
    api_delivery_redeliver(k->app, k->caller, k->id[0], r);
}

static void match_get(const struct route_call *k, struct api_reply *r)
{
    api_match_get(k->app, k->caller, k->id[0], r);
}

static void match_move(const struct route_call *k, struct api_reply *r,
                       const struct api_async *async)
{
    api_match_move(k->app, k->caller, k->id[0], k->body, k->idem, k->request_hash, r, async);
}

static void match_accept(const struct route_call *k, struct api_reply *r)
{
    api_match_consent(k->app, k->caller, k->id[0], true, r);
}

static void match_decline(const struct route_call *k, struct api_reply *r)
{
    api_match_consent(k->app, k->caller, k->id[0], false, r);
}

static void match_log(const struct route_call *k, struct api_reply *r)
{
    api_match_log(k->app, k->caller, k->id[0], r);
}

static void match_ticket(const struct route_call *k, struct api_reply *r)
{
    api_match_ticket(k->app, k->caller, k->id[0], r);
}

static void player_ticket(const struct route_call *k, struct api_reply *r)
{
    api_match_ticket(k->app, k->caller, 0, r);
}

static void match_replay(const struct route_call *k, struct api_reply *r)
{
    api_match_replay(k->app, k->id[0], r);
}

/* ---- The table ---------------------------------------------------------------------------
 *
 * A path's routes are listed together, in the order its Allow header names their methods.
 * Outside /v1/ (and for the raw body of inbound mail) a path is not the JSON API: no body is
 * parsed and its 405 says only which method to use (http.c).
 */

#define NO ROUTE_NO_BODY
#define JSON ROUTE_JSON
#define RAW ROUTE_RAW

const struct route routes_api[] = {
    {"GET", "/healthz", &anyone, NO, .reply = healthz, .no_allow = true},
    {"GET", "/readyz", &anyone, NO, .reply = ready},
    {"GET", "/metrics", &anyone, NO, .stream = http_metrics_get, .own_auth = true},
    {"GET", "/v1/openapi.json", &anyone, NO, .reply = openapi},
    {"POST", "/v1/mail/inbound", &mail_gateway, RAW, .reply = mail_inbound},
    {"POST", "/v1/players", &anyone, JSON, .reply = player_create},
    {"GET", "/v1/players/me", &player, NO, .reply = player_me},
    {"PATCH", "/v1/players/me", &player, JSON, .reply = player_update},
    {"POST", "/v1/players/me/token", &player, NO, .reply = token_rotate},
    {"POST", "/v1/players/me/email/confirm", &player, JSON, .reply = email_confirm},
    {"GET", "/v1/players/me/deliveries", &player, NO, .reply = player_deliveries},
    {"GET", "/v1/players/me/matches", &player, NO, .reply = player_matches},
    {"GET", "/v1/players/me/leagues", &player, NO, .reply = player_leagues},
    {"GET", "/v1/players/me/events", &anyone, NO, .stream = http_player_stream_open,
     .own_auth = true}, /* (a ticket in the URL stands for the token) */
    {"POST", "/v1/players/me/events/ticket", &player_ticket_taker, NO, .reply = player_ticket},
    {"POST", "/v1/players/me/vacation", &player, JSON, .reply = vacation_take},
    {"DELETE", "/v1/players/me/vacation", &player, NO, .reply = vacation_end},
    {"POST", "/v1/players/{id}/token", &operator, NO, .reply = token_issue},
    {"DELETE", "/v1/players/{id}/token", &operator, NO, .reply = token_revoke},
    {"POST", "/v1/players/{id}/email/confirm", &operator, NO, .reply = email_confirm_by_operator},
    {"GET", "/v1/admin/stats", &figures, NO, .reply = admin_stats},
    {"POST", "/v1/admin/clock", &clock_mover, JSON, .reply = admin_clock, .test_clock = true},
    {"POST", "/v1/matches", &creator, JSON, .reply = match_create},
    {"GET", "/v1/leagues", &anyone, NO, .reply = leagues_list},
    {"POST", "/v1/leagues", &either, JSON, .reply = league_create},
    {"GET", "/v1/leagues/{id}", &anyone, NO, .reply = league_get},
    {"GET", "/v1/leagues/{id}/standings", &anyone, NO, .reply = league_standings},
    {"POST", "/v1/leagues/{id}/members", &either, JSON, .reply = league_member_add},
    {"POST", "/v1/leagues/{id}/schedule", &either, JSON, .reply = league_schedule},
    {"DELETE", "/v1/leagues/{id}/members/{id}", &either, NO, .reply = league_member_remove},
    {"POST", "/v1/deliveries/{id}/redeliver", &redeliverer, NO, .reply = delivery_redeliver},
    {"GET", "/v1/matches/{id}", &anyone, NO, .reply = match_get},
    {"POST", "/v1/matches/{id}/moves", &mover, JSON, .async = match_move},
    {"POST", "/v1/matches/{id}/accept", &invitee, NO, .reply = match_accept},
    {"POST", "/v1/matches/{id}/decline", &invitee, NO, .reply = match_decline},
    {"GET", "/v1/matches/{id}/log", &anyone, NO, .reply = match_log},
    {"GET", "/v1/matches/{id}/replay", &anyone, NO, .reply = match_replay},
    {"GET", "/v1/matches/{id}/events", &anyone, NO, .stream = http_stream_open},
    {"POST", "/v1/matches/{id}/events/ticket", &ticket_taker, NO, .reply = match_ticket},
    {NULL, NULL, NULL, NO, NULL, NULL, NULL, false, false, false},
};

#undef NO
#undef JSON
#undef RAW

/* ---- The matcher -------------------------------------------------------------------------- */

/* An {id} at *p: digits, the first not 0, refused before they could overflow; *p moves past. */
static bool id_segment(const char **p, int64_t *id)
{
    const char *s = *p;
    if (*s < '1' || *s > '9')
        return false;
    int64_t v = 0;
    while (*s >= '0' && *s <= '9') {
        if (v > (INT64_MAX - 9) / 10)
            return false;
        v = v * 10 + (*s++ - '0');
    }
    *id = v;
    *p = s;
    return true;
}

bool routes_pattern_match(const char *pattern, const char *path, int64_t *id)
{
    int n = 0;
    while (*pattern) {
        /* (the first byte before the call: a strncmp a byte of every route's pattern, at
         * every request, was 2% of the daemon's time under load) */
        if (*pattern == '{' && !strncmp(pattern, "{id}", 4)) {
            if (n == ROUTES_MAX_IDS || !id_segment(&path, &id[n++]))
                return false;
            pattern += 4;
        } else if (*pattern++ != *path++) {
            return false;
        }
    }
    return *path == '\0';
}

/* Whether route rt answers `method` (case matters, RFC 9110 §9.1): GET answers HEAD too. */
static bool method_is(const struct route *rt, const char *method)
{
    return !strcmp(rt->method, method) ||
           (!strcmp(rt->method, "GET") && !strcmp(method, "HEAD"));
}

/* Add a route's method to an Allow value ("GET, HEAD, POST"). */
static void allow_add(char *allow, size_t size, const char *method)
{
    /* (appended, not printed: every request's route finding adds its path's methods) */
    const char *parts[3] = {allow[0] ? ", " : "", method, !strcmp(method, "GET") ? ", HEAD" : ""};
    size_t n = strlen(allow);
    for (int i = 0; i < 3; i++)
        for (const char *c = parts[i]; *c && n + 1 < size; c++)
            allow[n++] = *c;
    allow[n] = '\0';
}

bool routes_find(const struct route *table, const char *method, const char *path,
                 bool test_clock, struct route_found *f)
{
    memset(f, 0, sizeof *f);
    int64_t id[ROUTES_MAX_IDS] = {0};
    for (const struct route *rt = table; rt->method; rt++) {
        if ((rt->test_clock && !test_clock) ||
            (f->path ? strcmp(rt->pattern, f->path->pattern) != 0
                     : !routes_pattern_match(rt->pattern, path, id)))
            continue;
        if (!f->path) {
            f->path = rt;
            memcpy(f->id, id, sizeof id);
            f->plain = strncmp(rt->pattern, "/v1/", 4) != 0;
        }
        if (!f->route && method_is(rt, method))
            f->route = rt;
        if (rt->body == ROUTE_RAW) {
            f->raw = rt;
            f->plain = true;
        }
        if (rt->body == ROUTE_JSON && rt->auth->need == ROUTE_ANYONE)
            f->open_body = true;
        allow_add(f->allow, sizeof f->allow, rt->method);
    }
    return f->route != NULL;
}
