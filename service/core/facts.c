/* facts.c - what each player's notifications need to know of them (core.h: api_facts): a
 * confirmed address, an enabled webhook and its destination, the preferences as bits. Every
 * accepted move asks it for the players it tells (notes.c); kept here, a move whose players
 * are known reads no player row and parses no preferences. A cache, never the truth: every
 * write of those fields forgets the player's entry once it is over (players.c, identity.c,
 * outbox.c), and on a shared database the other processes forget it when their listener
 * hears the write's announcement (shared.c: "p PLAYER"). docs/decisions.md "A move reads no
 * player row (issue 18)".
 */
#include "core.h"
#include "notify.h"

#include <stdlib.h>
#include <string.h>

/* Direct-mapped by player id, as the tokens: a collision replaces the entry (its next use
 * reads the row, as every use did before). 4,096 entries hold the seats of the default
 * match cache (1,024 matches of up to four); 1.2 MB, of which only the pages of entries
 * used are ever touched. */
#define FACTS_SLOTS 4096

struct api_facts_cache {
    struct lock lock;             /* API_LOCK_FACTS, a leaf: nothing is taken under it */
    uint64_t epoch;               /* bumped by every forget: a read that began in an older
                                   * epoch keeps nothing */
    bool live;                    /* the entries may be used (api_facts_live) */
    struct api_facts slot[FACTS_SLOTS]; /* player 0: empty */
};

struct api_facts_cache *api_facts_create(struct err *e)
{
    struct api_facts_cache *c = calloc(1, sizeof *c);
    if (!c) {
        err_set(e, ERR_NOMEM, "nomem", "out of memory");
        return NULL;
    }
    lock_init(&c->lock, API_LOCK_FACTS, "facts_lock");
    c->live = true;
    return c;
}

void api_facts_destroy(struct api_facts_cache *c)
{
    if (!c)
        return;
    lock_finish(&c->lock);
    free(c);
}

void api_facts_of(const struct store_player *p, struct api_facts *out)
{
    memset(out, 0, sizeof *out);
    out->player = p->id;
    out->email = p->email && p->email_confirmed;
    out->webhook = p->webhook_url && !p->webhook_disabled;
    out->email_when_watching = api_prefs_email_when_watching(p->prefs);
    out->want[STORE_EMAIL] = (uint8_t)api_prefs_bits(p->prefs, STORE_EMAIL);
    out->want[STORE_WEBHOOK] = (uint8_t)api_prefs_bits(p->prefs, STORE_WEBHOOK);
    struct err ignored;
    if (p->webhook_url && !notify_webhook_destination(p->webhook_url, out->destination,
                                                      sizeof out->destination, &ignored))
        out->destination[0] = '\0';
}

bool api_facts_want(const struct api_facts *f, int channel, const char *type)
{
    static_assert(API_PREFS_TYPES <= 8, "a type's bit fits want[]");
    int t = api_prefs_type(type);
    return t < 0 || ((f->want[channel] >> t) & 1); /* (no preference names another type) */
}

static struct api_facts *slot_of(struct api_facts_cache *c, int64_t player)
{
    uint64_t h = (uint64_t)player * 0x9E3779B97F4A7C15u;
    return &c->slot[(h >> 32) % FACTS_SLOTS];
}

bool api_player_facts(struct api_app *app, int64_t player, bool reader, struct api_facts *out,
                      struct err *e)
{
    struct api_facts_cache *c = app->facts;
    lock_take(&c->lock);
    struct api_facts *sl = slot_of(c, player);
    bool hit = c->live && sl->player == player;
    if (hit)
        *out = *sl;
    uint64_t epoch = c->epoch;
    lock_drop(&c->lock);
    if (hit)
        return true;
    struct store_player p = {0};
    bool found;
    if (reader) { /* (before a move's transaction: the reading connection) */
        lock_take(&app->read_lock);
        found = store_player_get(app->reader, player, &p, e);
        lock_drop(&app->read_lock);
    } else {
        assert(lock_held(&app->db_lock));
        found = store_player_get(app->store, player, &p, e);
    }
    if (found)
        api_facts_of(&p, out);
    store_player_finish(&p);
    if (!found)
        return false;
    /* Kept unless a write of some player's row ended since the read began: what was read
     * may be older than that write. */
    lock_take(&c->lock);
    if (c->live && c->epoch == epoch)
        *slot_of(c, player) = *out;
    lock_drop(&c->lock);
    return true;
}

/* Forget `player`'s entry (0: every entry); c->lock held. */
static void forget(struct api_facts_cache *c, int64_t player)
{
    c->epoch++;
    if (player) {
        struct api_facts *sl = slot_of(c, player);
        if (sl->player == player)
            sl->player = 0;
        return;
    }
    for (size_t i = 0; i < FACTS_SLOTS; i++)
        if (c->slot[i].player) /* (reads only: untouched pages stay untouched) */
            c->slot[i].player = 0;
}

void api_facts_forget(struct api_app *app, int64_t player)
{
    lock_take(&app->facts->lock);
    forget(app->facts, player);
    lock_drop(&app->facts->lock);
}

void api_facts_live(struct api_app *app, bool live)
{
    lock_take(&app->facts->lock);
    forget(app->facts, 0);
    app->facts->live = live;
    lock_drop(&app->facts->lock);
}

bool api_facts_used(struct api_app *app)
{
    lock_take(&app->facts->lock);
    bool live = app->facts->live;
    lock_drop(&app->facts->lock);
    return live;
}
