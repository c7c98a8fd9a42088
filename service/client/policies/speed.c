/* speed.c - the sensible policy for Speed (docs/bots.md): play, else flip, else move to an
 * empty column, else ready.
 */
#include "bot-policy.h"

#include <stdbool.h>
#include <string.h>

static int speed(json_t *state, json_t *view, json_t *legal)
{
    static const char *const order[] = {"play ", "flip ", "move ", "ready"};
    for (size_t k = 0; k < 4; k++)
        for (size_t i = 0; i < json_array_size(legal); i++)
            if (!strncmp(json_string_value(json_array_get(legal, i)), order[k],
                         strlen(order[k])))
                return (int)i;
    return -1;
}

const struct bot_policy bot_speed_policy = {"speed", speed};
