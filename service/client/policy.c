/* policy.c - how `cardpost bot` picks a move (docs/bots.md): the random policy, the table of
 * the games' sensible policies (service/client/policies/, one file per game) with the first
 * legal move for a game that has none, and the card helpers those policies share.
 */
#include "bot-policy.h"

#include <stdio.h>
#include <string.h>

#include "bot.h"

/* The games that have a sensible policy. A game missing here is still played: with its first
 * legal move (tests/test_games.c lists which games have one). */
static const struct bot_policy *const policies[] = {
    &bot_hearts_policy, &bot_horseshoe_policy, &bot_snag_policy, &bot_horse_thief_policy,
    &bot_speed_policy,
};

const struct bot_policy *bot_policy_for(const char *game)
{
    for (size_t i = 0; game && i < sizeof policies / sizeof *policies; i++)
        if (!strcmp(policies[i]->game, game))
            return policies[i];
    return NULL;
}

uint64_t bot_random(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

int bot_choose(const char *policy, json_t *state, uint64_t *rng)
{
    json_t *legal = json_object_get(state, "legal");
    size_t n = json_array_size(legal);
    if (!n)
        return -1;
    if (strcmp(policy, "sensible") != 0)
        return (int)(bot_random(rng) % n);
    const struct bot_policy *p =
        bot_policy_for(json_string_value(json_object_get(state, "game")));
    int pick = p ? p->choose(state, json_object_get(state, "view"), legal) : -1;
    return pick >= 0 && (size_t)pick < n ? pick : 0;
}

/* ---- What the policies share ------------------------------------------------------------- */

int bot_card_parse(const char *s)
{
    static const char ranks[] = "23456789TJQKA", suits[] = "CDHS";
    if (!s || !s[0] || !s[1] || s[2])
        return -1;
    const char *r = strchr(ranks, s[0]), *u = strchr(suits, s[1]);
    return r && u ? (int)(u - suits) * 13 + (int)(r - ranks) : -1;
}

/* The card of a legal move "verb C", or -1. */
static int move_card(json_t *legal, size_t i)
{
    const char *m = json_string_value(json_array_get(legal, i));
    const char *sp = m ? strchr(m, ' ') : NULL;
    return sp ? bot_card_parse(sp + 1) : -1;
}

/* The index of the legal move equal to `text`, or -1. */
int bot_find_move(json_t *legal, const char *text)
{
    size_t i;
    json_t *m;
    json_array_foreach(legal, i, m) {
        if (!strcmp(json_string_value(m), text))
            return (int)i;
    }
    return -1;
}

/* Cards of a JSON array of card strings, as a mask. */
uint64_t bot_card_mask(json_t *arr)
{
    uint64_t mask = 0;
    size_t i;
    json_t *c;
    json_array_foreach(arr, i, c) {
        int k = bot_card_parse(json_string_value(c));
        if (k >= 0)
            mask |= 1ull << k;
    }
    return mask;
}

/* "verb A B C" with the cards of `mask` in deck order. */
void bot_format_cards(char *out, size_t size, const char *verb, uint64_t mask)
{
    static const char ranks[] = "23456789TJQKA", suits[] = "CDHS";
    size_t n = (size_t)snprintf(out, size, "%s", verb);
    for (int c = 0; c < 52 && n + 4 < size; c++)
        if (mask & (1ull << c))
            n += (size_t)snprintf(out + n, size - n, " %c%c", ranks[RANK(c)], suits[SUIT(c)]);
}

/* The legal "verb C" move whose card has the largest score(c, ctx) (first on ties), among
 * those with a score >= 0; -1 when none. */
int bot_best_card(json_t *legal, int (*score)(int c, const void *ctx), const void *ctx)
{
    int best = -1, best_score = -1;
    for (size_t i = 0; i < json_array_size(legal); i++) {
        int c = move_card(legal, i);
        if (c < 0)
            continue;
        int s = score(c, ctx);
        if (s > best_score) {
            best_score = s;
            best = (int)i;
        }
    }
    return best;
}
