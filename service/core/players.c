/* players.c - what a player manages about themself: their record and notification settings
 * (GET/PATCH /v1/players/me), their deliveries, their vacation; and the operator's
 * redelivery and, in test mode, the service's clock.
 */
#include "core.h"
#include "handlers.h"
#include "notify.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const event_types[] = {"match_started", "turn", "reminder", "timeout",
                                          "match_over", "invitation"};
#define NTYPES (sizeof event_types / sizeof event_types[0])
static const char *const channel_keys[] = {"email", "webhook"};

bool api_prefs_want(const char *prefs, int channel, const char *type)
{
    json_t *p = prefs ? json_loads(prefs, 0, NULL) : NULL;
    json_t *v = json_object_get(json_object_get(p, channel_keys[channel]), type);
    bool want = !json_is_false(v); /* everything is on unless turned off */
    json_decref(p);
    return want;
}

bool api_prefs_email_when_watching(const char *prefs)
{
    json_t *p = prefs ? json_loads(prefs, 0, NULL) : NULL;
    bool want = json_is_true(json_object_get(p, "email_when_watching"));
    json_decref(p);
    return want;
}

bool api_prefs_seat_without_asking(const char *prefs)
{
    json_t *p = prefs ? json_loads(prefs, 0, NULL) : NULL;
    bool yes = json_is_true(json_object_get(p, "seat_without_asking"));
    json_decref(p);
    return yes;
}

/* The preferences with every key explicit. */
static json_t *prefs_json(const char *prefs)
{
    json_t *out = json_object();
    for (int c = 0; c < 2; c++) {
        json_t *ch = json_object();
        for (size_t t = 0; t < NTYPES; t++)
            json_object_set_new(ch, event_types[t],
                                json_boolean(api_prefs_want(prefs, c, event_types[t])));
        json_object_set_new(out, channel_keys[c], ch);
    }
    json_object_set_new(out, "email_when_watching",
                        json_boolean(api_prefs_email_when_watching(prefs)));
    json_object_set_new(out, "seat_without_asking",
                        json_boolean(api_prefs_seat_without_asking(prefs)));
    return out;
}

static bool known_type(const char *t)
{
    for (size_t i = 0; i < NTYPES; i++)
        if (!strcmp(t, event_types[i]))
            return true;
    return false;
}

bool api_prefs_valid(json_t *v, struct api_reply *r)
{
    if (!json_is_object(v))
        return api_problem(r, 400, "bad_request", "\"preferences\" is an object");
    const char *k;
    json_t *x;
    json_object_foreach(v, k, x) {
        if (!strcmp(k, "email_when_watching") || !strcmp(k, "seat_without_asking")) {
            if (!json_is_boolean(x))
                return api_problem(r, 400, "bad_request", "%s is true or false", k);
            continue;
        }
        if (strcmp(k, "email") && strcmp(k, "webhook"))
            return api_problem(r, 422, "invalid_field", "unknown preference '%s'", k);
        if (!json_is_object(x))
            return api_problem(r, 400, "bad_request", "preferences.%s is an object", k);
        const char *t;
        json_t *b;
        json_object_foreach(x, t, b) {
            if (!known_type(t))
                return api_problem(r, 422, "invalid_field",
                                   "unknown notification type '%s' (match_started, turn, "
                                   "reminder, timeout, match_over, invitation)",
                                   t);
            if (!json_is_boolean(b))
                return api_problem(r, 400, "bad_request", "preferences.%s.%s is true or false",
                                   k, t);
        }
    }
    return true;
}

static json_t *player_json(const struct store_player *p, const struct config *config,
                           int64_t now)
{
    json_t *vac = json_object();
    bool on = p->vacation_until > now && p->vacation_from <= now;
    struct tm tm;
    time_t t = (time_t)now;
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
                     p->webhook_disabled, "preferences", prefs_json(p->prefs), "vacation", vac,
                     "created_at", (json_int_t)p->created_at);
}

static bool load(struct api_app *app, int64_t id, struct store_player *p, struct api_reply *r)
{
    struct err e;
    lock_take(&app->db_lock);
    bool ok = store_player_get(app->store, id, p, &e);
    lock_drop(&app->db_lock);
    return ok || api_problem_from_err(r, &e);
}

void api_player_me(struct api_app *app, const struct api_caller *c, struct api_reply *r)
{
    struct store_player p = {0};
    if (!api_need_player(c, r) || !load(app, c->player, &p, r))
        return;
    r->status = 200;
    r->body = player_json(&p, &app->config, api_now_ms(app) / 1000);
    store_player_finish(&p);
}

/* Replace *field with the request's string (or NULL for JSON null); false on a bad type. */
static bool take_string(json_t *body, const char *key, size_t max, char **field,
                        struct api_reply *r)
{
    json_t *v = json_object_get(body, key);
    if (!v)
        return true;
    if (!json_is_null(v) && !json_is_string(v))
        return api_problem(r, 400, "bad_request", "\"%s\" is a string or null", key);
    if (json_is_string(v) && (json_string_length(v) > max ||
                              strlen(json_string_value(v)) != json_string_length(v)))
        return api_problem(r, 422, "invalid_field", "\"%s\" is too long", key);
    free(*field);
    *field = json_is_string(v) && json_string_length(v) ? strdup(json_string_value(v)) : NULL;
    return true;
}

void api_player_update(struct api_app *app, const struct api_caller *c, json_t *body,
                       struct api_reply *r)
{
    struct store_player p = {0};
    if (!api_need_player(c, r))
        return;
    if (!json_is_object(body)) {
        api_problem(r, 400, "bad_request", "the body must be a JSON object");
        return;
    }
    const char *k;
    json_t *v;
    json_object_foreach(body, k, v) {
        if (strcmp(k, "email") && strcmp(k, "webhook_url") && strcmp(k, "preferences")) {
            api_problem(r, 422, "invalid_field",
                        "only email, webhook_url and preferences can be changed, not '%s'", k);
            return;
        }
    }
    json_t *prefs = json_object_get(body, "preferences");
    if (prefs && !api_prefs_valid(prefs, r))
        return;
    if (!load(app, c->player, &p, r))
        return;
    char *old_url = p.webhook_url ? strdup(p.webhook_url) : NULL;
    char *old_email = p.email ? strdup(p.email) : NULL;
    struct err e;
    if (!take_string(body, "email", 1024, &p.email, r) ||
        !take_string(body, "webhook_url", 2048, &p.webhook_url, r))
        goto out;
    /* Only a new address is judged: one stored before the rules stays until replaced (and
     * delivery refuses it). */
    if (p.email && json_is_string(json_object_get(body, "email")) &&
        !notify_mailbox_ok(p.email, &e)) {
        api_problem(r, 422, "invalid_email", "\"email\": %s", e.msg);
        goto out;
    }
    if (p.webhook_url && json_is_string(json_object_get(body, "webhook_url")) &&
        !notify_webhook_url_ok(p.webhook_url, &app->config.webhooks, false, &e)) {
        api_problem(r, 422, "invalid_field", "\"webhook_url\": %s", e.msg);
        goto out;
    }
    /* A new endpoint starts enabled; it gets a secret if the player has none. */
    if ((p.webhook_url && (!old_url || strcmp(old_url, p.webhook_url))) || !p.webhook_url)
        p.webhook_disabled = false;
    if (!p.webhook_secret) {
        char secret[NOTIFY_SECRET_MAX];
        if (!notify_secret_new(secret, &e)) {
            api_problem_from_err(r, &e);
            goto out;
        }
        p.webhook_secret = strdup(secret);
    }
    if (prefs) {
        /* Merge: keys given replace, others stay. */
        json_t *merged = prefs_json(p.prefs);
        json_t *x;
        json_object_foreach(prefs, k, x) {
            if (json_is_object(x))
                json_object_update(json_object_get(merged, k), x);
            else
                json_object_set(merged, k, x);
        }
        free(p.prefs);
        p.prefs = json_dumps(merged, JSON_COMPACT);
        json_decref(merged);
    }
    /* A new address (or the same one again while it is unconfirmed: a resend) is
     * unconfirmed and gets its confirmation email; a confirmed address given again, or not
     * given, stays confirmed. All in one transaction: a change refused by the confirmation
     * emails' rate limit changes nothing. */
    bool email_set = json_object_get(body, "email") &&
                     (!p.email || !old_email || strcmp(p.email, old_email) || !p.email_confirmed);
    int64_t now_ms = api_now_ms(app);
    lock_take(&app->db_lock);
    bool ok = store_begin(app->store, &e);
    if (!ok) {
        api_problem_from_err(r, &e);
    } else {
        ok = (store_player_update(app->store, &p, &e) || api_problem_from_err(r, &e)) &&
             (!email_set || api_email_set(app, p.id, p.name, p.email, now_ms, r)) &&
             (store_commit(app->store, &e) || api_problem_from_err(r, &e));
        if (!ok)
            store_rollback(app->store);
    }
    lock_drop(&app->db_lock);
    if (!ok)
        goto out;
    if (email_set) {
        p.email_confirmed = false;
        api_wake(app);
    }
    r->status = 200;
    r->body = player_json(&p, &app->config, now_ms / 1000);
out:
    free(old_url);
    free(old_email);
    store_player_finish(&p);
}

static const char *const status_names[] = {"pending", "delivered", "dead"};

static json_t *delivery_json(struct api_app *app, const struct store_outbox *o, bool attempts)
{
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
        struct store_attempt list[16];
        struct err e;
        lock_take(&app->db_lock);
        int n = store_attempts_of(app->store, o->id, list, 16, &e);
        lock_drop(&app->db_lock);
        json_t *a = json_array();
        for (int i = 0; i < n; i++)
            json_array_append_new(
                a, json_pack("{s:I, s:b, s:o, s:s?, s:I}", "at", (json_int_t)list[i].at, "ok",
                             list[i].ok, "status",
                             list[i].status ? json_integer(list[i].status) : json_null(),
                             "error", list[i].error[0] ? list[i].error : NULL, "duration_ms",
                             (json_int_t)list[i].duration_ms));
        json_object_set_new(j, "attempt_log", a);
    }
    return j;
}

void api_player_deliveries(struct api_app *app, const struct api_caller *c, struct api_reply *r)
{
    if (!api_need_player(c, r))
        return;
    struct store_outbox rows[100];
    struct err e;
    lock_take(&app->db_lock);
    int n = store_outbox_of_player(app->store, c->player, 0, rows, 100, &e);
    lock_drop(&app->db_lock);
    if (n < 0) {
        api_problem_from_err(r, &e);
        return;
    }
    json_t *list = json_array();
    for (int i = 0; i < n; i++) {
        json_array_append_new(list, delivery_json(app, &rows[i], true));
        store_outbox_finish(&rows[i]);
    }
    r->status = 200;
    r->body = json_pack("{s:o}", "deliveries", list);
}

void api_delivery_redeliver(struct api_app *app, const struct api_caller *c, int64_t id,
                            struct api_reply *r)
{
    if (!c->authenticated) {
        api_problem(r, 401, "unauthorized", "this needs the operator's token");
        return;
    }
    if (!c->operator) {
        api_problem(r, 403, "forbidden", "only the operator redelivers");
        return;
    }
    struct err e;
    struct store_outbox o;
    lock_take(&app->db_lock);
    bool ok = store_outbox_redeliver(app->store, id, api_now_ms(app), &e) &&
              store_outbox_get(app->store, id, &o, &e);
    lock_drop(&app->db_lock);
    if (!ok) {
        api_problem_from_err(r, &e);
        return;
    }
    api_wake(app);
    r->status = 200;
    r->body = delivery_json(app, &o, false);
    store_outbox_finish(&o);
}

void api_player_vacation(struct api_app *app, const struct api_caller *c, json_t *body,
                         bool end, struct api_reply *r)
{
    struct store_player p = {0};
    if (!api_need_player(c, r))
        return;
    json_t *days = end ? NULL : json_object_get(body, "days");
    if (!end && (!json_is_object(body) || !days)) {
        api_problem(r, 400, "missing_field", "\"days\" is required");
        return;
    }
    if (!end && (!json_is_integer(days) || json_integer_value(days) < 1)) {
        api_problem(r, 422, "invalid_field", "\"days\" is a whole number of days, at least 1");
        return;
    }
    /* Never more than the yearly allowance (at most 366): refused before any sum, which
     * therefore cannot overflow. */
    if (!end && json_integer_value(days) > app->config.vacation_days) {
        api_problem(r, 422, "vacation_allowance",
                    "a vacation is at most %d days (a year's allowance)",
                    app->config.vacation_days);
        return;
    }
    if (!load(app, c->player, &p, r))
        return;
    int64_t now = api_now_ms(app) / 1000;
    struct tm tm;
    time_t t = (time_t)now;
    gmtime_r(&t, &tm);
    int year = tm.tm_year + 1900;
    if (p.vacation_year != year) {
        p.vacation_year = year;
        p.vacation_days_used = 0;
    }
    bool on = p.vacation_until > now && p.vacation_from <= now;
    if (end) {
        if (!on) {
            api_problem(r, 409, "not_on_vacation", "you are not on vacation");
            goto out;
        }
        /* Whole days not taken go back to the allowance. */
        p.vacation_days_used -= (int)((p.vacation_until - now) / 86400);
        if (p.vacation_days_used < 0)
            p.vacation_days_used = 0;
        p.vacation_until = now;
    } else {
        if (on) {
            api_problem(r, 409, "on_vacation", "you are on vacation until %lld already",
                        (long long)p.vacation_until);
            goto out;
        }
        int64_t n = json_integer_value(days);
        if (p.vacation_days_used + n > app->config.vacation_days) {
            api_problem(r, 422, "vacation_allowance",
                        "%d of your %d vacation days this year are left",
                        app->config.vacation_days - p.vacation_days_used,
                        app->config.vacation_days);
            goto out;
        }
        p.vacation_from = now;
        p.vacation_until = now + n * 86400;
        p.vacation_days_used += (int)n;
    }
    /* The player's record and the vacation itself (kept with every earlier one: a deadline
     * counts every pause inside its turn) in one transaction. */
    struct err e;
    lock_take(&app->db_lock);
    bool ok = store_begin(app->store, &e) && store_player_update(app->store, &p, &e) &&
              (end ? store_vacation_end(app->store, p.id, now, &e)
                   : store_vacation_add(app->store, p.id, p.vacation_from, p.vacation_until, &e)) &&
              store_commit(app->store, &e);
    if (!ok)
        store_rollback(app->store);
    lock_drop(&app->db_lock);
    if (!ok) {
        api_problem_from_err(r, &e);
        goto out;
    }
    api_vacation_noted(app, p.id, p.vacation_until);
    api_player_clocks_changed(app, p.id);
    r->status = 200;
    r->body = player_json(&p, &app->config, now);
out:
    store_player_finish(&p);
}

void api_admin_clock(struct api_app *app, const struct api_caller *c, json_t *body,
                     struct api_reply *r)
{
    if (!app->config.test_clock) {
        api_problem(r, 404, "not_found", "no such resource");
        return;
    }
    if (!c->operator) {
        api_problem(r, c->authenticated ? 403 : 401, "forbidden",
                    "only the operator moves the clock");
        return;
    }
    json_t *adv = json_object_get(body, "advance_seconds");
    if (!json_is_integer(adv) || json_integer_value(adv) < 0 ||
        json_integer_value(adv) > 100LL * 366 * 86400) {
        api_problem(r, 400, "bad_request",
                    "\"advance_seconds\" is a whole number, 0 to 100 years");
        return;
    }
    struct err e;
    if (!api_clock_advance(app, json_integer_value(adv), &e)) {
        api_problem_from_err(r, &e);
        return;
    }
    r->status = 200;
    r->body = json_pack("{s:I}", "now", (json_int_t)api_now_ms(app));
}

void api_admin_stats(struct api_app *app, const struct api_caller *c, struct api_reply *r)
{
    if (!c->operator) {
        api_problem(r, c->authenticated ? 403 : 401, "forbidden",
                    "the service's figures are the operator's");
        return;
    }
    struct api_committer *k = &app->committer;
    lock_take(&k->lock);
    json_int_t batches = (json_int_t)k->batches, writes = (json_int_t)k->writes;
    json_int_t checkpoints = (json_int_t)k->checkpoints;
    lock_drop(&k->lock);
    lock_take(&app->table_lock);
    json_int_t cached = (json_int_t)app->cache.count;
    lock_drop(&app->table_lock);
    r->status = 200;
    r->body = json_pack("{s:{s:I, s:I, s:I}, s:{s:I, s:i}, s:s}", "commits", "batches", batches,
                        "writes", writes, "checkpoints", checkpoints, "matches_in_memory",
                        "count", cached, "limit",
                        app->config.match_cache, "durability",
                        app->config.durable_power ? "power" : "crash");
}

void api_player_matches(struct api_app *app, const struct api_caller *c, struct api_reply *r)
{
    if (!api_need_player(c, r))
        return;
    enum { MAX = 200 };
    int64_t ids[MAX + 1];
    struct err e;
    json_t *list = json_array();
    lock_take(&app->db_lock);
    int n = store_matches_of_player(app->store, c->player, ids, MAX + 1, &e);
    for (int i = 0; i < n && i < MAX; i++) {
        json_t *one = api_match_summary(app, ids[i], &e);
        if (!one) {
            n = -1;
            break;
        }
        json_array_append_new(list, one);
    }
    lock_drop(&app->db_lock);
    if (n < 0) {
        json_decref(list);
        api_problem_from_err(r, &e);
        return;
    }
    r->status = 200;
    r->body = json_pack("{s:o, s:b}", "matches", list, "more", n > MAX);
}
