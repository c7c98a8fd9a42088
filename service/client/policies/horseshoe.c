/* horseshoe.c - the sensible policy for Horseshoe (docs/bots.md): make pairs when you can,
 * else win with the lowest winning card.
 */
#include "bot-policy.h"

#include <stdbool.h>
#include <string.h>

struct hs_ctx {
    uint64_t avail;
    int pair_rank; /* a rank to pair with, or -1 */
    int led;       /* card 1's suit, -1 when leading */
    int high;      /* the highest rank of card 1's suit on the table */
    bool pair_ahead; /* card 2: prefer a card that another available card pairs */
};

static bool hs_has_rank(uint64_t avail, int rank, int except)
{
    for (int u = 0; u < 4; u++)
        if (u * 13 + rank != except && (avail & (1ull << (u * 13 + rank))))
            return true;
    return false;
}

static int hs_play(int c, const void *ctx)
{
    const struct hs_ctx *h = ctx;
    if (h->led < 0)
        return (hs_has_rank(h->avail, RANK(c), c) ? 100 : 0) + RANK(c); /* lead */
    if (RANK(c) == h->pair_rank)
        return 300;
    if (h->pair_ahead && hs_has_rank(h->avail, RANK(c), c))
        return 200 + RANK(c);
    if (SUIT(c) == h->led && RANK(c) > h->high)
        return 100 + 12 - RANK(c); /* the lowest winning card */
    return 12 - RANK(c);
}

static int horseshoe(json_t *state, json_t *view, json_t *legal)
{
    int you = (int)json_integer_value(json_object_get(state, "you"));
    struct hs_ctx h = {0, -1, -1, -1, false};
    h.avail = bot_card_mask(json_object_get(
        json_array_get(json_object_get(view, "hands"), (size_t)you), "cards"));
    size_t i;
    json_t *col;
    json_array_foreach(json_object_get(json_array_get(json_object_get(view, "boards"),
                                                      (size_t)you), "columns"), i, col) {
        int c = bot_card_parse(json_string_value(json_object_get(col, "up")));
        if (c >= 0)
            h.avail |= 1ull << c;
    }
    json_t *cards = json_object_get(json_object_get(view, "trick"), "cards");
    int played[4], n = 0;
    json_t *p;
    json_array_foreach(cards, i, p) {
        if (n < 4)
            played[n++] = bot_card_parse(json_string_value(json_object_get(p, "card")));
    }
    for (int k = 0; k < n; k++)
        if (played[k] < 0)
            return -1;
    if (n > 0) {
        h.led = SUIT(played[0]);
        for (int k = 0; k < n; k++)
            if (SUIT(played[k]) == h.led && RANK(played[k]) > h.high)
                h.high = RANK(played[k]);
    }
    if (n == 1)
        h.pair_ahead = true;            /* card 2: keep a pair for card 3 */
    if (n == 2)
        h.pair_rank = RANK(played[1]); /* card 3 pairs card 2 */
    if (n == 3)
        h.pair_rank = RANK(played[0]); /* card 4 pairs card 1 */
    return bot_best_card(legal, hs_play, &h);
}

const struct bot_policy bot_horseshoe_policy = {"horseshoe", horseshoe};
