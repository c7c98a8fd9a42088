/* identity.c - who a player is: their email address, confirmed before anything else is
 * sent to it (one confirmation email with a code, rate-limited per address and per player),
 * and their bearer token, which they can rotate and the operator can revoke or reissue
 * (docs/security.md "Identity and secrets").
 */
#include "core.h"
#include "handlers.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONFIRM_WINDOW 3600 /* the confirmation emails' limits count the last hour */

bool api_token_new(char token[69], uint8_t hash[32], struct err *e)
{
    uint8_t raw[32];
    if (!tlog_seed_random(raw, e))
        return false;
    memcpy(token, "cpt_", 4);
    tlog_hex(raw, sizeof raw, token + 4);
    api_sha256(token, strlen(token), hash);
    return true;
}

/* 429 when `count` emails in the window reach `limit`: retry once the oldest leaves it. */
static bool within(int count, int64_t oldest, int limit, int64_t now, const char *what,
                   struct api_reply *r)
{
    if (count < limit)
        return true;
    int64_t wait = oldest + CONFIRM_WINDOW - now;
    api_problem(r, 429, "confirmation_rate_limited",
                "%d confirmation emails an hour %s at most: try again in %lld seconds", limit,
                what, (long long)(wait > 0 ? wait : 1));
    r->retry_after = (int)(wait > 0 ? wait : 1);
    return false;
}

bool api_email_set(struct api_app *app, int64_t id, const char *name, const char *email,
                   int64_t now_ms, struct api_reply *r)
{
    assert(lock_held(&app->db_lock));
    struct err e;
    int64_t now = now_ms / 1000;
    if (!email || !app->config.smtp.url[0]) /* (no relay: it stays unconfirmed) */
        return store_player_email_set(app->store, id, email, NULL, 0, &e) ||
               api_problem_from_err(r, &e);
    size_t n = strlen(email);
    char *lower = malloc(n + 1);
    if (!lower)
        return api_problem(r, 500, "nomem", "out of memory");
    for (size_t i = 0; i <= n; i++)
        lower[i] = (char)tolower((unsigned char)email[i]);
    int by_player, by_address;
    int64_t oldest_player, oldest_address;
    bool ok = store_confirmations_count(app->store, id, NULL, now - CONFIRM_WINDOW + 1,
                                        &by_player, &oldest_player, &e) &&
              store_confirmations_count(app->store, 0, lower, now - CONFIRM_WINDOW + 1,
                                        &by_address, &oldest_address, &e);
    if (!ok) {
        free(lower);
        return api_problem_from_err(r, &e);
    }
    if (!within(by_player, oldest_player, app->config.confirm_per_player, now, "per player",
                r) ||
        !within(by_address, oldest_address, app->config.confirm_per_address, now,
                "to one address", r)) {
        free(lower);
        return false;
    }
    uint8_t raw[32], hash[32]; /* (a code of 128 random bits: the first 16 bytes) */
    char code[4 + 2 * 16 + 1];
    if (!tlog_seed_random(raw, &e)) {
        free(lower);
        return api_problem_from_err(r, &e);
    }
    memcpy(code, "cpc_", 4);
    tlog_hex(raw, 16, code + 4);
    api_sha256(code, strlen(code), hash);
    const char *base = app->config.public_url;
    size_t size = strlen(name) + strlen(base) + 1200;
    char *text = malloc(size);
    if (text)
        snprintf(text, size,
                 "Hello %s,\n\n"
                 "This address was given to cardpost for the player %s. To confirm that it is\n"
                 "yours, send this code with your token:\n\n"
                 "    %s\n\n"
                 "as POST %s/v1/players/me/email/confirm with the body {\"code\": \"%s\"}\n"
                 "(the `cardpost` pages and clients do it for you). The code is valid for %d\n"
                 "hours. Until the address is confirmed, cardpost sends it nothing else.\n\n"
                 "If you did not ask for this, ignore this email: nothing more will come.\n",
                 name, name, code, base, code, API_CONFIRM_SECONDS / 3600);
    json_t *mail = text ? json_pack("{s:s, s:s, s:s}", "to", email, "subject",
                                    "Confirm your email address for cardpost", "text", text)
                        : NULL;
    free(text);
    ok = mail && store_player_email_set(app->store, id, email, hash, now + API_CONFIRM_SECONDS,
                                        &e) &&
         store_confirmation_add(app->store, id, lower, now, &e) &&
         api_outbox_add_player_email(app, id, "email_confirm", mail, now_ms, &e);
    json_decref(mail);
    free(lower);
    if (!ok)
        return mail ? api_problem_from_err(r, &e) : api_problem(r, 500, "nomem", "out of memory");
    return true;
}

void api_email_confirm(struct api_app *app, const struct api_caller *c, json_t *body,
                       struct api_reply *r)
{
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
    uint8_t hash[32];
    api_sha256(json_string_value(v), json_string_length(v), hash);
    struct store_player p = {0};
    struct err e;
    lock_take(&app->db_lock);
    bool ok = store_player_get(app->store, c->player, &p, &e);
    if (ok && p.email && !p.email_confirmed)
        ok = store_player_email_confirm(app->store, c->player, hash, api_now_ms(app) / 1000, &e);
    lock_drop(&app->db_lock);
    bool none = ok && !p.email;
    store_player_finish(&p);
    if (none)
        api_problem(r, 409, "no_email", "you have no email address to confirm");
    else if (!ok)
        api_problem_from_err(r, &e);
    else
        api_player_me(app, c, r); /* (confirmed now, or before: the same answer) */
}

void api_email_confirm_by_operator(struct api_app *app, const struct api_caller *c, int64_t id,
                                   struct api_reply *r)
{
    if (!api_need_operator(c, r))
        return;
    struct store_player p = {0};
    struct err e;
    lock_take(&app->db_lock);
    bool ok = store_player_get(app->store, id, &p, &e);
    if (ok && p.email)
        ok = store_player_email_confirm(app->store, id, NULL, 0, &e);
    lock_drop(&app->db_lock);
    if (ok && !p.email)
        api_problem(r, 409, "no_email", "player %lld has no email address", (long long)id);
    else if (!ok)
        api_problem_from_err(r, &e);
    else {
        r->status = 200;
        r->body = json_pack("{s:I, s:s, s:b}", "id", (json_int_t)id, "email", p.email,
                            "email_confirmed", true);
    }
    store_player_finish(&p);
}

/* Give player `id` a new token hash and forget the old token at once. */
static bool token_replace(struct api_app *app, int64_t id, const uint8_t hash[32],
                          struct api_reply *r)
{
    struct err e;
    lock_take(&app->db_lock);
    bool ok = store_player_token_set(app->store, id, hash, &e);
    lock_drop(&app->db_lock);
    if (!ok)
        return api_problem_from_err(r, &e);
    api_tokens_forget(app, id);
    return true;
}

void api_token_rotate(struct api_app *app, const struct api_caller *c, struct api_reply *r)
{
    if (!api_need_player(c, r))
        return;
    char token[69];
    uint8_t hash[32];
    struct err e;
    if (!api_token_new(token, hash, &e)) {
        api_problem_from_err(r, &e);
        return;
    }
    if (!token_replace(app, c->player, hash, r))
        return;
    r->status = 200;
    r->body = json_pack("{s:I, s:s}", "id", (json_int_t)c->player, "token", token);
}

void api_token_issue(struct api_app *app, const struct api_caller *c, int64_t id, bool revoke,
                     struct api_reply *r)
{
    if (!api_need_operator(c, r))
        return;
    char token[69];
    uint8_t hash[32];
    struct err e;
    /* A revocation stores the hash of a token nobody is told: none works until the operator
     * issues one. */
    if (!api_token_new(token, hash, &e)) {
        api_problem_from_err(r, &e);
        return;
    }
    if (!token_replace(app, id, hash, r))
        return;
    if (revoke) {
        r->status = 204;
        return;
    }
    r->status = 200;
    r->body = json_pack("{s:I, s:s}", "id", (json_int_t)id, "token", token);
}
