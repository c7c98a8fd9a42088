/* test_people.c - the domain core's operations on players, identity and leagues
 * (service/core/players.c, identity.c, leagues.c), called directly with typed input on a
 * real application over a real SQLite file in a temporary directory (or a PostgreSQL
 * database: CARDPOST_TEST_PG, meson test people_pg): registration, a
 * vacation within and beyond the allowance, a wrong confirmation code, a token rotation,
 * and a league's members joining or invited (consent). Each checks the error's code and tag
 * that the HTTP edge turns into the answer (api_problem_from_err).
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
#include "handlers.h"
#include "testdb.h"

struct fixture {
    char dir[64];
    char db[128];
    struct api_app *app;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    snprintf(f->dir, sizeof f->dir, "/tmp/test_people.XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->db, sizeof f->db, "%s/cardpost.db", f->dir);
    struct config config;
    config_defaults(&config);
    snprintf(config.db, sizeof config.db, "%s", f->db);
    if (pgtest_url()) { /* the _pg run: an emptied PostgreSQL database */
        pgtest_reset();
        snprintf(config.db, sizeof config.db, "%s", pgtest_url());
    }
    snprintf(config.operator_token, sizeof config.operator_token, "%s",
             "an-operator-token-of-at-least-32-bytes");
    /* A relay that is never reached (no delivery worker runs): addresses get codes. */
    snprintf(config.smtp.url, sizeof config.smtp.url, "smtp://127.0.0.1:9");
    snprintf(config.smtp.from, sizeof config.smtp.from, "cardpost@example.org");
    config.test_clock = true;
    struct err e;
    f->app = api_app_create(&config, &e);
    if (!f->app)
        fail_msg("api_app_create: %s", e.msg);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    api_app_destroy(f->app);
    tdb_remove(f->db);
    rmdir(f->dir);
    free(f);
    return 0;
}

/* Register `name` (with `email`, or none) and return the caller its token makes. */
static struct api_caller player(struct api_app *app, const char *name, const char *email,
                                json_t *prefs, char token[API_TOKEN_CHARS])
{
    struct core_player_new in = {.name = name, .email = email, .prefs = prefs};
    struct core_player_made out;
    struct err e;
    if (!core_player_register(app, &in, &out, &e))
        fail_msg("register %s: %s", name, e.msg);
    if (token)
        memcpy(token, out.token, sizeof out.token);
    return (struct api_caller){.authenticated = true, .player = out.id};
}

/* Who the bearer `token` is: its player, or 0 when refused (401). */
static int64_t who(struct api_app *app, const char *token)
{
    char header[100];
    snprintf(header, sizeof header, "Bearer %s", token);
    struct api_caller c;
    struct err e;
    bool ok = api_authenticate(app, header, NULL, &c, &e);
    if (!ok)
        assert_int_equal(e.code, ERR_UNAUTHORIZED);
    return ok ? c.player : 0;
}

static void test_register(void **state)
{
    struct fixture *f = *state;
    char token[API_TOKEN_CHARS];
    struct api_caller ann = player(f->app, "ann", NULL, NULL, token);
    assert_true(ann.player > 0);
    assert_int_equal(who(f->app, token), ann.player);
    struct core_player p;
    struct err e;
    assert_true(core_player_get(f->app, &ann, &p, &e));
    assert_string_equal(p.rec.name, "ann");
    assert_null(p.rec.email);
    core_player_finish(&p);

    /* A refused registration writes nothing; a name with a control character, an address
     * that is not a mailbox, and an unknown preference say so. */
    struct core_player_made out;
    struct core_player_new bad = {.name = "b\tob"};
    assert_false(core_player_register(f->app, &bad, &out, &e));
    assert_int_equal(e.code, ERR_INVALID);
    assert_string_equal(e.tag, "invalid_field");
    bad = (struct core_player_new){.name = "bob", .email = "bob at example.org"};
    assert_false(core_player_register(f->app, &bad, &out, &e));
    assert_string_equal(e.tag, "invalid_email");
    json_t *prefs = json_pack("{s:b}", "whatever", true);
    bad = (struct core_player_new){.name = "bob", .prefs = prefs};
    assert_false(core_player_register(f->app, &bad, &out, &e));
    assert_string_equal(e.tag, "invalid_field");
    json_decref(prefs);
}

/* The Authorization header's forms: none is anonymous; another scheme and an empty token
 * are refused, each saying why; the word "Bearer" in any case and spaces after it are taken.
 * The token's hash given by the HTTP edge (api_bearer_hash, once a request) authenticates as
 * the token does, and a hash of another token is that other token. */
static void test_bearer_forms(void **state)
{
    struct fixture *f = *state;
    char token[API_TOKEN_CHARS];
    struct api_caller ann = player(f->app, "ann", NULL, NULL, token);
    char bob_token[API_TOKEN_CHARS];
    struct api_caller bob = player(f->app, "bob", NULL, NULL, bob_token);
    struct api_caller c;
    struct err e;
    assert_true(api_authenticate(f->app, NULL, NULL, &c, &e));
    assert_false(c.authenticated);
    assert_false(api_authenticate(f->app, "Basic YW5uOmFubg==", NULL, &c, &e));
    assert_int_equal(e.code, ERR_UNAUTHORIZED);
    assert_string_equal(e.msg, "use Authorization: Bearer <token>");
    assert_false(api_authenticate(f->app, "Bearer   ", NULL, &c, &e));
    assert_string_equal(e.msg, "the bearer token is empty");
    uint8_t hash[API_SHA256_BYTES];
    assert_false(api_bearer_hash("Bearer   ", hash));
    assert_false(api_bearer_hash("Basic YW5uOmFubg==", hash));
    assert_false(api_bearer_hash(NULL, hash));

    char header[100];
    snprintf(header, sizeof header, "bEARER   %s", token);
    assert_true(api_authenticate(f->app, header, NULL, &c, &e));
    assert_int_equal(c.player, ann.player);
    assert_true(api_bearer_hash(header, hash));
    uint8_t direct[API_SHA256_BYTES];
    api_sha256(token, strlen(token), direct);
    assert_memory_equal(hash, direct, sizeof hash);
    assert_true(api_authenticate(f->app, header, hash, &c, &e));
    assert_int_equal(c.player, ann.player);
    api_sha256(bob_token, strlen(bob_token), hash);
    assert_true(api_authenticate(f->app, header, hash, &c, &e)); /* (the hash is who) */
    assert_int_equal(c.player, bob.player);
    memset(hash, 0, sizeof hash);
    assert_false(api_authenticate(f->app, header, hash, &c, &e));
    assert_int_equal(e.code, ERR_UNAUTHORIZED);
    assert_string_equal(e.msg, "unknown token");
}

/* Seconds from the service's time to 2 January of the next year, 00:00 UTC: the vacations
 * below then fall in one calendar year whatever day the test runs. */
static int64_t to_next_year(struct api_app *app)
{
    time_t now = (time_t)(api_now_ms(app) / 1000);
    struct tm tm;
    gmtime_r(&now, &tm);
    int year = tm.tm_year + 1900;
    int days = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 366 : 365;
    int64_t into = (int64_t)tm.tm_yday * 86400 + tm.tm_hour * 3600 + tm.tm_min * 60 + tm.tm_sec;
    return (int64_t)(days + 1) * 86400 - into;
}

static void test_vacation(void **state)
{
    struct fixture *f = *state;
    struct api_caller ann = player(f->app, "ann", NULL, NULL, NULL);
    struct api_caller op = {.authenticated = true, .operator = true};
    struct core_player p;
    struct err e;
    int64_t now_ms;
    int allowance = f->app->config.vacation_days;
    assert_true(core_clock_advance(f->app, &op, to_next_year(f->app), &now_ms, &e));

    /* More than a year's allowance at once: refused before anything is read. */
    assert_false(core_vacation_take(f->app, &ann, allowance + 1, &p, &e));
    assert_int_equal(e.code, ERR_INVALID);
    assert_string_equal(e.tag, "vacation_allowance");
    core_player_finish(&p);

    /* Within it: taken, counted, and a second one while away is a conflict. */
    assert_true(core_vacation_take(f->app, &ann, allowance - 10, &p, &e));
    assert_int_equal(p.rec.vacation_days_used, allowance - 10);
    assert_int_equal(p.rec.vacation_until, p.now + (int64_t)(allowance - 10) * 86400);
    core_player_finish(&p);
    assert_false(core_vacation_take(f->app, &ann, 1, &p, &e));
    assert_int_equal(e.code, ERR_CONFLICT);
    assert_string_equal(e.tag, "on_vacation");
    core_player_finish(&p);

    /* Back: what is left of the year's allowance is 10 days; 11 are refused, 10 are not. */
    assert_true(core_clock_advance(f->app, &op, (int64_t)(allowance - 10) * 86400 + 1, &now_ms,
                                   &e));
    assert_false(core_vacation_end(f->app, &ann, &p, &e));
    assert_string_equal(e.tag, "not_on_vacation");
    core_player_finish(&p);
    assert_false(core_vacation_take(f->app, &ann, 11, &p, &e));
    assert_int_equal(e.code, ERR_INVALID);
    assert_string_equal(e.tag, "vacation_allowance");
    core_player_finish(&p);
    assert_true(core_vacation_take(f->app, &ann, 10, &p, &e));
    assert_int_equal(p.rec.vacation_days_used, allowance);
    core_player_finish(&p);

    /* Ended three days in: the seven whole days not taken go back. */
    assert_true(core_clock_advance(f->app, &op, 3 * 86400, &now_ms, &e));
    assert_true(core_vacation_end(f->app, &ann, &p, &e));
    assert_int_equal(p.rec.vacation_days_used, allowance - 7);
    core_player_finish(&p);
}

static void test_email_confirm(void **state)
{
    struct fixture *f = *state;
    struct api_caller ann = player(f->app, "ann", "ann@example.org", NULL, NULL);
    struct api_caller bob = player(f->app, "bob", NULL, NULL, NULL);
    struct err e;
    static const char wrong[] = "cpc_00000000000000000000000000000000";
    assert_false(core_email_confirm(f->app, &ann, wrong, strlen(wrong), &e));
    assert_int_equal(e.code, ERR_INVALID);
    assert_string_equal(e.tag, "bad_code");
    struct core_player p;
    assert_true(core_player_get(f->app, &ann, &p, &e));
    assert_false(p.rec.email_confirmed);
    core_player_finish(&p);
    assert_false(core_email_confirm(f->app, &bob, wrong, strlen(wrong), &e));
    assert_int_equal(e.code, ERR_CONFLICT);
    assert_string_equal(e.tag, "no_email");

    /* The operator confirms without a code; a player may not. */
    char *email = NULL;
    assert_false(core_email_confirm_by_operator(f->app, &bob, ann.player, &email, &e));
    assert_int_equal(e.code, ERR_FORBIDDEN);
    struct api_caller op = {.authenticated = true, .operator = true};
    assert_true(core_email_confirm_by_operator(f->app, &op, ann.player, &email, &e));
    assert_string_equal(email, "ann@example.org");
    free(email);
    assert_true(core_player_get(f->app, &ann, &p, &e));
    assert_true(p.rec.email_confirmed);
    core_player_finish(&p);
}

static void test_token_rotate(void **state)
{
    struct fixture *f = *state;
    char old[API_TOKEN_CHARS], fresh[API_TOKEN_CHARS];
    struct api_caller ann = player(f->app, "ann", NULL, NULL, old);
    assert_int_equal(who(f->app, old), ann.player); /* (now in the token cache too) */
    struct err e;
    assert_true(core_token_rotate(f->app, &ann, fresh, &e));
    assert_string_not_equal(old, fresh);
    assert_int_equal(who(f->app, old), 0);
    assert_int_equal(who(f->app, fresh), ann.player);

    /* The operator revokes: no token works until one is issued. */
    struct api_caller op = {.authenticated = true, .operator = true};
    assert_false(core_token_revoke(f->app, &ann, ann.player, &e));
    assert_int_equal(e.code, ERR_FORBIDDEN);
    assert_true(core_token_revoke(f->app, &op, ann.player, &e));
    assert_int_equal(who(f->app, fresh), 0);
    assert_true(core_token_issue(f->app, &op, ann.player, fresh, &e));
    assert_int_equal(who(f->app, fresh), ann.player);
}

static void test_league_consent(void **state)
{
    struct fixture *f = *state;
    struct api_caller ann = player(f->app, "ann", NULL, NULL, NULL);
    struct api_caller bob = player(f->app, "bob", NULL, NULL, NULL);
    json_t *yes = json_pack("{s:b}", "seat_without_asking", true);
    struct api_caller cat = player(f->app, "cat", NULL, yes, NULL);
    json_decref(yes);
    struct api_caller nobody = {0};

    struct core_league_new in = {.name = "Tuesdays", .game = RULES_GAME_HEARTS,
                                 .points = "[3,2,1,0]"};
    struct err e;
    assert_true(tlog_options_parse(in.game, NULL, &in.options, &e));
    struct store_league l;
    assert_false(core_league_create(f->app, &nobody, &in, &l, &e));
    assert_int_equal(e.code, ERR_UNAUTHORIZED);
    assert_true(core_league_create(f->app, &ann, &in, &l, &e));
    assert_int_equal(l.organizer, ann.player);
    assert_string_equal(l.game, "hearts");
    int64_t id = l.id;
    store_league_finish(&l);

    enum core_join how;
    char *name;
    int64_t at;
    /* The organiser names bob: he is invited, not enrolled, until he joins himself. */
    assert_true(core_league_member_add(f->app, &ann, id, bob.player, &how, &name, &at, &e));
    assert_int_equal(how, CORE_INVITED);
    assert_string_equal(name, "bob");
    free(name);
    assert_false(core_league_member_add(f->app, &ann, id, bob.player, &how, &name, &at, &e));
    assert_int_equal(e.code, ERR_CONFLICT);
    assert_string_equal(e.tag, "already_invited");
    /* Only the organiser invites others. */
    assert_false(core_league_member_add(f->app, &bob, id, cat.player, &how, &name, &at, &e));
    assert_int_equal(e.code, ERR_FORBIDDEN);
    assert_true(core_league_member_add(f->app, &bob, id, bob.player, &how, &name, &at, &e));
    assert_int_equal(how, CORE_JOINED);
    free(name);
    assert_false(core_league_member_add(f->app, &bob, id, bob.player, &how, &name, &at, &e));
    assert_int_equal(e.code, ERR_CONFLICT);
    assert_string_equal(e.tag, "already_member");
    /* cat lets others seat her without asking: enrolled at once. */
    assert_true(core_league_member_add(f->app, &ann, id, cat.player, &how, &name, &at, &e));
    assert_int_equal(how, CORE_JOINED);
    free(name);
    assert_false(core_league_member_add(f->app, &ann, id, 999999, &how, &name, &at, &e));
    assert_string_equal(e.tag, "unknown_player");

    struct core_league_view v;
    assert_true(core_league_get(f->app, id, &v, &e));
    assert_int_equal(v.nmembers, 2);
    assert_int_equal(v.ninvited, 0);
    assert_int_equal(v.league.members, 2);
    core_league_view_finish(&v);
    assert_false(core_league_get(f->app, id + 1, &v, &e));
    assert_int_equal(e.code, ERR_NOT_FOUND);

    /* bob leaves (no match to forfeit); ann removes an invitation of hers. */
    bool uninvited;
    int64_t *forfeited;
    int n;
    assert_true(core_league_member_remove(f->app, &bob, id, bob.player, &uninvited, &forfeited,
                                          &n, &e));
    assert_false(uninvited);
    assert_int_equal(n, 0);
    free(forfeited);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_register, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bearer_forms, setup, teardown),
        cmocka_unit_test_setup_teardown(test_vacation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_email_confirm, setup, teardown),
        cmocka_unit_test_setup_teardown(test_token_rotate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_league_consent, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
