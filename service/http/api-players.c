/* api-players.c - the HTTP edge of players and identity: registration, the player's record
 * and settings (GET/PATCH /v1/players/me), their deliveries, matches and vacation, email
 * confirmation, tokens, and the operator's redelivery. Each handler parses the request
 * into the typed input of one operation (core.h), calls it, and writes its answer or maps
 * its error (api_problem_from_err).
 */
#include "core.h"
#include "handlers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A player's record as every answer about it shows it. */
static json_t *player_json(const struct core_player *cp, const struct config *config)
{
    const struct store_player *p = &cp->rec;
    json_t *vac = json_object();
    bool on = p->vacation_until > cp->now && p->vacation_from <= cp->now;
    struct tm tm;
    time_t t = (time_t)cp->now;
    gmtime_r(&t, &tm);
    int year = tm.tm_year + 1900;
    int used = p->vacation_year == year ? p->vacation_days_used : 0;
    json_object_set_new(vac, "on_vacation", json_boolean(on));
    json_object_set_new(vac, "from", on ? json_integer(p->vacation_from) : json_null());
    json_object_set_new(vac, "until", on ? json_integer(p->vacation_until) : json_null());
    json_object_set_new(vac, "days_used", json_integer(used));
    json_object_set_new(vac, "days_left", json_integer(config->vacation_days - used));
    return json_pack("{s:I, s:s, s:s?, s:b, s:s?, s:s?, s:b, s:o, s:o, s:I}", "id",
                     (json_int_t)p->id, "name", p->name, "email", p->email, "email_confirmed",
                     p->email && p->email_confirmed, "webhook_url", p->webhook_url,
                     "webhook_secret", p->webhook_secret, "webhook_disabled",
                     p->webhook_disabled, "preferences", core_prefs_json(p->prefs), "vacation",
                     vac, "created_at", (json_int_t)p->created_at);
}

/* Answer with the player's record (200), or the error; finishes `p`. */
static void player_reply(struct api_app *app, bool ok, struct core_player *p,
                         const struct err *e, struct api_reply *r)
{
    if (ok) {
        r->status = 200;
        r->body = player_json(p, api_config(app));
    } else {
        api_problem_from_err(r, e);
    }
    core_player_finish(p);
}

/* Whether the body is a JSON object (else a 400). */
static bool need_object(json_t *body, struct api_reply *r)
{
    return json_is_object(body) ||
           api_problem(r, 400, "bad_request", "the body must be a JSON object");
}

/* A text field of the request into *out (borrowed; NULL for absent, null or, in a change,
 * ""), *given whether it is there. A registration's field is a string (absent: none); a
 * change's a string or null. Anything else is a 400, a string over `max` bytes or holding
 * a NUL a 422. */
static bool string_field(json_t *body, const char *key, size_t max, bool change,
                         const char **out, bool *given, struct api_reply *r)
{
    json_t *v = json_object_get(body, key);
    *out = NULL;
    *given = v != NULL;
    if (!v || json_is_null(v))
        return true;
    if (!json_is_string(v))
        return api_problem(r, 400, "bad_request",
                           change ? "\"%s\" is a string or null" : "\"%s\" must be a string", key);
    if (json_string_length(v) > max || strlen(json_string_value(v)) != json_string_length(v))
        return api_problem(r, 422, "invalid_field",
                           change ? "\"%s\" is too long" : "\"%s\" is too long or holds a NUL",
                           key);
    *out = json_string_value(v);
    return true;
}

void api_player_create(struct api_app *app, json_t *body, struct api_reply *r)
{
    struct core_player_new in = {0};
    bool given;
    if (!need_object(body, r) || !string_field(body, "name", 64, false, &in.name, &given, r) ||
        !string_field(body, "email", 1024, false, &in.email, &given, r) ||
        !string_field(body, "webhook_url", 2048, false, &in.webhook_url, &given, r))
        return;
    if (!in.name) {
        api_problem(r, 400, "missing_field", "\"name\" is required");
        return;
    }
    in.prefs = json_object_get(body, "preferences");
    struct core_player_made out;
    struct err e;
    if (!core_player_register(app, &in, &out, &e)) {
        api_problem_from_err(r, &e);
        return;
    }
    r->status = 201;
    r->body = json_pack("{s:I, s:s, s:s?, s:b, s:s?, s:s, s:s, s:I}", "id", (json_int_t)out.id,
                        "name", in.name, "email", in.email, "email_confirmed", false,
                        "webhook_url", in.webhook_url, "webhook_secret", out.webhook_secret,
                        "token", out.token, "created_at", (json_int_t)out.created_at);
}

void api_player_me(struct api_app *app, const struct api_caller *c, struct api_reply *r)
{
    struct core_player p;
    struct err e;
    bool ok = core_player_get(app, c, &p, &e);
    player_reply(app, ok, &p, &e, r);
}

void api_player_update(struct api_app *app, const struct api_caller *c, json_t *body,
                       struct api_reply *r)
{
    struct err e;
    if (!api_need_player(c, r))
        return;
    if (!need_object(body, r))
        return;
    const char *k;
    json_t *v;
    json_object_foreach(body, k, v) {
        if (strcmp(k, "email") && strcmp(k, "webhook_url") && strcmp(k, "preferences")) {
            api_problem(r, 422, "invalid_field",
                        "only email, webhook_url and preferences can be changed, not '%s'", k);
            return;
        }
    }
    struct core_player_change in = {.prefs = json_object_get(body, "preferences")};
    if (in.prefs && !core_prefs_check(in.prefs, &e)) {
        api_problem_from_err(r, &e);
        return;
    }
    if (!string_field(body, "email", 1024, true, &in.email, &in.email_given, r) ||
        !string_field(body, "webhook_url", 2048, true, &in.webhook_url, &in.webhook_given, r))
        return;
    struct core_player p;
    bool ok = core_player_update(app, c, &in, &p, &e);
    player_reply(app, ok, &p, &e, r);
}

void api_player_vacation(struct api_app *app, const struct api_caller *c, json_t *body,
                         bool end, struct api_reply *r)
{
    struct core_player p = {0};
    struct err e;
    bool ok;
    if (end) {
        ok = core_vacation_end(app, c, &p, &e);
    } else {
        json_t *days = json_object_get(body, "days");
        if (!api_need_player(c, r))
            return;
        if (!json_is_object(body) || !days) {
            api_problem(r, 400, "missing_field", "\"days\" is required");
            return;
        }
        /* (not a whole number: 0, which the operation refuses as it refuses 0) */
        ok = core_vacation_take(app, c, json_is_integer(days) ? json_integer_value(days) : 0,
                                &p, &e);
    }
    player_reply(app, ok, &p, &e, r);
}

/* ---- Deliveries --------------------------------------------------------------------------- */

static const char *const status_names[] = {"pending", "delivered", "dead"};

/* A delivery, with its attempt log when `attempts`. */
static json_t *delivery_json(const struct core_delivery *d, bool attempts)
{
    const struct store_outbox *o = &d->row;
    json_t *j = json_pack("{s:I, s:s, s:s, s:o, s:I, s:s, s:s, s:i, s:o, s:I, s:o, s:o}", "id",
                          (json_int_t)o->id, "channel", o->channel ? "webhook" : "email", "type",
                          o->type, "match", o->match ? json_integer(o->match) : json_null(),
                          "seq", (json_int_t)o->seq, "webhook_id", o->webhook_id, "status",
                          status_names[o->status], "attempts", o->attempts, "next_attempt",
                          o->status == STORE_PENDING ? json_integer(o->next_attempt)
                                                     : json_null(),
                          "created_at", (json_int_t)o->created_at, "delivered_at",
                          o->delivered_at ? json_integer(o->delivered_at) : json_null(),
                          "last_error", o->last_error ? json_string(o->last_error) : json_null());
    if (attempts) {
        json_t *a = json_array();
        for (int i = 0; i < d->nattempts; i++) {
            const struct store_attempt *t = &d->attempt[i];
            json_array_append_new(
                a, json_pack("{s:I, s:b, s:o, s:s?, s:I}", "at", (json_int_t)t->at, "ok", t->ok,
                             "status", t->status ? json_integer(t->status) : json_null(),
                             "error", t->error[0] ? t->error : NULL, "duration_ms",
                             (json_int_t)t->duration_ms));
        }
        json_object_set_new(j, "attempt_log", a);
    }
    return j;
}

void api_player_deliveries(struct api_app *app, const struct api_caller *c, struct api_reply *r)
{
    struct core_delivery *rows;
    struct err e;
    int n = core_player_deliveries(app, c, 100, &rows, &e);
    if (n < 0) {
        api_problem_from_err(r, &e);
        return;
    }
    json_t *list = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(list, delivery_json(&rows[i], true));
    core_deliveries_free(rows, n);
    r->status = 200;
    r->body = json_pack("{s:o}", "deliveries", list);
}

void api_delivery_redeliver(struct api_app *app, const struct api_caller *c, int64_t id,
                            struct api_reply *r)
{
    struct core_delivery d;
    struct err e;
    if (!core_delivery_redeliver(app, c, id, &d, &e)) {
        api_problem_from_err(r, &e);
        return;
    }
    r->status = 200;
    r->body = delivery_json(&d, false);
    store_outbox_finish(&d.row);
}

void api_player_matches(struct api_app *app, const struct api_caller *c, struct api_reply *r)
{
    enum { MAX = 200 };
    struct store_match *rows = calloc(MAX, sizeof *rows);
    struct err e;
    bool more = false;
    if (!rows) {
        api_problem(r, 500, "nomem", "out of memory");
        return;
    }
    int n = core_player_matches(app, c, rows, MAX, &more, &e);
    if (n < 0) {
        free(rows);
        api_problem_from_err(r, &e);
        return;
    }
    json_t *list = api_match_summaries_json(rows, n);
    for (int i = 0; i < n; i++)
        store_match_finish(&rows[i]);
    free(rows);
    r->status = 200;
    r->body = json_pack("{s:o, s:b}", "matches", list, "more", more);
}

/* ---- Identity ----------------------------------------------------------------------------- */

void api_email_confirm(struct api_app *app, const struct api_caller *c, json_t *body,
                       struct api_reply *r)
{
    struct err e;
    if (!api_need_player(c, r))
        return;
    json_t *v = json_object_get(body, "code");
    if (!json_is_object(body) || !v) {
        api_problem(r, 400, "missing_field", "\"code\" is required: the code of the "
                                             "confirmation email");
        return;
    }
    if (!json_is_string(v) || json_string_length(v) > 128) {
        api_problem(r, 422, "bad_code", "\"code\" is the code of the confirmation email");
        return;
    }
    if (!core_email_confirm(app, c, json_string_value(v), json_string_length(v), &e)) {
        api_problem_from_err(r, &e);
        return;
    }
    api_player_me(app, c, r); /* (confirmed now, or before: the same answer) */
}

void api_email_confirm_by_operator(struct api_app *app, const struct api_caller *c, int64_t id,
                                   struct api_reply *r)
{
    char *email;
    struct err e;
    if (!core_email_confirm_by_operator(app, c, id, &email, &e)) {
        api_problem_from_err(r, &e);
        return;
    }
    r->status = 200;
    r->body = json_pack("{s:I, s:s, s:b}", "id", (json_int_t)id, "email", email,
                        "email_confirmed", true);
    free(email);
}

/* A new token's answer: the player's id and the token. */
static void token_reply(bool ok, int64_t id, const char *token, const struct err *e,
                        struct api_reply *r)
{
    if (!ok) {
        api_problem_from_err(r, e);
        return;
    }
    r->status = 200;
    r->body = json_pack("{s:I, s:s}", "id", (json_int_t)id, "token", token);
}

void api_token_rotate(struct api_app *app, const struct api_caller *c, struct api_reply *r)
{
    char token[API_TOKEN_CHARS];
    struct err e;
    token_reply(core_token_rotate(app, c, token, &e), c->player, token, &e, r);
}

void api_token_issue(struct api_app *app, const struct api_caller *c, int64_t id, bool revoke,
                     struct api_reply *r)
{
    char token[API_TOKEN_CHARS];
    struct err e;
    if (!revoke)
        token_reply(core_token_issue(app, c, id, token, &e), id, token, &e, r);
    else if (core_token_revoke(app, c, id, &e))
        r->status = 204;
    else
        api_problem_from_err(r, &e);
}
