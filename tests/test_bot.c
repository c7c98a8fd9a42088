/* test_bot.c - the policies of `cardpost bot` (service/client/bot.c, docs/bots.md) on hand-made
 * views: each sensible rule picks the move it documents (the first legal move otherwise),
 * and the random policy is uniform over `legal` and repeatable from its seed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "bot.h"

/* The move `policy` picks for the state `json` (a view answer: game, you, view, legal). */
static const char *pick(const char *policy, const char *json)
{
    static char out[64];
    json_error_t e;
    json_t *state = json_loads(json, 0, &e);
    assert_non_null(state);
    uint64_t rng = 1;
    int i = bot_choose(policy, state, &rng);
    assert_true(i >= 0);
    snprintf(out, sizeof out, "%s", json_string_value(json_array_get(json_object_get(state,
                                                                                       "legal"),
                                                                      (size_t)i)));
    json_decref(state);
    return out;
}

#define HEARTS(view, legal)                                                                    \
    "{\"game\": \"hearts\", \"you\": 1, \"view\": " view ", \"legal\": " legal "}"

static void hearts_ducks_under_the_trick(void **unused)
{
    (void)unused;
    const char *s = HEARTS("{\"phase\": \"play\", \"tricks\": [{\"leader\": 0, \"cards\": "
                           "[\"2C\", \"5C\", \"TC\", \"AC\"], \"winner\": 3}, {\"leader\": 0, "
                           "\"cards\": [\"KD\"]}]}",
                           "[\"play 5D\", \"play QD\", \"play AD\"]");
    assert_string_equal(pick("sensible", s), "play QD");
    /* every card wins: the lowest */
    s = HEARTS("{\"phase\": \"play\", \"tricks\": [{\"leader\": 0, \"cards\": [\"4D\"]}]}",
               "[\"play 9D\", \"play 5D\", \"play AD\"]");
    assert_string_equal(pick("sensible", s), "play 5D");
}

static void hearts_dumps_when_void(void **unused)
{
    (void)unused;
    const char *s = HEARTS("{\"phase\": \"play\", \"tricks\": [{\"leader\": 0, \"cards\": "
                           "[\"4D\"]}]}",
                           "[\"play 3C\", \"play 9H\", \"play QS\", \"play KS\"]");
    assert_string_equal(pick("sensible", s), "play QS");
    s = HEARTS("{\"phase\": \"play\", \"tricks\": [{\"leader\": 0, \"cards\": [\"4D\"]}]}",
               "[\"play 3C\", \"play JH\", \"play 9H\", \"play AC\"]");
    assert_string_equal(pick("sensible", s), "play JH");
    s = HEARTS("{\"phase\": \"play\", \"tricks\": [{\"leader\": 0, \"cards\": [\"4D\"]}]}",
               "[\"play 3C\", \"play AC\", \"play 9S\"]");
    assert_string_equal(pick("sensible", s), "play AC");
}

static void hearts_leads_low_and_passes_danger(void **unused)
{
    (void)unused;
    const char *s = HEARTS("{\"phase\": \"play\", \"tricks\": [{\"leader\": 0, \"cards\": "
                           "[\"2C\", \"5C\", \"TC\", \"AC\"], \"winner\": 1}]}",
                           "[\"play 9C\", \"play 4D\", \"play KS\"]");
    assert_string_equal(pick("sensible", s), "play 4D");
    s = HEARTS("{\"phase\": \"pass\", \"hands\": [{\"seat\": 0, \"count\": 13}, {\"seat\": 1, "
               "\"count\": 6, \"cards\": [\"2C\", \"3C\", \"AD\", \"5H\", \"QS\", \"AS\"]}]}",
               "[\"pass 2C 3C AD\", \"pass AD QS AS\", \"pass 5H QS AS\"]");
    assert_string_equal(pick("sensible", s), "pass 5H QS AS");
    /* the moon choice is left to the first legal move */
    s = HEARTS("{\"phase\": \"moon\"}", "[\"moon add\", \"moon subtract\"]");
    assert_string_equal(pick("sensible", s), "moon add");
}

#define HT(view, legal)                                                                        \
    "{\"game\": \"horse-thief\", \"you\": 0, \"view\": " view ", \"legal\": " legal "}"

static void horse_thief_stays_with_trumps_or_a_bower(void **unused)
{
    (void)unused;
    /* the left bower alone (JD under hearts) */
    const char *s = HT("{\"phase\": \"stay\", \"trump\": \"H\", \"seats\": [{\"cards\": "
                       "[\"3C\", \"8C\", \"JD\", \"5S\", \"9S\"]}]}",
                       "[\"stay\", \"drop\"]");
    assert_string_equal(pick("sensible", s), "stay");
    s = HT("{\"phase\": \"stay\", \"trump\": \"H\", \"seats\": [{\"cards\": "
           "[\"3C\", \"8C\", \"AH\", \"5S\", \"9S\"]}]}",
           "[\"stay\", \"drop\"]");
    assert_string_equal(pick("sensible", s), "drop");
    s = HT("{\"phase\": \"stay\", \"trump\": \"H\", \"seats\": [{\"cards\": "
           "[\"3C\", \"8C\", \"2H\", \"3H\", \"9S\"]}]}",
           "[\"stay\", \"drop\"]");
    assert_string_equal(pick("sensible", s), "stay");
}

static void horse_thief_discards_and_wins_cheaply(void **unused)
{
    (void)unused;
    const char *s = HT("{\"phase\": \"discard\", \"trump\": \"H\", \"draw_limit\": 3, "
                       "\"seats\": [{\"cards\": [\"2C\", \"AC\", \"KD\", \"5H\", \"7S\"]}]}",
                       "[\"discard\", \"discard 2C\", \"discard 2C KD 7S\", \"discard AC\"]");
    assert_string_equal(pick("sensible", s), "discard 2C KD 7S");
    /* spades trump: JC is the left bower; 5S is the lowest card that beats TH */
    s = HT("{\"phase\": \"play\", \"trump\": \"S\", \"seats\": [{\"cards\": []}], \"tricks\": "
           "[{\"leader\": 1, \"plays\": [{\"seat\": 1, \"card\": \"TH\"}]}]}",
           "[\"play 2C\", \"play JC\", \"play 5S\"]");
    assert_string_equal(pick("sensible", s), "play 5S");
    s = HT("{\"phase\": \"play\", \"trump\": \"S\", \"seats\": [{\"cards\": []}], \"tricks\": "
           "[{\"leader\": 1, \"plays\": [{\"seat\": 1, \"card\": \"TH\"}]}]}",
           "[\"play 9H\", \"play QH\", \"play AH\"]");
    assert_string_equal(pick("sensible", s), "play QH");
    /* cannot win: the weakest card */
    s = HT("{\"phase\": \"play\", \"trump\": \"S\", \"seats\": [{\"cards\": []}], \"tricks\": "
           "[{\"leader\": 1, \"plays\": [{\"seat\": 1, \"card\": \"AH\"}]}]}",
           "[\"play KC\", \"play 3D\", \"play KD\"]");
    assert_string_equal(pick("sensible", s), "play 3D");
}

#define SNAG(view, legal)                                                                      \
    "{\"game\": \"snag\", \"you\": 1, \"view\": " view ", \"legal\": " legal "}"

static void snag_plays_for_its_long_suit(void **unused)
{
    (void)unused;
    const char *s = SNAG("{\"phase\": \"take\", \"taken\": [[\"9C\"], [\"2H\", \"5H\"]], "
                         "\"hands\": [{\"seat\": 0}, {\"seat\": 1, \"cards\": [\"3C\"]}]}",
                         "[\"take 9C\", \"take 4H\"]");
    assert_string_equal(pick("sensible", s), "take 4H");
    s = SNAG("{\"phase\": \"lead\", \"taken\": [[], [\"2S\"]], \"hands\": [{\"seat\": 0}, "
             "{\"seat\": 1, \"cards\": [\"3C\"]}]}",
             "[\"lead AD\", \"lead 6S\"]");
    assert_string_equal(pick("sensible", s), "lead 6S");
    /* the trick holds a spade: play high to win it; else low */
    s = SNAG("{\"phase\": \"play\", \"taken\": [[], [\"2S\"]], \"hands\": [{\"seat\": 0}, "
             "{\"seat\": 1, \"cards\": [\"3C\", \"JC\"]}], \"trick\": {\"cards\": [{\"seat\": "
             "0, \"card\": \"9S\"}]}}",
             "[\"play 3C\", \"play JC\"]");
    assert_string_equal(pick("sensible", s), "play JC");
    s = SNAG("{\"phase\": \"play\", \"taken\": [[], [\"2S\"]], \"hands\": [{\"seat\": 0}, "
             "{\"seat\": 1, \"cards\": [\"3C\", \"JC\"]}], \"trick\": {\"cards\": [{\"seat\": "
             "0, \"card\": \"9D\"}]}}",
             "[\"play JC\", \"play 3C\"]");
    assert_string_equal(pick("sensible", s), "play 3C");
}

static void speed_plays_then_flips_then_moves(void **unused)
{
    (void)unused;
    const char *s = "{\"game\": \"speed\", \"you\": 0, \"view\": {}, \"legal\": "
                    "[\"move 9C\", \"flip 2\", \"ready\"]}";
    assert_string_equal(pick("sensible", s), "flip 2");
    s = "{\"game\": \"speed\", \"you\": 0, \"view\": {}, \"legal\": "
        "[\"play 9D\", \"move 9C\", \"flip 2\", \"ready\"]}";
    assert_string_equal(pick("sensible", s), "play 9D");
    s = "{\"game\": \"speed\", \"you\": 0, \"view\": {}, \"legal\": [\"ready\"]}";
    assert_string_equal(pick("sensible", s), "ready");
}

#define HS(cards, trick, legal)                                                                \
    "{\"game\": \"horseshoe\", \"you\": 1, \"view\": {\"hands\": [{\"seat\": 0}, {\"seat\": "  \
    "1, \"cards\": " cards "}], \"boards\": [{\"columns\": []}, {\"columns\": [{\"up\": "      \
    "\"KC\"}, {\"up\": null}]}], \"trick\": " trick "}, \"legal\": " legal "}"

static void horseshoe_pairs_else_wins_low(void **unused)
{
    (void)unused;
    /* card 3 pairs card 2 */
    const char *s = HS("[\"2C\", \"7C\"]",
                       "{\"cards\": [{\"seat\": 0, \"card\": \"AH\"}, {\"seat\": 1, \"card\": "
                       "\"7D\"}]}",
                       "[\"play 2C\", \"play 7C\", \"play KC\"]");
    assert_string_equal(pick("sensible", s), "play 7C");
    /* card 4: no pair; the lowest heart above 9H */
    s = HS("[\"4H\", \"TH\"]",
           "{\"cards\": [{\"seat\": 1, \"card\": \"9H\"}, {\"seat\": 0, \"card\": \"2H\"}, "
           "{\"seat\": 0, \"card\": \"3C\"}]}",
           "[\"play 4H\", \"play TH\", \"play KH\"]");
    assert_string_equal(pick("sensible", s), "play TH");
    /* card 4 pairs card 1 */
    s = HS("[\"4H\", \"9D\"]",
           "{\"cards\": [{\"seat\": 1, \"card\": \"9H\"}, {\"seat\": 0, \"card\": \"2H\"}, "
           "{\"seat\": 0, \"card\": \"3C\"}]}",
           "[\"play 4H\", \"play 9D\"]");
    assert_string_equal(pick("sensible", s), "play 9D");
    /* leading: a card the board's KC pairs, rather than the higher AD */
    s = HS("[\"AD\", \"KH\"]", "null", "[\"play AD\", \"play KH\"]");
    assert_string_equal(pick("sensible", s), "play KH");
}

static void random_is_uniform_and_seeded(void **unused)
{
    (void)unused;
    json_t *state = json_loads("{\"game\": \"snag\", \"you\": 0, \"view\": {}, \"legal\": "
                               "[\"a\", \"b\", \"c\", \"d\"]}",
                               0, NULL);
    int count[4] = {0}, first[32];
    uint64_t rng = 42;
    for (int i = 0; i < 4000; i++) {
        int k = bot_choose("random", state, &rng);
        assert_true(k >= 0 && k < 4);
        count[k]++;
        if (i < 32)
            first[i] = k;
    }
    for (int k = 0; k < 4; k++)
        assert_true(count[k] > 850 && count[k] < 1150);
    rng = 42;
    for (int i = 0; i < 32; i++)
        assert_int_equal(bot_choose("random", state, &rng), first[i]);
    json_object_set_new(state, "legal", json_array());
    assert_int_equal(bot_choose("random", state, &rng), -1);
    assert_int_equal(bot_choose("sensible", state, &rng), -1);
    json_decref(state);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(hearts_ducks_under_the_trick),
        cmocka_unit_test(hearts_dumps_when_void),
        cmocka_unit_test(hearts_leads_low_and_passes_danger),
        cmocka_unit_test(horse_thief_stays_with_trumps_or_a_bower),
        cmocka_unit_test(horse_thief_discards_and_wins_cheaply),
        cmocka_unit_test(snag_plays_for_its_long_suit),
        cmocka_unit_test(speed_plays_then_flips_then_moves),
        cmocka_unit_test(horseshoe_pairs_else_wins_low),
        cmocka_unit_test(random_is_uniform_and_seeded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
