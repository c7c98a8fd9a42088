/* games.c - the games as the service names them: from the rules engine's table, so that a
 * game added in rules/ is offered here (and in every error that lists them) untouched. */
#include "core.h"

#include <stdio.h>
#include <string.h>

bool api_game_parse(json_t *v, enum rules_game_id *g, struct err *e)
{
    if (json_is_string(v) && strlen(json_string_value(v)) == json_string_length(v) &&
        rules_game_lookup(json_string_value(v), g))
        return true;
    char list[160] = "";
    size_t len = 0;
    for (int i = 0; i < RULES_NGAMES && len < sizeof list; i++)
        len += (size_t)snprintf(list + len, sizeof list - len, "%s%s",
                                i == 0 ? "" : i == RULES_NGAMES - 1 ? " or " : ", ",
                                rules_game_name((enum rules_game_id)i));
    return err_set(e, ERR_INVALID, "unknown_game", "\"game\" must be %s", list);
}
