/* testlib.h - what the rules tests share: a seeded PRNG, decks, cards and stacked decks
 * from text, applying move text and scripts of moves,
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

/* ---- Cards and decks from text (each fails the test on a word that is not a card) ---- */

/* One card: "QS". */
rules_card tl_card(const char *text);

/* The cards of a space-separated list ("2C 3C QS"; NULL: none), in order, into `out`
 * (room for RULES_NCARDS); returns how many. */
int tl_card_list(const char *text, rules_card *out);

/* The set of the cards of a list; a card named twice fails the test. */
uint64_t tl_cards(const char *text);

/* A stacked deck: the cards of the list `top` from position 0 on, then every card not
 * named in deck order; a card named twice fails the test. Returns how many were named. */
int tl_stack(const char *top, rules_card deck[RULES_NCARDS]);

/* Apply a script of moves, "0:lead 8S;1:play QH" (a seat digit, one separator, the move;
 * moves separated by ';', spaces around them ignored), failing the test on a refusal. */
void tl_script(struct rules_state *st, const char *script);

/* `seat`'s legal moves as canonical text joined by `sep` (a static buffer). */
const char *tl_legal_text(const struct rules_state *st, int seat, const char *sep);

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
