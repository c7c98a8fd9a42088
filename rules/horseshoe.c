/* horseshoe.c - Horseshoe for two seats (rules.md §2): hands of six and four two-card
 * board columns each, four-card tricks played L, O, O, L, pairs beating suit, seven
 * tricks a hand scored 2/3/5/7 for the seat with more, first to the target wins.
 */
#include "rules-int.h"

#include <string.h>

#define TRICKS 7
#define TRICK_CARDS 4

/* Points for the seat with more tricks, by its trick count (fewer than 4 cannot happen). */
static const int32_t score_for_tricks[TRICKS + 1] = {0, 0, 0, 0, 2, 3, 5, 7};

static void horseshoe_init(struct rules_state *st)
{
    struct rules_horseshoe *h = &st->g.horseshoe;
    h->phase = RULES_HORSESHOE_DEAL;
    h->dealer = st->first_dealer;
    h->leader = RULES_NO_CARD;
}

static enum rules_due horseshoe_due(const struct rules_state *st)
{
    return st->g.horseshoe.phase == RULES_HORSESHOE_DEAL ? RULES_DUE_DEAL : RULES_DUE_NONE;
}

/* The face-up tops of a seat's non-empty columns. */
static uint64_t board_up(const struct rules_horseshoe *h, int seat)
{
    uint64_t m = 0;
    for (int c = 0; c < 4; c++)
        if (h->height[seat][c])
            m |= RULES_BIT(h->column[seat][c][h->height[seat][c] - 1]);
    return m;
}

/* A seat's available cards (rule 2): its hand and the tops of its columns. */
static uint64_t available(const struct rules_horseshoe *h, int seat)
{
    return h->hands[seat] | board_up(h, seat);
}

/* Whose card is due: L plays cards 1 and 4, the other seat cards 2 and 3. */
static int current_seat(const struct rules_horseshoe *h)
{
    return (h->ntrick == 0 || h->ntrick == 3) ? h->leader : 1 - h->leader;
}

static void horseshoe_chance(struct rules_state *st, const rules_card *cards, int ncards)
{
    struct rules_horseshoe *h = &st->g.horseshoe;
    (void)ncards;
    memset(h, 0, sizeof *h);
    h->dealer = (uint8_t)((st->first_dealer + st->hands_done) % 2);
    int nd = 1 - h->dealer;
    for (int i = 0; i < 12; i++)
        h->hands[(h->dealer + 1 + i) % 2] |= RULES_BIT(cards[i]);
    for (int c = 0; c < 4; c++) {
        h->column[nd][c][0] = cards[12 + c];
        h->column[h->dealer][c][0] = cards[16 + c];
        h->column[nd][c][1] = cards[20 + c];
        h->column[h->dealer][c][1] = cards[24 + c];
        h->height[0][c] = h->height[1][c] = 2;
    }
    for (int i = 28; i < RULES_NCARDS; i++)
        h->unused |= RULES_BIT(cards[i]);
    h->phase = RULES_HORSESHOE_PLAY;
    h->leader = (uint8_t)nd;
    h->leaders[0] = (uint8_t)nd;
}

/* The card whose suit the current card must follow, or RULES_NO_CARD when it is free
 * (cards 1 and 3). */
static rules_card suit_card(const struct rules_horseshoe *h)
{
    const uint8_t *trick = &h->played[h->trick_no * TRICK_CARDS];
    if (h->ntrick == 1 || h->ntrick == 3)
        return trick[h->ntrick - 1];
    return RULES_NO_CARD;
}

/* The cards `seat` may play now: none unless its card is due. */
static uint64_t legal_mask(const struct rules_state *st, int seat)
{
    const struct rules_horseshoe *h = &st->g.horseshoe;
    if (h->phase != RULES_HORSESHOE_PLAY || seat != current_seat(h))
        return 0;
    uint64_t avail = available(h, seat);
    rules_card to = suit_card(h);
    if (to != RULES_NO_CARD) {
        uint64_t follow = avail & RULES_SUIT_MASK(RULES_SUIT(to));
        if (follow)
            return follow;
    }
    return avail;
}

/* The seat that wins a complete trick (rule 4). */
static int trick_winner(const uint8_t *t, int leader)
{
    int other = 1 - leader;
    bool lpair = RULES_RANK(t[0]) == RULES_RANK(t[3]);
    bool opair = RULES_RANK(t[1]) == RULES_RANK(t[2]);
    if (lpair && opair)
        return RULES_RANK(t[1]) > RULES_RANK(t[0]) ? other : leader;
    if (lpair)
        return leader;
    if (opair)
        return other;
    int best = 0;
    for (int i = 1; i < TRICK_CARDS; i++)
        if (RULES_SUIT(t[i]) == RULES_SUIT(t[0]) && RULES_RANK(t[i]) > RULES_RANK(t[best]))
            best = i;
    return (best == 0 || best == 3) ? leader : other;
}

static void end_hand(struct rules_state *st)
{
    struct rules_horseshoe *h = &st->g.horseshoe;
    int32_t scores[RULES_MAX_SEATS] = {0};
    int more = h->won[0] > h->won[1] ? 0 : 1;
    scores[more] = score_for_tricks[h->won[more]];
    rules_hand_done(st, scores);
    if (rules_target_reached(st)) {
        st->over = true;
        h->phase = RULES_HORSESHOE_OVER;
    } else {
        h->phase = RULES_HORSESHOE_DEAL;
        h->dealer = (uint8_t)((st->first_dealer + st->hands_done) % 2);
    }
}

static void complete_trick(struct rules_state *st)
{
    struct rules_horseshoe *h = &st->g.horseshoe;
    int winner = trick_winner(&h->played[h->trick_no * TRICK_CARDS], h->leader);
    h->won[winner]++;
    h->winners[h->trick_no] = (uint8_t)winner;
    h->trick_no++;
    h->ntrick = 0;
    h->leader = (uint8_t)winner;
    if (h->trick_no == TRICKS)
        end_hand(st);
    else
        h->leaders[h->trick_no] = (uint8_t)winner;
}

/* Why `card`, which `seat` may not play now, is refused. The reason names only what the
 * seat may see: an own face-down card, the other hand and the unused cards all get the
 * same words, so a refusal never tells where a hidden card is. */
static bool refuse_play(const struct rules_state *st, int seat, rules_card card, struct err *e)
{
    const struct rules_horseshoe *h = &st->g.horseshoe;
    char c[3], f[3];
    rules_card_format(card, c);
    if (!(available(h, seat) & RULES_BIT(card))) {
        if (board_up(h, 1 - seat) & RULES_BIT(card))
            return err_set(e, ERR_ILLEGAL, "not_available", "%s is on seat %d's board, not yours",
                           c, 1 - seat);
        for (int i = 0; i < h->trick_no * TRICK_CARDS + h->ntrick; i++)
            if (h->played[i] == card)
                return err_set(e, ERR_ILLEGAL, "not_available", "%s has been played already", c);
        return err_set(e, ERR_ILLEGAL, "not_available",
                       "%s is neither in seat %d's hand nor face up on its board", c, seat);
    }
    rules_card to = suit_card(h);
    rules_card_format(to, f);
    return err_set(e, ERR_ILLEGAL, "must_follow_suit",
                   "%s: card %d must follow the suit of %s with an available card", c,
                   h->ntrick + 1, f);
}

static bool horseshoe_apply(struct rules_state *st, int seat, const struct rules_move *m,
                            struct err *e)
{
    struct rules_horseshoe *h = &st->g.horseshoe;
    if (m->verb != RULES_PLAY)
        return err_set(e, ERR_ILLEGAL, "not_a_horseshoe_move",
                       "'%s' is not a move of horseshoe (only play and resign are)",
                       rules_verb_name((enum rules_verb)m->verb));
    int turn = current_seat(h);
    if (seat != turn)
        return err_set(e, ERR_ILLEGAL, "not_your_turn",
                       "it is seat %d's turn to play card %d of the trick", turn, h->ntrick + 1);
    if (!(legal_mask(st, seat) & RULES_BIT(m->card)))
        return refuse_play(st, seat, m->card, e);

    if (h->hands[seat] & RULES_BIT(m->card)) {
        h->hands[seat] &= ~RULES_BIT(m->card);
    } else {
        /* A column top: the card beneath, if any, is turned up by this very step. */
        for (int c = 0; c < 4; c++)
            if (h->height[seat][c] && h->column[seat][c][h->height[seat][c] - 1] == m->card)
                h->height[seat][c]--;
    }
    h->played[h->trick_no * TRICK_CARDS + h->ntrick] = m->card;
    h->ntrick++;
    if (h->ntrick == TRICK_CARDS)
        complete_trick(st);
    return true;
}

static uint32_t horseshoe_to_move(const struct rules_state *st)
{
    const struct rules_horseshoe *h = &st->g.horseshoe;
    return h->phase == RULES_HORSESHOE_PLAY ? 1u << current_seat(h) : 0;
}

static int horseshoe_legal(const struct rules_state *st, int seat, struct rules_move *out, int max)
{
    int k = 0;
    struct rules_move m = {.verb = RULES_PLAY};
    for (uint64_t s = legal_mask(st, seat); s; s &= s - 1) {
        m.card = (rules_card)rules_lowest(s);
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
    return st->g.horseshoe.phase == RULES_HORSESHOE_DEAL ? "deal" : "play";
}

/* One trick's cards as [{"seat": s, "card": C}, ...]. */
static void emit_trick_cards(const struct rules_emit *em, void *ctx, const uint8_t *t, int n,
                             int leader)
{
    em->array_begin(ctx, "cards");
    for (int i = 0; i < n; i++) {
        em->object_begin(ctx, NULL);
        em->integer(ctx, "seat", (i == 0 || i == 3) ? leader : 1 - leader);
        em->card(ctx, "card", t[i]);
        em->object_end(ctx);
    }
    em->array_end(ctx);
}

static void horseshoe_view(const struct rules_state *st, int seat, const struct rules_emit *em,
                           void *ctx)
{
    const struct rules_horseshoe *h = &st->g.horseshoe;
    bool all = st->over || seat == RULES_SEAT_ALL; /* over: the whole log is public */
    bool playing = h->phase == RULES_HORSESHOE_PLAY;

    em->string(ctx, "phase", phase_name(st));
    em->integer(ctx, "hand_number", st->hands_done + (playing ? 1 : 0));
    em->integer(ctx, "dealer", h->dealer);
    if (h->leader == RULES_NO_CARD)
        em->null(ctx, "leader");
    else
        em->integer(ctx, "leader", h->leader);
    if (playing && !st->over)
        em->integer(ctx, "to_play", current_seat(h));
    else
        em->null(ctx, "to_play");

    em->array_begin(ctx, "hands");
    for (int s = 0; s < 2; s++) {
        em->object_begin(ctx, NULL);
        em->integer(ctx, "seat", s);
        em->integer(ctx, "count", rules_popcount(h->hands[s]));
        if (s == seat || all)
            rules_emit_cards(em, ctx, "cards", h->hands[s]);
        em->object_end(ctx);
    }
    em->array_end(ctx);

    /* Boards: the face-up tops are public; a face-down card only as a flag. */
    em->array_begin(ctx, "boards");
    for (int s = 0; s < 2; s++) {
        em->object_begin(ctx, NULL);
        em->integer(ctx, "seat", s);
        em->array_begin(ctx, "columns");
        for (int c = 0; c < 4; c++) {
            int height = h->height[s][c];
            em->object_begin(ctx, NULL);
            em->integer(ctx, "column", c + 1);
            if (height)
                em->card(ctx, "up", h->column[s][c][height - 1]);
            else
                em->null(ctx, "up");
            em->boolean(ctx, "face_down", height == 2);
            if (height == 2 && all)
                em->card(ctx, "face_down_card", h->column[s][c][0]);
            em->object_end(ctx);
        }
        em->array_end(ctx);
        em->object_end(ctx);
    }
    em->array_end(ctx);

    em->object_begin(ctx, "unused");
    em->integer(ctx, "count", rules_popcount(h->unused));
    if (all)
        rules_emit_cards(em, ctx, "cards", h->unused);
    em->object_end(ctx);

    /* The trick on the table, and the completed tricks of this hand. */
    if (playing) {
        em->object_begin(ctx, "trick");
        em->integer(ctx, "number", h->trick_no + 1);
        em->integer(ctx, "leader", h->leader);
        emit_trick_cards(em, ctx, &h->played[h->trick_no * TRICK_CARDS], h->ntrick, h->leader);
        em->object_end(ctx);
    } else {
        em->null(ctx, "trick");
    }
    em->array_begin(ctx, "tricks");
    for (int t = 0; t < h->trick_no; t++) {
        em->object_begin(ctx, NULL);
        em->integer(ctx, "leader", h->leaders[t]);
        emit_trick_cards(em, ctx, &h->played[t * TRICK_CARDS], TRICK_CARDS, h->leaders[t]);
        em->integer(ctx, "winner", h->winners[t]);
        em->object_end(ctx);
    }
    em->array_end(ctx);

    em->array_begin(ctx, "tricks_won");
    em->integer(ctx, NULL, h->won[0]);
    em->integer(ctx, NULL, h->won[1]);
    em->array_end(ctx);
    rules_emit_ints(em, ctx, "totals", st->totals, 2);
}

const struct rules_game_ops rules_horseshoe_ops = {
    .name = "horseshoe",
    .min_seats = 2,
    .max_seats = 2,
    .default_seats = 2,
    .default_target = 11,
    .has_moon = false,
    .low_wins = false,
    .init = horseshoe_init,
    .due = horseshoe_due,
    .shuffle_source = NULL,
    .chance = horseshoe_chance,
    .apply = horseshoe_apply,
    .legal = horseshoe_legal,
    .to_move = horseshoe_to_move,
    .view = horseshoe_view,
};
