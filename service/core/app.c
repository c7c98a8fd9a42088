/* app.c - the application object (database, locks, match table), bearer-token
 * authentication, the service's time, and readiness.
 */
#include "core.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* OpenSSL 3's one-shot SHA256() looks the algorithm up and builds a context on every call
 * (7,000 instructions for a 64-byte token): the algorithm is fetched once, and each thread
 * keeps a context (freed when the thread ends). */
static EVP_MD *sha256_md;
static pthread_key_t sha256_ctx_key;

static void free_ctx(void *ctx)
{
    EVP_MD_CTX_free(ctx);
}

static void sha256_init(void)
{
    sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL);
    pthread_key_create(&sha256_ctx_key, free_ctx);
}

void api_sha256(const void *data, size_t len, uint8_t out[API_SHA256_BYTES])
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, sha256_init);
    EVP_MD_CTX *ctx = pthread_getspecific(sha256_ctx_key);
    if (!ctx && (ctx = EVP_MD_CTX_new()) != NULL)
        pthread_setspecific(sha256_ctx_key, ctx);
    unsigned int n = API_SHA256_BYTES;
    if (!ctx || !sha256_md || !EVP_DigestInit_ex2(ctx, sha256_md, NULL) ||
        !EVP_DigestUpdate(ctx, data, len) || !EVP_DigestFinal_ex(ctx, out, &n))
        SHA256(data, len, out); /* (no context: the slow way) */
}

int64_t api_now_ms(struct api_app *app)
{
    lock_take(&app->clock_lock);
    int64_t offset = app->clock_offset_ms;
    lock_drop(&app->clock_lock);
    return wall_ms() + offset;
}

void api_wake(struct api_app *app)
{
    lock_take(&app->wake_lock);
    pthread_cond_broadcast(&app->wake);
    lock_drop(&app->wake_lock);
}

/* The wake-ups a thread holds (api_wakes_hold): each another thread's signal, given at
 * api_wakes_release in the order they came, one of each (fn, cls). On one core a thread
 * woken preempts its waker at once: woken a match at a time, the streams' writer wrote a
 * batch's pushes one match at a time, and the HTTP thread sent its answers a few at a
 * time, each switch of threads and each write a cost of its own. Past API_WAKES_HELD they
 * are given at once. */
static _Thread_local struct {
    bool holding;
    int n;
    struct {
        void (*fn)(void *cls);
        void *cls;
    } held[API_WAKES_HELD];
} wakes;

void api_wakes_hold(void)
{
    wakes.holding = true;
}

void api_wake_soon(void (*fn)(void *cls), void *cls)
{
    if (!wakes.holding || wakes.n == API_WAKES_HELD) {
        fn(cls);
        return;
    }
    for (int i = 0; i < wakes.n; i++)
        if (wakes.held[i].fn == fn && wakes.held[i].cls == cls)
            return;
    wakes.held[wakes.n].fn = fn;
    wakes.held[wakes.n].cls = cls;
    wakes.n++;
}

void api_wakes_release(void)
{
    wakes.holding = false;
    for (int i = 0; i < wakes.n; i++)
        wakes.held[i].fn(wakes.held[i].cls);
    wakes.n = 0;
}

/* Wake the delivery workers and the scheduler (the service's time moved, or it stops). */
static void wake_all(struct api_app *app)
{
    lock_take(&app->wake_lock);
    pthread_cond_broadcast(&app->wake);
    pthread_cond_broadcast(&app->tick);
    lock_drop(&app->wake_lock);
}

const struct config *api_config(const struct api_app *app)
{
    return &app->config;
}

bool api_stopping(const struct api_app *app)
{
    return atomic_load(&app->stopping);
}

void api_stop(struct api_app *app)
{
    atomic_store(&app->stopping, true);
}

bool api_is_operator(const struct api_app *app, const uint8_t hash[API_SHA256_BYTES])
{
    return app->has_operator && CRYPTO_memcmp(hash, app->operator_hash, API_SHA256_BYTES) == 0;
}

void api_on_match_changed(struct api_app *app, bool (*fn)(void *cls, struct api_match *m),
                          void (*kick)(void *cls), void *cls)
{
    lock_take(&app->wake_lock);
    app->match_changed = fn;
    app->match_kick = kick;
    app->match_changed_cls = cls;
    lock_drop(&app->wake_lock);
}

void api_commit_figures(struct api_app *app, struct store_commit_figures *out)
{
    store_committer_figures(app->committer, out);
}

void api_player_streams_add(struct api_app *app, int delta)
{
    atomic_fetch_add(&app->player_streams, delta);
}

void api_on_token_changed(struct api_app *app, void (*fn)(void *cls, int64_t player), void *cls)
{
    lock_take(&app->wake_lock);
    app->token_changed = fn;
    app->token_changed_cls = cls;
    lock_drop(&app->wake_lock);
}

/* The streams' writer kicked, if the HTTP side still serves: held (api_wake_soon), the kick
 * may come after it stopped and freed what the writer was, which app outlives. */
static void match_kick(void *cls)
{
    struct api_app *app = cls;
    lock_take(&app->wake_lock);
    if (app->match_kick)
        app->match_kick(app->match_changed_cls);
    lock_drop(&app->wake_lock);
}

void api_match_changed(struct api_app *app, struct api_match *m)
{
    lock_take(&app->wake_lock);
    bool kick = app->match_changed && app->match_changed(app->match_changed_cls, m);
    lock_drop(&app->wake_lock);
    if (kick)
        api_wake_soon(match_kick, app);
}

/* With test_clock, the offset that tests moved the service's time by is kept in the
 * database, so that a restart goes on at the same time (a deadline due before it is due
 * after it, once). */
static bool clock_offset_load(struct api_app *app, struct err *e)
{
    if (!app->config.test_clock)
        return true;
    int64_t offset = 0;
    size_t len = 0;
    struct err ge;
    if (!store_setting_get(app->store, "test_clock_offset_ms", &offset, sizeof offset, &len, &ge)) {
        if (ge.code != ERR_NOT_FOUND)
            return err_set(e, ge.code, ge.tag, "%s", ge.msg);
        offset = 0;
    }
    app->clock_offset_ms = len == sizeof offset ? offset : 0;
    return true;
}

bool api_clock_advance(struct api_app *app, int64_t seconds, struct err *e)
{
    lock_take(&app->db_lock);
    lock_take(&app->clock_lock);
    int64_t offset = app->clock_offset_ms + seconds * 1000;
    bool ok = store_setting_put(app->store, "test_clock_offset_ms", &offset, sizeof offset, e);
    if (ok)
        app->clock_offset_ms = offset;
    lock_drop(&app->clock_lock);
    lock_drop(&app->db_lock);
    if (ok)
        wake_all(app);
    return ok;
}

struct api_app *api_app_create(const struct config *config, struct err *e)
{
    struct api_app *app = calloc(1, sizeof *app);
    if (!app) {
        err_set(e, ERR_NOMEM, "nomem", "out of memory");
        return NULL;
    }
    app->config = *config;
    lock_init(&app->db_lock, API_LOCK_DB, "db_lock");
    lock_init(&app->read_lock, API_LOCK_READ, "read_lock");
    lock_init(&app->table_lock, API_LOCK_TABLE, "table_lock");
    pthread_cond_init(&app->loaded, NULL);
    lock_init(&app->tokens_lock, API_LOCK_TOKENS, "tokens_lock");
    lock_init(&app->clock_lock, API_LOCK_CLOCK, "clock_lock");
    lock_init(&app->vacation_lock, API_LOCK_VACATION, "vacation_lock");
    lock_init(&app->wake_lock, API_LOCK_WAKE, "wake_lock");
    app->tickets = api_tickets_create();
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&app->wake, &attr);
    pthread_cond_init(&app->tick, &attr);
    pthread_condattr_destroy(&attr);
    if (config->operator_token[0]) {
        api_sha256(config->operator_token, strlen(config->operator_token), app->operator_hash);
        app->has_operator = true;
    }
    app->store = store_open_durable(config->db,
                                    config->durable_power ? STORE_DURABLE_POWER
                                                          : STORE_DURABLE_CRASH, e);
    uint8_t id_part[TLOG_SEED_BYTES]; /* 8 of them name this database in Message-IDs */
    if (!app->store || (!app->tickets && !err_set(e, ERR_NOMEM, "nomem", "out of memory")) ||
        !tlog_seed_random(app->mail_key, e) ||
        !store_setting_init(app->store, "mail_key", app->mail_key, sizeof app->mail_key, e) ||
        !tlog_seed_random(id_part, e) ||
        !store_setting_init(app->store, "message_id_part", id_part, 8, e) ||
        !(app->reader = store_open(config->db, e)) || !api_vacations_load(app, e) ||
        !(app->states = api_states_create(e)) || !(app->facts = api_facts_create(e)) ||
        !clock_offset_load(app, e) || !api_committer_start(app, e)) {
        api_app_destroy(app);
        return NULL;
    }
    tlog_hex(id_part, 8, app->message_id_part);
    app->shared = store_shared(app->store);
    /* (shared: the players' facts are used once the listener hears the others' changes) */
    api_facts_live(app, !app->shared);
    const char *at = strchr(config->smtp.from, '@');
    snprintf(app->mail_domain, sizeof app->mail_domain, "%s",
             config->mail_domain[0] ? config->mail_domain : at ? at + 1 : "localhost");
    return app;
}

int64_t api_beat_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec;
}

bool core_ready(struct api_app *app, char *why, size_t size)
{
    size_t n = 0;
    struct err e;
    why[0] = '\0';
    if (app->stopping)
        n += (size_t)snprintf(why + n, size - n, "the service is stopping; ");
    if (!store_probe(app->config.db, &e))
        n += (size_t)snprintf(why + n, size - n, "database: %s; ", e.msg);
    /* A worker's longest turn: a delivery that runs into its timeout; the scheduler's: a
     * second's nap and the clocks of the matches due. */
    int64_t now = api_beat_now();
    int64_t delivery = (app->config.smtp.timeout_ms > app->config.webhooks.total_timeout_ms
                            ? app->config.smtp.timeout_ms
                            : app->config.webhooks.total_timeout_ms) / 1000;
    for (int c = 0; c < 2 && n < size; c++)
        if (!app->threads_started || now - atomic_load(&app->beat_worker[c]) > delivery + 60)
            n += (size_t)snprintf(why + n, size - n, "delivery worker %d is not running; ", c);
    if (n < size && (!app->threads_started || now - atomic_load(&app->beat_scheduler) > 60))
        n += (size_t)snprintf(why + n, size - n, "the scheduler is not running; ");
    if (n == 0)
        return true;
    why[n < size ? n - 2 : size - 1] = '\0';
    return false;
}

bool api_app_start_threads(struct api_app *app, struct err *e)
{
    for (int c = 0; c < 2; c++)
        atomic_store(&app->beat_worker[c], api_beat_now());
    atomic_store(&app->beat_scheduler, api_beat_now());
    lock_take(&app->db_lock); /* (the claims of a process that died: SQLite's alone) */
    bool reset = store_outbox_claims_reset(app->store, e);
    lock_drop(&app->db_lock);
    if (!reset)
        return false;
    for (int c = 0; c < 2; c++) {
        app->worker_args[c] = (struct api_worker){app, c};
        if (pthread_create(&app->workers[c], NULL, api_outbox_worker, &app->worker_args[c]) != 0)
            return err_set(e, ERR_IO, "thread", "cannot start a delivery worker");
    }
    if (pthread_create(&app->scheduler, NULL, api_scheduler, app) != 0)
        return err_set(e, ERR_IO, "thread", "cannot start the scheduler");
    app->threads_started = true;
    return api_listener_start(app, e);
}

void api_app_destroy(struct api_app *app)
{
    if (!app)
        return;
    if (app->threads_started) {
        app->stopping = true;
        wake_all(app);
        for (int c = 0; c < 2; c++)
            pthread_join(app->workers[c], NULL);
        pthread_join(app->scheduler, NULL);
    }
    api_listener_stop(app);
    api_committer_stop(app); /* after everything that commits moves */
    api_matches_free_all(app);
    store_close(app->reader);
    store_close(app->store);
    lock_finish(&app->db_lock);
    lock_finish(&app->read_lock);
    lock_finish(&app->table_lock);
    pthread_cond_destroy(&app->loaded);
    lock_finish(&app->tokens_lock);
    lock_finish(&app->clock_lock);
    lock_finish(&app->vacation_lock);
    api_vacations_free(app);
    api_states_destroy(app->states);
    api_facts_destroy(app->facts);
    lock_finish(&app->wake_lock);
    pthread_cond_destroy(&app->wake);
    pthread_cond_destroy(&app->tick);
    api_tickets_destroy(app->tickets);
    free(app);
}

/* The token cache: which player a token hash belongs to, so that a request does not wait
 * for the database lock to learn who it is. Two slots per value of the hash's first bytes
 * (a few hundred players in 1,024 plain slots would collide often); a collision with both
 * taken replaces the second. A token changes only by a rotation or a revocation,
 * which writes the database first and then forgets the player's entries and bumps the
 * epoch: a lookup that read the old hash from the database before that write does not put
 * it back (it began in an older epoch), so the old token works for no request after. */
/* The two slots a hash may sit in (a pair: two tokens whose first bytes meet both fit). */
static struct api_token_entry *token_slots(struct api_app *app, const uint8_t *hash)
{
    uint32_t i;
    memcpy(&i, hash, sizeof i);
    return &app->tokens[(i % API_TOKEN_CACHE) & ~1u];
}

static int64_t token_cache_get(struct api_app *app, const uint8_t hash[API_SHA256_BYTES], uint64_t *epoch)
{
    struct api_token_entry *t = token_slots(app, hash);
    lock_take(&app->tokens_lock);
    int64_t player = 0;
    for (int k = 0; k < 2 && !player; k++)
        if (t[k].player && !memcmp(t[k].hash, hash, API_SHA256_BYTES))
            player = t[k].player;
    *epoch = app->tokens_epoch;
    lock_drop(&app->tokens_lock);
    return player;
}

static void token_cache_put(struct api_app *app, const uint8_t hash[API_SHA256_BYTES], int64_t player,
                            uint64_t epoch)
{
    struct api_token_entry *t = token_slots(app, hash);
    lock_take(&app->tokens_lock);
    if (epoch == app->tokens_epoch) {
        /* (the empty slot of the pair, else the second: the first keeps the older) */
        struct api_token_entry *to = !t[0].player ? &t[0] : &t[1];
        memcpy(to->hash, hash, API_SHA256_BYTES);
        to->player = player;
    }
    lock_drop(&app->tokens_lock);
}

void api_tokens_forget_all(struct api_app *app)
{
    lock_take(&app->tokens_lock);
    app->tokens_epoch++;
    memset(app->tokens, 0, sizeof app->tokens);
    lock_drop(&app->tokens_lock);
}

void api_tokens_forget(struct api_app *app, int64_t player)
{
    lock_take(&app->tokens_lock);
    app->tokens_epoch++;
    for (int i = 0; i < API_TOKEN_CACHE; i++)
        if (app->tokens[i].player == player)
            memset(&app->tokens[i], 0, sizeof app->tokens[i]);
    lock_drop(&app->tokens_lock);
    lock_take(&app->wake_lock);
    if (app->token_changed)
        app->token_changed(app->token_changed_cls, player);
    lock_drop(&app->wake_lock);
}

/* What follows the word "Bearer " (in any case) of an Authorization header, spaces skipped:
 * the token, or "" for none; NULL without the word. */
static const char *after_bearer(const char *authorization)
{
    static const char word[] = "Bearer ";
    if (!authorization || strncasecmp(authorization, word, sizeof word - 1) != 0)
        return NULL;
    const char *token = authorization + sizeof word - 1;
    while (*token == ' ')
        token++;
    return token;
}

bool api_bearer_hash(const char *authorization, uint8_t hash[API_SHA256_BYTES])
{
    const char *token = after_bearer(authorization);
    if (!token || !*token)
        return false;
    api_sha256(token, strlen(token), hash);
    return true;
}

bool api_authenticate(struct api_app *app, const char *authorization,
                      const uint8_t *token_hash, struct api_caller *c, struct err *e)
{
    memset(c, 0, sizeof *c);
    if (!authorization)
        return true;
    const char *token = after_bearer(authorization);
    if (!token)
        return err_set(e, ERR_UNAUTHORIZED, "unauthorized", "use Authorization: Bearer <token>");
    if (!*token)
        return err_set(e, ERR_UNAUTHORIZED, "unauthorized", "the bearer token is empty");
    uint8_t own[API_SHA256_BYTES];
    const uint8_t *hash = token_hash;
    if (!hash) {
        api_sha256(token, strlen(token), own);
        hash = own;
    }
    if (api_is_operator(app, hash)) {
        c->authenticated = c->operator = true;
        return true;
    }
    /* On a shared database another process may rotate or revoke the token at any moment:
     * it is looked up every time (docs/scaling.md "What each process keeps"), unless this
     * process is alone on it. */
    uint64_t epoch = 0;
    bool cached = !app->shared || atomic_load(&app->alone);
    c->player = cached ? token_cache_get(app, hash, &epoch) : 0;
    if (!c->player) {
        struct store_player p = {0};
        bool found;
        if (app->shared) { /* every request comes here: on this thread's own connection */
            struct store *q = api_quick_store(app, e);
            found = q && store_player_by_token(q, hash, &p, e);
        } else {
            lock_take(&app->db_lock);
            found = store_player_by_token(app->store, hash, &p, e);
            lock_drop(&app->db_lock);
        }
        if (!found) {
            if (e->code == ERR_NOT_FOUND)
                return err_set(e, ERR_UNAUTHORIZED, "unauthorized", "unknown token");
            return false;
        }
        c->player = p.id;
        store_player_finish(&p);
        if (cached) /* (unless the epoch moved meanwhile: forget_all) */
            token_cache_put(app, hash, c->player, epoch);
    }
    c->authenticated = true;
    return true;
}
