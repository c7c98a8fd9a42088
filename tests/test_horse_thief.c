/* test_horse_thief.c - Horse Thief (rules.md §4) through the generic engine API: table-driven
 * legality rows on stacked decks (hostile rows included), the secret stay and discard phases
 * in every arrival order, the bowers, the dealer's turn-up draw, scoring and the end, the
 * view, and a seeded property test over random matches of 3 to 10 seats.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "rules.h"
#include "testlib.h"

/* ---- Stacked decks ------------------------------------------------------------------------ */

/* A deal described by what matters: each seat's five cards (NULL: whatever is left), the
 * turn-up, and the top of the stock; every other card fills up in deck order. */
struct setup {
    int n;
    int dealer;             /* first_dealer: the dealer of hand 1 */
    int64_t target;         /* 0: the default */
    const char *hands[10];  /* by seat */
    const char *turn_up;
    const char *stock;      /* top first, may be NULL */
};

/* Deck position of seat s's j-th card: round-robin from the dealer's left. */
static int position(int n, int dealer, int s, int j)
{
    return j * n + (s - dealer - 1 + n) % n;
}

static void stack(const struct setup *su, rules_card deck[RULES_NCARDS])
{
    int n = su->n;
    bool set[RULES_NCARDS] = {false};
    uint64_t used = 0;
    rules_card c[RULES_NCARDS];
    for (int s = 0; s < n; s++) {
        if (!su->hands[s])
            continue;
        assert_int_equal(tl_card_list(su->hands[s], c), 5);
        for (int j = 0; j < 5; j++) {
            deck[position(n, su->dealer, s, j)] = c[j];
            set[position(n, su->dealer, s, j)] = true;
            assert_false(used & RULES_BIT(c[j]));
            used |= RULES_BIT(c[j]);
        }
    }
    assert_int_equal(tl_card_list(su->turn_up, c), 1);
    deck[5 * n] = c[0];
    set[5 * n] = true;
    assert_false(used & RULES_BIT(c[0]));
    used |= RULES_BIT(c[0]);
    int k = tl_card_list(su->stock, c);
    for (int i = 0; i < k; i++) {
        deck[5 * n + 1 + i] = c[i];
        set[5 * n + 1 + i] = true;
        assert_false(used & RULES_BIT(c[i]));
        used |= RULES_BIT(c[i]);
    }
    int next = 0;
    for (int i = 0; i < RULES_NCARDS; i++) {
        if (set[i])
            continue;
        while (used & RULES_BIT(next))
            next++;
        deck[i] = (rules_card)next;
        used |= RULES_BIT(next);
    }
    assert_int_equal(used, RULES_ALL_CARDS);
}

static void start(struct rules_state *st, const struct setup *su)
{
    struct rules_options o;
    struct err e;
    enum rules_game_id g;
    assert_true(rules_game_lookup("horse-thief", &g));
    rules_options_default(g, &o);
    o.seats = su->n;
    o.first_dealer = su->dealer;
    if (su->target)
        o.target = su->target;
    assert_true(rules_init(st, g, &o, &e));
    rules_card deck[RULES_NCARDS];
    stack(su, deck);
    if (!rules_chance(st, RULES_DUE_DEAL, deck, RULES_NCARDS, &e))
        fail_msg("deal refused: %s", e.msg);
}

static const struct rules_horse_thief *ht(const struct rules_state *st)
{
    return &st->g.horse_thief;
}

static void assert_hand(const struct rules_state *st, int seat, const char *list)
{
    if (ht(st)->hands[seat] != tl_cards(list))
        fail_msg("seat %d's hand is not %s", seat, list);
}

/* ---- A view as text, to compare views and look for members ------------------------------ */

struct sbuf {
    char s[8192];
    size_t n;
};

static void put(struct sbuf *b, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void put(struct sbuf *b, const char *key, const char *fmt, ...)
{
    if (key)
        b->n += (size_t)snprintf(b->s + b->n, sizeof b->s - b->n, "\"%s\":", key);
    va_list ap;
    va_start(ap, fmt);
    b->n += (size_t)vsnprintf(b->s + b->n, sizeof b->s - b->n, fmt, ap);
    va_end(ap);
    assert_true(b->n < sizeof b->s);
}

static void s_obj(void *ctx, const char *key)
{
    put(ctx, key, "{");
}

static void s_arr(void *ctx, const char *key)
{
    put(ctx, key, "[");
}

static void s_obj_end(void *ctx)
{
    put(ctx, NULL, "},");
}

static void s_arr_end(void *ctx)
{
    put(ctx, NULL, "],");
}

static void s_int(void *ctx, const char *key, int64_t v)
{
    put(ctx, key, "%lld,", (long long)v);
}

static void s_bool(void *ctx, const char *key, bool v)
{
    put(ctx, key, "%s,", v ? "true" : "false");
}

static void s_str(void *ctx, const char *key, const char *v)
{
    put(ctx, key, "\"%s\",", v);
}

static void s_null(void *ctx, const char *key)
{
    put(ctx, key, "null,");
}

static void s_card(void *ctx, const char *key, rules_card c)
{
    char t[3];
    rules_card_format(c, t);
    put(ctx, key, "\"%s\",", t);
}

static const struct rules_emit text_emitter = {
    .object_begin = s_obj, .object_end = s_obj_end, .array_begin = s_arr,
    .array_end = s_arr_end, .integer = s_int,       .boolean = s_bool,
    .string = s_str,        .null = s_null,         .card = s_card,
};

static void view_text(const struct rules_state *st, int seat, struct sbuf *b)
{
    b->n = 0;
    b->s[0] = '\0';
    rules_view(st, seat, &text_emitter, b);
}

/* The text of seat `s`'s entry in the view's "seats" array. */
static void seat_entry(const struct sbuf *b, int s, char *out, size_t size)
{
    char key[32];
    snprintf(key, sizeof key, "{\"seat\":%d,", s);
    const char *p = strstr(b->s, key);
    assert_non_null(p);
    size_t len = strcspn(p, "}");
    snprintf(out, size, "%.*s", (int)len, p);
}

static bool seat_has(const struct rules_state *st, int viewer, int s, const char *member)
{
    struct sbuf b;
    char entry[512];
    view_text(st, viewer, &b);
    seat_entry(&b, s, entry, sizeof entry);
    return strstr(entry, member) != NULL;
}

/* ---- Legality rows ----------------------------------------------------------------------- */

/* n=3, dealer 0 (so seat 1 leads), trump hearts: JH right bower, JD left bower. */
static const struct setup d3 = {
    .n = 3,
    .dealer = 0,
    .hands = {"QD AC KC QC 6S", "AD JH 2C 3C 4C", "KD JD 9S 8S 7S"},
    .turn_up = "5H",
    .stock = "6H 7H 8H 9H TH QH",
};

/* Same, but seat 2's only "diamond" is the left bower, which is not a diamond. */
static const struct setup d3_lone_left = {
    .n = 3,
    .dealer = 0,
    .hands = {"QD AC KC QC 6S", "AD JH 2C 3C 4C", "JD 9S 8S 7S 6C"},
    .turn_up = "5H",
};

/* Trump spades: everyone plays; left bower JC. */
static const struct setup d3_spades = {
    .n = 3,
    .dealer = 0,
    .hands = {"QD AC KC QC 6H", "AD JS 2C 3C 4C", "KD JC 9S 8H 7H"},
    .turn_up = "5S",
};

/* Nine seats: the draw limit is 0. */
static const struct setup d9 = {.n = 9, .dealer = 4, .turn_up = "2D"};
static const struct setup d9_spades = {.n = 9, .dealer = 4, .turn_up = "2S"};
/* Seven seats: d = 2; eight: d = 1. */
static const struct setup d7 = {.n = 7, .dealer = 0, .hands = {"AC KC QC JC TC"}, .turn_up = "2D"};
static const struct setup d8 = {.n = 8, .dealer = 0, .hands = {"AC KC QC JC TC"}, .turn_up = "2D"};

#define ALL3_STAY "0 stay; 1 stay; 2 stay"
#define ALL3_KEEP ALL3_STAY "; 0 discard; 1 discard; 2 discard"
#define SEVEN_STAY "0 stay; 1 stay; 2 stay; 3 stay; 4 stay; 5 stay; 6 stay"
#define EIGHT_STAY SEVEN_STAY "; 7 stay"

struct row {
    const char *about;
    const struct setup *su;
    const char *before;
    int seat;
    const char *move;
    const char *tag; /* NULL: accepted */
};

static const struct row rows[] = {
    /* Staying in (§4.2): a secret move of every seat, once. */
    {"stay", &d3, "", 0, "stay", NULL},
    {"drop", &d3, "", 1, "drop", NULL},
    {"any seat in any order", &d3, "2 drop", 1, "stay", NULL},
    {"revise a stay", &d3, "0 stay", 0, "drop", "already_submitted"},
    {"stay twice", &d3, "0 stay", 0, "stay", "already_submitted"},
    {"revise a drop", &d3, "1 drop", 1, "stay", "already_submitted"},
    {"discard before staying", &d3, "", 0, "discard", "wrong_phase"},
    {"play before staying", &d3, "", 1, "play AD", "wrong_phase"},
    {"a hearts move", &d3, "", 0, "pass AC KC QC", "not_a_horse_thief_move"},
    {"a snag move", &d3, "", 0, "lead AC", "not_a_horse_thief_move"},
    {"a speed move", &d3, "", 0, "ready", "not_a_horse_thief_move"},
    {"a seat out of range", &d3, "", 3, "stay", "bad_seat"},
    {"resign in the stay phase", &d3, "0 stay", 1, "resign", NULL},
    /* Spades (§4.2): everyone plays; stay and drop are not moves. */
    {"stay when spades are trump", &d3_spades, "", 0, "stay", "spades_trump"},
    {"drop when spades are trump", &d3_spades, "", 2, "drop", "spades_trump"},
    {"spades: straight to the discard", &d3_spades, "", 2, "discard 9S", NULL},
    {"spades, nine seats: no discard", &d9_spades, "", 5, "discard", "wrong_phase"},
    {"spades, nine seats: the dealer's left leads", &d9_spades, "", 5, "play 2C", NULL},
    {"spades, nine seats: nobody else plays", &d9_spades, "", 6, "play 3C", "not_your_turn"},
    /* Drawing (§4.3). */
    {"keep all five", &d3, ALL3_STAY, 0, "discard", NULL},
    {"discard one", &d3, ALL3_STAY, 0, "discard 6S", NULL},
    {"discard three, any order, lower case", &d3, ALL3_STAY, 0, "discard qc 6s AC", NULL},
    {"discard four", &d3, ALL3_STAY, 0, "discard AC KC QC 6S", "too_many_cards"},
    {"discard five", &d3, ALL3_STAY, 0, "discard QD AC KC QC 6S", "too_many_cards"},
    {"discard a card not held", &d3, ALL3_STAY, 0, "discard 2S", "not_in_hand"},
    {"discard another seat's card", &d3, ALL3_STAY, 0, "discard AD", "not_in_hand"},
    {"discard the turn-up", &d3, ALL3_STAY, 0, "discard 5H", "not_in_hand"},
    {"discard a card twice", &d3, ALL3_STAY, 0, "discard AC AC", "duplicate_card"},
    {"discard twice", &d3, ALL3_STAY "; 0 discard 6S", 0, "discard", "already_submitted"},
    {"revise a discard", &d3, ALL3_STAY "; 1 discard", 1, "discard 2C", "already_submitted"},
    {"stay again in the discard phase", &d3, ALL3_STAY, 0, "stay", "wrong_phase"},
    {"play in the discard phase", &d3, ALL3_STAY, 1, "play AD", "wrong_phase"},
    {"a dropped seat discards", &d3, "0 stay; 1 stay; 2 drop", 2, "discard", "dropped"},
    {"a dropped seat discards cards", &d3, "0 stay; 1 stay; 2 drop", 2, "discard 9S", "dropped"},
    {"seven seats: two cards", &d7, SEVEN_STAY, 0, "discard AC KC", NULL},
    {"seven seats: not three", &d7, SEVEN_STAY, 0, "discard AC KC QC", "too_many_cards"},
    {"eight seats: one card", &d8, EIGHT_STAY, 0, "discard TC", NULL},
    {"eight seats: not two", &d8, EIGHT_STAY, 0, "discard AC KC", "too_many_cards"},
    {"nine seats: no discard phase", &d9,
     "0 stay; 1 stay; 2 drop; 3 drop; 4 drop; 5 drop; 6 drop; 7 drop; 8 drop", 0, "discard",
     "wrong_phase"},
    {"nine seats: the first stayer left of the dealer leads", &d9,
     "0 stay; 1 stay; 2 drop; 3 drop; 4 drop; 5 drop; 6 drop; 7 drop; 8 drop", 0, "play 6C",
     NULL},
    /* Play (§4.5). */
    {"the dealer's left leads", &d3, ALL3_KEEP, 1, "play 2C", NULL},
    {"out of turn", &d3, ALL3_KEEP, 0, "play AC", "not_your_turn"},
    {"a card not held", &d3, ALL3_KEEP, 1, "play 9S", "not_in_hand"},
    {"the turn-up is not held", &d3, ALL3_KEEP, 1, "play 5H", "not_in_hand"},
    {"stay in the play phase", &d3, ALL3_KEEP, 1, "stay", "wrong_phase"},
    {"discard in the play phase", &d3, ALL3_KEEP, 1, "discard", "wrong_phase"},
    {"follow the led suit", &d3, ALL3_KEEP "; 1 play 2C", 2, "play KD", NULL},
    {"a void seat plays anything", &d3, ALL3_KEEP "; 1 play 2C; 2 play 9S", 0, "play AC", NULL},
    {"must follow clubs", &d3, ALL3_KEEP "; 1 play 2C; 2 play 9S", 0, "play QD",
     "must_follow_suit"},
    {"a dropped seat plays", &d3, "0 drop; 1 stay; 2 stay; 1 discard; 2 discard", 0, "play AC",
     "dropped"},
    {"the first stayer left of the dealer leads", &d3,
     "0 stay; 1 drop; 2 stay; 0 discard; 2 discard", 2, "play 7S", NULL},
    {"a dropped leader does not lead", &d3, "0 stay; 1 drop; 2 stay; 0 discard; 2 discard", 0,
     "play AC", "not_your_turn"},
    {"after the dropped seat, the next stayer", &d3,
     "0 stay; 1 drop; 2 stay; 0 discard; 2 discard; 2 play 7S", 0, "play 6S", NULL},
    /* The left bower (§4.4): a trump for following suit, and not a diamond. */
    {"trump led: the left bower must follow", &d3, ALL3_KEEP "; 1 play JH", 2, "play JD", NULL},
    {"trump led: no diamond instead", &d3, ALL3_KEEP "; 1 play JH", 2, "play KD",
     "must_follow_suit"},
    {"diamond led: the left bower does not follow", &d3, ALL3_KEEP "; 1 play AD", 2,
     "play JD", "must_follow_suit"},
    {"diamond led: the diamond follows", &d3, ALL3_KEEP "; 1 play AD", 2, "play KD", NULL},
    {"diamond led, only the left bower: void", &d3_lone_left, ALL3_KEEP "; 1 play AD", 2,
     "play 9S", NULL},
    {"diamond led, only the left bower: may trump", &d3_lone_left, ALL3_KEEP "; 1 play AD", 2,
     "play JD", NULL},
    {"spades: left bower JC follows spades", &d3_spades,
     "0 discard; 1 discard; 2 discard; 1 play JS", 2, "play JC", NULL},
    {"spades: JC is not a club", &d3_spades, "0 discard; 1 discard; 2 discard; 1 play JS", 2,
     "play 8H", "must_follow_suit"},
    {"spades: club led, JC does not follow", &d3_spades,
     "0 discard; 1 discard; 2 discard; 1 play 2C", 2, "play 8H", NULL},
    {"moving after the match is over", &d3, "1 resign", 0, "stay", "match_over"},
};

static void test_rows(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const struct row *r = &rows[i];
        struct rules_state st;
        start(&st, r->su);
        tl_script(&st, r->before);
        struct rules_state before = st;
        struct err e;
        struct rules_move m = tl_move(r->move);
        bool ok = rules_apply(&st, r->seat, &m, &e);
        if (!r->tag) {
            if (!ok)
                fail_msg("row %zu (%s): refused: %s", i, r->about, e.msg);
            if (m.verb != RULES_RESIGN && !tl_listed(&before, r->seat, &m))
                fail_msg("row %zu (%s): accepted but not listed", i, r->about);
            continue;
        }
        if (ok)
            fail_msg("row %zu (%s): accepted", i, r->about);
        if (strcmp(e.tag, r->tag) != 0)
            fail_msg("row %zu (%s): tag %s, want %s (%s)", i, r->about, e.tag, r->tag, e.msg);
        assert_int_equal(e.code, ERR_ILLEGAL);
        assert_true(e.msg[0] != '\0');
        assert_memory_equal(&st, &before, sizeof st);
        assert_false(tl_listed(&before, r->seat, &m));
    }
}

/* ---- Deal and phases --------------------------------------------------------------------- */

static void test_deal_positions(void **state)
{
    (void)state;
    uint64_t rng = 7;
    for (int n = 3; n <= 10; n++) {
        for (int dealer = 0; dealer < n; dealer++) {
            struct rules_options o;
            struct err e;
            rules_options_default(RULES_GAME_HORSE_THIEF, &o);
            o.seats = n;
            o.first_dealer = dealer;
            struct rules_state st;
            assert_true(rules_init(&st, RULES_GAME_HORSE_THIEF, &o, &e));
            assert_int_equal(rules_due(&st), RULES_DUE_DEAL);
            rules_card deck[RULES_NCARDS];
            tl_random_deck(&rng, deck);
            assert_true(rules_chance(&st, RULES_DUE_DEAL, deck, RULES_NCARDS, &e));
            const struct rules_horse_thief *h = ht(&st);
            assert_int_equal(h->dealer, dealer);
            for (int i = 0; i < 5 * n; i++)
                assert_true(h->hands[(dealer + 1 + i) % n] & RULES_BIT(deck[i]));
            for (int s = 0; s < n; s++)
                assert_int_equal(rules_popcount(h->hands[s]), 5);
            assert_int_equal(h->turn_up, deck[5 * n]);
            assert_int_equal(h->trump, RULES_SUIT(deck[5 * n]));
            assert_int_equal(h->stock_len, 52 - 5 * n - 1);
            for (int i = 0; i < h->stock_len; i++)
                assert_int_equal(h->stock[i], deck[5 * n + 1 + i]);
        }
    }
}

static void test_draw_limit(void **state)
{
    (void)state;
    static const int want[11] = {0, 0, 0, 3, 3, 3, 3, 2, 1, 0, 0};
    for (int n = 3; n <= 10; n++) {
        struct setup su = {.n = n, .turn_up = "2D"};
        struct rules_state st;
        start(&st, &su);
        assert_int_equal(ht(&st)->draw_limit, want[n]);
        for (int s = 0; s < n; s++)
            assert_true(tl_apply(&st, s, "stay", NULL));
        /* With d = 0 the hand goes straight to play; else every seat discards. */
        assert_int_equal(ht(&st)->phase, want[n] ? RULES_HT_DISCARD : RULES_HT_PLAY);
        struct rules_move legal[64];
        int k = rules_legal(&st, 0, legal, 64);
        /* discard subsets of 5 cards with at most d: 1 + 5 + 10 + 10, 1 + 5 + 10, 1 + 5. */
        static const int subsets[4] = {1, 6, 16, 26};
        if (want[n])
            assert_int_equal(k, subsets[want[n]]);
        else
            assert_int_equal(rules_to_move(&st), 1u << 1);
    }
}

static void test_discard_listing(void **state)
{
    (void)state;
    struct rules_state st;
    start(&st, &d3);
    tl_script(&st, ALL3_STAY);
    struct rules_move legal[64];
    int k = rules_legal(&st, 1, legal, 64);
    assert_int_equal(k, 26);
    /* Hand of seat 1 in deck order: 2C 3C 4C AD JH. */
    static const char *const want[] = {
        "discard",          "discard 2C",       "discard 3C",       "discard 4C",
        "discard AD",       "discard JH",       "discard 2C 3C",    "discard 2C 4C",
        "discard 2C AD",    "discard 2C JH",    "discard 3C 4C",    "discard 3C AD",
        "discard 3C JH",    "discard 4C AD",    "discard 4C JH",    "discard AD JH",
        "discard 2C 3C 4C", "discard 2C 3C AD", "discard 2C 3C JH", "discard 2C 4C AD",
        "discard 2C 4C JH", "discard 2C AD JH", "discard 3C 4C AD", "discard 3C 4C JH",
        "discard 3C AD JH", "discard 4C AD JH",
    };
    for (int i = 0; i < k; i++) {
        char text[RULES_MOVE_TEXT_MAX];
        rules_move_format(&legal[i], text, sizeof text);
        assert_string_equal(text, want[i]);
    }
    /* The stay phase lists stay then drop; play lists the cards in deck order. */
    start(&st, &d3);
    k = rules_legal(&st, 2, legal, 64);
    assert_int_equal(k, 2);
    assert_int_equal(legal[0].verb, RULES_STAY);
    assert_int_equal(legal[1].verb, RULES_DROP);
    tl_script(&st, ALL3_KEEP "; 1 play JH");
    k = rules_legal(&st, 2, legal, 64);
    assert_int_equal(k, 1);
    assert_int_equal(legal[0].verb, RULES_PLAY);
    assert_int_equal(legal[0].card, RULES_CARD(9, RULES_DIAMONDS)); /* JD, the left bower */
}

static void test_spades_everyone_plays(void **state)
{
    (void)state;
    struct rules_state st;
    start(&st, &d3_spades);
    assert_int_equal(ht(&st)->phase, RULES_HT_DISCARD);
    assert_int_equal(rules_to_move(&st), 7u);
    assert_int_equal(ht(&st)->staying, 7);
    struct rules_move legal[64];
    int k = rules_legal(&st, 0, legal, 64);
    for (int i = 0; i < k; i++)
        assert_int_equal(legal[i].verb, RULES_DISCARD);
    /* The view knows who is in from the start. */
    assert_true(seat_has(&st, -1, 2, "\"staying\":true"));

    start(&st, &d9_spades);
    assert_int_equal(ht(&st)->phase, RULES_HT_PLAY);
    assert_int_equal(rules_to_move(&st), 1u << 5);
    assert_int_equal(rules_popcount(ht(&st)->staying), 9);
}

static void test_lone_stayer(void **state)
{
    (void)state;
    struct rules_state st;
    start(&st, &d3);
    tl_script(&st, "1 drop; 2 stay");
    assert_int_equal(st.hands_done, 0);
    tl_script(&st, "0 drop");
    assert_int_equal(st.hands_done, 1);
    assert_int_equal(st.hand_scores[0], 0);
    assert_int_equal(st.hand_scores[1], 0);
    assert_int_equal(st.hand_scores[2], 5);
    assert_int_equal(st.totals[2], 5);
    assert_int_equal(rules_due(&st), RULES_DUE_DEAL);
    assert_int_equal(rules_to_move(&st), 0);
    assert_int_equal(ht(&st)->dealer, 1); /* the deal passes left */
    struct err e;
    assert_false(tl_apply(&st, 2, "discard", &e));
    assert_string_equal(e.tag, "chance_due");
}

static void test_nobody_stays(void **state)
{
    (void)state;
    struct rules_state st;
    start(&st, &d3);
    tl_script(&st, "0 drop; 1 drop; 2 drop");
    assert_int_equal(st.hands_done, 1);
    for (int s = 0; s < 3; s++) {
        assert_int_equal(st.hand_scores[s], 0);
        assert_int_equal(st.totals[s], 0);
    }
    assert_int_equal(rules_due(&st), RULES_DUE_DEAL);
    assert_false(st.over);
}

/* Every arrival order of a stay phase: nothing resolves before the last move, and until
 * then no seat sees another's choice. */
static void test_stay_every_order(void **state)
{
    (void)state;
    static const struct setup su = {.n = 4, .dealer = 3, .turn_up = "4C"};
    static const bool choice[4] = {true, false, true, true};
    int perm[4] = {0, 1, 2, 3};
    int orders = 0;
    /* Heap's algorithm, iteratively. */
    int c[4] = {0};
    int i = 0;
    for (;;) {
        struct rules_state st;
        start(&st, &su);
        for (int k = 0; k < 4; k++) {
            int seat = perm[k];
            assert_true(rules_to_move(&st) & (1u << seat));
            assert_true(tl_apply(&st, seat, choice[seat] ? "stay" : "drop", NULL));
            if (k < 3) {
                assert_int_equal(ht(&st)->phase, RULES_HT_STAY);
                assert_int_equal(rules_popcount(rules_to_move(&st)), 3 - k);
                assert_false(rules_to_move(&st) & (1u << seat));
                /* The variant where the mover chose the other way. */
                struct rules_state other;
                start(&other, &su);
                for (int j = 0; j <= k; j++) {
                    int s = perm[j];
                    bool stay = s == seat ? !choice[s] : choice[s];
                    assert_true(tl_apply(&other, s, stay ? "stay" : "drop", NULL));
                }
                for (int v = -1; v < 4; v++) {
                    struct sbuf a, b;
                    view_text(&st, v, &a);
                    view_text(&other, v, &b);
                    if (v == seat)
                        assert_string_not_equal(a.s, b.s); /* its own choice shows */
                    else
                        assert_string_equal(a.s, b.s);
                }
                assert_true(seat_has(&st, (seat + 1) % 4, seat, "\"submitted\":true"));
                assert_true(seat_has(&st, (seat + 1) % 4, seat, "\"staying\":null"));
                assert_false(seat_has(&st, (seat + 1) % 4, seat, "choice"));
                assert_true(seat_has(&st, seat, seat, choice[seat] ? "\"choice\":\"stay\""
                                                                   : "\"choice\":\"drop\""));
            }
        }
        assert_int_equal(ht(&st)->phase, RULES_HT_DISCARD);
        assert_int_equal(ht(&st)->staying, 1u | 4u | 8u);
        assert_int_equal(rules_to_move(&st), 1u | 4u | 8u);
        assert_true(seat_has(&st, 0, 1, "\"staying\":false"));
        assert_true(seat_has(&st, 0, 2, "\"staying\":true"));
        assert_false(seat_has(&st, 0, 2, "choice"));
        orders++;
        while (i < 4 && c[i] >= i) {
            c[i] = 0;
            i++;
        }
        if (i == 4)
            break;
        int j = (i % 2 == 0) ? 0 : c[i];
        int t = perm[j];
        perm[j] = perm[i];
        perm[i] = t;
        c[i]++;
        i = 0;
    }
    assert_int_equal(orders, 24);
}

/* Every arrival order of a discard phase gives the same draw: replacements in seat order
 * from the dealer's left, the dealer taking the turn-up first. Until the last discard
 * nobody's hand changes and nobody sees another's discard, not even its size. */
static void test_discard_every_order(void **state)
{
    (void)state;
    static const struct setup su = {
        .n = 4,
        .dealer = 1,
        .hands = {"2C 3C 4C 5C 6C", "2D 3D 4D 5D 6D", "2S 3S 4S 5S 6S", "7C 8C 9C TC JC"},
        .turn_up = "AH",
        .stock = "KH QH JH TH 9H 8H 7H",
    };
    static const char *const discard[4] = {"discard 2C", "discard 2D 3D", "discard",
                                           "discard 7C 8C 9C"};
    static const char *const other[4] = {"discard", "discard 4D", "discard 6S", "discard"};
    int perm[4] = {0, 1, 2, 3};
    int c[4] = {0};
    int i = 0;
    int orders = 0;
    for (;;) {
        struct rules_state st;
        start(&st, &su);
        tl_script(&st, "0 stay; 1 stay; 2 stay; 3 stay");
        struct rules_state dealt = st;
        for (int k = 0; k < 4; k++) {
            int seat = perm[k];
            assert_true(tl_apply(&st, seat, discard[seat], NULL));
            if (k == 3)
                break;
            assert_int_equal(ht(&st)->phase, RULES_HT_DISCARD);
            assert_memory_equal(ht(&st)->hands, ht(&dealt)->hands, sizeof ht(&st)->hands);
            struct rules_state alt = dealt;
            for (int j = 0; j <= k; j++)
                assert_true(tl_apply(&alt, perm[j], perm[j] == seat ? other[seat]
                                                                    : discard[perm[j]], NULL));
            for (int v = -1; v < 4; v++) {
                struct sbuf a, b;
                view_text(&st, v, &a);
                view_text(&alt, v, &b);
                if (v == seat)
                    assert_string_not_equal(a.s, b.s);
                else
                    assert_string_equal(a.s, b.s);
            }
            assert_true(seat_has(&st, (seat + 1) % 4, seat, "\"discarded\":null"));
            assert_true(seat_has(&st, (seat + 1) % 4, seat, "\"count\":5"));
        }
        /* Seat order from the dealer's left: 2 (nothing), 3 (KH QH JH), 0 (TH),
         * 1 the dealer (the turn-up AH, then 9H). */
        assert_int_equal(ht(&st)->phase, RULES_HT_PLAY);
        assert_hand(&st, 0, "3C 4C 5C 6C TH");
        assert_hand(&st, 1, "4D 5D 6D AH 9H");
        assert_hand(&st, 2, "2S 3S 4S 5S 6S");
        assert_hand(&st, 3, "TC JC KH QH JH");
        assert_true(ht(&st)->turn_up_taken);
        /* 31 in the stock, 5 drawn from it: 3 + 1 + the dealer's 1 after the turn-up. */
        assert_int_equal(ht(&st)->stock_len - ht(&st)->stock_next, 26);
        /* Now the sizes are public, the cards only to their owner. */
        assert_true(seat_has(&st, 0, 3, "\"discarded\":3"));
        assert_true(seat_has(&st, 0, 2, "\"discarded\":0"));
        assert_false(seat_has(&st, 0, 3, "\"discard\":["));
        assert_true(seat_has(&st, 3, 3, "\"discard\":[\"7C\",\"8C\",\"9C\",]"));
        orders++;
        while (i < 4 && c[i] >= i) {
            c[i] = 0;
            i++;
        }
        if (i == 4)
            break;
        int j = (i % 2 == 0) ? 0 : c[i];
        int t = perm[j];
        perm[j] = perm[i];
        perm[i] = t;
        c[i]++;
        i = 0;
    }
    assert_int_equal(orders, 24);
}

static void test_dealer_turn_up(void **state)
{
    (void)state;
    /* The dealer keeps all: the turn-up stays on the table, the others draw from the top. */
    struct rules_state st;
    start(&st, &d3);
    tl_script(&st, ALL3_STAY "; 0 discard; 1 discard 2C 3C; 2 discard 9S");
    assert_hand(&st, 0, "QD AC KC QC 6S");
    assert_hand(&st, 1, "AD JH 4C 6H 7H");
    assert_hand(&st, 2, "KD JD 8S 7S 8H");
    assert_false(ht(&st)->turn_up_taken);
    /* The dealer discards one: exactly the turn-up, no stock card. */
    start(&st, &d3);
    tl_script(&st, ALL3_STAY "; 0 discard 6S; 1 discard 2C; 2 discard");
    assert_hand(&st, 0, "QD AC KC QC 5H");
    assert_hand(&st, 1, "AD JH 3C 4C 6H");
    assert_true(ht(&st)->turn_up_taken);
    assert_int_equal(ht(&st)->stock_next, 1);
    /* The dealer discards three, first to arrive: the turn-up and the stock after the others'. */
    start(&st, &d3);
    tl_script(&st, ALL3_STAY "; 0 discard 6S QC KC; 1 discard 2C; 2 discard 9S 8S");
    assert_hand(&st, 1, "AD JH 3C 4C 6H");
    assert_hand(&st, 2, "KD JD 7S 7H 8H");
    assert_hand(&st, 0, "QD AC 5H 9H TH");
    /* The dealer dropped: nobody takes the turn-up. */
    start(&st, &d3);
    tl_script(&st, "0 drop; 1 stay; 2 stay; 1 discard 2C 3C 4C; 2 discard 9S 8S 7S");
    assert_hand(&st, 1, "AD JH 6H 7H 8H");
    assert_hand(&st, 2, "KD JD 9H TH QH");
    assert_hand(&st, 0, "QD AC KC QC 6S");
    assert_false(ht(&st)->turn_up_taken);
    /* Every view shows the turn-up and whether it was taken. */
    struct sbuf b;
    view_text(&st, -1, &b);
    assert_non_null(strstr(b.s, "\"turn_up\":\"5H\",\"trump\":\"H\",\"turn_up_taken\":false"));
}

/* The bowers (§4.4) decide tricks: right over left over the ace of trump; a trump over
 * the led suit; otherwise the highest of the led suit. A whole hand, scored (§4.6). */
static void test_tricks_and_scores(void **state)
{
    (void)state;
    static const struct setup su = {
        .n = 4,
        .dealer = 0,
        .hands = {"KH AS 2D 3D 4D", "2C 3C 4C 5C 6C", "JD 2S 3S 4S 5S", "JH 6S 7S 8S 9S"},
        .turn_up = "2H",
    };
    struct rules_state st;
    start(&st, &su);
    tl_script(&st, "0 stay; 1 stay; 2 stay; 3 stay; 0 discard; 1 discard; 2 discard; 3 discard");
    /* Clubs led; 2 trumps with the left bower, 3 with the right: the right wins. */
    tl_script(&st, "1 play 2C; 2 play JD; 3 play JH; 0 play KH");
    assert_int_equal(ht(&st)->tricks[3], 1);
    assert_int_equal(rules_to_move(&st), 1u << 3);
    /* Spades led: the ace of spades wins over lower spades and an off-suit card. */
    tl_script(&st, "3 play 6S; 0 play AS; 1 play 3C; 2 play 2S");
    assert_int_equal(ht(&st)->tricks[0], 1);
    assert_int_equal(rules_to_move(&st), 1u << 0);
    /* Diamonds led: only seat 0 holds diamonds. */
    tl_script(&st, "0 play 2D; 1 play 4C; 2 play 3S; 3 play 7S");
    tl_script(&st, "0 play 3D; 1 play 5C; 2 play 4S; 3 play 8S");
    assert_int_equal(st.hands_done, 0);
    tl_script(&st, "0 play 4D; 1 play 6C; 2 play 5S; 3 play 9S");
    /* 0 took four, 3 one; 1 and 2 none: -3 each. */
    assert_int_equal(st.hands_done, 1);
    static const int32_t want[4] = {4, -3, -3, 1};
    assert_memory_equal(st.hand_scores, want, sizeof want);
    assert_memory_equal(st.totals, want, sizeof want);
    assert_int_equal(rules_due(&st), RULES_DUE_DEAL);
    assert_int_equal(ht(&st)->dealer, 1);

    /* The left bower beats the ace of trump. */
    static const struct setup su2 = {
        .n = 4,
        .dealer = 0,
        .hands = {"2D 5D 3H 3D 4D", "2C 3C 4C 5C 6C", "JD 2S 3S 4S 5S", "AH AS 7S 8S 9S"},
        .turn_up = "2H",
    };
    start(&st, &su2);
    tl_script(&st, "0 stay; 1 stay; 2 stay; 3 stay; 0 discard; 1 discard; 2 discard; 3 discard");
    tl_script(&st, "1 play 2C; 2 play JD; 3 play AH; 0 play 2D");
    assert_int_equal(ht(&st)->tricks[2], 1);
    assert_int_equal(rules_to_move(&st), 1u << 2);
    /* A low trump beats the ace of the led suit. */
    tl_script(&st, "2 play 2S; 3 play AS; 0 play 3H; 1 play 3C");
    assert_int_equal(ht(&st)->tricks[0], 1);
}

/* §4.7: the end after a hand at the target, the highest total first, ties sharing. */
static void test_end_tie_for_first(void **state)
{
    (void)state;
    static const struct setup su = {
        .n = 3,
        .dealer = 0,
        .target = 2,
        .hands = {"7S 8S 9S TS 2C", "AC KC 2D 3D 4D", "AD KD QD 5S 6S"},
        .turn_up = "2H",
    };
    struct rules_state st;
    start(&st, &su);
    tl_script(&st, ALL3_KEEP);
    tl_script(&st, "1 play AC; 2 play 6S; 0 play 2C");
    tl_script(&st, "1 play KC; 2 play QD; 0 play 7S");
    tl_script(&st, "1 play 2D; 2 play AD; 0 play 8S");
    tl_script(&st, "2 play KD; 0 play 9S; 1 play 3D");
    assert_false(st.over);
    tl_script(&st, "2 play 5S; 0 play TS; 1 play 4D");
    assert_true(st.over);
    static const int32_t want[3] = {1, 2, 2};
    assert_memory_equal(st.totals, want, sizeof want);
    struct rules_result r;
    rules_result(&st, &r);
    assert_true(r.finished);
    assert_int_equal(r.nplaces, 2);
    assert_int_equal(r.place_size[0], 2);
    assert_int_equal(r.order[0], 1);
    assert_int_equal(r.order[1], 2);
    assert_int_equal(r.order[2], 0);
    assert_int_equal(r.to_move, 0);
    /* Over: every card is public, in every view. */
    for (int v = -1; v < 3; v++)
        assert_int_equal(tl_view_cards(&st, v, NULL), RULES_ALL_CARDS);
    struct err e;
    assert_false(tl_apply(&st, 0, "resign", &e));
    assert_string_equal(e.tag, "match_over");
}

/* Below the target the match goes on; a resignation ranks the resigner last. */
static void test_target_and_resign(void **state)
{
    (void)state;
    struct setup su = d3;
    su.target = 6;
    struct rules_state st;
    start(&st, &su);
    tl_script(&st, "0 drop; 1 drop; 2 stay"); /* 2 scores 5 < 6 */
    assert_false(st.over);
    assert_int_equal(rules_due(&st), RULES_DUE_DEAL);
    su.dealer = 1; /* hand 2 is dealt by seat 1 */
    rules_card deck[RULES_NCARDS];
    stack(&su, deck);
    struct err e;
    assert_true(rules_chance(&st, RULES_DUE_DEAL, deck, RULES_NCARDS, &e));
    assert_int_equal(ht(&st)->dealer, 1);
    tl_script(&st, "0 stay; 1 drop; 2 drop"); /* 0 scores 5 */
    assert_false(st.over);
    stack(&(struct setup){.n = 3, .dealer = 2, .turn_up = "3C"}, deck);
    assert_true(rules_chance(&st, RULES_DUE_DEAL, deck, RULES_NCARDS, &e));
    assert_int_equal(ht(&st)->dealer, 2);
    tl_script(&st, "2 stay; 0 resign");
    assert_true(st.over);
    struct rules_result r;
    rules_result(&st, &r);
    /* 2 and 0 both have 5, but 0 resigned: 2 first, then 1 (0 points), then 0 last. */
    assert_int_equal(r.nplaces, 3);
    assert_int_equal(r.order[0], 2);
    assert_int_equal(r.order[1], 1);
    assert_int_equal(r.order[2], 0);
    /* The view of an over match shows the pending choice too. */
    assert_true(seat_has(&st, 1, 2, "\"choice\":\"stay\""));
}

/* ---- Property: random matches -------------------------------------------------------------- */

/* What the test knows of a match, computed from the deals and the moves alone, with its own
 * reading of §4 (not the engine's code): hands, secret submissions, tricks, scores. */
enum { M_DEAL, M_STAY, M_DISCARD, M_PLAY };

struct model {
    int n, first_dealer, d, dealer, trump;
    int64_t target;
    rules_card turn_up;
    bool dealt;
    rules_card stock[RULES_NCARDS];
    int stock_len, stock_next;
    uint64_t hands[10], discards[10], played;
    uint32_t submitted, stays, staying;
    int phase, leader, nplayed, trick_no;
    int trick_seat[10];
    rules_card trick[10];
    int tricks[10];
    int32_t totals[10];
    uint32_t hands_done;
    /* The current secret phase: the state it started from and what arrived since. */
    struct rules_state phase_start;
    int nsubs;
    int sub_seat[10];
    struct rules_move sub[10];
};

struct stats {
    long steps, checks, hands, lone, nobody, spades, minus3, resigned, ties;
};

static int lowest(uint64_t mask)
{
    return __builtin_ctzll(mask);
}

static const int same_colour[4] = {RULES_SPADES, RULES_HEARTS_SUIT, RULES_DIAMONDS, RULES_CLUBS};

static bool is_left(const struct model *m, rules_card c)
{
    return RULES_RANK(c) == 9 && RULES_SUIT(c) == same_colour[m->trump];
}

static int eff_suit(const struct model *m, rules_card c)
{
    return is_left(m, c) ? m->trump : RULES_SUIT(c);
}

static int strength(const struct model *m, rules_card c, int led)
{
    if (eff_suit(m, c) == m->trump) {
        if (RULES_RANK(c) == 9)
            return RULES_SUIT(c) == m->trump ? 40 : 39;
        return 20 + RULES_RANK(c);
    }
    return RULES_SUIT(c) == led ? RULES_RANK(c) : -1;
}

static uint64_t model_playable(const struct model *m, int seat)
{
    uint64_t hand = m->hands[seat], follow = 0;
    if (m->nplayed == 0)
        return hand;
    int led = eff_suit(m, m->trick[0]);
    for (int c = 0; c < RULES_NCARDS; c++)
        if ((hand & RULES_BIT(c)) && eff_suit(m, (rules_card)c) == led)
            follow |= RULES_BIT(c);
    return follow ? follow : hand;
}

static uint32_t model_to_move(const struct model *m)
{
    uint32_t all = (1u << m->n) - 1;
    switch (m->phase) {
    case M_STAY: return all & ~m->submitted;
    case M_DISCARD: return m->staying & ~m->submitted;
    case M_PLAY: {
        int s = m->leader;
        for (int i = 0; i < m->nplayed; i++)
            do
                s = (s + 1) % m->n;
            while (!(m->staying & (1u << s)));
        return 1u << s;
    }
    default: return 0;
    }
}

static void model_start_play(struct model *m)
{
    m->phase = M_PLAY;
    m->leader = (m->dealer + 1) % m->n;
    while (!(m->staying & (1u << m->leader)))
        m->leader = (m->leader + 1) % m->n;
    m->nplayed = 0;
    m->trick_no = 0;
}

static void model_secret_phase(struct model *m, const struct rules_state *st, int phase)
{
    m->phase = phase;
    m->submitted = 0;
    m->nsubs = 0;
    m->phase_start = *st;
}

static void model_deal(struct model *m, const rules_card *deck, const struct rules_state *st)
{
    int n = m->n;
    m->dealer = (m->first_dealer + (int)m->hands_done) % n;
    memset(m->hands, 0, sizeof m->hands);
    memset(m->discards, 0, sizeof m->discards);
    memset(m->tricks, 0, sizeof m->tricks);
    m->played = 0;
    m->stays = m->staying = 0;
    m->dealt = true;
    for (int j = 0; j < 5; j++)
        for (int k = 0; k < n; k++)
            m->hands[(m->dealer + 1 + k) % n] |= RULES_BIT(deck[j * n + k]);
    m->turn_up = deck[5 * n];
    m->trump = RULES_SUIT(m->turn_up);
    m->stock_len = 0;
    m->stock_next = 0;
    for (int i = 5 * n + 1; i < RULES_NCARDS; i++)
        m->stock[m->stock_len++] = deck[i];
    if (m->trump == RULES_SPADES) {
        m->staying = (1u << n) - 1;
        if (m->d > 0)
            model_secret_phase(m, st, M_DISCARD);
        else
            model_start_play(m);
    } else {
        model_secret_phase(m, st, M_STAY);
    }
}

/* A hand ended with `scores`: the engine must agree, and the match go on or end. */
static void model_hand_end(struct model *m, const struct rules_state *st, const int32_t *scores,
                           struct stats *stats)
{
    m->hands_done++;
    stats->hands++;
    for (int s = 0; s < m->n; s++) {
        m->totals[s] += scores[s];
        if (st->hand_scores[s] != scores[s])
            fail_msg("hand %u seat %d scored %d, want %d", m->hands_done, s, st->hand_scores[s],
                     scores[s]);
    }
    assert_int_equal(st->hands_done, m->hands_done);
    assert_memory_equal(st->totals, m->totals, sizeof(int32_t) * (size_t)m->n);
    bool reached = false;
    for (int s = 0; s < m->n; s++)
        reached |= m->totals[s] >= m->target;
    assert_int_equal(st->over, reached);
    if (!reached)
        assert_int_equal(rules_due(st), RULES_DUE_DEAL);
    m->phase = M_DEAL;
}

static void model_apply(struct model *m, const struct rules_state *st, int seat,
                        const struct rules_move *mv, struct stats *stats)
{
    int n = m->n;
    int32_t scores[10] = {0};
    switch (mv->verb) {
    case RULES_STAY:
    case RULES_DROP:
        m->submitted |= 1u << seat;
        if (mv->verb == RULES_STAY)
            m->stays |= 1u << seat;
        m->sub_seat[m->nsubs] = seat;
        m->sub[m->nsubs++] = *mv;
        if (m->submitted != (1u << n) - 1)
            return;
        m->staying = m->stays;
        if (rules_popcount(m->staying) == 1) {
            scores[lowest(m->staying)] = 5;
            stats->lone++;
        }
        if (rules_popcount(m->staying) < 2) {
            stats->nobody += m->staying == 0;
            model_hand_end(m, st, scores, stats);
        } else if (m->d > 0) {
            model_secret_phase(m, st, M_DISCARD);
        } else {
            model_start_play(m);
        }
        return;
    case RULES_DISCARD:
        m->submitted |= 1u << seat;
        m->discards[seat] = mv->cards;
        m->sub_seat[m->nsubs] = seat;
        m->sub[m->nsubs++] = *mv;
        if (m->submitted != m->staying)
            return;
        for (int i = 1; i <= n; i++) {
            int s = (m->dealer + i) % n;
            if (!(m->staying & (1u << s)))
                continue;
            int k = rules_popcount(m->discards[s]);
            m->hands[s] &= ~m->discards[s];
            for (int j = 0; j < k; j++) {
                if (s == m->dealer && j == 0)
                    m->hands[s] |= RULES_BIT(m->turn_up);
                else
                    m->hands[s] |= RULES_BIT(m->stock[m->stock_next++]);
            }
        }
        model_start_play(m);
        return;
    case RULES_PLAY: {
        m->hands[seat] &= ~RULES_BIT(mv->card);
        m->played |= RULES_BIT(mv->card);
        m->trick_seat[m->nplayed] = seat;
        m->trick[m->nplayed++] = mv->card;
        if (m->nplayed < rules_popcount(m->staying))
            return;
        int led = eff_suit(m, m->trick[0]), best = 0;
        for (int i = 1; i < m->nplayed; i++)
            if (strength(m, m->trick[i], led) > strength(m, m->trick[best], led))
                best = i;
        m->tricks[m->trick_seat[best]]++;
        m->leader = m->trick_seat[best];
        m->nplayed = 0;
        if (++m->trick_no < 5)
            return;
        int sum = 0;
        for (int s = 0; s < n; s++) {
            if (!(m->staying & (1u << s)))
                continue;
            sum += m->tricks[s];
            scores[s] = m->tricks[s] ? m->tricks[s] : -3;
            stats->minus3 += m->tricks[s] == 0;
        }
        assert_int_equal(sum, 5);
        stats->spades += m->trump == RULES_SPADES;
        model_hand_end(m, st, scores, stats);
        return;
    }
    default:
        fail_msg("unexpected verb %d", mv->verb);
    }
}

static int engine_phase(const struct rules_state *st)
{
    switch (ht(st)->phase) {
    case RULES_HT_STAY: return M_STAY;
    case RULES_HT_DISCARD: return M_DISCARD;
    case RULES_HT_PLAY: return M_PLAY;
    default: return M_DEAL;
    }
}

/* No view shows what its seat may not see; every secret submission of another seat leaves
 * the view exactly as it would be had that seat submitted something else. */
static void check_views(const struct model *m, const struct rules_state *st)
{
    for (int v = -1; v < m->n; v++) {
        bool wf;
        uint64_t cards = tl_view_cards(st, v, &wf);
        assert_true(wf);
        uint64_t allowed = (m->dealt ? RULES_BIT(m->turn_up) : 0) | m->played;
        if (v >= 0) {
            allowed |= m->hands[v] | m->discards[v];
            if ((cards & m->hands[v]) != m->hands[v])
                fail_msg("seat %d does not see its own hand", v);
        }
        if (cards & ~allowed)
            fail_msg("the view of seat %d shows a card it may not see", v);
    }
    if ((m->phase != M_STAY && m->phase != M_DISCARD) || m->nsubs == 0)
        return;
    for (int v = -1; v < m->n; v++) {
        struct rules_state alt = m->phase_start;
        for (int i = 0; i < m->nsubs; i++) {
            int s = m->sub_seat[i];
            struct rules_move mv = m->sub[i];
            if (s != v) {
                if (mv.verb == RULES_STAY || mv.verb == RULES_DROP)
                    mv.verb = mv.verb == RULES_STAY ? RULES_DROP : RULES_STAY;
                else if (mv.cards)
                    mv.cards = 0, mv.ncards = 0;
                else
                    mv.cards = RULES_BIT(lowest(m->hands[s])), mv.ncards = 1;
            }
            struct err e;
            if (!rules_apply(&alt, s, &mv, &e))
                fail_msg("variant refused: %s", e.msg);
        }
        struct sbuf a, b;
        view_text(st, v, &a);
        view_text(&alt, v, &b);
        if (strcmp(a.s, b.s) != 0)
            fail_msg("seat %d's view shows another seat's secret move:\n%s\n%s", v, a.s, b.s);
    }
}

static void check_ranking(const struct model *m, const struct rules_state *st)
{
    struct rules_result r;
    rules_result(st, &r);
    int k = 0;
    for (int p = 0, i = 0; p < r.nplaces; p++) {
        for (int j = 0; j < r.place_size[p]; j++, i++) {
            int s = r.order[i];
            if (s == st->resigned) {
                assert_int_equal(p, r.nplaces - 1);
                assert_int_equal(r.place_size[p], 1);
                continue;
            }
            /* Seats above: strictly more; seats in the same place: equal; ascending. */
            for (int t = 0; t < m->n; t++) {
                if (t == s || t == st->resigned)
                    continue;
                int tp = -1;
                for (int q = 0, x = 0; q < r.nplaces; q++)
                    for (int y = 0; y < r.place_size[q]; y++, x++)
                        if (r.order[x] == t)
                            tp = q;
                if (m->totals[t] > m->totals[s])
                    assert_true(tp < p);
                else if (m->totals[t] == m->totals[s])
                    assert_int_equal(tp, p);
                else
                    assert_true(tp > p);
            }
            if (j > 0)
                assert_true(r.order[i - 1] < s);
            k++;
        }
    }
    assert_int_equal(k + (st->resigned >= 0), m->n);
}

static void play_match(uint64_t *rng, int n, int64_t target, int check_every,
                       struct stats *stats)
{
    struct model *m = &(struct model){0};
    static const int drawn[11] = {0, 0, 0, 3, 3, 3, 3, 2, 1, 0, 0};
    m->n = n;
    m->first_dealer = (int)tl_below(rng, (uint32_t)n);
    m->d = drawn[n];
    m->target = target;
    m->phase = M_DEAL;
    static const uint32_t stay_odds[] = {15, 40, 70, 95};
    uint32_t p_stay = stay_odds[tl_below(rng, 4)];
    long resign_at = tl_below(rng, 8) == 0 ? (long)tl_below(rng, 300) : -1;

    struct rules_options o;
    struct err e;
    rules_options_default(RULES_GAME_HORSE_THIEF, &o);
    o.seats = n;
    o.target = target;
    o.first_dealer = m->first_dealer;
    struct rules_state st;
    assert_true(rules_init(&st, RULES_GAME_HORSE_THIEF, &o, &e));
    static struct rules_move legal[RULES_MAX_LEGAL];
    for (long step = 0; !st.over; step++) {
        stats->steps++;
        bool check = step % check_every == 0;
        /* Totals can drift down for ever when most seats stay: a long match resigns. */
        if (step == resign_at || (m->hands_done >= 25 && rules_due(&st) == RULES_DUE_DEAL)) {
            int seat = (int)tl_below(rng, (uint32_t)n);
            assert_true(tl_apply(&st, seat, "resign", &e));
            stats->resigned++;
            break;
        }
        if (rules_due(&st) == RULES_DUE_DEAL) {
            assert_int_equal(m->phase, M_DEAL);
            assert_int_equal(rules_to_move(&st), 0);
            rules_card deck[RULES_NCARDS];
            tl_random_deck(rng, deck);
            assert_true(rules_chance(&st, RULES_DUE_DEAL, deck, RULES_NCARDS, &e));
            model_deal(m, deck, &st);
        } else {
            uint32_t to_move = rules_to_move(&st);
            assert_int_equal(to_move, model_to_move(m));
            assert_true(to_move != 0);
            if (check) {
                const char *why = tl_check_legality(&st, rng);
                if (why)
                    fail_msg("n=%d step %ld: %s", n, step, why);
                check_views(m, &st);
                stats->checks++;
            }
            int pick = (int)tl_below(rng, (uint32_t)rules_popcount(to_move));
            uint32_t bits = to_move;
            while (pick--)
                bits &= bits - 1;
            int seat = lowest(bits);
            int k = rules_legal(&st, seat, legal, RULES_MAX_LEGAL);
            struct rules_move mv;
            if (m->phase == M_PLAY) {
                uint64_t want = model_playable(m, seat), got = 0;
                for (int i = 0; i < k; i++)
                    got |= RULES_BIT(legal[i].card);
                assert_int_equal(got, want);
                assert_int_equal(k, rules_popcount(want));
                mv = legal[tl_below(rng, (uint32_t)k)];
            } else if (m->phase == M_STAY) {
                assert_int_equal(k, 2);
                assert_int_equal(legal[0].verb, RULES_STAY);
                assert_int_equal(legal[1].verb, RULES_DROP);
                mv = legal[tl_below(rng, 100) < p_stay ? 0 : 1];
            } else {
                static const int subsets[4] = {1, 6, 16, 26};
                assert_int_equal(k, subsets[m->d]);
                mv = legal[tl_below(rng, (uint32_t)k)];
            }
            if (!rules_apply(&st, seat, &mv, &e))
                fail_msg("listed move refused: %s", e.msg);
            model_apply(m, &st, seat, &mv, stats);
        }
        if (!st.over) {
            assert_int_equal(engine_phase(&st), m->phase);
            assert_memory_equal(ht(&st)->hands, m->hands, sizeof(uint64_t) * (size_t)n);
            if (m->phase == M_PLAY || m->phase == M_DISCARD)
                assert_int_equal(ht(&st)->staying, m->staying);
        }
    }
    check_ranking(m, &st);
    if (st.resigned < 0) {
        struct rules_result r;
        rules_result(&st, &r);
        stats->ties += r.place_size[0] > 1;
    }
    /* Over: the views show everything (once anything was dealt). */
    if (m->dealt)
        for (int v = -1; v < n; v++)
            assert_int_equal(tl_view_cards(&st, v, NULL), RULES_ALL_CARDS);
}

#ifndef CHECK_EVERY
#define CHECK_EVERY 61
#endif
#ifndef MATCHES
#define MATCHES 2000
#endif

static void test_random_matches(void **state)
{
    (void)state;
    uint64_t rng = UINT64_C(0x4854686965660002); /* fixed: the same matches every run */
    for (int n = 3; n <= 10; n++) {
        struct stats stats = {0};
        for (int i = 0; i < MATCHES; i++) {
            int64_t target = 1 + (int64_t)tl_below(&rng, 20);
            play_match(&rng, n, target, i < 2 ? 1 : CHECK_EVERY, &stats);
        }
        print_message("n=%d: %ld steps, %ld checked, %ld hands (%ld lone stayers, %ld nobody, "
                      "%ld spades played, %ld times -3), %ld resigned, %ld ties for first\n",
                      n, stats.steps, stats.checks, stats.hands, stats.lone, stats.nobody,
                      stats.spades, stats.minus3, stats.resigned, stats.ties);
        /* Every kind of hand happened. */
        assert_true(stats.lone > 0 && stats.nobody > 0 && stats.spades > 0 && stats.minus3 > 0);
        assert_true(stats.resigned > 0 && stats.ties > 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows),
        cmocka_unit_test(test_deal_positions),
        cmocka_unit_test(test_draw_limit),
        cmocka_unit_test(test_discard_listing),
        cmocka_unit_test(test_spades_everyone_plays),
        cmocka_unit_test(test_lone_stayer),
        cmocka_unit_test(test_nobody_stays),
        cmocka_unit_test(test_stay_every_order),
        cmocka_unit_test(test_discard_every_order),
        cmocka_unit_test(test_dealer_turn_up),
        cmocka_unit_test(test_tricks_and_scores),
        cmocka_unit_test(test_end_tie_for_first),
        cmocka_unit_test(test_target_and_resign),
        cmocka_unit_test(test_random_matches),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
