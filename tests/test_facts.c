/* test_facts.c - the players' notification facts (service/core/facts.c): what a move's
 * notifications read of a player, kept per process, on a real application over a real
 * SQLite file (or a PostgreSQL database: CARDPOST_TEST_PG, meson test facts_pg). Filled
 * from the row and then used without it (a write behind the app's back stays unseen: a
 * hit), forgotten by every operation that writes those fields, never refilled with what a
 * read saw before a write (threads reading while one writes), and, on PostgreSQL, forgotten
 * by a second application (another process) when the first changes the player.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "core.h"
#include "pglib.h"
#include "testdb.h"

static void pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

struct fixture {
    char dir[64];
    struct config config;
    struct api_app *app;
};

static struct api_app *app_new(const struct config *config)
{
    struct err e;
    struct api_app *app = api_app_create(config, &e);
    if (!app)
        fail_msg("api_app_create: %s", e.msg);
    /* A shared database's facts are used while its listener hears the others' changes. */
    if (!api_listener_start(app, &e))
        fail_msg("api_listener_start: %s", e.msg);
    for (int i = 0; i < 500 && !api_facts_used(app); i++)
        pause_ms(10);
    assert_true(api_facts_used(app));
    return app;
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    snprintf(f->dir, sizeof f->dir, "/tmp/test_facts.XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    config_defaults(&f->config);
    snprintf(f->config.db, sizeof f->config.db, "%s/cardpost.db", f->dir);
    if (pgtest_url()) { /* the _pg run: an emptied PostgreSQL database */
        pgtest_reset();
        snprintf(f->config.db, sizeof f->config.db, "%s", pgtest_url());
    }
    snprintf(f->config.operator_token, sizeof f->config.operator_token, "%s",
             "an-operator-token-of-at-least-32-bytes");
    snprintf(f->config.smtp.url, sizeof f->config.smtp.url, "smtp://127.0.0.1:9");
    snprintf(f->config.smtp.from, sizeof f->config.smtp.from, "cardpost@example.org");
    f->config.test_clock = true;
    f->app = app_new(&f->config);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    api_app_destroy(f->app);
    char path[160];
    snprintf(path, sizeof path, "%s/cardpost.db", f->dir);
    tdb_remove(path);
    rmdir(f->dir);
    free(f);
    return 0;
}

static struct api_caller player(struct api_app *app, const char *name, const char *email,
                                const char *webhook)
{
    struct core_player_new in = {.name = name, .email = email, .webhook_url = webhook};
    struct core_player_made out;
    struct err e;
    if (!core_player_register(app, &in, &out, &e))
        fail_msg("register %s: %s", name, e.msg);
    return (struct api_caller){.authenticated = true, .player = out.id};
}

/* `player`'s facts as a move's notifications get them (the reading connection). */
static struct api_facts facts(struct api_app *app, int64_t player)
{
    struct api_facts f;
    struct err e;
    if (!api_player_facts(app, player, true, &f, &e))
        fail_msg("api_player_facts %lld: %s", (long long)player, e.msg);
    return f;
}

static bool wants(struct api_app *app, int64_t player, int channel, const char *type)
{
    struct api_facts f = facts(app, player);
    return api_facts_want(&f, channel, type);
}

/* PATCH-like: preferences `json` for `c`. */
static void prefs(struct api_app *app, const struct api_caller *c, const char *json)
{
    json_t *p = json_loads(json, 0, NULL);
    assert_non_null(p);
    struct core_player_change in = {.prefs = p};
    struct core_player out;
    struct err e;
    if (!core_player_update(app, c, &in, &out, &e))
        fail_msg("update %s: %s", json, e.msg);
    core_player_finish(&out);
    json_decref(p);
}

/* Rewrite player `id`'s preferences on a connection of its own, as another program would:
 * nobody is told. */
static void behind_the_back(const struct fixture *f, int64_t id, const char *json)
{
    struct err e;
    struct store *s = store_open(f->config.db, &e);
    if (!s)
        fail_msg("store_open: %s", e.msg);
    struct store_player p = {0};
    assert_true(store_player_get(s, id, &p, &e));
    free(p.prefs);
    p.prefs = strdup(json);
    assert_true(store_player_update(s, &p, &e));
    store_player_finish(&p);
    store_close(s);
}

static void test_fill_hit_forget(void **state)
{
    struct fixture *f = *state;
    struct api_caller ann = player(f->app, "ann", NULL, "https://hooks.example.org/ann");
    struct api_facts a = facts(f->app, ann.player);
    assert_int_equal(a.player, ann.player);
    assert_false(a.email);
    assert_true(a.webhook);
    assert_false(a.email_when_watching);
    assert_string_equal(a.destination, "hooks.example.org:443");
    assert_true(api_facts_want(&a, STORE_WEBHOOK, "turn"));
    assert_true(api_facts_want(&a, STORE_EMAIL, "match_over"));

    /* Kept: a change nobody announced is not seen ... */
    behind_the_back(f, ann.player, "{\"webhook\":{\"turn\":false}}");
    assert_true(wants(f->app, ann.player, STORE_WEBHOOK, "turn"));
    /* ... until the entry is forgotten; then read again, and kept again. */
    api_facts_forget(f->app, ann.player);
    assert_false(wants(f->app, ann.player, STORE_WEBHOOK, "turn"));
    assert_true(wants(f->app, ann.player, STORE_WEBHOOK, "reminder"));
    behind_the_back(f, ann.player, "{}");
    assert_false(wants(f->app, ann.player, STORE_WEBHOOK, "turn"));
    api_facts_forget(f->app, 0); /* (everyone's) */
    assert_true(wants(f->app, ann.player, STORE_WEBHOOK, "turn"));

    /* Not in use (a shared database's listener deaf): every read reads the row. */
    api_facts_live(f->app, false);
    behind_the_back(f, ann.player, "{\"email\":{\"turn\":false}}");
    assert_false(wants(f->app, ann.player, STORE_EMAIL, "turn"));
    api_facts_live(f->app, true);

    /* A player who does not exist is not found, and nothing is kept. */
    struct api_facts none;
    struct err e;
    assert_false(api_player_facts(f->app, ann.player + 1000, true, &none, &e));
    assert_int_equal(e.code, ERR_NOT_FOUND);
}

/* Every operation that writes a fact forgets it: each is preceded by a read that fills the
 * entry, so without the forget the old value would come back. */
static void test_writes_forget(void **state)
{
    struct fixture *f = *state;
    struct api_caller ann = player(f->app, "ann", NULL, NULL);
    struct err e;
    assert_true(wants(f->app, ann.player, STORE_EMAIL, "turn"));
    prefs(f->app, &ann, "{\"email\":{\"turn\":false}}");
    assert_false(wants(f->app, ann.player, STORE_EMAIL, "turn"));
    assert_false(facts(f->app, ann.player).email_when_watching);
    prefs(f->app, &ann, "{\"email_when_watching\":true}");
    assert_true(facts(f->app, ann.player).email_when_watching);

    /* A webhook set, and removed. */
    assert_false(facts(f->app, ann.player).webhook);
    struct core_player out;
    struct core_player_change hook = {.webhook_given = true,
                                      .webhook_url = "https://hooks.example.org/h"};
    assert_true(core_player_update(f->app, &ann, &hook, &out, &e));
    core_player_finish(&out);
    assert_true(facts(f->app, ann.player).webhook);
    hook.webhook_url = NULL;
    assert_true(core_player_update(f->app, &ann, &hook, &out, &e));
    core_player_finish(&out);
    assert_false(facts(f->app, ann.player).webhook);

    /* An address: unconfirmed, then confirmed by the operator, then replaced (unconfirmed). */
    struct core_player_change mail = {.email_given = true, .email = "ann@example.org"};
    assert_true(core_player_update(f->app, &ann, &mail, &out, &e));
    core_player_finish(&out);
    assert_false(facts(f->app, ann.player).email);
    struct api_caller op = {.authenticated = true, .operator = true};
    char *email = NULL;
    assert_true(core_email_confirm_by_operator(f->app, &op, ann.player, &email, &e));
    free(email);
    assert_true(facts(f->app, ann.player).email);
    mail.email = "ann@example.net";
    assert_true(core_player_update(f->app, &ann, &mail, &out, &e));
    core_player_finish(&out);
    assert_false(facts(f->app, ann.player).email);

    /* A vacation rewrites the whole row (from the copy it read): forgotten too. (On
     * PostgreSQL this process hears its own announcements too, and forgets again: they
     * come first.) */
    pause_ms(pgtest_url() ? 200 : 0);
    assert_false(wants(f->app, ann.player, STORE_EMAIL, "turn"));
    behind_the_back(f, ann.player, "{\"email\":{\"turn\":true}}");
    assert_false(wants(f->app, ann.player, STORE_EMAIL, "turn"));
    assert_true(core_vacation_take(f->app, &ann, 1, &out, &e));
    core_player_finish(&out);
    assert_true(wants(f->app, ann.player, STORE_EMAIL, "turn"));
}

/* Threads read ann's facts without pause while the test flips a preference: after each
 * flip returns, the next read sees it (a read that began before the write and ended after
 * keeps nothing). */
struct reader {
    struct api_app *app;
    int64_t player;
    volatile bool *stop;
    long reads;
};

static void *reader_main(void *arg)
{
    struct reader *r = arg;
    while (!*r->stop) {
        struct api_facts f;
        struct err e;
        if (!api_player_facts(r->app, r->player, true, &f, &e))
            return NULL;
        r->reads++;
    }
    return NULL;
}

static void test_concurrent(void **state)
{
    struct fixture *f = *state;
    struct api_caller ann = player(f->app, "ann", NULL, NULL);
    volatile bool stop = false;
    struct reader r[4];
    pthread_t t[4];
    for (int i = 0; i < 4; i++) {
        r[i] = (struct reader){f->app, ann.player, &stop, 0};
        assert_int_equal(pthread_create(&t[i], NULL, reader_main, &r[i]), 0);
    }
    for (int k = 0; k < 60; k++) {
        bool on = k % 2;
        prefs(f->app, &ann, on ? "{\"email\":{\"turn\":true}}" : "{\"email\":{\"turn\":false}}");
        assert_int_equal(wants(f->app, ann.player, STORE_EMAIL, "turn"), on);
        pause_ms(1);
        assert_int_equal(wants(f->app, ann.player, STORE_EMAIL, "turn"), on);
    }
    stop = true;
    long reads = 0;
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        reads += r[i].reads;
    }
    assert_true(reads > 60); /* (they did read meanwhile) */
}

/* PostgreSQL: two applications on one database, as two processes. A change made through
 * one is announced ("p PLAYER"), and the other forgets what it kept within a moment. */
static void test_two_processes(void **state)
{
    struct fixture *f = *state;
    if (!pgtest_url())
        skip();
    struct api_app *other = app_new(&f->config);
    struct api_caller ann = player(f->app, "ann", NULL, NULL);
    for (int k = 0; k < 4; k++) {
        bool on = k % 2;
        const char *json = on ? "{\"webhook\":{\"turn\":true}}" : "{\"webhook\":{\"turn\":false}}";
        assert_int_equal(wants(other, ann.player, STORE_WEBHOOK, "turn"), !on);
        behind_the_back(f, ann.player, json);
        pause_ms(100);
        assert_int_equal(wants(other, ann.player, STORE_WEBHOOK, "turn"), !on); /* kept */
        prefs(f->app, &ann, json); /* (the same, but told) */
        int waited = 0;
        while (wants(other, ann.player, STORE_WEBHOOK, "turn") != on && waited < 2000) {
            pause_ms(1);
            waited++;
        }
        assert_int_equal(wants(other, ann.player, STORE_WEBHOOK, "turn"), on);
        printf("    the other process saw the change within %d ms\n", waited);
    }
    /* The operator confirms an address on the other. */
    struct core_player out;
    struct core_player_change mail = {.email_given = true, .email = "ann@example.org"};
    struct err e;
    assert_true(core_player_update(f->app, &ann, &mail, &out, &e));
    core_player_finish(&out);
    assert_false(facts(f->app, ann.player).email); /* (kept: unconfirmed) */
    struct api_caller op = {.authenticated = true, .operator = true};
    char *email = NULL;
    assert_true(core_email_confirm_by_operator(other, &op, ann.player, &email, &e));
    free(email);
    for (int i = 0; i < 2000 && !facts(f->app, ann.player).email; i++)
        pause_ms(1);
    assert_true(facts(f->app, ann.player).email);
    api_app_destroy(other);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_fill_hit_forget, setup, teardown),
        cmocka_unit_test_setup_teardown(test_writes_forget, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_two_processes, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
