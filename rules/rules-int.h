/* rules-int.h - what the engine's own files share: the game interface every game
 * implements, and small card-set helpers. Not installed; not for other components.
 */
#ifndef CARDPOST_RULES_INT_H
#define CARDPOST_RULES_INT_H

#include "rules.h"

/* One game. The generic layer (game.c) handles what is common to every game before it
 * calls these: seat range, `resign`, the match being over, a chance event being due,
 * the permutation check of a deal, and leaving the state unchanged when a move fails
 * (apply may scribble on the state only after it has decided the move is legal). */
struct rules_game_ops {
    const char *name;
    int min_seats, max_seats, default_seats;
    int64_t default_target;
    bool has_moon;    /* the "moon" option exists */
    bool low_wins;    /* ranking by ascending totals */
    bool realtime;    /* every seat may act at any time (Speed): no turns to announce */

    /* Set up the game-specific part; the common part is filled in already. */
    void (*init)(struct rules_state *st);
    /* Which chance event is due (never called once the match is over). */
    enum rules_due (*due)(const struct rules_state *st);
    /* For a Speed shuffle: the pile bottom to top; NULL for games with deals only. */
    int (*shuffle_source)(const struct rules_state *st, rules_card out[RULES_NCARDS]);
    /* Apply the due chance event; the cards are checked already. */
    void (*chance)(struct rules_state *st, const rules_card *cards, int n);
    /* Apply a move other than resign; seat is in range, nothing is due, not over. */
    bool (*apply)(struct rules_state *st, int seat, const struct rules_move *m, struct err *e);
    /* Legal moves other than resign, canonical order; returns the count (writes <= max). */
    int (*legal)(const struct rules_state *st, int seat, struct rules_move *out, int max);
    /* Seats with a legal move other than resign (not called while due or over). */
    uint32_t (*to_move)(const struct rules_state *st);
    /* Optional (NULL: every move open, nothing pending): how visible a legal move is,
     * and the seats whose secret submission is not yet resolved (see rules.h). */
    void (*secrecy)(const struct rules_state *st, int seat, const struct rules_move *m,
                    struct rules_secrecy_info *out);
    uint32_t (*secret_pending)(const struct rules_state *st);
    /* The view's game-specific members (called while the match runs and after). */
    void (*view)(const struct rules_state *st, int seat, const struct rules_emit *em, void *ctx);
};

extern const struct rules_game_ops rules_hearts_ops;
extern const struct rules_game_ops rules_snag_ops;
extern const struct rules_game_ops rules_speed_ops;
extern const struct rules_game_ops rules_horseshoe_ops;
extern const struct rules_game_ops rules_horse_thief_ops;

/* Record a completed hand: add `scores` to the totals, remember them as the last hand's
 * scores and count the hand. */
void rules_hand_done(struct rules_state *st, const int32_t *scores);

/* Whether any total has reached the target. */
bool rules_target_reached(const struct rules_state *st);

/* Set bits of `mask` as a card list, lowest first. Returns the count. */
int rules_mask_cards(uint64_t mask, rules_card *out);

/* Emit a set of cards as an array, deck order. */
void rules_emit_cards(const struct rules_emit *em, void *ctx, const char *key, uint64_t mask);

/* Emit an array of integers. */
void rules_emit_ints(const struct rules_emit *em, void *ctx, const char *key,
                     const int32_t *v, int n);

static inline int rules_lowest(uint64_t mask)
{
    return __builtin_ctzll(mask);
}

#endif
