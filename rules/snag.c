/* snag.c - Snag for two seats (rules.md §3): five hand cards each and a bar of five face-up
 * cards; each trick is a bar card led from the leader's end plus one hand card from each
 * seat, the highest rank wins (ties to the last played), the winner and then the loser take
 * a card, the last card goes to the winner; the longest uncancelled suit scores L(L+1)/2.
 */
#include "rules-int.h"

#include <string.h>

#define OTHER(s) (1 - (s))

static void snag_init(struct rules_state *st)
{
    struct rules_snag *g = &st->g.snag;
    g->phase = RULES_SNAG_DEAL;
    g->dealer = st->first_dealer;
    memset(g->bar, RULES_NO_CARD, sizeof g->bar);
    memset(g->trick, RULES_NO_CARD, sizeof g->trick);
    memset(g->takes, RULES_NO_CARD, sizeof g->takes);
}

static enum rules_due snag_due(const struct rules_state *st)
{
    return st->g.snag.phase == RULES_SNAG_DEAL ? RULES_DUE_DEAL : RULES_DUE_NONE;
}

static void snag_chance(struct rules_state *st, const rules_card *cards, int ncards)
{
    struct rules_snag *g = &st->g.snag;
    int hand = (int)st->hands_done + 1;
    memset(g, 0, sizeof *g);
    g->dealer = (uint8_t)((st->first_dealer + hand - 1) % 2);
    memset(g->trick, RULES_NO_CARD, sizeof g->trick);
    memset(g->takes, RULES_NO_CARD, sizeof g->takes);
    for (int i = 0; i < ncards; i++) {
        if (i < 10)
            g->hands[(g->dealer + 1 + i) % 2] |= RULES_BIT(cards[i]);
        else if (i < 10 + RULES_SNAG_BAR)
            g->bar[i - 10] = cards[i];
        else
            g->unused |= RULES_BIT(cards[i]);
    }
    g->leader = (uint8_t)OTHER(g->dealer);
    g->phase = RULES_SNAG_LEAD;
}

/* The bar cards `seat` may lead: the (at most) two remaining ones nearest its own end; the
 * non-dealer's end is slot 1, the dealer's slot 5. */
static uint64_t reachable_bar(const struct rules_snag *g, int seat)
{
    uint64_t out = 0;
    int found = 0;
    bool from_low = seat != g->dealer;
    for (int k = 0; k < RULES_SNAG_BAR && found < 2; k++) {
        int slot = from_low ? k : RULES_SNAG_BAR - 1 - k;
        if (g->bar[slot] != RULES_NO_CARD) {
            out |= RULES_BIT(g->bar[slot]);
            found++;
        }
    }
    return out;
}

/* The seat that plays the next hand card (phase PLAY). */
static int player_of(const struct rules_snag *g)
{
    return g->ntrick == 1 ? OTHER(g->leader) : g->leader;
}

/* The seat that takes next (phase TAKE): the winner, then the loser. */
static int taker_of(const struct rules_snag *g)
{
    return g->ntaken == 0 ? g->winner : OTHER(g->winner);
}

/* The hand cards `seat` may play now: those of the bar card's suit, if it holds any. */
static uint64_t follow_mask(const struct rules_snag *g, int seat)
{
    uint64_t follow = g->hands[seat] & RULES_SUIT_MASK(RULES_SUIT(g->trick[0]));
    return follow ? follow : g->hands[seat];
}

/* The cards of the current trick not taken yet. */
static uint64_t on_table(const struct rules_snag *g)
{
    uint64_t cards = 0;
    for (int i = 0; i < g->ntrick; i++)
        cards |= RULES_BIT(g->trick[i]);
    for (int i = 0; i < g->ntaken; i++)
        cards &= ~RULES_BIT(g->takes[i]);
    return cards;
}

/* Highest rank wins regardless of suit; among equal ranks the last played; the bar card
 * counts as the leader's. Returns the index of the winning card (0 bar, 1 second, 2 third). */
static int winning_card(const uint8_t trick[3])
{
    int best = 0;
    for (int i = 1; i < 3; i++)
        if (RULES_RANK(trick[i]) >= RULES_RANK(trick[best]))
            best = i;
    return best;
}

static int seat_of_card(const struct rules_snag *g, int index)
{
    return index == 1 ? OTHER(g->leader) : g->leader;
}

/* §3.6: suit counts sorted longest first, equal first entries cancel pairwise, then the
 * seat with the larger first entry (or the only non-empty list) scores L(L+1)/2. */
static void score_hand(const struct rules_snag *g, int32_t scores[2])
{
    int list[2][4], len[2] = {0, 0};
    for (int s = 0; s < 2; s++) {
        for (int suit = 0; suit < 4; suit++) {
            int c = rules_popcount(g->taken[s] & RULES_SUIT_MASK(suit));
            if (c == 0)
                continue;
            int j = len[s]++;
            while (j > 0 && list[s][j - 1] < c) {
                list[s][j] = list[s][j - 1];
                j--;
            }
            list[s][j] = c;
        }
    }
    int a = 0, b = 0;
    while (a < len[0] && b < len[1] && list[0][a] == list[1][b])
        a++, b++;
    scores[0] = scores[1] = 0;
    int la = a < len[0] ? list[0][a] : 0, lb = b < len[1] ? list[1][b] : 0;
    if (la > lb)
        scores[0] = la * (la + 1) / 2;
    else if (lb > la)
        scores[1] = lb * (lb + 1) / 2;
}

static void end_hand(struct rules_state *st)
{
    struct rules_snag *g = &st->g.snag;
    int32_t scores[RULES_MAX_SEATS] = {0};
    score_hand(g, scores);
    rules_hand_done(st, scores);
    if (rules_target_reached(st)) {
        st->over = true;
        g->phase = RULES_SNAG_OVER;
    } else {
        g->phase = RULES_SNAG_DEAL;
        g->dealer = (uint8_t)((st->first_dealer + st->hands_done) % 2);
    }
}

static bool not_now(struct err *e, const char *what)
{
    return err_set(e, ERR_ILLEGAL, "wrong_phase", "%s", what);
}

static const char *phase_hint(const struct rules_snag *g)
{
    switch (g->phase) {
    case RULES_SNAG_LEAD: return "the trick starts with a bar card (lead)";
    case RULES_SNAG_PLAY: return "a hand card is due (play)";
    case RULES_SNAG_TAKE: return "the trick is complete: its cards are taken (take)";
    default: return "no move now";
    }
}

static bool apply_lead(struct rules_state *st, int seat, const struct rules_move *m,
                       struct err *e)
{
    struct rules_snag *g = &st->g.snag;
    char c[3];
    rules_card_format(m->card, c);
    if (g->phase != RULES_SNAG_LEAD)
        return not_now(e, phase_hint(g));
    if (seat != g->leader)
        return err_set(e, ERR_ILLEGAL, "not_your_turn", "seat %d leads this trick", g->leader);
    int slot = -1;
    for (int k = 0; k < RULES_SNAG_BAR; k++)
        if (g->bar[k] == m->card)
            slot = k;
    if (slot < 0)
        return err_set(e, ERR_ILLEGAL, "not_on_bar", "%s is not on the bar", c);
    if (!(reachable_bar(g, seat) & RULES_BIT(m->card)))
        return err_set(e, ERR_ILLEGAL, "bar_out_of_reach",
                       "%s (slot %d) is not one of the two bar cards nearest seat %d's end "
                       "(slot %d)",
                       c, slot + 1, seat, seat == g->dealer ? RULES_SNAG_BAR : 1);
    g->bar[slot] = RULES_NO_CARD;
    g->trick[0] = m->card;
    g->ntrick = 1;
    g->phase = RULES_SNAG_PLAY;
    return true;
}

static bool apply_play(struct rules_state *st, int seat, const struct rules_move *m,
                       struct err *e)
{
    struct rules_snag *g = &st->g.snag;
    char c[3], f[3];
    rules_card_format(m->card, c);
    if (g->phase != RULES_SNAG_PLAY)
        return not_now(e, phase_hint(g));
    int turn = player_of(g);
    if (seat != turn)
        return err_set(e, ERR_ILLEGAL, "not_your_turn", "it is seat %d's turn to play", turn);
    if (!(g->hands[seat] & RULES_BIT(m->card)))
        return err_set(e, ERR_ILLEGAL, "not_in_hand", "%s is not in seat %d's hand", c, seat);
    if (!(follow_mask(g, seat) & RULES_BIT(m->card))) {
        rules_card_format(g->trick[0], f);
        return err_set(e, ERR_ILLEGAL, "must_follow_suit",
                       "%s: must follow the suit of the bar card %s", c, f);
    }
    g->hands[seat] &= ~RULES_BIT(m->card);
    g->trick[g->ntrick++] = m->card;
    if (g->ntrick == 3) {
        g->winner = (uint8_t)seat_of_card(g, winning_card(g->trick));
        g->ntaken = 0;
        g->phase = RULES_SNAG_TAKE;
    }
    return true;
}

static bool apply_take(struct rules_state *st, int seat, const struct rules_move *m,
                       struct err *e)
{
    struct rules_snag *g = &st->g.snag;
    char c[3];
    rules_card_format(m->card, c);
    if (g->phase != RULES_SNAG_TAKE)
        return not_now(e, phase_hint(g));
    int turn = taker_of(g);
    if (seat != turn)
        return err_set(e, ERR_ILLEGAL, "not_your_turn", "seat %d takes now (%s)", turn,
                       g->ntaken == 0 ? "the trick's winner first" : "the loser second");
    if (!(on_table(g) & RULES_BIT(m->card)))
        return err_set(e, ERR_ILLEGAL, "not_in_trick", "%s is not a card left in the trick", c);
    g->taken[seat] |= RULES_BIT(m->card);
    g->takes[g->ntaken++] = m->card;
    if (g->ntaken < 2)
        return true;
    /* The winner receives the last card; the winner leads next. */
    g->taken[g->winner] |= on_table(g);
    g->trick_no++;
    g->leader = g->winner;
    if (g->trick_no == RULES_SNAG_BAR) {
        end_hand(st);
        return true;
    }
    g->ntrick = 0;
    g->ntaken = 0;
    memset(g->trick, RULES_NO_CARD, sizeof g->trick);
    memset(g->takes, RULES_NO_CARD, sizeof g->takes);
    g->phase = RULES_SNAG_LEAD;
    return true;
}

static bool snag_apply(struct rules_state *st, int seat, const struct rules_move *m,
                       struct err *e)
{
    bool carries_card = m->verb == RULES_LEAD || m->verb == RULES_PLAY || m->verb == RULES_TAKE;
    /* The parser never makes these, but a move built in memory may: no mask shift past 52. */
    if (carries_card && m->card >= RULES_NCARDS)
        return err_set(e, ERR_ILLEGAL, "bad_card", "'%s' must name one card of the deck",
                       rules_verb_name((enum rules_verb)m->verb));
    switch (m->verb) {
    case RULES_LEAD: return apply_lead(st, seat, m, e);
    case RULES_PLAY: return apply_play(st, seat, m, e);
    case RULES_TAKE: return apply_take(st, seat, m, e);
    default:
        return err_set(e, ERR_ILLEGAL, "not_a_snag_move", "'%s' is not a move of snag",
                       rules_verb_name((enum rules_verb)m->verb));
    }
}

static uint32_t snag_to_move(const struct rules_state *st)
{
    const struct rules_snag *g = &st->g.snag;
    switch (g->phase) {
    case RULES_SNAG_LEAD: return 1u << g->leader;
    case RULES_SNAG_PLAY: return 1u << player_of(g);
    case RULES_SNAG_TAKE: return 1u << taker_of(g);
    default: return 0;
    }
}

static int snag_legal(const struct rules_state *st, int seat, struct rules_move *out, int max)
{
    const struct rules_snag *g = &st->g.snag;
    if (!(snag_to_move(st) & (1u << seat)))
        return 0;
    struct rules_move m = {.card = RULES_NO_CARD};
    uint64_t cards;
    switch (g->phase) {
    case RULES_SNAG_LEAD:
        m.verb = RULES_LEAD;
        cards = reachable_bar(g, seat);
        break;
    case RULES_SNAG_PLAY:
        m.verb = RULES_PLAY;
        cards = follow_mask(g, seat);
        break;
    case RULES_SNAG_TAKE:
        m.verb = RULES_TAKE;
        cards = on_table(g);
        break;
    default:
        return 0;
    }
    int k = 0;
    for (; cards; cards &= cards - 1) {
        m.card = (rules_card)rules_lowest(cards);
        if (k < max)
            out[k] = m;
        k++;
    }
    return k;
}

static const char *phase_name(const struct rules_state *st)
{
    if (st->over)
        return "over";
    switch (st->g.snag.phase) {
    case RULES_SNAG_DEAL: return "deal";
    case RULES_SNAG_LEAD: return "lead";
    case RULES_SNAG_PLAY: return "play";
    case RULES_SNAG_TAKE: return "take";
    default: return "over";
    }
}

static void emit_seat_or_null(const struct rules_emit *em, void *ctx, const char *key, int seat)
{
    if (seat < 0)
        em->null(ctx, key);
    else
        em->integer(ctx, key, seat);
}

/* Everything on the table is face up: the bar, the trick, and the cards taken from a trick
 * (both seats saw them before they were laid face down). Hands and the unused cards are
 * hidden until the match is over. */
static void snag_view(const struct rules_state *st, int seat, const struct rules_emit *em,
                      void *ctx)
{
    const struct rules_snag *g = &st->g.snag;
    bool all = st->over || seat == RULES_SEAT_ALL; /* over: the whole log is public */
    bool in_hand = g->phase == RULES_SNAG_LEAD || g->phase == RULES_SNAG_PLAY ||
                   g->phase == RULES_SNAG_TAKE;

    em->string(ctx, "phase", phase_name(st));
    em->integer(ctx, "hand_number", st->hands_done + (in_hand ? 1 : 0));
    em->integer(ctx, "dealer", g->dealer);
    emit_seat_or_null(em, ctx, "leader", in_hand ? g->leader : -1);

    em->array_begin(ctx, "bar");
    for (int k = 0; k < RULES_SNAG_BAR; k++) {
        if (g->bar[k] == RULES_NO_CARD)
            continue;
        em->object_begin(ctx, NULL);
        em->integer(ctx, "slot", k + 1);
        em->card(ctx, "card", g->bar[k]);
        em->object_end(ctx);
    }
    em->array_end(ctx);

    em->array_begin(ctx, "hands");
    for (int s = 0; s < 2; s++) {
        em->object_begin(ctx, NULL);
        em->integer(ctx, "seat", s);
        em->integer(ctx, "count", rules_popcount(g->hands[s]));
        if (s == seat || all)
            rules_emit_cards(em, ctx, "cards", g->hands[s]);
        em->object_end(ctx);
    }
    em->array_end(ctx);

    if (!in_hand) {
        em->null(ctx, "trick");
    } else {
        em->object_begin(ctx, "trick");
        em->integer(ctx, "number", g->trick_no + 1);
        em->array_begin(ctx, "cards");
        for (int i = 0; i < g->ntrick; i++) {
            em->object_begin(ctx, NULL);
            em->integer(ctx, "seat", seat_of_card(g, i));
            em->string(ctx, "from", i == 0 ? "bar" : "hand");
            em->card(ctx, "card", g->trick[i]);
            em->object_end(ctx);
        }
        em->array_end(ctx);
        emit_seat_or_null(em, ctx, "winner", g->ntrick == 3 ? g->winner : -1);
        em->array_begin(ctx, "takes");
        for (int i = 0; i < g->ntaken; i++) {
            em->object_begin(ctx, NULL);
            em->integer(ctx, "seat", i == 0 ? g->winner : OTHER(g->winner));
            em->card(ctx, "card", g->takes[i]);
            em->object_end(ctx);
        }
        em->array_end(ctx);
        rules_emit_cards(em, ctx, "on_table", on_table(g));
        em->object_end(ctx);
    }

    em->array_begin(ctx, "taken");
    for (int s = 0; s < 2; s++)
        rules_emit_cards(em, ctx, NULL, g->taken[s]);
    em->array_end(ctx);

    em->object_begin(ctx, "unused");
    em->integer(ctx, "count", rules_popcount(g->unused));
    if (all)
        rules_emit_cards(em, ctx, "cards", g->unused);
    em->object_end(ctx);

    rules_emit_ints(em, ctx, "totals", st->totals, 2);
    rules_emit_ints(em, ctx, "last_hand_scores", st->hand_scores, 2);
}

const struct rules_game_ops rules_snag_ops = {
    .name = "snag",
    .min_seats = 2,
    .max_seats = 2,
    .default_seats = 2,
    .default_target = 50,
    .has_moon = false,
    .low_wins = false,
    .init = snag_init,
    .due = snag_due,
    .shuffle_source = NULL,
    .chance = snag_chance,
    .apply = snag_apply,
    .legal = snag_legal,
    .to_move = snag_to_move,
    .view = snag_view,
};
