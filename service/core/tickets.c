/* tickets.c - stream tickets: what a browser's EventSource, which cannot send an
 * Authorization header, puts in its stream's URL instead of the token (docs/api.md "Live
 * events", docs/decisions.md "One request a move"). A ticket is drawn for a seat of one
 * match with the seat's token, or for the player's own stream of all their seats (match 0),
 * lives API_TICKET_SECONDS, and opens one stream once. Only its
 * sha256 is kept, bounded in all and per player: in a small table in memory when the
 * database is this process's (SQLite), in the database's table when several processes share
 * it (store_ticket_add, store_ticket_take: a ticket drawn on one process opens a stream on
 * another behind a balancer, and still once only).
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

/* The refusal of a ticket for a player who holds `held` live ones, the first expiring at
 * `first_expiry`, when the most kept is `in_all`: ERR_LIMITED when the player's are the
 * bound (with retry_after), else ERR_UNAVAILABLE. Returns false. */
static bool refuse(int held, int64_t first_expiry, int64_t now, int in_all, struct err *e)
{
    if (held >= API_TICKETS_PER_PLAYER) {
        int wait = (int)((first_expiry - now + 999) / 1000);
        err_set(e, ERR_LIMITED, "too_many_tickets",
                "%d stream tickets unused at most: use one, or retry in %d s",
                API_TICKETS_PER_PLAYER, wait);
        if (e)
            e->retry_after = wait > 0 ? wait : 1;
        return false;
    }
    return err_set(e, ERR_UNAVAILABLE, "unavailable",
                   "the service holds %d unused stream tickets, the most it keeps", in_all);
}

/* A free or expired slot for `player`, or NULL with e (refuse). t->lock held. */
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
    if (held >= API_TICKETS_PER_PLAYER || !free_slot) {
        refuse(held, first_expiry, now, API_TICKETS_MAX, e);
        return NULL;
    }
    return free_slot;
}

/* Keep ticket `k` (its hash, player, match, expiry) drawn at `now`: in memory, or in a
 * shared database's table on this thread's own connection. */
static bool keep(struct api_app *app, const struct store_ticket *k, int64_t now, struct err *e)
{
    if (app->shared) {
        struct store *q = api_quick_store(app, e);
        struct store_ticket_room room;
        if (!q || !store_ticket_add(q, k, now, API_TICKETS_PER_PLAYER, API_TICKETS_MAX, &room, e))
            return false;
        return room.added || refuse(room.held, room.first_expiry, now, API_TICKETS_MAX, e);
    }
    struct api_tickets *t = app->tickets;
    lock_take(&t->lock);
    struct api_ticket *s = slot_for(t, k->player, now, e);
    if (s) {
        memcpy(s->hash, k->hash, sizeof s->hash);
        s->player = k->player;
        s->match = k->match;
        s->expires_ms = k->expires_ms;
    }
    lock_drop(&t->lock);
    return s != NULL;
}

/* Take the ticket whose hash is `hash` into *out (its player 0: none), burning it. */
static bool take(struct api_app *app, const uint8_t hash[API_SHA256_BYTES],
                 struct store_ticket *out, struct err *e)
{
    *out = (struct store_ticket){0};
    if (app->shared) {
        struct store *q = api_quick_store(app, e);
        if (!q)
            return false;
        if (store_ticket_take(q, hash, out, e))
            return true;
        return e && e->code == ERR_NOT_FOUND; /* (none: burnt, expired and swept, or never) */
    }
    struct api_tickets *t = app->tickets;
    lock_take(&t->lock);
    for (int i = 0; i < API_TICKETS_MAX; i++) {
        struct api_ticket *s = &t->slot[i];
        if (s->player && !CRYPTO_memcmp(s->hash, hash, API_SHA256_BYTES)) {
            out->player = s->player;
            out->match = s->match;
            out->expires_ms = s->expires_ms;
            s->player = 0; /* used: whatever comes of it, once */
            break;
        }
    }
    lock_drop(&t->lock);
    return true;
}

bool core_stream_ticket_issue(struct api_app *app, const struct api_caller *c, int64_t id,
                              char ticket[API_TICKET_CHARS], int64_t *expires_ms, struct err *e)
{
    if (!core_need_player(c, e))
        return false;
    bool ok = true;
    if (id) { /* (0: the player's own stream) */
        struct api_match *m = api_match_find(app, id, e);
        if (!m)
            return false;
        lock_take(&m->lock);
        ok = core_match_started(m, e);
        if (ok && api_match_seat(m, c) < 0)
            ok = err_set(e, ERR_FORBIDDEN, "forbidden",
                         "a stream ticket is for a seat of the match: you hold none");
        lock_drop(&m->lock);
        api_match_release(app, m);
    }
    uint8_t raw[TLOG_SEED_BYTES];
    if (!ok || !tlog_seed_random(raw, e))
        return false;
    memcpy(ticket, "cps_", 4);
    tlog_hex(raw, sizeof raw, ticket + 4);
    int64_t now = api_now_ms(app);
    struct store_ticket k = {.player = c->player, .match = id,
                             .expires_ms = now + API_TICKET_SECONDS * 1000};
    api_sha256(ticket, strlen(ticket), k.hash);
    if (!keep(app, &k, now, e))
        return false;
    *expires_ms = k.expires_ms;
    return true;
}

bool core_stream_ticket_redeem(struct api_app *app, const char *ticket, int64_t id,
                               struct api_caller *out, struct err *e)
{
    uint8_t hash[API_SHA256_BYTES];
    api_sha256(ticket, strlen(ticket), hash);
    int64_t now = api_now_ms(app);
    struct store_ticket found;
    if (!take(app, hash, &found, e))
        return false;
    if (!found.player || found.expires_ms <= now)
        return err_set(e, ERR_UNAUTHORIZED, "bad_ticket",
                       "no such stream ticket: it expired, was used, or never was "
                       "(POST /v1/matches/{id}/events/ticket draws one)");
    if (found.match != id)
        return err_set(e, ERR_UNAUTHORIZED, "bad_ticket",
                       !id ? "this stream ticket is for a match's stream, not the player's "
                             "(it is used up now)"
                       : !found.match ? "this stream ticket is for the player's stream "
                                        "(/v1/players/me/events), not a match's (it is used up now)"
                                      : "this stream ticket is for another match (it is used up "
                                        "now)");
    *out = (struct api_caller){.authenticated = true, .player = found.player};
    return true;
}
