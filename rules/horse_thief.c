/* horse_thief.c - Horse Thief for 3 to 10 seats (rules.md §4): five cards each and a
 * turn-up that names trump; a secret stay-or-drop (not when spades are trump), a secret
 * discard-and-draw with the dealer taking the turn-up, euchre bowers, five tricks among
 * the staying seats, and the end at the target with the highest total first.
 */
#include "rules-int.h"

#include <string.h>

#define JACK 9 /* rank index of J: 2 is 0 ... A is 12 */
#define HAND_SIZE 5
#define LONE_STAYER_SCORE 5
#define NO_TRICK_SCORE (-3)

static const char suit_letters[] = "CDHS";

/* ---- Seats and suits ----------------------------------------------------------------------- */

static uint16_t all_seats(const struct rules_state *st)
{
    return (uint16_t)((1u << st->nseats) - 1);
}

/* The next seat clockwise after `s` that is in `set` (which must not be empty). */
static int next_in(uint16_t set, int s, int n)
{
    for (int i = 1; i <= n; i++) {
        int t = (s + i) % n;
        if (set & (1u << t))
            return t;
    }
    return s;
}

static rules_card right_bower(int trump)
{
    return RULES_CARD(JACK, trump);
}

/* The jack of the other suit of trump's colour: C <-> S, D <-> H. */
static rules_card left_bower(int trump)
{
    return RULES_CARD(JACK, trump ^ 3);
}

/* The suit a card belongs to for every purpose: the left bower is a trump. */
static int effective_suit(const struct rules_horse_thief *h, rules_card c)
{
    return c == left_bower(h->trump) ? h->trump : RULES_SUIT(c);
}

/* The cards that belong to `suit` (effective suits). */
static uint64_t suit_cards(const struct rules_horse_thief *h, int suit)
{
    uint64_t lb = RULES_BIT(left_bower(h->trump));
    if (suit == h->trump)
        return RULES_SUIT_MASK(suit) | lb;
    return RULES_SUIT_MASK(suit) & ~lb;
}

/* How strongly `c` stands in a trick led in `led_suit`: trumps above everything (right
 * bower, left bower, then A K Q T 9 ... 2), then the led suit A high; -1 for a card of
 * another suit, which cannot win. */
static int power(const struct rules_horse_thief *h, rules_card c, int led_suit)
{
    int suit = effective_suit(h, c);
    if (suit == h->trump) {
        if (c == right_bower(h->trump))
            return 200;
        if (c == left_bower(h->trump))
            return 199;
        return 100 + RULES_RANK(c);
    }
    return suit == led_suit ? RULES_RANK(c) : -1;
}

/* The seat that played the i-th card of trick t. */
static int trick_seat(const struct rules_state *st, int t, int i)
{
    const struct rules_horse_thief *h = &st->g.horse_thief;
    int s = h->leaders[t];
    while (i-- > 0)
        s = next_in(h->staying, s, st->nseats);
    return s;
}

/* Index within trick t (of `ncards` cards) of the card that wins it. */
static int trick_best(const struct rules_horse_thief *h, int t, int ncards)
{
    int led = effective_suit(h, h->played[t][0]);
    int best = 0;
    for (int i = 1; i < ncards; i++)
        if (power(h, h->played[t][i], led) > power(h, h->played[t][best], led))
            best = i;
    return best;
}

static int current_seat(const struct rules_state *st)
{
    const struct rules_horse_thief *h = &st->g.horse_thief;
    return trick_seat(st, h->trick_no, h->ntrick);
}

/* ---- Deal and phases --------------------------------------------------------------------- */

static void ht_init(struct rules_state *st)
{
    struct rules_horse_thief *h = &st->g.horse_thief;
    int d = RULES_NCARDS / st->nseats - HAND_SIZE;
    h->phase = RULES_HT_DEAL;
    h->dealer = st->first_dealer;
    h->draw_limit = (uint8_t)(d < 3 ? d : 3);
    h->turn_up = RULES_NO_CARD;
}

static enum rules_due ht_due(const struct rules_state *st)
{
    return st->g.horse_thief.phase == RULES_HT_DEAL ? RULES_DUE_DEAL : RULES_DUE_NONE;
}

static void end_hand(struct rules_state *st, const int32_t *scores)
{
    struct rules_horse_thief *h = &st->g.horse_thief;
    rules_hand_done(st, scores);
    if (rules_target_reached(st)) {
        st->over = true;
        h->phase = RULES_HT_OVER;
    } else {
        h->phase = RULES_HT_DEAL;
        h->dealer = (uint8_t)((st->first_dealer + st->hands_done) % st->nseats);
    }
}

static void start_play(struct rules_state *st)
{
    struct rules_horse_thief *h = &st->g.horse_thief;
    h->phase = RULES_HT_PLAY;
    h->leader = (uint8_t)next_in(h->staying, h->dealer, st->nseats);
    h->leaders[0] = h->leader;
    h->ntrick = 0;
    h->trick_no = 0;
}

/* Who stays is known (and at least two do): the draw, if there is one, then play. */
static void start_draw(struct rules_state *st)
{
    struct rules_horse_thief *h = &st->g.horse_thief;
    h->submitted = 0;
    if (h->draw_limit > 0)
        h->phase = RULES_HT_DISCARD;
    else
        start_play(st);
}

static void ht_chance(struct rules_state *st, const rules_card *cards, int ncards)
{
    struct rules_horse_thief *h = &st->g.horse_thief;
    int n = st->nseats;
    uint8_t draw_limit = h->draw_limit;
    memset(h, 0, sizeof *h);
    h->draw_limit = draw_limit;
    h->dealer = (uint8_t)((st->first_dealer + st->hands_done) % n);
    for (int i = 0; i < HAND_SIZE * n; i++)
        h->hands[(h->dealer + 1 + i) % n] |= RULES_BIT(cards[i]);
    h->turn_up = cards[HAND_SIZE * n];
    h->trump = (uint8_t)RULES_SUIT(h->turn_up);
    for (int i = HAND_SIZE * n + 1; i < ncards; i++)
        h->stock[h->stock_len++] = cards[i];
    if (h->trump == RULES_SPADES) {
        h->staying = all_seats(st);
        h->stay_resolved = 1;
        start_draw(st);
    } else {
        h->phase = RULES_HT_STAY;
    }
}

/* Every seat has stayed or dropped. */
static void resolve_stay(struct rules_state *st)
{
    struct rules_horse_thief *h = &st->g.horse_thief;
    h->staying = h->stays;
    h->stay_resolved = 1;
    h->submitted = 0;
    int stayers = rules_popcount(h->staying);
    if (stayers >= 2) {
        start_draw(st);
        return;
    }
    int32_t scores[RULES_MAX_SEATS] = {0};
    if (stayers == 1)
        scores[rules_lowest(h->staying)] = LONE_STAYER_SCORE;
    end_hand(st, scores);
}

/* Every staying seat has discarded: replacements in seat order from the dealer's left. */
static void resolve_discard(struct rules_state *st)
{
    struct rules_horse_thief *h = &st->g.horse_thief;
    int n = st->nseats;
    for (int i = 1; i <= n; i++) {
        int s = (h->dealer + i) % n;
        if (!(h->staying & (1u << s)))
            continue;
        int k = rules_popcount(h->discards[s]);
        h->hands[s] &= ~h->discards[s];
        if (s == h->dealer && k >= 1) {
            h->hands[s] |= RULES_BIT(h->turn_up);
            h->turn_up_taken = 1;
            k--;
        }
        while (k-- > 0)
            h->hands[s] |= RULES_BIT(h->stock[h->stock_next++]);
    }
    h->discard_resolved = 1;
    h->submitted = 0;
    start_play(st);
}

static void complete_trick(struct rules_state *st)
{
    struct rules_horse_thief *h = &st->g.horse_thief;
    int t = h->trick_no;
    int winner = trick_seat(st, t, trick_best(h, t, h->ntrick));
    h->tricks[winner]++;
    h->trick_no++;
    h->ntrick = 0;
    h->leader = (uint8_t)winner;
    if (h->trick_no < RULES_HT_TRICKS) {
        h->leaders[h->trick_no] = (uint8_t)winner;
        return;
    }
    int32_t scores[RULES_MAX_SEATS] = {0};
    for (int s = 0; s < st->nseats; s++)
        if (h->staying & (1u << s))
            scores[s] = h->tricks[s] ? h->tricks[s] : NO_TRICK_SCORE;
    end_hand(st, scores);
}

/* ---- Moves ----------------------------------------------------------------------------------- */

/* The cards `seat` may play now (its turn in the trick phase). */
static uint64_t follow_mask(const struct rules_horse_thief *h, int seat)
{
    uint64_t hand = h->hands[seat];
    if (h->ntrick == 0)
        return hand;
    uint64_t follow = hand & suit_cards(h, effective_suit(h, h->played[h->trick_no][0]));
    return follow ? follow : hand;
}

static bool dropped(struct err *e, int seat)
{
    return err_set(e, ERR_ILLEGAL, "dropped",
                   "seat %d dropped: it takes no further part in this hand", seat);
}

static bool apply_stay(struct rules_state *st, int seat, bool stay, struct err *e)
{
    struct rules_horse_thief *h = &st->g.horse_thief;
    if (h->phase != RULES_HT_STAY) {
        if (h->trump == RULES_SPADES)
            return err_set(e, ERR_ILLEGAL, "spades_trump",
                           "trump is spades: everyone plays, '%s' is not a move",
                           stay ? "stay" : "drop");
        return err_set(e, ERR_ILLEGAL, "wrong_phase",
                       "staying in or dropping is decided right after the deal, not now");
    }
    if (h->submitted & (1u << seat))
        return err_set(e, ERR_ILLEGAL, "already_submitted",
                       "seat %d has already stayed or dropped; that cannot be changed", seat);
    h->submitted |= (uint16_t)(1u << seat);
    if (stay)
        h->stays |= (uint16_t)(1u << seat);
    if (h->submitted == all_seats(st))
        resolve_stay(st);
    return true;
}

static bool apply_discard(struct rules_state *st, int seat, const struct rules_move *m,
                          struct err *e)
{
    struct rules_horse_thief *h = &st->g.horse_thief;
    if (h->phase != RULES_HT_DISCARD) {
        if (h->draw_limit == 0)
            return err_set(e, ERR_ILLEGAL, "wrong_phase",
                           "with %d seats the draw limit is 0: nobody discards", st->nseats);
        if (h->phase == RULES_HT_STAY)
            return err_set(e, ERR_ILLEGAL, "wrong_phase",
                           "discards come after every seat has stayed or dropped");
        return err_set(e, ERR_ILLEGAL, "wrong_phase", "no discarding now");
    }
    if (!(h->staying & (1u << seat)))
        return dropped(e, seat);
    if (h->submitted & (1u << seat))
        return err_set(e, ERR_ILLEGAL, "already_submitted",
                       "seat %d has already discarded; a discard cannot be changed", seat);
    if (m->ncards != rules_popcount(m->cards))
        return err_set(e, ERR_ILLEGAL, "duplicate_card", "a discard names each card once");
    if (m->ncards > h->draw_limit)
        return err_set(e, ERR_ILLEGAL, "too_many_cards",
                       "at most %d cards may be discarded with %d seats", h->draw_limit,
                       st->nseats);
    if (m->cards & ~h->hands[seat])
        return err_set(e, ERR_ILLEGAL, "not_in_hand",
                       "a discard may only name cards of the seat's own hand");
    h->discards[seat] = m->cards;
    h->submitted |= (uint16_t)(1u << seat);
    if (h->submitted == h->staying)
        resolve_discard(st);
    return true;
}

static bool apply_play(struct rules_state *st, int seat, const struct rules_move *m,
                       struct err *e)
{
    struct rules_horse_thief *h = &st->g.horse_thief;
    char c[3], f[3];
    rules_card_format(m->card, c);
    if (h->phase != RULES_HT_PLAY)
        return err_set(e, ERR_ILLEGAL, "wrong_phase", "%s",
                       h->phase == RULES_HT_STAY ? "cards are played after staying or dropping"
                                                 : "cards are played after the draw");
    if (!(h->staying & (1u << seat)))
        return dropped(e, seat);
    int turn = current_seat(st);
    if (seat != turn)
        return err_set(e, ERR_ILLEGAL, "not_your_turn", "it is seat %d's turn to play", turn);
    if (!(h->hands[seat] & RULES_BIT(m->card)))
        return err_set(e, ERR_ILLEGAL, "not_in_hand", "%s is not in seat %d's hand", c, seat);
    if (!(follow_mask(h, seat) & RULES_BIT(m->card))) {
        rules_card led = h->played[h->trick_no][0];
        rules_card_format(led, f);
        int suit = effective_suit(h, led);
        return err_set(e, ERR_ILLEGAL, "must_follow_suit", "%s: must follow %s %c, led with %s%s",
                       c, suit == h->trump ? "trump" : "the led suit", suit_letters[suit], f,
                       suit == h->trump ? " (the left bower is a trump)" : "");
    }
    h->hands[seat] &= ~RULES_BIT(m->card);
    h->played[h->trick_no][h->ntrick++] = m->card;
    if (h->ntrick == rules_popcount(h->staying))
        complete_trick(st);
    return true;
}

static bool ht_apply(struct rules_state *st, int seat, const struct rules_move *m,
                     struct err *e)
{
    switch (m->verb) {
    case RULES_STAY: return apply_stay(st, seat, true, e);
    case RULES_DROP: return apply_stay(st, seat, false, e);
    case RULES_DISCARD: return apply_discard(st, seat, m, e);
    case RULES_PLAY: return apply_play(st, seat, m, e);
    default:
        return err_set(e, ERR_ILLEGAL, "not_a_horse_thief_move",
                       "'%s' is not a move of horse-thief",
                       rules_verb_name((enum rules_verb)m->verb));
    }
}

static uint32_t ht_to_move(const struct rules_state *st)
{
    const struct rules_horse_thief *h = &st->g.horse_thief;
    switch (h->phase) {
    case RULES_HT_STAY: return all_seats(st) & ~(uint32_t)h->submitted;
    case RULES_HT_DISCARD: return h->staying & ~(uint32_t)h->submitted;
    case RULES_HT_PLAY: return 1u << current_seat(st);
    default: return 0;
    }
}

/* Legal moves in canonical order: stay, drop; `discard` alone, then the discards of one,
 * two, three cards, each size in lexicographic deck order; play cards in deck order. */
static int ht_legal(const struct rules_state *st, int seat, struct rules_move *out, int max)
{
    const struct rules_horse_thief *h = &st->g.horse_thief;
    int k = 0;
    if (!(ht_to_move(st) & (1u << seat)))
        return 0;
#define EMIT(mv)                                                                               \
    do {                                                                                       \
        if (k < max)                                                                           \
            out[k] = (mv);                                                                     \
        k++;                                                                                   \
    } while (0)
    struct rules_move m = {.card = RULES_NO_CARD};
    switch (h->phase) {
    case RULES_HT_STAY:
        m.verb = RULES_STAY;
        EMIT(m);
        m.verb = RULES_DROP;
        EMIT(m);
        break;
    case RULES_HT_DISCARD: {
        rules_card c[RULES_NCARDS];
        int n = rules_mask_cards(h->hands[seat], c);
        m.verb = RULES_DISCARD;
        EMIT(m);
        for (int size = 1; size <= h->draw_limit; size++) {
            /* Combinations of `size` of the n cards, lexicographic: idx ascending. */
            int idx[3];
            for (int i = 0; i < size; i++)
                idx[i] = i;
            while (size <= n) {
                m.ncards = (uint8_t)size;
                m.cards = 0;
                for (int i = 0; i < size; i++)
                    m.cards |= RULES_BIT(c[idx[i]]);
                EMIT(m);
                int i = size - 1;
                while (i >= 0 && idx[i] == n - size + i)
                    i--;
                if (i < 0)
                    break;
                idx[i]++;
                for (int j = i + 1; j < size; j++)
                    idx[j] = idx[j - 1] + 1;
            }
        }
        break;
    }
    case RULES_HT_PLAY:
        m.verb = RULES_PLAY;
        for (uint64_t s = follow_mask(h, seat); s; s &= s - 1) {
            m.card = (rules_card)rules_lowest(s);
            EMIT(m);
        }
        break;
    default:
        break;
    }
#undef EMIT
    return k;
}

/* ---- The view ---------------------------------------------------------------------------- */

static const char *phase_name(const struct rules_state *st)
{
    if (st->over)
        return "over";
    switch (st->g.horse_thief.phase) {
    case RULES_HT_DEAL: return "deal";
    case RULES_HT_STAY: return "stay";
    case RULES_HT_DISCARD: return "discard";
    case RULES_HT_PLAY: return "play";
    default: return "over";
    }
}

static void ht_view(const struct rules_state *st, int seat, const struct rules_emit *em,
                    void *ctx)
{
    const struct rules_horse_thief *h = &st->g.horse_thief;
    int n = st->nseats;
    bool all = st->over || seat == RULES_SEAT_ALL; /* over: the whole log is public */
    bool dealt = h->turn_up != RULES_NO_CARD;

    em->string(ctx, "phase", phase_name(st));
    em->integer(ctx, "hand_number", st->hands_done + (h->phase == RULES_HT_DEAL ? 0 : 1));
    em->integer(ctx, "dealer", h->dealer);
    em->integer(ctx, "draw_limit", h->draw_limit);
    if (dealt) {
        char suit[2] = {suit_letters[h->trump], '\0'};
        em->card(ctx, "turn_up", h->turn_up);
        em->string(ctx, "trump", suit);
    } else {
        em->null(ctx, "turn_up");
        em->null(ctx, "trump");
    }
    em->boolean(ctx, "turn_up_taken", h->turn_up_taken);

    em->object_begin(ctx, "stock");
    em->integer(ctx, "count", h->stock_len - h->stock_next);
    if (all) {
        em->array_begin(ctx, "cards");
        for (int i = h->stock_next; i < h->stock_len; i++)
            em->card(ctx, NULL, h->stock[i]);
        em->array_end(ctx);
    }
    em->object_end(ctx);

    bool stay_phase = h->phase == RULES_HT_STAY && !h->stay_resolved;
    bool discard_phase = h->phase == RULES_HT_DISCARD;
    em->array_begin(ctx, "seats");
    for (int s = 0; s < n; s++) {
        uint16_t bit = (uint16_t)(1u << s);
        bool mine = s == seat || all;
        em->object_begin(ctx, NULL);
        em->integer(ctx, "seat", s);
        em->integer(ctx, "count", rules_popcount(h->hands[s]));
        if (mine)
            rules_emit_cards(em, ctx, "cards", h->hands[s]);
        em->boolean(ctx, "submitted", (stay_phase || discard_phase) && (h->submitted & bit));
        if (stay_phase && mine && (h->submitted & bit))
            em->string(ctx, "choice", (h->stays & bit) ? "stay" : "drop");
        if (h->stay_resolved)
            em->boolean(ctx, "staying", h->staying & bit);
        else
            em->null(ctx, "staying");
        bool discarded = h->discard_resolved && (h->staying & bit);
        if (discarded)
            em->integer(ctx, "discarded", rules_popcount(h->discards[s]));
        else
            em->null(ctx, "discarded");
        if (mine && (discarded || (discard_phase && (h->submitted & bit))))
            rules_emit_cards(em, ctx, "discard", h->discards[s]);
        em->integer(ctx, "tricks_taken", h->tricks[s]);
        em->object_end(ctx);
    }
    em->array_end(ctx);

    /* Every trick of this hand is on the table: face up, public. */
    int ntricks = h->trick_no + (h->phase == RULES_HT_PLAY && h->ntrick > 0);
    int stayers = rules_popcount(h->staying);
    em->array_begin(ctx, "tricks");
    for (int t = 0; t < ntricks; t++) {
        int cards = t < h->trick_no ? stayers : h->ntrick;
        em->object_begin(ctx, NULL);
        em->integer(ctx, "leader", h->leaders[t]);
        em->array_begin(ctx, "plays");
        for (int i = 0; i < cards; i++) {
            em->object_begin(ctx, NULL);
            em->integer(ctx, "seat", trick_seat(st, t, i));
            em->card(ctx, "card", h->played[t][i]);
            em->object_end(ctx);
        }
        em->array_end(ctx);
        if (t < h->trick_no)
            em->integer(ctx, "winner", trick_seat(st, t, trick_best(h, t, stayers)));
        em->object_end(ctx);
    }
    em->array_end(ctx);

    if (h->phase == RULES_HT_PLAY && !st->over)
        em->integer(ctx, "turn", current_seat(st));
    else
        em->null(ctx, "turn");
    rules_emit_ints(em, ctx, "totals", st->totals, n);
}

/* Stay and drop are secret until the phase resolves, then open; a discard is secret, then
 * shows only how many cards it named (nobody receives them). */
static void ht_secrecy(const struct rules_state *st, int seat, const struct rules_move *m,
                       struct rules_secrecy_info *out)
{
    const struct rules_horse_thief *h = &st->g.horse_thief;
    (void)seat;
    if ((m->verb == RULES_STAY || m->verb == RULES_DROP) && h->phase == RULES_HT_STAY)
        out->kind = RULES_SECRET;
    else if (m->verb == RULES_DISCARD && h->phase == RULES_HT_DISCARD)
        out->kind = RULES_SECRET_CARDS;
}

static uint32_t ht_secret_pending(const struct rules_state *st)
{
    const struct rules_horse_thief *h = &st->g.horse_thief;
    bool secret_phase = h->phase == RULES_HT_STAY || h->phase == RULES_HT_DISCARD;
    return secret_phase ? h->submitted : 0;
}

const struct rules_game_ops rules_horse_thief_ops = {
    .name = "horse-thief",
    .min_seats = 3,
    .max_seats = 10,
    .default_seats = 5,
    .default_target = 15,
    .has_moon = false,
    .low_wins = false,
    .init = ht_init,
    .due = ht_due,
    .shuffle_source = NULL,
    .chance = ht_chance,
    .apply = ht_apply,
    .legal = ht_legal,
    .to_move = ht_to_move,
    .secrecy = ht_secrecy,
    .secret_pending = ht_secret_pending,
    .view = ht_view,
};
