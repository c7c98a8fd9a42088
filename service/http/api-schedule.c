/* api-schedule.c - POST /v1/leagues/{id}/schedule {"rounds"?}: reads the rounds, calls
 * core_league_schedule (core/leagues.c), answers 201 {"matches": [ids]} or its refusal.
 */
#include "handlers.h"

#include <stdlib.h>

void api_league_schedule(struct api_app *app, const struct api_caller *c, int64_t id,
                         json_t *body, struct api_reply *r)
{
    /* Absent or null: the default (0). A value out of 1 to 100 (-1) is refused by the core,
     * after who asks and which league. */
    json_t *v = body ? json_object_get(body, "rounds") : NULL;
    int rounds = !v || json_is_null(v) ? 0
                 : json_is_integer(v) && json_integer_value(v) >= 1 && json_integer_value(v) <= 100
                     ? (int)json_integer_value(v)
                     : -1;
    int64_t *ids;
    size_t n;
    struct err e;
    if (!core_league_schedule(app, c, id, rounds, &ids, &n, &e)) {
        api_problem_from_err(r, &e);
        return;
    }
    json_t *made = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(made, json_integer(ids[i]));
    free(ids);
    r->status = 201;
    r->body = json_pack("{s:o}", "matches", made);
}
