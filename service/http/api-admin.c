/* api-admin.c - the HTTP edge of the operator's figures and, in test mode, of the service's
 * clock: parse, call the operation (core.h), answer or map its error.
 */
#include "core.h"
#include "handlers.h"

void api_admin_clock(struct api_app *app, const struct api_caller *c, json_t *body,
                     struct api_reply *r)
{
    json_t *adv = json_object_get(body, "advance_seconds");
    int64_t now_ms;
    struct err e;
    /* (not a whole number: -1, which the operation refuses as out of range, after saying
     * whether there is a clock to move and whether the caller may) */
    if (!core_clock_advance(app, c, json_is_integer(adv) ? json_integer_value(adv) : -1, &now_ms,
                            &e)) {
        api_problem_from_err(r, &e);
        return;
    }
    r->status = 200;
    r->body = json_pack("{s:I}", "now", (json_int_t)now_ms);
}

void api_admin_stats(struct api_app *app, const struct api_caller *c, struct api_reply *r)
{
    struct core_stats s;
    struct err e;
    if (!core_stats_get(app, c, &s, &e)) {
        api_problem_from_err(r, &e);
        return;
    }
    r->status = 200;
    r->body = json_pack("{s:{s:I, s:I, s:I}, s:{s:I, s:i}, s:s}", "commits", "batches",
                        (json_int_t)s.batches, "writes", (json_int_t)s.writes, "checkpoints",
                        (json_int_t)s.checkpoints, "matches_in_memory", "count",
                        (json_int_t)s.cached, "limit", api_config(app)->match_cache, "durability",
                        api_config(app)->durable_power ? "power" : "crash");
}
