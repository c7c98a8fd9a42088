/* players.c - the operations on players (core.h): registration, what a player manages
 * about themself (their record and notification settings, their deliveries, their
 * vacation), and the operator's redelivery, figures and, in test mode, the service's clock.
 * http/api-players.c parses the requests into these and writes the answers.
 */
#include "core.h"
#include "log.h"
#include "notify.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static_assert(sizeof ((struct core_player_made *)0)->webhook_secret == NOTIFY_SECRET_MAX,
              "a registration's webhook secret holds any notify_secret_new makes");

static const char *const event_types[] = {"match_started", "turn", "reminder", "timeout",
                                          "match_over", "invitation", "league_invitation"};
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

int api_prefs_type(const char *type)
{
    for (size_t t = 0; t < NTYPES; t++)
        if (!strcmp(type, event_types[t]))
            return (int)t;
    return -1;
}

unsigned api_prefs_bits(const char *prefs, int channel)
{
    static_assert(NTYPES == API_PREFS_TYPES, "a bit for each type");
    json_t *p = prefs ? json_loads(prefs, 0, NULL) : NULL;
    json_t *ch = json_object_get(p, channel_keys[channel]);
    unsigned bits = 0;
    for (size_t t = 0; t < NTYPES; t++)
        if (!json_is_false(json_object_get(ch, event_types[t]))) /* as api_prefs_want */
            bits |= 1u << t;
    json_decref(p);
    return bits;
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

json_t *core_prefs_json(const char *prefs)
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

bool core_prefs_check(json_t *v, struct err *e)
{
    if (!json_is_object(v))
        return err_set(e, ERR_MALFORMED, "bad_request", "\"preferences\" is an object");
    const char *k;
    json_t *x;
    json_object_foreach(v, k, x) {
        if (!strcmp(k, "email_when_watching") || !strcmp(k, "seat_without_asking")) {
            if (!json_is_boolean(x))
                return err_set(e, ERR_MALFORMED, "bad_request", "%s is true or false", k);
            continue;
        }
        if (strcmp(k, "email") && strcmp(k, "webhook"))
            return err_set(e, ERR_INVALID, "invalid_field", "unknown preference '%s'", k);
        if (!json_is_object(x))
            return err_set(e, ERR_MALFORMED, "bad_request", "preferences.%s is an object", k);
        const char *t;
        json_t *b;
        json_object_foreach(x, t, b) {
            if (!known_type(t))
                return err_set(e, ERR_INVALID, "invalid_field",
                               "unknown notification type '%.40s' (match_started, turn, "
                               "reminder, timeout, match_over, invitation, "
                               "league_invitation)",
                               t);
            if (!json_is_boolean(b))
                return err_set(e, ERR_MALFORMED, "bad_request",
                               "preferences.%s.%s is true or false", k, t);
        }
    }
    return true;
}

/* ---- Who asks ------------------------------------------------------------------------------ */

bool core_need_player(const struct api_caller *c, struct err *e)
{
    if (!c->authenticated)
        return err_set(e, ERR_UNAUTHORIZED, "unauthorized", "this needs a player's token");
    return c->player || err_set(e, ERR_FORBIDDEN, "forbidden", "this is a player's own");
}

bool core_need_operator(const struct api_caller *c, struct err *e)
{
    if (!c->authenticated)
        return err_set(e, ERR_UNAUTHORIZED, "unauthorized", "this needs the operator's token");
    return c->operator || err_set(e, ERR_FORBIDDEN, "forbidden", "only the operator does this");
}

bool core_need_caller(const struct api_caller *c, struct err *e)
{
    return c->authenticated || err_set(e, ERR_UNAUTHORIZED, "unauthorized",
                                       "this needs a player's or the operator's token");
}

/* ---- Registration ------------------------------------------------------------------------- */

/* A player's name: not empty, no control characters. */
static bool name_ok(const char *name, struct err *e)
{
    if (!name[0])
        return err_set(e, ERR_INVALID, "invalid_field", "\"name\" must not be empty");
    for (const unsigned char *q = (const unsigned char *)name; *q; q++)
        if (*q < 0x20 || *q == 0x7f)
            return err_set(e, ERR_INVALID, "invalid_field",
                           "\"name\" must not hold control characters");
    return true;
}

/* A new address or webhook URL, judged as the API says (invalid_email, invalid_field). */
static bool email_ok(const char *email, struct err *e)
{
    struct err why;
    return notify_mailbox_ok(email, &why) ||
           err_set(e, ERR_INVALID, "invalid_email", "\"email\": %s", why.msg);
}

static bool webhook_ok(struct api_app *app, const char *url, struct err *e)
{
    struct err why;
    return notify_webhook_url_ok(url, &app->config.webhooks, false, &why) ||
           err_set(e, ERR_INVALID, "invalid_field", "\"webhook_url\": %s", why.msg);
}

/* Run `write` in one transaction (db_lock held): all of it, or nothing. */
static bool in_transaction(struct api_app *app, bool (*write)(struct api_app *, void *,
                                                               struct err *),
                           void *ctx, struct err *e)
{
    lock_take(&app->db_lock);
    bool ok = store_begin(app->store, e);
    if (ok) {
        ok = write(app, ctx, e) && store_commit(app->store, e);
        if (!ok)
            store_rollback(app->store);
    }
    lock_drop(&app->db_lock);
    return ok;
}

struct registration {
    struct store_player p;
    const uint8_t *hash;
    const char *email;
    int64_t now_ms;
};

/* The player and, with an address, its confirmation email: one transaction (a
 * registration refused by the confirmation emails' rate limit leaves nothing). */
static bool register_write(struct api_app *app, void *ctx, struct err *e)
{
    struct registration *g = ctx;
    return store_player_insert(app->store, &g->p, g->hash, e) &&
           (!g->email || core_email_set(app, g->p.id, g->p.name, g->email, g->now_ms, e));
}

bool core_player_register(struct api_app *app, const struct core_player_new *in,
                          struct core_player_made *out, struct err *e)
{
    if (!name_ok(in->name, e) || (in->email && !email_ok(in->email, e)) ||
        (in->webhook_url && !webhook_ok(app, in->webhook_url, e)) ||
        (in->prefs && !core_prefs_check(in->prefs, e)))
        return false;
    uint8_t hash[API_SHA256_BYTES];
    if (!notify_secret_new(out->webhook_secret, e) || !api_token_new(out->token, hash, e))
        return false;
    int64_t now_ms = api_now_ms(app);
    struct registration g = {
        .p = {
            .name = (char *)in->name,
            .webhook_url = (char *)in->webhook_url,
            .webhook_secret = out->webhook_secret,
            .prefs = in->prefs ? json_dumps(in->prefs, JSON_COMPACT) : NULL,
            .created_at = now_ms / 1000,
        },
        .hash = hash,
        .email = in->email,
        .now_ms = now_ms,
    };
    bool ok = in_transaction(app, register_write, &g, e);
    free(g.p.prefs);
    if (!ok)
        return false;
    if (in->email)
        api_wake(app);
    out->id = g.p.id;
    out->created_at = g.p.created_at;
    return true;
}

/* ---- The player's record -------------------------------------------------------------------- */

void core_player_finish(struct core_player *p)
{
    if (p)
        store_player_finish(&p->rec);
}

static bool load(struct api_app *app, int64_t id, struct store_player *p, struct err *e)
{
    lock_take(&app->db_lock);
    bool ok = store_player_get(app->store, id, p, e);
    lock_drop(&app->db_lock);
    return ok;
}

bool core_player_get(struct api_app *app, const struct api_caller *c, struct core_player *out,
                     struct err *e)
{
    *out = (struct core_player){0};
    if (!core_need_player(c, e) || !load(app, c->player, &out->rec, e))
        return false;
    out->now = api_now_ms(app) / 1000;
    return true;
}

/* Replace *field with `value` (NULL or empty: none). */
static bool replace(char **field, const char *value, struct err *e)
{
    free(*field);
    *field = value && value[0] ? strdup(value) : NULL;
    return *field || !(value && value[0]) || err_set(e, ERR_NOMEM, "nomem", "out of memory");
}

/* Merge the preferences given into `p`'s: keys given replace, others stay. */
static void prefs_merge(struct store_player *p, json_t *prefs)
{
    json_t *merged = core_prefs_json(p->prefs);
    const char *k;
    json_t *x;
    json_object_foreach(prefs, k, x) {
        if (json_is_object(x))
            json_object_update(json_object_get(merged, k), x);
        else
            json_object_set(merged, k, x);
    }
    free(p->prefs);
    p->prefs = json_dumps(merged, JSON_COMPACT);
    json_decref(merged);
}

struct change {
    struct store_player *p;
    bool email_set;
    int64_t now_ms;
};

static bool change_write(struct api_app *app, void *ctx, struct err *e)
{
    struct change *ch = ctx;
    return store_player_update(app->store, ch->p, e) &&
           (!ch->email_set || core_email_set(app, ch->p->id, ch->p->name, ch->p->email,
                                             ch->now_ms, e)) &&
           api_player_announce(app, ch->p->id, e);
}

/* The fields of `in` applied to `p` (its old URL and address given), checked. */
static bool change_apply(struct api_app *app, const struct core_player_change *in,
                         struct store_player *p, const char *old_url, struct err *e)
{
    if ((in->email_given && !replace(&p->email, in->email, e)) ||
        (in->webhook_given && !replace(&p->webhook_url, in->webhook_url, e)))
        return false;
    /* Only a new address is judged: one stored before the rules stays until replaced (and
     * delivery refuses it). */
    if (p->email && in->email_given && !email_ok(p->email, e))
        return false;
    if (p->webhook_url && in->webhook_given && !webhook_ok(app, p->webhook_url, e))
        return false;
    /* A new endpoint starts enabled; it gets a secret if the player has none. */
    if ((p->webhook_url && (!old_url || strcmp(old_url, p->webhook_url))) || !p->webhook_url)
        p->webhook_disabled = false;
    if (!p->webhook_secret) {
        char secret[NOTIFY_SECRET_MAX];
        if (!notify_secret_new(secret, e) || !replace(&p->webhook_secret, secret, e))
            return false;
    }
    if (in->prefs)
        prefs_merge(p, in->prefs);
    return true;
}

bool core_player_update(struct api_app *app, const struct api_caller *c,
                        const struct core_player_change *in, struct core_player *out,
                        struct err *e)
{
    *out = (struct core_player){0};
    if (!core_need_player(c, e) || (in->prefs && !core_prefs_check(in->prefs, e)) ||
        !load(app, c->player, &out->rec, e))
        return false;
    struct store_player *p = &out->rec;
    char *old_url = p->webhook_url ? strdup(p->webhook_url) : NULL;
    char *old_email = p->email ? strdup(p->email) : NULL;
    bool ok = change_apply(app, in, p, old_url, e);
    /* A new address (or the same one again while it is unconfirmed: a resend) is
     * unconfirmed and gets its confirmation email; a confirmed address given again, or not
     * given, stays confirmed. All in one transaction: a change refused by the confirmation
     * emails' rate limit changes nothing. */
    struct change ch = {
        .p = p,
        .email_set = in->email_given &&
                     (!p->email || !old_email || strcmp(p->email, old_email) ||
                      !p->email_confirmed),
        .now_ms = api_now_ms(app),
    };
    if (ok) {
        ok = in_transaction(app, change_write, &ch, e);
        api_facts_forget(app, p->id); /* (its notifications read the row again) */
    }
    free(old_url);
    free(old_email);
    if (!ok)
        return false;
    if (ch.email_set) {
        p->email_confirmed = false;
        api_wake(app);
    }
    out->now = ch.now_ms / 1000;
    return true;
}

/* ---- Deliveries ----------------------------------------------------------------------------- */

void core_deliveries_free(struct core_delivery *list, int n)
{
    for (int i = 0; list && i < n; i++)
        store_outbox_finish(&list[i].row);
    free(list);
}

int core_player_deliveries(struct api_app *app, const struct api_caller *c, int max,
                           struct core_delivery **out, struct err *e)
{
    *out = NULL;
    if (!core_need_player(c, e))
        return -1;
    struct store_outbox *rows = calloc((size_t)max, sizeof *rows);
    struct core_delivery *list = calloc((size_t)max, sizeof *list);
    if (!rows || !list) {
        free(rows);
        free(list);
        err_set(e, ERR_NOMEM, "nomem", "out of memory");
        return -1;
    }
    /* (On the reading connection: docs/decisions.md "A read never waits for the writer".) */
    lock_take(&app->read_lock);
    int n = store_outbox_of_player(app->reader, c->player, 0, rows, max, e);
    for (int i = 0; i < n; i++) {
        struct err ae;
        list[i].row = rows[i];
        list[i].nattempts = store_attempts_of(app->reader, rows[i].id, list[i].attempt,
                                              CORE_ATTEMPTS, &ae);
        if (list[i].nattempts < 0) /* (the row is listed all the same) */
            list[i].nattempts = 0;
    }
    lock_drop(&app->read_lock);
    free(rows);
    if (n < 0) {
        free(list);
        return -1;
    }
    *out = list;
    return n;
}

bool core_delivery_redeliver(struct api_app *app, const struct api_caller *c, int64_t id,
                             struct core_delivery *out, struct err *e)
{
    *out = (struct core_delivery){0};
    if (!c->authenticated)
        return err_set(e, ERR_UNAUTHORIZED, "unauthorized", "this needs the operator's token");
    if (!c->operator)
        return err_set(e, ERR_FORBIDDEN, "forbidden", "only the operator redelivers");
    lock_take(&app->db_lock);
    bool ok = store_outbox_redeliver(app->store, id, api_now_ms(app), e) &&
              store_outbox_get(app->store, id, &out->row, e);
    lock_drop(&app->db_lock);
    if (ok)
        api_wake(app);
    return ok;
}

/* ---- Vacations ------------------------------------------------------------------------------ */

/* The caller's record at the service's time, its vacation year brought to this year. */
static bool vacation_load(struct api_app *app, const struct api_caller *c,
                          struct core_player *out, struct err *e)
{
    *out = (struct core_player){0};
    if (!load(app, c->player, &out->rec, e))
        return false;
    out->now = api_now_ms(app) / 1000;
    struct tm tm;
    time_t t = (time_t)out->now;
    gmtime_r(&t, &tm);
    int year = tm.tm_year + 1900;
    if (out->rec.vacation_year != year) {
        out->rec.vacation_year = year;
        out->rec.vacation_days_used = 0;
    }
    return true;
}

static bool on_vacation(const struct core_player *p)
{
    return p->rec.vacation_until > p->now && p->rec.vacation_from <= p->now;
}

struct vacation {
    const struct core_player *player;
    bool end;
};

static bool vacation_store(struct api_app *app, void *ctx, struct err *e)
{
    const struct vacation *v = ctx;
    const struct store_player *p = &v->player->rec;
    return store_player_update(app->store, p, e) &&
           (v->end ? store_vacation_end(app->store, p->id, v->player->now, e)
                   : store_vacation_add(app->store, p->id, p->vacation_from, p->vacation_until,
                                        e)) &&
           api_vacation_announce(app, p->id, p->vacation_until, e);
}

/* The player's record and the vacation itself (kept with every earlier one: a deadline
 * counts every pause inside its turn) in one transaction; then the seats' clocks. */
static bool vacation_write(struct api_app *app, const struct core_player *out, bool end,
                           struct err *e)
{
    struct vacation v = {out, end};
    bool ok = in_transaction(app, vacation_store, &v, e);
    api_facts_forget(app, out->rec.id); /* (the whole row was written, as read before) */
    if (!ok)
        return false;
    api_vacation_noted(app, out->rec.id, out->rec.vacation_until);
    struct log_line l;
    if (log_begin(&l, LOG_LEVEL_INFO, "clock")) {
        log_str(&l, "action", end ? "vacation_ended" : "vacation_begun");
        log_int(&l, "player", out->rec.id);
        log_time(&l, "until", out->rec.vacation_until * 1000);
        log_end(&l);
    }
    api_player_clocks_changed(app, out->rec.id);
    return true;
}

bool core_vacation_take(struct api_app *app, const struct api_caller *c, int64_t days,
                        struct core_player *out, struct err *e)
{
    *out = (struct core_player){0};
    if (!core_need_player(c, e))
        return false;
    if (days < 1)
        return err_set(e, ERR_INVALID, "invalid_field",
                       "\"days\" is a whole number of days, at least 1");
    /* Never more than the yearly allowance (at most 366): refused before any sum, which
     * therefore cannot overflow. */
    int allowance = app->config.vacation_days;
    if (days > allowance)
        return err_set(e, ERR_INVALID, "vacation_allowance",
                       "a vacation is at most %d days (a year's allowance)", allowance);
    if (!vacation_load(app, c, out, e))
        return false;
    struct store_player *p = &out->rec;
    if (on_vacation(out))
        return err_set(e, ERR_CONFLICT, "on_vacation", "you are on vacation until %lld already",
                       (long long)p->vacation_until);
    if (p->vacation_days_used + days > allowance)
        return err_set(e, ERR_INVALID, "vacation_allowance",
                       "%d of your %d vacation days this year are left",
                       allowance - p->vacation_days_used, allowance);
    p->vacation_from = out->now;
    p->vacation_until = out->now + days * 86400;
    p->vacation_days_used += (int)days;
    return vacation_write(app, out, false, e);
}

bool core_vacation_end(struct api_app *app, const struct api_caller *c, struct core_player *out,
                       struct err *e)
{
    *out = (struct core_player){0};
    if (!core_need_player(c, e) || !vacation_load(app, c, out, e))
        return false;
    struct store_player *p = &out->rec;
    if (!on_vacation(out))
        return err_set(e, ERR_CONFLICT, "not_on_vacation", "you are not on vacation");
    /* Whole days not taken go back to the allowance. */
    p->vacation_days_used -= (int)((p->vacation_until - out->now) / 86400);
    if (p->vacation_days_used < 0)
        p->vacation_days_used = 0;
    p->vacation_until = out->now;
    return vacation_write(app, out, true, e);
}

/* ---- The operator's -------------------------------------------------------------------------- */

bool core_clock_advance(struct api_app *app, const struct api_caller *c, int64_t seconds,
                        int64_t *now_ms, struct err *e)
{
    if (!app->config.test_clock)
        return err_set(e, ERR_NOT_FOUND, "not_found", "no such resource");
    if (!c->operator)
        return err_set(e, c->authenticated ? ERR_FORBIDDEN : ERR_UNAUTHORIZED, "forbidden",
                       "only the operator moves the clock");
    if (seconds < 0 || seconds > 100LL * 366 * 86400)
        return err_set(e, ERR_MALFORMED, "bad_request",
                       "\"advance_seconds\" is a whole number, 0 to 100 years");
    if (!api_clock_advance(app, seconds, e))
        return false;
    *now_ms = api_now_ms(app);
    return true;
}

bool core_stats_get(struct api_app *app, const struct api_caller *c, struct core_stats *out,
                    struct err *e)
{
    if (!c->operator)
        return err_set(e, c->authenticated ? ERR_FORBIDDEN : ERR_UNAUTHORIZED, "forbidden",
                       "the service's figures are the operator's");
    struct store_commit_figures k;
    store_committer_figures(app->committer, &k);
    out->batches = k.batches;
    out->writes = k.writes;
    out->checkpoints = k.asides + k.checkpoints; /* (each copy, aside or between batches) */
    out->cached = api_matches_in_memory(app);
    return true;
}

int api_active_matches_of_player(struct api_app *app, int64_t player, int64_t after,
                                 int64_t *out, int max, struct err *e)
{
    lock_take(&app->read_lock);
    int n = store_active_matches_of_player(app->reader, player, after, false, out, max, e);
    lock_drop(&app->read_lock);
    return n;
}

int core_player_matches(struct api_app *app, const struct api_caller *c, struct store_match *out,
                        int max, bool *more, struct err *e)
{
    if (!core_need_player(c, e))
        return -1;
    int64_t *ids = calloc((size_t)max + 1, sizeof *ids);
    if (!ids) {
        err_set(e, ERR_NOMEM, "nomem", "out of memory");
        return -1;
    }
    lock_take(&app->read_lock); /* (docs/decisions.md "A read never waits for the writer") */
    int n = store_matches_of_player(app->reader, c->player, ids, max + 1, e);
    *more = n > max;
    if (n > max)
        n = max;
    for (int i = 0; i < n; i++) {
        if (!store_match_get(app->reader, ids[i], &out[i], e)) {
            while (i-- > 0)
                store_match_finish(&out[i]);
            n = -1;
            break;
        }
    }
    lock_drop(&app->read_lock);
    free(ids);
    return n;
}
