/* bot.h - `cardpost bot`: a client of cardpostd's REST API that plays seats (docs/bots.md).
 * It waits for its turn on each player's event stream of all their matches and answers with a
 * move a policy picks from the view (policy.c); service/client/cardpost.c dispatches the
 * subcommand to it.
 */
#ifndef CARDPOST_BOT_H
#define CARDPOST_BOT_H

#include <jansson.h>
#include <stdint.h>

/* Runs `cardpost bot ARGS` (argv[0] is "cardpost", argv[1] "bot"). Returns the exit status:
 * 0 when every match it plays is over, 1 when a stream or a request failed for good or a
 * named match has not started, 2 on bad usage. */
int bot_main(int argc, char **argv);

/* Picks a move for the caller's view `state` (the whole `GET /v1/matches/{id}` answer, with
 * `legal`): policy "random" draws uniformly from `legal` with *rng (splitmix64, advanced),
 * "sensible" applies the game's policy (policy.c, policies/<game>.c), falling back to the
 * first legal move, which is also the policy of a game without one. Returns an index into
 * `legal`, or -1 when `legal` is empty. Borrowed arguments; nothing allocated. */
int bot_choose(const char *policy, json_t *state, uint64_t *rng);

#endif
