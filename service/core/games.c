/* games.c - the games as the service names them: from the rules engine's table, so that a
 * game added in rules/ is offered here (and in every error that lists them) untouched. */
#include "core.h"

#include <string.h>

bool api_game_parse(json_t *v, enum rules_game_id *g, struct err *e)
{
    if (json_is_string(v) && strlen(json_string_value(v)) == json_string_length(v) &&
        rules_game_lookup(json_string_value(v), g))
        return true;
    char list[160];
    return err_set(e, ERR_INVALID, "unknown_game", "\"game\" must be %s",
                   rules_game_list(list, sizeof list));
}
