/* test_hearts_property.c - Hearts played at random through the engine, thousands of matches
 * over every seat count, moon option, target and first dealer: no crash, a move is accepted
 * iff it is listed, the points add up hand by hand, the ranking follows the totals, no view
 * shows what its viewer may not see, and every match written as a log replays the same.
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

#define NMATCHES 3000
#define MAX_HANDS 400
#define HEARTS_MASK RULES_SUIT_MASK(RULES_HEARTS_SUIT)
#define QS RULES_CARD(10, RULES_SPADES)

struct counts {
    long matches, hands, moves, deals, legality, views, resigns, logs;
    long moons[3];     /* hands shot by one seat, per moon option */
    long ended_by_target;
};

/* One match being played: the engine's state and what the test tracks on its own. */
struct match {
    struct rules_state st;
    struct tlog *log;
    int n;
    int32_t totals[RULES_MAX_SEATS];               /* summed by the test, hand by hand */
    int32_t hands[MAX_HANDS][RULES_MAX_SEATS];     /* each hand's scores, as the test expects */
    int nhands;
    int deals;
    int moon_choice;   /* the last moon move's arg, or -1 */
    int moon_seat;
};

/* Points in a set of cards (rules.md §1.9), written again here, apart from the engine. */
static int points(uint64_t cards)
{
    return rules_popcount(cards & HEARTS_MASK) + ((cards & RULES_BIT(QS)) ? 13 : 0);
}

/* Cards played to the tricks of the current hand: face up, public. */
static uint64_t played_cards(const struct rules_state *st)
{
    const struct rules_hearts *h = &st->g.hearts;
    int k = h->trick_no * st->nseats + h->ntrick;
    if (k > RULES_NCARDS)
        k = RULES_NCARDS;
    uint64_t m = 0;
    for (int i = 0; i < k; i++)
        m |= RULES_BIT(h->played[i]);
    return m;
}

/* The cards `seat` may play now, worked out again from the state's cards alone
 * (rules.md §1.3-§1.6): the first lead, following suit, no points on the first trick,
 * hearts led only once broken by a heart played to an earlier trick of this hand. */
static uint64_t oracle_plays(const struct rules_state *st, int seat)
{
    const struct rules_hearts *h = &st->g.hearts;
    uint64_t hand = h->hands[seat];
    int start = h->trick_no * st->nseats;
    if (h->ntrick == 0) {
        if (h->trick_no == 0) {
            uint64_t clubs = RULES_SUIT_MASK(RULES_CLUBS) & ~h->hole;
            return hand & (clubs & -clubs);
        }
        bool broken = false;
        for (int i = 0; i < start; i++)
            broken |= RULES_SUIT(h->played[i]) == RULES_HEARTS_SUIT;
        if (!broken && (hand & ~HEARTS_MASK))
            return hand & ~HEARTS_MASK;
        return hand;
    }
    uint64_t follow = hand & RULES_SUIT_MASK(RULES_SUIT(h->played[start]));
    if (follow)
        return follow;
    uint64_t harmless = hand & ~(HEARTS_MASK | RULES_BIT(QS));
    if (h->trick_no == 0 && harmless)
        return harmless;
    return hand;
}

/* The legal list of a seat to move, checked against the oracles: in the play phase
 * exactly the cards of oracle_plays, in the pass phase every 3-card subset of the hand. */
static void check_listed(const struct rules_state *st, int seat, const struct rules_move *legal,
                         int nl)
{
    const struct rules_hearts *h = &st->g.hearts;
    if (h->phase == RULES_HEARTS_PLAY) {
        uint64_t listed = 0;
        for (int i = 0; i < nl; i++) {
            assert_int_equal(legal[i].verb, RULES_PLAY);
            listed |= RULES_BIT(legal[i].card);
        }
        uint64_t want = oracle_plays(st, seat);
        if (listed != want || nl != rules_popcount(want) || !want)
            fail_msg("seat %d (trick %d, card %d): listed plays %#llx, the rules allow %#llx",
                     seat, h->trick_no, h->ntrick, (unsigned long long)listed,
                     (unsigned long long)want);
    } else if (h->phase == RULES_HEARTS_PASS) {
        int k = rules_popcount(h->hands[seat]);
        assert_int_equal(nl, k * (k - 1) * (k - 2) / 6);
        for (int i = 0; i < nl; i++) {
            assert_int_equal(legal[i].verb, RULES_PASS);
            assert_int_equal(rules_popcount(legal[i].cards), 3);
            assert_int_equal(legal[i].cards & ~h->hands[seat], 0);
            assert_true(i == 0 || legal[i].cards != legal[i - 1].cards);
        }
    }
}

/* Right after a deal: hands round-robin from the dealer's left, the rest is the hole. */
static void check_deal(const struct rules_state *st, const rules_card *deck, int hand)
{
    const struct rules_hearts *h = &st->g.hearts;
    int n = st->nseats, size = RULES_NCARDS / n;
    int dealer = (st->first_dealer + hand - 1) % n;
    assert_int_equal(h->dealer, dealer);
    uint64_t want[RULES_MAX_SEATS] = {0}, hole = 0;
    for (int i = 0; i < RULES_NCARDS; i++) {
        if (i < n * size)
            want[(dealer + 1 + i) % n] |= RULES_BIT(deck[i]);
        else
            hole |= RULES_BIT(deck[i]);
    }
    for (int s = 0; s < n; s++)
        assert_int_equal(h->hands[s], want[s]);
    assert_int_equal(h->hole, hole);
    /* Passing cycle (§1.2): 4 and 6 seats left, right, across, hold; 3 and 5 left, right, hold. */
    int cycle = (n == 4 || n == 6) ? 4 : 3;
    int k = (hand - 1) % cycle;
    int dir = k == cycle - 1 ? RULES_PASS_HOLD : k;
    assert_int_equal(h->pass_dir, dir);
    assert_int_equal(h->phase, dir == RULES_PASS_HOLD ? RULES_HEARTS_PLAY : RULES_HEARTS_PASS);
}

/* Right after the last pass: each seat lost its pass and got its giver's. */
static void check_exchange(const struct rules_state *st, const uint64_t *before,
                           const uint64_t *passes)
{
    const struct rules_hearts *h = &st->g.hearts;
    int n = st->nseats;
    assert_int_equal(h->phase, RULES_HEARTS_PLAY);
    for (int s = 0; s < n; s++) {
        int to = h->pass_dir == RULES_PASS_LEFT    ? (s + 1) % n
                 : h->pass_dir == RULES_PASS_RIGHT ? (s + n - 1) % n
                                                   : (s + n / 2) % n;
        uint64_t want = (before[to] & ~passes[to]) | passes[s];
        if (h->hands[to] != want)
            fail_msg("exchange: seat %d should hold %#llx", to, (unsigned long long)want);
    }
}

/* What viewer `v` (-1: spectator) must not see while the match runs (turn-log.md §6),
 * computed from the state struct: the other seats' hands, their submitted passes (the
 * giver sees its own; after the exchange the receiver sees what it received), the hole. */
static uint64_t hidden_from(const struct rules_state *st, int v)
{
    const struct rules_hearts *h = &st->g.hearts;
    if (st->over)
        return 0;
    bool exchanged = h->phase != RULES_HEARTS_PASS;
    uint64_t hidden = h->hole;
    for (int s = 0; s < st->nseats; s++) {
        if (s == v)
            continue;
        hidden |= h->hands[s];
        if (h->passed & (1u << s))
            hidden |= h->passes[s];
    }
    if (v >= 0) {
        hidden &= ~h->passes[v];
        if (exchanged)
            hidden &= ~h->received[v];
    }
    return hidden & ~played_cards(st);
}

static void check_views(const struct rules_state *st, struct counts *c)
{
    for (int v = -1; v < st->nseats; v++) {
        bool well_formed = false;
        uint64_t shown = tl_view_cards(st, v, &well_formed);
        c->views++;
        if (!well_formed)
            fail_msg("view of %d: emitter calls do not nest", v);
        uint64_t leak = shown & hidden_from(st, v);
        if (leak)
            fail_msg("view of %d leaks %d card(s), mask %#llx (phase %d, hand %u)", v,
                     rules_popcount(leak), (unsigned long long)leak, st->g.hearts.phase,
                     st->hands_done + 1);
        /* Not a leak check, but a view that hid a seat's own hand would pass the one above. */
        if (v >= 0 && !st->over) {
            uint64_t own = st->g.hearts.hands[v];
            if (st->g.hearts.phase == RULES_HEARTS_PASS && (st->g.hearts.passed & (1u << v)))
                own |= st->g.hearts.passes[v];
            if ((shown & own) != own)
                fail_msg("view of %d does not show its own cards", v);
        }
    }
}

static void check_legality(const struct rules_state *st, uint64_t *rng, struct counts *c)
{
    const char *why = tl_check_legality(st, rng);
    c->legality++;
    if (why)
        fail_msg("legality (phase %d, hand %u): %s", st->g.hearts.phase, st->hands_done + 1, why);
}

/* The ranking the totals call for (rules.md §0, §1.11), built here independently: places by
 * ascending total, equal totals sharing one, seats ascending inside a place, resigner last. */
static json_t *expected_ranking(const int32_t *totals, int n, int resigned)
{
    json_t *ranking = json_array();
    bool done[RULES_MAX_SEATS] = {false};
    for (;;) {
        int best = -1;
        for (int s = 0; s < n; s++)
            if (!done[s] && s != resigned && (best < 0 || totals[s] < totals[best]))
                best = s;
        if (best < 0)
            break;
        json_t *place = json_array();
        for (int s = 0; s < n; s++) {
            if (!done[s] && s != resigned && totals[s] == totals[best]) {
                done[s] = true;
                json_array_append_new(place, json_integer(s));
            }
        }
        json_array_append_new(ranking, place);
    }
    if (resigned >= 0)
        json_array_append_new(ranking, json_pack("[i]", resigned));
    return ranking;
}

/* The engine's ranking as JSON, after checking it is a partition of the seats. */
static json_t *engine_ranking(const struct rules_state *st)
{
    struct rules_result r;
    rules_result(st, &r);
    assert_int_equal(r.nseats, st->nseats);
    assert_int_equal(r.finished, st->over);
    assert_int_equal(r.resigned, st->resigned);
    json_t *ranking = json_array();
    unsigned seen = 0;
    int i = 0;
    for (int p = 0; p < r.nplaces; p++) {
        json_t *place = json_array();
        assert_true(r.place_size[p] >= 1);
        for (int k = 0; k < r.place_size[p]; k++, i++) {
            assert_true(r.order[i] < st->nseats);
            assert_false(seen & (1u << r.order[i]));
            seen |= 1u << r.order[i];
            json_array_append_new(place, json_integer(r.order[i]));
        }
        json_array_append_new(ranking, place);
    }
    assert_int_equal(i, st->nseats);
    return ranking;
}

static void check_ranking(const struct match *m)
{
    json_t *want = expected_ranking(m->totals, m->n, m->st.resigned);
    json_t *got = engine_ranking(&m->st);
    if (!json_equal(want, got)) {
        char *a = json_dumps(want, JSON_COMPACT), *b = json_dumps(got, JSON_COMPACT);
        fail_msg("ranking %s, expected %s", b, a);
    }
    json_decref(want);
    json_decref(got);
}

/* A hand has just been completed: its scores, the totals and the end-of-match test. */
static void check_hand(struct match *m, struct counts *c)
{
    const struct rules_state *st = &m->st;
    const struct rules_hearts *h = &st->g.hearts;
    int n = m->n;
    int32_t want[RULES_MAX_SEATS];
    int sum = 0, shooter = -1;
    uint64_t all = 0;
    /* Who took what, trick by trick (§1.7-§1.8): the highest card of the led suit wins and
     * leads next; the hole goes to the winner of the first trick holding a heart. */
    uint64_t taken[RULES_MAX_SEATS] = {0};
    int leader = h->leaders[0], hole_owner = -1;
    for (int t = 0; t < h->hand_size; t++) {
        const uint8_t *trick = &h->played[t * n];
        assert_int_equal(h->leaders[t], leader);
        int best = 0;
        uint64_t cards = 0;
        for (int i = 0; i < n; i++) {
            cards |= RULES_BIT(trick[i]);
            if (RULES_SUIT(trick[i]) == RULES_SUIT(trick[0]) &&
                RULES_RANK(trick[i]) > RULES_RANK(trick[best]))
                best = i;
        }
        leader = (leader + best) % n;
        taken[leader] |= cards;
        if ((cards & HEARTS_MASK) && hole_owner < 0) {
            hole_owner = leader;
            taken[leader] |= h->hole;
        }
    }
    for (int s = 0; s < n; s++) {
        if (taken[s] != h->taken[s])
            fail_msg("hand %d: seat %d took %#llx, the tricks say %#llx", m->nhands + 1, s,
                     (unsigned long long)h->taken[s], (unsigned long long)taken[s]);
        want[s] = points(taken[s]);
        sum += want[s];
        if (want[s] == 26)
            shooter = s;
        assert_false(all & h->taken[s]);
        all |= h->taken[s];
    }
    if (sum != 26)
        fail_msg("hand %d: the points taken add up to %d, not 26", m->nhands + 1, sum);
    if (all != RULES_ALL_CARDS)
        fail_msg("hand %d: the taken cards are not the whole deck", m->nhands + 1);
    int expected_sum = 26;
    if (shooter >= 0) {
        int mode = st->moon;
        if (mode == RULES_MOON_CHOOSE) {
            if (m->moon_choice < 0 || m->moon_seat != shooter)
                fail_msg("hand %d: a moon was shot and no choice of the shooter came first",
                         m->nhands + 1);
            mode = m->moon_choice == RULES_MOON_SUBTRACT_ARG ? RULES_MOON_SUBTRACT
                                                             : RULES_MOON_ADD;
        }
        for (int s = 0; s < n; s++)
            want[s] = mode == RULES_MOON_SUBTRACT ? (s == shooter ? -26 : 0)
                                                  : (s == shooter ? 0 : 26);
        expected_sum = mode == RULES_MOON_SUBTRACT ? -26 : 26 * (n - 1);
        c->moons[st->moon]++;
    } else if (m->moon_choice >= 0) {
        fail_msg("hand %d: a moon choice without a shooter", m->nhands + 1);
    }
    int got_sum = 0;
    for (int s = 0; s < n; s++) {
        if (st->hand_scores[s] != want[s])
            fail_msg("hand %d seat %d: scored %d, expected %d", m->nhands + 1, s,
                     st->hand_scores[s], want[s]);
        got_sum += st->hand_scores[s];
    }
    assert_int_equal(got_sum, expected_sum);

    assert_true(m->nhands < MAX_HANDS);
    memcpy(m->hands[m->nhands++], want, sizeof m->hands[0]);
    int32_t top = INT32_MIN;
    for (int s = 0; s < n; s++) {
        m->totals[s] += want[s];
        if (st->totals[s] != m->totals[s])
            fail_msg("seat %d: total %d, the hands add up to %d", s, st->totals[s], m->totals[s]);
        if (m->totals[s] > top)
            top = m->totals[s];
    }
    assert_int_equal(st->hands_done, (uint32_t)m->nhands);
    /* The match ends after exactly the first hand that brings a total to the target. */
    assert_int_equal(st->over, top >= st->target);
    if (st->over)
        c->ended_by_target++;
    else
        assert_int_equal(rules_due(st), RULES_DUE_DEAL);
    m->moon_choice = -1;
    c->hands++;
}

/* Append `m` to the log as move text, now and then written leniently (turn-log.md §1). */
static void log_move(struct match *m, uint64_t *rng, int seat, const struct rules_move *mv)
{
    char text[RULES_MOVE_TEXT_MAX + 8];
    rules_move_format(mv, text + 2, RULES_MOVE_TEXT_MAX);
    char *t = text + 2;
    if (tl_below(rng, 8) == 0) {
        for (char *p = t; *p; p++)
            if (*p >= 'A' && *p <= 'Z')
                *p = (char)(*p - 'A' + 'a');
        text[0] = ' ';
        text[1] = ' ';
        strcat(text, "\n");
        t = text;
    }
    struct err e;
    assert_true(tlog_append_move(m->log, seat, t, tl_below(rng, 16) == 0, &e));
}

/* The policy: uniform at random, except that in some matches one seat tries to take every
 * trick and the others duck, so that moons get shot often enough to be tested. */
static int choose(uint64_t *rng, const struct rules_state *st, int seat,
                  const struct rules_move *legal, int nl, int greedy)
{
    if (greedy < 0 || legal[0].verb != RULES_PLAY)
        return (int)tl_below(rng, (uint32_t)nl);
    int best = 0;
    for (int i = 1; i < nl; i++) {
        int r = RULES_RANK(legal[i].card), b = RULES_RANK(legal[best].card);
        if (seat == greedy ? r > b : r < b)
            best = i;
    }
    return best;
}

static void replay_log(struct match *m, struct counts *c)
{
    /* The test's own claim of the result goes in the log, so replay checks it too. */
    json_t *totals = json_array();
    for (int s = 0; s < m->n; s++)
        json_array_append_new(totals, json_integer(m->totals[s]));
    json_t *claim = json_pack("{s:b, s:o, s:o}", "finished", 1, "totals", totals, "ranking",
                              expected_ranking(m->totals, m->n, m->st.resigned));
    json_t *j = tlog_to_json(m->log, claim);
    json_decref(claim);
    char *text = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    assert_non_null(text);

    struct tlog_failure f;
    struct tlog *parsed = tlog_parse(text, strlen(text), &f);
    if (!parsed)
        fail_msg("the log does not parse: %s", f.message);
    free(text);
    assert_int_equal(parsed->nevents, m->log->nevents);
    struct tlog_replay r;
    if (!tlog_replay(parsed, false, &r, &f))
        fail_msg("the log does not replay: event %ld: %s", f.index, f.message);
    assert_true(r.state.over);
    assert_int_equal(r.state.resigned, m->st.resigned);
    assert_int_equal(r.nhands, (size_t)m->nhands);
    for (int h = 0; h < m->nhands; h++)
        assert_memory_equal(r.hands[h], m->hands[h], (size_t)m->n * sizeof(int32_t));
    assert_memory_equal(r.state.totals, m->totals, (size_t)m->n * sizeof(int32_t));
    json_t *want = expected_ranking(m->totals, m->n, m->st.resigned);
    json_t *got = engine_ranking(&r.state);
    assert_true(json_equal(want, got));
    json_decref(want);
    json_decref(got);
    /* Replaying the log lands on the very state the match reached. */
    assert_memory_equal(&r.state, &m->st, sizeof r.state);
    tlog_replay_finish(&r);
    tlog_destroy(parsed);
    c->logs++;
}

static void play_match(uint64_t *rng, int index, struct counts *c)
{
    static const int64_t targets[] = {1, 2, 10, 26, 27, 40, 60, 100};
    static struct match m;
    static struct rules_move legal[RULES_MAX_LEGAL];
    struct rules_options o;
    rules_options_default(RULES_GAME_HEARTS, &o);
    o.seats = 3 + index % 4;
    o.moon = (index / 4) % 3;
    o.target = targets[tl_below(rng, sizeof targets / sizeof targets[0])];
    o.first_dealer = (int)tl_below(rng, (uint32_t)o.seats);
    memset(&m, 0, sizeof m);
    m.n = o.seats;
    m.moon_choice = -1;
    struct err e;
    assert_true(rules_init(&m.st, RULES_GAME_HEARTS, &o, &e));
    m.log = tlog_create(RULES_GAME_HEARTS, &o, &e);
    assert_non_null(m.log);

    int greedy = tl_below(rng, 3) == 0 ? (int)tl_below(rng, (uint32_t)m.n) : -1;
    long resign_at = tl_below(rng, 20) == 0 ? (long)tl_below(rng, 400) : -1;
    /* The legality property is costly (every candidate against the legal list), so it runs
     * on a sample of steps: every pass phase once per match, play steps now and then. */
    bool checked_pass = false;
    for (long step = 0; !m.st.over; step++) {
        check_views(&m.st, c);
        int phase = m.st.g.hearts.phase;
        if (phase == RULES_HEARTS_PASS ? !checked_pass && tl_below(rng, 4) == 0
                                       : tl_below(rng, 24) == 0 || phase == RULES_HEARTS_MOON) {
            check_legality(&m.st, rng, c);
            checked_pass |= phase == RULES_HEARTS_PASS;
        }

        if (step == resign_at) {
            int seat = (int)tl_below(rng, (uint32_t)m.n);
            assert_true(tl_apply(&m.st, seat, "resign", &e));
            assert_true(tlog_append_move(m.log, seat, "resign", false, &e));
            assert_true(m.st.over);
            assert_int_equal(m.st.resigned, seat);
            assert_int_equal(m.st.hands_done, (uint32_t)m.nhands);
            c->resigns++;
            c->moves++;
            break;
        }
        if (rules_due(&m.st) == RULES_DUE_DEAL) {
            assert_int_equal(rules_to_move(&m.st), 0);
            assert_int_equal(m.deals, m.nhands);
            rules_card deck[RULES_NCARDS];
            tl_random_deck(rng, deck);
            if (!rules_chance(&m.st, RULES_DUE_DEAL, deck, RULES_NCARDS, &e))
                fail_msg("deal refused: %s", e.msg);
            check_deal(&m.st, deck, m.deals + 1);
            assert_true(tlog_append_chance(m.log, TLOG_DEAL, deck, RULES_NCARDS, &e));
            m.deals++;
            c->deals++;
            continue;
        }

        uint32_t to_move = rules_to_move(&m.st);
        assert_true(to_move != 0);
        int seat;
        do
            seat = (int)tl_below(rng, (uint32_t)m.n);
        while (!(to_move & (1u << seat)));
        int nl = rules_legal(&m.st, seat, legal, RULES_MAX_LEGAL);
        assert_true(nl > 0 && nl <= RULES_MAX_LEGAL);
        check_listed(&m.st, seat, legal, nl);
        const struct rules_move *mv = &legal[choose(rng, &m.st, seat, legal, nl, greedy)];
        int in_hands = 0;
        for (int s = 0; s < m.n; s++)
            in_hands += rules_popcount(m.st.g.hearts.hands[s]);
        if (mv->verb == RULES_MOON) {
            m.moon_choice = mv->arg;
            m.moon_seat = seat;
        }
        uint64_t before[RULES_MAX_SEATS], passes[RULES_MAX_SEATS];
        memcpy(before, m.st.g.hearts.hands, sizeof m.st.g.hearts.hands);
        memcpy(passes, m.st.g.hearts.passes, sizeof m.st.g.hearts.passes);
        passes[seat] = mv->cards;
        bool last_pass = phase == RULES_HEARTS_PASS &&
                         rules_popcount(m.st.g.hearts.passed) == m.n - 1;
        if (!rules_apply(&m.st, seat, mv, &e))
            fail_msg("a listed move was refused: %s", e.msg);
        if (last_pass)
            check_exchange(&m.st, before, passes);
        log_move(&m, rng, seat, mv);
        c->moves++;

        bool hand_over = (phase == RULES_HEARTS_PLAY && in_hands == 1) ||
                         phase == RULES_HEARTS_MOON;
        if (!hand_over) {
            assert_int_equal(m.st.hands_done, (uint32_t)m.nhands);
        } else if (m.st.hands_done == (uint32_t)m.nhands) {
            /* The last card went and no hand was counted: only a moon choice may be due. */
            assert_int_equal(m.st.moon, RULES_MOON_CHOOSE);
            assert_int_equal(m.st.g.hearts.phase, RULES_HEARTS_MOON);
            int shooter = m.st.g.hearts.shooter;
            assert_int_equal(points(m.st.g.hearts.taken[shooter]), 26);
            assert_int_equal(rules_to_move(&m.st), 1u << shooter);
        } else {
            check_hand(&m, c);
        }
    }

    /* The match is over: the top total reached the target (or a seat resigned), the
     * ranking follows the totals, nobody is to move and every move is refused. */
    assert_true(m.st.over);
    int32_t top = INT32_MIN;
    for (int s = 0; s < m.n; s++)
        top = m.totals[s] > top ? m.totals[s] : top;
    if (m.st.resigned < 0)
        assert_true(top >= m.st.target);
    assert_memory_equal(m.st.totals, m.totals, (size_t)m.n * sizeof(int32_t));
    assert_int_equal(rules_to_move(&m.st), 0);
    check_ranking(&m);
    check_views(&m.st, c);
    check_legality(&m.st, rng, c);
    replay_log(&m, c);
    tlog_destroy(m.log);
    m.log = NULL;
    c->matches++;
}

static void test_random_matches(void **state)
{
    (void)state;
    uint64_t rng = UINT64_C(0x4865617274730001);
    struct counts c = {0};
    for (int i = 0; i < NMATCHES; i++)
        play_match(&rng, i, &c);
    printf("hearts property: %ld matches (%ld resigned, %ld ended at the target), %ld hands, "
           "%ld deals, %ld moves; %ld legality checks, %ld views; moons add/subtract/choose "
           "%ld/%ld/%ld; %ld logs replayed\n",
           c.matches, c.resigns, c.ended_by_target, c.hands, c.deals, c.moves, c.legality,
           c.views, c.moons[0], c.moons[1], c.moons[2], c.logs);
    assert_int_equal(c.matches, NMATCHES);
    assert_int_equal(c.logs, NMATCHES);
    /* Every path was taken: moons under each option, resignations, ends at the target. */
    assert_true(c.moons[RULES_MOON_ADD] > 0);
    assert_true(c.moons[RULES_MOON_SUBTRACT] > 0);
    assert_true(c.moons[RULES_MOON_CHOOSE] > 0);
    assert_true(c.resigns > 0);
    assert_true(c.ended_by_target > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_matches),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
