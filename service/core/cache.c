/* cache.c - the match cache: which matches are in memory, and getting one there. A match is
 * loaded from its row in one read (the state snapshot that every move writes in its own
 * transaction, copied back), or, when the snapshot is missing or was written by a build
 * with another state layout, by replaying its events. The least recently used matches
 * beyond config.match_cache that nobody references are freed: the database holds all of
 * them. A match's log is never kept in memory; api_match_log_read reads it back.
 */
#include "core.h"
#include "metrics.h"
#include "log.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- The snapshot -------------------------------------------------------------------------- */

/* The snapshot's bytes: this header, struct rules_state as this build lays it out, then the
 * hand history, nseats int32 scores per hand. Bump SNAPSHOT_LAYOUT whenever the meaning of
 * the state's bytes changes without its size changing (a field renamed to another use, a
 * reordering); a snapshot with another layout or size is ignored and the events replayed. */
#define SNAPSHOT_LAYOUT 1u

struct snapshot_head {
    uint32_t layout;          /* SNAPSHOT_LAYOUT */
    uint32_t state_size;      /* sizeof(struct rules_state) */
    int64_t seq;              /* events replayed */
    uint32_t chance_events;
    uint32_t nhands;
};

void *api_match_snapshot(const struct tlog_replay *rp, int64_t seq, uint32_t chance_events,
                         size_t *len)
{
    size_t nseats = rp->state.nseats;
    size_t row = nseats * sizeof rp->hands[0][0];
    *len = sizeof(struct snapshot_head) + sizeof rp->state + rp->nhands * row;
    unsigned char *p = malloc(*len);
    if (!p)
        return NULL;
    struct snapshot_head h = {
        .layout = SNAPSHOT_LAYOUT,
        .state_size = sizeof rp->state,
        .seq = seq,
        .chance_events = chance_events,
        .nhands = (uint32_t)rp->nhands,
    };
    memcpy(p, &h, sizeof h);
    memcpy(p + sizeof h, &rp->state, sizeof rp->state);
    for (size_t i = 0; i < rp->nhands; i++)
        memcpy(p + sizeof h + sizeof rp->state + i * row, rp->hands[i], row);
    return p;
}

/* Copy a stored snapshot into `m` if it is one this build wrote for this match as the row
 * describes it (`seq` events of game `g` with `seats` seats). False: replay instead. */
static bool snapshot_restore(struct api_match *m, const struct store_match *row,
                             enum rules_game_id g)
{
    struct snapshot_head h;
    struct rules_state st;
    const unsigned char *p = row->state;
    if (!p || row->state_len < sizeof h + sizeof st)
        return false;
    memcpy(&h, p, sizeof h);
    memcpy(&st, p + sizeof h, sizeof st);
    size_t rowsize = (size_t)row->seats * sizeof m->replay.hands[0][0];
    if (h.layout != SNAPSHOT_LAYOUT || h.state_size != sizeof st || h.seq != row->seq ||
        st.game != (uint8_t)g || st.nseats != row->seats || row->seats > RULES_MAX_SEATS ||
        h.nhands != st.hands_done ||
        row->state_len != sizeof h + sizeof st + (size_t)h.nhands * rowsize)
        return false;
    struct tlog_replay rp = {.state = st, .nhands = h.nhands, .cap = h.nhands};
    if (h.nhands) {
        rp.hands = calloc(h.nhands, sizeof *rp.hands);
        if (!rp.hands)
            return false;
        for (size_t i = 0; i < h.nhands; i++)
            memcpy(rp.hands[i], p + sizeof h + sizeof st + i * rowsize, rowsize);
    }
    tlog_replay_finish(&m->replay);
    m->replay = rp;
    api_match_to_move_noted(m);
    m->seq = h.seq;
    m->chance_events = h.chance_events;
    return true;
}

/* ---- Replaying stored events --------------------------------------------------------------- */

static int cards_parse(const char *text, rules_card *out)
{
    int n = 0;
    while (*text && n < RULES_NCARDS) {
        const char *end = strchr(text, ' ');
        size_t len = end ? (size_t)(end - text) : strlen(text);
        if (!rules_card_parse(text, len, &out[n]))
            return -1;
        n++;
        text += len;
        while (*text == ' ')
            text++;
    }
    return n;
}

struct replay_ctx {
    int64_t match;
    struct tlog_replay *rp;      /* the state events are applied to, or NULL */
    uint32_t chance_events;
    struct tlog *log;            /* the log events are appended to, or NULL */
    int64_t n;                   /* events seen */
};

static bool replay_event(void *ctx, const struct store_event *ev, struct err *e)
{
    struct replay_ctx *c = ctx;
    if (ev->seq != c->n)
        return err_set(e, ERR_IO, "corrupt", "match %lld: event %lld out of order",
                       (long long)c->match, (long long)ev->seq);
    c->n++;
    if (ev->kind == STORE_MOVE) {
        struct rules_move mv;
        return (!c->log || tlog_append_move(c->log, ev->seat, ev->body, ev->automatic, e)) &&
               (!c->rp || (rules_move_parse(ev->body, strlen(ev->body), &mv, e) &&
                           tlog_replay_move(c->rp, ev->seat, &mv, e)));
    }
    rules_card cards[RULES_NCARDS];
    int n = cards_parse(ev->body, cards);
    if (n < 0)
        return err_set(e, ERR_IO, "corrupt", "match %lld: bad cards in event %lld",
                       (long long)c->match, (long long)ev->seq);
    c->chance_events++;
    enum tlog_kind kind = ev->kind == STORE_DEAL ? TLOG_DEAL : TLOG_SHUFFLE;
    return (!c->log || tlog_append_chance(c->log, kind, cards, n, e)) &&
           (!c->rp || tlog_replay_chance(c->rp, kind == TLOG_DEAL ? RULES_DUE_DEAL
                                                                  : RULES_DUE_SHUFFLE,
                                         cards, n, e));
}

/* Replay the stored events of `m` from `from` up to `seq` into `rp` (the state after `from`
 * events: initialised to the start of the match for 0). Call with read_lock held. */
static bool replay_stored(struct api_app *app, const struct api_match *m, int64_t from,
                          int64_t seq, struct tlog_replay *rp, uint32_t *chance_events,
                          struct err *e)
{
    assert(lock_held(&app->read_lock));
    struct replay_ctx c = {.match = m->id, .rp = rp, .n = from};
    if (!store_events_range(app->reader, m->id, from, seq, replay_event, &c, e))
        return false;
    if (c.n != seq)
        return err_set(e, ERR_IO, "corrupt", "match %lld: %lld events stored, not %lld",
                       (long long)m->id, (long long)c.n, (long long)seq);
    *chance_events = c.chance_events;
    return true;
}

#ifndef NDEBUG
/* Debug builds: the snapshot just restored is what the events replay to. */
static void snapshot_check(struct api_app *app, const struct api_match *m)
{
    struct tlog_replay rp = {0};
    uint32_t k = 0;
    struct err e;
    bool ok = rules_init(&rp.state, (enum rules_game_id)m->replay.state.game, &m->options,
                         &e) &&
              replay_stored(app, m, 0, m->seq, &rp, &k, &e);
    bool same = ok && k == m->chance_events && rp.nhands == m->replay.nhands &&
                !memcmp(&rp.state, &m->replay.state, sizeof rp.state);
    for (size_t i = 0; same && i < rp.nhands; i++)
        same = !memcmp(rp.hands[i], m->replay.hands[i],
                       (size_t)rp.state.nseats * sizeof rp.hands[i][0]);
    if (!same)
        log_msg(LOG_LEVEL_WARN, "cache",
                "match %lld: the state snapshot is not what its %lld events replay to (%s)",
                (long long)m->id, (long long)m->seq, ok ? "different" : e.msg);
    tlog_replay_finish(&rp);
    assert(same);
}
#endif

/* ---- Loading a match ----------------------------------------------------------------------- */

bool api_match_set_names(struct api_match *m, char *const *names, int n, struct err *e)
{
    size_t size = 0;
    for (int s = 0; s < n; s++) {
        if (!names[s])
            return err_set(e, ERR_IO, "corrupt", "match %lld: seat %d has no player",
                           (long long)m->id, s);
        size += strlen(names[s]) + 1;
    }
    char *block = malloc(size ? size : 1), *p = block;
    if (!block)
        return err_set(e, ERR_NOMEM, "nomem", "out of memory");
    for (int s = 0; s < n; s++) {
        size_t len = strlen(names[s]) + 1;
        memcpy(p, names[s], len);
        p += len;
    }
    free(m->names);
    m->names = block;
    return true;
}

const char *api_match_name(const struct api_match *m, int seat)
{
    const char *p = m->names;
    for (int s = 0; p && s < seat; s++)
        p += strlen(p) + 1;
    return p;
}

/* Fill `m` from its row: the snapshot if it is usable, else a replay of its events. Call
 * with read_lock held. */
static bool match_from_row(struct api_app *app, struct api_match *m, const struct store_match *row,
                           struct err *e)
{
    assert(lock_held(&app->read_lock));
    enum rules_game_id g;
    json_t *opts = json_loads(row->options, 0, NULL);
    bool ok = rules_game_lookup(row->game, &g) && tlog_options_parse(g, opts, &m->options, e) &&
              m->options.seats == row->seats;
    json_decref(opts);
    if (!ok)
        return err_set(e, ERR_IO, "corrupt", "match %lld: bad game or options",
                       (long long)row->id);
    memcpy(m->players, row->players, sizeof m->players);
    memcpy(m->seed, row->seed, sizeof m->seed);
    memcpy(m->commitment, row->commitment, sizeof m->commitment);
    m->created_by = row->created_by;
    m->created_at = row->created_at;
    m->finished_at = row->finished_at;
    m->rev = row->rev;
    m->league = row->league;
    m->invitation = row->invitation;
    m->accepted = row->accepted;
    m->invited_until = row->invited_until;
    m->clock = (struct api_clock){
        .move_seconds = row->move_seconds,
        .forfeit = row->forfeit,
        .reminder_seconds = row->reminder_seconds,
        .turn_started = row->turn_started,
        .reminded = row->reminded,
        .deadline = row->deadline,
        .wake_at = row->wake_at,
    };
    if (!api_match_set_names(m, row->names, row->seats, e))
        return false;
    if (snapshot_restore(m, row, g)) {
#ifndef NDEBUG
        snapshot_check(app, m);
#endif
        return true;
    }
    tlog_replay_finish(&m->replay);
    m->seq = row->seq;
    m->chance_events = 0;
    if (!rules_init(&m->replay.state, g, &m->options, e) ||
        !replay_stored(app, m, 0, row->seq, &m->replay, &m->chance_events, e))
        return false;
    api_match_to_move_noted(m);
    return true;
}

/* Load `m` (its id set) from the database. False with e: ERR_NOT_FOUND, the database's
 * error, or ERR_IO "corrupt_match". */
static bool match_load(struct api_app *app, struct api_match *m, struct err *e)
{
    struct store_match row;
    lock_take(&app->read_lock);
    bool found = store_match_get(app->reader, m->id, &row, e);
    bool ok = found && match_from_row(app, m, &row, e);
    lock_drop(&app->read_lock);
    if (ok)
        api_match_head_build(m);
    store_match_finish(&row);
    if (!found && e->code == ERR_NOT_FOUND)
        return err_set(e, ERR_NOT_FOUND, "not_found", "no such match");
    if (found && !ok) {
        char why[sizeof e->msg];
        memcpy(why, e->msg, sizeof why);
        return err_set(e, ERR_IO, "corrupt_match", "match %lld cannot be loaded: %s",
                       (long long)m->id, why);
    }
    return ok;
}

/* ---- Another process changed it ----------------------------------------------------------------
 * On a shared database (PostgreSQL, several processes) a copy in memory is used only while
 * its version is its row's: a find checks it, a change locks the row and checks it again
 * (store_match_lock), and the listener (shared.c) refreshes the matches it hears of. What a
 * refresh takes over is what another process may change: the state and seq, the clock, the
 * consent, the seed (a start); the players, game and league never change. */

bool api_stale(const struct err *e)
{
    return e->code == ERR_CONFLICT && e->tag && !strcmp(e->tag, "stale_match");
}

/* Reload `m` in place from its row (m->lock held, not busy). */
static bool match_reload(struct api_app *app, struct api_match *m, struct err *e)
{
    struct api_match *fresh = api_match_new();
    if (!fresh)
        return err_set(e, ERR_NOMEM, "nomem", "out of memory");
    fresh->id = m->id;
    bool ok = match_load(app, fresh, e);
    if (ok) {
        tlog_replay_finish(&m->replay);
        m->replay = fresh->replay;
        fresh->replay = (struct tlog_replay){0};
        api_match_to_move_noted(m);
        m->seq = fresh->seq;
        m->rev = fresh->rev;
        m->chance_events = fresh->chance_events;
        memcpy(m->seed, fresh->seed, sizeof m->seed);
        memcpy(m->commitment, fresh->commitment, sizeof m->commitment);
        m->finished_at = fresh->finished_at;
        m->clock = fresh->clock;
        m->invitation = fresh->invitation;
        m->accepted = fresh->accepted;
        m->invited_until = fresh->invited_until;
    }
    api_match_free(fresh);
    return ok;
}

bool api_match_refresh(struct api_app *app, struct api_match *m, bool *changed, struct err *e)
{
    assert(lock_held(&m->lock));
    assert(!m->busy);
    *changed = false;
    if (!app->shared)
        return true;
    int64_t rev;
    struct store *q = api_quick_store(app, e);
    bool ok = q && store_match_rev(q, m->id, &rev, e);
    if (!ok || rev == m->rev)
        return ok;
    return (*changed = match_reload(app, m, e));
}

/* A find on a shared database: `m` (referenced) brought up to its row, unless a move of
 * this process is on its way (that one checks the row itself), or the process is alone on
 * the database and checked it since it became so (nobody else changes it: app->alone). */
static bool match_fresh(struct api_app *app, struct api_match *m, struct err *e)
{
    bool changed = false;
    bool alone = atomic_load(&app->alone);
    uint64_t epoch = atomic_load(&app->alone_epoch); /* (read after alone: shared.c) */
    lock_take(&m->lock);
    bool ok = m->busy || (alone && m->checked == epoch) ||
              api_match_refresh(app, m, &changed, e);
    if (ok && alone && !m->busy)
        m->checked = epoch;
    lock_drop(&m->lock);
    if (changed)
        api_match_changed(app, m);
    return ok;
}

/* ---- The cache ----------------------------------------------------------------------------- */

struct api_match *api_match_new(void)
{
    struct api_match *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    lock_init(&m->lock, API_LOCK_MATCH, "match");
    pthread_cond_init(&m->idle, NULL);
    return m;
}

void api_match_draft(struct api_match *d, const struct api_match *m)
{
    assert(lock_held(&m->lock));
    memset(d, 0, sizeof *d);
    d->id = m->id;
    d->seq = m->seq;
    d->rev = m->rev;
    d->replay = m->replay;
    d->chance_events = m->chance_events;
    d->options = m->options;
    memcpy(d->players, m->players, sizeof d->players);
    d->names = m->names;
    d->head = m->head;
    d->head_len = m->head_len;
    memcpy(d->seed, m->seed, sizeof d->seed);
    memcpy(d->commitment, m->commitment, sizeof d->commitment);
    d->created_by = m->created_by;
    d->created_at = m->created_at;
    d->finished_at = m->finished_at;
    d->clock = m->clock;
    memcpy(d->watching, m->watching, sizeof d->watching);
    d->league = m->league;
    d->invitation = m->invitation;
    d->accepted = m->accepted;
    d->invited_until = m->invited_until;
}

size_t api_matches_in_memory(struct api_app *app)
{
    lock_take(&app->table_lock);
    size_t n = app->cache.count;
    lock_drop(&app->table_lock);
    return n;
}

void api_match_free(struct api_match *m)
{
    if (!m)
        return;
    tlog_replay_finish(&m->replay);
    free(m->names);
    free(m->head);
    lock_finish(&m->lock);
    pthread_cond_destroy(&m->idle);
    free(m);
}

/* Ids are handed out in order, so their low bits spread them over the buckets. */
static struct api_match **bucket(const struct api_match_cache *c, int64_t id)
{
    return &c->buckets[(uint64_t)id & (c->nbuckets - 1)];
}

static struct api_match *cache_lookup(const struct api_match_cache *c, int64_t id)
{
    if (!c->nbuckets)
        return NULL;
    struct api_match *m = *bucket(c, id);
    while (m && m->id != id)
        m = m->next_in_bucket;
    return m;
}

static void order_unlink(struct api_match_cache *c, struct api_match *m)
{
    if (m->newer)
        m->newer->older = m->older;
    else
        c->newest = m->older;
    if (m->older)
        m->older->newer = m->newer;
    else
        c->oldest = m->newer;
    m->newer = m->older = NULL;
}

static void order_push(struct api_match_cache *c, struct api_match *m)
{
    m->older = c->newest;
    m->newer = NULL;
    if (c->newest)
        c->newest->newer = m;
    else
        c->oldest = m;
    c->newest = m;
}

/* Add `m` (not in the cache) as the most recently used. False without memory for the
 * first buckets; a table that cannot grow keeps its longer chains. */
static bool cache_add(struct api_match_cache *c, struct api_match *m)
{
    if (c->count >= c->nbuckets) {
        size_t n = c->nbuckets ? c->nbuckets * 2 : 64;
        struct api_match **grown = calloc(n, sizeof *grown);
        if (!grown && !c->nbuckets)
            return false;
        if (grown) {
            struct api_match_cache bigger = {.buckets = grown, .nbuckets = n};
            for (size_t i = 0; i < c->nbuckets; i++)
                for (struct api_match *x = c->buckets[i], *next; x; x = next) {
                    next = x->next_in_bucket;
                    x->next_in_bucket = *bucket(&bigger, x->id);
                    *bucket(&bigger, x->id) = x;
                }
            free(c->buckets);
            c->buckets = grown;
            c->nbuckets = n;
        }
    }
    m->next_in_bucket = *bucket(c, m->id);
    *bucket(c, m->id) = m;
    order_push(c, m);
    c->count++;
    return true;
}

static void cache_remove(struct api_match_cache *c, struct api_match *m)
{
    struct api_match **p = bucket(c, m->id);
    while (*p != m)
        p = &(*p)->next_in_bucket;
    *p = m->next_in_bucket;
    m->next_in_bucket = NULL;
    order_unlink(c, m);
    c->count--;
}

/* Take the least recently used matches that nobody references out of the cache while it
 * holds more than `max`; returns them chained by next_in_bucket, to be freed outside the
 * lock. Nobody holds the lock of a match without a reference to it. */
static struct api_match *cache_trim(struct api_match_cache *c, size_t max)
{
    struct api_match *out = NULL;
    for (struct api_match *m = c->oldest, *newer; m && c->count > max; m = newer) {
        newer = m->newer;
        if (m->refs || atomic_load(&m->pins))
            continue;
        cache_remove(c, m);
        m->next_in_bucket = out;
        out = m;
    }
    return out;
}

/* A match from memory (fresh: brought up to its row on a shared database) or loaded. */
static struct api_match *find(struct api_app *app, int64_t id, bool fresh, struct err *e)
{
    if (id <= 0) {
        err_set(e, ERR_NOT_FOUND, "not_found", "no such match");
        return NULL;
    }
    for (;;) {
        lock_take(&app->table_lock);
        struct api_match *m = cache_lookup(&app->cache, id);
        if (m) {
            m->refs++;
            order_unlink(&app->cache, m);
            order_push(&app->cache, m);
            while (m->loading) /* another thread is loading it: that one load */
                lock_wait(&app->loaded, &app->table_lock);
            bool ready = m->ready;
            lock_drop(&app->table_lock);
            if (ready) {
                metrics_cache(true);
                if (fresh && app->shared && !match_fresh(app, m, e)) {
                    api_match_release(app, m);
                    return NULL;
                }
                return m;
            }
            /* That load failed (and took it out of the cache): try for ourselves. */
            api_match_release(app, m);
            continue;
        }
        /* Not in memory: put it in, loading, so that the other threads asking for it wait
         * for this one load (and no older copy can ever be put in after a newer one). Until
         * it is ready nobody else touches it, so it is loaded without its lock: the cache's
         * lock is never held while a match's lock is taken (core.h "Locks"). */
        m = api_match_new();
        if (m) {
            m->id = id;
            m->refs = 1;
            m->loading = true;
        }
        if (!m || !cache_add(&app->cache, m)) {
            lock_drop(&app->table_lock);
            api_match_free(m);
            err_set(e, ERR_NOMEM, "nomem", "out of memory");
            return NULL;
        }
        lock_drop(&app->table_lock);
        metrics_cache(false);
        bool ok = match_load(app, m, e);
        lock_take(&app->table_lock);
        m->loading = false;
        if (ok)
            m->ready = true;
        else
            cache_remove(&app->cache, m);
        pthread_cond_broadcast(&app->loaded);
        lock_drop(&app->table_lock);
        if (ok)
            return m;
        api_match_release(app, m);
        return NULL;
    }
}

struct api_match *api_match_find(struct api_app *app, int64_t id, struct err *e)
{
    return find(app, id, true, e);
}

struct api_match *api_match_find_held(struct api_app *app, int64_t id, struct err *e)
{
    return find(app, id, false, e);
}

struct api_match *api_match_insert(struct api_app *app, struct api_match *m, struct err *e)
{
    lock_take(&app->table_lock);
    if (cache_lookup(&app->cache, m->id)) {
        lock_drop(&app->table_lock);
        /* A reader loaded it from the database meanwhile: that copy is the one. */
        int64_t id = m->id;
        api_match_free(m);
        return api_match_find(app, id, e);
    }
    m->refs = 1;
    m->ready = true;
    bool added = cache_add(&app->cache, m);
    lock_drop(&app->table_lock);
    if (!added) {
        api_match_free(m);
        err_set(e, ERR_NOMEM, "nomem", "out of memory");
        return NULL;
    }
    return m;
}

void api_match_release(struct api_app *app, struct api_match *m)
{
    if (!m)
        return;
    assert(!lock_held(&m->lock)); /* (it may be freed here) */
    lock_take(&app->table_lock);
    assert(m->refs > 0);
    /* A match whose load failed is out of the cache: its last holder frees it. */
    bool orphan = --m->refs == 0 && !m->ready;
    struct api_match *evicted = cache_trim(&app->cache, (size_t)app->config.match_cache);
    lock_drop(&app->table_lock);
    if (orphan)
        api_match_free(m);
    while (evicted) {
        struct api_match *next = evicted->next_in_bucket;
        api_match_free(evicted);
        evicted = next;
    }
}

void api_match_pin(struct api_match *m)
{
    atomic_fetch_add(&m->pins, 1);
}

void api_match_unpin(struct api_match *m)
{
    int was = atomic_fetch_sub(&m->pins, 1);
    assert(was > 0);
    (void)was;
}

void api_matches_free_all(struct api_app *app)
{
    for (struct api_match *m = app->cache.newest, *older; m; m = older) {
        older = m->older;
        api_match_free(m);
    }
    free(app->cache.buckets);
    memset(&app->cache, 0, sizeof app->cache);
}

/* A match in memory, referenced, or NULL (never loaded). */
static struct api_match *match_cached(struct api_app *app, int64_t id)
{
    lock_take(&app->table_lock);
    struct api_match *m = cache_lookup(&app->cache, id);
    if (m && (!m->ready || m->loading))
        m = NULL;
    if (m)
        m->refs++;
    lock_drop(&app->table_lock);
    return m;
}

void api_match_heard(struct api_app *app, int64_t id, int64_t rev, bool streams_only)
{
    struct err e;
    struct api_match *m = match_cached(app, id);
    if (!m && atomic_load(&app->player_streams) > 0 && rev >= 0) {
        /* A match another process started or changed may be one of a player's here, whose
         * stream finds it at its wake-up (http.c "A player's stream"): loaded, it is one. */
        if ((m = api_match_find_held(app, id, &e)))
            api_match_changed(app, m);
        api_match_release(app, m);
        return;
    }
    if (!m)
        return;
    bool changed = false, streams = atomic_load(&m->pins) > 0; /* (a player's stream's) */
    lock_take(&m->lock);
    for (int v = 0; v <= RULES_MAX_SEATS; v++)
        streams = streams || m->stream_vis[v] > 0;
    /* A match busy with a move of this process: that move checks the row, and reloads. */
    if (!m->busy && m->rev != rev && (streams || !streams_only) &&
        !api_match_refresh(app, m, &changed, &e))
        log_msg(LOG_LEVEL_ERROR, "listen", "match %lld: %s", (long long)id, e.msg);
    lock_drop(&m->lock);
    if (changed)
        api_match_changed(app, m);
    api_match_release(app, m);
}

void api_matches_catch_up(struct api_app *app)
{
    lock_take(&app->table_lock);
    size_t n = 0, max = app->cache.count;
    int64_t *ids = malloc((max ? max : 1) * sizeof *ids);
    for (struct api_match *m = app->cache.newest; ids && m && n < max; m = m->older)
        ids[n++] = m->id;
    lock_drop(&app->table_lock);
    for (size_t i = 0; ids && i < n && !api_stopping(app); i++)
        api_match_heard(app, ids[i], -1, true);
    free(ids);
}

bool api_match_replay_at(struct api_app *app, const struct api_match *m, int64_t seq,
                         struct tlog_replay *rp, struct err *e)
{
    uint32_t k = 0;
    lock_take(&app->read_lock);
    bool ok = rules_init(&rp->state, (enum rules_game_id)m->replay.state.game, &m->options, e) &&
              replay_stored(app, m, 0, seq, rp, &k, e);
    lock_drop(&app->read_lock);
    return ok;
}

bool api_match_replay_from(struct api_app *app, const struct api_match *m, int64_t from,
                           int64_t seq, struct tlog_replay *rp, struct err *e)
{
    uint32_t k = 0;
    lock_take(&app->read_lock);
    bool ok = replay_stored(app, m, from, seq, rp, &k, e);
    lock_drop(&app->read_lock);
    return ok;
}

/* ---- A match's log, from the database ------------------------------------------------------ */

struct tlog *api_match_log_read(struct api_app *app, const struct api_match *m, int64_t until,
                                struct err *e)
{
    assert(lock_held(&m->lock));
    struct tlog *log = tlog_create((enum rules_game_id)m->replay.state.game, &m->options, e);
    if (!log)
        return NULL;
    /* The metadata in the order the log has always carried it. */
    char seed_hex[TLOG_HEX_BYTES];
    tlog_hex(m->seed, sizeof m->seed, seed_hex);
    json_t *commitment = json_string(m->commitment), *seed = json_string(seed_hex);
    json_t *names = json_array();
    for (int s = 0; s < m->replay.state.nseats; s++)
        json_array_append_new(names, json_string(api_match_name(m, s)));
    tlog_set_meta(log, "seed_commitment", commitment);
    tlog_set_meta(log, "seed", seed);
    tlog_set_meta(log, "players", names);
    json_decref(commitment);
    json_decref(seed);
    json_decref(names);

    struct replay_ctx c = {.match = m->id, .log = log};
    lock_take(&app->read_lock);
    bool ok = store_events_range(app->reader, m->id, 0, until, replay_event, &c, e);
    lock_drop(&app->read_lock);
    if (ok && c.n != until)
        ok = err_set(e, ERR_IO, "corrupt", "match %lld: %lld events stored, not %lld",
                     (long long)m->id, (long long)c.n, (long long)until);
    if (!ok) {
        tlog_destroy(log);
        return NULL;
    }
    return log;
}
