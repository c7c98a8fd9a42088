/* hearts.c - Hearts for 3 to 6 seats (rules.md §1): deal with a hole, secret passes,
 * first-trick and broken-hearts rules, hole to the first heart trick, the three moon
 * options, and the end at the target with the lowest total first.
 */
#include "rules-int.h"

#include <string.h>

#define HEARTS_MASK RULES_SUIT_MASK(RULES_HEARTS_SUIT)
#define CLUBS_MASK RULES_SUIT_MASK(RULES_CLUBS)
#define QUEEN_OF_SPADES RULES_CARD(10, RULES_SPADES)
#define POINT_MASK (HEARTS_MASK | RULES_BIT(QUEEN_OF_SPADES))

static int points_of(uint64_t cards)
{
    return rules_popcount(cards & HEARTS_MASK) + ((cards & RULES_BIT(QUEEN_OF_SPADES)) ? 13 : 0);
}

static const char *const pass_names[] = {"left", "right", "across", "hold"};

static int pass_target(int seat, int dir, int n)
{
    switch (dir) {
    case RULES_PASS_LEFT: return (seat + 1) % n;
    case RULES_PASS_RIGHT: return (seat + n - 1) % n;
    case RULES_PASS_ACROSS: return (seat + n / 2) % n;
    default: return seat;
    }
}

static void hearts_init(struct rules_state *st)
{
    struct rules_hearts *h = &st->g.hearts;
    h->phase = RULES_HEARTS_DEAL;
    h->hole_owner = RULES_NO_CARD;
    h->shooter = RULES_NO_CARD;
    h->hand_size = (uint8_t)(RULES_NCARDS / st->nseats);
    h->dealer = st->first_dealer;
}

static enum rules_due hearts_due(const struct rules_state *st)
{
    return st->g.hearts.phase == RULES_HEARTS_DEAL ? RULES_DUE_DEAL : RULES_DUE_NONE;
}

/* The seat to play next in the trick phase. */
static int current_seat(const struct rules_hearts *h, int n)
{
    return (h->leader + h->ntrick) % n;
}

static int holder_of(const struct rules_state *st, rules_card c)
{
    for (int s = 0; s < st->nseats; s++)
        if (st->g.hearts.hands[s] & RULES_BIT(c))
            return s;
    return -1;
}

/* After the deal (hold hands) or the exchange: the lowest club not in the hole leads. */
static void start_play(struct rules_state *st)
{
    struct rules_hearts *h = &st->g.hearts;
    uint64_t clubs = CLUBS_MASK & ~h->hole;
    h->first_lead = (uint8_t)rules_lowest(clubs);
    h->leader = (uint8_t)holder_of(st, h->first_lead);
    h->leaders[0] = h->leader;
    h->ntrick = 0;
    h->trick_no = 0;
    h->phase = RULES_HEARTS_PLAY;
}

static void hearts_chance(struct rules_state *st, const rules_card *cards, int ncards)
{
    struct rules_hearts *h = &st->g.hearts;
    int n = st->nseats;
    int hand = (int)st->hands_done + 1;
    uint8_t hand_size = h->hand_size;
    memset(h, 0, sizeof *h);
    h->hand_size = hand_size;
    h->dealer = (uint8_t)((st->first_dealer + hand - 1) % n);
    h->hole_owner = RULES_NO_CARD;
    h->shooter = RULES_NO_CARD;
    for (int i = 0; i < ncards; i++) {
        if (i < n * hand_size)
            h->hands[(h->dealer + 1 + i) % n] |= RULES_BIT(cards[i]);
        else
            h->hole |= RULES_BIT(cards[i]);
    }
    int cycle = (n == 4 || n == 6) ? 4 : 3;
    int k = (hand - 1) % cycle;
    h->pass_dir = (uint8_t)(k == cycle - 1 ? RULES_PASS_HOLD : k);
    if (h->pass_dir == RULES_PASS_HOLD)
        start_play(st);
    else
        h->phase = RULES_HEARTS_PASS;
}

/* The cards `seat` may play now (it is that seat's turn in the trick phase). */
static uint64_t follow_mask(const struct rules_state *st, int seat)
{
    const struct rules_hearts *h = &st->g.hearts;
    uint64_t hand = h->hands[seat];
    if (h->ntrick == 0) {
        if (h->trick_no == 0)
            return hand & RULES_BIT(h->first_lead);
        if (!h->broken && (hand & ~HEARTS_MASK))
            return hand & ~HEARTS_MASK;
        return hand;
    }
    rules_card led = h->played[h->trick_no * st->nseats];
    uint64_t follow = hand & RULES_SUIT_MASK(RULES_SUIT(led));
    if (follow)
        return follow;
    if (h->trick_no == 0 && (hand & ~POINT_MASK))
        return hand & ~POINT_MASK;
    return hand;
}

/* Why `card` (in the hand, not in the legal mask) may not be played: the precise reason. */
static bool refuse_play(const struct rules_state *st, int seat, rules_card card, struct err *e)
{
    const struct rules_hearts *h = &st->g.hearts;
    char c[3], f[3];
    rules_card_format(card, c);
    if (h->ntrick == 0) {
        if (h->trick_no == 0) {
            rules_card_format(h->first_lead, f);
            return err_set(e, ERR_ILLEGAL, "must_lead_lowest_club",
                           "the first trick must be led with %s, not %s", f, c);
        }
        return err_set(e, ERR_ILLEGAL, "hearts_not_broken",
                       "%s: hearts may not be led until hearts are broken", c);
    }
    rules_card led = h->played[h->trick_no * st->nseats];
    if (h->hands[seat] & RULES_SUIT_MASK(RULES_SUIT(led))) {
        rules_card_format(led, f);
        return err_set(e, ERR_ILLEGAL, "must_follow_suit", "%s: must follow the suit of %s", c,
                       f);
    }
    return err_set(e, ERR_ILLEGAL, "no_points_first_trick",
                   "%s: no point card may be played to the first trick", c);
}

static void finish_hand(struct rules_state *st, const int32_t *scores)
{
    struct rules_hearts *h = &st->g.hearts;
    rules_hand_done(st, scores);
    h->shooter = RULES_NO_CARD;
    if (rules_target_reached(st)) {
        st->over = true;
        h->phase = RULES_HEARTS_OVER;
    } else {
        h->phase = RULES_HEARTS_DEAL;
        h->dealer = (uint8_t)((st->first_dealer + st->hands_done) % st->nseats);
    }
}

static void moon_scores(const struct rules_state *st, int shooter, bool subtract, int32_t *out)
{
    for (int s = 0; s < st->nseats; s++)
        out[s] = subtract ? (s == shooter ? -26 : 0) : (s == shooter ? 0 : 26);
}

static void end_hand(struct rules_state *st)
{
    struct rules_hearts *h = &st->g.hearts;
    int32_t scores[RULES_MAX_SEATS] = {0};
    int shooter = -1;
    for (int s = 0; s < st->nseats; s++) {
        scores[s] = points_of(h->taken[s]);
        if (scores[s] == 26)
            shooter = s;
    }
    if (shooter >= 0) {
        if (st->moon == RULES_MOON_CHOOSE) {
            h->shooter = (uint8_t)shooter;
            h->phase = RULES_HEARTS_MOON;
            return;
        }
        moon_scores(st, shooter, st->moon == RULES_MOON_SUBTRACT, scores);
    }
    finish_hand(st, scores);
}

static void complete_trick(struct rules_state *st)
{
    struct rules_hearts *h = &st->g.hearts;
    int n = st->nseats;
    const uint8_t *trick = &h->played[h->trick_no * n];
    int led_suit = RULES_SUIT(trick[0]);
    int best = 0;
    uint64_t cards = 0;
    for (int i = 0; i < n; i++) {
        cards |= RULES_BIT(trick[i]);
        if (RULES_SUIT(trick[i]) == led_suit && RULES_RANK(trick[i]) > RULES_RANK(trick[best]))
            best = i;
    }
    int winner = (h->leader + best) % n;
    h->taken[winner] |= cards;
    if (cards & HEARTS_MASK) {
        h->broken = 1;
        if (h->hole && h->hole_owner == RULES_NO_CARD) {
            h->hole_owner = (uint8_t)winner;
            h->taken[winner] |= h->hole;
        }
    }
    h->trick_no++;
    h->ntrick = 0;
    h->leader = (uint8_t)winner;
    if (h->trick_no == h->hand_size)
        end_hand(st);
    else
        h->leaders[h->trick_no] = (uint8_t)winner;
}

static bool not_now(struct err *e, const char *what)
{
    return err_set(e, ERR_ILLEGAL, "wrong_phase", "%s", what);
}

static bool apply_pass(struct rules_state *st, int seat, const struct rules_move *m,
                       struct err *e)
{
    struct rules_hearts *h = &st->g.hearts;
    if (h->phase != RULES_HEARTS_PASS)
        return not_now(e, h->pass_dir == RULES_PASS_HOLD && h->phase == RULES_HEARTS_PLAY
                              ? "this is a hold hand: nobody passes"
                              : "no passing now");
    if (h->passed & (1u << seat))
        return err_set(e, ERR_ILLEGAL, "already_submitted",
                       "seat %d has passed already; a pass cannot be changed", seat);
    if (m->ncards != 3)
        return err_set(e, ERR_ILLEGAL, "wrong_card_count", "a pass names exactly three cards");
    if (rules_popcount(m->cards) != 3)
        return err_set(e, ERR_ILLEGAL, "duplicate_card", "a pass names three distinct cards");
    if (m->cards & ~h->hands[seat])
        return err_set(e, ERR_ILLEGAL, "not_in_hand", "a pass may only name cards of the hand");
    h->passes[seat] = m->cards;
    h->passed |= (uint8_t)(1u << seat);
    if (h->passed != (1u << st->nseats) - 1)
        return true;
    /* Everyone has passed: the cards change hands together. */
    for (int s = 0; s < st->nseats; s++)
        h->hands[s] &= ~h->passes[s];
    for (int s = 0; s < st->nseats; s++) {
        int to = pass_target(s, h->pass_dir, st->nseats);
        h->hands[to] |= h->passes[s];
        h->received[to] = h->passes[s];
    }
    start_play(st);
    return true;
}

static bool apply_play(struct rules_state *st, int seat, const struct rules_move *m,
                       struct err *e)
{
    struct rules_hearts *h = &st->g.hearts;
    if (h->phase != RULES_HEARTS_PLAY)
        return not_now(e, h->phase == RULES_HEARTS_PASS ? "cards are played after the pass"
                                                         : "no card play now");
    int turn = current_seat(h, st->nseats);
    if (seat != turn)
        return err_set(e, ERR_ILLEGAL, "not_your_turn", "it is seat %d's turn to play", turn);
    if (!(h->hands[seat] & RULES_BIT(m->card))) {
        char c[3];
        rules_card_format(m->card, c);
        return err_set(e, ERR_ILLEGAL, "not_in_hand", "%s is not in seat %d's hand", c, seat);
    }
    if (!(follow_mask(st, seat) & RULES_BIT(m->card)))
        return refuse_play(st, seat, m->card, e);
    h->hands[seat] &= ~RULES_BIT(m->card);
    h->played[h->trick_no * st->nseats + h->ntrick] = m->card;
    h->ntrick++;
    if (h->ntrick == st->nseats)
        complete_trick(st);
    return true;
}

static bool apply_moon(struct rules_state *st, int seat, const struct rules_move *m,
                       struct err *e)
{
    struct rules_hearts *h = &st->g.hearts;
    if (h->phase != RULES_HEARTS_MOON)
        return not_now(e, "no moon choice is pending");
    if (seat != h->shooter)
        return err_set(e, ERR_ILLEGAL, "not_your_turn", "only seat %d, the shooter, chooses",
                       h->shooter);
    int32_t scores[RULES_MAX_SEATS] = {0};
    moon_scores(st, seat, m->arg == RULES_MOON_SUBTRACT_ARG, scores);
    finish_hand(st, scores);
    return true;
}

static bool hearts_apply(struct rules_state *st, int seat, const struct rules_move *m,
                         struct err *e)
{
    switch (m->verb) {
    case RULES_PASS: return apply_pass(st, seat, m, e);
    case RULES_PLAY: return apply_play(st, seat, m, e);
    case RULES_MOON:
        if (st->moon != RULES_MOON_CHOOSE)
            return err_set(e, ERR_ILLEGAL, "wrong_phase",
                           "the moon is chosen only in a match with moon=choose");
        return apply_moon(st, seat, m, e);
    default:
        return err_set(e, ERR_ILLEGAL, "not_a_hearts_move", "'%s' is not a move of hearts",
                       rules_verb_name((enum rules_verb)m->verb));
    }
}

static uint32_t hearts_to_move(const struct rules_state *st)
{
    const struct rules_hearts *h = &st->g.hearts;
    switch (h->phase) {
    case RULES_HEARTS_PASS: return ((1u << st->nseats) - 1) & ~(uint32_t)h->passed;
    case RULES_HEARTS_PLAY: return 1u << current_seat(h, st->nseats);
    case RULES_HEARTS_MOON: return 1u << h->shooter;
    default: return 0;
    }
}

static int hearts_legal(const struct rules_state *st, int seat, struct rules_move *out, int max)
{
    const struct rules_hearts *h = &st->g.hearts;
    int k = 0;
    if (!(hearts_to_move(st) & (1u << seat)))
        return 0;
    struct rules_move m = {.card = RULES_NO_CARD};
    switch (h->phase) {
    case RULES_HEARTS_PASS: {
        rules_card c[RULES_NCARDS];
        int n = rules_mask_cards(h->hands[seat], c);
        m.verb = RULES_PASS;
        m.ncards = 3;
        for (int a = 0; a < n; a++)
            for (int b = a + 1; b < n; b++)
                for (int d = b + 1; d < n; d++) {
                    m.cards = RULES_BIT(c[a]) | RULES_BIT(c[b]) | RULES_BIT(c[d]);
                    if (k < max)
                        out[k] = m;
                    k++;
                }
        return k;
    }
    case RULES_HEARTS_PLAY:
        m.verb = RULES_PLAY;
        for (uint64_t s = follow_mask(st, seat); s; s &= s - 1) {
            m.card = (rules_card)rules_lowest(s);
            if (k < max)
                out[k] = m;
            k++;
        }
        return k;
    case RULES_HEARTS_MOON:
        m.verb = RULES_MOON;
        for (uint8_t a = 0; a < 2; a++) {
            m.arg = a;
            if (k < max)
                out[k] = m;
            k++;
        }
        return k;
    default:
        return 0;
    }
}

static const char *phase_name(const struct rules_state *st)
{
    if (st->over)
        return "over";
    switch (st->g.hearts.phase) {
    case RULES_HEARTS_DEAL: return "deal";
    case RULES_HEARTS_PASS: return "pass";
    case RULES_HEARTS_PLAY: return "play";
    case RULES_HEARTS_MOON: return "moon";
    default: return "over";
    }
}

/* Points a seat has visibly taken: the hole stays face down until the hand is scored. */
static int visible_points(const struct rules_hearts *h, int s)
{
    return points_of(h->taken[s] & ~(h->hole_owner == s ? h->hole : 0));
}

static void hearts_view(const struct rules_state *st, int seat, const struct rules_emit *em,
                        void *ctx)
{
    const struct rules_hearts *h = &st->g.hearts;
    int n = st->nseats;
    bool all = st->over || seat == RULES_SEAT_ALL; /* over: the whole log is public */
    bool exchanged = h->phase != RULES_HEARTS_PASS;

    em->string(ctx, "phase", phase_name(st));
    /* the hand being played; between hands and once the match ended, the last one */
    bool between = h->phase == RULES_HEARTS_DEAL || h->phase == RULES_HEARTS_OVER;
    em->integer(ctx, "hand_number", st->hands_done + (between ? 0 : 1));
    em->integer(ctx, "dealer", h->dealer);
    em->string(ctx, "pass_direction", pass_names[h->pass_dir]);
    em->boolean(ctx, "hearts_broken", h->broken);

    /* Hands: your own cards (less a pass not yet exchanged), the others' counts. */
    em->array_begin(ctx, "hands");
    for (int s = 0; s < n; s++) {
        uint64_t hand = h->hands[s];
        if (!exchanged && (h->passed & (1u << s)))
            hand &= ~h->passes[s];
        em->object_begin(ctx, NULL);
        em->integer(ctx, "seat", s);
        em->integer(ctx, "count", rules_popcount(hand));
        if (s == seat || all)
            rules_emit_cards(em, ctx, "cards", hand);
        em->object_end(ctx);
    }
    em->array_end(ctx);

    if (h->pass_dir != RULES_PASS_HOLD && h->phase != RULES_HEARTS_DEAL) {
        em->array_begin(ctx, "passes");
        for (int s = 0; s < n; s++) {
            int to = pass_target(s, h->pass_dir, n);
            em->object_begin(ctx, NULL);
            em->integer(ctx, "seat", s);
            em->integer(ctx, "to", to);
            em->boolean(ctx, "submitted", (h->passed >> s) & 1);
            if ((h->passed & (1u << s)) && (s == seat || (exchanged && to == seat) || all))
                rules_emit_cards(em, ctx, "cards", h->passes[s]);
            em->object_end(ctx);
        }
        em->array_end(ctx);
    }

    em->object_begin(ctx, "hole");
    em->integer(ctx, "count", rules_popcount(h->hole));
    if (h->hole_owner == RULES_NO_CARD)
        em->null(ctx, "taken_by");
    else
        em->integer(ctx, "taken_by", h->hole_owner);
    if (all)
        rules_emit_cards(em, ctx, "cards", h->hole);
    em->object_end(ctx);

    /* Every trick of this hand is on the table: face up, public. */
    em->array_begin(ctx, "tricks");
    int ntricks = h->phase == RULES_HEARTS_PLAY ? h->trick_no + (h->ntrick > 0) : h->trick_no;
    if (h->phase == RULES_HEARTS_DEAL || h->phase == RULES_HEARTS_PASS)
        ntricks = 0;
    for (int t = 0; t < ntricks; t++) {
        int cards = t < h->trick_no ? n : h->ntrick;
        em->object_begin(ctx, NULL);
        em->integer(ctx, "leader", h->leaders[t]);
        em->array_begin(ctx, "cards");
        for (int i = 0; i < cards; i++)
            em->card(ctx, NULL, h->played[t * n + i]);
        em->array_end(ctx);
        if (t < h->trick_no) {
            const uint8_t *tr = &h->played[t * n];
            int best = 0;
            for (int i = 1; i < n; i++)
                if (RULES_SUIT(tr[i]) == RULES_SUIT(tr[0]) &&
                    RULES_RANK(tr[i]) > RULES_RANK(tr[best]))
                    best = i;
            em->integer(ctx, "winner", (h->leaders[t] + best) % n);
        }
        em->object_end(ctx);
    }
    em->array_end(ctx);

    em->array_begin(ctx, "points_taken");
    for (int s = 0; s < n; s++)
        em->integer(ctx, NULL, all ? points_of(h->taken[s]) : visible_points(h, s));
    em->array_end(ctx);

    if (h->phase == RULES_HEARTS_MOON && !st->over)
        em->integer(ctx, "moon_shooter", h->shooter);
    else
        em->null(ctx, "moon_shooter");
}

/* A pass is secret until the exchange; then the receiver sees its cards too. */
static void hearts_secrecy(const struct rules_state *st, int seat, const struct rules_move *m,
                           struct rules_secrecy_info *out)
{
    const struct rules_hearts *h = &st->g.hearts;
    if (m->verb == RULES_PASS && h->phase == RULES_HEARTS_PASS) {
        out->kind = RULES_SECRET_CARDS;
        out->receiver = (int8_t)pass_target(seat, h->pass_dir, st->nseats);
    }
}

static uint32_t hearts_secret_pending(const struct rules_state *st)
{
    const struct rules_hearts *h = &st->g.hearts;
    return h->phase == RULES_HEARTS_PASS ? h->passed : 0;
}

const struct rules_game_ops rules_hearts_ops = {
    .name = "hearts",
    .min_seats = 3,
    .max_seats = 6,
    .default_seats = 4,
    .default_target = 100,
    .has_moon = true,
    .low_wins = true,
    .init = hearts_init,
    .due = hearts_due,
    .shuffle_source = NULL,
    .chance = hearts_chance,
    .apply = hearts_apply,
    .legal = hearts_legal,
    .to_move = hearts_to_move,
    .secrecy = hearts_secrecy,
    .secret_pending = hearts_secret_pending,
    .view = hearts_view,
};
