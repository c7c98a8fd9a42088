/* test_openapi.c - the API's description (docs/openapi.json, as built into the daemon) and
 * the route table (service/http/routes.c) say the same: every route of the table is an
 * operation of the document and every operation of the document a route of the table; an
 * operation open to anyone asks for no token and the others for one; a route that takes a
 * body documents it; a path's {id} segments are integer parameters. The answers themselves
 * are checked against the document by every end-to-end test (tests/e2e/apidoc.py).
 */
#include <ctype.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>
#include <jansson.h>

#include "routes.h"

static json_t *doc;

static int setup(void **state)
{
    (void)state;
    json_error_t je;
    doc = json_loadb(routes_openapi_json, routes_openapi_json_len, 0, &je);
    if (!doc)
        fprintf(stderr, "docs/openapi.json: %s at line %d\n", je.text, je.line);
    return doc ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    json_decref(doc);
    return 0;
}

/* A document path as the table writes it: every {name} segment an {id}. */
static void as_pattern(const char *path, char *out, size_t size)
{
    size_t n = 0;
    while (*path && n + 5 < size) {
        if (*path == '{') {
            memcpy(out + n, "{id}", 4);
            n += 4;
            path = strchr(path, '}') + 1;
        } else {
            out[n++] = *path++;
        }
    }
    out[n] = '\0';
}

/* The document's operation for a route: its path item's member named by the lower-case
 * method, or NULL. */
static json_t *operation(const char *method, const char *pattern)
{
    const char *path;
    json_t *item;
    json_object_foreach(json_object_get(doc, "paths"), path, item) {
        char p[256];
        as_pattern(path, p, sizeof p);
        if (strcmp(p, pattern))
            continue;
        char m[16];
        size_t i;
        for (i = 0; method[i] && i + 1 < sizeof m; i++)
            m[i] = (char)tolower((unsigned char)method[i]);
        m[i] = '\0';
        return json_object_get(item, m);
    }
    return NULL;
}

static const struct route *route(const char *method, const char *pattern)
{
    for (const struct route *rt = routes_api; rt->method; rt++)
        if (!strcasecmp(rt->method, method) && !strcmp(rt->pattern, pattern))
            return rt;
    return NULL;
}

static void test_every_route_is_documented(void **state)
{
    (void)state;
    for (const struct route *rt = routes_api; rt->method; rt++)
        if (!operation(rt->method, rt->pattern))
            fail_msg("%s %s: not in docs/openapi.json", rt->method, rt->pattern);
}

static void test_every_operation_is_a_route(void **state)
{
    (void)state;
    static const char *const methods[] = {"get", "put", "post", "delete", "options", "head",
                                          "patch", "trace"};
    const char *path;
    json_t *item;
    int n = 0;
    json_object_foreach(json_object_get(doc, "paths"), path, item) {
        char p[256];
        as_pattern(path, p, sizeof p);
        for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++) {
            if (!json_object_get(item, methods[i]))
                continue;
            n++;
            if (!route(methods[i], p))
                fail_msg("%s %s: in docs/openapi.json, not in routes.c", methods[i], path);
        }
    }
    assert_true(n > 0);
}

/* Whether an operation may be called without a token: its security is [] or lists an
 * empty requirement {} (a token optional). */
static bool token_optional(json_t *op)
{
    json_t *sec = json_object_get(op, "security");
    if (!sec)
        sec = json_object_get(doc, "security");
    if (!sec || !json_array_size(sec))
        return true;
    size_t i;
    json_t *req;
    json_array_foreach(sec, i, req) {
        if (!json_object_size(req))
            return true;
    }
    return false;
}

static void test_auth_and_bodies_agree(void **state)
{
    (void)state;
    for (const struct route *rt = routes_api; rt->method; rt++) {
        json_t *op = operation(rt->method, rt->pattern);
        assert_non_null(op);
        /* (A route that checks its caller itself answers 401 and 403 like the others.) */
        bool optional = rt->auth->need == ROUTE_ANYONE && !rt->own_auth;
        if (token_optional(op) != optional)
            fail_msg("%s %s: the document's security says a token is %s", rt->method,
                     rt->pattern, token_optional(op) ? "optional" : "needed");
        if (!json_object_get(op, "requestBody") != (rt->body == ROUTE_NO_BODY))
            fail_msg("%s %s: a request body %s documented", rt->method, rt->pattern,
                     rt->body == ROUTE_NO_BODY ? "is" : "is not");
        if (!optional && !json_object_get(json_object_get(op, "responses"), "401"))
            fail_msg("%s %s: its 401 is not documented", rt->method, rt->pattern);
        if (strstr(rt->pattern, "{id}") &&
            !json_object_get(json_object_get(op, "responses"), "404"))
            fail_msg("%s %s: its 404 is not documented", rt->method, rt->pattern);
    }
}

/* Every operation has an operationId, unique in the document (client generators name their
 * functions after it). */
static void test_operation_ids(void **state)
{
    (void)state;
    json_t *seen = json_object();
    const char *path, *method;
    json_t *item, *op;
    json_object_foreach(json_object_get(doc, "paths"), path, item) {
        json_object_foreach(item, method, op) {
            if (!json_is_object(op) || !json_object_get(op, "responses"))
                continue;
            const char *id = json_string_value(json_object_get(op, "operationId"));
            if (!id || json_object_get(seen, id))
                fail_msg("%s %s: no operationId, or one used twice", method, path);
            json_object_set_new(seen, id, json_true());
        }
    }
    json_decref(seen);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_route_is_documented),
        cmocka_unit_test(test_every_operation_is_a_route),
        cmocka_unit_test(test_auth_and_bodies_agree),
        cmocka_unit_test(test_operation_ids),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
