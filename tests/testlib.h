/* testlib.h - what the rules tests share: a seeded PRNG, decks, applying move text,
 * the generic "a move is accepted iff it is listed" check, and a view checker that
 * collects every card a view shows. Tests only; never linked into the programs.
 */
#ifndef CARDPOST_TESTLIB_H
#define CARDPOST_TESTLIB_H

#include <stdbool.h>
#include <stdint.h>

#include "rules.h"

/* splitmix64: a small, fast, seeded generator; the same seed gives the same games. */
uint64_t tl_rand(uint64_t *state);
/* Uniform in [0, n). */
uint32_t tl_below(uint64_t *state, uint32_t n);

/* A uniformly shuffled deck of the 52 cards. */
void tl_random_deck(uint64_t *rng, rules_card deck[RULES_NCARDS]);

/* Parse and apply `text` as `seat`'s move. */
bool tl_apply(struct rules_state *st, int seat, const char *text, struct err *e);

/* Parse `text` into a move; aborts the test (cmocka fail) when it does not parse. */
struct rules_move tl_move(const char *text);

/* Whether `m` is among rules_legal(st, seat). */
bool tl_listed(const struct rules_state *st, int seat, const struct rules_move *m);

/* Every candidate move worth trying on this state: each single-card verb with each of the
 * 52 cards, every verb without arguments, moon add/subtract, flip 1..5, and `extra`
 * random pass/discard sets of 0 to 4 cards (biased to the seat's own cards when `hand`
 * is given). Writes at most `max`; returns the count. */
int tl_candidates(uint64_t *rng, uint64_t hand, int extra, struct rules_move *out, int max);

/* The generic legality property: for every seat and every candidate, applying the move to
 * a copy of `st` succeeds exactly when rules_legal lists it; to_move is exactly the seats
 * with a listed move; every listed move is accepted. Returns NULL when it holds, else a
 * static message saying what broke. */
const char *tl_check_legality(const struct rules_state *st, uint64_t *rng);

/* Every card the view of `seat` (-1: spectator) shows, as a set; also checks that the
 * emitter calls nest properly (returns false in *well_formed otherwise). */
uint64_t tl_view_cards(const struct rules_state *st, int seat, bool *well_formed);

#endif
