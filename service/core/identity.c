/* identity.c - who a player is: their email address, confirmed before anything else is
 * sent to it (one confirmation email with a code, rate-limited per address and per player),
 * and their bearer token, which they can rotate and the operator can revoke or reissue
 * (docs/security.md "Identity and secrets"). The operations of core.h; http/api-players.c
 * answers the requests with them.
 */
#include "core.h"

#include <assert.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONFIRM_WINDOW 3600 /* the confirmation emails' limits count the last hour */

bool api_token_new(char token[API_TOKEN_CHARS], uint8_t hash[API_SHA256_BYTES], struct err *e)
{
    uint8_t raw[TLOG_SEED_BYTES];
    if (!tlog_seed_random(raw, e))
        return false;
    memcpy(token, "cpt_", 4);
    tlog_hex(raw, sizeof raw, token + 4);
    api_sha256(token, strlen(token), hash);
    return true;
}

/* ERR_LIMITED when `count` emails in the window reach `limit`: retry once the oldest leaves
 * it. */
static bool within(int count, int64_t oldest, int limit, int64_t now, const char *what,
                   struct err *e)
{
    if (count < limit)
        return true;
    int64_t wait = oldest + CONFIRM_WINDOW - now;
    err_set(e, ERR_LIMITED, "confirmation_rate_limited",
            "%d confirmation emails an hour %s at most: try again in %lld seconds", limit, what,
            (long long)(wait > 0 ? wait : 1));
    if (e)
        e->retry_after = (int)(wait > 0 ? wait : 1);
    return false;
}

/* The confirmation email of `code` for `name` to `email`, as the outbox takes it; NULL
 * without memory. */
static json_t *confirm_mail(const struct config *config, const char *name, const char *email,
                            const char *code)
{
    const char *base = config->public_url;
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
    return mail;
}

bool core_email_set(struct api_app *app, int64_t id, const char *name, const char *email,
                    int64_t now_ms, struct err *e)
{
    assert(lock_held(&app->db_lock));
    int64_t now = now_ms / 1000;
    if (!email || !app->config.smtp.url[0]) /* (no relay: it stays unconfirmed) */
        return store_player_email_set(app->store, id, email, NULL, 0, e);
    size_t n = strlen(email);
    char *lower = malloc(n + 1);
    if (!lower)
        return err_set(e, ERR_NOMEM, "nomem", "out of memory");
    for (size_t i = 0; i <= n; i++)
        lower[i] = (char)tolower((unsigned char)email[i]);
    int by_player, by_address;
    int64_t oldest_player, oldest_address;
    uint8_t raw[TLOG_SEED_BYTES], hash[API_SHA256_BYTES]; /* (a code of 128 random bits: the first 16 bytes) */
    char code[4 + 2 * 16 + 1];
    json_t *mail = NULL;
    bool ok = store_confirmations_count(app->store, id, NULL, now - CONFIRM_WINDOW + 1,
                                        &by_player, &oldest_player, e) &&
              store_confirmations_count(app->store, 0, lower, now - CONFIRM_WINDOW + 1,
                                        &by_address, &oldest_address, e) &&
              within(by_player, oldest_player, app->config.confirm_per_player, now,
                     "per player", e) &&
              within(by_address, oldest_address, app->config.confirm_per_address, now,
                     "to one address", e) &&
              tlog_seed_random(raw, e);
    if (ok) {
        memcpy(code, "cpc_", 4);
        tlog_hex(raw, 16, code + 4);
        api_sha256(code, strlen(code), hash);
        mail = confirm_mail(&app->config, name, email, code);
        ok = mail ? true : err_set(e, ERR_NOMEM, "nomem", "out of memory");
    }
    ok = ok &&
         store_player_email_set(app->store, id, email, hash, now + API_CONFIRM_SECONDS, e) &&
         store_confirmation_add(app->store, id, lower, now, e) &&
         api_outbox_add_player_email(app, id, "email_confirm", mail, now_ms, e);
    json_decref(mail);
    free(lower);
    return ok;
}

/* A confirmation: player `id`'s record into *p, and its address confirmed (with the code
 * whose sha256 is `hash` at `now`; NULL: the operator's) unless it has none or is confirmed
 * already. One transaction that tells the other processes (their players' facts); the
 * facts of this one forgotten after it. */
struct confirm {
    int64_t id;
    const uint8_t *hash;
    int64_t now;
    struct store_player *p;
};

static bool confirm_write(struct api_app *app, const struct confirm *cf, struct err *e)
{
    lock_take(&app->db_lock);
    bool ok = store_begin(app->store, e);
    if (ok) {
        ok = store_player_get(app->store, cf->id, cf->p, e);
        if (ok && cf->p->email && !(cf->hash && cf->p->email_confirmed))
            ok = store_player_email_confirm(app->store, cf->id, cf->hash, cf->now, e) &&
                 api_player_announce(app, cf->id, e);
        ok = ok && store_commit(app->store, e);
        if (!ok)
            store_rollback(app->store);
    }
    lock_drop(&app->db_lock);
    api_facts_forget(app, cf->id);
    return ok;
}

bool core_email_confirm(struct api_app *app, const struct api_caller *c, const char *code,
                        size_t len, struct err *e)
{
    if (!core_need_player(c, e))
        return false;
    uint8_t hash[API_SHA256_BYTES];
    api_sha256(code, len, hash);
    struct store_player p = {0};
    struct confirm cf = {c->player, hash, api_now_ms(app) / 1000, &p};
    bool ok = confirm_write(app, &cf, e);
    bool none = ok && !p.email;
    store_player_finish(&p);
    if (none)
        return err_set(e, ERR_CONFLICT, "no_email", "you have no email address to confirm");
    return ok; /* (confirmed now, or before: the same) */
}

bool core_email_confirm_by_operator(struct api_app *app, const struct api_caller *c, int64_t id,
                                    char **email, struct err *e)
{
    *email = NULL;
    if (!core_need_operator(c, e))
        return false;
    struct store_player p = {0};
    struct confirm cf = {id, NULL, 0, &p};
    bool ok = confirm_write(app, &cf, e);
    if (ok && !p.email)
        ok = err_set(e, ERR_CONFLICT, "no_email", "player %lld has no email address",
                     (long long)id);
    if (ok) {
        *email = p.email;
        p.email = NULL;
    }
    store_player_finish(&p);
    return ok;
}

/* Give player `id` a new token (its hash stored, the old token forgotten at once); `token`
 * gets it. */
static bool token_renew(struct api_app *app, int64_t id, char token[API_TOKEN_CHARS], struct err *e)
{
    uint8_t hash[API_SHA256_BYTES];
    if (!api_token_new(token, hash, e))
        return false;
    lock_take(&app->db_lock);
    bool ok = store_player_token_set(app->store, id, hash, e);
    lock_drop(&app->db_lock);
    if (ok) {
        api_tokens_forget(app, id);
        api_token_announce(app, id);
    }
    return ok;
}

bool core_token_rotate(struct api_app *app, const struct api_caller *c, char token[API_TOKEN_CHARS],
                       struct err *e)
{
    return core_need_player(c, e) && token_renew(app, c->player, token, e);
}

bool core_token_issue(struct api_app *app, const struct api_caller *c, int64_t id,
                      char token[API_TOKEN_CHARS], struct err *e)
{
    return core_need_operator(c, e) && token_renew(app, id, token, e);
}

bool core_token_revoke(struct api_app *app, const struct api_caller *c, int64_t id,
                       struct err *e)
{
    /* The hash of a token nobody is told: none works until the operator issues one. */
    char token[API_TOKEN_CHARS];
    return core_need_operator(c, e) && token_renew(app, id, token, e);
}
