/* test_speed.c - Speed (rules.md §5) through the game interface: the deal layout, every
 * move's legality (table-driven, hostile rows included), ready and its withdrawal, the
 * alternating automatic draws, reshuffles, the drawn game, a match of several games, a
 * property test over random matches, and seed-verified logs with reshuffles.
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

/* ---- Helpers ------------------------------------------------------------------------------ */

static void start(struct rules_state *st, int first_dealer, int64_t target, const char *spec)
{
    struct rules_options o;
    struct err e;
    rules_options_default(RULES_GAME_SPEED, &o);
    o.first_dealer = first_dealer;
    o.target = target;
    if (!rules_init(st, RULES_GAME_SPEED, &o, &e))
        fail_msg("init: %s", e.msg);
    rules_card deal[RULES_NCARDS];
    tl_stack(spec, deal);
    assert_int_equal(rules_due(st), RULES_DUE_DEAL);
    if (!rules_chance(st, RULES_DUE_DEAL, deal, RULES_NCARDS, &e))
        fail_msg("deal: %s", e.msg);
}

static void ok(struct rules_state *st, int seat, const char *text)
{
    struct err e;
    if (!tl_apply(st, seat, text, &e))
        fail_msg("seat %d '%s' refused: %s", seat, text, e.msg);
}

static void refuse(struct rules_state *st, int seat, const char *text, const char *tag)
{
    struct rules_state before = *st;
    struct err e;
    if (tl_apply(st, seat, text, &e))
        fail_msg("seat %d '%s' was accepted", seat, text);
    assert_int_equal(e.code, ERR_ILLEGAL);
    assert_string_equal(e.tag, tag);
    assert_memory_equal(&before, st, sizeof before);
}

static const struct rules_speed *sp(const struct rules_state *st)
{
    return &st->g.speed;
}

static rules_card top_of_pile(const struct rules_state *st)
{
    assert_true(sp(st)->npile > 0);
    return sp(st)->pile[sp(st)->npile - 1];
}

/* Both seats declare ready `times` times in a row (each pair makes one draw). */
static void ready_both(struct rules_state *st, int times)
{
    for (int i = 0; i < times; i++) {
        ok(st, 0, "ready");
        ok(st, 1, "ready");
    }
}

/* The base deal (dealer 0): seat 1's triangle t0..t14, seat 0's, then the deck, 7H on top.
 * Seat 0: col 1 [8C]  col 2 [TC 9C]  col 3 [3S 4S KS]  col 4 [5S 7S 9S 2H]
 *         col 5 [TS JS QS 3H AC]
 * Seat 1: col 1 [8S]  col 2 [3C 9D]  col 3 [4C 5D 5C]  col 4 [JC QC KC 6S]
 *         col 5 [2D 3D 4D 7D QD]
 * Deck after the dealer's draw of 7H: 2C 6C 7C 6D 8D TD JD KD AD 4H 5H 6H 8H 9H TH JH QH KH
 * AH 2S AS. */
#define BASE                                                                                   \
    "8S 3C 9D 4C 5D 5C JC QC KC 6S 2D 3D 4D 7D QD "                                            \
    "8C TC 9C 3S 4S KS 5S 7S 9S 2H TS JS QS 3H AC "                                            \
    "7H"

/* ---- The deal ------------------------------------------------------------------------------ */

static void check_column(const struct rules_state *st, int seat, int col, const char *cards)
{
    const struct rules_speed_column *k = &sp(st)->columns[seat][col - 1];
    char want[64];
    snprintf(want, sizeof want, "%s", cards);
    int n = 0;
    for (char *save = NULL, *t = strtok_r(want, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
        if (n >= k->count)
            fail_msg("seat %d column %d is short", seat, col);
        assert_int_equal(k->cards[n], tl_card(t));
        n++;
    }
    assert_int_equal(k->count, n);
    assert_int_equal(k->up, 1);
}

static void test_deal_layout(void **state)
{
    (void)state;
    struct rules_state st;
    start(&st, 0, 1, BASE);
    check_column(&st, 1, 1, "8S");
    check_column(&st, 1, 2, "3C 9D");
    check_column(&st, 1, 3, "4C 5D 5C");
    check_column(&st, 1, 4, "JC QC KC 6S");
    check_column(&st, 1, 5, "2D 3D 4D 7D QD");
    check_column(&st, 0, 1, "8C");
    check_column(&st, 0, 2, "TC 9C");
    check_column(&st, 0, 3, "3S 4S KS");
    check_column(&st, 0, 4, "5S 7S 9S 2H");
    check_column(&st, 0, 5, "TS JS QS 3H AC");
    /* The dealer's first draw happened at once: 7H on the pile, 21 cards left. */
    assert_int_equal(sp(&st)->phase, RULES_SPEED_PLAY);
    assert_int_equal(sp(&st)->npile, 1);
    assert_int_equal(top_of_pile(&st), tl_card("7H"));
    assert_int_equal(sp(&st)->ndeck, 21);
    assert_int_equal(sp(&st)->deck[0], tl_card("2C"));
    assert_int_equal(sp(&st)->deck[20], tl_card("AS"));
    assert_int_equal(sp(&st)->dealer, 0);
    assert_int_equal(sp(&st)->drawer, 1);
    assert_int_equal(sp(&st)->ready, 0);
    assert_int_equal(rules_to_move(&st), 3);

    /* first_dealer 1: positions 0-14 are now seat 0's. */
    start(&st, 1, 1, BASE);
    check_column(&st, 0, 1, "8S");
    check_column(&st, 0, 5, "2D 3D 4D 7D QD");
    check_column(&st, 1, 1, "8C");
    check_column(&st, 1, 4, "5S 7S 9S 2H");
    assert_int_equal(sp(&st)->dealer, 1);
    assert_int_equal(sp(&st)->drawer, 0);
    assert_int_equal(top_of_pile(&st), tl_card("7H"));
}

static void test_options(void **state)
{
    (void)state;
    struct rules_options o;
    struct err e;
    rules_options_default(RULES_GAME_SPEED, &o);
    assert_int_equal(o.seats, 2);
    assert_int_equal(o.target, 1);
    assert_int_equal(o.first_dealer, 0);
    assert_true(rules_options_check(RULES_GAME_SPEED, &o, &e));
    assert_true(rules_option_known(RULES_GAME_SPEED, "target"));
    assert_true(rules_option_known(RULES_GAME_SPEED, "first_dealer"));
    assert_true(rules_option_known(RULES_GAME_SPEED, "seats"));
    assert_false(rules_option_known(RULES_GAME_SPEED, "moon"));
    o.seats = 3;
    assert_false(rules_options_check(RULES_GAME_SPEED, &o, &e));
    assert_string_equal(e.tag, "bad_option");
    o.seats = 2;
    o.first_dealer = 2;
    assert_false(rules_options_check(RULES_GAME_SPEED, &o, &e));
    enum rules_game_id g;
    assert_true(rules_game_lookup("speed", &g));
    assert_int_equal(g, RULES_GAME_SPEED);
    /* Before the deal nobody moves, except by resigning. */
    struct rules_state st;
    rules_options_default(RULES_GAME_SPEED, &o);
    assert_true(rules_init(&st, RULES_GAME_SPEED, &o, &e));
    assert_int_equal(rules_due(&st), RULES_DUE_DEAL);
    assert_int_equal(rules_to_move(&st), 0);
    refuse(&st, 0, "ready", "chance_due");
}

/* ---- Legality, table-driven ------------------------------------------------------------ */

struct row {
    const char *setup;  /* moves applied first to the BASE deal */
    int seat;
    const char *move;
    const char *tag;    /* NULL: accepted */
};

static const struct row rows[] = {
    /* play: a face-up top of the mover's columns, one rank from the pile's top */
    {"", 0, "play 8C", NULL},
    {"", 1, "play 8S", NULL},
    {"", 1, "play 6S", NULL},
    {"", 0, "play 9C", "not_adjacent"},
    {"", 0, "play KS", "not_adjacent"},
    {"", 1, "play 9D", "not_adjacent"},
    {"", 0, "play TC", "not_face_up"},      /* face down under 9C */
    {"", 0, "play 3H", "not_face_up"},      /* face down, deep in column 5 */
    {"", 0, "play 7H", "not_face_up"},      /* the pile's top */
    {"", 0, "play 2C", "not_face_up"},      /* in the deck */
    {"", 0, "play 8S", "not_your_card"},    /* the other seat's face-up card */
    {"", 1, "play 8C", "not_your_card"},
    {"0:play 8C;0:play 9C", 0, "play TC", "not_face_up"}, /* exposed: stays face down */
    {"0:play 8C;0:play 9C;0:flip 2", 0, "play TC", NULL},
    {"0:play 8C", 1, "play 9D", NULL},      /* the other seat plays on a played card */
    {"0:play 8C", 1, "play 8S", "not_adjacent"},
    /* wrapping: A is next to 2 and to K */
    {"0:ready;1:ready", 0, "play AC", NULL},               /* A on 2 */
    {"0:ready;1:ready", 0, "play 2H", "not_adjacent"},     /* 2 on 2 */
    {"0:ready;1:ready;0:play AC", 0, "play 2H", NULL},     /* 2 on A */
    {"0:ready;1:ready;0:play AC", 0, "play KS", NULL},     /* K on A */
    {"0:ready;1:ready;0:play AC", 1, "play QD", "not_adjacent"},
    {"0:ready;1:ready;0:play AC;0:play KS", 1, "play QD", NULL},
    /* move: into the lowest empty column, from a column with a card beneath */
    {"", 0, "move KS", "no_empty_column"},
    {"", 0, "move 8C", "no_empty_column"},
    {"0:play 8C", 0, "move KS", NULL},
    {"0:play 8C", 0, "move 9C", NULL},
    {"0:play 8C", 0, "move AC", NULL},
    {"0:play 8C", 1, "move 6S", "no_empty_column"},
    {"0:play 8C", 0, "move 6S", "not_your_card"},
    {"0:play 8C", 0, "move 4S", "not_face_up"},
    {"0:play 8C", 0, "move 7H", "not_face_up"},
    {"0:play 8C;0:play 9C", 0, "move TC", "not_face_up"},
    {"0:play 8C;0:play 9C;0:flip 2", 0, "move TC", "only_card"},
    {"0:play 8C;0:move KS", 0, "move 9C", "no_empty_column"},
    /* flip: the mover's own column, top face down */
    {"", 0, "flip 1", "already_face_up"},
    {"", 0, "flip 5", "already_face_up"},
    {"0:play 8C;0:play 9C", 0, "flip 2", NULL},
    {"0:play 8C;0:play 9C", 0, "flip 1", "empty_column"},
    {"0:play 8C;0:play 9C", 1, "flip 2", "already_face_up"}, /* not seat 1's column */
    {"0:play 8C;0:play 9C;0:flip 2", 0, "flip 2", "already_face_up"},
    {"0:play 8C;0:move KS", 0, "flip 3", NULL},
    /* ready */
    {"", 0, "ready", NULL},                  /* holding back 8C is allowed */
    {"0:ready", 0, "ready", "already_ready"},
    {"0:ready", 1, "ready", NULL},
    {"0:ready", 0, "play 8C", NULL},         /* a ready seat may still play */
    {"0:ready;1:ready", 0, "ready", NULL},   /* the draw withdrew both */
    /* verbs of other games, and seats that are not seats */
    {"", 0, "pass 2C 3C 4C", "not_a_speed_move"},
    {"", 0, "lead 8C", "not_a_speed_move"},
    {"", 0, "take 8C", "not_a_speed_move"},
    {"", 0, "stay", "not_a_speed_move"},
    {"", 0, "drop", "not_a_speed_move"},
    {"", 0, "discard", "not_a_speed_move"},
    {"", 1, "discard 8S", "not_a_speed_move"},
    {"", 0, "moon add", "not_a_speed_move"},
    {"", 2, "ready", "bad_seat"},
    {"", -1, "play 8C", "bad_seat"},
};

static void test_rows(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const struct row *r = &rows[i];
        struct rules_state st;
        start(&st, 0, 1, BASE);
        tl_script(&st, r->setup);
        struct rules_move m = tl_move(r->move);
        struct rules_state before = st;
        struct err e;
        bool accepted = rules_apply(&st, r->seat, &m, &e);
        if (r->tag == NULL && !accepted)
            fail_msg("row %zu: seat %d '%s' refused: %s", i, r->seat, r->move, e.msg);
        if (r->tag != NULL) {
            if (accepted)
                fail_msg("row %zu: seat %d '%s' accepted", i, r->seat, r->move);
            if (strcmp(e.tag, r->tag) != 0)
                fail_msg("row %zu: tag %s, want %s (%s)", i, e.tag, r->tag, e.msg);
            assert_int_equal(e.code, ERR_ILLEGAL);
            assert_true(e.msg[0] != '\0');
            assert_memory_equal(&before, &st, sizeof st);
        }
        if (r->seat >= 0 && r->seat < 2 && tl_listed(&before, r->seat, &m) != accepted)
            fail_msg("row %zu: listing disagrees with apply", i);
    }
}

static void test_play_effects(void **state)
{
    (void)state;
    struct rules_state st;
    start(&st, 0, 1, BASE);
    ok(&st, 0, "play 8C");
    assert_int_equal(top_of_pile(&st), tl_card("8C"));
    assert_int_equal(sp(&st)->npile, 2);
    assert_int_equal(sp(&st)->columns[0][0].count, 0);
    ok(&st, 0, "play 9C");
    /* TC exposed, face down until flipped */
    assert_int_equal(sp(&st)->columns[0][1].count, 1);
    assert_int_equal(sp(&st)->columns[0][1].up, 0);
    ok(&st, 0, "flip 2");
    assert_int_equal(sp(&st)->columns[0][1].up, 1);
    assert_true(sp(&st)->played);
}

static void test_move_lowest_empty(void **state)
{
    (void)state;
    struct rules_state st;
    start(&st, 0, 1, BASE);
    /* Empty columns 1 and 2 of seat 0: 8C and 9C onto the pile, then TC after a flip. */
    tl_script(&st, "0:play 8C;0:play 9C;0:flip 2;0:play TC");
    assert_int_equal(sp(&st)->columns[0][0].count, 0);
    assert_int_equal(sp(&st)->columns[0][1].count, 0);
    ok(&st, 0, "move 2H");
    const struct rules_speed_column *c1 = &sp(&st)->columns[0][0];
    assert_int_equal(c1->count, 1);
    assert_int_equal(c1->cards[0], tl_card("2H"));
    assert_int_equal(c1->up, 1);
    /* 9S exposed in column 4, face down */
    assert_int_equal(sp(&st)->columns[0][3].count, 3);
    assert_int_equal(sp(&st)->columns[0][3].up, 0);
    ok(&st, 0, "move AC");
    assert_int_equal(sp(&st)->columns[0][1].count, 1);
    assert_int_equal(sp(&st)->columns[0][1].cards[0], tl_card("AC"));
    assert_int_equal(sp(&st)->columns[0][4].count, 4);
    assert_int_equal(sp(&st)->columns[0][4].up, 0);
    refuse(&st, 0, "move KS", "no_empty_column");
    /* The pile did not change: moves are not plays. */
    assert_int_equal(top_of_pile(&st), tl_card("TC"));
}

static void test_legal_order(void **state)
{
    (void)state;
    struct rules_state st;
    start(&st, 0, 1, BASE);
    assert_string_equal(tl_legal_text(&st, 0, "|"), "play 8C|ready");
    assert_string_equal(tl_legal_text(&st, 1, "|"), "play 6S|play 8S|ready");
    ok(&st, 0, "play 8C");
    /* by verb (play, move, flip, ready), then card in deck order */
    assert_string_equal(tl_legal_text(&st, 0, "|"),
                        "play 9C|move 9C|move AC|move 2H|move KS|ready");
    ok(&st, 0, "play 9C");
    assert_string_equal(tl_legal_text(&st, 0, "|"), "move AC|move 2H|move KS|flip 2|ready");
    ok(&st, 0, "move KS");
    assert_string_equal(tl_legal_text(&st, 0, "|"), "flip 2|flip 3|ready");
}

/* ---- Ready and the draws --------------------------------------------------------------- */

static void test_ready_withdrawal(void **state)
{
    (void)state;
    struct rules_state st;

    /* A play by either seat withdraws both seats' ready. */
    start(&st, 0, 1, BASE);
    tl_script(&st, "0:ready");
    assert_int_equal(sp(&st)->ready, 1);
    ok(&st, 1, "play 8S");
    assert_int_equal(sp(&st)->ready, 0);
    start(&st, 0, 1, BASE);
    tl_script(&st, "1:ready");
    ok(&st, 0, "play 8C");
    assert_int_equal(sp(&st)->ready, 0);
    start(&st, 0, 1, BASE);
    tl_script(&st, "0:ready;0:play 8C");
    assert_int_equal(sp(&st)->ready, 0);

    /* A seat's own move or flip withdraws its own ready only. */
    start(&st, 0, 1, BASE);
    tl_script(&st, "0:play 8C;0:ready;0:move KS");
    assert_int_equal(sp(&st)->ready, 0);
    start(&st, 0, 1, BASE);
    tl_script(&st, "0:play 8C;1:ready;0:move KS");
    assert_int_equal(sp(&st)->ready, 2);
    start(&st, 0, 1, BASE);
    tl_script(&st, "0:play 8C;0:play 9C;0:ready;0:flip 2");
    assert_int_equal(sp(&st)->ready, 0);
    start(&st, 0, 1, BASE);
    tl_script(&st, "0:play 8C;0:play 9C;1:ready;0:flip 2");
    assert_int_equal(sp(&st)->ready, 2);
    /* ... and the draw still waits for both. */
    assert_int_equal(sp(&st)->ndeck, 21);
    ok(&st, 0, "ready");
    assert_int_equal(sp(&st)->ndeck, 20);
    assert_int_equal(sp(&st)->ready, 0);

    /* A ready seat with nothing else to do is not to move. */
    start(&st, 0, 1, BASE);
    ready_both(&st, 1);  /* 2C: seat 1 has nothing on 2 */
    assert_string_equal(tl_legal_text(&st, 1, "|"), "ready");
    ok(&st, 1, "ready");
    assert_string_equal(tl_legal_text(&st, 1, "|"), "");
    assert_int_equal(rules_to_move(&st), 1);
    /* seat 0 plays AC: both ready withdrawn, seat 1 may move again */
    ok(&st, 0, "play AC");
    assert_int_equal(rules_to_move(&st), 3);
    assert_int_equal(sp(&st)->ready, 0);

    /* A ready seat with a face-down top can still flip: it stays to move. */
    start(&st, 0, 1, BASE);
    tl_script(&st, "0:play 8C;0:play 9C;0:ready");
    assert_string_equal(tl_legal_text(&st, 0, "|"), "move AC|move 2H|move KS|flip 2");
    assert_int_equal(rules_to_move(&st), 3);
}

static void test_alternating_draws(void **state)
{
    (void)state;
    static const char *const order[] = {"2C", "6C", "7C", "6D", "8D"};
    for (int fd = 0; fd < 2; fd++) {
        struct rules_state st;
        start(&st, fd, 1, BASE);
        /* The dealer drew 7H; the non-dealer draws next, then the dealer, ... */
        assert_int_equal(sp(&st)->drawer, 1 - fd);
        for (int i = 0; i < 5; i++) {
            int drawer = sp(&st)->drawer;
            assert_int_equal(drawer, (fd + 1 + i) % 2);
            /* either seat may be ready first; the draw comes with the second */
            ok(&st, i % 2, "ready");
            assert_int_equal(sp(&st)->npile, 1 + i);
            ok(&st, 1 - i % 2, "ready");
            assert_int_equal(sp(&st)->npile, 2 + i);
            assert_int_equal(top_of_pile(&st), tl_card(order[i]));
            assert_int_equal(sp(&st)->drawer, 1 - drawer);
            assert_int_equal(sp(&st)->ready, 0);
            assert_int_equal(sp(&st)->ndeck, 20 - i);
        }
    }
}

/* ---- Reshuffles and drawn games ------------------------------------------------------- */

static void test_reshuffle(void **state)
{
    (void)state;
    struct rules_state st;
    start(&st, 0, 1, BASE);
    ok(&st, 0, "play 8C");          /* a play from a triangle this pass */
    ready_both(&st, 21);           /* the deck runs out: 2C ... AS drawn */
    assert_int_equal(sp(&st)->ndeck, 0);
    assert_int_equal(sp(&st)->npile, 23);
    assert_int_equal(rules_due(&st), RULES_DUE_NONE);
    /* the next draw finds the deck empty: a shuffle of the pile is due */
    ok(&st, 0, "ready");
    ok(&st, 1, "ready");
    assert_int_equal(rules_due(&st), RULES_DUE_SHUFFLE);
    assert_int_equal(rules_to_move(&st), 0);
    assert_int_equal(rules_legal(&st, 0, NULL, 0), 0);
    refuse(&st, 0, "ready", "chance_due");
    refuse(&st, 1, "play 6S", "chance_due");

    /* the source is the pile, bottom to top: 7H 8C 2C 6C ... AS */
    rules_card src[RULES_NCARDS];
    int n = rules_chance_source(&st, src);
    assert_int_equal(n, 23);
    assert_int_equal(src[0], tl_card("7H"));
    assert_int_equal(src[1], tl_card("8C"));
    assert_int_equal(src[2], tl_card("2C"));
    assert_int_equal(src[22], tl_card("AS"));

    /* a deal instead, a card too few, a card of a triangle: refused, state unchanged */
    struct err e;
    struct rules_state before = st;
    rules_card deal[RULES_NCARDS];
    for (int i = 0; i < RULES_NCARDS; i++)
        deal[i] = (rules_card)i;
    assert_false(rules_chance(&st, RULES_DUE_DEAL, deal, RULES_NCARDS, &e));
    assert_string_equal(e.tag, "not_due");
    assert_false(rules_chance(&st, RULES_DUE_SHUFFLE, src, 22, &e));
    assert_string_equal(e.tag, "bad_deal");
    rules_card wrong[RULES_NCARDS];
    memcpy(wrong, src, sizeof wrong);
    wrong[5] = tl_card("8S");
    assert_false(rules_chance(&st, RULES_DUE_SHUFFLE, wrong, 23, &e));
    assert_string_equal(e.tag, "bad_deal");
    assert_memory_equal(&before, &st, sizeof st);

    /* The shuffle, top first: reversed pile. The draw is made from it at once. */
    rules_card shuffled[RULES_NCARDS];
    for (int i = 0; i < n; i++)
        shuffled[i] = src[n - 1 - i];
    assert_true(rules_chance(&st, RULES_DUE_SHUFFLE, shuffled, n, &e));
    assert_int_equal(rules_due(&st), RULES_DUE_NONE);
    assert_int_equal(sp(&st)->npile, 1);
    assert_int_equal(top_of_pile(&st), tl_card("AS"));
    assert_int_equal(sp(&st)->ndeck, 22);
    assert_int_equal(sp(&st)->deck[0], tl_card("2S"));
    assert_int_equal(sp(&st)->ready, 0);
    assert_int_equal(sp(&st)->shuffles, 1);
    assert_false(sp(&st)->played);
    /* The alternation goes on through the reshuffle: draws 1 (dealer, seat 0), 2 (seat 1),
     * ..., 22 (seat 1), 23 = the one after the shuffle (seat 0); seat 1 draws next. */
    assert_int_equal(sp(&st)->drawer, 1);
    assert_int_equal(rules_to_move(&st), 3);
    /* a second shuffle now would be out of place */
    assert_false(rules_chance(&st, RULES_DUE_SHUFFLE, shuffled, n, &e));
    assert_string_equal(e.tag, "not_due");
}

static void test_drawn_game(void **state)
{
    (void)state;
    struct rules_state st;
    /* Nobody plays during the first pass: the game is drawn, not reshuffled. */
    start(&st, 0, 1, BASE);
    ready_both(&st, 21);
    assert_int_equal(sp(&st)->ndeck, 0);
    ok(&st, 0, "ready");
    ok(&st, 1, "ready");
    assert_int_equal(st.hands_done, 1);
    assert_int_equal(st.hand_scores[0], 0);
    assert_int_equal(st.hand_scores[1], 0);
    assert_int_equal(st.totals[0], 0);
    assert_int_equal(st.totals[1], 0);
    assert_false(st.over);
    assert_int_equal(rules_due(&st), RULES_DUE_DEAL);
    assert_int_equal(sp(&st)->dealer, 1); /* a drawn game counts for the alternation */
    assert_int_equal(rules_to_move(&st), 0);

    /* A play in the first pass, none after the reshuffle: drawn at the second empty deck. */
    start(&st, 0, 1, BASE);
    ok(&st, 1, "play 8S");
    ready_both(&st, 22);
    assert_int_equal(rules_due(&st), RULES_DUE_SHUFFLE);
    rules_card src[RULES_NCARDS];
    int n = rules_chance_source(&st, src);
    assert_int_equal(n, 23);
    struct err e;
    assert_true(rules_chance(&st, RULES_DUE_SHUFFLE, src, n, &e));
    assert_int_equal(sp(&st)->ndeck, 22);
    ready_both(&st, 22);
    assert_int_equal(sp(&st)->ndeck, 0);
    assert_int_equal(st.hands_done, 0);
    ready_both(&st, 1);
    assert_int_equal(st.hands_done, 1);
    assert_int_equal(rules_due(&st), RULES_DUE_DEAL);

    /* A play after the reshuffle: a second reshuffle, not a draw. A move or flip does not
     * count as a play. */
    start(&st, 0, 1, BASE);
    ok(&st, 0, "play 8C");
    ready_both(&st, 22);
    n = rules_chance_source(&st, src);
    assert_true(rules_chance(&st, RULES_DUE_SHUFFLE, src, n, &e));
    /* the new top is 7H (the pile's bottom); seat 0 may move into its empty column */
    ok(&st, 0, "move KS");
    ok(&st, 0, "flip 3");
    ready_both(&st, 23);
    assert_int_equal(st.hands_done, 1); /* only moves and flips: drawn */
    assert_int_equal(rules_due(&st), RULES_DUE_DEAL);

    start(&st, 0, 1, BASE);
    ok(&st, 0, "play 8C");
    ready_both(&st, 22);
    n = rules_chance_source(&st, src);
    assert_true(rules_chance(&st, RULES_DUE_SHUFFLE, src, n, &e));
    assert_int_equal(top_of_pile(&st), tl_card("7H"));
    ok(&st, 1, "play 8S");
    ready_both(&st, 23);
    assert_int_equal(rules_due(&st), RULES_DUE_SHUFFLE);
    assert_int_equal(st.hands_done, 0);
    assert_int_equal(rules_chance_source(&st, src), 24);
}

/* ---- Winning and the match ---------------------------------------------------------------- */

/* A triangle its owner empties with no draw: on 7H, 8C 9C TC JC QC KC AC 2D ... 9D. */
#define RUN "8C TC 9C KC QC JC 4D 3D 2D AC 9D 8D 7D 6D 5D"
/* A triangle with nothing to do on 7H and on most draws. */
#define IDLE "2S 3S 4S 5S 6S QH 8S 9S TS JS 3H 4H KS AS QS"

static const char *const run_moves[] = {
    "play 8C", "play 9C", "flip 2", "play TC", "play JC", "flip 3", "play QC", "flip 3",
    "play KC", "play AC", "flip 4", "play 2D", "flip 4", "play 3D", "flip 4", "play 4D",
    "play 5D", "flip 5", "play 6D", "flip 5", "play 7D", "flip 5", "play 8D", "flip 5",
    "play 9D",
};

/* Deal game `k` so that `winner` (or nobody, -1) takes it, and play it out. */
static void play_game(struct rules_state *st, int winner)
{
    int dealer = sp(st)->dealer;
    char spec[400];
    if (winner < 0)
        snprintf(spec, sizeof spec, "%s %s 7H", IDLE, RUN);
    else if (winner == dealer)
        snprintf(spec, sizeof spec, "%s %s 7H", IDLE, RUN);
    else
        snprintf(spec, sizeof spec, "%s %s 7H", RUN, IDLE);
    rules_card deal[RULES_NCARDS];
    tl_stack(spec, deal);
    struct err e;
    if (!rules_chance(st, RULES_DUE_DEAL, deal, RULES_NCARDS, &e))
        fail_msg("deal: %s", e.msg);
    assert_int_equal(top_of_pile(st), tl_card("7H"));
    if (winner < 0) {
        ready_both(st, 22);
        return;
    }
    uint32_t games = st->hands_done;
    for (size_t i = 0; i < sizeof run_moves / sizeof run_moves[0]; i++) {
        assert_int_equal(st->hands_done, games); /* the game goes on until the last card */
        ok(st, winner, run_moves[i]);
    }
}

static void test_win(void **state)
{
    (void)state;
    struct rules_state st;
    struct rules_options o;
    struct err e;
    rules_options_default(RULES_GAME_SPEED, &o);
    assert_true(rules_init(&st, RULES_GAME_SPEED, &o, &e));
    play_game(&st, 1);
    assert_true(st.over);
    assert_int_equal(st.hands_done, 1);
    assert_int_equal(st.hand_scores[0], 0);
    assert_int_equal(st.hand_scores[1], 1);
    assert_int_equal(st.totals[1], 1);
    assert_int_equal(rules_to_move(&st), 0);
    struct rules_result r;
    rules_result(&st, &r);
    assert_true(r.finished);
    assert_int_equal(r.nplaces, 2);
    assert_int_equal(r.order[0], 1);
    assert_int_equal(r.order[1], 0);
    refuse(&st, 0, "ready", "match_over");
    refuse(&st, 1, "resign", "match_over");
    /* Once over, the view shows everything: the 52 cards. */
    bool wf;
    assert_int_equal(tl_view_cards(&st, 0, &wf), RULES_ALL_CARDS);
    assert_true(wf);
}

static void test_match(void **state)
{
    (void)state;
    struct rules_state st;
    struct rules_options o;
    struct err e;
    rules_options_default(RULES_GAME_SPEED, &o);
    o.target = 2;
    o.first_dealer = 1;
    assert_true(rules_init(&st, RULES_GAME_SPEED, &o, &e));
    /* game 1 dealer 1, seat 0 wins; game 2 dealer 0, drawn; game 3 dealer 1, seat 1 wins;
     * game 4 dealer 0, seat 0 wins: 2 to 1, over. */
    static const int winners[] = {0, -1, 1, 0};
    static const int dealers[] = {1, 0, 1, 0};
    for (int g = 0; g < 4; g++) {
        assert_false(st.over);
        assert_int_equal(rules_due(&st), RULES_DUE_DEAL);
        assert_int_equal(sp(&st)->dealer, dealers[g]);
        play_game(&st, winners[g]);
        assert_int_equal(sp(&st)->dealer, g < 3 ? dealers[g + 1] : dealers[g]);
        assert_int_equal(st.hands_done, (uint32_t)g + 1);
        for (int s = 0; s < 2; s++)
            assert_int_equal(st.hand_scores[s], winners[g] == s ? 1 : 0);
    }
    assert_true(st.over);
    assert_int_equal(st.totals[0], 2);
    assert_int_equal(st.totals[1], 1);
    struct rules_result r;
    rules_result(&st, &r);
    assert_int_equal(r.order[0], 0);
    assert_int_equal(r.nplaces, 2);

    /* a resignation ranks the resigning seat last, whatever the games won */
    assert_true(rules_init(&st, RULES_GAME_SPEED, &o, &e));
    play_game(&st, 0);
    ok(&st, 0, "resign");
    rules_result(&st, &r);
    assert_true(r.finished);
    assert_int_equal(r.resigned, 0);
    assert_int_equal(r.order[0], 1);
    assert_int_equal(r.order[1], 0);
}

/* ---- The view ----------------------------------------------------------------------------- */

static void test_view(void **state)
{
    (void)state;
    struct rules_state st;
    start(&st, 0, 1, BASE);
    tl_script(&st, "0:play 8C;0:play 9C;1:ready");
    json_t *v = tlog_view_json(&st, 1);
    char *text = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(v);
    const char *want =
        "{\"dealer\":0,\"deck\":{\"count\":21},\"game_number\":1,\"games_won\":[0,0],"
        "\"next_drawer\":1,\"phase\":\"play\",\"pile\":{\"count\":3,\"top\":\"9C\"},"
        "\"played_since_shuffle\":true,\"ready\":[false,true],\"shuffles\":0,"
        "\"triangles\":[{\"columns\":["
        "{\"count\":0,\"face_up\":false,\"top\":null},"
        "{\"count\":1,\"face_up\":false,\"top\":null},"
        "{\"count\":3,\"face_up\":true,\"top\":\"KS\"},"
        "{\"count\":4,\"face_up\":true,\"top\":\"2H\"},"
        "{\"count\":5,\"face_up\":true,\"top\":\"AC\"}],\"count\":13,\"seat\":0},"
        "{\"columns\":["
        "{\"count\":1,\"face_up\":true,\"top\":\"8S\"},"
        "{\"count\":2,\"face_up\":true,\"top\":\"9D\"},"
        "{\"count\":3,\"face_up\":true,\"top\":\"5C\"},"
        "{\"count\":4,\"face_up\":true,\"top\":\"6S\"},"
        "{\"count\":5,\"face_up\":true,\"top\":\"QD\"}],\"count\":15,\"seat\":1}]}";
    assert_string_equal(text, want);
    free(text);
    /* every seat and a spectator see the same */
    for (int s = -1; s < 2; s++) {
        bool wf;
        uint64_t seen = tl_view_cards(&st, s, &wf);
        assert_true(wf);
        assert_int_equal(seen, RULES_BIT(tl_card("9C")) | RULES_BIT(tl_card("KS")) |
                                   RULES_BIT(tl_card("2H")) | RULES_BIT(tl_card("AC")) |
                                   RULES_BIT(tl_card("8S")) | RULES_BIT(tl_card("9D")) |
                                   RULES_BIT(tl_card("5C")) | RULES_BIT(tl_card("6S")) |
                                   RULES_BIT(tl_card("QD")));
    }
    /* before the first deal: empty table */
    struct rules_options o;
    struct err e;
    rules_options_default(RULES_GAME_SPEED, &o);
    assert_true(rules_init(&st, RULES_GAME_SPEED, &o, &e));
    v = tlog_view_json(&st, 0);
    assert_string_equal(json_string_value(json_object_get(v, "phase")), "deal");
    assert_int_equal(json_integer_value(json_object_get(v, "game_number")), 0);
    assert_true(json_is_null(json_object_get(json_object_get(v, "pile"), "top")));
    json_decref(v);
    /* over by resignation mid-game: everything shown, pile bottom to top */
    start(&st, 0, 1, BASE);
    tl_script(&st, "0:play 8C;1:resign");
    v = tlog_view_json(&st, -1);
    text = json_dumps(json_object_get(v, "pile"), JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(text, "{\"cards\":[\"7H\",\"8C\"],\"count\":2,\"top\":\"8C\"}");
    free(text);
    assert_string_equal(json_string_value(json_object_get(v, "phase")), "over");
    assert_int_equal(json_integer_value(json_object_get(v, "game_number")), 1);
    json_t *deck = json_object_get(json_object_get(v, "deck"), "cards");
    assert_int_equal(json_array_size(deck), 21);
    assert_string_equal(json_string_value(json_array_get(deck, 0)), "2C");
    json_decref(v);
}

/* ---- Property: random matches ------------------------------------------------------------- */

/* The cards of a seat's columns that are face down. */
static uint64_t hidden_cards(const struct rules_state *st)
{
    const struct rules_speed *s = sp(st);
    uint64_t h = 0;
    for (int i = 0; i < s->ndeck; i++)
        h |= RULES_BIT(s->deck[i]);
    for (int t = 0; t < 2; t++)
        for (int c = 0; c < RULES_SPEED_COLUMNS; c++) {
            const struct rules_speed_column *k = &s->columns[t][c];
            for (int i = 0; i < k->count; i++)
                if (i < k->count - 1 || !k->up)
                    h |= RULES_BIT(k->cards[i]);
        }
    return h;
}

static void check_conservation(const struct rules_state *st)
{
    const struct rules_speed *s = sp(st);
    if (s->phase == RULES_SPEED_DEAL) {
        assert_int_equal(s->npile + s->ndeck, 0);
        return;
    }
    uint64_t all = 0;
    int n = 0;
    for (int i = 0; i < s->npile; i++, n++)
        all |= RULES_BIT(s->pile[i]);
    for (int i = 0; i < s->ndeck; i++, n++)
        all |= RULES_BIT(s->deck[i]);
    for (int t = 0; t < 2; t++)
        for (int c = 0; c < RULES_SPEED_COLUMNS; c++) {
            const struct rules_speed_column *k = &s->columns[t][c];
            assert_true(k->count <= RULES_SPEED_COLUMN_MAX);
            for (int i = 0; i < k->count; i++, n++)
                all |= RULES_BIT(k->cards[i]);
        }
    assert_int_equal(n, RULES_NCARDS);
    assert_int_equal(all, RULES_ALL_CARDS);
    if (s->phase == RULES_SPEED_PLAY)
        assert_true(s->npile > 0);
}

static void check_view(const struct rules_state *st)
{
    for (int seat = -1; seat < 2; seat++) {
        bool wf;
        uint64_t seen = tl_view_cards(st, seat, &wf);
        assert_true(wf);
        if (st->over) {
            if (sp(st)->phase != RULES_SPEED_DEAL)
                assert_int_equal(seen, RULES_ALL_CARDS);
            continue;
        }
        if (seen & hidden_cards(st))
            fail_msg("view of seat %d leaks a hidden card", seat);
        /* and it shows every face-up card that matters: the tops and the pile's top */
        uint64_t want = 0;
        const struct rules_speed *s = sp(st);
        if (s->npile)
            want |= RULES_BIT(s->pile[s->npile - 1]);
        for (int t = 0; t < 2; t++)
            for (int c = 0; c < RULES_SPEED_COLUMNS; c++) {
                const struct rules_speed_column *k = &s->columns[t][c];
                if (k->count && k->up)
                    want |= RULES_BIT(k->cards[k->count - 1]);
            }
        assert_int_equal(seen, want);
    }
}

struct run_stats {
    int matches, games, drawn, shuffles, resigns, steps;
};

/* One random match. `full` runs tl_check_legality at every step. */
static void random_match(uint64_t *rng, bool full, struct run_stats *stats)
{
    struct rules_state st;
    struct rules_options o;
    struct err e;
    rules_options_default(RULES_GAME_SPEED, &o);
    o.target = 1 + tl_below(rng, 3);
    o.first_dealer = (int)tl_below(rng, 2);
    assert_true(rules_init(&st, RULES_GAME_SPEED, &o, &e));
    int32_t wins[2] = {0, 0};
    uint32_t games = 0;
    int play_bias = (int)tl_below(rng, 4); /* how eager the seats are to play */
    bool lazy = false; /* this game, the seats mostly just declare ready */
    static struct rules_move legal[RULES_MAX_LEGAL];
    for (int step = 0;; step++) {
        if (step > 200000)
            fail_msg("a match did not end");
        check_conservation(&st);
        check_view(&st);
        if (full || tl_below(rng, 16) == 0) {
            const char *why = tl_check_legality(&st, rng);
            if (why)
                fail_msg("%s", why);
        }
        if (st.over)
            break;
        enum rules_due due = rules_due(&st);
        if (due != RULES_DUE_NONE) {
            assert_int_equal(rules_to_move(&st), 0);
            rules_card cards[RULES_NCARDS];
            int n = rules_chance_source(&st, cards);
            if (due == RULES_DUE_SHUFFLE) {
                assert_true(n >= 2 && n <= 50);
                assert_false(sp(&st)->ndeck);
                stats->shuffles++;
            } else {
                assert_int_equal(n, RULES_NCARDS);
                lazy = tl_below(rng, 6) == 0;
            }
            for (int i = n - 1; i > 0; i--) {
                int j = (int)tl_below(rng, (uint32_t)i + 1);
                rules_card t = cards[i];
                cards[i] = cards[j];
                cards[j] = t;
            }
            assert_true(rules_chance(&st, due, cards, n, &e));
        } else {
            uint32_t tm = rules_to_move(&st);
            assert_true(tm != 0);
            int seat;
            if (tm == 3 && lazy && sp(&st)->ready)
                seat = sp(&st)->ready == 1 ? 1 : 0;
            else if (tm == 3)
                seat = (int)tl_below(rng, 2);
            else
                seat = tm == 1 ? 0 : 1;
            /* Now and then the other seat tries something out of turn: nothing it may do. */
            if (tm != 3 && tl_below(rng, 8) == 0) {
                int other = 1 - seat;
                struct rules_move m = {.verb = RULES_READY, .card = RULES_NO_CARD};
                if (tl_below(rng, 2))
                    m = (struct rules_move){.verb = RULES_PLAY,
                                            .card = (uint8_t)tl_below(rng, 52)};
                struct rules_state before = st;
                assert_false(rules_apply(&st, other, &m, &e));
                assert_memory_equal(&before, &st, sizeof st);
            }
            if (tl_below(rng, 20000) == 0) {
                ok(&st, seat, "resign");
                stats->resigns++;
                continue;
            }
            int n = rules_legal(&st, seat, legal, RULES_MAX_LEGAL);
            assert_true(n > 0);
            int pick = (int)tl_below(rng, (uint32_t)n);
            if (legal[0].verb == RULES_PLAY && (int)tl_below(rng, 4) < play_bias)
                pick = 0;
            if (lazy && legal[n - 1].verb == RULES_READY && tl_below(rng, 64) != 0)
                pick = n - 1;
            uint32_t before_games = st.hands_done;
            assert_true(rules_apply(&st, seat, &legal[pick], &e));
            stats->steps++;
            if (st.hands_done != before_games) {
                assert_int_equal(st.hands_done, before_games + 1);
                int sum = st.hand_scores[0] + st.hand_scores[1];
                assert_true(sum == 0 || sum == 1);
                if (sum == 0) {
                    stats->drawn++;
                    assert_true(legal[pick].verb == RULES_READY);
                } else {
                    assert_int_equal(st.hand_scores[seat], 1);
                    assert_true(legal[pick].verb == RULES_PLAY);
                    wins[seat]++;
                }
                games++;
            }
        }
    }
    assert_int_equal(st.hands_done, games);
    assert_int_equal(st.totals[0], wins[0]);
    assert_int_equal(st.totals[1], wins[1]);
    struct rules_result r;
    rules_result(&st, &r);
    assert_true(r.finished);
    assert_int_equal(r.to_move, 0);
    if (st.resigned < 0) {
        assert_true(wins[0] == o.target || wins[1] == o.target);
        assert_true(wins[0] < o.target || wins[1] < o.target);
        int first = wins[0] > wins[1] ? 0 : 1;
        assert_int_equal(r.nplaces, 2);
        assert_int_equal(r.order[0], first);
        assert_int_equal(r.order[1], 1 - first);
    } else {
        assert_int_equal(r.order[1], st.resigned);
    }
    stats->matches++;
    stats->games += (int)games;
}

static void test_random_matches(void **state)
{
    (void)state;
    uint64_t rng = 20240605;
    struct run_stats stats = {0};
    for (int i = 0; i < 4000; i++)
        random_match(&rng, i < 200, &stats);
    print_message("%d matches, %d games (%d drawn), %d reshuffles, %d resignations, "
                  "%d moves\n", stats.matches, stats.games, stats.drawn, stats.shuffles,
                  stats.resigns, stats.steps);
    /* the generator reached every kind of ending */
    assert_true(stats.games > stats.matches);
    assert_true(stats.drawn > 0);
    assert_true(stats.shuffles > 0);
    assert_true(stats.resigns > 0);
}

/* ---- Seed-verified logs ------------------------------------------------------------------- */

/* Play a random match into a log whose chance events the seed derives. Returns the log. */
static struct tlog *seeded_log(uint64_t *rng, const uint8_t seed[TLOG_SEED_BYTES],
                               int *nshuffles)
{
    struct err e;
    struct rules_options o;
    rules_options_default(RULES_GAME_SPEED, &o);
    o.target = 2;
    struct tlog *log = tlog_create(RULES_GAME_SPEED, &o, &e);
    assert_non_null(log);
    char hex[TLOG_HEX_BYTES], commit[TLOG_HEX_BYTES];
    tlog_hex(seed, TLOG_SEED_BYTES, hex);
    tlog_commitment(seed, commit);
    json_t *v = json_string(hex);
    assert_true(tlog_set_meta(log, "seed", v));
    json_decref(v);
    v = json_string(commit);
    assert_true(tlog_set_meta(log, "seed_commitment", v));
    json_decref(v);
    struct rules_state st;
    assert_true(rules_init(&st, RULES_GAME_SPEED, &o, &e));
    uint32_t k = 0;
    *nshuffles = 0;
    static struct rules_move legal[RULES_MAX_LEGAL];
    while (!st.over) {
        enum rules_due due = rules_due(&st);
        if (due != RULES_DUE_NONE) {
            rules_card cards[RULES_NCARDS];
            int n = tlog_derive(seed, k++, &st, cards);
            assert_true(rules_chance(&st, due, cards, n, &e));
            assert_true(tlog_append_chance(log, due == RULES_DUE_DEAL ? TLOG_DEAL : TLOG_SHUFFLE,
                                           cards, n, &e));
            *nshuffles += due == RULES_DUE_SHUFFLE;
            continue;
        }
        uint32_t tm = rules_to_move(&st);
        int seat = tm == 3 ? (int)tl_below(rng, 2) : tm == 1 ? 0 : 1;
        int n = rules_legal(&st, seat, legal, RULES_MAX_LEGAL);
        int pick = (int)tl_below(rng, (uint32_t)n);
        char text[RULES_MOVE_TEXT_MAX];
        rules_move_format(&legal[pick], text, sizeof text);
        assert_true(rules_apply(&st, seat, &legal[pick], &e));
        assert_true(tlog_append_move(log, seat, text, false, &e));
    }
    return log;
}

static void test_verify_reshuffles(void **state)
{
    (void)state;
    uint64_t rng = 77;
    uint8_t seed[TLOG_SEED_BYTES];
    struct tlog *log = NULL;
    int nshuffles = 0;
    for (int attempt = 0; attempt < 50 && nshuffles == 0; attempt++) {
        tlog_destroy(log);
        for (int i = 0; i < TLOG_SEED_BYTES; i++)
            seed[i] = (uint8_t)tl_rand(&rng);
        log = seeded_log(&rng, seed, &nshuffles);
    }
    assert_true(nshuffles > 0);

    struct tlog_replay r;
    struct tlog_failure f;
    assert_true(tlog_replay(log, true, &r, &f));
    assert_true(r.state.over);
    assert_true(r.nhands >= 2);
    tlog_replay_finish(&r);

    /* The log through its JSON text and back verifies too. */
    json_t *j = tlog_to_json(log, NULL);
    char *text = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    struct tlog *back = tlog_parse(text, strlen(text), &f);
    free(text);
    assert_non_null(back);
    assert_true(tlog_replay(back, true, &r, &f));
    tlog_replay_finish(&r);
    tlog_destroy(back);

    /* A shuffle with its cards in another order: still the pile's cards, so replay
     * accepts it, but verify finds it is not the one the seed derives. */
    size_t at = 0;
    for (size_t i = 0; i < log->nevents; i++)
        if (log->events[i].kind == TLOG_SHUFFLE) {
            at = i;
            break;
        }
    struct tlog_event *ev = &log->events[at];
    assert_true(ev->ncards >= 2);
    rules_card t = ev->cards[0];
    ev->cards[0] = ev->cards[1];
    ev->cards[1] = t;
    assert_false(tlog_replay(log, true, &r, &f));
    assert_int_equal(f.exit, 1);
    assert_int_equal(f.index, (long)at);
    assert_string_equal(f.code, "chance_mismatch");
    tlog_replay_finish(&r);
    /* (plain replay cannot tell: the later moves may now be illegal, but not the shuffle) */
    bool replayed = tlog_replay(log, false, &r, &f);
    assert_true(replayed || f.index > (long)at);
    tlog_replay_finish(&r);

    /* A shuffle with a card that is not on the pile: not a valid log. */
    uint64_t pile = 0;
    for (int i = 0; i < ev->ncards; i++)
        pile |= RULES_BIT(ev->cards[i]);
    ev->cards[0] = (rules_card)__builtin_ctzll(~pile & RULES_ALL_CARDS);
    assert_false(tlog_replay(log, false, &r, &f));
    assert_int_equal(f.exit, 2);
    assert_int_equal(f.index, (long)at);
    assert_string_equal(f.code, "bad_deal");
    tlog_replay_finish(&r);
    tlog_destroy(log);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deal_layout),
        cmocka_unit_test(test_options),
        cmocka_unit_test(test_rows),
        cmocka_unit_test(test_play_effects),
        cmocka_unit_test(test_move_lowest_empty),
        cmocka_unit_test(test_legal_order),
        cmocka_unit_test(test_ready_withdrawal),
        cmocka_unit_test(test_alternating_draws),
        cmocka_unit_test(test_reshuffle),
        cmocka_unit_test(test_drawn_game),
        cmocka_unit_test(test_win),
        cmocka_unit_test(test_match),
        cmocka_unit_test(test_view),
        cmocka_unit_test(test_random_matches),
        cmocka_unit_test(test_verify_reshuffles),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
