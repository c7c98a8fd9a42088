/* test_matches.c - the domain core's match operations (service/core/matches.c, leagues.c)
 * called as the mail gateway, the clock and the scheduler call them: typed input, a struct
 * err, no HTTP and no JSON request. A real application on a real SQLite file in a temp
 * directory (or a PostgreSQL database: CARDPOST_TEST_PG, meson test matches_pg), with its
 * real committer: creating a match and each refusal's code and tag, a
 * legal move and an illegal one, a failing move in a group commit beside two that commit,
 * a league's room (read off the writer, counted again in the write), and a league's
 * schedule. tests/e2e/ covers the same operations through HTTP.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <libpq-fe.h>

#include "core.h"
#include "pglib.h"
#include "render.h"

#define NPLAYERS 6

struct fixture {
    char dir[64];
    struct api_app *app;
    int64_t player[NPLAYERS];     /* each lets themselves be seated without asking */
    int64_t shy;                  /* one who does not */
};

static const struct api_caller operator_caller = {.authenticated = true, .operator = true};

static int64_t add_player(struct api_app *app, const char *name, const char *prefs)
{
    static uint8_t next;
    uint8_t hash[STORE_HASH_BYTES] = {++next};
    struct store_player p = {.name = (char *)name, .prefs = (char *)prefs, .created_at = 1};
    struct err e;
    lock_take(&app->db_lock);
    bool ok = store_player_insert(app->store, &p, hash, &e);
    lock_drop(&app->db_lock);
    if (!ok)
        fail_msg("player %s: %s", name, e.msg);
    return p.id;
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/test_matches.XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    struct config c;
    config_defaults(&c);
    snprintf(c.db, sizeof c.db, "%s/cardpost.db", f->dir);
    if (pgtest_url()) { /* the _pg run: an emptied PostgreSQL database */
        pgtest_reset();
        snprintf(c.db, sizeof c.db, "%s", pgtest_url());
    }
    struct err e;
    f->app = api_app_create(&c, &e);
    if (!f->app) {
        fprintf(stderr, "app: %s\n", e.msg);
        return -1;
    }
    for (int i = 0; i < NPLAYERS; i++) {
        char name[16];
        snprintf(name, sizeof name, "p%d", i);
        f->player[i] = add_player(f->app, name, "{\"seat_without_asking\": true}");
    }
    f->shy = add_player(f->app, "shy", "{}");
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    api_app_destroy(f->app);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    if (system(cmd) != 0)
        return -1;
    free(f);
    return 0;
}

/* A Hearts match of players[first..first+3], made by the operator. */
static struct core_match_spec hearts_of(const struct fixture *f, int first)
{
    struct core_match_spec spec = {.game = RULES_GAME_HEARTS, .nplayers = 4};
    for (int i = 0; i < 4; i++)
        spec.players[i] = f->player[(first + i) % NPLAYERS];
    return spec;
}

static int64_t create(struct fixture *f, const struct core_match_spec *spec)
{
    int64_t id = 0;
    struct err e;
    if (!core_match_create(f->app, &operator_caller, spec, NULL, &id, NULL, &e))
        fail_msg("create: %s %s", e.tag, e.msg);
    assert_true(id > 0);
    return id;
}

/* The match's seq in memory and in its stored summary. */
static int64_t seq_of(struct fixture *f, int64_t id, int64_t *stored)
{
    struct err e;
    struct api_match *m = api_match_find(f->app, id, &e);
    assert_non_null(m);
    lock_take(&m->lock);
    int64_t seq = m->seq;
    lock_drop(&m->lock);
    api_match_release(f->app, m);
    struct store_match row;
    lock_take(&f->app->db_lock);
    assert_true(store_match_get(f->app->store, id, &row, &e));
    lock_drop(&f->app->db_lock);
    *stored = row.seq;
    store_match_finish(&row);
    return seq;
}

static void test_create(void **state)
{
    struct fixture *f = *state;
    struct core_match_spec spec = hearts_of(f, 0);
    struct api_caller seated = {.authenticated = true, .player = f->player[0]};
    struct core_answer a;
    int64_t id = 0;
    struct err e;
    assert_true(core_match_create(f->app, &seated, &spec, NULL, &id, &a, &e));
    assert_true(id > 0);
    assert_int_equal(a.status, 201);
    assert_non_null(strstr(a.text, "\"status\":\"active\""));
    assert_non_null(strstr(a.text, "\"you\":0"));
    free(a.text);
    struct api_match *m = api_match_find(f->app, id, &e);
    assert_non_null(m);
    assert_int_equal(m->invitation, STORE_MATCH_STARTED); /* everybody lets themselves */
    assert_int_equal(m->created_by, f->player[0]);
    assert_true(m->seq > 0); /* the first deal */
    api_match_release(f->app, m);

    /* With a seat whose player wants to be asked, it waits for them. */
    spec.players[3] = f->shy;
    assert_true(core_match_create(f->app, &seated, &spec, NULL, &id, NULL, &e));
    m = api_match_find(f->app, id, &e);
    assert_non_null(m);
    assert_int_equal(m->invitation, STORE_MATCH_PENDING);
    assert_int_equal(m->seq, 0);
    assert_false(core_match_started(m, &e));
    assert_int_equal(e.code, ERR_CONFLICT);
    assert_string_equal(e.tag, "match_pending");
    api_match_release(f->app, m);
}

/* Each seat's view of `m` and the spectators', with m's head and written whole without it:
 * the same bytes. */
static void views_with_and_without_head(struct api_match *m)
{
    for (int seat = -1; seat < m->replay.state.nseats; seat++) {
        size_t n1, n2;
        char *with = api_match_view_text(m, &m->replay, m->seq, seat, &n1);
        char *head = m->head;
        m->head = NULL;
        char *without = api_match_view_text(m, &m->replay, m->seq, seat, &n2);
        m->head = head;
        assert_non_null(with);
        assert_non_null(without);
        assert_int_equal(n1, n2);
        assert_memory_equal(with, without, n1);
        free(with);
        free(without);
    }
}

/* A new Hearts match of players 0 to 3 (its id in *id), found: release it after. */
static struct api_match *hearts_found(struct fixture *f, int64_t *id)
{
    struct core_match_spec spec = hearts_of(f, 0);
    *id = create(f, &spec);
    struct err e;
    struct api_match *m = api_match_find(f->app, *id, &e);
    assert_non_null(m);
    return m;
}

/* A started match's head (its id, game, options and players) is rendered once, when it gets
 * its id and when it is loaded from its row, and its views copy it: the bytes of views that
 * write it whole. A match created with a name that needs escaping shows it escaped. */
static void test_view_head(void **state)
{
    struct fixture *f = *state;
    int64_t id;
    struct err e;
    struct api_match *m = hearts_found(f, &id);
    lock_take(&m->lock);
    assert_non_null(m->head);
    char start[64];
    snprintf(start, sizeof start, "\"id\":%lld,\"game\":\"hearts\",\"options\":{", (long long)id);
    assert_memory_equal(m->head, start, strlen(start));
    assert_int_equal(strlen(m->head), m->head_len);
    assert_non_null(strstr(m->head, "\"players\":[{\"seat\":0,"));
    views_with_and_without_head(m);
    lock_drop(&m->lock);
    api_match_release(f->app, m);

    /* From its row, in a new process: the same head. */
    struct config c;
    config_defaults(&c);
    memcpy(c.db, api_config(f->app)->db, sizeof c.db);
    api_app_destroy(f->app);
    f->app = api_app_create(&c, &e);
    assert_non_null(f->app);
    m = api_match_find(f->app, id, &e);
    assert_non_null(m);
    lock_take(&m->lock);
    assert_non_null(m->head);
    assert_memory_equal(m->head, start, strlen(start));
    views_with_and_without_head(m);
    lock_drop(&m->lock);
    api_match_release(f->app, m);
}

/* An email's view (api_match_view_text_cut: the legal moves it lists and their number)
 * renders the same text as the whole view, for each seat and the spectators;
 * `cut_short` says whether this state has more legal moves than that for seat 0. */
static void mail_views_same(struct api_match *m, bool cut_short)
{
    for (int seat = -1; seat < m->replay.state.nseats; seat++) {
        size_t n1, n2;
        char *whole = api_match_view_text(m, &m->replay, m->seq, seat, &n1);
        char *cut = api_match_view_text_cut(m, &m->replay, m->seq, seat, RENDER_LEGAL_ALL,
                                            RENDER_LEGAL_FEW, &n2);
        assert_non_null(whole);
        assert_non_null(cut);
        json_t *j1 = json_loadb(whole, n1, 0, NULL), *j2 = json_loadb(cut, n2, 0, NULL);
        assert_non_null(j1);
        assert_non_null(j2);
        assert_null(json_object_get(j1, "legal_count"));
        size_t legal = json_array_size(json_object_get(j1, "legal"));
        if (seat == 0)
            assert_true(cut_short == (legal > RENDER_LEGAL_ALL));
        if (legal > RENDER_LEGAL_ALL) {
            assert_int_equal(json_array_size(json_object_get(j2, "legal")), RENDER_LEGAL_FEW);
            assert_int_equal(json_integer_value(json_object_get(j2, "legal_count")), legal);
            assert_true(n2 < n1 / 2);
        } else {
            assert_int_equal(n1, n2);
            assert_memory_equal(whole, cut, n1);
        }
        char *t1 = render_match_text(j1, "http://cp.example");
        char *t2 = render_match_text(j2, "http://cp.example");
        assert_non_null(t1);
        assert_non_null(t2);
        assert_string_equal(t1, t2);
        if (legal > RENDER_LEGAL_ALL)
            assert_non_null(strstr(t1, "more (the same verb with other cards)"));
        free(t1);
        free(t2);
        json_decref(j1);
        json_decref(j2);
        free(whole);
        free(cut);
    }
}

/* A new match's players are read on the reading connection: while another thread holds
 * the writing one (as a batch being written holds it, for the length of its statements and
 * of a checkpoint), a creation naming an unknown player is refused at once. (Read under
 * db_lock, it waited for the writer, and the HTTP thread with it.) */
struct creator {
    struct api_app *app;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool done, ok;
    struct err e;
};

static void *creator_main(void *arg)
{
    struct creator *k = arg;
    struct core_match_spec spec = {.game = RULES_GAME_SNAG, .nplayers = 2,
                                   .players = {999999, 999998}};
    int64_t id = 0;
    struct err e;
    bool ok = core_match_create(k->app, &operator_caller, &spec, NULL, &id, NULL, &e);
    pthread_mutex_lock(&k->lock);
    k->done = true;
    k->ok = ok;
    k->e = e;
    pthread_cond_broadcast(&k->cond);
    pthread_mutex_unlock(&k->lock);
    return NULL;
}

static void test_create_reads_off_the_writer(void **state)
{
    struct fixture *f = *state;
    struct creator k = {.app = f->app};
    pthread_mutex_init(&k.lock, NULL);
    pthread_cond_init(&k.cond, NULL);
    lock_take(&f->app->db_lock);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, creator_main, &k), 0);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 3;
    pthread_mutex_lock(&k.lock);
    while (!k.done && pthread_cond_timedwait(&k.cond, &k.lock, &until) == 0)
        ;
    bool done = k.done;
    pthread_mutex_unlock(&k.lock);
    lock_drop(&f->app->db_lock); /* (a creation that waited for it goes on now) */
    pthread_join(t, NULL);
    pthread_mutex_destroy(&k.lock);
    pthread_cond_destroy(&k.cond);
    assert_true(done);
    assert_false(k.ok);
    assert_string_equal(k.e.tag, "unknown_player");
}

/* A league of Snag for two, with players 0 to 3 its members, that may have `max` matches. */
static int64_t small_league(struct fixture *f, int max)
{
    struct store_league lg = {.name = "Small", .game = "snag", .options = "{\"seats\": 2}",
                              .points = "[1, 0]", .created_at = 1};
    struct err e;
    lock_take(&f->app->db_lock);
    bool ok = store_league_insert(f->app->store, &lg, &e);
    for (int i = 0; ok && i < 4; i++)
        ok = store_member_add(f->app->store, lg.id, f->player[i], 1, &e);
    lock_drop(&f->app->db_lock);
    if (!ok)
        fail_msg("league: %s", e.msg);
    f->app->config.league_max_matches = max;
    return lg.id;
}

/* A creation of a match of league `league` between players `a` and `b` on a thread of its
 * own. */
struct league_creator {
    struct fixture *f;
    int64_t league;
    int a, b;
    pthread_t thread;
    atomic_bool done;
    bool ok;
    struct err e;
};

static void *league_creator_main(void *arg)
{
    struct league_creator *k = arg;
    struct core_match_spec spec = {.game = RULES_GAME_SNAG, .nplayers = 2, .league = k->league,
                                   .players = {k->f->player[k->a], k->f->player[k->b]}};
    int64_t id = 0;
    k->ok = core_match_create(k->f->app, &operator_caller, &spec, NULL, &id, NULL, &k->e);
    atomic_store(&k->done, true);
    return NULL;
}

/* Whether `k` ends within `ms` milliseconds. */
static bool ends_within(struct league_creator *k, int ms)
{
    struct timespec nap = {.tv_nsec = 10 * 1000000};
    for (int i = 0; i < ms / 10 && !atomic_load(&k->done); i++)
        nanosleep(&nap, NULL);
    return atomic_load(&k->done);
}

/* A league's room is read on the reading connection too: while another thread holds the
 * writing one, a creation in a full league is refused at once (it waited for the writer). */
static void test_create_league_reads_off_the_writer(void **state)
{
    struct fixture *f = *state;
    int64_t league = small_league(f, 1);
    struct league_creator first = {.f = f, .league = league, .a = 0, .b = 1};
    league_creator_main(&first);
    assert_true(first.ok);
    lock_take(&f->app->db_lock);
    struct league_creator k = {.f = f, .league = league, .a = 2, .b = 3};
    assert_int_equal(pthread_create(&k.thread, NULL, league_creator_main, &k), 0);
    bool at_once = ends_within(&k, 3000);
    lock_drop(&f->app->db_lock);
    pthread_join(k.thread, NULL);
    assert_true(at_once);
    assert_false(k.ok);
    assert_string_equal(k.e.tag, "league_match_limit");
}

/* A league's limit holds for creations at once: each reads the league's room before either
 * is written (db_lock held: nothing is), and the write counts again, so that of two
 * creations in a league with room for one, one is made and the other refused. (Checked
 * before the write alone, both were made; on PostgreSQL the write counts with the league's
 * row locked, after the other's commit.) */
static void test_league_limit_in_the_write(void **state)
{
    struct fixture *f = *state;
    int64_t league = small_league(f, 1);
    struct league_creator k[2] = {{.f = f, .league = league, .a = 0, .b = 1},
                                  {.f = f, .league = league, .a = 2, .b = 3}};
    lock_take(&f->app->db_lock);
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&k[i].thread, NULL, league_creator_main, &k[i]), 0);
    /* (each reads the room, then waits for the writer) */
    bool ended = ends_within(&k[0], 500) || ends_within(&k[1], 500);
    lock_drop(&f->app->db_lock);
    for (int i = 0; i < 2; i++)
        pthread_join(k[i].thread, NULL);
    assert_false(ended);
    assert_true(k[0].ok != k[1].ok);
    struct league_creator *refused = k[0].ok ? &k[1] : &k[0];
    assert_string_equal(refused->e.tag, "league_match_limit");
    struct err e;
    int64_t count = 0;
    lock_take(&f->app->db_lock);
    assert_true(store_league_match_count(f->app->store, league, &count, &e));
    lock_drop(&f->app->db_lock);
    assert_int_equal(count, 1);
}

/* A player joining a league through application `app` (each its own "process") on a thread
 * of its own. */
struct joiner {
    struct api_app *app;
    int64_t league, player;
    bool ok;
    struct err e;
};

static void *joiner_main(void *arg)
{
    struct joiner *j = arg;
    struct api_caller self = {.authenticated = true, .player = j->player};
    enum core_join how;
    char *name = NULL;
    int64_t at;
    j->ok = core_league_member_add(j->app, &self, j->league, j->player, &how, &name, &at, &j->e);
    free(name);
    return NULL;
}

/* `fn` run on two threads, with args[0] and args[1], while `holder` holds what `hold` (a
 * statement after BEGIN) locks: both start, wait behind it for 0.3 s, and end once it
 * commits. */
static void race_behind(PGconn *holder, const char *hold, void *(*fn)(void *), void *args[2])
{
    PQclear(PQexec(holder, hold));
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&t[i], NULL, fn, args[i]), 0);
    struct timespec nap = {.tv_nsec = 300 * 1000000};
    nanosleep(&nap, NULL);
    PQclear(PQexec(holder, "COMMIT"));
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
}

/* PostgreSQL, two processes (two applications on one database): two players joining a league
 * with room for one more member at once, one is enrolled and the other refused; two matches
 * created in a league with room for one more at once, one is made and the other refused.
 * Each write takes the league before it counts (store_league_take); lined up here behind a
 * session that holds the league's row. (Counted without taking it, both found room.) */
static void test_league_room_between_processes(void **state)
{
    struct fixture *f = *state;
    if (!pgtest_url())
        skip(); /* (SQLite: one process) */
    struct config c;
    config_defaults(&c);
    snprintf(c.db, sizeof c.db, "%s", pgtest_url());
    struct err e;
    struct api_app *other = api_app_create(&c, &e);
    assert_non_null(other);
    struct store_league lg = {.name = "Room", .game = "snag", .options = "{\"seats\": 2}",
                              .points = "[1, 0]", .organizer = f->player[0], .created_at = 1};
    lock_take(&f->app->db_lock);
    assert_true(store_league_insert(f->app->store, &lg, &e));
    assert_true(store_member_add(f->app->store, lg.id, f->player[0], 1, &e));
    lock_drop(&f->app->db_lock);
    f->app->config.league_max_members = other->config.league_max_members = 2;

    PGconn *holder = PQconnectdb(pgtest_url());
    assert_int_equal(PQstatus(holder), CONNECTION_OK);
    char sql[128];
    snprintf(sql, sizeof sql, "BEGIN; SELECT 1 FROM leagues WHERE id = %lld FOR NO KEY UPDATE",
             (long long)lg.id);
    struct joiner j[2] = {{.app = f->app, .league = lg.id, .player = f->player[1]},
                          {.app = other, .league = lg.id, .player = f->player[2]}};
    race_behind(holder, sql, joiner_main, (void *[2]){&j[0], &j[1]});
    assert_true(j[0].ok != j[1].ok);
    assert_string_equal((j[0].ok ? &j[1] : &j[0])->e.tag, "league_full");
    int64_t size = 0;
    lock_take(&f->app->db_lock);
    assert_true(store_league_size(f->app->store, lg.id, &size, &e));
    lock_drop(&f->app->db_lock);
    assert_int_equal(size, 2);

    /* Matches: both read the room before either is written (the holder holds the league). */
    f->app->config.league_max_matches = other->config.league_max_matches = 1;
    int joined = j[0].ok ? 1 : 2;
    struct league_creator k[2] = {{.f = f, .league = lg.id, .a = 0, .b = joined},
                                  {.f = f, .league = lg.id, .a = joined, .b = 0}};
    struct fixture g = *f;
    g.app = other;
    k[1].f = &g;
    race_behind(holder, sql, league_creator_main, (void *[2]){&k[0], &k[1]});
    PQfinish(holder);
    api_app_destroy(other);
    assert_true(k[0].ok != k[1].ok);
    assert_string_equal((k[0].ok ? &k[1] : &k[0])->e.tag, "league_match_limit");
    int64_t count = 0;
    lock_take(&f->app->db_lock);
    assert_true(store_league_match_count(f->app->store, lg.id, &count, &e));
    lock_drop(&f->app->db_lock);
    assert_int_equal(count, 1);
}

static void test_create_refusals(void **state)
{
    struct fixture *f = *state;
    json_t *seats4 = json_pack("{s:i}", "seats", 4);
    json_t *nonsense = json_pack("{s:i}", "nonsense", 1);
    json_t *no_time = json_pack("{s:i}", "move_seconds", 0);
    json_t *not_object = json_string("fast");
    struct store_league lg = {.name = "L", .game = "hearts", .options = "{\"seats\": 4}",
                              .points = "[3, 2, 1, 0]", .created_at = 1};
    struct err e;
    lock_take(&f->app->db_lock);
    assert_true(store_league_insert(f->app->store, &lg, &e));
    lock_drop(&f->app->db_lock);
    struct api_caller nobody = {0};
    struct api_caller outsider = {.authenticated = true, .player = f->player[5]};
    const struct {
        const struct api_caller *c;
        int players;              /* how many of the fixture's players */
        json_t *options, *clock;
        int64_t league;
        bool unknown;             /* the last player is no player */
        enum err_code code;
        const char *tag;
    } rows[] = {
        {&nobody, 4, NULL, NULL, 0, false, ERR_UNAUTHORIZED, "unauthorized"},
        {&outsider, 4, NULL, NULL, 0, false, ERR_FORBIDDEN, "forbidden"},
        {&operator_caller, 3, seats4, NULL, 0, false, ERR_INVALID, "wrong_player_count"},
        {&operator_caller, 4, nonsense, NULL, 0, false, ERR_INVALID, "bad_option"},
        {&operator_caller, 4, NULL, no_time, 0, false, ERR_INVALID, "bad_clock"},
        {&operator_caller, 4, NULL, not_object, 0, false, ERR_MALFORMED, "bad_request"},
        {&operator_caller, 4, NULL, NULL, 0, true, ERR_INVALID, "unknown_player"},
        {&operator_caller, 4, NULL, NULL, -1, false, ERR_INVALID, "unknown_league"},
        {&operator_caller, 4, nonsense, NULL, lg.id, false, ERR_INVALID, "league_rules"},
        {&operator_caller, 4, NULL, no_time, lg.id, false, ERR_INVALID, "league_clock"},
        {&operator_caller, 4, NULL, NULL, lg.id, false, ERR_INVALID, "not_member"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        struct core_match_spec spec = hearts_of(f, 0);
        spec.nplayers = (size_t)rows[i].players;
        spec.options = rows[i].options;
        spec.clock = rows[i].clock;
        spec.league = rows[i].league;
        if (rows[i].unknown)
            spec.players[3] = 999999;
        int64_t id = -1;
        e = (struct err){0};
        if (core_match_create(f->app, rows[i].c, &spec, NULL, &id, NULL, &e))
            fail_msg("row %zu (%s) was created", i, rows[i].tag);
        assert_int_equal(e.code, rows[i].code);
        assert_string_equal(e.tag, rows[i].tag);
        assert_int_equal(id, 0);
    }
    json_decref(seats4);
    json_decref(nonsense);
    json_decref(no_time);
    json_decref(not_object);
}

/* ---- Moves through the real committer -------------------------------------------------- */

/* A request waiting for its move: what the HTTP edge does, with a condition variable. */
struct waiting {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool resumed, retry;
    struct core_answer out;
    struct err e;
};

static void no_suspend(void *cls)
{
    (void)cls;
}

static void resume(void *cls, bool retry)
{
    struct waiting *w = cls;
    pthread_mutex_lock(&w->lock);
    w->resumed = true;
    w->retry = retry;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
}

static void waiting_init(struct waiting *w)
{
    memset(w, 0, sizeof *w);
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->cond, NULL);
}

static void waiting_wait(struct waiting *w)
{
    pthread_mutex_lock(&w->lock);
    while (!w->resumed)
        pthread_cond_wait(&w->cond, &w->lock);
    pthread_mutex_unlock(&w->lock);
}

/* The first legal move of a seat to move in match `id`, as text; its player in *c. */
static void legal_move(struct fixture *f, int64_t id, char *text, size_t size,
                       struct api_caller *c)
{
    struct err e;
    struct api_match *m = api_match_find(f->app, id, &e);
    assert_non_null(m);
    lock_take(&m->lock);
    uint32_t to_move = rules_to_move(&m->replay.state);
    int seat = 0;
    while (!((to_move >> seat) & 1))
        seat++;
    static struct rules_move legal[RULES_MAX_LEGAL];
    assert_true(rules_legal(&m->replay.state, seat, legal, RULES_MAX_LEGAL) > 0);
    rules_move_format(&legal[0], text, size);
    *c = (struct api_caller){.authenticated = true, .player = m->players[seat]};
    lock_drop(&m->lock);
    api_match_release(f->app, m);
}

/* Start the move `text` of `c` in match `id`; true when it went to the committer. */
static enum core_progress move_start(struct fixture *f, const struct api_caller *c, int64_t id,
                                     const char *text, struct waiting *w)
{
    struct core_move in = {.text = text, .len = strlen(text)};
    struct core_idem idem = {0};
    struct api_async async = {.suspend = no_suspend, .resume = resume, .cls = w};
    return core_match_move(f->app, c, id, &in, &idem, &w->out, &async, &w->e);
}

/* A first legal move in match `id`, made and answered 201 (w->out.text the caller's). */
static void move_legal(struct fixture *f, int64_t id, struct waiting *w)
{
    char text[RULES_MOVE_TEXT_MAX];
    struct api_caller c;
    legal_move(f, id, text, sizeof text, &c);
    waiting_init(w);
    assert_int_equal(move_start(f, &c, id, text, w), CORE_SUSPENDED);
    waiting_wait(w);
    assert_false(w->retry);
    assert_int_equal(w->out.status, 201);
}

static void test_move(void **state)
{
    struct fixture *f = *state;
    struct core_match_spec spec = hearts_of(f, 0);
    int64_t id = create(f, &spec), stored;
    int64_t before = seq_of(f, id, &stored);
    assert_int_equal(stored, before);

    /* A legal move: durable, then answered, and the match is one event on. */
    struct waiting w;
    move_legal(f, id, &w);
    assert_non_null(strstr(w.out.text, "\"seq\":"));
    free(w.out.text);
    assert_int_equal(seq_of(f, id, &stored), before + 1);
    assert_int_equal(stored, before + 1);
    /* Its row's summary: the seats still to pass, the match's totals (JSON). */
    struct store_match row;
    struct err e;
    lock_take(&f->app->db_lock);
    assert_true(store_match_get(f->app->store, id, &row, &e));
    lock_drop(&f->app->db_lock);
    assert_true(strcmp(row.to_move, "[1,2,3]") == 0 || strcmp(row.to_move, "[0,2,3]") == 0 ||
                strcmp(row.to_move, "[0,1,3]") == 0 || strcmp(row.to_move, "[0,1,2]") == 0);
    assert_string_equal(row.totals, "[0,0,0,0]");
    store_match_finish(&row);

    /* An illegal one of a seat to move (the two of clubs played while the seats pass, or
     * once it is played): refused at once, nothing written. */
    char text[RULES_MOVE_TEXT_MAX];
    struct api_caller c;
    legal_move(f, id, text, sizeof text, &c);
    waiting_init(&w);
    assert_int_equal(move_start(f, &c, id, "play 2C", &w), CORE_FAILED);
    assert_int_equal(w.e.code, ERR_ILLEGAL);
    assert_false(w.resumed);
    assert_int_equal(seq_of(f, id, &stored), before + 1);
    assert_int_equal(stored, before + 1);

    /* Nor is a stale seq, nor a move of a spectator. */
    struct core_move in = {.text = text, .len = strlen(text), .has_seq = true, .seq = before};
    struct api_async async = {.suspend = no_suspend, .resume = resume, .cls = &w};
    assert_int_equal(core_match_move(f->app, &c, id, &in, NULL, &w.out, &async, &w.e),
                     CORE_FAILED);
    assert_string_equal(w.e.tag, "stale_seq");
    struct api_caller spectator = {.authenticated = true, .player = f->player[5]};
    assert_int_equal(move_start(f, &spectator, id, text, &w), CORE_FAILED);
    assert_int_equal(w.e.code, ERR_FORBIDDEN);
}

/* How many entries m's feed has, and how many of them their commit's events (m->lock held). */
static int feed_entries(const struct api_match *m, int *with_events)
{
    int n = 0;
    *with_events = 0;
    for (const struct api_feed *g = m->feed; g; g = g->older) {
        n++;
        *with_events += g->events;
    }
    return n;
}

/* A match whose streams are all players' (each sent its seat's newest state, no event) has
 * a feed of states alone, of its API_FEED_KEEP newest commits: no commit's events rendered,
 * none kept for a stream woken later. Once a match's own stream opens, which is sent every
 * event, the commits after it carry their events, and older ones keep them for that stream
 * (API_FEED_KEEP_LATER); a commit from before it has none to give it (the stream reads the
 * log instead). */
static void test_feed_states_alone(void **state)
{
    struct fixture *f = *state;
    int64_t id;
    struct api_match *m = hearts_found(f, &id);
    lock_take(&m->lock);
    for (int s = 0; s < 4; s++)
        api_match_streams_add(m, s, 1, false); /* (each seat's player's stream) */
    lock_drop(&m->lock);

    struct waiting w;
    for (int i = 0; i < 3 * API_FEED_KEEP_LATER; i++) {
        move_legal(f, id, &w);
        free(w.out.text);
    }
    char text[RULES_MOVE_TEXT_MAX];
    struct api_caller c;
    legal_move(f, id, text, sizeof text, &c);
    waiting_init(&w);
    assert_int_equal(move_start(f, &c, id, text, &w), CORE_SUSPENDED);
    waiting_wait(&w);
    assert_int_equal(w.out.status, 201);
    lock_take(&m->lock);
    int with_events, n = feed_entries(m, &with_events);
    assert_int_equal(n, API_FEED_KEEP);
    assert_int_equal(m->feed_len, API_FEED_KEEP);
    assert_int_equal(with_events, 0);
    /* The mover's state is its answer, there from the commit on; the others' wait for a
     * stream to ask. */
    int mover = 0;
    while (m->players[mover] != c.player)
        mover++;
    size_t size = strlen(w.out.text) + 64;
    char *want = malloc(size);
    assert_non_null(want);
    snprintf(want, size, "id: %lld\nevent: state\ndata: %s\n\n", (long long)(m->seq - 1),
             w.out.text);
    assert_non_null(m->feed->text[mover]);
    assert_string_equal(m->feed->text[mover], want);
    assert_int_equal(m->feed->len[mover], strlen(want));
    for (int s = 0; s < 4; s++)
        assert_true(s == mover || !m->feed->text[s]);
    free(want);
    free(w.out.text);
    int64_t newest = m->feed->after;
    struct api_feed *g = api_match_feed_get(f->app, m, 2, newest, false);
    assert_non_null(g);
    assert_int_equal(g->events_len[2], 0);
    assert_true(strncmp(g->text[2], "id: ", 4) == 0);
    assert_non_null(strstr(g->text[2], "\nevent: state\n"));
    assert_null(strstr(g->text[2], "\nevent: event\n"));
    api_feed_release(g);
    assert_null(api_match_feed_get(f->app, m, 2, newest, true)); /* (no events to give) */
    api_match_streams_add(m, 1, 1, true); /* a match's own stream of seat 1 */
    lock_drop(&m->lock);

    for (int i = 0; i < 3 * API_FEED_KEEP_LATER; i++) {
        move_legal(f, id, &w);
        free(w.out.text);
    }
    lock_take(&m->lock);
    n = feed_entries(m, &with_events);
    assert_true(n >= API_FEED_KEEP_LATER && n == m->feed_len);
    assert_int_equal(with_events, n);
    g = api_match_feed_get(f->app, m, 1, m->feed->after, true);
    assert_non_null(g);
    assert_true(g->events_len[1] > 0);
    assert_non_null(strstr(g->text[1], "\nevent: event\n"));
    assert_non_null(strstr(g->text[1] + g->events_len[1], "\nevent: state\n"));
    api_feed_release(g);
    api_match_streams_add(m, 1, -1, true);
    for (int s = 0; s < 4; s++)
        api_match_streams_add(m, s, -1, false);
    assert_null(m->feed); /* (the feed goes with the last stream) */
    lock_drop(&m->lock);
    api_match_release(f->app, m);
}

/* An email renders the view of only the legal moves it lists: the same text as the whole
 * view's, while the seats pass (286 legal moves each) and once they play (one, or none). */
static void test_mail_view(void **state)
{
    struct fixture *f = *state;
    struct core_match_spec spec = hearts_of(f, 0);
    int64_t id = create(f, &spec);
    struct err e;
    for (int step = 0; step <= 6; step++) {
        struct api_match *m = api_match_find(f->app, id, &e);
        assert_non_null(m);
        lock_take(&m->lock);
        mail_views_same(m, step == 0);
        lock_drop(&m->lock);
        api_match_release(f->app, m);
        struct waiting w;
        move_legal(f, id, &w);
        free(w.out.text);
    }
}

/* A write that holds the committer until it is let go: the moves queued meanwhile share the
 * next batch (on PostgreSQL, no batches: each is a transaction of its own on the pool's
 * connections, waiting for the db_lock that the blocker holds). */
struct blocker {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool running, go;
    struct api_app *app;
};

static bool blocker_run(struct api_app *app, void *ctx, struct err *e)
{
    (void)app;
    (void)e;
    struct blocker *b = ctx;
    pthread_mutex_lock(&b->lock);
    b->running = true;
    pthread_cond_broadcast(&b->cond);
    while (!b->go)
        pthread_cond_wait(&b->cond, &b->lock);
    pthread_mutex_unlock(&b->lock);
    return true;
}

static void *blocker_main(void *arg)
{
    struct blocker *b = arg;
    struct err e;
    api_write_wait(b->app, blocker_run, b, &e);
    return NULL;
}

/* Player `player`'s webhook deliveries of match `match` at `seq`. */
static int deliveries_at(struct fixture *f, int64_t player, int64_t match, int64_t seq)
{
    struct store_outbox o[100];
    struct err e;
    lock_take(&f->app->db_lock);
    int n = store_outbox_of_player(f->app->store, player, 0, o, 100, &e);
    lock_drop(&f->app->db_lock);
    assert_true(n >= 0);
    int found = 0;
    for (int i = 0; i < n; i++) {
        found += o[i].channel == STORE_WEBHOOK && o[i].match == match && o[i].seq == seq;
        store_outbox_finish(&o[i]);
    }
    return found;
}

/* Three moves in one batch, the middle one failing on the events' key: the other two commit
 * with their notifications (on SQLite the batch is written without savepoints, rolled back at
 * the failure and written again with them: a move's notes are written by both runs). */
static void test_failing_move_in_a_batch(void **state)
{
    struct fixture *f = *state;
    int64_t ids[3], before[3], stored;
    char text[3][RULES_MOVE_TEXT_MAX];
    struct api_caller c[3];
    /* every player with a webhook (no worker delivers here): each move notifies the next */
    for (int i = 0; i < NPLAYERS; i++) {
        struct store_player p;
        struct err pe;
        lock_take(&f->app->db_lock);
        assert_true(store_player_get(f->app->store, f->player[i], &p, &pe));
        free(p.webhook_url);
        p.webhook_url = strdup("http://127.0.0.1:9/hook");
        assert_true(store_player_update(f->app->store, &p, &pe));
        lock_drop(&f->app->db_lock);
        store_player_finish(&p);
    }
    api_facts_forget(f->app, 0);
    for (int i = 0; i < 3; i++) {
        /* (Snag: a lead, which makes it the other seat's turn; a Hearts pass notifies nobody) */
        struct core_match_spec spec = {.game = RULES_GAME_SNAG, .nplayers = 2,
                                       .players = {f->player[2 * i % NPLAYERS],
                                                   f->player[(2 * i + 1) % NPLAYERS]}};
        ids[i] = create(f, &spec);
        before[i] = seq_of(f, ids[i], &stored);
        legal_move(f, ids[i], text[i], sizeof text[i], &c[i]);
    }
    /* The middle match's next event is already in the database (as if written behind the
     * service's back): its move fails inside the batch, on the events' key. */
    struct store_event stray = {.kind = STORE_MOVE, .seat = 0, .body = "resign",
                                .seq = before[1], .at = 1};
    struct err e;
    lock_take(&f->app->db_lock);
    assert_true(store_event_append(f->app->store, ids[1], &stray, &e));
    lock_drop(&f->app->db_lock);

    struct blocker b = {.app = f->app};
    pthread_mutex_init(&b.lock, NULL);
    pthread_cond_init(&b.cond, NULL);
    pthread_t t;
    pthread_create(&t, NULL, blocker_main, &b);
    pthread_mutex_lock(&b.lock);
    while (!b.running)
        pthread_cond_wait(&b.cond, &b.lock);
    pthread_mutex_unlock(&b.lock);
    struct store_commit_figures k;
    store_committer_figures(f->app->committer, &k);
    uint64_t batches = k.batches;

    struct waiting w[3];
    for (int i = 0; i < 3; i++) {
        waiting_init(&w[i]);
        assert_int_equal(move_start(f, &c[i], ids[i], text[i], &w[i]), CORE_SUSPENDED);
    }
    pthread_mutex_lock(&b.lock);
    b.go = true;
    pthread_cond_broadcast(&b.cond);
    pthread_mutex_unlock(&b.lock);
    for (int i = 0; i < 3; i++)
        waiting_wait(&w[i]);
    pthread_join(t, NULL);
    store_committer_figures(f->app->committer, &k);
    /* the blocker's, then ours: together, or on PostgreSQL each alone */
    assert_int_equal(k.batches, batches + (pgtest_url() ? 4 : 2));

    /* The first and the last committed; the middle one failed and changed nothing. */
    for (int i = 0; i < 3; i += 2) {
        assert_int_equal(w[i].out.status, 201);
        free(w[i].out.text);
        assert_int_equal(seq_of(f, ids[i], &stored), before[i] + 1);
        assert_int_equal(stored, before[i] + 1);
    }
    assert_int_equal(w[1].out.status, 0);
    assert_int_not_equal(w[1].e.code, ERR_OK);
    assert_int_equal(seq_of(f, ids[1], &stored), before[1]);
    assert_int_equal(stored, before[1]);
    /* Each committed move's notifications are there, once; the failed one's are not. */
    for (int i = 0; i < 3; i++) {
        int rows = 0;
        for (int p = 0; p < NPLAYERS; p++)
            rows += deliveries_at(f, f->player[p], ids[i], before[i] + 1);
        if (i == 1)
            assert_int_equal(rows, 0);
        else
            assert_int_equal(rows, 1); /* (the next seat's turn) */
    }
}

/* ---- League scheduling ---------------------------------------------------------------------- */

static void test_league_schedule(void **state)
{
    struct fixture *f = *state;
    int64_t organizer = f->player[0];
    struct store_league lg = {.name = "Speedsters", .game = "speed", .options = "{\"seats\": 2}",
                              .points = "[1, 0]", .organizer = organizer, .created_at = 1};
    struct err e;
    lock_take(&f->app->db_lock);
    bool ok = store_league_insert(f->app->store, &lg, &e);
    /* Four members, one of whom wants to be asked: joining was the asking. */
    int64_t members[4] = {f->player[0], f->player[1], f->player[2], f->shy};
    for (int i = 0; ok && i < 4; i++)
        ok = store_member_add(f->app->store, lg.id, members[i], 1, &e);
    lock_drop(&f->app->db_lock);
    assert_true(ok);

    int64_t *ids;
    size_t n;
    struct api_caller member = {.authenticated = true, .player = f->player[1]};
    assert_false(core_league_schedule(f->app, &member, lg.id, 0, &ids, &n, &e));
    assert_int_equal(e.code, ERR_FORBIDDEN);
    struct api_caller org = {.authenticated = true, .player = organizer};
    assert_false(core_league_schedule(f->app, &org, lg.id, 101, &ids, &n, &e));
    assert_string_equal(e.tag, "invalid_field");
    assert_false(core_league_schedule(f->app, &org, lg.id + 1000, 0, &ids, &n, &e));
    assert_int_equal(e.code, ERR_NOT_FOUND);

    /* Every pair once: six matches of the league, started, made by nobody. */
    assert_true(core_league_schedule(f->app, &org, lg.id, 0, &ids, &n, &e));
    assert_int_equal(n, 6);
    int met[4][4] = {{0}};
    for (size_t i = 0; i < n; i++) {
        struct api_match *m = api_match_find(f->app, ids[i], &e);
        assert_non_null(m);
        assert_int_equal(m->league, lg.id);
        assert_int_equal(m->created_by, 0);
        assert_int_equal(m->invitation, STORE_MATCH_STARTED);
        int a = -1, b = -1;
        for (int k = 0; k < 4; k++) {
            if (m->players[0] == members[k])
                a = k;
            if (m->players[1] == members[k])
                b = k;
        }
        assert_true(a >= 0 && b >= 0 && a != b);
        met[a][b]++;
        met[b][a]++;
        api_match_release(f->app, m);
    }
    free(ids);
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 4; b++)
            assert_int_equal(met[a][b], a == b ? 0 : 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_create, setup, teardown),
        cmocka_unit_test_setup_teardown(test_create_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_create_reads_off_the_writer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_create_league_reads_off_the_writer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_league_limit_in_the_write, setup, teardown),
        cmocka_unit_test_setup_teardown(test_league_room_between_processes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_view_head, setup, teardown),
        cmocka_unit_test_setup_teardown(test_move, setup, teardown),
        cmocka_unit_test_setup_teardown(test_feed_states_alone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mail_view, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failing_move_in_a_batch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_league_schedule, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
