/* game.c - the generic match driver: game registry, options, chance events, resign,
 * the checks every game shares, results and ranking. Game rules live in one file each.
 */
#include "rules-int.h"

#include <stdio.h>
#include <string.h>

static const struct rules_game_ops *const games[RULES_NGAMES] = {
    [RULES_GAME_HEARTS] = &rules_hearts_ops,
    [RULES_GAME_SNAG] = &rules_snag_ops,
    [RULES_GAME_SPEED] = &rules_speed_ops,
    [RULES_GAME_HORSESHOE] = &rules_horseshoe_ops,
    [RULES_GAME_HORSE_THIEF] = &rules_horse_thief_ops,
};

static const char *const game_names[RULES_NGAMES] = {
    [RULES_GAME_HEARTS] = "hearts",
    [RULES_GAME_HORSESHOE] = "horseshoe",
    [RULES_GAME_SNAG] = "snag",
    [RULES_GAME_HORSE_THIEF] = "horse-thief",
    [RULES_GAME_SPEED] = "speed",
};

static const struct rules_game_ops *ops_of(const struct rules_state *st)
{
    return games[st->game];
}

const char *rules_game_name(enum rules_game_id g)
{
    if ((unsigned)g >= RULES_NGAMES)
        return NULL;
    return game_names[g];
}

const char *rules_game_list(char *out, size_t size)
{
    size_t len = 0;
    out[0] = '\0';
    for (int g = 0; g < RULES_NGAMES && len < size; g++)
        len += (size_t)snprintf(out + len, size - len, "%s%s",
                                g == 0 ? "" : g == RULES_NGAMES - 1 ? " or " : ", ",
                                game_names[g]);
    return out;
}

bool rules_game_lookup(const char *name, enum rules_game_id *out)
{
    for (int g = 0; g < RULES_NGAMES; g++) {
        if (games[g] && strcmp(name, game_names[g]) == 0) {
            *out = (enum rules_game_id)g;
            return true;
        }
    }
    return false;
}

bool rules_game_realtime(enum rules_game_id g)
{
    return (unsigned)g < RULES_NGAMES && games[g] && games[g]->realtime;
}

bool rules_game_low_wins(enum rules_game_id g)
{
    return (unsigned)g < RULES_NGAMES && games[g] && games[g]->low_wins;
}

const char *rules_moon_name(enum rules_moon m)
{
    switch (m) {
    case RULES_MOON_ADD: return "add";
    case RULES_MOON_SUBTRACT: return "subtract";
    case RULES_MOON_CHOOSE: return "choose";
    }
    return NULL;
}

void rules_options_default(enum rules_game_id g, struct rules_options *o)
{
    const struct rules_game_ops *ops = games[g];
    o->seats = ops->default_seats;
    o->target = ops->default_target;
    o->moon = RULES_MOON_ADD;
    o->first_dealer = 0;
}

bool rules_option_known(enum rules_game_id g, const char *key)
{
    if (!strcmp(key, "seats") || !strcmp(key, "target") || !strcmp(key, "first_dealer"))
        return true;
    return games[g]->has_moon && !strcmp(key, "moon");
}

bool rules_options_check(enum rules_game_id g, const struct rules_options *o, struct err *e)
{
    const struct rules_game_ops *ops = games[g];
    if (o->seats < ops->min_seats || o->seats > ops->max_seats) {
        if (ops->min_seats == ops->max_seats)
            return err_set(e, ERR_INVALID, "bad_option", "%s is played by exactly %d seats",
                           ops->name, ops->min_seats);
        return err_set(e, ERR_INVALID, "bad_option", "%s takes %d to %d seats", ops->name,
                       ops->min_seats, ops->max_seats);
    }
    if (o->target < 1)
        return err_set(e, ERR_INVALID, "bad_option", "target must be an integer >= 1");
    if (o->first_dealer < 0 || o->first_dealer >= o->seats)
        return err_set(e, ERR_INVALID, "bad_option", "first_dealer must be a seat, 0 to %d",
                       o->seats - 1);
    if (o->moon < RULES_MOON_ADD || o->moon > RULES_MOON_CHOOSE)
        return err_set(e, ERR_INVALID, "bad_option", "moon must be add, subtract or choose");
    return true;
}

bool rules_init(struct rules_state *st, enum rules_game_id g, const struct rules_options *o,
                struct err *e)
{
    if ((unsigned)g >= RULES_NGAMES || !games[g])
        return err_set(e, ERR_INVALID, "unknown_game", "unknown game");
    if (!rules_options_check(g, o, e))
        return false;
    memset(st, 0, sizeof *st);
    st->game = (uint8_t)g;
    st->nseats = (uint8_t)o->seats;
    st->moon = (uint8_t)o->moon;
    st->first_dealer = (uint8_t)o->first_dealer;
    st->resigned = -1;
    st->target = o->target;
    games[g]->init(st);
    return true;
}

enum rules_due rules_due(const struct rules_state *st)
{
    if (st->over)
        return RULES_DUE_NONE;
    return ops_of(st)->due(st);
}

int rules_chance_source(const struct rules_state *st, rules_card out[RULES_NCARDS])
{
    switch (rules_due(st)) {
    case RULES_DUE_DEAL:
        for (int c = 0; c < RULES_NCARDS; c++)
            out[c] = (rules_card)c;
        return RULES_NCARDS;
    case RULES_DUE_SHUFFLE:
        return ops_of(st)->shuffle_source(st, out);
    case RULES_DUE_NONE:
        break;
    }
    return 0;
}

static const char *due_name(enum rules_due d)
{
    return d == RULES_DUE_DEAL ? "deal" : d == RULES_DUE_SHUFFLE ? "shuffle" : "nothing";
}

bool rules_chance(struct rules_state *st, enum rules_due kind, const rules_card *cards, int n,
                  struct err *e)
{
    enum rules_due due = rules_due(st);
    if (due == RULES_DUE_NONE)
        return err_set(e, ERR_INVALID, "not_due", "no %s is due here%s", due_name(kind),
                       st->over ? ": the match is over" : "");
    if (due != kind)
        return err_set(e, ERR_INVALID, "not_due", "a %s is due here, not a %s", due_name(due),
                       due_name(kind));

    rules_card source[RULES_NCARDS];
    int m = rules_chance_source(st, source);
    uint64_t want = 0, got = 0;
    for (int i = 0; i < m; i++)
        want |= RULES_BIT(source[i]);
    for (int i = 0; i < n; i++) {
        if (cards[i] >= RULES_NCARDS || (got & RULES_BIT(cards[i])))
            return err_set(e, ERR_INVALID, "bad_deal", "the %s repeats or invents a card",
                           due_name(kind));
        got |= RULES_BIT(cards[i]);
    }
    if (n != m || got != want) {
        if (kind == RULES_DUE_DEAL)
            return err_set(e, ERR_INVALID, "bad_deal",
                           "a deal must be a permutation of the 52 cards (got %d cards)", n);
        return err_set(e, ERR_INVALID, "bad_deal",
                       "a shuffle must hold exactly the pile's %d cards (got %d)", m, n);
    }
    ops_of(st)->chance(st, cards, n);
    return true;
}

/* A move built in memory rather than parsed may hold anything: the games may assume
 * that a card is a card, a set holds only cards, a column is 1..5 and moon is 0 or 1. */
static bool move_well_formed(const struct rules_move *m, struct err *e)
{
    bool ok;
    switch (m->verb) {
    case RULES_PLAY:
    case RULES_LEAD:
    case RULES_TAKE:
    case RULES_MOVE:
        if (m->card >= RULES_NCARDS)
            return err_set(e, ERR_ILLEGAL, "bad_card", "not a card");
        return true;
    case RULES_PASS:
    case RULES_DISCARD:
        if (m->cards & ~RULES_ALL_CARDS)
            return err_set(e, ERR_ILLEGAL, "bad_card", "not a card");
        ok = m->ncards >= rules_popcount(m->cards);
        break;
    case RULES_MOON:
        ok = m->arg <= RULES_MOON_SUBTRACT_ARG;
        break;
    case RULES_FLIP:
        ok = m->arg >= 1 && m->arg <= 5;
        break;
    default:
        ok = m->verb < RULES_NVERBS;
        break;
    }
    return ok || err_set(e, ERR_ILLEGAL, "bad_move", "not a well-formed move");
}

bool rules_apply(struct rules_state *st, int seat, const struct rules_move *m, struct err *e)
{
    if (seat < 0 || seat >= st->nseats)
        return err_set(e, ERR_ILLEGAL, "bad_seat", "seat %d is not a seat of this match (0 to %d)",
                       seat, st->nseats - 1);
    if (st->over)
        return err_set(e, ERR_ILLEGAL, "match_over", "the match is over");
    if (!move_well_formed(m, e))
        return false;
    if (m->verb == RULES_RESIGN) {
        st->resigned = (int8_t)seat;
        st->over = true;
        return true;
    }
    enum rules_due due = ops_of(st)->due(st);
    if (due != RULES_DUE_NONE)
        return err_set(e, ERR_ILLEGAL, "chance_due", "a %s is due before any move",
                       due_name(due));
    return ops_of(st)->apply(st, seat, m, e);
}

int rules_legal(const struct rules_state *st, int seat, struct rules_move *out, int max)
{
    if (st->over || seat < 0 || seat >= st->nseats || ops_of(st)->due(st) != RULES_DUE_NONE)
        return 0;
    return ops_of(st)->legal(st, seat, out, max);
}

uint32_t rules_to_move(const struct rules_state *st)
{
    if (st->over || ops_of(st)->due(st) != RULES_DUE_NONE)
        return 0;
    return ops_of(st)->to_move(st);
}

void rules_rank(const int32_t *totals, int n, bool low_wins, int resigned, struct rules_result *r)
{
    /* Insertion sort of the seats by standing; stable, so equal seats stay ascending. */
    uint8_t order[RULES_MAX_SEATS];
    int k = 0;
    for (int s = 0; s < n; s++) {
        if (s == resigned)
            continue;
        int j = k++;
        while (j > 0) {
            int32_t a = totals[order[j - 1]], b = totals[s];
            bool after = low_wins ? a > b : a < b;
            if (!after)
                break;
            order[j] = order[j - 1];
            j--;
        }
        order[j] = (uint8_t)s;
    }
    r->nplaces = 0;
    for (int i = 0; i < k; i++) {
        if (i == 0 || totals[order[i]] != totals[order[i - 1]])
            r->place_size[r->nplaces++] = 0;
        r->place_size[r->nplaces - 1]++;
        r->order[i] = order[i];
    }
    if (resigned >= 0 && resigned < n) {
        r->order[k] = (uint8_t)resigned;
        r->place_size[r->nplaces++] = 1;
    }
}

void rules_result(const struct rules_state *st, struct rules_result *r)
{
    memset(r, 0, sizeof *r);
    r->finished = st->over;
    r->nseats = st->nseats;
    r->resigned = st->resigned;
    memcpy(r->totals, st->totals, sizeof r->totals);
    rules_rank(st->totals, st->nseats, ops_of(st)->low_wins, st->resigned, r);
    r->to_move = rules_to_move(st);
}

void rules_view(const struct rules_state *st, int seat, const struct rules_emit *em, void *ctx)
{
    if (seat < RULES_SEAT_ALL || seat >= st->nseats)
        seat = -1;
    ops_of(st)->view(st, seat, em, ctx);
}

void rules_hand_done(struct rules_state *st, const int32_t *scores)
{
    for (int s = 0; s < st->nseats; s++) {
        st->totals[s] += scores[s];
        st->hand_scores[s] = scores[s];
    }
    st->hands_done++;
}

bool rules_target_reached(const struct rules_state *st)
{
    for (int s = 0; s < st->nseats; s++)
        if (st->totals[s] >= st->target)
            return true;
    return false;
}

int rules_mask_cards(uint64_t mask, rules_card *out)
{
    int n = 0;
    while (mask) {
        out[n++] = (rules_card)rules_lowest(mask);
        mask &= mask - 1;
    }
    return n;
}

void rules_emit_cards(const struct rules_emit *em, void *ctx, const char *key, uint64_t mask)
{
    if (em->cards) {
        em->cards(ctx, key, mask);
        return;
    }
    em->array_begin(ctx, key);
    while (mask) {
        em->card(ctx, NULL, (rules_card)rules_lowest(mask));
        mask &= mask - 1;
    }
    em->array_end(ctx);
}

void rules_emit_ints(const struct rules_emit *em, void *ctx, const char *key,
                     const int32_t *v, int n)
{
    em->array_begin(ctx, key);
    for (int i = 0; i < n; i++)
        em->integer(ctx, NULL, v[i]);
    em->array_end(ctx);
}

void rules_move_secrecy(const struct rules_state *before, int seat, const struct rules_move *m,
                        struct rules_secrecy_info *out)
{
    out->kind = RULES_OPEN;
    out->receiver = -1;
    if (before->over || seat < 0 || seat >= before->nseats || m->verb == RULES_RESIGN)
        return;
    if (ops_of(before)->secrecy)
        ops_of(before)->secrecy(before, seat, m, out);
}

uint32_t rules_secret_pending(const struct rules_state *st)
{
    if (st->over || !ops_of(st)->secret_pending)
        return 0;
    return ops_of(st)->secret_pending(st);
}
