/* tickets.c - stream tickets: what a browser's EventSource, which cannot send an
 * Authorization header, puts in its stream's URL instead of the token (docs/api.md "Live
 * events", docs/decisions.md "One request a move"). A ticket is drawn for a seat of one
 * match with the seat's token, lives API_TICKET_SECONDS, and opens one stream once. Only its
 * sha256 is kept, in a small table in memory; the table is bounded in all and per player.
 */
#include "core.h"

#include <assert.h>
#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>

struct api_ticket {
    uint8_t hash[API_SHA256_BYTES];
    int64_t player; /* 0: a free slot */
    int64_t match;
    int64_t expires_ms; /* the service's time (api_now_ms) */
};

struct api_tickets {
    struct lock lock; /* a leaf: API_LOCK_TICKETS */
    struct api_ticket slot[API_TICKETS_MAX];
};

struct api_tickets *api_tickets_create(void)
{
    struct api_tickets *t = calloc(1, sizeof *t);
    if (t)
        lock_init(&t->lock, API_LOCK_TICKETS, "tickets_lock");
    return t;
}

void api_tickets_destroy(struct api_tickets *t)
{
    if (!t)
        return;
    lock_finish(&t->lock);
    free(t);
}

/* A free or expired slot for `player`, or NULL with e: ERR_LIMITED when the player holds
 * API_TICKETS_PER_PLAYER live tickets, ERR_UNAVAILABLE when the table is full. t->lock held. */
static struct api_ticket *slot_for(struct api_tickets *t, int64_t player, int64_t now,
                                   struct err *e)
{
    struct api_ticket *free_slot = NULL;
    int held = 0;
    int64_t first_expiry = INT64_MAX;
    for (int i = 0; i < API_TICKETS_MAX; i++) {
        struct api_ticket *s = &t->slot[i];
        if (s->player && s->expires_ms <= now)
            s->player = 0;
        if (!s->player) {
            free_slot = free_slot ? free_slot : s;
        } else if (s->player == player) {
            held++;
            first_expiry = s->expires_ms < first_expiry ? s->expires_ms : first_expiry;
        }
    }
    if (held >= API_TICKETS_PER_PLAYER) {
        int wait = (int)((first_expiry - now + 999) / 1000);
        err_set(e, ERR_LIMITED, "too_many_tickets",
                "%d stream tickets unused at most: use one, or retry in %d s",
                API_TICKETS_PER_PLAYER, wait);
        if (e)
            e->retry_after = wait > 0 ? wait : 1;
        return NULL;
    }
    if (!free_slot)
        err_set(e, ERR_UNAVAILABLE, "unavailable",
                "the service holds %d unused stream tickets, the most it keeps", API_TICKETS_MAX);
    return free_slot;
}

bool core_stream_ticket_issue(struct api_app *app, const struct api_caller *c, int64_t id,
                              char ticket[API_TICKET_CHARS], int64_t *expires_ms, struct err *e)
{
    if (!core_need_player(c, e))
        return false;
    struct api_match *m = api_match_find(app, id, e);
    if (!m)
        return false;
    lock_take(&m->lock);
    bool ok = core_match_started(m, e);
    if (ok && api_match_seat(m, c) < 0)
        ok = err_set(e, ERR_FORBIDDEN, "forbidden",
                     "a stream ticket is for a seat of the match: you hold none");
    lock_drop(&m->lock);
    api_match_release(app, m);
    uint8_t raw[TLOG_SEED_BYTES];
    if (!ok || !tlog_seed_random(raw, e))
        return false;
    memcpy(ticket, "cps_", 4);
    tlog_hex(raw, sizeof raw, ticket + 4);
    int64_t now = api_now_ms(app);
    struct api_tickets *t = app->tickets;
    lock_take(&t->lock);
    struct api_ticket *s = slot_for(t, c->player, now, e);
    if (s) {
        api_sha256(ticket, strlen(ticket), s->hash);
        s->player = c->player;
        s->match = id;
        s->expires_ms = *expires_ms = now + API_TICKET_SECONDS * 1000;
    }
    lock_drop(&t->lock);
    return s != NULL;
}

bool core_stream_ticket_redeem(struct api_app *app, const char *ticket, int64_t id,
                               struct api_caller *out, struct err *e)
{
    uint8_t hash[API_SHA256_BYTES];
    api_sha256(ticket, strlen(ticket), hash);
    int64_t now = api_now_ms(app);
    struct api_tickets *t = app->tickets;
    struct api_ticket found = {0};
    lock_take(&t->lock);
    for (int i = 0; i < API_TICKETS_MAX; i++) {
        struct api_ticket *s = &t->slot[i];
        if (s->player && !CRYPTO_memcmp(s->hash, hash, sizeof hash)) {
            found = *s;
            s->player = 0; /* used: whatever comes of it, once */
            break;
        }
    }
    lock_drop(&t->lock);
    if (!found.player || found.expires_ms <= now)
        return err_set(e, ERR_UNAUTHORIZED, "bad_ticket",
                       "no such stream ticket: it expired, was used, or never was "
                       "(POST /v1/matches/{id}/events/ticket draws one)");
    if (found.match != id)
        return err_set(e, ERR_UNAUTHORIZED, "bad_ticket",
                       "this stream ticket is for another match (it is used up now)");
    *out = (struct api_caller){.authenticated = true, .player = found.player};
    return true;
}
