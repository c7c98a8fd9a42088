/* hearts.c - the sensible policy of `cardpost bot` for Hearts (docs/bots.md): pass the
 * dangerous cards, duck under the trick, dump the queen and the hearts.
 */
#include "bot-policy.h"

#include <stdbool.h>
#include <string.h>

static int score_low(int c, const void *ctx)
{
    (void)ctx;
    return 12 - RANK(c);
}

static int hearts_danger(int c)
{
    if (c == 3 * 13 + 10)
        return 1000; /* QS */
    if (SUIT(c) == 3 && RANK(c) > 10)
        return 900 + RANK(c); /* KS, AS: they catch the queen */
    if (SUIT(c) == 2)
        return 500 + RANK(c);
    return RANK(c);
}

struct trick_ctx {
    int led;  /* suit led */
    int high; /* highest rank of the led suit so far */
};

static int hearts_follow(int c, const void *ctx)
{
    const struct trick_ctx *t = ctx;
    if (SUIT(c) != t->led)
        return -1;
    return RANK(c) < t->high ? 100 + RANK(c) : 12 - RANK(c); /* highest loser, else lowest */
}

static int hearts_discard(int c, const void *ctx)
{
    (void)ctx;
    return hearts_danger(c);
}

static int hearts(json_t *state, json_t *view, json_t *legal)
{
    const char *phase = json_string_value(json_object_get(view, "phase"));
    if (phase && !strcmp(phase, "pass")) {
        int you = (int)json_integer_value(json_object_get(state, "you"));
        json_t *hand = json_object_get(json_array_get(json_object_get(view, "hands"),
                                                      (size_t)you), "cards");
        uint64_t cards = bot_card_mask(hand), pass = 0;
        for (int k = 0; k < 3; k++) {
            int best = -1;
            for (int c = 0; c < 52; c++)
                if ((cards & ~pass & (1ull << c)) &&
                    (best < 0 || hearts_danger(c) > hearts_danger(best)))
                    best = c;
            if (best >= 0)
                pass |= 1ull << best;
        }
        char text[64];
        bot_format_cards(text, sizeof text, "pass", pass);
        return bot_find_move(legal, text);
    }
    if (!phase || strcmp(phase, "play"))
        return -1;
    json_t *tricks = json_object_get(view, "tricks");
    json_t *last = json_array_get(tricks, json_array_size(tricks) - 1);
    json_t *cards = json_object_get(last, "cards");
    if (!last || json_is_integer(json_object_get(last, "winner")) || !json_array_size(cards))
        return bot_best_card(legal, score_low, NULL); /* leading: the lowest card */
    struct trick_ctx t = {bot_card_parse(json_string_value(json_array_get(cards, 0))) / 13, -1};
    size_t i;
    json_t *cj;
    json_array_foreach(cards, i, cj) {
        int c = bot_card_parse(json_string_value(cj));
        if (c >= 0 && SUIT(c) == t.led && RANK(c) > t.high)
            t.high = RANK(c);
    }
    int pick = bot_best_card(legal, hearts_follow, &t);
    return pick >= 0 ? pick : bot_best_card(legal, hearts_discard, NULL);
}

const struct bot_policy bot_hearts_policy = {"hearts", hearts};
