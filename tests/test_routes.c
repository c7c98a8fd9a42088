/* test_routes.c - the route table of cardpostd's HTTP edge (service/http/routes.h): which
 * route a method and path find, the 404s, the 405s with their Allow values, how an {id}
 * segment is read (leading zeros, overflow, signs, empty segments, trailing slashes),
 * who may call each route and what the others are told; and the suspended request's
 * retry (http/async.h) when the core asks for it before the request was suspended, and the
 * wake-ups a thread holds while it gives many answers (core.h api_wake_soon).
 * The requests themselves, over HTTP, are tests/e2e/test_errors.py and test_api.py.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "async.h"
#include "routes.h"

/* One row: a request, and what the table finds for it. `pattern` NULL: no route; then
 * `allow` NULL is a 404, else a 405 with that Allow value. */
struct row {
    const char *method, *path;
    const char *pattern;
    const char *allow;
    int64_t id0, id1;
};

static const struct row rows[] = {
    /* Every route, and HEAD wherever GET is. */
    {"GET", "/healthz", "/healthz", NULL, 0, 0},
    {"HEAD", "/healthz", "/healthz", NULL, 0, 0},
    {"GET", "/readyz", "/readyz", NULL, 0, 0},
    {"GET", "/v1/openapi.json", "/v1/openapi.json", NULL, 0, 0},
    {"HEAD", "/v1/openapi.json", "/v1/openapi.json", NULL, 0, 0},
    {"POST", "/v1/openapi.json", NULL, "GET, HEAD", 0, 0},
    {"POST", "/v1/mail/inbound", "/v1/mail/inbound", NULL, 0, 0},
    {"POST", "/v1/players", "/v1/players", NULL, 0, 0},
    {"GET", "/v1/players/me", "/v1/players/me", NULL, 0, 0},
    {"PATCH", "/v1/players/me", "/v1/players/me", NULL, 0, 0},
    {"POST", "/v1/players/me/token", "/v1/players/me/token", NULL, 0, 0},
    {"POST", "/v1/players/me/email/confirm", "/v1/players/me/email/confirm", NULL, 0, 0},
    {"GET", "/v1/players/me/deliveries", "/v1/players/me/deliveries", NULL, 0, 0},
    {"GET", "/v1/players/me/matches", "/v1/players/me/matches", NULL, 0, 0},
    {"GET", "/v1/players/me/leagues", "/v1/players/me/leagues", NULL, 0, 0},
    {"POST", "/v1/players/me/vacation", "/v1/players/me/vacation", NULL, 0, 0},
    {"DELETE", "/v1/players/me/vacation", "/v1/players/me/vacation", NULL, 0, 0},
    {"POST", "/v1/players/7/token", "/v1/players/{id}/token", NULL, 7, 0},
    {"DELETE", "/v1/players/7/token", "/v1/players/{id}/token", NULL, 7, 0},
    {"POST", "/v1/players/12/email/confirm", "/v1/players/{id}/email/confirm", NULL, 12, 0},
    {"GET", "/v1/admin/stats", "/v1/admin/stats", NULL, 0, 0},
    {"POST", "/v1/matches", "/v1/matches", NULL, 0, 0},
    {"GET", "/v1/leagues", "/v1/leagues", NULL, 0, 0},
    {"POST", "/v1/leagues", "/v1/leagues", NULL, 0, 0},
    {"GET", "/v1/leagues/3", "/v1/leagues/{id}", NULL, 3, 0},
    {"HEAD", "/v1/leagues/3/standings", "/v1/leagues/{id}/standings", NULL, 3, 0},
    {"POST", "/v1/leagues/3/members", "/v1/leagues/{id}/members", NULL, 3, 0},
    {"POST", "/v1/leagues/3/schedule", "/v1/leagues/{id}/schedule", NULL, 3, 0},
    {"DELETE", "/v1/leagues/3/members/45", "/v1/leagues/{id}/members/{id}", NULL, 3, 45},
    {"POST", "/v1/deliveries/9/redeliver", "/v1/deliveries/{id}/redeliver", NULL, 9, 0},
    {"GET", "/v1/matches/42", "/v1/matches/{id}", NULL, 42, 0},
    {"POST", "/v1/matches/42/moves", "/v1/matches/{id}/moves", NULL, 42, 0},
    {"POST", "/v1/matches/42/accept", "/v1/matches/{id}/accept", NULL, 42, 0},
    {"POST", "/v1/matches/42/decline", "/v1/matches/{id}/decline", NULL, 42, 0},
    {"GET", "/v1/matches/42/log", "/v1/matches/{id}/log", NULL, 42, 0},
    {"GET", "/v1/matches/42/replay", "/v1/matches/{id}/replay", NULL, 42, 0},
    {"GET", "/v1/matches/42/events", "/v1/matches/{id}/events", NULL, 42, 0},

    /* 405: the path is there, the method is not; Allow lists the path's methods in the
     * table's order, HEAD after GET. */
    {"POST", "/healthz", NULL, "GET, HEAD", 0, 0},
    {"POST", "/readyz", NULL, "GET, HEAD", 0, 0},
    {"GET", "/v1/mail/inbound", NULL, "POST", 0, 0},
    {"GET", "/v1/players", NULL, "POST", 0, 0},
    {"DELETE", "/v1/players", NULL, "POST", 0, 0},
    {"DELETE", "/v1/players/me", NULL, "GET, HEAD, PATCH", 0, 0},
    {"POST", "/v1/players/me", NULL, "GET, HEAD, PATCH", 0, 0},
    {"GET", "/v1/players/me/token", NULL, "POST", 0, 0},
    {"GET", "/v1/players/me/email/confirm", NULL, "POST", 0, 0},
    {"GET", "/v1/players/me/vacation", NULL, "POST, DELETE", 0, 0},
    {"PUT", "/v1/players/7/token", NULL, "POST, DELETE", 0, 0},
    {"GET", "/v1/players/7/email/confirm", NULL, "POST", 0, 0},
    {"POST", "/v1/players/me/deliveries", NULL, "GET, HEAD", 0, 0},
    {"POST", "/v1/players/me/matches", NULL, "GET, HEAD", 0, 0},
    {"POST", "/v1/admin/stats", NULL, "GET, HEAD", 0, 0},
    {"GET", "/v1/matches", NULL, "POST", 0, 0},
    {"PATCH", "/v1/matches", NULL, "POST", 0, 0},
    {"DELETE", "/v1/leagues", NULL, "GET, HEAD, POST", 0, 0},
    {"POST", "/v1/leagues/3", NULL, "GET, HEAD", 0, 0},
    {"PUT", "/v1/leagues/3/standings", NULL, "GET, HEAD", 0, 0},
    {"GET", "/v1/leagues/3/members", NULL, "POST", 0, 0},
    {"GET", "/v1/leagues/3/schedule", NULL, "POST", 0, 0},
    {"GET", "/v1/leagues/3/members/45", NULL, "DELETE", 0, 0},
    {"GET", "/v1/deliveries/9/redeliver", NULL, "POST", 0, 0},
    {"DELETE", "/v1/matches/42", NULL, "GET, HEAD", 0, 0},
    {"PUT", "/v1/matches/42", NULL, "GET, HEAD", 0, 0},
    {"POST", "/v1/matches/42", NULL, "GET, HEAD", 0, 0},
    {"GET", "/v1/matches/42/moves", NULL, "POST", 0, 0},
    {"HEAD", "/v1/matches/42/accept", NULL, "POST", 0, 0},
    {"GET", "/v1/matches/42/decline", NULL, "POST", 0, 0},
    {"POST", "/v1/matches/42/log", NULL, "GET, HEAD", 0, 0},
    {"POST", "/v1/matches/42/replay", NULL, "GET, HEAD", 0, 0},
    {"POST", "/v1/matches/42/events", NULL, "GET, HEAD", 0, 0},
    /* Methods are case-sensitive (RFC 9110 §9.1), and others are 405s. */
    {"get", "/v1/matches/42", NULL, "GET, HEAD", 0, 0},
    {"OPTIONS", "/v1/leagues", NULL, "GET, HEAD, POST", 0, 0},

    /* 404: no pattern. */
    {"GET", "/", NULL, NULL, 0, 0},
    {"GET", "/v1", NULL, NULL, 0, 0},
    {"GET", "/v1/", NULL, NULL, 0, 0},
    {"GET", "/v1/nothing", NULL, NULL, 0, 0},
    {"GET", "/healthz/x", NULL, NULL, 0, 0},
    {"GET", "/healthz/", NULL, NULL, 0, 0},
    {"GET", "/V1/matches/42", NULL, NULL, 0, 0},
    {"GET", "/v1/players/1", NULL, NULL, 0, 0},
    {"GET", "/v1/players/", NULL, NULL, 0, 0},
    {"GET", "/v1/admin", NULL, NULL, 0, 0},
    {"POST", "/v1/admin/clock", NULL, NULL, 0, 0}, /* (the test clock is off) */
    {"GET", "/v1/deliveries/9", NULL, NULL, 0, 0},
    {"GET", "/v1/matches/42/nothing", NULL, NULL, 0, 0},
    {"GET", "/v1/matches/42/moves/1", NULL, NULL, 0, 0},
    {"GET", "/v1/leagues/3/nothing", NULL, NULL, 0, 0},
    {"DELETE", "/v1/leagues/3/members/x", NULL, NULL, 0, 0},
    {"DELETE", "/v1/leagues/3/members/45/", NULL, NULL, 0, 0},
    {"GET", "/v1//matches", NULL, NULL, 0, 0},
    {"GET", "/v1/matches/", NULL, NULL, 0, 0},
    {"GET", "/v1/matches//log", NULL, NULL, 0, 0},
    /* Trailing slashes are other paths. */
    {"GET", "/v1/matches/42/", NULL, NULL, 0, 0},
    {"POST", "/v1/matches/", NULL, NULL, 0, 0},
    {"GET", "/v1/leagues/", NULL, NULL, 0, 0},
    {"GET", "/v1/leagues/3/", NULL, NULL, 0, 0},
    {"GET", "/v1/players/me/", NULL, NULL, 0, 0},

    /* {id}: a positive integer without a sign or leading zeros, a whole segment, at most
     * 9223372036854775799 (its digits refused once one more might overflow). */
    {"GET", "/v1/matches/0", NULL, NULL, 0, 0},
    {"GET", "/v1/matches/00", NULL, NULL, 0, 0},
    {"GET", "/v1/matches/042", NULL, NULL, 0, 0},
    {"GET", "/v1/matches/-1", NULL, NULL, 0, 0},
    {"GET", "/v1/matches/+1", NULL, NULL, 0, 0},
    {"GET", "/v1/matches/ 1", NULL, NULL, 0, 0},
    {"GET", "/v1/matches/1 ", NULL, NULL, 0, 0},
    {"GET", "/v1/matches/abc", NULL, NULL, 0, 0},
    {"GET", "/v1/matches/42abc", NULL, NULL, 0, 0},
    {"GET", "/v1/matches/4.2", NULL, NULL, 0, 0},
    {"GET", "/v1/matches/0x2a", NULL, NULL, 0, 0},
    {"GET", "/v1/matches/1", "/v1/matches/{id}", NULL, 1, 0},
    {"GET", "/v1/matches/9223372036854775799", "/v1/matches/{id}", NULL,
     9223372036854775799LL, 0},
    {"GET", "/v1/matches/922337203685477579", "/v1/matches/{id}", NULL,
     922337203685477579LL, 0},
    {"GET", "/v1/matches/9223372036854775800", NULL, NULL, 0, 0},
    {"GET", "/v1/matches/9223372036854775807", NULL, NULL, 0, 0}, /* INT64_MAX itself */
    {"GET", "/v1/matches/9223372036854775808", NULL, NULL, 0, 0},
    {"GET", "/v1/matches/99999999999999999999", NULL, NULL, 0, 0},
    {"GET", "/v1/matches/18446744073709551658/log", NULL, NULL, 0, 0}, /* 2^64 + 42 */
    {"DELETE", "/v1/leagues/1/members/9223372036854775799", "/v1/leagues/{id}/members/{id}",
     NULL, 1, 9223372036854775799LL},
    {"DELETE", "/v1/leagues/1/members/0", NULL, NULL, 0, 0},
    {"GET", "/v1/players/me7/token", NULL, NULL, 0, 0},
    {"POST", "/v1/players/0/token", NULL, NULL, 0, 0},
    {"GET", "/metrics", "/metrics", NULL, 0, 0},
    {"HEAD", "/metrics", "/metrics", NULL, 0, 0},
    {"POST", "/metrics", NULL, "GET, HEAD", 0, 0},
};

/* Whether the table finds what row w says. */
static bool row_holds(const struct row *w)
{
    struct route_found f;
    bool found = routes_find(routes_api, w->method, w->path, false, &f);
    if (w->pattern)
        return found && f.route && !strcmp(f.route->pattern, w->pattern) &&
               (!strcmp(f.route->method, w->method) ||
                (!strcmp(w->method, "HEAD") && !strcmp(f.route->method, "GET"))) &&
               f.id[0] == w->id0 && f.id[1] == w->id1;
    if (w->allow)
        return !found && !f.route && f.path && !strcmp(f.allow, w->allow);
    return !found && !f.route && !f.path;
}

static void test_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if (!row_holds(&rows[i]))
            fail_msg("%s %s: not %s", rows[i].method, rows[i].path,
                     rows[i].pattern ? rows[i].pattern : rows[i].allow ? rows[i].allow : "404");
}

/* Every route has exactly one handler, a known method and a pattern of whole segments;
 * no two routes share a method and a pattern, and a path's routes are listed together. */
static void test_table_well_formed(void **state)
{
    (void)state;
    int n = 0;
    for (const struct route *rt = routes_api; rt->method; rt++, n++) {
        assert_int_equal(!!rt->reply + !!rt->async + !!rt->stream, 1);
        assert_true(!strcmp(rt->method, "GET") || !strcmp(rt->method, "POST") ||
                    !strcmp(rt->method, "PATCH") || !strcmp(rt->method, "DELETE"));
        assert_true(rt->pattern[0] == '/' && !strstr(rt->pattern, "//"));
        assert_non_null(rt->auth);
        bool left = false;
        for (const struct route *o = rt + 1; o->method; o++) {
            bool same = !strcmp(o->pattern, rt->pattern);
            assert_false(same && !strcmp(o->method, rt->method));
            assert_false(same && left);
            left = left || !same;
        }
    }
    assert_int_equal(n, 39); /* (GET /v1/players/me/events, POST .../events/ticket) */
}

/* The test clock's route is there only while the test clock is on. */
static void test_test_clock_route(void **state)
{
    (void)state;
    struct route_found f;
    assert_false(routes_find(routes_api, "POST", "/v1/admin/clock", false, &f));
    assert_null(f.path);
    assert_true(routes_find(routes_api, "POST", "/v1/admin/clock", true, &f));
    assert_string_equal(f.route->pattern, "/v1/admin/clock");
    assert_false(routes_find(routes_api, "GET", "/v1/admin/clock", true, &f));
    assert_string_equal(f.allow, "POST");
}

/* What a path says before its body is read (docs/security.md "Limits"): only registration
 * takes a body without a token; only inbound mail takes a raw body (its caller checked in
 * full from the headers); the paths outside the JSON API. */
static void test_path_properties(void **state)
{
    (void)state;
    static const struct {
        const char *path;
        bool open_body, raw, plain;
    } paths[] = {
        {"/v1/players", true, false, false},
        {"/v1/players/me", false, false, false},
        {"/v1/matches", false, false, false},
        {"/v1/matches/1/moves", false, false, false},
        {"/v1/leagues", false, false, false},
        {"/v1/mail/inbound", false, true, true},
        {"/healthz", false, false, true},
        {"/readyz", false, false, true},
        {"/v1/nothing", false, false, false},
    };
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        struct route_found f;
        /* (Whatever the method: a path's properties hold for all of them.) */
        for (int m = 0; m < 2; m++) {
            routes_find(routes_api, m ? "PUT" : "POST", paths[i].path, false, &f);
            if (f.open_body != paths[i].open_body || (f.raw != NULL) != paths[i].raw ||
                f.plain != paths[i].plain)
                fail_msg("%s: open_body %d raw %d plain %d", paths[i].path, f.open_body,
                         f.raw != NULL, f.plain);
        }
    }
    struct route_found f;
    routes_find(routes_api, "POST", "/healthz", false, &f);
    assert_true(f.path->no_allow); /* /healthz's 405 has never carried Allow */
    routes_find(routes_api, "POST", "/readyz", false, &f);
    assert_false(f.path->no_allow);
}

/* Who may call: each refusal as the route's handler words it (status, code, detail). */
struct refusal {
    const char *method, *path;
    int caller;                   /* 0 nobody, 1 a player, 2 the operator */
    int status;                   /* 0: allowed */
    const char *code, *detail;
};

static const struct refusal refusals[] = {
    {"GET", "/healthz", 0, 0, NULL, NULL},
    {"GET", "/v1/openapi.json", 0, 0, NULL, NULL},
    {"GET", "/v1/matches/1", 0, 0, NULL, NULL},
    {"GET", "/v1/matches/1/events", 0, 0, NULL, NULL},
    {"GET", "/v1/leagues/1/standings", 0, 0, NULL, NULL},
    {"POST", "/v1/players", 0, 0, NULL, NULL},
    {"GET", "/v1/players/me", 0, 401, "unauthorized", "this needs a player's token"},
    {"GET", "/v1/players/me", 2, 403, "forbidden", "this is a player's own"},
    {"GET", "/v1/players/me", 1, 0, NULL, NULL},
    {"DELETE", "/v1/players/me/vacation", 2, 403, "forbidden", "this is a player's own"},
    {"POST", "/v1/players/1/token", 0, 401, "unauthorized", "this needs the operator's token"},
    {"DELETE", "/v1/players/1/token", 1, 403, "forbidden", "only the operator does this"},
    {"POST", "/v1/players/1/email/confirm", 2, 0, NULL, NULL},
    {"GET", "/v1/admin/stats", 0, 401, "forbidden", "the service's figures are the operator's"},
    {"GET", "/v1/admin/stats", 1, 403, "forbidden", "the service's figures are the operator's"},
    {"POST", "/v1/deliveries/1/redeliver", 0, 401, "unauthorized",
     "this needs the operator's token"},
    {"POST", "/v1/deliveries/1/redeliver", 1, 403, "forbidden", "only the operator redelivers"},
    {"POST", "/v1/mail/inbound", 0, 401, "unauthorized",
     "inbound mail needs the operator's token"},
    {"POST", "/v1/mail/inbound", 1, 403, "forbidden",
     "only the mail gateway (operator token) posts mail"},
    {"POST", "/v1/mail/inbound", 2, 0, NULL, NULL},
    {"POST", "/v1/matches", 0, 401, "unauthorized",
     "creating a match needs a player's or the operator's token"},
    {"POST", "/v1/matches", 2, 0, NULL, NULL},
    {"POST", "/v1/matches/1/moves", 0, 401, "unauthorized",
     "a move needs the seat's player token"},
    {"POST", "/v1/matches/1/moves", 2, 0, NULL, NULL}, /* (the seat is the handler's check) */
    {"POST", "/v1/matches/1/accept", 0, 401, "unauthorized",
     "answering an invitation needs the seat's token"},
    {"POST", "/v1/leagues", 0, 401, "unauthorized",
     "this needs a player's or the operator's token"},
    {"DELETE", "/v1/leagues/1/members/2", 1, 0, NULL, NULL},
};

static void test_who_may_call(void **state)
{
    (void)state;
    const struct api_caller callers[3] = {{0}, {true, false, 7}, {true, true, 0}};
    for (size_t i = 0; i < sizeof refusals / sizeof refusals[0]; i++) {
        const struct refusal *w = &refusals[i];
        struct route_found f;
        assert_true(routes_find(routes_api, w->method, w->path, false, &f));
        struct api_reply r = {0};
        bool ok = routes_allow(f.route, &callers[w->caller], &r);
        const char *code = json_string_value(json_object_get(r.body, "code"));
        const char *detail = json_string_value(json_object_get(r.body, "detail"));
        if (ok != (w->status == 0) ||
            (!ok && (r.status != w->status || !r.problem || !code || strcmp(code, w->code) ||
                     !detail || strcmp(detail, w->detail))))
            fail_msg("%s %s, caller %d: %d %s %s", w->method, w->path, w->caller, r.status,
                     code ? code : "-", detail ? detail : "-");
        json_decref(r.body);
    }
}

/* The pages' patterns go through the same matcher (http.c page_for). */
static void test_pattern_match(void **state)
{
    (void)state;
    int64_t id[ROUTES_MAX_IDS] = {0};
    assert_true(routes_pattern_match("/leagues/{id}", "/leagues/5", id));
    assert_true(id[0] == 5);
    assert_false(routes_pattern_match("/leagues/{id}", "/leagues/abc", id));
    assert_false(routes_pattern_match("/leagues/{id}", "/leagues/5/", id));
    assert_false(routes_pattern_match("/leagues/{id}", "/leagues/", id));
    assert_false(routes_pattern_match("/matches/{id}", "/matches/0", id));
    assert_true(routes_pattern_match("/a/{id}/b/{id}", "/a/1/b/2", id));
    assert_true(id[0] == 1 && id[1] == 2);
    assert_false(routes_pattern_match("/a/{id}/{id}/{id}", "/a/1/2/3", id)); /* too many */
    assert_false(routes_pattern_match("/a", "/", id));
    assert_false(routes_pattern_match("/", "/a", id));
}

/* ---- The suspended request (async.h) ------------------------------------------------------
 * The paths that never suspend the connection (so need no libmicrohttpd connection): an
 * answer at once; an answer that came before the handler asked to be suspended; and a retry
 * asked before that, which calls the handler again with the same request. */

static int calls;

static void answer_at_once(const struct route_call *k, struct api_reply *r,
                           const struct api_async *async)
{
    (void)k, (void)async;
    calls++;
    api_problem(r, 409, "stale_seq", "at once");
}

static void answer_before_suspend(const struct route_call *k, struct api_reply *r,
                                  const struct api_async *async)
{
    (void)k;
    calls++;
    r->status = 201;
    r->body = json_pack("{s:i}", "call", calls);
    async->resume(async->cls, false);
    async->suspend(async->cls); /* (nothing: the answer came first) */
}

static void retry_then_answer(const struct route_call *k, struct api_reply *r,
                              const struct api_async *async)
{
    assert_true(k->id[0] == 42);
    if (calls < 2) {
        calls++;
        assert_null(r->body); /* (each call starts with an empty reply) */
        r->body = json_pack("{s:s}", "left", "over");
        json_decref(r->body);
        r->body = NULL;
        async->resume(async->cls, true); /* again, before it is suspended */
        async->suspend(async->cls);
        return;
    }
    answer_before_suspend(k, r, async);
}

static void test_async_without_suspending(void **state)
{
    (void)state;
    struct route_call k = {.id = {42}};
    struct http_async a;

    http_async_init(&a, NULL);
    calls = 0;
    assert_int_equal(http_async_call(&a, answer_at_once, &k), HTTP_ASYNC_ANSWER);
    assert_int_equal(calls, 1);
    assert_int_equal(a.reply.status, 409);
    assert_int_equal(http_async_resumed(&a), HTTP_ASYNC_NOTHING);
    http_async_finish(&a);

    http_async_init(&a, NULL);
    calls = 0;
    assert_int_equal(http_async_call(&a, answer_before_suspend, &k), HTTP_ASYNC_ANSWER);
    assert_int_equal(a.reply.status, 201);
    assert_int_equal(http_async_resumed(&a), HTTP_ASYNC_NOTHING); /* (taken once) */
    http_async_finish(&a);

    http_async_init(&a, NULL);
    calls = 0;
    assert_int_equal(http_async_call(&a, retry_then_answer, &k), HTTP_ASYNC_ANSWER);
    assert_int_equal(calls, 3);
    assert_int_equal(a.reply.status, 201);
    assert_int_equal(json_integer_value(json_object_get(a.reply.body, "call")), 3);
    assert_int_equal(http_async_resumed(&a), HTTP_ASYNC_NOTHING);
    http_async_finish(&a);
    http_async_finish(NULL);
}

/* ---- Wake-ups held (core.h api_wake_soon): what the committer's batch of answers uses -- */

static int woken[8], nwoken;

static void wake_note(void *cls)
{
    woken[nwoken++ % 8] = (int)(intptr_t)cls;
}

static void test_wakes_held(void **state)
{
    (void)state;
    nwoken = 0;
    api_wake_soon(wake_note, (void *)1); /* (nobody holds them: at once) */
    assert_int_equal(nwoken, 1);
    assert_int_equal(woken[0], 1);

    nwoken = 0;
    api_wakes_hold();
    api_wake_soon(wake_note, (void *)2);
    api_wake_soon(wake_note, (void *)3);
    api_wake_soon(wake_note, (void *)2); /* (once for the same cls) */
    assert_int_equal(nwoken, 0);
    api_wakes_release(); /* in the order they came */
    assert_int_equal(nwoken, 2);
    assert_int_equal(woken[0], 2);
    assert_int_equal(woken[1], 3);
    api_wakes_release(); /* (nothing left) */
    assert_int_equal(nwoken, 2);
    api_wake_soon(wake_note, (void *)4); /* (released: at once again) */
    assert_int_equal(nwoken, 3);

    /* Past the room for them, at once: none is ever lost. */
    nwoken = 0;
    api_wakes_hold();
    for (intptr_t i = 1; i <= API_WAKES_HELD + 44; i++)
        api_wake_soon(wake_note, (void *)(100 + i));
    assert_int_equal(nwoken, 44);
    api_wakes_release();
    assert_int_equal(nwoken, API_WAKES_HELD + 44);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_table_well_formed),
        cmocka_unit_test(test_test_clock_route),
        cmocka_unit_test(test_path_properties),
        cmocka_unit_test(test_who_may_call),
        cmocka_unit_test(test_pattern_match),
        cmocka_unit_test(test_async_without_suspending),
        cmocka_unit_test(test_wakes_held),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
