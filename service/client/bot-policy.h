/* bot-policy.h - the `sensible` policies of `cardpost bot`, one file per game in
 * service/client/policies/, and what they share: the table that finds a game's policy, and
 * helpers over the view's cards. Private to the bot (bot.c, policy.c, policies/); a game
 * with no policy here is played with the first legal move (docs/bots.md).
 * Cards are 0..51 = suit*13 + rank (rank 0 = '2' .. 12 = 'A'; suits C D H S).
 */
#ifndef CARDPOST_BOT_POLICY_H
#define CARDPOST_BOT_POLICY_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* One game's policy. `choose` reads the caller's view answer `state` (its "view" is `view`,
 * its "legal" moves `legal`, never empty) and returns an index into `legal`; -1 means
 * "cannot decide", and the first legal move is played. Borrowed arguments. */
struct bot_policy {
    const char *game; /* the game's name in the API (rules_game_name): "horse-thief" */
    int (*choose)(json_t *state, json_t *view, json_t *legal);
};

extern const struct bot_policy bot_hearts_policy;
extern const struct bot_policy bot_horseshoe_policy;
extern const struct bot_policy bot_snag_policy;
extern const struct bot_policy bot_horse_thief_policy;
extern const struct bot_policy bot_speed_policy;

/* The policy of the game named `game`, or NULL when it has none (then the first legal move
 * is the policy: bot_choose). */
const struct bot_policy *bot_policy_for(const char *game);

/* The next number of the splitmix64 stream *s (advanced). */
uint64_t bot_random(uint64_t *s);

#define RANK(c) ((c) % 13)
#define SUIT(c) ((c) / 13)

/* The card "QS", or -1. */
int bot_card_parse(const char *s);

/* The index of the legal move equal to `text`, or -1. */
int bot_find_move(json_t *legal, const char *text);

/* Cards of a JSON array of card strings, as a mask. */
uint64_t bot_card_mask(json_t *arr);

/* "verb A B C" with the cards of `mask` in deck order, into out[size]. */
void bot_format_cards(char *out, size_t size, const char *verb, uint64_t mask);

/* The legal "verb C" move whose card has the largest score(c, ctx) (first on ties), among
 * those with a score >= 0; -1 when none. */
int bot_best_card(json_t *legal, int (*score)(int c, const void *ctx), const void *ctx);

#endif
