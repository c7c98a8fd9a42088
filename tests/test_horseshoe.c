/* test_horseshoe.c - Horseshoe (rules.md §2) through the generic engine interface:
 * deal positions, availability and turn-up timing, following, trick winners, scoring and
 * the end of the match on stacked decks (table-driven, hostile rows included), the view
 * JSON, and a seeded property test over thousands of random matches against an
 * independent model of the rules (legality, scores, totals, ranking, no view leaks).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "testlib.h"
#include "turnlog.h"

/* ---- Helpers ------------------------------------------------------------------------------ */

static int lowest(uint64_t m)
{
    return __builtin_ctzll(m);
}

static void mask_cards(uint64_t m, rules_card *out)
{
    for (; m; m &= m - 1)
        *out++ = (rules_card)lowest(m);
}

static void start(struct rules_state *st, int first_dealer, int64_t target)
{
    struct rules_options o;
    struct err e;
    rules_options_default(RULES_GAME_HORSESHOE, &o);
    o.first_dealer = first_dealer;
    o.target = target;
    if (!rules_init(st, RULES_GAME_HORSESHOE, &o, &e))
        fail_msg("init: %s", e.msg);
}

static void deal(struct rules_state *st, const char *first28)
{
    rules_card deck[RULES_NCARDS];
    struct err e;
    assert_int_equal(tl_stack(first28, deck), 28); /* the first 28 cards named */
    if (!rules_chance(st, RULES_DUE_DEAL, deck, RULES_NCARDS, &e))
        fail_msg("deal: %s", e.msg);
}

/* Apply "SEAT:CARD ..." (each a `play`), failing the test on a refusal. */
static void play_script(struct rules_state *st, const char *script)
{
    const char *p = script;
    while (*p) {
        while (*p == ' ')
            p++;
        if (!*p)
            break;
        int seat = *p - '0';
        char text[16];
        size_t n = strcspn(p + 2, " ");
        snprintf(text, sizeof text, "play %.*s", (int)n, p + 2);
        struct err e;
        if (!tl_apply(st, seat, text, &e))
            fail_msg("'%d:%s' refused: %s", seat, text, e.msg);
        p += 2 + n;
    }
}

/* The cards of `seat`'s legal moves; also checks that every one is a `play`. */
static uint64_t legal_set(const struct rules_state *st, int seat)
{
    static struct rules_move moves[RULES_MAX_LEGAL];
    int n = rules_legal(st, seat, moves, RULES_MAX_LEGAL);
    uint64_t m = 0;
    for (int i = 0; i < n; i++) {
        assert_int_equal(moves[i].verb, RULES_PLAY);
        if (i > 0)
            assert_true(moves[i].card > moves[i - 1].card); /* deck order */
        m |= RULES_BIT(moves[i].card);
    }
    return m;
}

/* Decks. A: first_dealer 0 makes seat 1 the non-dealer.
 *   non-dealer hand 2C 3C 4C 5D 6D 7D; columns 1-4: KS/AH 8C/JC 9C/QC TC/KC (down/up)
 *   dealer hand     2S 3S 4S 5S 6S 7S; columns 1-4: AS/KH 8H/JD 9H/QD TH/KD
 * P: every card of the non-dealer is a club or diamond, every card of the dealer a heart
 * or spade, so nobody ever has to follow and the scripts choose each trick's winner.
 *   non-dealer hand 2C 2D 3C 3D 4C 4D; columns 5D/5C 6D/6C 7D/7C 8D/8C
 *   dealer hand     2H 3H 9H 9S TH TS; columns JS/JH QS/QH KS/KH AS/AH */
static const char *const deck_a = "2C 2S 3C 3S 4C 4S 5D 5S 6D 6S 7D 7S KS 8C 9C TC "
                                  "AS 8H 9H TH AH JC QC KC KH JD QD KD";
static const char *const deck_p = "2C 2H 2D 3H 3C 9H 3D 9S 4C TH 4D TS 5D 6D 7D 8D "
                                  "JS QS KS AS 5C 6C 7C 8C JH QH KH AH";

/* ---- Deal --------------------------------------------------------------------------------- */

static void check_deal_a(const struct rules_state *st, int dealer)
{
    const struct rules_horseshoe *h = &st->g.horseshoe;
    int nd = 1 - dealer;
    assert_int_equal(h->dealer, dealer);
    assert_int_equal(h->hands[nd], tl_cards("2C 3C 4C 5D 6D 7D"));
    assert_int_equal(h->hands[dealer], tl_cards("2S 3S 4S 5S 6S 7S"));
    static const char *const nd_cols[4][2] = {{"KS", "AH"}, {"8C", "JC"}, {"9C", "QC"}, {"TC", "KC"}};
    static const char *const d_cols[4][2] = {{"AS", "KH"}, {"8H", "JD"}, {"9H", "QD"}, {"TH", "KD"}};
    for (int c = 0; c < 4; c++) {
        for (int k = 0; k < 2; k++) {
            assert_int_equal(RULES_BIT(h->column[nd][c][k]), tl_cards(nd_cols[c][k]));
            assert_int_equal(RULES_BIT(h->column[dealer][c][k]), tl_cards(d_cols[c][k]));
        }
        assert_int_equal(h->height[0][c], 2);
        assert_int_equal(h->height[1][c], 2);
    }
    assert_int_equal(rules_popcount(h->unused), 24);
    assert_int_equal(h->unused & tl_cards(deck_a), 0);
    /* The non-dealer leads the first trick with any card of its hand or a face-up top. */
    assert_int_equal(rules_to_move(st), 1u << nd);
    assert_int_equal(legal_set(st, nd), tl_cards("2C 3C 4C 5D 6D 7D AH JC QC KC"));
    assert_int_equal(legal_set(st, dealer), 0);
}

static void test_deal_positions(void **state)
{
    (void)state;
    for (int fd = 0; fd < 2; fd++) {
        struct rules_state st;
        start(&st, fd, 11);
        assert_int_equal(rules_due(&st), RULES_DUE_DEAL);
        assert_int_equal(rules_to_move(&st), 0);
        deal(&st, deck_a);
        assert_int_equal(rules_due(&st), RULES_DUE_NONE);
        check_deal_a(&st, fd);
    }
}

static void test_options(void **state)
{
    (void)state;
    struct rules_options o;
    struct err e;
    rules_options_default(RULES_GAME_HORSESHOE, &o);
    assert_int_equal(o.seats, 2);
    assert_int_equal(o.target, 11);
    assert_int_equal(o.first_dealer, 0);
    assert_true(rules_options_check(RULES_GAME_HORSESHOE, &o, &e));
    enum rules_game_id g;
    assert_true(rules_game_lookup("horseshoe", &g));
    assert_int_equal(g, RULES_GAME_HORSESHOE);
    assert_true(rules_option_known(RULES_GAME_HORSESHOE, "seats"));
    assert_true(rules_option_known(RULES_GAME_HORSESHOE, "target"));
    assert_true(rules_option_known(RULES_GAME_HORSESHOE, "first_dealer"));
    assert_false(rules_option_known(RULES_GAME_HORSESHOE, "moon"));
    static const int bad_seats[] = {1, 3, 4, 0};
    for (size_t i = 0; i < 4; i++) {
        o.seats = bad_seats[i];
        assert_false(rules_options_check(RULES_GAME_HORSESHOE, &o, &e));
        assert_string_equal(e.tag, "bad_option");
    }
    o.seats = 2;
    o.first_dealer = 2;
    assert_false(rules_options_check(RULES_GAME_HORSESHOE, &o, &e));
    o.first_dealer = 1;
    o.target = 0;
    assert_false(rules_options_check(RULES_GAME_HORSESHOE, &o, &e));
}

/* ---- Legality table ----------------------------------------------------------------------- */

struct row {
    const char *about;
    int first_dealer;
    bool no_deal;        /* the deal has not happened yet */
    const char *prefix;  /* script played first on deck A */
    int seat;
    const char *move;    /* NULL: only check `legal` */
    const char *tag;     /* NULL: accepted */
    const char *legal;   /* if not NULL: the cards of `seat`'s legal moves before `move` */
};

#define T1 "1:AH 0:KH 0:AS 1:KS"
static const struct row rows[] = {
    /* First lead: hand or a face-up top, nothing else. */
    {"lead from the hand", 0, false, "", 1, "play 2C", NULL, "2C 3C 4C 5D 6D 7D AH JC QC KC"},
    {"lead a column top", 0, false, "", 1, "play AH", NULL, NULL},
    {"lenient notation", 0, false, "", 1, "PLAY a♥", NULL, NULL},
    {"the dealer does not lead", 0, false, "", 0, "play 2S", "not_your_turn", ""},
    {"own face-down card", 0, false, "", 1, "play KS", "not_available", NULL},
    {"card on the other seat's board", 0, false, "", 1, "play KH", "not_available", NULL},
    {"card in the other seat's hand", 0, false, "", 1, "play 2S", "not_available", NULL},
    {"other seat's face-down card", 0, false, "", 1, "play AS", "not_available", NULL},
    {"an unused card", 0, false, "", 1, "play 2D", "not_available", NULL},
    {"hearts pass", 0, false, "", 1, "pass 2C 3C 4C", "not_a_horseshoe_move", NULL},
    {"hearts moon", 0, false, "", 1, "moon add", "not_a_horseshoe_move", NULL},
    {"snag lead", 0, false, "", 1, "lead 2C", "not_a_horseshoe_move", NULL},
    {"snag take", 0, false, "", 1, "take 2C", "not_a_horseshoe_move", NULL},
    {"horse-thief stay", 0, false, "", 1, "stay", "not_a_horseshoe_move", NULL},
    {"horse-thief drop", 0, false, "", 1, "drop", "not_a_horseshoe_move", NULL},
    {"horse-thief discard", 0, false, "", 1, "discard 2C", "not_a_horseshoe_move", NULL},
    {"speed move", 0, false, "", 1, "move AH", "not_a_horseshoe_move", NULL},
    {"speed flip", 0, false, "", 1, "flip 1", "not_a_horseshoe_move", NULL},
    {"speed ready", 0, false, "", 1, "ready", "not_a_horseshoe_move", NULL},
    {"no seat 2", 0, false, "", 2, "play 2C", "bad_seat", NULL},
    {"no seat -1", 0, false, "", -1, "play 2C", "bad_seat", NULL},
    {"no move before the deal", 0, true, "", 1, "play 2C", "chance_due", ""},
    {"resign before the deal", 0, true, "", 0, "resign", NULL, NULL},
    /* first_dealer 1: seat 0 is the non-dealer and leads. */
    {"mirrored deal: seat 0 leads", 1, false, "", 0, "play AH", NULL,
     "2C 3C 4C 5D 6D 7D AH JC QC KC"},
    {"mirrored deal: seat 1 deals", 1, false, "", 1, "play 2S", "not_your_turn", ""},
    /* Card 2: O follows card 1's suit with any available card, a board top included. */
    {"card 2 must follow with its only heart, a top", 0, false, "1:AH", 0, "play 2S",
     "must_follow_suit", "KH"},
    {"card 2 face-down card", 0, false, "1:AH", 0, "play AS", "not_available", NULL},
    {"card 2 by the leader", 0, false, "1:AH", 1, "play KS", "not_your_turn", ""},
    {"card 2 follows", 0, false, "1:AH", 0, "play KH", NULL, NULL},
    /* Card 3: free; the card turned up by card 2 is available at once. */
    {"card 3 free, AS turned up by card 2", 0, false, "1:AH 0:KH", 0, "play AS", NULL,
     "2S 3S 4S 5S 6S 7S AS JD QD KD"},
    {"card 3 free, any suit", 0, false, "1:AH 0:KH", 0, "play QD", NULL, NULL},
    {"card 3 not twice", 0, false, "1:AH 0:KH", 0, "play KH", "not_available", NULL},
    {"card 3 from the other board", 0, false, "1:AH 0:KH", 0, "play JC", "not_available", NULL},
    {"card 3 by the leader", 0, false, "1:AH 0:KH", 1, "play 2C", "not_your_turn", ""},
    /* Card 4: L follows card 3's suit; KS was turned up by L's own card 1. */
    {"card 4 must follow with KS, turned up by card 1", 0, false, "1:AH 0:KH 0:AS", 1,
     "play 2C", "must_follow_suit", "KS"},
    {"card 4 follows", 0, false, "1:AH 0:KH 0:AS", 1, "play KS", NULL, NULL},
    {"card 4 by the other seat", 0, false, "1:AH 0:KH 0:AS", 0, "play 2S", "not_your_turn", ""},
    {"card 4 follows card 3, not card 1", 0, false, "1:AH 0:KH 0:QD", 1, "play 5D", NULL,
     "5D 6D 7D"},
    {"card 4 free when void in card 3's suit", 0, false, "1:2C 0:2S 0:3S", 1, "play KS",
     "not_available", "3C 4C 5D 6D 7D AH JC QC KC"},
    /* Trick 1 (AH KH AS KS): no pair, AH is the highest heart: seat 1 leads again. */
    {"winner leads", 0, false, T1, 1, "play 2C", NULL, "2C 3C 4C 5D 6D 7D JC QC KC"},
    {"loser does not lead", 0, false, T1, 0, "play 2S", "not_your_turn", ""},
    {"played card is gone", 0, false, T1, 1, "play KS", "not_available", NULL},
    {"void in clubs: any available card", 0, false, T1 " 1:2C", 0, "play 2S", NULL,
     "2S 3S 4S 5S 6S 7S JD QD KD"},
    {"still face down", 0, false, T1 " 1:2C", 0, "play 8H", "not_available", NULL},
    {"card 3 uses the card under JD", 0, false, T1 " 1:2C 0:JD", 0, "play 8H", NULL,
     "2S 3S 4S 5S 6S 7S 8H QD KD"},
};

static void run_row(const struct row *r)
{
    struct rules_state st;
    start(&st, r->first_dealer, 11);
    if (!r->no_deal) {
        deal(&st, deck_a);
        play_script(&st, r->prefix);
    }
    if (r->legal) {
        uint64_t want = tl_cards(r->legal);
        if (r->seat >= 0 && r->seat < 2 && legal_set(&st, r->seat) != want)
            fail_msg("%s: legal moves differ", r->about);
    }
    if (!r->move)
        return;
    struct rules_state before = st;
    struct err e;
    bool ok = tl_apply(&st, r->seat, r->move, &e);
    if (r->tag == NULL) {
        if (!ok)
            fail_msg("%s: '%s' refused: %s", r->about, r->move, e.msg);
        return;
    }
    if (ok)
        fail_msg("%s: '%s' accepted", r->about, r->move);
    assert_int_equal(e.code, ERR_ILLEGAL);
    if (strcmp(e.tag, r->tag) != 0)
        fail_msg("%s: tag %s, want %s (%s)", r->about, e.tag, r->tag, e.msg);
    assert_true(e.msg[0] != '\0');
    assert_memory_equal(&st, &before, sizeof st);
}

static void test_legality_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        run_row(&rows[i]);
}

/* A refusal names no hidden card's place: own face-down cards, the other hand and the
 * unused cards all get the same words. */
static void test_refusals_leak_nothing(void **state)
{
    (void)state;
    struct rules_state st;
    start(&st, 0, 11);
    deal(&st, deck_a);
    struct err e1, e2, e3;
    assert_false(tl_apply(&st, 1, "play KS", &e1)); /* own face-down */
    assert_false(tl_apply(&st, 1, "play 2S", &e2)); /* other hand */
    assert_false(tl_apply(&st, 1, "play 2D", &e3)); /* unused */
    assert_string_equal(strchr(e1.msg, ' '), strchr(e2.msg, ' '));
    assert_string_equal(strchr(e1.msg, ' '), strchr(e3.msg, ' '));
}

/* ---- Trick winners ------------------------------------------------------------------------ */

struct winner_row {
    const char *cards; /* cards 1-4 */
    int winner;        /* 0: L, 1: O */
};

static const struct winner_row winner_rows[] = {
    {"AH KH 2S 3D", 0},  /* no pair: card 1 highest of its suit */
    {"5H KH 2S 3D", 1},  /* no pair: card 2 */
    {"5H 2H KH 3H", 1},  /* no pair: card 3 of card 1's suit */
    {"5H 2S 3D AH", 0},  /* no pair: card 4 of card 1's suit */
    {"5C AS KD 3C", 0},  /* higher ranks off card 1's suit do not count */
    {"5C 2C KD AD", 0},  /* card 1's suit counts, not card 3's */
    {"7C AC KC 7D", 0},  /* L pair beats a higher card */
    {"AC 2C 2D KC", 1},  /* O pair beats the ace led */
    {"3C 9C 9D 3D", 1},  /* both pairs: the higher rank */
    {"QC 9C 9D QD", 0},  /* both pairs: the higher rank */
    {"5C 5D 5H 5S", 0},  /* both pairs of equal rank: L, who played card 4 */
    {"AS AH 2H 2S", 0},  /* no pair (cards 1 and 2 are not a pair): AS highest spade */
    {"2S AS 3H 2H", 0},  /* L pair of twos beats the ace */
};

/* A deal in which L (the non-dealer, seat 1) holds cards 1 and 4 and O cards 2 and 3, and
 * the other cards are placed so that neither card 2 nor card 4 is forced elsewhere: O has
 * no card of card 1's suit but card 2, L none of card 3's suit but card 4. */
static void winner_deal(const uint64_t four[4], char out[28 * 3 + 1])
{
    uint64_t l = four[0] | four[3], o = four[1] | four[2];
    int s1 = RULES_SUIT(lowest(four[0])), s3 = RULES_SUIT(lowest(four[2]));
    for (int pass = 0; pass < 2; pass++)
        for (int c = 0; c < RULES_NCARDS; c++) {
            uint64_t b = RULES_BIT(c);
            if ((l | o) & b || (four[0] | four[1] | four[2] | four[3]) & b)
                continue;
            bool l_may = RULES_SUIT(c) != s3, o_may = RULES_SUIT(c) != s1;
            if (pass == 0 && l_may && !o_may && rules_popcount(l) < 14)
                l |= b;
            else if (pass == 0 && o_may && !l_may && rules_popcount(o) < 14)
                o |= b;
            else if (pass == 1 && l_may && rules_popcount(l) < 14)
                l |= b;
            else if (pass == 1 && o_may && rules_popcount(o) < 14)
                o |= b;
        }
    assert_int_equal(rules_popcount(l), 14);
    assert_int_equal(rules_popcount(o), 14);
    /* Positions: 0-11 hands (even: L, the non-dealer), 12-15 L down, 16-19 O down,
     * 20-23 L up, 24-27 O up. Cards 1-4 go in the hands. */
    rules_card lc[14], oc[14], deck[28];
    uint64_t lrest = l & ~(four[0] | four[3]), orest = o & ~(four[1] | four[2]);
    lc[0] = (rules_card)lowest(four[0]);
    lc[1] = (rules_card)lowest(four[3]);
    mask_cards(lrest, lc + 2);
    oc[0] = (rules_card)lowest(four[1]);
    oc[1] = (rules_card)lowest(four[2]);
    mask_cards(orest, oc + 2);
    for (int i = 0; i < 6; i++) {
        deck[2 * i] = lc[i];
        deck[2 * i + 1] = oc[i];
    }
    for (int i = 0; i < 4; i++) {
        deck[12 + i] = lc[6 + i];
        deck[16 + i] = oc[6 + i];
        deck[20 + i] = lc[10 + i];
        deck[24 + i] = oc[10 + i];
    }
    char *p = out;
    for (int i = 0; i < 28; i++) {
        rules_card_format(deck[i], p);
        p[2] = i == 27 ? '\0' : ' ';
        p += 3;
    }
}

static void test_trick_winner(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof winner_rows / sizeof winner_rows[0]; i++) {
        const struct winner_row *r = &winner_rows[i];
        uint64_t four[4];
        char script[40], first28[28 * 3 + 1];
        const char *p = r->cards;
        for (int k = 0; k < 4; k++, p += 3)
            four[k] = tl_cards((char[3]){p[0], p[1], '\0'});
        winner_deal(four, first28);
        snprintf(script, sizeof script, "1:%.2s 0:%.2s 0:%.2s 1:%.2s", r->cards, r->cards + 3,
                 r->cards + 6, r->cards + 9);
        struct rules_state st;
        start(&st, 0, 11);
        deal(&st, first28);
        play_script(&st, script);
        int want = r->winner == 0 ? 1 : 0; /* L is seat 1 */
        const struct rules_horseshoe *h = &st.g.horseshoe;
        if (h->won[want] != 1 || h->leader != want || rules_to_move(&st) != 1u << want)
            fail_msg("trick %s: seat %d should have won", r->cards, want);
        assert_int_equal(h->trick_no, 1);
        assert_int_equal(h->winners[0], want);
    }
}

/* ---- Hands, scoring, the end of the match -------------------------------------------------- */

struct hand_row {
    const char *about;
    const char *deck;
    int first_dealer;
    const char *script;
    int won0, won1;
    int32_t score0, score1;
};

static const struct hand_row hand_rows[] = {
    {"seat 1 takes all seven: 7", deck_p, 0,
     "1:2C 0:2H 0:3H 1:3C 1:4C 0:9H 0:TH 1:5C 1:6C 0:JH 0:QH 1:7C 1:8C 0:KH 0:AH 1:2D "
     "1:3D 0:9S 0:TS 1:4D 1:5D 0:JS 0:QS 1:6D 1:7D 0:KS 0:AS 1:8D",
     0, 7, 0, 7},
    {"seat 1 takes six: 5", deck_p, 0,
     "1:2C 0:9H 0:9S 1:3C 0:2H 1:4C 1:4D 0:3H 1:5C 0:TH 0:JH 1:6C 1:7C 0:QH 0:KH 1:8C "
     "1:2D 0:AH 0:TS 1:3D 1:5D 0:JS 0:QS 1:6D 1:7D 0:KS 0:AS 1:8D",
     1, 6, 0, 5},
    {"seat 0 takes five: 3", deck_p, 0,
     "1:2C 0:2H 0:3H 1:3C 1:4C 0:9H 0:TH 1:5C 1:6C 0:JH 0:JS 1:7C 0:QH 1:8C 1:2D 0:KH "
     "0:AH 1:3D 1:4D 0:9S 0:TS 1:5D 1:6D 0:QS 0:KS 1:7D 1:8D 0:AS",
     5, 2, 3, 0},
    {"seat 0 takes four: 2", deck_p, 0,
     "1:2C 0:2H 0:3H 1:3C 1:4C 0:9H 0:TH 1:5C 1:6C 0:JH 0:QH 1:7C 1:8C 0:KH 0:KS 1:2D "
     "0:AH 1:3D 1:4D 0:9S 0:TS 1:5D 1:6D 0:JS 0:QS 1:7D 1:8D 0:AS",
     4, 3, 2, 0},
    {"seat 1 takes four on deck A: 2", deck_a, 0,
     "1:2C 0:KD 0:KH 1:AH 0:JD 1:5D 1:3C 0:QD 0:8H 1:4C 1:JC 0:9H 0:TH 1:KC 1:KS 0:2S "
     "1:8C 0:3S 0:4S 1:TC 1:QC 0:5S 0:6S 1:9C 1:6D 0:7S 0:AS 1:7D",
     3, 4, 0, 2},
};

static void test_hand_scores(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof hand_rows / sizeof hand_rows[0]; i++) {
        const struct hand_row *r = &hand_rows[i];
        struct rules_state st;
        start(&st, r->first_dealer, 11);
        deal(&st, r->deck);
        play_script(&st, r->script);
        const struct rules_horseshoe *h = &st.g.horseshoe;
        if (h->won[0] != r->won0 || h->won[1] != r->won1)
            fail_msg("%s: tricks %d-%d", r->about, h->won[0], h->won[1]);
        assert_int_equal(st.hands_done, 1);
        assert_int_equal(st.hand_scores[0], r->score0);
        assert_int_equal(st.hand_scores[1], r->score1);
        assert_int_equal(st.totals[0], r->score0);
        assert_int_equal(st.totals[1], r->score1);
        /* Every card of both seats is played; the deal alternates. */
        assert_int_equal(h->hands[0] | h->hands[1], 0);
        for (int s = 0; s < 2; s++)
            for (int c = 0; c < 4; c++)
                assert_int_equal(h->height[s][c], 0);
        assert_false(st.over);
        assert_int_equal(rules_due(&st), RULES_DUE_DEAL);
        assert_int_equal(rules_to_move(&st), 0);
        assert_int_equal(h->dealer, 1 - r->first_dealer);
    }
}

/* Four hands to the target of 11, the deal alternating: seat 1 scores 7, 2, -, 3. */
static void test_match(void **state)
{
    (void)state;
    struct rules_state st;
    struct err e;
    start(&st, 0, 11);
    deal(&st, deck_p);
    play_script(&st, hand_rows[0].script); /* dealer 0: seat 1 takes 7 */
    /* Hand 2: seat 1 deals, so seat 0 is the non-dealer and gets deck P's clubs and
     * diamonds; the scripts keep their meaning with the seats swapped. */
    deal(&st, deck_p);
    assert_int_equal(st.g.horseshoe.dealer, 1);
    assert_int_equal(rules_to_move(&st), 1u << 0);
    assert_false(tl_apply(&st, 1, "play 2H", &e));
    assert_string_equal(e.tag, "not_your_turn");
    char swapped[400];
    snprintf(swapped, sizeof swapped, "%s", hand_rows[3].script);
    for (char *p = swapped; *p; p++)
        if ((p == swapped || p[-1] == ' ') && (*p == '0' || *p == '1'))
            *p = *p == '0' ? '1' : '0';
    play_script(&st, swapped); /* now seat 1 takes four: 2 */
    assert_int_equal(st.hand_scores[0], 0);
    assert_int_equal(st.hand_scores[1], 2);
    deal(&st, deck_p);
    assert_int_equal(st.g.horseshoe.dealer, 0);
    play_script(&st, hand_rows[3].script); /* seat 0 takes four: 2 */
    assert_int_equal(st.totals[0], 2);
    assert_int_equal(st.totals[1], 9);
    assert_false(st.over);
    deal(&st, deck_p);
    snprintf(swapped, sizeof swapped, "%s", hand_rows[2].script);
    for (char *p = swapped; *p; p++)
        if ((p == swapped || p[-1] == ' ') && (*p == '0' || *p == '1'))
            *p = *p == '0' ? '1' : '0';
    play_script(&st, swapped); /* seat 1 takes five: 3, total 12 >= 11 */
    assert_true(st.over);
    assert_int_equal(st.hands_done, 4);
    assert_int_equal(st.totals[0], 2);
    assert_int_equal(st.totals[1], 12);
    assert_int_equal(rules_due(&st), RULES_DUE_NONE);
    assert_int_equal(rules_to_move(&st), 0);
    struct rules_result r;
    rules_result(&st, &r);
    assert_true(r.finished);
    assert_int_equal(r.nplaces, 2);
    assert_int_equal(r.order[0], 1);
    assert_int_equal(r.order[1], 0);
    assert_false(tl_apply(&st, 0, "resign", &e));
    assert_string_equal(e.tag, "match_over");
    rules_card deck[RULES_NCARDS];
    assert_int_equal(tl_stack(deck_p, deck), 28);
    assert_false(rules_chance(&st, RULES_DUE_DEAL, deck, RULES_NCARDS, &e));
}

/* Reaching the target exactly ends the match; one point short does not. */
static void test_target_exact(void **state)
{
    (void)state;
    struct rules_state st;
    start(&st, 0, 7);
    deal(&st, deck_p);
    play_script(&st, hand_rows[0].script);
    assert_true(st.over);
    start(&st, 0, 8);
    deal(&st, deck_p);
    play_script(&st, hand_rows[0].script);
    assert_false(st.over);
    assert_int_equal(rules_due(&st), RULES_DUE_DEAL);
}

static void test_resign(void **state)
{
    (void)state;
    struct rules_state st;
    struct err e;
    start(&st, 0, 11);
    deal(&st, deck_p);
    play_script(&st, hand_rows[0].script); /* seat 1: 7 */
    deal(&st, deck_p);
    assert_true(tl_apply(&st, 1, "resign", &e)); /* not seat 1's turn: still legal */
    struct rules_result r;
    rules_result(&st, &r);
    assert_true(r.finished);
    assert_int_equal(r.resigned, 1);
    assert_int_equal(r.order[0], 0);
    assert_int_equal(r.order[1], 1);
    assert_int_equal(rules_to_move(&st), 0);
    assert_int_equal(legal_set(&st, 0), 0);
}

/* ---- The view ----------------------------------------------------------------------------- */

static void check_view(const struct rules_state *st, int seat, const char *want_text)
{
    json_error_t jerr;
    json_t *want = json_loads(want_text, 0, &jerr);
    if (!want)
        fail_msg("expected view does not parse: %s", jerr.text);
    json_t *got = tlog_view_json(st, seat);
    if (!json_equal(got, want)) {
        char *g = json_dumps(got, JSON_COMPACT | JSON_SORT_KEYS);
        fail_msg("view of seat %d:\n%s", seat, g);
    }
    json_decref(got);
    json_decref(want);
}

#define BOARD_1                                                                                \
    "{\"seat\": 1, \"columns\": ["                                                             \
    "{\"column\": 1, \"up\": \"KS\", \"face_down\": false},"                                   \
    "{\"column\": 2, \"up\": \"JC\", \"face_down\": true},"                                    \
    "{\"column\": 3, \"up\": \"QC\", \"face_down\": true},"                                    \
    "{\"column\": 4, \"up\": \"KC\", \"face_down\": true}]}"
#define BOARD_0                                                                                \
    "{\"seat\": 0, \"columns\": ["                                                             \
    "{\"column\": 1, \"up\": \"AS\", \"face_down\": false},"                                   \
    "{\"column\": 2, \"up\": \"JD\", \"face_down\": true},"                                    \
    "{\"column\": 3, \"up\": \"QD\", \"face_down\": true},"                                    \
    "{\"column\": 4, \"up\": \"KD\", \"face_down\": true}]}"
#define VIEW_AFTER(hands)                                                                      \
    "{\"phase\": \"play\", \"hand_number\": 1, \"dealer\": 0, \"leader\": 1, \"to_play\": 0,"  \
    "\"hands\": " hands ", \"boards\": [" BOARD_0 ", " BOARD_1 "],"                           \
    "\"unused\": {\"count\": 24},"                                                             \
    "\"trick\": {\"number\": 1, \"leader\": 1, \"cards\": [{\"seat\": 1, \"card\": \"AH\"},"   \
    "{\"seat\": 0, \"card\": \"KH\"}]},"                                                       \
    "\"tricks\": [], \"tricks_won\": [0, 0], \"totals\": [0, 0]}"

static void test_view(void **state)
{
    (void)state;
    struct rules_state st;
    start(&st, 0, 11);
    check_view(&st, 0,
               "{\"phase\": \"deal\", \"hand_number\": 0, \"dealer\": 0, \"leader\": null,"
               "\"to_play\": null,"
               "\"hands\": [{\"seat\": 0, \"count\": 0, \"cards\": []}, {\"seat\": 1, \"count\": 0}],"
               "\"boards\": [{\"seat\": 0, \"columns\": ["
               "{\"column\": 1, \"up\": null, \"face_down\": false},"
               "{\"column\": 2, \"up\": null, \"face_down\": false},"
               "{\"column\": 3, \"up\": null, \"face_down\": false},"
               "{\"column\": 4, \"up\": null, \"face_down\": false}]},"
               "{\"seat\": 1, \"columns\": ["
               "{\"column\": 1, \"up\": null, \"face_down\": false},"
               "{\"column\": 2, \"up\": null, \"face_down\": false},"
               "{\"column\": 3, \"up\": null, \"face_down\": false},"
               "{\"column\": 4, \"up\": null, \"face_down\": false}]}],"
               "\"unused\": {\"count\": 0}, \"trick\": null, \"tricks\": [],"
               "\"tricks_won\": [0, 0], \"totals\": [0, 0]}");
    deal(&st, deck_a);
    play_script(&st, "1:AH 0:KH");
    check_view(&st, 0,
               VIEW_AFTER("[{\"seat\": 0, \"count\": 6, \"cards\": [\"2S\", \"3S\", \"4S\", "
                          "\"5S\", \"6S\", \"7S\"]}, {\"seat\": 1, \"count\": 6}]"));
    check_view(&st, 1,
               VIEW_AFTER("[{\"seat\": 0, \"count\": 6}, {\"seat\": 1, \"count\": 6, \"cards\": "
                          "[\"2C\", \"3C\", \"4C\", \"5D\", \"6D\", \"7D\"]}]"));
    check_view(&st, -1, VIEW_AFTER("[{\"seat\": 0, \"count\": 6}, {\"seat\": 1, \"count\": 6}]"));

    /* Once the match is over everything is public: face-down cards and the unused ones. */
    assert_true(tl_apply(&st, 0, "resign", NULL));
    json_t *v = tlog_view_json(&st, -1);
    assert_string_equal(json_string_value(json_object_get(v, "phase")), "over");
    json_t *col = json_array_get(
        json_object_get(json_array_get(json_object_get(v, "boards"), 1), "columns"), 1);
    assert_string_equal(json_string_value(json_object_get(col, "face_down_card")), "8C");
    assert_int_equal(json_array_size(json_object_get(json_object_get(v, "unused"), "cards")), 24);
    json_decref(v);
    assert_int_equal(tl_view_cards(&st, -1, NULL), RULES_ALL_CARDS);
}

/* After a trick the completed trick stays in the view with its winner. */
static void test_view_tricks(void **state)
{
    (void)state;
    struct rules_state st;
    start(&st, 0, 11);
    deal(&st, deck_a);
    play_script(&st, T1);
    json_t *v = tlog_view_json(&st, 0);
    json_t *want = json_loads("[{\"leader\": 1, \"cards\": [{\"seat\": 1, \"card\": \"AH\"},"
                              "{\"seat\": 0, \"card\": \"KH\"}, {\"seat\": 0, \"card\": \"AS\"},"
                              "{\"seat\": 1, \"card\": \"KS\"}], \"winner\": 1}]",
                              0, NULL);
    assert_true(json_equal(json_object_get(v, "tricks"), want));
    json_t *trick = json_object_get(v, "trick");
    assert_int_equal(json_integer_value(json_object_get(trick, "number")), 2);
    assert_int_equal(json_array_size(json_object_get(trick, "cards")), 0);
    assert_int_equal(json_integer_value(json_array_get(json_object_get(v, "tricks_won"), 1)), 1);
    json_decref(want);
    json_decref(v);
}

/* ---- Property: random matches against an independent model -------------------------------- */

struct model {
    int dealer, leader, ntrick, ntricks;
    int won[2];
    rules_card trick[4];
    uint64_t hand[2], dealt[2], played[2], unused, table; /* table: played this hand */
    rules_card down[2][4], up[2][4];
};

static void model_deal(struct model *m, const rules_card *deck, int dealer)
{
    memset(m, 0, sizeof *m);
    m->dealer = dealer;
    int nd = 1 - dealer;
    for (int i = 0; i < 12; i++)
        m->hand[i % 2 == 0 ? nd : dealer] |= RULES_BIT(deck[i]);
    for (int c = 0; c < 4; c++) {
        m->down[nd][c] = deck[12 + c];
        m->down[dealer][c] = deck[16 + c];
        m->up[nd][c] = deck[20 + c];
        m->up[dealer][c] = deck[24 + c];
    }
    for (int s = 0; s < 2; s++) {
        m->dealt[s] = m->hand[s];
        for (int c = 0; c < 4; c++)
            m->dealt[s] |= RULES_BIT(m->down[s][c]) | RULES_BIT(m->up[s][c]);
    }
    for (int i = 28; i < 52; i++)
        m->unused |= RULES_BIT(deck[i]);
    m->leader = nd;
}

static uint64_t model_tops(const struct model *m, int s)
{
    uint64_t t = 0;
    for (int c = 0; c < 4; c++) {
        if (!(m->played[s] & RULES_BIT(m->up[s][c])))
            t |= RULES_BIT(m->up[s][c]);
        else if (!(m->played[s] & RULES_BIT(m->down[s][c])))
            t |= RULES_BIT(m->down[s][c]);
    }
    return t;
}

static uint64_t model_face_down(const struct model *m)
{
    uint64_t d = 0;
    for (int s = 0; s < 2; s++)
        for (int c = 0; c < 4; c++)
            if (!(m->played[s] & RULES_BIT(m->up[s][c])))
                d |= RULES_BIT(m->down[s][c]);
    return d;
}

static int model_turn(const struct model *m)
{
    return (m->ntrick == 0 || m->ntrick == 3) ? m->leader : 1 - m->leader;
}

static uint64_t model_legal(const struct model *m, int s)
{
    if (s != model_turn(m))
        return 0;
    uint64_t avail = (m->hand[s] & ~m->played[s]) | model_tops(m, s);
    if (m->ntrick == 1 || m->ntrick == 3) {
        uint64_t f = avail & RULES_SUIT_MASK(RULES_SUIT(m->trick[m->ntrick - 1]));
        if (f)
            return f;
    }
    return avail;
}

/* Returns the trick's winner when the card completes it, else -1. */
static int model_play(struct model *m, int s, rules_card c)
{
    m->played[s] |= RULES_BIT(c);
    m->table |= RULES_BIT(c);
    m->trick[m->ntrick++] = c;
    if (m->ntrick < 4)
        return -1;
    int L = m->leader, w;
    int r[4];
    for (int i = 0; i < 4; i++)
        r[i] = RULES_RANK(m->trick[i]);
    if (r[0] == r[3] && r[1] == r[2])
        w = r[1] > r[0] ? 1 - L : L;
    else if (r[0] == r[3])
        w = L;
    else if (r[1] == r[2])
        w = 1 - L;
    else {
        int best = -1, bi = 0;
        for (int i = 0; i < 4; i++)
            if (RULES_SUIT(m->trick[i]) == RULES_SUIT(m->trick[0]) && r[i] > best)
                best = r[i], bi = i;
        w = (bi == 0 || bi == 3) ? L : 1 - L;
    }
    m->won[w]++;
    m->ntricks++;
    m->ntrick = 0;
    m->leader = w;
    return w;
}

static void check_views(const struct rules_state *st, const struct model *m, bool dealt)
{
    uint64_t face_down = model_face_down(m);
    uint64_t tops = model_tops(m, 0) | model_tops(m, 1);
    for (int seat = -1; seat < 2; seat++) {
        bool ok;
        uint64_t seen = tl_view_cards(st, seat, &ok);
        assert_true(ok);
        if (st->over) {
            assert_int_equal(seen, dealt ? RULES_ALL_CARDS : 0);
            continue;
        }
        uint64_t hidden = face_down | m->unused;
        uint64_t visible = tops | m->table;
        for (int s = 0; s < 2; s++) {
            uint64_t hand = m->hand[s] & ~m->played[s];
            if (s == seat)
                visible |= hand;
            else
                hidden |= hand;
        }
        if (seen & hidden)
            fail_msg("view of seat %d leaks %llx", seat, (unsigned long long)(seen & hidden));
        assert_int_equal(seen, visible);
    }
}

static void one_match(uint64_t *rng, bool full_check)
{
    struct rules_state st;
    struct model m = {0};
    int fd = (int)tl_below(rng, 2);
    int64_t target = 1 + tl_below(rng, 30);
    start(&st, fd, target);
    int32_t totals[2] = {0, 0};
    int hands = 0;
    bool dealt = false;
    for (int step = 0;; step++) {
        assert_true(step < 100000);
        if (full_check) {
            const char *why = tl_check_legality(&st, rng);
            if (why)
                fail_msg("%s", why);
        }
        if (!st.over && tl_below(rng, 3000) == 0) {
            int s = (int)tl_below(rng, 2);
            assert_true(tl_apply(&st, s, "resign", NULL));
            struct rules_result r;
            rules_result(&st, &r);
            assert_int_equal(r.order[1], s);
            check_views(&st, &m, dealt);
            return;
        }
        if (st.over)
            break;
        if (rules_due(&st) == RULES_DUE_DEAL) {
            rules_card deck[RULES_NCARDS];
            tl_random_deck(rng, deck);
            int dealer = (fd + hands) % 2;
            assert_true(rules_chance(&st, RULES_DUE_DEAL, deck, RULES_NCARDS, NULL));
            model_deal(&m, deck, dealer);
            dealt = true;
            assert_int_equal(st.g.horseshoe.dealer, dealer);
            check_views(&st, &m, dealt);
            continue;
        }
        assert_int_equal(rules_due(&st), RULES_DUE_NONE);
        int turn = model_turn(&m);
        assert_int_equal(rules_to_move(&st), 1u << turn);
        uint64_t want = model_legal(&m, turn);
        assert_int_equal(legal_set(&st, turn), want);
        assert_int_equal(legal_set(&st, 1 - turn), 0);
        int pick = (int)tl_below(rng, (uint32_t)rules_popcount(want));
        uint64_t s = want;
        while (pick--)
            s &= s - 1;
        rules_card c = (rules_card)lowest(s);
        struct rules_move mv = {.verb = RULES_PLAY, .card = c};
        struct err e;
        if (!rules_apply(&st, turn, &mv, &e))
            fail_msg("legal card refused: %s", e.msg);
        model_play(&m, turn, c);
        if (m.ntricks == 7) {
            /* Each seat played exactly its 14 dealt cards. */
            assert_int_equal(m.played[0], m.dealt[0]);
            assert_int_equal(m.played[1], m.dealt[1]);
            assert_int_equal(rules_popcount(m.dealt[0]), 14);
            int more = m.won[0] > m.won[1] ? 0 : 1;
            static const int32_t pts[8] = {0, 0, 0, 0, 2, 3, 5, 7};
            int32_t sc[2] = {0, 0};
            sc[more] = pts[m.won[more]];
            assert_true(sc[more] > 0 && sc[1 - more] == 0);
            hands++;
            totals[0] += sc[0];
            totals[1] += sc[1];
            assert_int_equal(st.hands_done, hands);
            assert_int_equal(st.hand_scores[0], sc[0]);
            assert_int_equal(st.hand_scores[1], sc[1]);
            assert_int_equal(st.totals[0], totals[0]);
            assert_int_equal(st.totals[1], totals[1]);
            assert_int_equal(st.over, totals[0] >= target || totals[1] >= target);
        }
        check_views(&st, &m, dealt);
    }
    /* The match ended at the target: exactly one seat reached it, ranked first. */
    int w = totals[0] >= target ? 0 : 1;
    assert_true(totals[w] >= target);
    assert_true(totals[1 - w] < target);
    struct rules_result r;
    rules_result(&st, &r);
    assert_true(r.finished);
    assert_int_equal(r.resigned, -1);
    assert_int_equal(r.nplaces, 2);
    assert_int_equal(r.order[0], w);
    assert_int_equal(r.order[1], 1 - w);
    assert_int_equal(r.to_move, 0);
}

static void test_random_matches(void **state)
{
    (void)state;
    uint64_t rng = 0x5eed0001;
    for (int i = 0; i < 20000; i++)
        one_match(&rng, i < 300);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_options),
        cmocka_unit_test(test_deal_positions),
        cmocka_unit_test(test_legality_table),
        cmocka_unit_test(test_refusals_leak_nothing),
        cmocka_unit_test(test_trick_winner),
        cmocka_unit_test(test_hand_scores),
        cmocka_unit_test(test_match),
        cmocka_unit_test(test_target_exact),
        cmocka_unit_test(test_resign),
        cmocka_unit_test(test_view),
        cmocka_unit_test(test_view_tricks),
        cmocka_unit_test(test_random_matches),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
