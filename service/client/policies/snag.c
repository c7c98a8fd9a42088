/* snag.c - the sensible policy for Snag (docs/bots.md): play for the suit you are longest in.
 */
#include "bot-policy.h"

#include <stdbool.h>
#include <string.h>

struct snag_ctx {
    int suit_score[4];
    int long_suit;
    bool contest; /* the trick holds a card of the long suit */
};

static int snag_take(int c, const void *ctx)
{
    const struct snag_ctx *s = ctx;
    return s->suit_score[SUIT(c)] * 16 + RANK(c);
}

static int snag_lead(int c, const void *ctx)
{
    const struct snag_ctx *s = ctx;
    return (SUIT(c) == s->long_suit ? 100 : 0) + RANK(c);
}

static int snag_play(int c, const void *ctx)
{
    const struct snag_ctx *s = ctx;
    return s->contest ? RANK(c) : 12 - RANK(c);
}

static int snag(json_t *state, json_t *view, json_t *legal)
{
    const char *phase = json_string_value(json_object_get(view, "phase"));
    int you = (int)json_integer_value(json_object_get(state, "you"));
    if (!phase)
        return -1;
    struct snag_ctx s = {{0}, 0, false};
    uint64_t taken = bot_card_mask(json_array_get(json_object_get(view, "taken"), (size_t)you));
    uint64_t hand = bot_card_mask(json_object_get(
        json_array_get(json_object_get(view, "hands"), (size_t)you), "cards"));
    for (int c = 0; c < 52; c++) {
        s.suit_score[SUIT(c)] += (taken & (1ull << c)) ? 4 : 0;
        s.suit_score[SUIT(c)] += (hand & (1ull << c)) ? 1 : 0;
    }
    for (int u = 1; u < 4; u++)
        if (s.suit_score[u] > s.suit_score[s.long_suit])
            s.long_suit = u;
    if (!strcmp(phase, "take"))
        return bot_best_card(legal, snag_take, &s);
    if (!strcmp(phase, "lead"))
        return bot_best_card(legal, snag_lead, &s);
    if (strcmp(phase, "play"))
        return -1;
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(json_object_get(view, "trick"), "cards"), i, p) {
        int c = bot_card_parse(json_string_value(json_object_get(p, "card")));
        s.contest |= c >= 0 && SUIT(c) == s.long_suit;
    }
    return bot_best_card(legal, snag_play, &s);
}

const struct bot_policy bot_snag_policy = {"snag", snag};
