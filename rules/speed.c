/* speed.c - Speed for two seats (rules.md §5): triangles of five columns, a pile fed by
 * automatic alternating draws once both seats are ready, reshuffles of the pile as
 * `shuffle` events, the drawn game when a whole pass through the deck produced no play,
 * and a match of `target` won games with the deal alternating.
 */
#include "rules-int.h"

#include <string.h>

/* Deal positions (rules.md §5.1): t0..t14 of a triangle, column by column, bottom first. */
static const uint8_t column_start[RULES_SPEED_COLUMNS] = {0, 1, 3, 6, 10};
#define TRIANGLE_CARDS 15
#define DECK_START 30

static struct rules_speed_column *col_of(struct rules_state *st, int seat, int col)
{
    return &st->g.speed.columns[seat][col];
}

static const struct rules_speed_column *ccol_of(const struct rules_state *st, int seat, int col)
{
    return &st->g.speed.columns[seat][col];
}

/* The face-up top cards of `seat`'s columns, as a set. */
static uint64_t face_up_tops(const struct rules_state *st, int seat)
{
    uint64_t m = 0;
    for (int c = 0; c < RULES_SPEED_COLUMNS; c++) {
        const struct rules_speed_column *k = ccol_of(st, seat, c);
        if (k->count && k->up)
            m |= RULES_BIT(k->cards[k->count - 1]);
    }
    return m;
}

/* The column (0-based) whose face-up top is `card`, or -1. */
static int column_with_top(const struct rules_state *st, int seat, rules_card card)
{
    for (int c = 0; c < RULES_SPEED_COLUMNS; c++) {
        const struct rules_speed_column *k = ccol_of(st, seat, c);
        if (k->count && k->up && k->cards[k->count - 1] == card)
            return c;
    }
    return -1;
}

/* The lowest-numbered empty column of `seat` (0-based), or -1. */
static int first_empty(const struct rules_state *st, int seat)
{
    for (int c = 0; c < RULES_SPEED_COLUMNS; c++)
        if (ccol_of(st, seat, c)->count == 0)
            return c;
    return -1;
}

static int triangle_count(const struct rules_state *st, int seat)
{
    int n = 0;
    for (int c = 0; c < RULES_SPEED_COLUMNS; c++)
        n += ccol_of(st, seat, c)->count;
    return n;
}

/* One rank apart, wrapping: A is next to 2 and to K. */
static bool adjacent(rules_card a, rules_card b)
{
    int d = (RULES_RANK(a) - RULES_RANK(b) + 13) % 13;
    return d == 1 || d == 12;
}

static rules_card pile_top(const struct rules_speed *s)
{
    return s->npile ? s->pile[s->npile - 1] : RULES_NO_CARD;
}

/* The face-up tops of `seat`'s columns that may go onto the pile now. */
static uint64_t playable(const struct rules_state *st, int seat)
{
    rules_card top = pile_top(&st->g.speed);
    uint64_t out = 0;
    if (top == RULES_NO_CARD)
        return 0;
    for (uint64_t m = face_up_tops(st, seat); m; m &= m - 1) {
        rules_card c = (rules_card)rules_lowest(m);
        if (adjacent(c, top))
            out |= RULES_BIT(c);
    }
    return out;
}

/* The face-up tops of `seat`'s columns that `move` may take now. */
static uint64_t movable(const struct rules_state *st, int seat)
{
    if (first_empty(st, seat) < 0)
        return 0;
    uint64_t out = 0;
    for (int c = 0; c < RULES_SPEED_COLUMNS; c++) {
        const struct rules_speed_column *k = ccol_of(st, seat, c);
        if (k->count >= 2 && k->up)
            out |= RULES_BIT(k->cards[k->count - 1]);
    }
    return out;
}

/* Columns (bit c = column c + 1) whose top card is face down. */
static unsigned flippable(const struct rules_state *st, int seat)
{
    unsigned out = 0;
    for (int c = 0; c < RULES_SPEED_COLUMNS; c++) {
        const struct rules_speed_column *k = ccol_of(st, seat, c);
        if (k->count && !k->up)
            out |= 1u << c;
    }
    return out;
}

static void speed_init(struct rules_state *st)
{
    struct rules_speed *s = &st->g.speed;
    s->phase = RULES_SPEED_DEAL;
    s->dealer = st->first_dealer;
    s->drawer = st->first_dealer;
}

static enum rules_due speed_due(const struct rules_state *st)
{
    switch (st->g.speed.phase) {
    case RULES_SPEED_DEAL: return RULES_DUE_DEAL;
    case RULES_SPEED_SHUFFLE: return RULES_DUE_SHUFFLE;
    default: return RULES_DUE_NONE;
    }
}

static int speed_shuffle_source(const struct rules_state *st, rules_card out[RULES_NCARDS])
{
    const struct rules_speed *s = &st->g.speed;
    memcpy(out, s->pile, s->npile);
    return s->npile;
}

/* The top of the deck goes face up onto the pile; the next draw is the other seat's.
 * A new pile top withdraws both seats' ready. The deck is not empty. */
static void draw(struct rules_speed *s)
{
    s->pile[s->npile++] = s->deck[0];
    s->ndeck--;
    memmove(s->deck, s->deck + 1, s->ndeck);
    s->drawer ^= 1;
    s->ready = 0;
}

/* A game is decided: `winner` won it, or nobody (-1: drawn). The next deal is due,
 * unless a seat has now won `target` games. */
static void end_game(struct rules_state *st, int winner)
{
    struct rules_speed *s = &st->g.speed;
    int32_t scores[RULES_MAX_SEATS] = {0};
    if (winner >= 0)
        scores[winner] = 1;
    rules_hand_done(st, scores);
    s->ready = 0;
    if (rules_target_reached(st)) {
        st->over = true;
        s->phase = RULES_SPEED_OVER;
        return;
    }
    /* The cards go back to be dealt again: nothing of the old layout stays in view. */
    memset(s, 0, sizeof *s);
    s->phase = RULES_SPEED_DEAL;
    s->dealer = (uint8_t)((st->first_dealer + st->hands_done) % 2);
    s->drawer = s->dealer;
}

/* Both seats are ready: a draw is due. From an empty deck it needs a reshuffle first,
 * or, if nothing was played from a triangle during the whole pass, the game is drawn. */
static void draw_due(struct rules_state *st)
{
    struct rules_speed *s = &st->g.speed;
    if (s->ndeck > 0) {
        draw(s);
        return;
    }
    if (!s->played) {
        end_game(st, -1);
        return;
    }
    s->phase = RULES_SPEED_SHUFFLE;
}

static void speed_chance(struct rules_state *st, const rules_card *cards, int n)
{
    struct rules_speed *s = &st->g.speed;
    if (s->phase == RULES_SPEED_SHUFFLE) {
        /* The whole pile, shuffled, is the new deck; the due draw is made from it. */
        memcpy(s->deck, cards, (size_t)n);
        s->ndeck = (uint8_t)n;
        s->npile = 0;
        s->played = 0;
        s->shuffles++;
        s->phase = RULES_SPEED_PLAY;
        draw(s);
        return;
    }
    uint8_t dealer = (uint8_t)((st->first_dealer + st->hands_done) % 2);
    memset(s, 0, sizeof *s);
    s->dealer = dealer;
    for (int seat = 0; seat < 2; seat++) {
        const rules_card *t = cards + (seat == dealer ? TRIANGLE_CARDS : 0);
        for (int c = 0; c < RULES_SPEED_COLUMNS; c++) {
            struct rules_speed_column *k = col_of(st, seat, c);
            k->count = (uint8_t)(c + 1);
            memcpy(k->cards, t + column_start[c], k->count);
            k->up = 1;
        }
    }
    s->ndeck = (uint8_t)(n - DECK_START);
    memcpy(s->deck, cards + DECK_START, s->ndeck);
    s->phase = RULES_SPEED_PLAY;
    s->drawer = dealer;
    draw(s); /* the dealer's first draw, at once */
}

/* Why `card` is not a face-up top of `seat`'s columns. Never tells a face-down card
 * from a card elsewhere: a seat does not know its own face-down cards either. */
static bool refuse_card(const struct rules_state *st, int seat, rules_card card, struct err *e)
{
    char c[3];
    rules_card_format(card, c);
    if (column_with_top(st, 1 - seat, card) >= 0)
        return err_set(e, ERR_ILLEGAL, "not_your_card",
                       "%s is a card of seat %d's triangle, not of seat %d's", c, 1 - seat,
                       seat);
    return err_set(e, ERR_ILLEGAL, "not_face_up",
                   "%s is not a face-up card at the top of one of seat %d's columns", c, seat);
}

static bool apply_play(struct rules_state *st, int seat, const struct rules_move *m,
                       struct err *e)
{
    struct rules_speed *s = &st->g.speed;
    int col = column_with_top(st, seat, m->card);
    if (col < 0)
        return refuse_card(st, seat, m->card, e);
    if (!adjacent(m->card, pile_top(s))) {
        char c[3], t[3];
        rules_card_format(m->card, c);
        rules_card_format(pile_top(s), t);
        return err_set(e, ERR_ILLEGAL, "not_adjacent",
                       "%s is not one rank away from %s, the top of the pile", c, t);
    }
    struct rules_speed_column *k = col_of(st, seat, col);
    k->count--;
    k->up = 0; /* the card exposed stays face down until it is flipped */
    s->pile[s->npile++] = m->card;
    s->played = 1;
    s->ready = 0;
    if (triangle_count(st, seat) == 0)
        end_game(st, seat);
    return true;
}

static bool apply_move(struct rules_state *st, int seat, const struct rules_move *m,
                       struct err *e)
{
    struct rules_speed *s = &st->g.speed;
    int from = column_with_top(st, seat, m->card);
    if (from < 0)
        return refuse_card(st, seat, m->card, e);
    int to = first_empty(st, seat);
    if (to < 0)
        return err_set(e, ERR_ILLEGAL, "no_empty_column",
                       "seat %d has no empty column to move a card to", seat);
    struct rules_speed_column *k = col_of(st, seat, from);
    if (k->count < 2) {
        char c[3];
        rules_card_format(m->card, c);
        return err_set(e, ERR_ILLEGAL, "only_card",
                       "%s is the only card of column %d: moving it would change nothing", c,
                       from + 1);
    }
    k->count--;
    k->up = 0;
    struct rules_speed_column *dst = col_of(st, seat, to);
    dst->cards[0] = m->card;
    dst->count = 1;
    dst->up = 1;
    s->ready &= (uint8_t)~(1u << seat);
    return true;
}

static bool apply_flip(struct rules_state *st, int seat, const struct rules_move *m,
                       struct err *e)
{
    struct rules_speed *s = &st->g.speed;
    if (m->arg < 1 || m->arg > RULES_SPEED_COLUMNS)
        return err_set(e, ERR_ILLEGAL, "bad_column", "columns are numbered 1 to 5");
    struct rules_speed_column *k = col_of(st, seat, m->arg - 1);
    if (k->count == 0)
        return err_set(e, ERR_ILLEGAL, "empty_column", "column %d of seat %d is empty", m->arg,
                       seat);
    if (k->up)
        return err_set(e, ERR_ILLEGAL, "already_face_up",
                       "the top card of column %d is face up already", m->arg);
    k->up = 1;
    s->ready &= (uint8_t)~(1u << seat);
    return true;
}

static bool apply_ready(struct rules_state *st, int seat, struct err *e)
{
    struct rules_speed *s = &st->g.speed;
    if (s->ready & (1u << seat))
        return err_set(e, ERR_ILLEGAL, "already_ready",
                       "seat %d is ready already; the other seat has to be ready too", seat);
    s->ready |= (uint8_t)(1u << seat);
    if (s->ready == 3)
        draw_due(st);
    return true;
}

static bool speed_apply(struct rules_state *st, int seat, const struct rules_move *m,
                        struct err *e)
{
    /* The generic layer has refused every move while a deal or shuffle is due or the
     * match is over: the phase is play. */
    switch (m->verb) {
    case RULES_PLAY: return apply_play(st, seat, m, e);
    case RULES_MOVE: return apply_move(st, seat, m, e);
    case RULES_FLIP: return apply_flip(st, seat, m, e);
    case RULES_READY: return apply_ready(st, seat, e);
    default:
        return err_set(e, ERR_ILLEGAL, "not_a_speed_move", "'%s' is not a move of speed",
                       rules_verb_name((enum rules_verb)m->verb));
    }
}

static int speed_legal(const struct rules_state *st, int seat, struct rules_move *out, int max)
{
    const struct rules_speed *s = &st->g.speed;
    int k = 0;
    if (s->phase != RULES_SPEED_PLAY)
        return 0;
#define PUT(mv)                                                                                \
    do {                                                                                       \
        if (k < max)                                                                           \
            out[k] = (mv);                                                                     \
        k++;                                                                                   \
    } while (0)
    for (uint64_t m = playable(st, seat); m; m &= m - 1)
        PUT(((struct rules_move){.verb = RULES_PLAY, .card = (uint8_t)rules_lowest(m)}));
    for (uint64_t m = movable(st, seat); m; m &= m - 1)
        PUT(((struct rules_move){.verb = RULES_MOVE, .card = (uint8_t)rules_lowest(m)}));
    unsigned f = flippable(st, seat);
    for (int c = 0; c < RULES_SPEED_COLUMNS; c++)
        if (f & (1u << c))
            PUT(((struct rules_move){.verb = RULES_FLIP, .card = RULES_NO_CARD,
                                     .arg = (uint8_t)(c + 1)}));
    if (!(s->ready & (1u << seat)))
        PUT(((struct rules_move){.verb = RULES_READY, .card = RULES_NO_CARD}));
#undef PUT
    return k;
}

static uint32_t speed_to_move(const struct rules_state *st)
{
    uint32_t out = 0;
    for (int seat = 0; seat < 2; seat++)
        if (speed_legal(st, seat, NULL, 0) > 0)
            out |= 1u << seat;
    return out;
}

static const char *phase_name(const struct rules_state *st)
{
    if (st->over)
        return "over";
    switch (st->g.speed.phase) {
    case RULES_SPEED_DEAL: return "deal";
    case RULES_SPEED_PLAY: return "play";
    case RULES_SPEED_SHUFFLE: return "shuffle";
    default: return "over";
    }
}

static void emit_card_or_null(const struct rules_emit *em, void *ctx, const char *key,
                              rules_card c)
{
    if (c == RULES_NO_CARD)
        em->null(ctx, key);
    else
        em->card(ctx, key, c);
}

static void emit_list(const struct rules_emit *em, void *ctx, const char *key,
                      const uint8_t *cards, int n)
{
    em->array_begin(ctx, key);
    for (int i = 0; i < n; i++)
        em->card(ctx, NULL, cards[i]);
    em->array_end(ctx);
}

/* The pile is face up; its top is what matters, so the view shows the top and the count
 * (and, once the match is over, every card). Face-down cards and the deck are counts. */
static void speed_view(const struct rules_state *st, int seat, const struct rules_emit *em,
                       void *ctx)
{
    const struct rules_speed *s = &st->g.speed;
    bool all = st->over || seat == RULES_SEAT_ALL; /* over: the whole log is public */
    (void)seat; /* both seats and spectators see the same: nobody sees a face-down card */

    em->string(ctx, "phase", phase_name(st));
    bool between = s->phase == RULES_SPEED_DEAL || s->phase == RULES_SPEED_OVER;
    em->integer(ctx, "game_number", st->hands_done + (between ? 0 : 1));
    em->integer(ctx, "dealer", s->dealer);
    em->integer(ctx, "next_drawer", s->drawer);
    em->boolean(ctx, "played_since_shuffle", s->played);
    em->integer(ctx, "shuffles", s->shuffles);

    em->object_begin(ctx, "pile");
    em->integer(ctx, "count", s->npile);
    emit_card_or_null(em, ctx, "top", pile_top(s));
    if (all)
        emit_list(em, ctx, "cards", s->pile, s->npile);
    em->object_end(ctx);

    em->object_begin(ctx, "deck");
    em->integer(ctx, "count", s->ndeck);
    if (all)
        emit_list(em, ctx, "cards", s->deck, s->ndeck);
    em->object_end(ctx);

    em->array_begin(ctx, "triangles");
    for (int t = 0; t < 2; t++) {
        em->object_begin(ctx, NULL);
        em->integer(ctx, "seat", t);
        em->integer(ctx, "count", triangle_count(st, t));
        em->array_begin(ctx, "columns");
        for (int c = 0; c < RULES_SPEED_COLUMNS; c++) {
            const struct rules_speed_column *k = ccol_of(st, t, c);
            em->object_begin(ctx, NULL);
            em->integer(ctx, "count", k->count);
            em->boolean(ctx, "face_up", k->count && k->up);
            emit_card_or_null(em, ctx, "top",
                              k->count && k->up ? k->cards[k->count - 1] : RULES_NO_CARD);
            if (all)
                emit_list(em, ctx, "cards", k->cards, k->count);
            em->object_end(ctx);
        }
        em->array_end(ctx);
        em->object_end(ctx);
    }
    em->array_end(ctx);

    em->array_begin(ctx, "ready");
    for (int t = 0; t < 2; t++)
        em->boolean(ctx, NULL, (s->ready >> t) & 1);
    em->array_end(ctx);
    rules_emit_ints(em, ctx, "games_won", st->totals, 2);
}

const struct rules_game_ops rules_speed_ops = {
    .name = "speed",
    .min_seats = 2,
    .max_seats = 2,
    .default_seats = 2,
    .default_target = 1,
    .has_moon = false,
    .low_wins = false,
    .realtime = true,
    .init = speed_init,
    .due = speed_due,
    .shuffle_source = speed_shuffle_source,
    .chance = speed_chance,
    .apply = speed_apply,
    .legal = speed_legal,
    .to_move = speed_to_move,
    .view = speed_view,
};
