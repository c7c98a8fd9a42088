/* test_cache.c - the match cache (service/core/cache.c) in process: a real api_app over a
 * SQLite file in a temp dir with room for two matches in memory, its HTTP edge on a
 * loopback port (matches are made and played through it, as clients do), and the cache's
 * own calls. Beyond config.match_cache the least recently used matches that nobody
 * references are evicted, a referenced one never; an evicted match comes back in the very
 * state it left (seq, replayed state, hands, chance events, clock), from its snapshot or,
 * without one, from its events; threads asking at once for a match not in memory share
 * one load. Debug builds check the lock order throughout (base/lock.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <curl/curl.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "config.h"
#include "core.h"
#include "handlers.h"
#include "http.h"

#define OPERATOR "cache-test-operator-token-cache-test-operator"
#define CACHE 2

static struct {
    char dir[64];
    struct api_app *app;
    struct http_server *srv;
    int port;
    int64_t players[4];
    char tokens[4][128];
} T;

/* ---- Talking to it over HTTP --------------------------------------------------------------- */

/* `method` `path` with `body` (or NULL) as `token` (or NULL): the answer's JSON, and its
 * status in *status. */
static json_t *call(const char *method, const char *path, const char *token, json_t *body,
                    long *status)
{
    CURL *c = curl_easy_init();
    assert_non_null(c);
    char url[256], auth[200];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", T.port, path);
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    if (token) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
        h = curl_slist_append(h, auth);
    }
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    struct buf answer = BUF_INIT;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    if (text)
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, text);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, buf_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &answer);
    assert_int_equal(curl_easy_perform(c), CURLE_OK);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
    size_t len;
    char *got = buf_finish(&answer, &len);
    assert_non_null(got);
    json_t *v = json_loadb(got, len, 0, NULL);
    free(got);
    free(text);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    return v;
}

/* A Hearts match of the four players, made by the operator (nobody is asked): its id. */
static int64_t hearts_match(void)
{
    json_t *body = json_pack("{s:s, s:[I,I,I,I]}", "game", "hearts", "players",
                             (json_int_t)T.players[0], (json_int_t)T.players[1],
                             (json_int_t)T.players[2], (json_int_t)T.players[3]);
    long status;
    json_t *v = call("POST", "/v1/matches", OPERATOR, body, &status);
    json_decref(body);
    assert_int_equal(status, 201);
    int64_t id = json_integer_value(json_object_get(v, "id"));
    json_decref(v);
    assert_true(id > 0);
    return id;
}

/* Play `n` moves of match `id`: each time the first legal move of the first seat to move. */
static void play(int64_t id, int n)
{
    char path[64];
    snprintf(path, sizeof path, "/v1/matches/%lld", (long long)id);
    for (int i = 0; i < n; i++) {
        bool moved = false;
        for (int s = 0; s < 4 && !moved; s++) {
            long status;
            json_t *v = call("GET", path, T.tokens[s], NULL, &status);
            assert_int_equal(status, 200);
            json_t *legal = json_object_get(v, "legal");
            if (json_array_size(legal)) {
                json_t *mv = json_pack("{s:O, s:O}", "move", json_array_get(legal, 0), "seq",
                                       json_object_get(v, "seq"));
                char moves[80];
                snprintf(moves, sizeof moves, "%s/moves", path);
                json_decref(call("POST", moves, T.tokens[s], mv, &status));
                json_decref(mv);
                assert_int_equal(status, 201);
                moved = true;
            }
            json_decref(v);
        }
        assert_true(moved);
    }
}

/* ---- Looking inside the cache -------------------------------------------------------------- */

/* Whether match `id` is in memory, and its references. */
static bool in_memory(int64_t id, int *refs)
{
    bool found = false;
    lock_take(&T.app->table_lock);
    for (struct api_match *m = T.app->cache.newest; m; m = m->older)
        if (m->id == id) {
            found = true;
            if (refs)
                *refs = m->refs;
        }
    lock_drop(&T.app->table_lock);
    return found;
}

static size_t in_memory_count(void)
{
    lock_take(&T.app->table_lock);
    size_t n = T.app->cache.count;
    lock_drop(&T.app->table_lock);
    return n;
}

static struct api_match *find(int64_t id)
{
    struct err e;
    struct api_match *m = api_match_find(T.app, id, &e);
    assert_non_null(m);
    return m;
}

/* Use match `id` once (a request's find and release). */
static void touch(int64_t id)
{
    api_match_release(T.app, find(id));
}

/* What a match in memory is, to compare before and after a reload. */
struct seen {
    int64_t seq;
    uint32_t chance_events;
    struct rules_state state;
    size_t nhands;
    int32_t hands[64][RULES_MAX_SEATS];
    struct api_clock clock;
    int64_t players[RULES_MAX_SEATS];
};

static void look(int64_t id, struct seen *s)
{
    struct api_match *m = find(id);
    lock_take(&m->lock);
    memset(s, 0, sizeof *s);
    s->seq = m->seq;
    s->chance_events = m->chance_events;
    s->state = m->replay.state;
    s->nhands = m->replay.nhands;
    assert_true(s->nhands <= 64);
    for (size_t i = 0; i < s->nhands; i++)
        memcpy(s->hands[i], m->replay.hands[i], sizeof s->hands[i]);
    s->clock = m->clock;
    memcpy(s->players, m->players, sizeof s->players);
    lock_drop(&m->lock);
    api_match_release(T.app, m);
}

static void assert_same(const struct seen *a, const struct seen *b)
{
    assert_int_equal(a->seq, b->seq);
    assert_int_equal(a->chance_events, b->chance_events);
    assert_memory_equal(&a->state, &b->state, sizeof a->state);
    assert_int_equal(a->nhands, b->nhands);
    assert_memory_equal(a->hands, b->hands, sizeof a->hands);
    assert_memory_equal(&a->clock, &b->clock, sizeof a->clock);
    assert_memory_equal(a->players, b->players, sizeof a->players);
}

/* Push match `id` out of memory by using CACHE others after it. */
static void evict(int64_t id, const int64_t *others)
{
    for (int i = 0; i < CACHE; i++)
        touch(others[i]);
    assert_false(in_memory(id, NULL));
}

/* ---- Setting up ---------------------------------------------------------------------------- */

static int setup(void **state)
{
    (void)state;
    snprintf(T.dir, sizeof T.dir, "/tmp/cardpost-test-cache-XXXXXX");
    assert_non_null(mkdtemp(T.dir));
    struct config c;
    config_defaults(&c);
    snprintf(c.db, sizeof c.db, "%s/cache.db", T.dir);
    snprintf(c.operator_token, sizeof c.operator_token, "%s", OPERATOR);
    c.durable_power = false; /* durability = crash: no fdatasync per move */
    c.match_cache = CACHE;
    c.http_threads = 2;
    c.rate_per_address = c.rate_per_token = 0;
    c.max_connections_per_address = c.max_streams_per_address = c.max_streams = 0;
    struct err e;
    T.app = api_app_create(&c, &e);
    if (!T.app)
        fail_msg("api_app_create: %s", e.msg);
    T.srv = http_start(T.app, "127.0.0.1:0", &e);
    if (!T.srv)
        fail_msg("http_start: %s", e.msg);
    T.port = http_port(T.srv);
    for (int i = 0; i < 4; i++) {
        char name[32];
        snprintf(name, sizeof name, "cache%d", i);
        json_t *body = json_pack("{s:s}", "name", name);
        long status;
        json_t *p = call("POST", "/v1/players", NULL, body, &status);
        json_decref(body);
        assert_int_equal(status, 201);
        T.players[i] = json_integer_value(json_object_get(p, "id"));
        snprintf(T.tokens[i], sizeof T.tokens[i], "%s",
                 json_string_value(json_object_get(p, "token")));
        json_decref(p);
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    http_stop(T.srv);
    api_app_destroy(T.app);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", T.dir);
    if (system(cmd) != 0)
        fprintf(stderr, "test_cache: could not remove %s\n", T.dir);
    return 0;
}

/* ---- The tests ----------------------------------------------------------------------------- */

/* Beyond CACHE matches the least recently used unreferenced ones go, in that order. */
static void test_evicts_least_recently_used(void **state)
{
    (void)state;
    int64_t id[4];
    for (int i = 0; i < 4; i++)
        id[i] = hearts_match();
    assert_int_equal(in_memory_count(), CACHE);
    assert_true(in_memory(id[3], NULL) && in_memory(id[2], NULL));
    assert_false(in_memory(id[0], NULL) || in_memory(id[1], NULL));
    /* Used again, id[2] is the newest: id[3] is the one to go when id[0] comes back. */
    touch(id[2]);
    touch(id[0]);
    assert_int_equal(in_memory_count(), CACHE);
    assert_true(in_memory(id[0], NULL) && in_memory(id[2], NULL));
    assert_false(in_memory(id[3], NULL));
}

/* A referenced match stays however old it gets; released, it is the next to go. */
static void test_never_evicts_referenced(void **state)
{
    (void)state;
    int64_t held = hearts_match(), other[3];
    for (int i = 0; i < 3; i++)
        other[i] = hearts_match();
    struct api_match *m = find(held);
    for (int round = 0; round < 3; round++)
        for (int i = 0; i < 3; i++) {
            touch(other[i]);
            int refs = 0;
            assert_true(in_memory(held, &refs));
            assert_int_equal(refs, 1);
            assert_true(in_memory_count() <= CACHE + 1);
        }
    /* Still the same object, and usable. */
    lock_take(&m->lock);
    assert_int_equal(m->id, held);
    lock_drop(&m->lock);
    api_match_release(T.app, m);
    assert_int_equal(in_memory_count(), CACHE); /* it and the newest: room for both */
    assert_true(in_memory(held, NULL) && in_memory(other[2], NULL));
    touch(other[0]);
    assert_int_equal(in_memory_count(), CACHE);
    assert_false(in_memory(held, NULL)); /* the least recently used went */
    assert_true(in_memory(other[2], NULL));
}

/* Evicted after some moves, a match comes back as it was: from its snapshot, and from its
 * events when the snapshot is gone. */
static void test_reload_same_state(void **state)
{
    (void)state;
    int64_t id = hearts_match(), others[CACHE];
    for (int i = 0; i < CACHE; i++)
        others[i] = hearts_match();
    play(id, 23); /* the passes, then a few tricks */
    struct seen before, after;
    look(id, &before);
    assert_true(before.seq > 23);

    evict(id, others);
    look(id, &after); /* loaded from the snapshot (debug builds: checked against the events) */
    assert_same(&before, &after);

    /* Without its snapshot the events are replayed to the same state. */
    evict(id, others);
    sqlite3 *db;
    char sql[128];
    assert_int_equal(sqlite3_open(T.app->config.db, &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    snprintf(sql, sizeof sql, "UPDATE matches SET state = NULL WHERE id = %lld", (long long)id);
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_changes(db), 1);
    sqlite3_close(db);
    look(id, &after);
    assert_same(&before, &after);

    /* And it plays on from there. */
    play(id, 4);
    look(id, &after);
    assert_true(after.seq >= before.seq + 4);
}

struct finder {
    pthread_barrier_t *start;
    int64_t id;
    struct api_match *got;
};

static void *find_at_once(void *arg)
{
    struct finder *f = arg;
    pthread_barrier_wait(f->start);
    struct err e;
    f->got = api_match_find(T.app, f->id, &e);
    return NULL;
}

/* Threads asking at once for a match not in memory get the one object one load made. */
static void test_concurrent_finds_load_once(void **state)
{
    (void)state;
    enum { THREADS = 8 };
    int64_t id = hearts_match(), others[CACHE];
    for (int i = 0; i < CACHE; i++)
        others[i] = hearts_match();
    play(id, 5);
    struct seen before, after;
    look(id, &before);
    for (int round = 0; round < 20; round++) {
        evict(id, others);
        pthread_barrier_t start;
        pthread_barrier_init(&start, NULL, THREADS);
        struct finder f[THREADS];
        pthread_t t[THREADS];
        for (int i = 0; i < THREADS; i++) {
            f[i] = (struct finder){.start = &start, .id = id};
            assert_int_equal(pthread_create(&t[i], NULL, find_at_once, &f[i]), 0);
        }
        for (int i = 0; i < THREADS; i++)
            pthread_join(t[i], NULL);
        pthread_barrier_destroy(&start);
        int refs = 0;
        assert_true(in_memory(id, &refs));
        assert_int_equal(refs, THREADS); /* one object, every thread's reference on it */
        for (int i = 0; i < THREADS; i++) {
            assert_ptr_equal(f[i].got, f[0].got);
            api_match_release(T.app, f[i].got);
        }
        look(id, &after);
        assert_same(&before, &after);
    }
}

/* Asking for a match that does not exist leaves nothing behind. */
static void test_missing_match(void **state)
{
    (void)state;
    size_t n = in_memory_count();
    struct err e;
    assert_null(api_match_find(T.app, 999999, &e));
    assert_int_equal(e.code, ERR_NOT_FOUND);
    assert_false(in_memory(999999, NULL));
    assert_int_equal(in_memory_count(), n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_evicts_least_recently_used),
        cmocka_unit_test(test_never_evicts_referenced),
        cmocka_unit_test(test_reload_same_state),
        cmocka_unit_test(test_concurrent_finds_load_once),
        cmocka_unit_test(test_missing_match),
    };
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int failed = cmocka_run_group_tests(tests, setup, teardown);
    curl_global_cleanup();
    return failed;
}
