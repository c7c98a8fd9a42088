/* test_redact.c - the log as each viewer may see it (turn-log.md §6): deals omitted, the
 * seed withheld, secret moves hidden until their phase resolves, a pass's cards shown only
 * to the giver and, after the exchange, the receiver; the whole log once the match is over.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testlib.h"
#include "turnlog.h"

/* A 4-seat Hearts log with a dealt hand and `npasses` of its four passes (seats 0..). */
static struct tlog *hearts_log(int npasses, struct rules_state *st)
{
    struct rules_options o;
    rules_options_default(RULES_GAME_HEARTS, &o);
    struct tlog *log = tlog_create(RULES_GAME_HEARTS, &o, NULL);
    assert_non_null(log);
    json_t *seed = json_string("00");
    tlog_set_meta(log, "seed", seed);
    json_decref(seed);
    uint64_t rng = 42;
    rules_card deck[RULES_NCARDS];
    tl_random_deck(&rng, deck);
    assert_true(rules_init(st, RULES_GAME_HEARTS, &o, NULL));
    assert_true(rules_chance(st, RULES_DUE_DEAL, deck, RULES_NCARDS, NULL));
    assert_true(tlog_append_chance(log, TLOG_DEAL, deck, RULES_NCARDS, NULL));
    for (int s = 0; s < npasses; s++) {
        struct rules_move m[RULES_MAX_LEGAL];
        assert_true(rules_legal(st, s, m, RULES_MAX_LEGAL) > 0);
        char text[RULES_MOVE_TEXT_MAX];
        rules_move_format(&m[0], text, sizeof text);
        assert_true(rules_apply(st, s, &m[0], NULL));
        assert_true(tlog_append_move(log, s, text, false, NULL));
    }
    return log;
}

static json_t *event_of_seat(json_t *log, int seat)
{
    size_t i;
    json_t *ev;
    json_array_foreach(json_object_get(log, "events"), i, ev) {
        if (json_integer_value(json_object_get(ev, "seat")) == seat)
            return ev;
    }
    fail_msg("no event of seat %d", seat);
    return NULL;
}

static void test_no_deal_no_seed(void **state)
{
    (void)state;
    struct rules_state st;
    struct tlog *log = hearts_log(0, &st);
    for (int viewer = -1; viewer < 4; viewer++) {
        json_t *j = tlog_redacted_json(log, viewer);
        assert_non_null(j);
        assert_null(json_object_get(j, "seed"));
        assert_int_equal(json_array_size(json_object_get(j, "events")), 0);
        json_decref(j);
    }
    tlog_destroy(log);
}

static void test_pending_pass_hidden(void **state)
{
    (void)state;
    struct rules_state st;
    struct tlog *log = hearts_log(2, &st);
    json_t *own = tlog_redacted_json(log, 0);
    json_t *other = tlog_redacted_json(log, 1);
    json_t *spectator = tlog_redacted_json(log, -1);
    json_t *ev = event_of_seat(own, 0);
    assert_string_equal(json_string_value(json_object_get(ev, "move")), log->events[1].move);
    assert_int_equal(json_integer_value(json_object_get(ev, "seq")), 1);
    ev = event_of_seat(other, 0);
    assert_true(json_is_null(json_object_get(ev, "move")));
    assert_true(json_is_true(json_object_get(ev, "secret")));
    ev = event_of_seat(spectator, 1);
    assert_true(json_is_null(json_object_get(ev, "move")));
    json_decref(own);
    json_decref(other);
    json_decref(spectator);
    tlog_destroy(log);
}

static void test_after_exchange(void **state)
{
    (void)state;
    struct rules_state st;
    struct tlog *log = hearts_log(4, &st); /* hand 1 passes left: 0 gives to 1 */
    json_t *receiver = tlog_redacted_json(log, 1);
    json_t *other = tlog_redacted_json(log, 2);
    json_t *spectator = tlog_redacted_json(log, -1);
    json_t *ev = event_of_seat(receiver, 0);
    assert_string_equal(json_string_value(json_object_get(ev, "move")), log->events[1].move);
    ev = event_of_seat(other, 0);
    assert_string_equal(json_string_value(json_object_get(ev, "move")), "pass");
    assert_int_equal(json_integer_value(json_object_get(ev, "cards")), 3);
    ev = event_of_seat(spectator, 3);
    assert_string_equal(json_string_value(json_object_get(ev, "move")), "pass");
    assert_int_equal(json_integer_value(json_object_get(ev, "cards")), 3);
    /* Seat 2 gives to 3: seat 2 sees its own, seat 3 sees it, seat 1 does not. */
    ev = event_of_seat(receiver, 2);
    assert_int_equal(json_integer_value(json_object_get(ev, "cards")), 3);
    json_decref(receiver);
    json_decref(other);
    json_decref(spectator);
    tlog_destroy(log);
}

static void test_plays_are_open_and_over_is_whole(void **state)
{
    (void)state;
    struct rules_state st;
    struct tlog *log = hearts_log(4, &st);
    struct rules_move m[RULES_MAX_LEGAL];
    int seat = __builtin_ctz(rules_to_move(&st));
    assert_true(rules_legal(&st, seat, m, RULES_MAX_LEGAL) == 1);
    assert_true(tlog_append_move(log, seat, "play 2C", false, NULL));
    json_t *j = tlog_redacted_json(log, -1);
    json_t *events = json_object_get(j, "events");
    json_t *last = json_array_get(events, json_array_size(events) - 1);
    assert_string_equal(json_string_value(json_object_get(last, "move")), "play 2C");
    json_decref(j);

    assert_true(tlog_append_move(log, 3, "resign", false, NULL));
    j = tlog_redacted_json(log, -1);
    assert_string_equal(json_string_value(json_object_get(j, "seed")), "00");
    events = json_object_get(j, "events");
    assert_int_equal(json_array_size(events), log->nevents);
    assert_non_null(json_object_get(json_array_get(events, 0), "deal"));
    assert_true(json_is_true(json_object_get(json_object_get(j, "result"), "finished")));
    json_decref(j);
    tlog_destroy(log);
}

/* A 3-seat Horse Thief log dealt with a turn-up that is not a spade (so stay/drop happen). */
static struct tlog *ht_log(struct rules_state *st)
{
    struct rules_options o;
    rules_options_default(RULES_GAME_HORSE_THIEF, &o);
    o.seats = 3;
    struct tlog *log = tlog_create(RULES_GAME_HORSE_THIEF, &o, NULL);
    assert_non_null(log);
    uint64_t rng = 7;
    rules_card deck[RULES_NCARDS];
    do
        tl_random_deck(&rng, deck);
    while (RULES_SUIT(deck[15]) == RULES_SPADES);
    assert_true(rules_init(st, RULES_GAME_HORSE_THIEF, &o, NULL));
    assert_true(rules_chance(st, RULES_DUE_DEAL, deck, RULES_NCARDS, NULL));
    assert_true(tlog_append_chance(log, TLOG_DEAL, deck, RULES_NCARDS, NULL));
    return log;
}

static void ht_move(struct tlog *log, struct rules_state *st, int seat, const char *text)
{
    struct err e;
    if (!tl_apply(st, seat, text, &e))
        fail_msg("seat %d '%s': %s", seat, text, e.msg);
    assert_true(tlog_append_move(log, seat, text, false, NULL));
}

static void test_horse_thief_stay_and_discard(void **state)
{
    (void)state;
    struct rules_state st;
    struct tlog *log = ht_log(&st);
    ht_move(log, &st, 1, "stay");
    ht_move(log, &st, 2, "drop");
    json_t *other = tlog_redacted_json(log, 0);
    json_t *own = tlog_redacted_json(log, 1);
    assert_true(json_is_true(json_object_get(event_of_seat(other, 1), "secret")));
    assert_true(json_is_true(json_object_get(event_of_seat(other, 2), "secret")));
    assert_string_equal(json_string_value(json_object_get(event_of_seat(own, 1), "move")), "stay");
    json_decref(other);
    json_decref(own);

    ht_move(log, &st, 0, "stay"); /* the phase resolves: 0 and 1 stay, 2 drops */
    other = tlog_redacted_json(log, 2);
    assert_string_equal(json_string_value(json_object_get(event_of_seat(other, 1), "move")), "stay");
    assert_string_equal(json_string_value(json_object_get(event_of_seat(other, 0), "move")), "stay");
    json_decref(other);

    /* Discards (3 seats: d = min(3, 17 - 5) = 3): secret, then a count for the others. */
    char text[64];
    rules_card c[RULES_NCARDS];
    int n = 0;
    for (uint64_t m = st.g.horse_thief.hands[1]; m && n < 2; m &= m - 1)
        c[n++] = (rules_card)__builtin_ctzll(m);
    char a[3], b[3];
    rules_card_format(c[0], a);
    rules_card_format(c[1], b);
    snprintf(text, sizeof text, "discard %s %s", a, b);
    ht_move(log, &st, 1, text);
    other = tlog_redacted_json(log, 0);
    json_t *ev = json_array_get(json_object_get(other, "events"), 3);
    assert_true(json_is_true(json_object_get(ev, "secret")));
    json_decref(other);
    ht_move(log, &st, 0, "discard");
    other = tlog_redacted_json(log, 0);
    own = tlog_redacted_json(log, 1);
    json_t *spectator = tlog_redacted_json(log, -1);
    ev = json_array_get(json_object_get(other, "events"), 3);
    assert_string_equal(json_string_value(json_object_get(ev, "move")), "discard");
    assert_int_equal(json_integer_value(json_object_get(ev, "cards")), 2);
    ev = json_array_get(json_object_get(spectator, "events"), 3);
    assert_int_equal(json_integer_value(json_object_get(ev, "cards")), 2);
    ev = json_array_get(json_object_get(own, "events"), 3);
    assert_string_equal(json_string_value(json_object_get(ev, "move")), text);
    ev = json_array_get(json_object_get(own, "events"), 4);
    assert_string_equal(json_string_value(json_object_get(ev, "move")), "discard");
    json_decref(other);
    json_decref(own);
    json_decref(spectator);
    tlog_destroy(log);
}

/* RULES_SEAT_ALL (the replay viewer of finished matches) sees at least what every seat and
 * the spectator see, at every step of random matches of every game; a seat never sees
 * more than it. */
static void test_omniscient_view(void **state)
{
    (void)state;
    uint64_t rng = 2026;
    for (int g = 0; g < RULES_NGAMES; g++) {
        for (int match = 0; match < 20; match++) {
            struct rules_options o;
            rules_options_default((enum rules_game_id)g, &o);
            o.target = 1 + (int64_t)tl_below(&rng, 20);
            struct rules_state st;
            assert_true(rules_init(&st, (enum rules_game_id)g, &o, NULL));
            for (int step = 0; step < 3000 && !st.over; step++) {
                rules_card cards[RULES_NCARDS];
                enum rules_due due = rules_due(&st);
                if (due != RULES_DUE_NONE) {
                    int n = rules_chance_source(&st, cards);
                    for (int i = n - 1; i > 0; i--) {
                        int j = (int)tl_below(&rng, (uint32_t)i + 1);
                        rules_card t = cards[i];
                        cards[i] = cards[j];
                        cards[j] = t;
                    }
                    assert_true(rules_chance(&st, due, cards, n, NULL));
                    continue;
                }
                bool ok;
                uint64_t all = tl_view_cards(&st, RULES_SEAT_ALL, &ok);
                assert_true(ok);
                for (int seat = -1; seat < st.nseats; seat++) {
                    uint64_t seen = tl_view_cards(&st, seat, &ok);
                    if (seen & ~all)
                        fail_msg("game %d: seat %d sees a card the omniscient view lacks", g,
                                 seat);
                }
                uint32_t to_move = rules_to_move(&st);
                int seat = 0;
                for (uint32_t pick = tl_below(&rng, (uint32_t)__builtin_popcount(to_move)) + 1;
                     ; seat++)
                    if (((to_move >> seat) & 1) && --pick == 0)
                        break;
                struct rules_move moves[RULES_MAX_LEGAL];
                int n = rules_legal(&st, seat, moves, RULES_MAX_LEGAL);
                assert_true(rules_apply(&st, seat, &moves[tl_below(&rng, (uint32_t)n)], NULL));
            }
        }
    }
}

static void test_bad_log_gives_null(void **state)
{
    (void)state;
    struct rules_options o;
    rules_options_default(RULES_GAME_HEARTS, &o);
    struct tlog *log = tlog_create(RULES_GAME_HEARTS, &o, NULL);
    assert_true(tlog_append_move(log, 0, "play 2C", false, NULL));
    assert_null(tlog_redacted_json(log, 0));
    tlog_destroy(log);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_deal_no_seed),
        cmocka_unit_test(test_pending_pass_hidden),
        cmocka_unit_test(test_after_exchange),
        cmocka_unit_test(test_plays_are_open_and_over_is_whole),
        cmocka_unit_test(test_horse_thief_stay_and_discard),
        cmocka_unit_test(test_omniscient_view),
        cmocka_unit_test(test_bad_log_gives_null),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
