/* test_hearts.c - Hearts legality, rule by rule (rules.md §1): table-driven rows of
 * (setup, seat, move, expected) on states built from stacked decks, then the outcomes the
 * rows cannot show (exchanges, hole, scores, moon, end, ranking, resign) and the views.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "rules.h"
#include "testlib.h"
#include "turnlog.h"

#define C(text) tl_cards(text)

/* ---- building states ------------------------------------------------------------------ */

/* The 52-card deck that deals `hands` with `dealer` dealing to `n` seats: deck position
 * i goes to seat (dealer + 1 + i) mod n, the positions n*h.. are the hole (rules.md §1). */
static void stack_deal(int n, int dealer, const uint64_t *hands, uint64_t hole,
                       rules_card deck[RULES_NCARDS])
{
    int h = RULES_NCARDS / n;
    for (int s = 0; s < n; s++) {
        assert_int_equal(rules_popcount(hands[s]), h);
        int k = ((s - dealer - 1) % n + n) % n;
        int j = 0;
        for (uint64_t set = hands[s]; set; set &= set - 1)
            deck[k + n * j++] = (rules_card)__builtin_ctzll(set);
    }
    int i = n * h;
    for (uint64_t set = hole; set; set &= set - 1)
        deck[i++] = (rules_card)__builtin_ctzll(set);
    assert_int_equal(i, RULES_NCARDS);
}

/* Complete hand specs: seats given as NULL get the lowest cards left, seat by seat; the
 * hole (NULL: the rest) gets what remains. */
static void fill_hands(int n, const char *const spec[], const char *hole_spec, uint64_t *hands,
                       uint64_t *hole)
{
    int h = RULES_NCARDS / n;
    uint64_t used = hole_spec ? C(hole_spec) : 0;
    for (int s = 0; s < n; s++) {
        hands[s] = spec[s] ? C(spec[s]) : 0;
        assert_false(used & hands[s]);
        used |= hands[s];
    }
    uint64_t rest = RULES_ALL_CARDS & ~used;
    for (int s = 0; s < n; s++) {
        while (!spec[s] && rules_popcount(hands[s]) < h) {
            assert_true(rest != 0);
            hands[s] |= rest & -rest;
            rest &= rest - 1;
        }
    }
    *hole = hole_spec ? C(hole_spec) : rest;
    assert_int_equal(rules_popcount(*hole), RULES_NCARDS - n * h);
}

static void deal_hands(struct rules_state *st, const uint64_t *hands, uint64_t hole)
{
    rules_card deck[RULES_NCARDS];
    struct err e;
    stack_deal(st->nseats, st->g.hearts.dealer, hands, hole, deck);
    if (!rules_chance(st, RULES_DUE_DEAL, deck, RULES_NCARDS, &e))
        fail_msg("stacked deal refused: %s", e.msg);
    for (int s = 0; s < st->nseats; s++)
        assert_true(st->g.hearts.hands[s] == hands[s]);
    assert_true(st->g.hearts.hole == hole);
}

static int pass_target(int s, int dir, int n)
{
    return dir == RULES_PASS_LEFT ? (s + 1) % n : dir == RULES_PASS_RIGHT ? (s + n - 1) % n
                                                                          : (s + n / 2) % n;
}

static void apply_ok(struct rules_state *st, int seat, const char *text)
{
    struct err e;
    if (!tl_apply(st, seat, text, &e))
        fail_msg("seat %d '%s' refused: %s", seat, text, e.msg);
}

static void apply_mask(struct rules_state *st, int seat, uint8_t verb, uint64_t cards)
{
    struct rules_move m = {.verb = verb, .card = RULES_NO_CARD,
                           .ncards = (uint8_t)rules_popcount(cards), .cards = cards};
    struct err e;
    if (!rules_apply(st, seat, &m, &e))
        fail_msg("seat %d: %s", seat, e.msg);
}

/* Deal so that after this hand's exchange the seats hold `finals` (see fill_hands): each
 * seat passes the three lowest cards of its receiver's final hand, seats 0..n-1 in turn.
 * On a hold hand the finals are simply dealt. */
static void deal_finals(struct rules_state *st, const char *const spec[], const char *hole_spec)
{
    int n = st->nseats;
    uint64_t finals[6] = {0}, hole = 0, dealt[6] = {0}, give[6] = {0};
    fill_hands(n, spec, hole_spec, finals, &hole);
    int cycle = (n == 4 || n == 6) ? 4 : 3;
    int k = (int)(st->hands_done % (uint32_t)cycle);
    int dir = k == cycle - 1 ? RULES_PASS_HOLD : k;
    if (dir == RULES_PASS_HOLD) {
        deal_hands(st, finals, hole);
        return;
    }
    for (int s = 0; s < n; s++) {
        uint64_t f = finals[pass_target(s, dir, n)];
        give[s] = 0;
        for (int j = 0; j < 3; j++) {
            give[s] |= f & -f;
            f &= f - 1;
        }
    }
    for (int s = 0; s < n; s++)
        dealt[s] = finals[s] | give[s];
    for (int s = 0; s < n; s++)
        dealt[pass_target(s, dir, n)] &= ~give[s];
    deal_hands(st, dealt, hole);
    for (int s = 0; s < n; s++)
        apply_mask(st, s, RULES_PASS, give[s]);
    for (int s = 0; s < n; s++)
        assert_true(st->g.hearts.hands[s] == finals[s]);
}

/* Play first legal moves (lowest seat to move first); `high` plays its last legal card.
 * Stops when a deal is due, the match is over, or a moon choice is pending. */
static void autoplay(struct rules_state *st, int high)
{
    static struct rules_move legal[RULES_MAX_LEGAL];
    while (!st->over && rules_due(st) == RULES_DUE_NONE &&
           st->g.hearts.phase != RULES_HEARTS_MOON) {
        int seat = __builtin_ctz(rules_to_move(st));
        int n = rules_legal(st, seat, legal, RULES_MAX_LEGAL);
        assert_true(n > 0);
        struct err e;
        if (!rules_apply(st, seat, &legal[seat == high ? n - 1 : 0], &e))
            fail_msg("listed move refused: %s", e.msg);
    }
}

struct setup {
    const char *name;
    int seats, moon, first_dealer;
    int64_t target;
    bool undealt;           /* no deal at all */
    bool finals;            /* hands are the hands after this hand's exchange */
    const char *hands[6];   /* NULL: the lowest cards left */
    const char *hole;       /* NULL: the rest */
    /* "S:move" (applied), "auto" (first legal moves to the hand's end), "high S" (auto with
     * seat S playing its last legal card), "deal" (the same hands for the dealer now due),
     * separated by ';' */
    const char *script;
};

static void start(struct rules_state *st, const struct setup *su)
{
    struct rules_options o;
    struct err e;
    rules_options_default(RULES_GAME_HEARTS, &o);
    if (su->seats)
        o.seats = su->seats;
    if (su->target)
        o.target = su->target;
    o.moon = su->moon;
    o.first_dealer = su->first_dealer;
    if (!rules_init(st, RULES_GAME_HEARTS, &o, &e))
        fail_msg("%s: %s", su->name, e.msg);
}

static void deal_setup(struct rules_state *st, const struct setup *su)
{
    if (su->finals) {
        deal_finals(st, su->hands, su->hole);
    } else {
        uint64_t hands[6], hole;
        fill_hands(st->nseats, su->hands, su->hole, hands, &hole);
        deal_hands(st, hands, hole);
    }
}

static void build(struct rules_state *st, const struct setup *su)
{
    start(st, su);
    if (su->undealt)
        return;
    deal_setup(st, su);
    char script[1024];
    snprintf(script, sizeof script, "%s", su->script ? su->script : "");
    char *save = NULL;
    for (char *item = strtok_r(script, ";", &save); item; item = strtok_r(NULL, ";", &save)) {
        while (*item == ' ')
            item++;
        if (!strcmp(item, "auto"))
            autoplay(st, -1);
        else if (!strncmp(item, "high ", 5))
            autoplay(st, item[5] - '0');
        else if (!strcmp(item, "deal"))
            deal_setup(st, su);
        else if (item[0] >= '0' && item[0] <= '9' && item[1] == ':')
            apply_ok(st, item[0] - '0', item + 2);
        else
            fail_msg("%s: bad script item '%s'", su->name, item);
    }
}

/* ---- setups ------------------------------------------------------------------------- */

/* Four seats, dealer 0, hand 1 (left). After the passes seat 0 holds
 * 2C 3C 4C 2D 3D 4D 5D 2H 3H 2S 3S 4S 5S; seat 1 5C-9C QS 4H-7H 6S 7S 8S;
 * seat 2 TC JC QC 6D-JD 8H 9H 9S TS; seat 3 KC AC QD KD AD TH-AH JS KS AS. */
#define BASE_HANDS                                                                             \
    {"2C 3C 4C 2D 3D 4D 5D 2H 3H 5S 6S 7S 8S", "5C 6C 7C 8C 9C QS 4H 5H 6H 7H 9S TS 8H",       \
     "TC JC QC 6D 7D 8D 9D TD JD 9H JS KS AS", "KC AC QD KD AD TH JH QH KH AH 2S 3S 4S"}
#define BASE_PASSES "0:pass 6S 7S 8S; 1:pass 9S TS 8H; 2:pass JS KS AS; 3:pass 2S 3S 4S"
#define TRICK1 "; 0:play 2C; 1:play 5C; 2:play TC; 3:play AC"

/* The shooter's hand of a 4-seat moon: AC, then top cards only, so it wins every trick. */
#define MOON4 {"2C 3C 4C 5C 6C 7C 8C 9C TC JC QC KC 2D", "3D 4D 5D 6D 2H 3H 4H 5H 6H 7H 8H 9H TH", \
               "AC AD KD QD JD TD 9D 8D 7D AS KS QS JS", "JH QH KH AH 2S 3S 4S 5S 6S 7S 8S 9S TS"}

static const struct setup undealt = {"undealt", .undealt = true};
static const struct setup fresh = {"pass phase", .hands = BASE_HANDS};
static const struct setup one_passed = {"seat 0 passed", .hands = BASE_HANDS,
                                        .script = "0:pass 6S 7S 8S"};
static const struct setup exchanged = {"after the exchange", .hands = BASE_HANDS,
                                       .script = BASE_PASSES};
static const struct setup trick1 = {"trick 1, seat 1 to follow", .hands = BASE_HANDS,
                                    .script = BASE_PASSES "; 0:play 2C"};
static const struct setup trick2 = {"trick 2, hearts unbroken", .hands = BASE_HANDS,
                                    .script = BASE_PASSES TRICK1};
static const struct setup broken = {
    "trick 3 after a heart in trick 2", .hands = BASE_HANDS,
    .script = BASE_PASSES TRICK1 "; 3:play QD; 0:play 2D; 1:play 4H; 2:play 6D"};
static const struct setup qs_only = {
    "trick 3 after QS in trick 2", .hands = BASE_HANDS,
    .script = BASE_PASSES TRICK1 "; 3:play QD; 0:play 2D; 1:play QS; 2:play 6D"};
static const struct setup mid_heart = {
    "trick 2, a heart discarded in it", .hands = BASE_HANDS,
    .script = BASE_PASSES TRICK1 "; 3:play QD; 0:play 2D; 1:play 4H"};
static const struct setup ftrick = {
    "first trick, seat 2 void in clubs", .finals = true,
    .hands = {"2C 3C 4C 5C 6C 7C 8C 9C TC JC QC KC AC", "2D 3D 4D 5D 6D 7D 8D 9D TD JD QD KD AD",
              "QS 2H 3H 4H 5H 6H 7H 2S 3S 4S 5S 6S 7S"},
    .script = "0:play 2C; 1:play 5D"};
static const struct setup only_points = {
    "first trick, seat 1 holds only points", .finals = true,
    .hands = {"2C 3C 4C 5C 6C 7C 8C 9C TC JC QC KC AC", "3H 4H 5H 6H 7H 8H 9H TH JH QH KH AH QS",
              "2H 2D 3D 4D 5D 6D 7D 8D 9D TD JD QD 2S"},
    .script = "0:play 2C"};
static const struct setup only_points_qs = {
    "first trick after QS, seat 2 holds 2H", .finals = true,
    .hands = {"2C 3C 4C 5C 6C 7C 8C 9C TC JC QC KC AC", "3H 4H 5H 6H 7H 8H 9H TH JH QH KH AH QS",
              "2H 2D 3D 4D 5D 6D 7D 8D 9D TD JD QD 2S"},
    .script = "0:play 2C; 1:play QS"};
static const struct setup only_hearts = {
    "trick 2, the leader holds only hearts", .finals = true,
    .hands = {"2C 3C 4C 5C 6C 7C 8C 9C TC JC QC KC AH", "AC 2H 3H 4H 5H 6H 7H 8H 9H TH JH QH KH",
              "2D 3D 4D 5D 6D 7D 8D 9D TD JD QD KD AD"},
    .script = "0:play 2C; 1:play AC; 2:play 2D; 3:play 2S"};
static const struct setup hearts_and_qs = {
    "trick 2, the leader holds hearts and QS", .finals = true,
    .hands = {"2C 3C 4C 5C 6C 7C 8C 9C TC JC QC KC KH", "AC QS 2H 3H 4H 5H 6H 7H 8H 9H TH JH QH",
              "2D 3D 4D 5D 6D 7D 8D 9D TD JD QD KD AD"},
    .script = "0:play 2C; 1:play AC; 2:play 2D; 3:play 2S"};
static const struct setup hole3 = {"3 seats, 2C in the hole", .seats = 3, .finals = true,
                                   .hole = "2C",
                                   .hands = {NULL, "3C 4C 2D 3D 4D 5D 6D 7D 8D 9D TD JD QD KD "
                                                   "AD 2H 3H"}};
static const struct setup hole5 = {"5 seats, 2C 3C in the hole", .seats = 5, .finals = true,
                                   .hole = "2C 3C"};
static const struct setup hole6 = {"6 seats, 2C-5C in the hole", .seats = 6, .finals = true,
                                   .hole = "2C 3C 4C 5C"};
static const struct setup hold4 = {"4 seats, hand 4 (hold)", .target = 10000,
                                   .script = "auto; deal; auto; deal; auto; deal"};
static const struct setup hold3 = {"3 seats, hand 3 (hold)", .seats = 3, .target = 10000,
                                   .script = "auto; deal; auto; deal"};
static const struct setup moon_choice = {"moon=choose, seat 2 shot the moon",
                                         .moon = RULES_MOON_CHOOSE, .finals = true,
                                         .hands = MOON4, .script = "high 2"};
static const struct setup deal_due = {"a deal is due", .hands = BASE_HANDS,
                                      .script = BASE_PASSES "; auto"};
static const struct setup over_target = {"over: moon=add reached target 26", .target = 26,
                                         .finals = true, .hands = MOON4, .script = "high 2"};
static const struct setup over_resign = {"over: seat 1 resigned", .hands = BASE_HANDS,
                                         .script = BASE_PASSES "; 0:play 2C; 1:resign"};

/* ---- the rows ------------------------------------------------------------------------ */

struct row {
    const struct setup *setup;
    int seat;
    const char *move;
    const char *refused; /* NULL: accepted; else the tag */
};

static const struct row rows[] = {
    /* resign at any time, by anyone; nothing moves before the first deal */
    {&undealt, 0, "resign", NULL},
    {&undealt, 3, "resign", NULL},
    {&undealt, 0, "pass 2C 3C 4C", "chance_due"},
    {&undealt, 1, "play 2C", "chance_due"},
    {&undealt, 4, "resign", "bad_seat"},
    {&undealt, -1, "resign", "bad_seat"},
    /* pass: three distinct cards of the own hand */
    {&fresh, 0, "pass 6S 7S 8S", NULL},
    {&fresh, 0, "pass 8s 6\xe2\x99\xa0 7S", NULL},
    {&fresh, 0, "pass 2C 3C 4C", NULL},
    {&fresh, 3, "pass KC AC AH", NULL},
    {&fresh, 1, "  PASS 8h 10S 9s\r\n", NULL},
    {&fresh, 0, "pass 2C 2C 3C", "duplicate_card"},
    {&fresh, 0, "pass 2C 2C 2C", "duplicate_card"},
    {&fresh, 0, "pass 2C 3C", "wrong_card_count"},
    {&fresh, 0, "pass 2C 3C 4C 2D", "wrong_card_count"},
    {&fresh, 0, "pass 2C 2C 3C 4C", "wrong_card_count"},
    {&fresh, 0, "pass", "wrong_card_count"},
    {&fresh, 0, "pass 2C 3C AS", "not_in_hand"},
    {&fresh, 0, "pass 5C 6C 7C", "not_in_hand"},
    {&fresh, 2, "pass 2C 3C 4C", "not_in_hand"},
    {&fresh, 0, "play 2C", "wrong_phase"},
    {&fresh, 0, "moon add", "wrong_phase"},
    {&fresh, 2, "resign", NULL},
    /* hostile: other games' verbs, bad text, bad seats */
    {&fresh, 0, "stay", "not_a_hearts_move"},
    {&fresh, 0, "drop", "not_a_hearts_move"},
    {&fresh, 0, "discard 2C", "not_a_hearts_move"},
    {&fresh, 0, "lead 2C", "not_a_hearts_move"},
    {&fresh, 0, "take 2C", "not_a_hearts_move"},
    {&fresh, 0, "move 2C", "not_a_hearts_move"},
    {&fresh, 0, "flip 1", "not_a_hearts_move"},
    {&fresh, 0, "ready", "not_a_hearts_move"},
    {&fresh, 0, "pass 2C 3C 1X", "bad_notation"},
    {&fresh, 0, "pass 2C  3C 4C", "bad_notation"},
    {&fresh, 0, "moon", "bad_notation"},
    {&fresh, 0, "", "bad_notation"},
    {&fresh, 4, "pass 2C 3C 4C", "bad_seat"},
    {&fresh, 9, "resign", "bad_seat"},
    {&fresh, -1, "pass 2C 3C 4C", "bad_seat"},
    /* a pass is secret and final */
    {&one_passed, 0, "pass 2C 3C 4C", "already_submitted"},
    {&one_passed, 0, "pass 6S 7S 8S", "already_submitted"},
    {&one_passed, 1, "pass 9S TS 8H", NULL},
    {&one_passed, 0, "resign", NULL},
    {&one_passed, 1, "play 5C", "wrong_phase"},
    /* first lead: 2C */
    {&exchanged, 0, "play 2C", NULL},
    {&exchanged, 0, "play 3C", "must_lead_lowest_club"},
    {&exchanged, 0, "play 2H", "must_lead_lowest_club"},
    {&exchanged, 0, "play 6S", "not_in_hand"},
    {&exchanged, 1, "play 5C", "not_your_turn"},
    {&exchanged, 0, "pass 2C 3C 4C", "wrong_phase"},
    {&exchanged, 3, "resign", NULL},
    /* following suit */
    {&trick1, 1, "play 5C", NULL},
    {&trick1, 1, "play 9C", NULL},
    {&trick1, 1, "play QS", "must_follow_suit"},
    {&trick1, 1, "play 4H", "must_follow_suit"},
    {&trick1, 1, "play 6S", "must_follow_suit"},
    {&trick1, 1, "play TC", "not_in_hand"},
    {&trick1, 2, "play TC", "not_your_turn"},
    {&trick1, 0, "play 3C", "not_your_turn"},
    {&trick1, 1, "moon add", "wrong_phase"},
    {&trick1, 1, "moon subtract", "wrong_phase"},
    {&trick1, 3, "resign", NULL},
    /* leading hearts */
    {&trick2, 3, "play TH", "hearts_not_broken"},
    {&trick2, 3, "play AH", "hearts_not_broken"},
    {&trick2, 3, "play QD", NULL},
    {&trick2, 3, "play KC", NULL},
    {&trick2, 3, "play AS", NULL},
    {&broken, 3, "play TH", NULL},
    {&broken, 3, "play KD", NULL},
    {&qs_only, 3, "play TH", "hearts_not_broken"},
    {&qs_only, 3, "play KD", NULL},
    {&mid_heart, 2, "play 7D", NULL},
    {&mid_heart, 2, "play 8H", "must_follow_suit"},
    {&only_hearts, 1, "play 2H", NULL},
    {&only_hearts, 1, "play KH", NULL},
    {&hearts_and_qs, 1, "play QS", NULL}, /* QS is no heart: the exception does not apply */
    {&hearts_and_qs, 1, "play 2H", "hearts_not_broken"},
    /* the first trick */
    {&ftrick, 2, "play 2S", NULL},
    {&ftrick, 2, "play 7S", NULL},
    {&ftrick, 2, "play QS", "no_points_first_trick"},
    {&ftrick, 2, "play 2H", "no_points_first_trick"},
    {&only_points, 1, "play QS", NULL},
    {&only_points, 1, "play 3H", NULL},
    {&only_points, 1, "play AH", NULL},
    {&only_points_qs, 2, "play 2H", "no_points_first_trick"},
    {&only_points_qs, 2, "play 2S", NULL},
    {&only_points_qs, 2, "play QD", NULL},
    /* 2C in the hole: the lowest club held leads */
    {&hole3, 1, "play 3C", NULL},
    {&hole3, 1, "play 4C", "must_lead_lowest_club"},
    {&hole3, 1, "play 2C", "not_in_hand"},
    {&hole3, 0, "play 2C", "not_your_turn"},
    {&hole5, 0, "play 4C", NULL},
    {&hole5, 0, "play 5C", "must_lead_lowest_club"},
    {&hole6, 0, "play 6C", NULL},
    {&hole6, 0, "play 7C", "must_lead_lowest_club"},
    /* hold hands have no passing phase */
    {&hold4, 0, "pass 2C 6C TC", "wrong_phase"},
    {&hold4, 0, "play 2C", NULL},
    {&hold3, 0, "pass 2C 3C 4C", "wrong_phase"},
    {&hold3, 0, "play 2C", NULL},
    /* moon=choose: only the shooter, only `moon add|subtract` */
    {&moon_choice, 2, "moon add", NULL},
    {&moon_choice, 2, "moon subtract", NULL},
    {&moon_choice, 2, "MOON Subtract", NULL},
    {&moon_choice, 0, "moon add", "not_your_turn"},
    {&moon_choice, 3, "moon subtract", "not_your_turn"},
    {&moon_choice, 2, "play AC", "wrong_phase"},
    {&moon_choice, 2, "pass 2C 3C 4C", "wrong_phase"},
    {&moon_choice, 2, "moon", "bad_notation"},
    {&moon_choice, 1, "resign", NULL},
    /* a deal is due */
    {&deal_due, 0, "play 2C", "chance_due"},
    {&deal_due, 1, "pass 2C 3C 4C", "chance_due"},
    {&deal_due, 2, "moon add", "chance_due"},
    {&deal_due, 3, "resign", NULL},
    /* the match is over */
    {&over_target, 0, "resign", "match_over"},
    {&over_target, 0, "play 2C", "match_over"},
    {&over_target, 2, "moon add", "match_over"},
    {&over_target, 5, "resign", "bad_seat"},
    {&over_resign, 1, "resign", "match_over"},
    {&over_resign, 0, "resign", "match_over"},
    {&over_resign, 1, "play 6C", "match_over"},
};

static void test_rows(void **state)
{
    (void)state;
    uint64_t rng = 7;
    const struct setup *checked = NULL;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const struct row *r = &rows[i];
        struct rules_state st, copy;
        build(&st, r->setup);
        if (r->setup != checked) {
            const char *why = tl_check_legality(&st, &rng);
            if (why)
                fail_msg("setup '%s': %s", r->setup->name, why);
            checked = r->setup;
        }
        copy = st;
        struct err e;
        struct rules_move m;
        bool parsed = rules_move_parse(r->move, strlen(r->move), &m, &e);
        bool ok = parsed && rules_apply(&copy, r->seat, &m, &e);
        if (!r->refused) {
            if (!ok)
                fail_msg("row %zu (%s) seat %d '%s' refused: %s", i, r->setup->name, r->seat,
                         r->move, e.msg);
            if (m.verb != RULES_RESIGN && !tl_listed(&st, r->seat, &m))
                fail_msg("row %zu: accepted '%s' is not listed", i, r->move);
            continue;
        }
        if (ok)
            fail_msg("row %zu (%s) seat %d '%s' accepted, expected %s", i, r->setup->name,
                     r->seat, r->move, r->refused);
        if (e.code != ERR_ILLEGAL || strcmp(e.tag, r->refused) != 0 || !e.msg[0])
            fail_msg("row %zu (%s) seat %d '%s': got %s '%s' (%s), expected %s", i,
                     r->setup->name, r->seat, r->move, err_code_name(e.code), e.tag, e.msg,
                     r->refused);
        if (memcmp(&copy, &st, sizeof st) != 0)
            fail_msg("row %zu: the refused move changed the state", i);
        if (parsed && tl_listed(&st, r->seat, &m))
            fail_msg("row %zu: refused '%s' is listed", i, r->move);
    }
}

/* ---- deals, passes, first leads -------------------------------------------------------- */

static void test_deal_sizes(void **state)
{
    (void)state;
    static const int size[7] = {0, 0, 0, 17, 13, 10, 8}, holes[7] = {0, 0, 0, 1, 0, 2, 4};
    uint64_t rng = 3;
    for (int n = 3; n <= 6; n++) {
        for (int fd = 0; fd < n; fd++) {
            struct setup su = {"deal", .seats = n, .first_dealer = fd, .undealt = true};
            struct rules_state st;
            struct err e;
            build(&st, &su);
            assert_int_equal(rules_due(&st), RULES_DUE_DEAL);
            rules_card deck[RULES_NCARDS];
            tl_random_deck(&rng, deck);
            assert_true(rules_chance(&st, RULES_DUE_DEAL, deck, RULES_NCARDS, &e));
            assert_int_equal(st.g.hearts.dealer, fd);
            assert_int_equal(st.g.hearts.hand_size, size[n]);
            uint64_t hole = 0;
            for (int i = n * size[n]; i < RULES_NCARDS; i++)
                hole |= RULES_BIT(deck[i]);
            assert_int_equal(rules_popcount(hole), holes[n]);
            assert_true(st.g.hearts.hole == hole);
            for (int s = 0; s < n; s++) {
                uint64_t want = 0;
                for (int i = 0; i < n * size[n]; i++)
                    if ((fd + 1 + i) % n == s)
                        want |= RULES_BIT(deck[i]);
                assert_int_equal(rules_popcount(want), size[n]);
                assert_true(st.g.hearts.hands[s] == want);
            }
            /* the stacking helper inverts the deal */
            struct rules_state again;
            build(&again, &su);
            deal_hands(&again, st.g.hearts.hands, hole);
        }
    }
}

/* Hand k of each seat count passes by the cycle; every seat's three cards arrive at the
 * seat the direction names, all at once; hold hands go straight to play; dealers rotate. */
static void test_pass_cycle(void **state)
{
    (void)state;
    for (int n = 3; n <= 6; n++) {
        const char *cycle = (n == 4 || n == 6) ? "LRAH" : "LRH";
        int len = (int)strlen(cycle);
        int fd = n - 1;
        struct setup su = {"cycle", .seats = n, .first_dealer = fd, .target = 1000000,
                           .undealt = true};
        struct rules_state st;
        build(&st, &su);
        for (int k = 1; k <= 2 * len + 1; k++) {
            rules_card deck[RULES_NCARDS];
            for (int i = 0; i < RULES_NCARDS; i++)
                deck[i] = (rules_card)((i * 7 + k) % RULES_NCARDS);
            struct err e;
            assert_true(rules_chance(&st, RULES_DUE_DEAL, deck, RULES_NCARDS, &e));
            const struct rules_hearts *h = &st.g.hearts;
            assert_int_equal(h->dealer, (fd + k - 1) % n);
            char dir = cycle[(k - 1) % len];
            uint32_t all = (1u << n) - 1;
            if (dir == 'H') {
                assert_int_equal(h->phase, RULES_HEARTS_PLAY);
                assert_int_equal(rules_to_move(&st), 1u << h->leader);
                assert_true(h->hands[h->leader] & RULES_BIT(h->first_lead));
            } else {
                assert_int_equal(h->phase, RULES_HEARTS_PASS);
                assert_int_equal(rules_to_move(&st), all);
                uint64_t dealt[6], give[6];
                for (int s = 0; s < n; s++) {
                    dealt[s] = h->hands[s];
                    uint64_t f = dealt[s];
                    give[s] = 0;
                    for (int j = 0; j < 3; j++) {
                        give[s] |= f & -f;
                        f &= f - 1;
                    }
                }
                for (int s = n - 1; s >= 0; s--) {
                    apply_mask(&st, s, RULES_PASS, give[s]);
                    if (s > 0) {
                        assert_int_equal(h->phase, RULES_HEARTS_PASS);
                        for (int t = 0; t < n; t++)
                            assert_true(h->hands[t] == dealt[t]);
                    }
                }
                assert_int_equal(h->phase, RULES_HEARTS_PLAY);
                for (int s = 0; s < n; s++) {
                    int to = dir == 'L' ? (s + 1) % n : dir == 'R' ? (s + n - 1) % n
                                                                   : (s + n / 2) % n;
                    assert_true(h->received[to] == give[s]);
                    assert_true((h->hands[to] & give[s]) == give[s]);
                    assert_true((h->hands[s] & give[s]) == 0 || to == s);
                    assert_int_equal(rules_popcount(h->hands[s]), RULES_NCARDS / n);
                }
            }
            autoplay(&st, -1);
            assert_int_equal(st.hands_done, (uint32_t)k);
            assert_int_equal(rules_due(&st), RULES_DUE_DEAL);
        }
    }
}

/* The exchange happens when the last pass arrives, whatever the order. */
static void test_exchange_any_order(void **state)
{
    (void)state;
    static const char *const passes[4] = {"pass 6S 7S 8S", "pass 9S TS 8H", "pass JS KS AS",
                                          "pass 2S 3S 4S"};
    struct rules_state want, st;
    build(&want, &exchanged);
    int orders = 0;
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 4; b++)
            for (int c = 0; c < 4; c++) {
                int d = 6 - a - b - c;
                if (a == b || a == c || b == c || d < 0 || d > 3 || d == a || d == b || d == c)
                    continue;
                int order[4] = {a, b, c, d};
                build(&st, &fresh);
                struct rules_state dealt = st;
                uint32_t waiting = 15;
                for (int i = 0; i < 4; i++) {
                    apply_ok(&st, order[i], passes[order[i]]);
                    waiting &= ~(1u << order[i]);
                    if (i < 3) {
                        assert_int_equal(rules_to_move(&st), waiting);
                        assert_memory_equal(st.g.hearts.hands, dealt.g.hearts.hands,
                                            sizeof dealt.g.hearts.hands);
                    }
                }
                assert_memory_equal(&st, &want, sizeof st);
                orders++;
            }
    assert_int_equal(orders, 24);
    /* seat 1 now holds what seat 0 passed it */
    assert_true(want.g.hearts.hands[1] & C("6S 7S 8S"));
    assert_true(want.g.hearts.received[1] == C("6S 7S 8S"));
}

/* 2C leads; when it is in the hole, the lowest club held (after the exchange) does. */
static void test_first_lead(void **state)
{
    (void)state;
    static const struct {
        const struct setup *su;
        const char *lead;
    } cases[] = {{&exchanged, "2C"}, {&hole3, "3C"}, {&hole5, "4C"}, {&hole6, "6C"},
                 {&hold4, "2C"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct rules_state st;
        build(&st, cases[i].su);
        uint64_t lead = C(cases[i].lead);
        uint32_t tm = rules_to_move(&st);
        assert_int_equal(rules_popcount(tm), 1);
        int seat = __builtin_ctz(tm);
        assert_true(st.g.hearts.hands[seat] & lead);
        struct rules_move legal[4];
        assert_int_equal(rules_legal(&st, seat, legal, 4), 1);
        assert_true(RULES_BIT(legal[0].card) == lead);
    }
    /* a hold hand with 2C in the hole: no pass moves the lowest club */
    struct setup su = {"3 seats, hold, 2C in the hole", .seats = 3, .hole = "2C",
                       .target = 10000, .script = "auto; deal; auto; deal"};
    struct rules_state st;
    build(&st, &su);
    assert_int_equal(st.g.hearts.pass_dir, RULES_PASS_HOLD);
    assert_true(RULES_BIT(st.g.hearts.first_lead) == C("3C"));
    assert_int_equal(rules_to_move(&st), 1u << 0);
}

/* ---- tricks, hole, points -------------------------------------------------------------- */

static void test_trick_winner(void **state)
{
    (void)state;
    struct rules_state st;
    build(&st, &ftrick);
    /* 2C led; AD and AS are discards of seats void in clubs: 2C wins */
    apply_ok(&st, 2, "play 7S");
    apply_ok(&st, 3, "play AS");
    assert_int_equal(rules_to_move(&st), 1u << 0);
    assert_true(st.g.hearts.taken[0] == C("2C 5D 7S AS"));
    build(&st, &trick2);
    assert_int_equal(rules_to_move(&st), 1u << 3); /* AC beat 2C 5C TC */
    assert_true(st.g.hearts.taken[3] == C("2C 5C TC AC"));
}

/* A heart in the current trick does not yet count as broken; after the trick it does. */
static void test_broken_after_trick(void **state)
{
    (void)state;
    struct rules_state st;
    build(&st, &mid_heart);
    assert_false(st.g.hearts.broken);
    apply_ok(&st, 2, "play 6D");
    assert_true(st.g.hearts.broken);
    build(&st, &qs_only);
    assert_false(st.g.hearts.broken);
}

static int raw_points(uint64_t taken)
{
    return rules_popcount(taken & RULES_SUIT_MASK(RULES_HEARTS_SUIT)) +
           ((taken & C("QS")) ? 13 : 0);
}

/* Random hands for every seat count and moon option: the hole goes to the winner of the
 * first trick holding a heart, when it completes, and is never played; hearts are broken
 * exactly after a trick with a heart; each hand's points are 26, hole included, scored as
 * the moon option says; a seat sees nothing it may not. */
static void test_random_hands(void **state)
{
    (void)state;
    uint64_t rng = 11;
    static struct rules_move legal[RULES_MAX_LEGAL];
    for (int round = 0; round < 40; round++) {
        int n = 3 + round % 4;
        int moon = (round / 4) % 3;
        struct setup su = {"random", .seats = n, .moon = moon, .first_dealer = round % n,
                           .target = 1000000, .undealt = true};
        struct rules_state st;
        build(&st, &su);
        for (int hand = 0; hand < 3; hand++) {
            rules_card deck[RULES_NCARDS];
            struct err e;
            tl_random_deck(&rng, deck);
            assert_true(rules_chance(&st, RULES_DUE_DEAL, deck, RULES_NCARDS, &e));
            const struct rules_hearts *h = &st.g.hearts;
            uint64_t hole = h->hole, played = 0;
            bool heart_trick = false;
            while (rules_due(&st) == RULES_DUE_NONE) {
                uint32_t tm = rules_to_move(&st);
                int seat = __builtin_ctz(tm);
                for (int s = -1; s < n; s++) {
                    bool ok;
                    uint64_t seen = tl_view_cards(&st, s, &ok);
                    assert_true(ok);
                    uint64_t mine = s < 0 ? 0 : h->hands[s] | h->passes[s];
                    if (s >= 0 && h->phase != RULES_HEARTS_PASS)
                        mine |= h->received[s];
                    assert_true((seen & ~(mine | played)) == 0);
                    assert_true((seen & hole) == 0);
                }
                int nl = rules_legal(&st, seat, legal, RULES_MAX_LEGAL);
                assert_true(nl > 0);
                struct rules_move m = legal[tl_below(&rng, (uint32_t)(nl < RULES_MAX_LEGAL
                                                                          ? nl
                                                                          : RULES_MAX_LEGAL))];
                int tricks = h->trick_no;
                uint64_t taken[6];
                memcpy(taken, h->taken, sizeof taken);
                assert_true(rules_apply(&st, seat, &m, &e));
                if (m.verb == RULES_PLAY) {
                    assert_false(hole & RULES_BIT(m.card));
                    played |= RULES_BIT(m.card);
                }
                if (m.verb == RULES_PLAY && h->trick_no != tricks) {
                    /* a trick completed: look at it */
                    const uint8_t *tr = &h->played[tricks * n];
                    bool hearts = false;
                    for (int i = 0; i < n; i++)
                        hearts |= RULES_SUIT(tr[i]) == RULES_HEARTS_SUIT;
                    int winner = -1;
                    for (int s = 0; s < n; s++)
                        if (h->taken[s] != taken[s])
                            winner = s;
                    assert_true(winner >= 0);
                    if (hearts && !heart_trick && hole) {
                        assert_int_equal(h->hole_owner, winner);
                        assert_true((h->taken[winner] & hole) == hole);
                    } else if (!heart_trick) {
                        assert_int_equal(h->hole_owner, RULES_NO_CARD);
                    }
                    heart_trick |= hearts;
                    assert_int_equal(h->broken, heart_trick);
                }
            }
            /* the hand is scored */
            assert_int_equal(st.hands_done, (uint32_t)hand + 1);
            int sum = 0, shooter = -1;
            for (int s = 0; s < n; s++) {
                int p = raw_points(h->taken[s]);
                sum += p;
                if (p == 26)
                    shooter = s;
            }
            assert_int_equal(sum, 26);
            for (int s = 0; s < n; s++) {
                int32_t got = st.hand_scores[s];
                if (shooter < 0)
                    assert_int_equal(got, raw_points(h->taken[s]));
                else if (s == shooter)
                    assert_true(got == 0 || got == -26);
                else
                    assert_true(got == 26 || got == 0);
            }
            if (shooter >= 0) {
                bool sub = st.hand_scores[shooter] == -26;
                if (moon != RULES_MOON_CHOOSE)
                    assert_int_equal(sub, moon == RULES_MOON_SUBTRACT);
                for (int s = 0; s < n; s++)
                    if (s != shooter)
                        assert_int_equal(st.hand_scores[s], sub ? 0 : 26);
            }
        }
    }
}

/* ---- the moon, the end, ranking, resign ----------------------------------------------- */

static const char *const moon4_seat0[6] = {
    "AC AD KD QD JD TD 9D 8D 7D AS KS QS JS", "2C 3C 4C 5C 6C 7C 8C 9C TC JC QC KC 2D",
    "3D 4D 5D 6D 2H 3H 4H 5H 6H 7H 8H 9H TH", "JH QH KH AH 2S 3S 4S 5S 6S 7S 8S 9S TS"};

static void assert_scores(const struct rules_state *st, const int32_t *want)
{
    for (int s = 0; s < st->nseats; s++)
        if (st->hand_scores[s] != want[s])
            fail_msg("seat %d scored %d, expected %d", s, st->hand_scores[s], want[s]);
}

/* The ranking as "[0 2][1 3]". */
static const char *ranking(const struct rules_state *st)
{
    static char buf[64];
    struct rules_result r;
    rules_result(st, &r);
    size_t n = 0;
    for (int p = 0, i = 0; p < r.nplaces; p++) {
        n += (size_t)snprintf(buf + n, sizeof buf - n, "[");
        for (int k = 0; k < r.place_size[p]; k++)
            n += (size_t)snprintf(buf + n, sizeof buf - n, k ? " %d" : "%d", r.order[i++]);
        n += (size_t)snprintf(buf + n, sizeof buf - n, "]");
    }
    return buf;
}

static void test_moon(void **state)
{
    (void)state;
    struct rules_state st;
    struct setup add = {"moon add", .finals = true, .hands = MOON4, .script = "high 2"};
    build(&st, &add);
    assert_int_equal(st.hands_done, 1);
    assert_scores(&st, (const int32_t[]){26, 26, 0, 26});
    assert_false(st.over);
    assert_int_equal(rules_due(&st), RULES_DUE_DEAL);
    assert_string_equal(ranking(&st), "[2][0 1 3]");

    struct setup sub = add;
    sub.moon = RULES_MOON_SUBTRACT;
    build(&st, &sub);
    assert_scores(&st, (const int32_t[]){0, 0, -26, 0});
    assert_string_equal(ranking(&st), "[2][0 1 3]");

    /* choose: only the shooter moves, with exactly the two moon moves */
    build(&st, &moon_choice);
    assert_int_equal(st.hands_done, 0);
    assert_int_equal(rules_to_move(&st), 1u << 2);
    struct rules_move legal[4];
    assert_int_equal(rules_legal(&st, 2, legal, 4), 2);
    assert_true(legal[0].verb == RULES_MOON && legal[0].arg == RULES_MOON_ADD_ARG);
    assert_true(legal[1].verb == RULES_MOON && legal[1].arg == RULES_MOON_SUBTRACT_ARG);
    for (int s = 0; s < 4; s++)
        if (s != 2)
            assert_int_equal(rules_legal(&st, s, legal, 4), 0);
    struct rules_state copy = st;
    apply_ok(&copy, 2, "moon add");
    assert_scores(&copy, (const int32_t[]){26, 26, 0, 26});
    apply_ok(&st, 2, "moon subtract");
    assert_scores(&st, (const int32_t[]){0, 0, -26, 0});

    /* choose: the end test comes after the choice */
    struct setup near = moon_choice;
    near.target = 26;
    build(&st, &near);
    assert_false(st.over);
    copy = st;
    apply_ok(&copy, 2, "moon add");
    assert_true(copy.over);
    assert_string_equal(ranking(&copy), "[2][0 1 3]");
    apply_ok(&st, 2, "moon subtract");
    assert_false(st.over);
    assert_int_equal(rules_due(&st), RULES_DUE_DEAL);

    /* 5 seats, QS and 2H in the hole: the shooter needs the hole for its 26 */
    struct setup hole = {"moon through the hole", .seats = 5, .finals = true,
                         .hands = {"2C 3C 4C 5C 6C 7C 8C 9C TC JC",
                                   "QC KC 2D 3D 4D 5D 6D 7D 3H 4H",
                                   "AC AD KD QD JD TD 9D 8D AS KS",
                                   "5H 6H 7H 8H 9H TH JH QH KH AH"},
                         .hole = "QS 2H", .script = "high 2"};
    build(&st, &hole);
    assert_int_equal(st.g.hearts.hole_owner, 2);
    assert_int_equal(raw_points(st.g.hearts.taken[2] & ~C("QS 2H")), 12);
    assert_scores(&st, (const int32_t[]){26, 26, 0, 26, 26});
}

static void test_end_and_ranking(void **state)
{
    (void)state;
    struct rules_state st;
    /* a total equal to the target ends the match; the lowest total wins */
    build(&st, &over_target);
    assert_true(st.over);
    assert_int_equal(rules_due(&st), RULES_DUE_NONE);
    assert_int_equal(rules_to_move(&st), 0);
    assert_string_equal(ranking(&st), "[2][0 1 3]");
    struct setup below = over_target;
    below.target = 27;
    build(&st, &below);
    assert_false(st.over);

    /* Decision: seats tied for the lowest total share first place */
    struct setup two = {"two moons", .target = 50, .finals = true, .hands = MOON4,
                        .script = "high 2"};
    build(&st, &two);
    assert_int_equal(st.g.hearts.dealer, 1); /* the deal passes left */
    deal_finals(&st, moon4_seat0, NULL);
    assert_int_equal(st.g.hearts.pass_dir, RULES_PASS_RIGHT);
    autoplay(&st, 0);
    assert_scores(&st, (const int32_t[]){0, 26, 26, 26});
    assert_true(st.over);
    assert_int_equal(st.totals[0], 26);
    assert_int_equal(st.totals[1], 52);
    assert_string_equal(ranking(&st), "[0 2][1 3]");

    /* while running, the standing is by ascending totals too */
    build(&st, &deal_due);
    struct rules_result r;
    rules_result(&st, &r);
    assert_false(r.finished);
    for (int i = 1; i < 4; i++)
        assert_true(st.totals[r.order[i - 1]] <= st.totals[r.order[i]]);
}

static void test_resign(void **state)
{
    (void)state;
    struct rules_state st;
    struct err e;
    struct rules_move legal[RULES_MAX_LEGAL];
    build(&st, &undealt);
    apply_ok(&st, 2, "resign");
    assert_true(st.over);
    assert_int_equal(st.resigned, 2);
    assert_string_equal(ranking(&st), "[0 1 3][2]");
    rules_card deck[RULES_NCARDS];
    for (int i = 0; i < RULES_NCARDS; i++)
        deck[i] = (rules_card)i;
    assert_false(rules_chance(&st, RULES_DUE_DEAL, deck, RULES_NCARDS, &e));
    assert_int_equal(e.code, ERR_INVALID);
    assert_string_equal(e.tag, "not_due");
    for (int s = 0; s < 4; s++)
        assert_int_equal(rules_legal(&st, s, legal, RULES_MAX_LEGAL), 0);

    /* the resigner is last even with the lowest total */
    struct setup moon = {"moon, then seat 2 resigns", .finals = true, .hands = MOON4,
                         .script = "high 2; 2:resign"};
    build(&st, &moon);
    assert_string_equal(ranking(&st), "[0 1 3][2]");
    struct rules_result r;
    rules_result(&st, &r);
    assert_true(r.finished);
    assert_int_equal(r.resigned, 2);
    assert_int_equal(r.to_move, 0);

    /* a seat not to move resigns mid-trick; afterwards nothing is legal */
    build(&st, &over_resign);
    assert_true(st.over);
    assert_int_equal(st.resigned, 1);
    assert_int_equal(rules_to_move(&st), 0);
    for (int s = 0; s < 4; s++)
        assert_int_equal(rules_legal(&st, s, legal, RULES_MAX_LEGAL), 0);
    assert_string_equal(ranking(&st), "[0 2 3][1]");
    build(&st, &over_target);
    assert_false(rules_chance(&st, RULES_DUE_DEAL, deck, RULES_NCARDS, &e));
    assert_string_equal(e.tag, "not_due");
}

/* ---- views ----------------------------------------------------------------------------- */

static json_t *view_of(const struct rules_state *st, int seat)
{
    json_t *v = tlog_view_json(st, seat);
    assert_non_null(v);
    return v;
}

static uint64_t json_cards(json_t *array)
{
    uint64_t set = 0;
    size_t i;
    json_t *c;
    json_array_foreach(array, i, c) {
        rules_card card;
        assert_true(json_is_string(c));
        assert_true(rules_card_parse(json_string_value(c), json_string_length(c), &card));
        set |= RULES_BIT(card);
    }
    return set;
}

static json_t *seat_entry(json_t *v, const char *key, int seat)
{
    json_t *e = json_array_get(json_object_get(v, key), (size_t)seat);
    assert_non_null(e);
    assert_int_equal(json_integer_value(json_object_get(e, "seat")), seat);
    return e;
}

static void test_view(void **state)
{
    (void)state;
    struct rules_state st;
    bool ok;

    /* pass phase: own hand, the others as counts; the spectator sees no card */
    build(&st, &fresh);
    for (int s = 0; s < 4; s++) {
        assert_true(tl_view_cards(&st, s, &ok) == st.g.hearts.hands[s]);
        assert_true(ok);
    }
    assert_true(tl_view_cards(&st, -1, &ok) == 0);
    json_t *v = view_of(&st, 0);
    assert_string_equal(json_string_value(json_object_get(v, "phase")), "pass");
    assert_string_equal(json_string_value(json_object_get(v, "pass_direction")), "left");
    assert_true(json_cards(json_object_get(seat_entry(v, "hands", 0), "cards")) ==
                C("2C 3C 4C 2D 3D 4D 5D 2H 3H 5S 6S 7S 8S"));
    assert_null(json_object_get(seat_entry(v, "hands", 1), "cards"));
    assert_int_equal(json_integer_value(json_object_get(seat_entry(v, "hands", 1), "count")), 13);
    json_decref(v);

    /* seat 0 passed: it sees its pass, seat 1 (its receiver) does not yet */
    build(&st, &one_passed);
    v = view_of(&st, 0);
    json_t *p0 = seat_entry(v, "passes", 0);
    assert_true(json_is_true(json_object_get(p0, "submitted")));
    assert_int_equal(json_integer_value(json_object_get(p0, "to")), 1);
    assert_true(json_cards(json_object_get(p0, "cards")) == C("6S 7S 8S"));
    assert_int_equal(json_integer_value(json_object_get(seat_entry(v, "hands", 0), "count")), 10);
    json_decref(v);
    v = view_of(&st, 1);
    assert_null(json_object_get(seat_entry(v, "passes", 0), "cards"));
    json_decref(v);
    assert_false(tl_view_cards(&st, 1, &ok) & C("6S 7S 8S"));
    assert_false(tl_view_cards(&st, -1, &ok) & C("6S 7S 8S"));

    /* after the exchange: the receiver sees what it got, nobody sees other passes */
    build(&st, &exchanged);
    assert_true(tl_view_cards(&st, 1, &ok) == (st.g.hearts.hands[1] | C("9S TS 8H")));
    v = view_of(&st, 1);
    assert_true(json_cards(json_object_get(seat_entry(v, "passes", 0), "cards")) ==
                C("6S 7S 8S"));
    assert_true(json_cards(json_object_get(seat_entry(v, "passes", 1), "cards")) ==
                C("8H 9S TS"));
    assert_null(json_object_get(seat_entry(v, "passes", 2), "cards"));
    assert_null(json_object_get(seat_entry(v, "passes", 3), "cards"));
    json_decref(v);

    /* the hand number: the hand in play, or the last hand between hands and at the end */
    static const struct {
        const struct setup *su;
        int hand;
        const char *phase;
    } numbers[] = {{&undealt, 0, "deal"},    {&fresh, 1, "pass"},     {&trick2, 1, "play"},
                   {&moon_choice, 1, "moon"}, {&deal_due, 1, "deal"},  {&over_target, 1, "over"},
                   {&over_resign, 1, "over"}, {&hold4, 4, "play"}};
    for (size_t i = 0; i < sizeof numbers / sizeof numbers[0]; i++) {
        build(&st, numbers[i].su);
        v = view_of(&st, 0);
        assert_int_equal(json_integer_value(json_object_get(v, "hand_number")), numbers[i].hand);
        assert_string_equal(json_string_value(json_object_get(v, "phase")), numbers[i].phase);
        json_decref(v);
    }

    /* cards on the table are public */
    build(&st, &trick2);
    assert_true((tl_view_cards(&st, -1, &ok) & C("2C 5C TC AC")) == C("2C 5C TC AC"));
    v = view_of(&st, -1);
    json_t *t0 = json_array_get(json_object_get(v, "tricks"), 0);
    assert_int_equal(json_integer_value(json_object_get(t0, "winner")), 3);
    json_decref(v);

    /* the hole: a count while the match runs, the cards once it is over */
    build(&st, &hole3);
    for (int s = -1; s < 3; s++) {
        assert_false(tl_view_cards(&st, s, &ok) & C("2C"));
        v = view_of(&st, s);
        json_t *hole = json_object_get(v, "hole");
        assert_int_equal(json_integer_value(json_object_get(hole, "count")), 1);
        assert_null(json_object_get(hole, "cards"));
        json_decref(v);
    }
    apply_ok(&st, 0, "resign");
    v = view_of(&st, 1);
    assert_true(json_cards(json_object_get(json_object_get(v, "hole"), "cards")) == C("2C"));
    assert_non_null(json_object_get(seat_entry(v, "hands", 0), "cards"));
    json_decref(v);

    /* the hole taken by the shooter stays face down: its points show without it */
    struct setup hole5m = {"5 seats, hole taken", .seats = 5, .finals = true, .moon =
                           RULES_MOON_CHOOSE,
                           .hands = {"2C 3C 4C 5C 6C 7C 8C 9C TC JC",
                                     "QC KC 2D 3D 4D 5D 6D 7D 3H 4H",
                                     "AC AD KD QD JD TD 9D 8D AS KS",
                                     "5H 6H 7H 8H 9H TH JH QH KH AH"},
                           .hole = "QS 2H", .script = "0:play 2C; 1:play QC; 2:play AC; "
                                                      "3:play 5H; 4:play 2S"};
    build(&st, &hole5m);
    assert_int_equal(st.g.hearts.hole_owner, 2);
    assert_true(st.g.hearts.broken);
    v = view_of(&st, 2);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(v, "hole"), "taken_by")),
                     2);
    assert_int_equal(json_integer_value(json_array_get(json_object_get(v, "points_taken"), 2)), 1);
    json_decref(v);
    assert_false(tl_view_cards(&st, 2, &ok) & C("QS 2H"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows),
        cmocka_unit_test(test_deal_sizes),
        cmocka_unit_test(test_pass_cycle),
        cmocka_unit_test(test_exchange_any_order),
        cmocka_unit_test(test_first_lead),
        cmocka_unit_test(test_trick_winner),
        cmocka_unit_test(test_broken_after_trick),
        cmocka_unit_test(test_random_hands),
        cmocka_unit_test(test_moon),
        cmocka_unit_test(test_end_and_ranking),
        cmocka_unit_test(test_resign),
        cmocka_unit_test(test_view),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
