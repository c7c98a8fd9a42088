/* test_snag.c - Snag (rules.md §3) through the engine: table-driven legality rows on
 * stacked decks (hostile rows included), the deal, trick winners, taking, scoring with the
 * three examples of §3.6, the end of the match, the view, and a property test over many
 * random matches checked against an independent model of the rules written here.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "testlib.h"
#include "turnlog.h"

/* ---- Helpers ------------------------------------------------------------------------------ */

/* Deal hands and bar by role: the deck alternates non-dealer, dealer from position 0. */
static void deal_roles(struct rules_state *st, const char *nondealer, const char *dealer,
                       const char *bar)
{
    rules_card nd[5], d[5];
    assert_int_equal(tl_card_list(nondealer, nd), 5);
    assert_int_equal(tl_card_list(dealer, d), 5);
    char top[64] = "";
    for (int i = 0; i < 5; i++) {
        char a[3], b[3];
        rules_card_format(nd[i], a);
        rules_card_format(d[i], b);
        snprintf(top + strlen(top), sizeof top - strlen(top), "%s %s ", a, b);
    }
    snprintf(top + strlen(top), sizeof top - strlen(top), "%s", bar);
    rules_card deck[RULES_NCARDS];
    tl_stack(top, deck);
    struct err e;
    assert_true(rules_chance(st, RULES_DUE_DEAL, deck, RULES_NCARDS, &e));
}

static void start(struct rules_state *st, int first_dealer, int64_t target)
{
    struct rules_options o;
    struct err e;
    rules_options_default(RULES_GAME_SNAG, &o);
    o.first_dealer = first_dealer;
    if (target)
        o.target = target;
    assert_true(rules_init(st, RULES_GAME_SNAG, &o, &e));
}

/* ---- The standard stacked decks ------------------------------------------------------------ */

/* Deck A, first_dealer 0: seat 1 is the non-dealer and leads. Bar slots 1..5 below. */
#define A_ND "AS 3S 9H 4D 2C"
#define A_D "QH 5H 9C TD 3C"
#define A_BAR "8S 7H 6D KC 2H"

/* The whole hand on deck A (see the rows for what each step pins). Seat 1 ends with
 * {H3, S2, C2, D2}, seat 0 with {H2, C2, S1, D1}: seat 1 scores 3 = 6. */
#define A_T1 "1:lead 8S;0:play QH;1:play 3S"
#define A_T1_TAKES "0:take QH;1:take 8S"
#define A_T2 "0:lead 2H;1:play 9H;0:play 5H;1:take 9H;0:take 2H"
#define A_T3 "1:lead 7H;0:play TD;1:play AS;1:take AS;0:take TD"
#define A_T4 "1:lead KC;0:play 9C;1:play 2C;1:take KC;0:take 9C"
#define A_T5 "1:lead 6D;0:play 3C;1:play 4D;1:take 6D;0:take 3C"
#define A_HAND A_T1 ";" A_T1_TAKES ";" A_T2 ";" A_T3 ";" A_T4 ";" A_T5

/* Deck B (ties), first_dealer 0: seat 1 leads; nobody holds a diamond. */
#define B_ND "9S 5S QC 2C 3C"
#define B_D "9H 4S QH 7C 8C"
#define B_BAR "9D KS 2D 3D 4D"

/* ---- Legality rows ------------------------------------------------------------------------- */

struct row {
    const char *about;
    char deck;           /* 'A' or 'B' */
    const char *before;  /* scripted moves first */
    int seat;
    const char *move;
    const char *tag;     /* NULL: accepted */
};

static const struct row rows[] = {
    /* §3.2 the lead: two nearest remaining bar cards of the leader's end */
    {"non-dealer leads slot 1", 'A', "", 1, "lead 8S", NULL},
    {"non-dealer leads slot 2", 'A', "", 1, "lead 7H", NULL},
    {"non-dealer may not lead slot 3", 'A', "", 1, "lead 6D", "bar_out_of_reach"},
    {"non-dealer may not lead slot 5", 'A', "", 1, "lead 2H", "bar_out_of_reach"},
    {"the dealer does not lead the first trick", 'A', "", 0, "lead 2H", "not_your_turn"},
    {"a hand card is not a bar card", 'A', "", 1, "lead AS", "not_on_bar"},
    {"an unused card is not a bar card", 'A', "", 1, "lead 2D", "not_on_bar"},
    {"lenient notation of a lead", 'A', "", 1, "LEAD 8♠", NULL},
    {"no hand card before the lead", 'A', "", 1, "play AS", "wrong_phase"},
    {"no take before the lead", 'A', "", 1, "take 8S", "wrong_phase"},
    {"dealer leads slot 5", 'A', A_T1 ";" A_T1_TAKES, 0, "lead 2H", NULL},
    {"dealer leads slot 4", 'A', A_T1 ";" A_T1_TAKES, 0, "lead KC", NULL},
    {"dealer may not lead slot 3", 'A', A_T1 ";" A_T1_TAKES, 0, "lead 6D", "bar_out_of_reach"},
    {"dealer may not lead slot 2", 'A', A_T1 ";" A_T1_TAKES, 0, "lead 7H", "bar_out_of_reach"},
    {"a led bar card is gone", 'A', A_T1 ";" A_T1_TAKES, 0, "lead 8S", "not_on_bar"},
    {"the trick's loser does not lead", 'A', A_T1 ";" A_T1_TAKES, 1, "lead 7H", "not_your_turn"},
    {"non-dealer reaches past a gap (slot 4 with 1,2,5 gone)", 'A',
     A_T1 ";" A_T1_TAKES ";" A_T2 ";" A_T3, 1, "lead KC", NULL},
    {"the last bar card", 'A', A_T1 ";" A_T1_TAKES ";" A_T2 ";" A_T3 ";" A_T4, 1, "lead 6D", NULL},
    /* §3.2 following the bar card's suit */
    {"second card: any card when void in the bar suit", 'A', "1:lead 8S", 0, "play 9C", NULL},
    {"second card by the leader", 'A', "1:lead 8S", 1, "play AS", "not_your_turn"},
    {"second card not in hand", 'A', "1:lead 8S", 0, "play AS", "not_in_hand"},
    {"a bar card is not a hand card", 'A', "1:lead 8S", 0, "play 7H", "not_in_hand"},
    {"no second lead", 'A', "1:lead 8S", 1, "lead 7H", "wrong_phase"},
    {"third card follows the bar card's suit, not the second's", 'A', "1:lead 8S;0:play QH", 1,
     "play 9H", "must_follow_suit"},
    {"third card of the bar suit", 'A', "1:lead 8S;0:play QH", 1, "play AS", NULL},
    {"third card by the other seat", 'A', "1:lead 8S;0:play QH", 0, "play 5H", "not_your_turn"},
    {"second card must follow the bar suit", 'A', A_T1 ";" A_T1_TAKES ";0:lead 2H", 1,
     "play 4D", "must_follow_suit"},
    {"leader's third card must follow", 'A', A_T1 ";" A_T1_TAKES ";0:lead 2H;1:play 9H", 0,
     "play TD", "must_follow_suit"},
    /* §3.4 taking */
    {"the winner takes first", 'A', A_T1, 0, "take QH", NULL},
    {"the loser does not take first", 'A', A_T1, 1, "take 8S", "not_your_turn"},
    {"a card outside the trick", 'A', A_T1, 0, "take AS", "not_in_trick"},
    {"no play while the trick is taken", 'A', A_T1, 0, "play 9C", "wrong_phase"},
    {"no lead while the trick is taken", 'A', A_T1, 0, "lead 2H", "wrong_phase"},
    {"the loser takes second", 'A', A_T1 ";0:take QH", 1, "take 3S", NULL},
    {"the winner does not take twice in a row", 'A', A_T1 ";0:take QH", 0, "take 3S",
     "not_your_turn"},
    {"a taken card is gone", 'A', A_T1 ";0:take QH", 1, "take QH", "not_in_trick"},
    {"the last card is not taken by a move", 'A', A_T1 ";" A_T1_TAKES, 0, "take 3S",
     "wrong_phase"},
    /* §3.3 the winner: whoever may take first is the winner */
    {"bar and second tie: the second (later) wins", 'B', "1:lead 9D;0:play 9H;1:play 5S", 0,
     "take 9D", NULL},
    {"bar and second tie: not the leader", 'B', "1:lead 9D;0:play 9H;1:play 5S", 1, "take 9D",
     "not_your_turn"},
    {"all three tie: the third wins", 'B', "1:lead 9D;0:play 9H;1:play 9S", 1, "take 9H", NULL},
    {"second and third tie above the bar: the third wins", 'B', "1:lead 9D;0:play QH;1:play QC",
     1, "take QH", NULL},
    {"highest rank regardless of suit", 'B', "1:lead 9D;0:play QH;1:play 5S", 0, "take QH",
     NULL},
    {"the bar card is the leader's", 'B', "1:lead KS;0:play 4S;1:play 5S", 1, "take KS", NULL},
    /* hostile: other games' verbs, seats out of range, a chance event due */
    {"pass is not a snag move", 'A', "", 1, "pass 2C 4D 9H", "not_a_snag_move"},
    {"moon is not a snag move", 'A', "", 1, "moon add", "not_a_snag_move"},
    {"stay is not a snag move", 'A', "", 1, "stay", "not_a_snag_move"},
    {"drop is not a snag move", 'A', "", 1, "drop", "not_a_snag_move"},
    {"discard is not a snag move", 'A', "", 1, "discard", "not_a_snag_move"},
    {"move is not a snag move", 'A', "", 1, "move 8S", "not_a_snag_move"},
    {"flip is not a snag move", 'A', "", 1, "flip 1", "not_a_snag_move"},
    {"ready is not a snag move", 'A', "", 1, "ready", "not_a_snag_move"},
    {"seat 2 does not exist", 'A', "", 2, "lead 8S", "bad_seat"},
    {"seat -1 does not exist", 'A', "", -1, "lead 8S", "bad_seat"},
    {"no move while the next deal is due", 'A', A_HAND, 1, "lead 8S", "chance_due"},
    {"resign while the next deal is due", 'A', A_HAND, 0, "resign", NULL},
    {"resign in the middle of a trick, out of turn", 'A', "1:lead 8S", 1, "resign", NULL},
};

static void setup_deck(struct rules_state *st, char deck)
{
    start(st, 0, 0);
    if (deck == 'A')
        deal_roles(st, A_ND, A_D, A_BAR);
    else
        deal_roles(st, B_ND, B_D, B_BAR);
}

static void test_rows(void **unused)
{
    (void)unused;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const struct row *r = &rows[i];
        struct rules_state st;
        setup_deck(&st, r->deck);
        tl_script(&st, r->before);
        struct rules_state before = st;
        struct err e;
        bool ok = tl_apply(&st, r->seat, r->move, &e);
        if (!r->tag && !ok)
            fail_msg("row '%s': refused: %s", r->about, e.msg);
        if (r->tag) {
            if (ok)
                fail_msg("row '%s': accepted", r->about);
            if (e.code != ERR_ILLEGAL || strcmp(e.tag, r->tag) != 0)
                fail_msg("row '%s': tag %s (%s), want %s", r->about, e.tag, e.msg, r->tag);
            assert_memory_equal(&before, &st, sizeof st);
        }
        /* Whatever the row, the listing agrees with acceptance on the state before it. */
        uint64_t rng = i + 1;
        const char *broken = tl_check_legality(&before, &rng);
        if (broken)
            fail_msg("row '%s': %s", r->about, broken);
    }
}

/* Moves built in memory with a card number past the deck are refused, not shifted. */
static void test_hostile_cards(void **unused)
{
    (void)unused;
    static const uint8_t verbs[] = {RULES_LEAD, RULES_PLAY, RULES_TAKE};
    static const uint8_t cards[] = {52, 63, 64, RULES_NO_CARD};
    for (size_t v = 0; v < sizeof verbs; v++)
        for (size_t c = 0; c < sizeof cards; c++) {
            struct rules_state st;
            setup_deck(&st, 'A');
            /* Empty bar slots hold RULES_NO_CARD: a lead of it must not find a slot. */
            tl_script(&st, "1:lead 8S;0:play QH;1:play 3S;0:take QH;1:take 8S");
            struct rules_state before = st;
            struct rules_move m = {.verb = verbs[v], .card = cards[c]};
            struct err e;
            for (int seat = 0; seat < 2; seat++) {
                assert_false(rules_apply(&st, seat, &m, &e));
                assert_int_equal(e.code, ERR_ILLEGAL);
                assert_string_equal(e.tag, "bad_card");
                assert_memory_equal(&before, &st, sizeof st);
            }
        }
}

/* ---- Listings ------------------------------------------------------------------------------ */

struct listing {
    const char *about;
    char deck;
    const char *before;
    int seat;             /* the only seat to move */
    const char *legal;    /* its moves, canonical order */
};

static const struct listing listings[] = {
    {"non-dealer: slots 1 and 2, deck order", 'A', "", 1, "lead 7H, lead 8S"},
    {"void in the bar suit: every hand card", 'A', "1:lead 8S", 0,
     "play 3C, play 9C, play TD, play 5H, play QH"},
    {"third card: the bar suit only", 'A', "1:lead 8S;0:play QH", 1, "play 3S, play AS"},
    {"the winner takes one of three", 'A', A_T1, 0, "take QH, take 3S, take 8S"},
    {"the loser takes one of the two left", 'A', A_T1 ";0:take QH", 1, "take 3S, take 8S"},
    {"dealer: slots 5 and 4", 'A', A_T1 ";" A_T1_TAKES, 0, "lead KC, lead 2H"},
    {"a single card of the bar suit", 'A', A_T1 ";" A_T1_TAKES ";0:lead 2H", 1, "play 9H"},
    {"the leader follows too", 'A', A_T1 ";" A_T1_TAKES ";0:lead 2H;1:play 9H", 0, "play 5H"},
    {"second loser takes: the winner of trick 2 is seat 1", 'A',
     A_T1 ";" A_T1_TAKES ";0:lead 2H;1:play 9H;0:play 5H", 1, "take 2H, take 5H, take 9H"},
    {"non-dealer leads: slots 2 and 3 left of 2,3,4", 'A', A_T1 ";" A_T1_TAKES ";" A_T2, 1,
     "lead 6D, lead 7H"},
    {"across a gap: slots 3 and 4", 'A', A_T1 ";" A_T1_TAKES ";" A_T2 ";" A_T3, 1,
     "lead KC, lead 6D"},
    {"one bar card left", 'A', A_T1 ";" A_T1_TAKES ";" A_T2 ";" A_T3 ";" A_T4, 1, "lead 6D"},
    {"bar card highest: the leader wins", 'A', A_T1 ";" A_T1_TAKES ";" A_T2 ";" A_T3
     ";1:lead KC;0:play 9C;1:play 2C", 1, "take 2C, take 9C, take KC"},
    {"tie bar/second: the second's seat takes", 'B', "1:lead 9D;0:play 9H;1:play 5S", 0,
     "take 9D, take 9H, take 5S"},
    {"three-way tie: the third's seat takes", 'B', "1:lead 9D;0:play 9H;1:play 9S", 1,
     "take 9D, take 9H, take 9S"},
};

static void test_listings(void **unused)
{
    (void)unused;
    for (size_t i = 0; i < sizeof listings / sizeof listings[0]; i++) {
        const struct listing *l = &listings[i];
        struct rules_state st;
        setup_deck(&st, l->deck);
        tl_script(&st, l->before);
        if (rules_to_move(&st) != (1u << l->seat))
            fail_msg("'%s': to_move %#x", l->about, rules_to_move(&st));
        if (strcmp(tl_legal_text(&st, l->seat, ", "), l->legal) != 0)
            fail_msg("'%s': legal '%s', want '%s'", l->about, tl_legal_text(&st, l->seat, ", "),
                     l->legal);
        assert_string_equal(tl_legal_text(&st, 1 - l->seat, ", "), "");
    }
}

/* ---- The deal, the hand, the end ----------------------------------------------------------- */

static void test_deal_positions(void **unused)
{
    (void)unused;
    for (int fd = 0; fd < 2; fd++) {
        struct rules_state st;
        start(&st, fd, 0);
        assert_int_equal(rules_due(&st), RULES_DUE_DEAL);
        assert_int_equal(rules_to_move(&st), 0);
        rules_card deck[RULES_NCARDS];
        uint64_t rng = 99 + (uint64_t)fd;
        tl_random_deck(&rng, deck);
        struct err e;
        assert_true(rules_chance(&st, RULES_DUE_DEAL, deck, RULES_NCARDS, &e));
        const struct rules_snag *g = &st.g.snag;
        int nd = 1 - fd;
        uint64_t want[2] = {0, 0}, unused_cards = 0;
        for (int i = 0; i < 10; i++)
            want[i % 2 == 0 ? nd : fd] |= RULES_BIT(deck[i]);
        for (int i = 15; i < RULES_NCARDS; i++)
            unused_cards |= RULES_BIT(deck[i]);
        assert_int_equal(g->dealer, fd);
        assert_true(g->hands[0] == want[0] && g->hands[1] == want[1]);
        for (int k = 0; k < 5; k++)
            assert_int_equal(g->bar[k], deck[10 + k]);
        assert_true(g->unused == unused_cards);
        assert_int_equal(rules_popcount(g->unused), 37);
        /* The non-dealer leads one of slots 1-2. */
        assert_int_equal(rules_to_move(&st), 1u << nd);
        struct rules_move m[4];
        assert_int_equal(rules_legal(&st, nd, m, 4), 2);
        uint64_t leads = RULES_BIT(m[0].card) | RULES_BIT(m[1].card);
        assert_true(leads == (RULES_BIT(deck[10]) | RULES_BIT(deck[11])));
        /* A second deal now is not due. */
        assert_false(rules_chance(&st, RULES_DUE_DEAL, deck, RULES_NCARDS, &e));
        assert_string_equal(e.tag, "not_due");
    }
}

static void test_whole_hand(void **unused)
{
    (void)unused;
    struct rules_state st;
    setup_deck(&st, 'A');
    tl_script(&st, A_T1 ";" A_T1_TAKES);
    /* The winner (seat 0) received the last card and leads. */
    assert_true(st.g.snag.taken[0] == tl_cards("QH 3S"));
    assert_true(st.g.snag.taken[1] == tl_cards("8S"));
    assert_int_equal(rules_to_move(&st), 1u << 0);
    tl_script(&st, A_T2 ";" A_T3 ";" A_T4);
    assert_int_equal(st.hands_done, 0);
    tl_script(&st, A_T5);
    /* Five tricks: seat 1 {H3 S2 C2 D2} against seat 0 {H2 C2 S1 D1}: 3 beats 2, 6 points. */
    assert_true(st.g.snag.taken[0] == tl_cards("QH 3S 2H TD 9C 3C"));
    assert_true(st.g.snag.taken[1] == tl_cards("8S 9H 5H AS 7H KC 2C 6D 4D"));
    assert_int_equal(st.hands_done, 1);
    assert_int_equal(st.hand_scores[0], 0);
    assert_int_equal(st.hand_scores[1], 6);
    assert_int_equal(st.totals[1], 6);
    assert_false(st.over);
    assert_int_equal(rules_due(&st), RULES_DUE_DEAL);
    assert_int_equal(rules_to_move(&st), 0);
    /* The deal alternates: seat 1 deals hand 2, seat 0 leads. */
    deal_roles(&st, A_ND, A_D, A_BAR);
    assert_int_equal(st.g.snag.dealer, 1);
    assert_int_equal(rules_to_move(&st), 1u << 0);
    assert_true(st.g.snag.hands[0] == tl_cards(A_ND));
    assert_string_equal(tl_legal_text(&st, 0, ", "), "lead 7H, lead 8S");
    /* Now seat 0 is the non-dealer at slot 1; seat 1 reaches slots 5 and 4. */
    tl_script(&st, "0:lead 8S;1:play QH;0:play 3S;1:take QH;0:take 8S");
    assert_string_equal(tl_legal_text(&st, 1, ", "), "lead KC, lead 2H");
}

static void test_target(void **unused)
{
    (void)unused;
    /* Target 6: seat 1's 6 points end the match (reaching the target is enough). */
    struct rules_state st;
    start(&st, 0, 6);
    deal_roles(&st, A_ND, A_D, A_BAR);
    tl_script(&st, A_HAND);
    assert_true(st.over);
    assert_int_equal(rules_due(&st), RULES_DUE_NONE);
    struct rules_result r;
    rules_result(&st, &r);
    assert_true(r.finished);
    assert_int_equal(r.nplaces, 2);
    assert_int_equal(r.order[0], 1);
    assert_int_equal(r.order[1], 0);
    assert_int_equal(r.to_move, 0);
    struct err e;
    assert_false(tl_apply(&st, 0, "resign", &e));
    assert_string_equal(e.tag, "match_over");
    rules_card deck[RULES_NCARDS];
    tl_stack("", deck);
    assert_false(rules_chance(&st, RULES_DUE_DEAL, deck, RULES_NCARDS, &e));
    /* Target 7: not reached, the next deal is due. */
    start(&st, 0, 7);
    deal_roles(&st, A_ND, A_D, A_BAR);
    tl_script(&st, A_HAND);
    assert_false(st.over);
    assert_int_equal(rules_due(&st), RULES_DUE_DEAL);
}

/* The three examples of §3.6, realised by play (found by search, dealt by position).
 * first_dealer 1, so hands 1 and 3 are dealt by seat 1 and hand 2 by seat 0. */
static const struct {
    const char *deck_top;
    const char *moves;
    const char *counts[2];   /* sorted suit counts each seat ends with */
    int32_t scores[2];
} examples[] = {
    {"2S 2D KC JD KH 9D 7D 6D 4S 6S JC 7S 9H QC 8D",
     "0:lead JC;1:play JD;0:play KC;0:take JD;1:take JC;0:lead 9H;1:play 6D;0:play KH;"
     "0:take 9H;1:take 6D;0:lead 7S;1:play 6S;0:play 4S;0:take 6S;1:take 7S;0:lead 8D;"
     "1:play 9D;0:play 7D;1:take 9D;0:take 8D;1:lead QC;0:play 2S;1:play 2D;1:take QC;"
     "0:take 2S",
     {"3221", "421"}, {0, 10}},
    {"7H QC TD 2C 4D 8C 2S 5D 2H 7D QH AS 6H 3D 4C",
     "1:lead AS;0:play 5D;1:play 2S;1:take AS;0:take 5D;1:lead 6H;0:play 8C;1:play 7H;"
     "0:take 6H;1:take 8C;0:lead 4C;1:play 4D;0:play 2C;1:take 4C;0:take 4D;1:lead 3D;"
     "0:play 7D;1:play TD;1:take 7D;0:take 3D;1:lead QH;0:play QC;1:play 2H;0:take QH;"
     "1:take QC",
     {"43", "422"}, {6, 0}},
    {"QD 4S QS AS 6D 8D KH 3C JD 2C 7D AD 8C TC 2S",
     "0:lead AD;1:play 8D;0:play 6D;0:take 8D;1:take AD;0:lead 8C;1:play 3C;0:play QD;"
     "0:take 8C;1:take QD;0:lead TC;1:play 2C;0:play KH;0:take 2C;1:take TC;0:lead 2S;"
     "1:play AS;0:play QS;1:take AS;0:take 2S;1:lead 7D;0:play JD;1:play 4S;0:take JD;"
     "1:take 7D",
     {"3321", "321"}, {6, 0}},
};

static void counts_text(uint64_t taken, char out[8])
{
    int c[4];
    for (int s = 0; s < 4; s++)
        c[s] = rules_popcount(taken & RULES_SUIT_MASK(s));
    for (int i = 0; i < 4; i++)
        for (int j = i + 1; j < 4; j++)
            if (c[j] > c[i]) {
                int t = c[i];
                c[i] = c[j];
                c[j] = t;
            }
    int n = 0;
    for (int i = 0; i < 4; i++)
        if (c[i])
            out[n++] = (char)('0' + c[i]);
    out[n] = '\0';
}

static void play_examples(struct rules_state *st)
{
    for (size_t i = 0; i < 3; i++) {
        rules_card deck[RULES_NCARDS];
        struct err e;
        tl_stack(examples[i].deck_top, deck);
        assert_true(rules_chance(st, RULES_DUE_DEAL, deck, RULES_NCARDS, &e));
        assert_int_equal(st->g.snag.dealer, i % 2 == 0 ? 1 : 0);
        tl_script(st, examples[i].moves);
        char got[8];
        for (int s = 0; s < 2; s++) {
            counts_text(st->g.snag.taken[s], got);
            assert_string_equal(got, examples[i].counts[s]);
            assert_int_equal(st->hand_scores[s], examples[i].scores[s]);
        }
        assert_int_equal(st->hands_done, i + 1);
        if (st->over)
            return;
    }
}

static void test_scoring_examples(void **unused)
{
    (void)unused;
    struct rules_state st;
    start(&st, 1, 1000);
    play_examples(&st);
    assert_int_equal(st.totals[0], 12);
    assert_int_equal(st.totals[1], 10);
    /* Target 12: seat 0 reaches it exactly in hand 3 and wins. */
    start(&st, 1, 12);
    play_examples(&st);
    assert_true(st.over);
    assert_int_equal(st.hands_done, 3);
    struct rules_result r;
    rules_result(&st, &r);
    assert_int_equal(r.order[0], 0);
    assert_int_equal(r.place_size[0], 1);
    /* Target 10: seat 1 reaches it in hand 1. */
    start(&st, 1, 10);
    play_examples(&st);
    assert_true(st.over);
    assert_int_equal(st.hands_done, 1);
    rules_result(&st, &r);
    assert_int_equal(r.order[0], 1);
}

static void test_resign(void **unused)
{
    (void)unused;
    struct rules_state st;
    start(&st, 0, 0);
    struct err e;
    /* Before the first deal: the other seat is first. */
    assert_true(tl_apply(&st, 1, "resign", &e));
    struct rules_result r;
    rules_result(&st, &r);
    assert_true(r.finished);
    assert_int_equal(r.resigned, 1);
    assert_int_equal(r.order[0], 0);
    assert_int_equal(r.order[1], 1);
    /* With more points: still last. */
    start(&st, 0, 0);
    deal_roles(&st, A_ND, A_D, A_BAR);
    tl_script(&st, A_HAND);
    deal_roles(&st, A_ND, A_D, A_BAR);
    assert_true(tl_apply(&st, 1, "resign", &e));
    rules_result(&st, &r);
    assert_int_equal(r.order[0], 0);
    assert_int_equal(r.order[1], 1);
    assert_int_equal(r.totals[1], 6);
    assert_false(tl_apply(&st, 0, "lead 8S", &e));
    assert_string_equal(e.tag, "match_over");
}

static void test_options(void **unused)
{
    (void)unused;
    struct rules_options o;
    struct err e;
    rules_options_default(RULES_GAME_SNAG, &o);
    assert_int_equal(o.seats, 2);
    assert_int_equal(o.target, 50);
    assert_int_equal(o.first_dealer, 0);
    assert_true(rules_options_check(RULES_GAME_SNAG, &o, &e));
    assert_true(rules_option_known(RULES_GAME_SNAG, "seats"));
    assert_true(rules_option_known(RULES_GAME_SNAG, "target"));
    assert_true(rules_option_known(RULES_GAME_SNAG, "first_dealer"));
    assert_false(rules_option_known(RULES_GAME_SNAG, "moon"));
    o.seats = 3;
    assert_false(rules_options_check(RULES_GAME_SNAG, &o, &e));
    o.seats = 2;
    o.first_dealer = 2;
    assert_false(rules_options_check(RULES_GAME_SNAG, &o, &e));
    enum rules_game_id g;
    assert_true(rules_game_lookup("snag", &g));
    assert_int_equal(g, RULES_GAME_SNAG);
}

/* ---- The view ------------------------------------------------------------------------------- */

static void test_view(void **unused)
{
    (void)unused;
    struct rules_state st;
    start(&st, 0, 6);
    deal_roles(&st, A_ND, A_D, A_BAR);
    tl_script(&st, "1:lead 8S;0:play QH;1:play 3S;0:take QH");
    json_t *v = tlog_view_json(&st, 1);
    json_error_t je;
    json_t *want = json_loads(
        "{\"phase\": \"take\", \"hand_number\": 1, \"dealer\": 0, \"leader\": 1,"
        " \"bar\": [{\"slot\": 2, \"card\": \"7H\"}, {\"slot\": 3, \"card\": \"6D\"},"
        "          {\"slot\": 4, \"card\": \"KC\"}, {\"slot\": 5, \"card\": \"2H\"}],"
        " \"hands\": [{\"seat\": 0, \"count\": 4},"
        "            {\"seat\": 1, \"count\": 4, \"cards\": [\"2C\", \"4D\", \"9H\", \"AS\"]}],"
        " \"trick\": {\"number\": 1,"
        "   \"cards\": [{\"seat\": 1, \"from\": \"bar\", \"card\": \"8S\"},"
        "               {\"seat\": 0, \"from\": \"hand\", \"card\": \"QH\"},"
        "               {\"seat\": 1, \"from\": \"hand\", \"card\": \"3S\"}],"
        "   \"winner\": 0, \"takes\": [{\"seat\": 0, \"card\": \"QH\"}],"
        "   \"on_table\": [\"3S\", \"8S\"]},"
        " \"taken\": [[\"QH\"], []],"
        " \"unused\": {\"count\": 37},"
        " \"totals\": [0, 0], \"last_hand_scores\": [0, 0]}",
        0, &je);
    assert_non_null(want);
    if (!json_equal(v, want)) {
        char *s = json_dumps(v, JSON_COMPACT);
        fail_msg("view: %s", s);
    }
    json_decref(v);
    json_decref(want);

    /* The spectator sees the table but no hand. */
    bool ok;
    uint64_t seen = tl_view_cards(&st, -1, &ok);
    assert_true(ok);
    assert_true(seen == (tl_cards("7H 6D KC 2H 8S QH 3S")));

    /* Between hands the trick is null and the taken cards stay on view. */
    tl_script(&st, "1:take 8S;" A_T2 ";" A_T3 ";" A_T4 ";" A_T5);
    assert_true(st.over);
    v = tlog_view_json(&st, -1);
    assert_string_equal(json_string_value(json_object_get(v, "phase")), "over");
    assert_int_equal(json_integer_value(json_object_get(v, "hand_number")), 1);
    assert_true(json_is_null(json_object_get(v, "trick")));
    assert_true(json_is_null(json_object_get(v, "leader")));
    /* Once over, the unused cards are public. */
    assert_int_equal(json_array_size(json_object_get(json_object_get(v, "unused"), "cards")),
                     37);
    json_decref(v);
    uint64_t all = tl_view_cards(&st, -1, &ok);
    assert_true(all == RULES_ALL_CARDS);

    /* A deal is due: hand_number counts completed hands, the dealer is the next one. */
    start(&st, 0, 0);
    v = tlog_view_json(&st, 0);
    assert_string_equal(json_string_value(json_object_get(v, "phase")), "deal");
    assert_int_equal(json_integer_value(json_object_get(v, "hand_number")), 0);
    assert_int_equal(json_array_size(json_object_get(v, "bar")), 0);
    json_decref(v);
    deal_roles(&st, A_ND, A_D, A_BAR);
    tl_script(&st, A_HAND);
    v = tlog_view_json(&st, 0);
    assert_string_equal(json_string_value(json_object_get(v, "phase")), "deal");
    assert_int_equal(json_integer_value(json_object_get(v, "hand_number")), 1);
    assert_int_equal(json_integer_value(json_object_get(v, "dealer")), 1);
    assert_int_equal(json_integer_value(json_array_get(json_object_get(v, "totals"), 1)), 6);
    assert_int_equal(
        json_integer_value(json_array_get(json_object_get(v, "last_hand_scores"), 1)), 6);
    json_decref(v);
}

/* ---- The property test: random matches against an independent model ------------------------ */

/* §3.6 again, written apart from the engine: counts longest first, cancel equal heads. */
static void model_score(const uint64_t taken[2], int32_t out[2])
{
    int list[2][4], n[2];
    for (int s = 0; s < 2; s++) {
        n[s] = 0;
        for (int suit = 0; suit < 4; suit++) {
            int c = rules_popcount(taken[s] & RULES_SUIT_MASK(suit));
            if (c)
                list[s][n[s]++] = c;
        }
        for (int i = 0; i < n[s]; i++)
            for (int j = i + 1; j < n[s]; j++)
                if (list[s][j] > list[s][i]) {
                    int t = list[s][i];
                    list[s][i] = list[s][j];
                    list[s][j] = t;
                }
    }
    int i = 0;
    while (i < n[0] && i < n[1] && list[0][i] == list[1][i])
        i++;
    int a = i < n[0] ? list[0][i] : 0, b = i < n[1] ? list[1][i] : 0;
    out[0] = a > b ? a * (a + 1) / 2 : 0;
    out[1] = b > a ? b * (b + 1) / 2 : 0;
}

static void test_model_score(void **unused)
{
    (void)unused;
    /* The examples of §3.6 as plain suit sets (C, D, H, S counts). */
    uint64_t t[2];
    int32_t s[2];
    t[0] = tl_cards("2S 3S 4S 2H 3H 2D 2C 3C"); /* {3,2,2,1} */
    t[1] = tl_cards("2H 3H 4H 5H 2D 3D 2C");    /* {4,2,1} */
    model_score(t, s);
    assert_true(s[0] == 0 && s[1] == 10);
    t[0] = tl_cards("2S 3S 4S 5S 2H 3H 2C 3C"); /* {4,2,2} */
    t[1] = tl_cards("2H 3H 4H 5H 2D 3D 4D");    /* {4,3} */
    model_score(t, s);
    assert_true(s[0] == 0 && s[1] == 6);
    t[0] = tl_cards("2S 3S 4S 2H 3H 4H 2D 3D 2C"); /* {3,3,2,1} */
    t[1] = tl_cards("5S 4D 3D 2D 3C 4C");       /* {3,2,1} */
    model_score(t, s);
    assert_true(s[0] == 6 && s[1] == 0);
    t[0] = tl_cards("2S");
    t[1] = tl_cards("3S");
    model_score(t, s);
    assert_true(s[0] == 0 && s[1] == 0);
}

struct model {
    uint64_t hands[2];
    rules_card bar[5]; /* RULES_NO_CARD once led */
    int dealer, leader;
    rules_card trick[3];
    int ntrick, winner, ntaken;
    uint64_t taken[2], unused;
};

static void model_deal(struct model *m, const rules_card *deck, int dealer)
{
    memset(m, 0, sizeof *m);
    m->dealer = dealer;
    m->leader = 1 - dealer;
    for (int i = 0; i < 10; i++)
        m->hands[(dealer + 1 + i) % 2] |= RULES_BIT(deck[i]);
    for (int i = 0; i < 5; i++)
        m->bar[i] = deck[10 + i];
    for (int i = 15; i < RULES_NCARDS; i++)
        m->unused |= RULES_BIT(deck[i]);
}

/* The bar cards the model allows the leader: nearest two remaining from its end. */
static uint64_t model_reach(const struct model *m)
{
    uint64_t out = 0;
    int found = 0;
    for (int k = 0; k < 5 && found < 2; k++) {
        int slot = m->leader == m->dealer ? 4 - k : k;
        if (m->bar[slot] != RULES_NO_CARD) {
            out |= RULES_BIT(m->bar[slot]);
            found++;
        }
    }
    return out;
}

static uint64_t moves_mask(const struct rules_state *st, int seat, uint8_t *verb)
{
    struct rules_move mv[RULES_MAX_LEGAL];
    int n = rules_legal(st, seat, mv, RULES_MAX_LEGAL);
    uint64_t out = 0;
    for (int i = 0; i < n; i++) {
        out |= RULES_BIT(mv[i].card);
        *verb = mv[i].verb;
    }
    return out;
}

static void check_views(const struct rules_state *st, const struct model *m)
{
    bool ok;
    uint64_t hidden = m->hands[0] | m->hands[1] | m->unused;
    if (st->over)
        hidden = 0;
    for (int seat = -1; seat < 2; seat++) {
        uint64_t seen = tl_view_cards(st, seat, &ok);
        assert_true(ok);
        uint64_t own = seat >= 0 ? m->hands[seat] : 0;
        if ((seen & hidden & ~own) != 0)
            fail_msg("view of seat %d leaks %#llx", seat,
                     (unsigned long long)(seen & hidden & ~own));
        if ((seen & own) != own)
            fail_msg("view of seat %d misses its own hand", seat);
        uint64_t table = m->taken[0] | m->taken[1];
        for (int k = 0; k < 5; k++)
            if (m->bar[k] != RULES_NO_CARD)
                table |= RULES_BIT(m->bar[k]);
        for (int i = 0; i < m->ntrick; i++)
            table |= RULES_BIT(m->trick[i]);
        if ((seen & table) != table)
            fail_msg("view of seat %d misses public cards", seat);
    }
}

static void test_random_matches(void **unused)
{
    (void)unused;
    uint64_t rng = 20240917;
    int matches = 8000, full_checks = 0;
    static const int64_t targets[] = {1, 3, 6, 10, 15, 25, 50};
    for (int game = 0; game < matches; game++) {
        struct rules_state st;
        int fd = (int)tl_below(&rng, 2);
        int64_t target = targets[tl_below(&rng, sizeof targets / sizeof targets[0])];
        start(&st, fd, target);
        struct model m;
        memset(&m, 0, sizeof m);
        int32_t totals[2] = {0, 0};
        uint32_t hands = 0;
        int resigner = -1;
        /* Every 8th match gets the full legality check at each step (the costly part). */
        bool full = game % 8 == 0;
        while (!st.over) {
            if (rules_due(&st) == RULES_DUE_DEAL) {
                rules_card deck[RULES_NCARDS];
                struct err e;
                tl_random_deck(&rng, deck);
                assert_true(rules_chance(&st, RULES_DUE_DEAL, deck, RULES_NCARDS, &e));
                model_deal(&m, deck, (fd + (int)hands) % 2);
                assert_int_equal(st.g.snag.dealer, m.dealer);
                continue;
            }
            if (full) {
                const char *broken = tl_check_legality(&st, &rng);
                if (broken)
                    fail_msg("match %d: %s", game, broken);
                full_checks++;
            }
            check_views(&st, &m);
            /* Whose turn and which moves, by the model. */
            int seat;
            uint64_t want;
            uint8_t want_verb;
            if (m.ntrick == 0) {
                seat = m.leader, want = model_reach(&m), want_verb = RULES_LEAD;
            } else if (m.ntrick < 3) {
                seat = m.ntrick == 1 ? 1 - m.leader : m.leader;
                uint64_t f = m.hands[seat] & RULES_SUIT_MASK(RULES_SUIT(m.trick[0]));
                want = f ? f : m.hands[seat];
                want_verb = RULES_PLAY;
            } else {
                seat = m.ntaken == 0 ? m.winner : 1 - m.winner;
                want = 0;
                for (int i = 0; i < 3; i++)
                    want |= RULES_BIT(m.trick[i]);
                want &= ~(m.taken[0] | m.taken[1]);
                want_verb = RULES_TAKE;
            }
            assert_int_equal(rules_to_move(&st), 1u << seat);
            uint8_t verb = 0xff;
            uint64_t got = moves_mask(&st, seat, &verb);
            assert_true(got == want);
            assert_int_equal(verb, want_verb);

            if (tl_below(&rng, 2000) == 0) {
                resigner = (int)tl_below(&rng, 2);
                struct rules_move r = {.verb = RULES_RESIGN, .card = RULES_NO_CARD};
                assert_true(rules_apply(&st, resigner, &r, NULL));
                break;
            }
            /* A random legal move, applied to the engine and the model. */
            int pick = (int)tl_below(&rng, (uint32_t)rules_popcount(want));
            uint64_t s = want;
            while (pick--)
                s &= s - 1;
            rules_card c = (rules_card)__builtin_ctzll(s);
            struct rules_move mv = {.verb = want_verb, .card = c};
            struct err e;
            if (!rules_apply(&st, seat, &mv, &e))
                fail_msg("match %d: legal move refused: %s", game, e.msg);
            if (want_verb == RULES_LEAD) {
                for (int k = 0; k < 5; k++)
                    if (m.bar[k] == c)
                        m.bar[k] = RULES_NO_CARD;
                m.trick[m.ntrick++] = c;
            } else if (want_verb == RULES_PLAY) {
                m.hands[seat] &= ~RULES_BIT(c);
                m.trick[m.ntrick++] = c;
                if (m.ntrick == 3) {
                    int best = 0;
                    for (int i = 1; i < 3; i++)
                        if (RULES_RANK(m.trick[i]) >= RULES_RANK(m.trick[best]))
                            best = i;
                    m.winner = best == 1 ? 1 - m.leader : m.leader;
                    m.ntaken = 0;
                }
            } else {
                m.taken[seat] |= RULES_BIT(c);
                if (++m.ntaken == 2) {
                    for (int i = 0; i < 3; i++)
                        if (!((m.taken[0] | m.taken[1]) & RULES_BIT(m.trick[i])))
                            m.taken[m.winner] |= RULES_BIT(m.trick[i]);
                    m.leader = m.winner;
                    m.ntrick = 0;
                    m.ntaken = 0;
                    bool bar_empty = true;
                    for (int k = 0; k < 5; k++)
                        bar_empty &= m.bar[k] == RULES_NO_CARD;
                    if (bar_empty) {
                        /* The hand is over: 15 cards taken, scored by the model. */
                        assert_int_equal(rules_popcount(m.taken[0] | m.taken[1]), 15);
                        assert_int_equal(rules_popcount(m.taken[0] & m.taken[1]), 0);
                        assert_true(st.g.snag.taken[0] == m.taken[0]);
                        assert_true(st.g.snag.taken[1] == m.taken[1]);
                        int32_t sc[2];
                        model_score(m.taken, sc);
                        assert_true(sc[0] > 0 || sc[1] > 0);
                        hands++;
                        assert_int_equal(st.hands_done, hands);
                        for (int k = 0; k < 2; k++) {
                            assert_int_equal(st.hand_scores[k], sc[k]);
                            totals[k] += sc[k];
                            assert_int_equal(st.totals[k], totals[k]);
                        }
                        bool reached = totals[0] >= target || totals[1] >= target;
                        assert_int_equal(st.over, reached);
                        if (!reached)
                            assert_int_equal(rules_due(&st), RULES_DUE_DEAL);
                    }
                }
            }
        }
        /* The end: totals, ranking, the winner reached the target. */
        check_views(&st, &m);
        struct rules_result r;
        rules_result(&st, &r);
        assert_true(r.finished);
        assert_int_equal(r.to_move, 0);
        assert_int_equal(st.hands_done, hands);
        assert_int_equal(r.totals[0], totals[0]);
        assert_int_equal(r.totals[1], totals[1]);
        int first = r.order[0];
        if (resigner >= 0) {
            assert_int_equal(r.resigned, resigner);
            assert_int_equal(r.order[1], resigner);
            assert_int_equal(first, 1 - resigner);
        } else {
            assert_int_equal(r.nplaces, 2);
            assert_true(totals[first] >= target);
            assert_true(totals[1 - first] < target);
            assert_true(totals[first] > totals[1 - first]);
        }
    }
    assert_true(full_checks > 1000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows),
        cmocka_unit_test(test_hostile_cards),
        cmocka_unit_test(test_listings),
        cmocka_unit_test(test_deal_positions),
        cmocka_unit_test(test_whole_hand),
        cmocka_unit_test(test_target),
        cmocka_unit_test(test_scoring_examples),
        cmocka_unit_test(test_resign),
        cmocka_unit_test(test_options),
        cmocka_unit_test(test_view),
        cmocka_unit_test(test_model_score),
        cmocka_unit_test(test_random_matches),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
