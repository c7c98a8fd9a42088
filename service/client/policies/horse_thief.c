/* horse_thief.c - the sensible policy for Horse Thief (docs/bots.md): stay with two trumps
 * or a bower, discard non-trumps, win cheaply.
 */
#include "bot-policy.h"

#include <stdbool.h>
#include <string.h>

struct ht_ctx {
    int trump;
    int led; /* effective suit led, -1 when leading */
    int beat; /* power to beat */
};

static int ht_suit(int c, int trump)
{
    return RANK(c) == 9 && SUIT(c) == 3 - trump ? trump : SUIT(c); /* the left bower */
}

static int ht_power(int c, int trump, int led)
{
    if (ht_suit(c, trump) == trump)
        return 100 + (RANK(c) == 9 ? (SUIT(c) == trump ? 20 : 19) : RANK(c));
    return ht_suit(c, trump) == led ? RANK(c) : -1;
}

static int ht_play(int c, const void *ctx)
{
    const struct ht_ctx *t = ctx;
    int p = ht_power(c, t->trump, t->led < 0 ? ht_suit(c, t->trump) : t->led);
    if (t->led < 0)
        return p; /* leading: the strongest card */
    if (p > t->beat)
        return 10000 - p; /* the lowest winning card */
    return 5000 - ((p + 1) * 13 + RANK(c)); /* else the weakest */
}

static int horse_thief(json_t *state, json_t *view, json_t *legal)
{
    const char *phase = json_string_value(json_object_get(view, "phase"));
    const char *ts = json_string_value(json_object_get(view, "trump"));
    if (!phase || !ts || !strchr("CDHS", ts[0]) || !ts[0])
        return -1;
    int trump = (int)(strchr("CDHS", ts[0]) - "CDHS");
    int you = (int)json_integer_value(json_object_get(state, "you"));
    json_t *me = json_array_get(json_object_get(view, "seats"), (size_t)you);
    uint64_t hand = bot_card_mask(json_object_get(me, "cards"));
    if (!strcmp(phase, "stay")) {
        int trumps = 0;
        bool bower = false;
        for (int c = 0; c < 52; c++)
            if ((hand & (1ull << c)) && ht_suit(c, trump) == trump) {
                trumps++;
                bower |= RANK(c) == 9;
            }
        return bot_find_move(legal, trumps >= 2 || bower ? "stay" : "drop");
    }
    if (!strcmp(phase, "discard")) {
        int limit = (int)json_integer_value(json_object_get(view, "draw_limit"));
        uint64_t out = 0;
        for (int rank = 0, n = 0; rank < 12 && n < limit; rank++) /* aces are kept */
            for (int suit = 0; suit < 4 && n < limit; suit++) {
                int c = suit * 13 + rank;
                if ((hand & (1ull << c)) && ht_suit(c, trump) != trump) {
                    out |= 1ull << c;
                    n++;
                }
            }
        char text[64];
        bot_format_cards(text, sizeof text, "discard", out);
        return bot_find_move(legal, text);
    }
    if (strcmp(phase, "play"))
        return -1;
    json_t *tricks = json_object_get(view, "tricks");
    json_t *last = json_array_get(tricks, json_array_size(tricks) - 1);
    json_t *plays = json_object_get(last, "plays");
    struct ht_ctx t = {trump, -1, -1};
    if (last && !json_is_integer(json_object_get(last, "winner")) && json_array_size(plays)) {
        int first = bot_card_parse(json_string_value(
            json_object_get(json_array_get(plays, 0), "card")));
        t.led = first >= 0 ? ht_suit(first, trump) : -1;
        size_t i;
        json_t *p;
        json_array_foreach(plays, i, p) {
            int c = bot_card_parse(json_string_value(json_object_get(p, "card")));
            if (c >= 0 && ht_power(c, trump, t.led) > t.beat)
                t.beat = ht_power(c, trump, t.led);
        }
    }
    return bot_best_card(legal, ht_play, &t);
}

const struct bot_policy bot_horse_thief_policy = {"horse-thief", horse_thief};
