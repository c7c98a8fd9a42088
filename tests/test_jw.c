/* test_jw.c - the JSON text writer (base/jw.h) writes exactly the bytes jansson's
 * json_dumps(JSON_COMPACT) writes for the same values: hand-made values with every escape,
 * and the views and legal-move lists of every game at every position of random matches,
 * for every viewer (the service answers with the text; the streams and webhooks with the
 * tree, so the two must agree).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "jw.h"
#include "testlib.h"
#include "turnlog.h"

/* Assert the writer's text equals json_dumps of `tree` (which is released). */
static void same(struct jw *w, json_t *tree)
{
    size_t len = 0;
    char *text = jw_finish(w, &len);
    char *want = json_dumps(tree, JSON_COMPACT | JSON_ENCODE_ANY);
    assert_non_null(text);
    assert_non_null(want);
    assert_int_equal(len, strlen(text));
    assert_string_equal(text, want);
    free(text);
    free(want);
    json_decref(tree);
}

static void test_values(void **state)
{
    (void)state;
    static const char *const strings[] = {
        "", "plain", "quote \" and backslash \\", "slash / stays", "tab\there\nnew\rline",
        "\b\f\x01\x1f\x7f", "caf\xc3\xa9 \xe2\x99\xa0 \xf0\x9f\x82\xa1", "a\"b\\c\"",
    };
    struct jw w;
    jw_init(&w);
    jw_object_begin(&w, NULL);
    json_t *o = json_object();
    for (size_t i = 0; i < sizeof strings / sizeof strings[0]; i++) {
        char key[16];
        snprintf(key, sizeof key, "k%zu", i);
        jw_string(&w, key, strings[i]);
        json_object_set_new(o, key, json_string(strings[i]));
    }
    jw_string(&w, "ke\"y\n", "v");
    json_object_set_new(o, "ke\"y\n", json_string("v"));
    /* Keys about jw.c's JW_KEY_FAST (32 bytes written as they are read): shorter, as long,
     * longer, with a byte to escape last within it and first past it, and empty. */
    static const char *const keys[] = {
        "abcdefghijklmnopqrstuvwxyz01234", "abcdefghijklmnopqrstuvwxyz012345",
        "abcdefghijklmnopqrstuvwxyz0123456", "abcdefghijklmnopqrstuvwxyz01234\"",
        "abcdefghijklmnopqrstuvwxyz012345\\", "\x1f", "",
    };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        jw_int(&w, keys[i], (int64_t)i);
        json_object_set_new(o, keys[i], json_integer((json_int_t)i));
    }
    /* Longer than jw.c's JW_SHORT: escaped in pieces, a key as a value. */
    char longer[3001];
    for (size_t i = 0; i < sizeof longer - 1; i++)
        longer[i] = "ab\"\\\n\x01c"[i % 7];
    longer[sizeof longer - 1] = '\0';
    jw_string(&w, longer, longer + 1000);
    json_object_set_new(o, longer, json_string(longer + 1000));
    jw_plain(&w, "plain", "pass 2C 3D 4H", 13);
    json_object_set_new(o, "plain", json_string("pass 2C 3D 4H"));
    /* (8 digits and 9: jw_int's two ways, buf_decimal_at) */
    static const int64_t ints[] = {0,         1,         -1,        9,         10,        12345678,
                                   99999999,  100000000, -99999999, 1234567890123, INT64_MAX,
                                   INT64_MIN};
    jw_array_begin(&w, "ints");
    json_t *a = json_array();
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        jw_int(&w, NULL, ints[i]);
        json_array_append_new(a, json_integer(ints[i]));
    }
    jw_array_end(&w);
    json_object_set_new(o, "ints", a);
    jw_bool(&w, "t", true);
    jw_bool(&w, "f", false);
    jw_null(&w, "n");
    jw_object_begin(&w, "empty");
    jw_object_end(&w);
    jw_array_begin(&w, "none");
    jw_array_end(&w);
    jw_array_begin(&w, "nested");
    jw_array_begin(&w, NULL);
    jw_object_begin(&w, NULL);
    jw_raw(&w, "raw", "[1,{\"x\":null}]", 14);
    jw_object_end(&w);
    jw_array_end(&w);
    jw_array_end(&w);
    jw_object_end(&w);
    json_object_set_new(o, "t", json_true());
    json_object_set_new(o, "f", json_false());
    json_object_set_new(o, "n", json_null());
    json_object_set_new(o, "empty", json_object());
    json_object_set_new(o, "none", json_array());
    json_object_set_new(o, "nested", json_pack("[[{s:[i,{s:n}]}]]", "raw", 1, "x"));
    same(&w, o);

    /* Unbalanced containers give no text. */
    jw_init(&w);
    jw_object_begin(&w, NULL);
    assert_null(jw_finish(&w, NULL));
    jw_init(&w);
    jw_array_end(&w);
    assert_null(jw_finish(&w, NULL));
}

/* Random matches of every game: at each position, every viewer's view and legal list. */
static void test_views(void **state)
{
    (void)state;
    uint64_t rng = 2026;
    int positions = 0;
    for (int g = 0; g < RULES_NGAMES; g++) {
        for (int match = 0; match < 3; match++) {
            struct rules_options o;
            struct err e;
            rules_options_default((enum rules_game_id)g, &o);
            struct rules_state st;
            assert_true(rules_init(&st, (enum rules_game_id)g, &o, &e));
            for (int step = 0; step < 5000 && !st.over; step++) {
                enum rules_due due = rules_due(&st);
                if (due != RULES_DUE_NONE) {
                    rules_card cards[RULES_NCARDS];
                    int n = rules_chance_source(&st, cards);
                    for (int i = n - 1; i > 0; i--) {
                        int j = (int)tl_below(&rng, (uint32_t)i + 1);
                        rules_card t = cards[i];
                        cards[i] = cards[j];
                        cards[j] = t;
                    }
                    assert_true(rules_chance(&st, due, cards, n, &e));
                    continue;
                }
                if (step % 3 == 0 || st.nseats == 2)
                    for (int seat = RULES_SEAT_ALL; seat < st.nseats; seat++) {
                        struct jw w;
                        jw_init(&w);
                        tlog_view_write(&w, NULL, &st, seat);
                        same(&w, tlog_view_json(&st, seat));
                        jw_init(&w);
                        tlog_moves_write(&w, NULL, &st, seat);
                        same(&w, tlog_moves_json(&st, seat));
                        positions++;
                    }
                uint32_t to_move = rules_to_move(&st);
                int seats[RULES_MAX_SEATS], ns = 0;
                for (int s = 0; s < st.nseats; s++)
                    if (to_move & (1u << s))
                        seats[ns++] = s;
                assert_true(ns > 0);
                int seat = seats[tl_below(&rng, (uint32_t)ns)];
                static struct rules_move moves[RULES_MAX_LEGAL];
                int n = rules_legal(&st, seat, moves, RULES_MAX_LEGAL);
                assert_true(n > 0);
                assert_true(rules_apply(&st, seat, &moves[tl_below(&rng, (uint32_t)n)], &e));
            }
            /* And the finished match, which everyone sees whole. */
            struct jw w;
            jw_init(&w);
            tlog_view_write(&w, NULL, &st, 0);
            same(&w, tlog_view_json(&st, 0));
        }
    }
    assert_true(positions > 1000);
}

/* An event's members (what a stream writes, "seq" after them) are the log's event object. */
static void test_events(void **state)
{
    (void)state;
    rules_card deck[RULES_NCARDS];
    for (int i = 0; i < RULES_NCARDS; i++)
        deck[i] = (rules_card)i;
    struct tlog_event evs[] = {
        {.kind = TLOG_DEAL, .ncards = 13},
        {.kind = TLOG_SHUFFLE, .ncards = RULES_NCARDS},
        {.kind = TLOG_DEAL, .ncards = 0},
        {.kind = TLOG_MOVE, .seat = 2, .move = "QS", .move_len = 2},
        {.kind = TLOG_MOVE, .seat = 0, .move = "pass 2C 3D 4H", .move_len = 13, .automatic = true},
    };
    for (size_t i = 0; i < sizeof evs / sizeof evs[0]; i++) {
        memcpy(evs[i].cards, deck, evs[i].ncards * sizeof deck[0]);
        struct jw w;
        jw_init(&w);
        jw_object_begin(&w, NULL);
        tlog_event_members(&w, &evs[i]);
        jw_int(&w, "seq", (int64_t)i + 40);
        jw_object_end(&w);
        json_t *tree = tlog_event_json(&evs[i]);
        json_object_set_new(tree, "seq", json_integer((json_int_t)i + 40));
        same(&w, tree);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_views),
        cmocka_unit_test(test_events),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
