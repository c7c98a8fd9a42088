/* test_notation.c - cards and moves as text (turn-log.md §1): lenient input, canonical
 * output, and hostile input that must be refused without a crash. Table-driven.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "rules.h"

struct row {
    const char *input;
    const char *canonical; /* NULL: must be refused */
};

static const struct row rows[] = {
    {"play QS", "play QS"},
    {"PLAY qs", "play QS"},
    {"  play qs \r\n", "play QS"},
    {"\tplay 10h", "play TH"},
    {"play 10♥", "play TH"},
    {"play Q♠", "play QS"},
    {"play 2♣", "play 2C"},
    {"play A♦", "play AD"},
    {"play tc", "play TC"},
    {"pass TH 7D 2C", "pass 2C 7D TH"},
    {"pass 2c 2c 3c", "pass 2C 3C"}, /* parses; the game refuses the duplicate */
    {"moon add", "moon add"},
    {"MOON Subtract", "moon subtract"},
    {"resign", "resign"},
    {"Resign", "resign"},
    {"lead 9d", "lead 9D"},
    {"take JC", "take JC"},
    {"stay", "stay"},
    {"drop", "drop"},
    {"discard", "discard"},
    {"discard 3h kd", "discard KD 3H"},
    {"move 5S", "move 5S"},
    {"flip 3", "flip 3"},
    {"ready", "ready"},
    /* refused */
    {"", NULL},
    {"   ", NULL},
    {"play", NULL},
    {"play QS QH", NULL},
    {"play  QS", NULL},
    {"play\tQS", NULL},
    {"play QX", NULL},
    {"play 1S", NULL},
    {"play 11S", NULL},
    {"play 10", NULL},
    {"play Q", NULL},
    {"play ♠Q", NULL},
    {"play Q♤", NULL},
    {"jump QS", NULL},
    {"moon", NULL},
    {"moon both", NULL},
    {"flip 0", NULL},
    {"flip 6", NULL},
    {"flip 12", NULL},
    {"flip", NULL},
    {"resign now", NULL},
    {"ready set", NULL},
    {"pass 2C 3C XX", NULL},
    {"play QS\nplay 2C", NULL},
};

static void test_rows(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        struct rules_move m;
        struct err e;
        bool ok = rules_move_parse(rows[i].input, strlen(rows[i].input), &m, &e);
        if (!rows[i].canonical) {
            if (ok)
                fail_msg("row %zu '%s' was accepted", i, rows[i].input);
            assert_string_equal(e.tag, "bad_notation");
            continue;
        }
        if (!ok)
            fail_msg("row %zu '%s' was refused: %s", i, rows[i].input, e.msg);
        char text[RULES_MOVE_TEXT_MAX];
        rules_move_format(&m, text, sizeof text);
        assert_string_equal(text, rows[i].canonical);
    }
}

/* A buffer shorter than the text holds what fits, NUL-terminated, and the length is the
 * whole text's (as snprintf's); a set of every bit (12 past the deck) still fits the room. */
static void test_format_short_buffer(void **state)
{
    (void)state;
    struct rules_move m;
    assert_true(rules_move_parse("pass TH 7D 2C", 13, &m, NULL));
    char small[8] = "xxxxxxx";
    assert_int_equal(rules_move_format(&m, small, sizeof small), 13);
    assert_string_equal(small, "pass 2C");
    assert_int_equal(rules_move_format(&m, small, 0), 13);
    assert_string_equal(small, "pass 2C"); /* (untouched) */
    m = (struct rules_move){.verb = RULES_DISCARD, .cards = UINT64_MAX};
    char text[RULES_MOVE_TEXT_MAX];
    assert_int_equal(rules_move_format(&m, text, sizeof text), 7 + 3 * 64);
    assert_int_equal(strlen(text), 7 + 3 * 64);
    assert_memory_equal(text, "discard 2C 3C", 13);
    assert_string_equal(text + 7 + 3 * 51, " AS ?? ?? ?? ?? ?? ?? ?? ?? ?? ?? ?? ??");
    m = (struct rules_move){.verb = RULES_NVERBS};
    assert_int_equal(rules_move_format(&m, text, sizeof text), 1);
    assert_string_equal(text, "?");
}

/* A set of cards as a JSON array's text, lowest first; none is []; past the deck, "??". */
static void test_cards_json(void **state)
{
    (void)state;
    char text[RULES_CARDS_JSON_MAX + 1];
    size_t n = rules_cards_json(0, text);
    text[n] = '\0';
    assert_string_equal(text, "[]");
    n = rules_cards_json(UINT64_C(1) << 51 | UINT64_C(1) << 13 | 1, text);
    text[n] = '\0';
    assert_string_equal(text, "[\"2C\",\"2D\",\"AS\"]");
    n = rules_cards_json(UINT64_MAX, text);
    assert_int_equal(n, RULES_CARDS_JSON_MAX - 1); /* (no comma after the last) */
    text[n] = '\0';
    assert_string_equal(text + n - 6, ",\"??\"]");
}

static void test_embedded_nul(void **state)
{
    (void)state;
    struct rules_move m;
    assert_false(rules_move_parse("play QS\0x", 9, &m, NULL));
    assert_false(rules_move_parse("play Q\0", 7, &m, NULL));
}

static void test_every_card_round_trips(void **state)
{
    (void)state;
    for (int c = 0; c < RULES_NCARDS; c++) {
        char text[3];
        rules_card_format((rules_card)c, text);
        rules_card back;
        assert_true(rules_card_parse(text, 2, &back));
        assert_int_equal(back, c);
    }
    char text[3];
    rules_card_format(0, text);
    assert_string_equal(text, "2C");
    rules_card_format(51, text);
    assert_string_equal(text, "AS");
}

static void test_duplicate_counted(void **state)
{
    (void)state;
    struct rules_move m;
    assert_true(rules_move_parse("pass 2c 2c 3c", 13, &m, NULL));
    assert_int_equal(m.ncards, 3);
    assert_int_equal(rules_popcount(m.cards), 2);
}

static void test_games_and_realtime(void **state)
{
    (void)state;
    static const char *const names[] = {"hearts", "horseshoe", "snag", "horse-thief", "speed"};
    for (int g = 0; g < RULES_NGAMES; g++) {
        enum rules_game_id id;
        assert_true(rules_game_lookup(names[g], &id));
        assert_int_equal(id, g);
        assert_string_equal(rules_game_name(id), names[g]);
        assert_int_equal(rules_game_realtime(id), g == RULES_GAME_SPEED);
        assert_int_equal(rules_game_low_wins(id), g == RULES_GAME_HEARTS);
    }
    enum rules_game_id id;
    assert_false(rules_game_lookup("Hearts", &id));
    assert_false(rules_game_lookup("uno", &id));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows),
        cmocka_unit_test(test_format_short_buffer),
        cmocka_unit_test(test_cards_json),
        cmocka_unit_test(test_embedded_nul),
        cmocka_unit_test(test_every_card_round_trips),
        cmocka_unit_test(test_duplicate_counted),
        cmocka_unit_test(test_games_and_realtime),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
