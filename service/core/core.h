/* core.h - the inside of cardpostd: the application object shared by every request, the
 * match cache (the replayed state of recently used matches in memory, one lock per match;
 * their logs stay in SQLite), and the handlers behind the REST API of spec/service.md.
 * http.c turns HTTP into calls of these.
 */
#ifndef CARDPOST_CORE_H
#define CARDPOST_CORE_H

#include <jansson.h>
#include <pthread.h>
#include <assert.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "err.h"
#include "lock.h"
#include "mail.h"
#include "store.h"
#include "turnlog.h"

#define API_MAX_BODY (64 * 1024)

/* A SHA-256 digest (tokens, request hashes, codes are kept and compared as these): the
 * store keeps them as they are. */
#define API_SHA256_BYTES 32
static_assert(API_SHA256_BYTES == STORE_HASH_BYTES, "the store keeps a whole SHA-256");

/* A bearer token: "cpt_" and the hex of TLOG_SEED_BYTES random bytes, and its NUL. */
#define API_TOKEN_CHARS (4 + 2 * TLOG_SEED_BYTES + 1)

/* A match's seats are copied between the rules engine and the store: one bound for both. */
static_assert(STORE_MAX_SEATS == RULES_MAX_SEATS, "the store keeps every seat the rules allow");
/* The seats reminded in a turn are the bits of api_clock.reminded (and of the migration's
 * 1023, "every seat"). */
static_assert(RULES_MAX_SEATS <= 10, "api_clock.reminded and migration 0007 hold 10 seats");

/* The match's clock (docs/api.md "Deadlines"): time per move, what happens when it runs
 * out, and a reminder before. move_seconds 0: no clock. A seat's own deadline is
 * turn_started + move_seconds + every second its player's vacations paused it
 * (api_seat_deadline, clock.c). */
struct api_clock {
    int64_t move_seconds;
    bool forfeit;              /* else auto: the first legal move is played for the seat */
    int64_t reminder_seconds;  /* 0: no reminder */
    int64_t turn_started;      /* Unix seconds: when the seats to move began waiting */
    uint32_t reminded;         /* the seats reminded this turn (bit s: seat s) */
    int64_t deadline;          /* Unix seconds: the earliest deadline of the seats to move;
                                * 0 none */
    int64_t wake_at;           /* Unix seconds: when the scheduler next has work here (a
                                * deadline, a reminder, a seat back from vacation); 0 none */
};

/* The players who ever took a vacation, each with the end of their latest (clock.c): a
 * seat whose player is not among them, or whose latest vacation ended before its turn,
 * has the plain deadline, read without the database. An open-addressing table; guarded by
 * app->vacation_lock, a leaf lock. */
struct api_vacation_table {
    int64_t *player;           /* 0: empty slot */
    int64_t *until;
    size_t cap, count;
};

struct stream_sub;

/* One commit's messages for the event streams (matches.c "The event stream"): the SSE text
 * of the events after seq `after` up to `last` and the state after them, rendered once per
 * visibility (the seats, then the spectators) that had a stream open at the commit, and
 * shared by those streams. A visibility's text is rendered by the first of its streams to
 * send it (on an HTTP thread, not the committer's), or at the match's next commit if none
 * did by then; a text once there never changes. Freed with its last reference. Its fields
 * are under the match's lock until the entry leaves the match's list. */
#define API_FEED_KEEP 2   /* commits kept whole per match with streams */
/* Older commits are kept too, up to this many, as their events alone: the streams of the
 * seats not to move, and the spectators', are woken at most every few tens of milliseconds
 * (http.c), with the events of the commits since and the newest state only. Only while a
 * match's own stream is open: players' streams are sent states alone (api_feed.events),
 * and for them the API_FEED_KEEP newest are all that is kept. */
#define API_FEED_KEEP_LATER 16
/* With spectators open, up to this many (a spectator's wake-up may wait behind a send to
 * 1,000 others). */
#define API_FEED_KEEP_EVENTS 256
struct api_feed {
    atomic_int refs;                  /* the match's, and each stream's sending it */
    int64_t after, last;
    char *text[RULES_MAX_SEATS + 1];  /* NULL: not rendered (yet, if `want`) */
    size_t len[RULES_MAX_SEATS + 1];
    size_t events_len[RULES_MAX_SEATS + 1]; /* the text's event messages, before its state */
    bool events;                      /* its texts begin with the commit's event messages: a
                                       * stream sent them (a match's own) was open at the
                                       * commit; else they are states alone, all a player's
                                       * stream is sent */
    bool trimmed;                     /* older than API_FEED_KEEP: the spectators' events left */
    bool want[RULES_MAX_SEATS + 1];   /* a stream of that visibility was open at the commit */
    void *source;                     /* what the texts not yet rendered are made from */
    struct api_feed *older;           /* the match's list, newest first */
};

/* One match in memory: what the move path needs (the replayed state after its `seq`
 * events, who sits where, the seed, the clock); the events themselves are read from the
 * database when a log, a replay or an event stream needs them. `lock` orders everything that
 * touches the match; api_match_changed wakes its event streams after each new event. The
 * cache's fields (`refs`, `ready`, `loading`, the links) are guarded by app->table_lock. */
struct api_match {
    int64_t id;
    struct lock lock;
    int refs;                             /* api_match_find's references not yet released */
    atomic_int pins;                      /* api_match_pin's (no lock) */
    uint64_t checked;                     /* app->alone_epoch when last checked against its
                                           * row (a shared database; lock) */
    bool ready;                           /* loaded (else a thread is loading it, or failed) */
    bool loading;                         /* a thread is loading it (app->loaded signals the
                                           * end) */
    struct api_match *next_in_bucket;
    struct api_match *newer, *older;      /* the cache's use order */
    int64_t seq;                          /* events in the log */
    int64_t rev;                          /* the row's version this copy is (store_match.rev:
                                           * a shared database's processes compare it) */
    struct tlog_replay replay;
    uint32_t chance_events;               /* k of the next chance event */
    struct rules_options options;
    int64_t players[RULES_MAX_SEATS];
    char *names;                          /* the players' names in seat order, each ending
                                           * in a NUL (owned) */
    char *head;                           /* the members every view of it opens with (id,
                                           * game, options, players), rendered once
                                           * (api_match_head_build; owned), or NULL */
    size_t head_len;
    uint8_t seed[TLOG_SEED_BYTES];
    char commitment[TLOG_HEX_BYTES];
    int64_t created_by;
    int64_t created_at;
    int64_t finished_at;
    struct api_clock clock;
    int watching[RULES_MAX_SEATS];        /* open event streams per seat */
    int64_t league;                       /* 0: none */
    int invitation;                       /* enum store_invitation: started, pending, or
                                           * cancelled (declined, expired) */
    uint32_t accepted;                    /* pending: a bit per seat that agreed */
    int64_t invited_until;                /* pending: when it expires (Unix seconds) */
    /* A move of it is on its way to the disk (matches.c "move_write"): `idle` is signalled
     * when it is done; requests that came meanwhile wait in `waiters`. */
    bool busy;
    pthread_cond_t idle;
    struct api_waiter *waiters;
    /* The event streams open on it (one entry per stream: a match's own, or a player's
     * stream of all their seats), a count of their wake-ups, and the players' streams its
     * seats were last looked up in (a count of them opened): the HTTP side's, under its own
     * stream lock (http.c). */
    struct stream_sub *streams;
    uint64_t stream_gen;
    uint64_t players_seen;
    bool later_due;                       /* committed since its later streams were woken */
    int64_t later_at;                     /* then: when they are (monotonic ms) */
    struct api_match *later_next;         /* then: the next match of the HTTP side's list */
    /* The seats to move in its latest state (api_match_to_move_noted): their streams are
     * written at once after a commit, the others' with the spectators' (http.c). Written
     * under `lock`, read by the HTTP side under its stream lock. */
    atomic_uint_least32_t stream_now;
    /* Under `lock`: the streams open per visibility (the seats, then the spectators), and
     * the last commits' messages for them (api_feed), newest first, while any is open. */
    int stream_vis[RULES_MAX_SEATS + 1];
    int stream_events;             /* of those, the streams sent every commit's events (a
                                    * match's own: a player's is sent its newest state) */
    struct api_feed *feed;
    int feed_len;                  /* entries in `feed` */
};

/* Note the seats to move in m's state, which has just changed (m->lock held). */
static inline void api_match_to_move_noted(struct api_match *m)
{
    atomic_store(&m->stream_now, rules_to_move(&m->replay.state));
}

/* What a delivery worker thread is given. */
struct api_worker {
    struct api_app *app;
    int channel;                  /* enum store_channel */
};

/* One write of a group commit (commit.c, over storage's committer). `run` does its
 * statements inside the batch's transaction (db_lock held, in a savepoint of its own);
 * `done` is called after the batch committed or failed, db_lock released, with `ok` and `e`
 * filled: ok means durable. */
struct api_write {
    bool (*run)(struct api_app *app, struct api_write *w, struct err *e);
    void (*done)(struct api_app *app, struct api_write *w);
    bool ok;
    struct err e;
    struct store_write sw;        /* the write as storage's committer sees it (commit.c) */
};

/* A remembered bearer token: its sha256 and its player (0: empty). */
#define API_TOKEN_CACHE 4096
struct api_token_entry {
    uint8_t hash[API_SHA256_BYTES];
    int64_t player;
};

/* The matches in memory: a hash table by id, and a list in order of use, newest first.
 * Beyond `config.match_cache` entries the least recently used ones that nobody references
 * are freed (their state is in the database). */
struct api_match_cache {
    struct api_match **buckets;
    size_t nbuckets, count;
    struct api_match *newest, *oldest;
};

/* ---- Locks ------------------------------------------------------------------------------
 * The daemon's one lock order (docs/decisions.md "Locks (issue 14)"). A thread takes a lock
 * only when it ranks above every lock it already holds: so no two threads ever wait for each
 * other in a circle. Two locks of one rank are never held together: no thread holds two
 * matches' locks (a batch's done callbacks take their matches' locks, so a thread that waits
 * for a write holding its match's lock leaves the batch to the committer thread: commit.c).
 * Debug builds check every take (base/lock.h) and assert the locks a function needs with
 * lock_held. Condition variables wait on the lock named with them. storage/'s own locks
 * (the committer's queue, the checkpointer's) are leaves below all of these: storage runs
 * no callback while it holds one. Outermost first: */
enum api_lock_rank {
    API_LOCK_MATCH = 1,   /* api_match.lock: everything about one match (cond: idle) */
    API_LOCK_DB,          /* api_app.db_lock: the writing connection */
    API_LOCK_READ,        /* api_app.read_lock: the reading connection */
    API_LOCK_TABLE,       /* api_app.table_lock: the match cache (cond: loaded) */
    API_LOCK_TOKENS,      /* api_app.tokens_lock: the remembered tokens */
    API_LOCK_CLOCK,       /* api_app.clock_lock: the test clock's offset */
    API_LOCK_VACATION,    /* api_app.vacation_lock: the vacations table */
    API_LOCK_WAKE,        /* api_app.wake_lock: the workers' and scheduler's sleep (cond:
                           * wake); held while the HTTP side wakes a match's streams */
    API_LOCK_STREAMS,     /* http.c's streams_lock: the event streams open */
    API_LOCK_LIMITS,      /* limits.c: counts and rate buckets per address and token */
    API_LOCK_POOL,        /* outbox.c: the webhook delivery pool (cond: work) */
    API_LOCK_REQUEST,     /* http.c: a request's suspend and resume */
    API_LOCK_WAITED,      /* commit.c: one waited write's outcome (cond) */
    API_LOCK_TICKETS,     /* tickets.c: the stream tickets (a leaf) */
    API_LOCK_FACTS,       /* facts.c: the players' notification facts (a leaf) */
};

struct api_app {
    struct store *store;          /* guarded by db_lock */
    struct lock db_lock;
    /* A second connection for the reads of the match cache and the logs (a match loaded,
     * its events for a log, a replay or a stream): they see the last commit without waiting
     * for the batch being written (WAL readers do not block on the writer). */
    struct store *reader;         /* guarded by read_lock */
    struct lock read_lock;
    struct lock table_lock;       /* guards the match cache; may be taken while holding a
                                   * match's lock, never the other way round */
    pthread_cond_t loaded;        /* (table_lock) a match's load ended, well or not */
    struct api_match_cache cache;
    uint8_t operator_hash[API_SHA256_BYTES];    /* sha256 of the operator token */
    struct lock tokens_lock;  /* guards tokens and tokens_epoch */
    struct api_token_entry tokens[API_TOKEN_CACHE];
    uint64_t tokens_epoch;        /* bumped by every rotation and revocation: a lookup that
                                   * began before one does not fill the cache */
    bool has_operator;
    atomic_bool stopping;         /* set on SIGTERM: event streams end, workers finish */
    struct config config;
    uint8_t mail_key[MAIL_KEY_BYTES];         /* signs the play+ reply addresses (kept in the database) */
    char mail_domain[256];
    struct lock vacation_lock; /* guards vacations; a leaf: take no lock under it */
    struct api_vacation_table vacations;
    char message_id_part[17];     /* the random part of every Message-ID we make: 16 hex
                                     digits, drawn once per database (kept in the database) */
    /* The service's time: the wall clock plus an offset that tests move (test_clock; kept
     * in the database's settings while test_clock is on). */
    struct lock clock_lock;
    int64_t clock_offset_ms;
    /* The delivery workers sleep on `wake` (rows to deliver: after each commit that wrote
     * some); the deadline scheduler on `tick` (once a second, or when the service's time
     * moved or it stops), so that the commits of a busy service do not wake it for nothing. */
    struct lock wake_lock;
    pthread_cond_t wake, tick;
    pthread_t workers[2], scheduler;
    struct store_committer *committer; /* group commits on `store` (commit.c) */
    /* Set by the HTTP side while it serves (under wake_lock): wakes a match's event streams
     * (match_changed queues them, saying whether the writer is to be kicked; kick does it). */
    bool (*match_changed)(void *cls, struct api_match *m);
    void (*match_kick)(void *cls);
    void *match_changed_cls;
    void (*token_changed)(void *cls, int64_t player);  /* (wake_lock) */
    void *token_changed_cls;
    struct api_worker worker_args[2];
    bool threads_started;
    /* Heartbeats (api_beat_now) of the delivery workers and the scheduler, written at every
     * turn of their loops and before each delivery: /readyz tells a thread stuck or gone. */
    _Atomic int64_t beat_worker[2], beat_scheduler;
    struct api_tickets *tickets;  /* the event streams' tickets (tickets.c) */
    /* Several processes share the database (PostgreSQL: shared.c): the cached matches are
     * checked against their rows, tokens are not cached, and the listener thread hears the
     * other processes' changes. */
    bool shared;
    /* On a shared database, whether this process is alone on it (shared.c hears nobody
     * else): then nobody else changes it, and the process trusts its memory as on SQLite
     * (tokens cached, a match checked against its row once per epoch). alone_epoch is
     * bumped each time it becomes alone; peers_settled once the listener's first hello
     * was answered or not (the process serves nobody before). */
    atomic_bool alone;
    atomic_uint_fast64_t alone_epoch;
    atomic_bool peers_settled;
    atomic_int processes;         /* on the database, this one included, as heard (0: 1) */
    atomic_int player_streams;    /* players' streams open (http.c: api_match_heard loads
                                   * the matches others change, which may be theirs) */
    pthread_t listener;
    bool listener_started;
    /* The states of recent notifications (match, seq), so that rendering them at delivery
     * seldom replays a log (notes.c). */
    struct api_states *states;
    /* What each player's notifications need to know of them (facts.c), so that a move reads
     * no player row. */
    struct api_facts_cache *facts;
};

/* The game named by request value `v` (a string: the log's name, "horse-thief"); else
 * ERR_INVALID "unknown_game" naming every game the rules engine has (games.c). */
bool api_game_parse(json_t *v, enum rules_game_id *g, struct err *e);

/* ---- What the daemon's other rooms (http/, notify/) ask of the app ----------------------- */

/* The settings it was made with (read-only while it runs). */
const struct config *api_config(const struct api_app *app);

/* Whether the app is stopping (SIGTERM: event streams end, workers finish), and say so. */
bool api_stopping(const struct api_app *app);
void api_stop(struct api_app *app);

/* Whether `hash` is the sha256 of the operator's token. */
bool api_is_operator(const struct api_app *app, const uint8_t hash[API_SHA256_BYTES]);

/* Call fn(cls, m) after each commit to a match (api_match_changed), or nothing (fn NULL):
 * the HTTP side queues the match's event streams so; when fn returns true, kick(cls) follows,
 * at once or after the rest of the committer's batch (api_wake_soon). Both run with
 * wake_lock held, and neither after fn was set to NULL. */
void api_on_match_changed(struct api_app *app, bool (*fn)(void *cls, struct api_match *m),
                          void (*kick)(void *cls), void *cls);

/* Call fn(cls, player) when a player's token was rotated or revoked (here, or by another
 * process: api_tokens_forget), or nothing (fn NULL): the HTTP side ends their event streams
 * so. fn runs with wake_lock held. */
void api_on_token_changed(struct api_app *app, void (*fn)(void *cls, int64_t player), void *cls);

/* A player's stream of all their seats opens (delta 1) or closes (-1): with one open, a
 * match another process changes is loaded here when it is not (api_match_heard). */
void api_player_streams_add(struct api_app *app, int delta);

/* The group commits so far (storage's figures). */
void api_commit_figures(struct api_app *app, struct store_commit_figures *out);

/* sha256 of `data` (a context kept per thread: cheap enough for every request). */
void api_sha256(const void *data, size_t len, uint8_t out[API_SHA256_BYTES]);

/* The service's time in Unix milliseconds. */
int64_t api_now_ms(struct api_app *app);

/* Move the service's time on by `seconds` (test_clock), kept in the database; wakes the
 * workers and the scheduler. */
bool api_clock_advance(struct api_app *app, int64_t seconds, struct err *e);

/* Wake the delivery workers (after a commit that wrote outbox rows, or a delivery's end). */
void api_wake(struct api_app *app);

/* Another thread's wake-up (fn(cls): an MHD connection resumed, the streams' writer
 * kicked), given now; or, while this thread holds its wake-ups (between api_wakes_hold and
 * api_wakes_release: the committer giving a batch's answers), at the release, once for the
 * same fn and cls, so that the threads woken run once for the whole batch. fn may take no
 * lock the holder holds at the release. Past API_WAKES_HELD held, the next is given at once. */
#define API_WAKES_HELD 256
void api_wakes_hold(void);
void api_wake_soon(void (*fn)(void *cls), void *cls);
void api_wakes_release(void);

/* After a commit to `m`: wake its event streams. (The committer wakes the delivery workers
 * when a batch committed outbox rows; the scheduler looks for deadlines once a second
 * anyway: a move's new deadline is never due at once.) */
void api_match_changed(struct api_app *app, struct api_match *m);

/* Who is calling: nobody (no Authorization header), a player, or the operator. */
struct api_caller {
    bool authenticated;
    bool operator;
    int64_t player;               /* 0 unless a player */
};

/* A handler that must wait for its answer (a move waiting for its group commit, or for the
 * match's move before it) calls suspend(cls) and returns without filling its reply; from
 * any thread, resume(cls, retry) is called once the reply is filled or, with retry, when
 * the request should be handled again from the start. The resume may come first, even
 * before the suspend (the suspend is then nothing); it is called exactly once. */
struct api_async {
    void (*suspend)(void *cls);
    void (*resume)(void *cls, bool retry);
    void *cls;
};

/* Notifications prepared before their transaction (api_outbox_changed with `into`). */
#define API_NOTES_MAX (2 * (RULES_MAX_SEATS + 1)) /* each seat by both channels, and a timeout */
struct api_note {
    int64_t player, match, seq;
    int channels;                 /* STORE_CHANNEL_BIT of each channel it goes by: one row */
    char type[32];
    char *body;                   /* owned; NULL: rendered at delivery (seat >= 0) */
    int seat;                     /* the recipient's seat when rendered at delivery, else -1 */
    int64_t deadline;             /* the turn's deadline then (Unix seconds, 0: none) */
    char destination[280];        /* the webhook's "host:port" ("" without one) */
};
struct api_notes {
    int n;
    struct api_note *note;        /* room for API_NOTES_MAX, taken at the first (a move
                                   * without notifications allocates none) */
};

/* A request waiting for its match (api_match.waiters). */
struct api_waiter {
    struct api_async async;
    struct api_waiter *next;
};

/* Create and destroy the application from its configuration (database, operator token,
 * SMTP, webhooks policy, ...). Destroy stops the background threads first. */
struct api_app *api_app_create(const struct config *config, struct err *e);
void api_app_destroy(struct api_app *app);

/* The committer (commit.c: storage's, writing on app->store under db_lock, waking the
 * delivery workers after a batch that committed outbox rows): started by api_app_create,
 * stopped (after it wrote everything queued) by api_app_destroy. */
bool api_committer_start(struct api_app *app, struct err *e);
void api_committer_stop(struct api_app *app);

/* Queue a write for the next group commit; its done callback tells the outcome. Call
 * holding no lock: when nobody is writing, this thread writes the batch, and the done
 * callbacks take their matches' locks. */
void api_write_submit(struct api_app *app, struct api_write *w);

/* Run `run(app, ctx, e)` as a write of the next group commit and wait for the outcome:
 * true once it is durable. Never call it holding db_lock; its match's lock may be held (the
 * committer thread writes the batch). */
bool api_write_wait(struct api_app *app, bool (*run)(struct api_app *app, void *ctx, struct err *e),
                    void *ctx, struct err *e);

/* Start the delivery workers (email, webhooks) and the deadline scheduler. */
bool api_app_start_threads(struct api_app *app, struct err *e);

/* The sha256 of an Authorization header's bearer token, "Bearer <token>" (false: none, or
 * not that form). */
bool api_bearer_hash(const char *authorization, uint8_t hash[API_SHA256_BYTES]);

/* Authenticate an Authorization header value (NULL: none); `token_hash` its token's sha256
 * if the caller has it already (api_bearer_hash: a token is hashed once a request), or NULL.
 * False with ERR_UNAUTHORIZED (or the database's error) in e. */
bool api_authenticate(struct api_app *app, const char *authorization,
                      const uint8_t *token_hash, struct api_caller *c, struct err *e);

/* Forget every cached token of `player` (after its token changed in the database): the
 * next request with the old token is looked up again, and refused; the player's open event
 * streams end (api_on_token_changed). */
void api_tokens_forget(struct api_app *app, int64_t player);

/* Forget every cached token (the process stops or starts being alone on its database). */
void api_tokens_forget_all(struct api_app *app);

/* ---- Identity (identity.c): email confirmation, token rotation and revocation ----------- */

/* How long a confirmation code stays valid. */
#define API_CONFIRM_SECONDS (72 * 3600)

/* A new bearer token ("cpt_" and 64 hex digits) into `token` and its sha256 into `hash`. */
bool api_token_new(char token[API_TOKEN_CHARS], uint8_t hash[API_SHA256_BYTES], struct err *e);

/* ---- Players, identity, leagues: the operations (players.c, identity.c, leagues.c) ------- */

/* What a player, the operator or the mail gateway asks, with typed arguments; http/ parses
 * a request into these and maps the error (api_problem_from_err), the mail gateway and the
 * tests call them alike. Each checks who asks (`c`: ERR_UNAUTHORIZED without a token,
 * ERR_FORBIDDEN for the wrong one) and returns false with e's code, tag and detail saying
 * why, as the API documents them (docs/api.md); a limit's refusal is ERR_LIMITED with
 * e->retry_after. Outputs are the caller's to finish (store_*_finish, core_*_finish). */

/* Who asks: a player (else 401 "unauthorized" / 403 "forbidden"), the operator, or anyone
 * with a token. */
bool core_need_player(const struct api_caller *c, struct err *e);
bool core_need_operator(const struct api_caller *c, struct err *e);
bool core_need_caller(const struct api_caller *c, struct err *e);

/* Check a "preferences" object (registration, PATCH): ERR_MALFORMED "bad_request" for a
 * wrong type, ERR_INVALID "invalid_field" for an unknown key. */
bool core_prefs_check(json_t *prefs, struct err *e);
/* Preferences (JSON text, NULL: none) with every key explicit, as a new object. */
json_t *core_prefs_json(const char *prefs);

/* A player's record as an operation left it, and the time it was read at (Unix seconds):
 * what an answer shows (the vacation running, the days left this year). */
struct core_player {
    struct store_player rec;
    int64_t now;
};
void core_player_finish(struct core_player *p);

/* A registration (anyone may register): a name (not empty, no control characters), and
 * optionally an email address (it gets the confirmation email), a webhook URL and
 * preferences; all borrowed. */
struct core_player_new {
    const char *name, *email, *webhook_url;
    json_t *prefs;
};
/* What a registration made: the new player, its bearer token (shown once) and webhook
 * secret. */
struct core_player_made {
    int64_t id;
    int64_t created_at;
    char token[API_TOKEN_CHARS];
    char webhook_secret[64];      /* NOTIFY_SECRET_MAX */
};
bool core_player_register(struct api_app *app, const struct core_player_new *in,
                          struct core_player_made *out, struct err *e);

/* The caller's own record. */
bool core_player_get(struct api_app *app, const struct api_caller *c, struct core_player *out,
                     struct err *e);

/* What PATCH /v1/players/me changes: each field only when given (a NULL or empty string
 * clears it); preferences (borrowed) merged into the player's, key by key. */
struct core_player_change {
    bool email_given, webhook_given;
    const char *email, *webhook_url;
    json_t *prefs;
};
/* A new address (or an unconfirmed one given again) is unconfirmed and gets its
 * confirmation email, within the confirmation emails' limits (ERR_LIMITED); nothing changes
 * when any part is refused. */
bool core_player_update(struct api_app *app, const struct api_caller *c,
                        const struct core_player_change *in, struct core_player *out,
                        struct err *e);

/* Take a vacation of `days` whole days from now (ERR_INVALID "vacation_allowance" beyond
 * the year's allowance; ERR_CONFLICT "on_vacation" during one), or end the one running
 * (ERR_CONFLICT "not_on_vacation"; whole days not taken go back). The seats' deadlines
 * move with it. */
bool core_vacation_take(struct api_app *app, const struct api_caller *c, int64_t days,
                        struct core_player *out, struct err *e);
bool core_vacation_end(struct api_app *app, const struct api_caller *c, struct core_player *out,
                       struct err *e);

/* One notification of the outbox, with its latest attempts (the player's list only). */
#define CORE_ATTEMPTS 16
struct core_delivery {
    struct store_outbox row;
    int nattempts;
    struct store_attempt attempt[CORE_ATTEMPTS];
};
void core_deliveries_free(struct core_delivery *list, int n);
/* The caller's latest deliveries, at most `max`, with their attempts: their number, or -1
 * with e. `*out` is malloc'd (core_deliveries_free). */
int core_player_deliveries(struct api_app *app, const struct api_caller *c, int max,
                           struct core_delivery **out, struct err *e);
/* The operator sends delivery `id` again (its attempts are not read: nattempts 0). */
bool core_delivery_redeliver(struct api_app *app, const struct api_caller *c, int64_t id,
                             struct core_delivery *out, struct err *e);

/* The caller's matches, newest first, as stored (their summaries), at most `max` (*more:
 * there are others): their number, or -1 with e. */
int core_player_matches(struct api_app *app, const struct api_caller *c, struct store_match *out,
                        int max, bool *more, struct err *e);

/* The operator moves the test clock on by `seconds` (0 to 100 years, else ERR_MALFORMED
 * "bad_request"); *now_ms gets the service's time after. ERR_NOT_FOUND unless test_clock is
 * on. */
bool core_clock_advance(struct api_app *app, const struct api_caller *c, int64_t seconds,
                        int64_t *now_ms, struct err *e);

/* The service's figures (the operator's). */
struct core_stats {
    uint64_t batches, writes, checkpoints;   /* group commits so far */
    size_t cached;                           /* matches in memory */
};
bool core_stats_get(struct api_app *app, const struct api_caller *c, struct core_stats *out,
                    struct err *e);

/* Give player `id` (named `name`) the address `email` (NULL: none), unconfirmed, and queue
 * the one confirmation email with a new code (when an SMTP relay is configured), within the
 * confirmation emails' rate limits (ERR_LIMITED "confirmation_rate_limited", retry_after).
 * Call inside a transaction with db_lock held. */
bool core_email_set(struct api_app *app, int64_t id, const char *name, const char *email,
                    int64_t now_ms, struct err *e);

/* The player confirms their address with the code of its email (`len` bytes): ERR_CONFLICT
 * "no_email" without one; a wrong or expired code is the store's refusal ("bad_code"). An
 * address confirmed already stays so. */
bool core_email_confirm(struct api_app *app, const struct api_caller *c, const char *code,
                        size_t len, struct err *e);
/* The operator confirms player `id`'s address without a code; *email gets it (owned). */
bool core_email_confirm_by_operator(struct api_app *app, const struct api_caller *c, int64_t id,
                                    char **email, struct err *e);

/* A new bearer token for the caller (rotate) or, by the operator, for player `id` (issue):
 * the old one stops working at once. Revoke: player `id`'s token stops working and none
 * replaces it until the operator issues one. */
bool core_token_rotate(struct api_app *app, const struct api_caller *c, char token[API_TOKEN_CHARS],
                       struct err *e);
bool core_token_issue(struct api_app *app, const struct api_caller *c, int64_t id,
                      char token[API_TOKEN_CHARS], struct err *e);
bool core_token_revoke(struct api_app *app, const struct api_caller *c, int64_t id,
                       struct err *e);

/* A new league (anyone with a token; a player becomes its organiser): its name (1 to 100
 * bytes), game and options, the clock of its matches as given (JSON text, NULL for the
 * game's default; checked by the caller with api_clock_parse) and the points by place
 * (JSON text: an array of one number per place). *out gets the league (store_league_finish). */
struct core_league_new {
    const char *name;
    enum rules_game_id game;
    struct rules_options options;
    const char *clock;
    const char *points;
};
bool core_league_create(struct api_app *app, const struct api_caller *c,
                        const struct core_league_new *in, struct store_league *out,
                        struct err *e);

/* A league as GET /v1/leagues/{id} shows it: its counts, members (left ones too), the
 * organiser's invitations waiting, and its latest matches' stored summaries. */
struct core_league_view {
    struct store_league league;
    struct store_member *members, *invited;
    int nmembers, ninvited;
    struct store_match *matches;
    int nmatches;
};
bool core_league_get(struct api_app *app, int64_t id, struct core_league_view *out,
                     struct err *e);
void core_league_view_finish(struct core_league_view *v);
/* The latest leagues, newest first, with their counts: their number or -1 with e; *out
 * (malloc'd) gets them, each to finish (store_league_finish). */
int core_leagues_list(struct api_app *app, struct store_league **out, struct err *e);
/* The caller's leagues (GET /v1/players/me/leagues): those they organise, play in or are
 * invited to, newest first, at most 500, with their counts; (*roles)[i] holds out[i]'s
 * STORE_LEAGUE_MEMBER and STORE_LEAGUE_INVITED bits. The number or -1 with e (401 without
 * a player); *out and *roles (malloc'd) as core_leagues_list's. */
int core_player_leagues(struct api_app *app, const struct api_caller *c,
                        struct store_league **out, unsigned **roles, struct err *e);
/* League `id`'s table in order (by the game's sense: in some low totals win): the number of
 * rows or -1 with e; *out (malloc'd) gets them, each to finish (store_standing_finish). */
int core_league_standings(struct api_app *app, int64_t id, struct store_standing **out,
                          struct err *e);

/* What adding a member did: enrolled (joined) or invited (the player agrees by joining). */
enum core_join { CORE_JOINED, CORE_INVITED };
/* Add `player` (the caller's own id to join; 0: ERR_MALFORMED "missing_field") to league `id`: the player themself, the operator, or a
 * player whose preferences let others seat them without asking joins at once; anyone else
 * the organiser names is invited (docs/security.md "Consent"). ERR_CONFLICT
 * "already_member" / "already_invited", ERR_INVALID "league_full", "unknown_player".
 * *name gets the player's name (owned), *at the time. */
bool core_league_member_add(struct api_app *app, const struct api_caller *c, int64_t id,
                            int64_t player, enum core_join *how, char **name, int64_t *at,
                            struct err *e);
/* Remove `player` from league `id` (the player, or its organiser): an invitation waiting is
 * withdrawn (*uninvited), else the member leaves and each running league match of theirs is
 * forfeited: *forfeited gets their ids (malloc'd, *n of them; NULL for none). */
bool core_league_member_remove(struct api_app *app, const struct api_caller *c, int64_t id,
                               int64_t player, bool *uninvited, int64_t **forfeited, int *n,
                               struct err *e);

/* ---- Moves by email (notify/inbound.c) -------------------------------------------------- */

/* What became of one inbound message: "played", "refused", "help", "shown" or "ignored",
 * the match and seat its play+ address named, and the sentence the player is told. */
struct core_mail_outcome {
    const char *what;
    int64_t match;
    int seat;
    char detail[600];
};
/* The mail gateway (the operator) hands in one RFC 5322 message (`raw`, `len` bytes), the
 * envelope recipient (or NULL) and, when the gateway cut it, its original size
 * (`truncated`, else 0). A genuine play+ address is answered by email (threaded under the
 * message) and the move played as the seat would post it; an automatic message is ignored.
 * ERR_INVALID "malformed_mail", "no_play_address" or "forged_address" changes nothing. */
bool core_mail_inbound(struct api_app *app, const struct api_caller *c, const char *raw,
                       size_t len, const char *recipient, long long truncated,
                       struct core_mail_outcome *out, struct err *e);

/* The handlers. `body` is the parsed request JSON (NULL when there was none). Each fills
 * `r`; `idem_key` (or NULL) is the Idempotency-Key header, `request_hash` the sha256 of
 * method, path and body. */

/* Whether a player's preferences (JSON text) want notifications of `type` by `channel`
 * (0 email, 1 webhook): everything is on unless turned off. Email while the player
 * watches the match's event stream is off unless "email_when_watching" is true. */
bool api_prefs_want(const char *prefs, int channel, const char *type);
bool api_prefs_email_when_watching(const char *prefs);


/* The standings after league match `m` finished as `rp` says: called inside the
 * finishing transaction (m->lock and db_lock held). */
bool api_league_match_finished(struct api_app *app, const struct api_match *m,
                               const struct tlog_replay *rp, struct err *e);

/* Play `seat`'s move in `m` as if the seat had posted it (play by email). Call with m->lock
 * held. ERR_ILLEGAL with the engine's reason when it is not legal. */
bool api_match_play(struct api_app *app, struct api_match *m, int seat,
                    const struct rules_move *mv, struct err *e);

/* Write an email to player `player` that belongs to no match (body {"to", "subject",
 * "text"}), such as a confirmation email (type "email_confirm"); inside a transaction with
 * db_lock held. */
bool api_outbox_add_player_email(struct api_app *app, int64_t player, const char *type,
                                 json_t *mail, int64_t now_ms, struct err *e);

/* Write an email notification (body: {"to", "subject", "text", "reply_to"?, "in_reply_to"?,
 * "references"?}) for `seat` of `m`; inside a transaction with db_lock held. Nothing is
 * written when no SMTP relay is configured. */
bool api_outbox_add_email(struct api_app *app, const struct api_match *m, int seat,
                          const char *type, json_t *mail, int64_t now_ms, struct err *e);


/* Cancel the pending matches whose invitation expired (the scheduler, each second). */
void api_invitations_sweep(struct api_app *app);


/* Whether a player's preferences (JSON text) say they may be seated in a match or enrolled
 * in a league without being asked ("seat_without_asking"; off by default). */
bool api_prefs_seat_without_asking(const char *prefs);

/* Resign `player`'s seat in match `id` if it is running (a player leaving a league); a
 * pending match is declined (cancelled) instead. */
bool api_match_forfeit(struct api_app *app, int64_t id, int64_t player, struct err *e);


/* Look up a match, loading it from the database if it is not in memory (its row: the state
 * snapshot, or a replay of its events when the snapshot is missing or from another build).
 * Returns it referenced: it stays in memory until api_match_release, so hold the reference
 * for as long as you use it (an event stream, while open). NULL with e: ERR_NOT_FOUND
 * "not_found", ERR_NOMEM, ERR_IO "corrupt_match" (a row that does not load), or the
 * database's error. */
struct api_match *api_match_find(struct api_app *app, int64_t id, struct err *e);

/* api_match_find without bringing a copy in memory up to its row first (a shared database:
 * one read fewer). For a change that checks the row itself when it writes (a move:
 * store_match_lock, then judged again on a reloaded copy) and that looks again at a fresh
 * copy before refusing (api_match_refresh). */
struct api_match *api_match_find_held(struct api_app *app, int64_t id, struct err *e);

/* Drop a reference from api_match_find (NULL: nothing), after unlocking the match. The least
 * recently used matches beyond config.match_cache that nobody references are freed. */
void api_match_release(struct api_app *app, struct api_match *m);

/* Pin `m`, which the caller holds (a reference, or its lock), in the cache, or let go of a
 * pin: a pinned match is not freed, like a referenced one, but a pin takes no lock, so the
 * HTTP side pins the matches of a player's event stream where the cache's lock ranks below
 * the locks it holds (http.c "A player's stream"). */
void api_match_pin(struct api_match *m);
void api_match_unpin(struct api_match *m);

/* Free every match in memory (api_app_destroy, after the threads stopped). */
void api_matches_free_all(struct api_app *app);

/* The first `until` events of `m`'s log, read from the database, as a log with the match's
 * metadata (players, seed, seed_commitment); destroy it after. NULL with e on a database
 * error or a corrupt event. Call with m->lock held; takes db_lock. */
struct tlog *api_match_log_read(struct api_app *app, const struct api_match *m, int64_t until,
                                struct err *e);

/* The seat `c` holds in `m`, or -1 (spectator). Call with m->lock held. */
int api_match_seat(const struct api_match *m, const struct api_caller *c);

/* ---- Matches: the operations (matches.c) ---------------------------------------------------
 * Typed inputs and a struct err, for the HTTP edge (http/api-matches.c), the mail gateway,
 * the clock and the league scheduler alike. Their refusals carry the code and tag the HTTP
 * edge turns into a status and a problem (api_problem_from_err). */

/* An idempotent request (Idempotency-Key): its key (NULL: none), the scope it belongs to (the
 * player; 0 the operator) and the sha256 of its method, path and body. */
struct core_idem {
    int64_t scope;
    const char *key;
    const uint8_t *hash;
};

/* What an operation answers, as it is stored for an idempotent retry: a status (201, 200,
 * or a stored answer's; 0 none yet) and JSON text (owned; free it). */
struct core_answer {
    int status;
    char *text;
    size_t len;
};

/* The answer stored for `idem` (a retry of a request that committed): into *out, or
 * out->text NULL when there is none (or no key). False with e on a database error, or
 * ERR_INVALID "idempotency_key_reused" when the key came with another request. */
bool core_idem_replay(struct api_app *app, const struct core_idem *idem, struct core_answer *out,
                      struct err *e);

/* Whether `c` is somebody (a token came): else ERR_UNAUTHORIZED "unauthorized" saying
 * `detail`. */
bool core_caller_known(const struct api_caller *c, const char *detail, struct err *e);

/* Whether `c` may create matches: ERR_UNAUTHORIZED without a token. */
bool core_match_creator(const struct api_caller *c, struct err *e);

/* A new match as its creator describes it. `options` and `clock` are the request's values
 * (JSON, as docs/api.md gives them; read here, because their refusals come after the
 * league's and the seats' checks): `options` NULL for the game's (or the league's),
 * `clock` NULL when absent (the game's default, or the league's) and JSON null for none. */
struct core_match_spec {
    enum rules_game_id game;
    size_t nplayers;                      /* as many as the request listed (more than
                                           * RULES_MAX_SEATS is refused: wrong_player_count) */
    int64_t players[RULES_MAX_SEATS];     /* the first of them, in seat order; distinct */
    json_t *options;
    json_t *clock;
    int64_t league;                       /* 0: none; an id that is no league's (-1) is
                                           * refused as unknown_league */
};

/* Create a match (docs/api.md "Creating a match"). `c` is who asks: a player seated in it
 * or the operator; NULL for a league's schedule (core_league_schedule), for which nobody is
 * asked (its members agreed by joining) and nobody is its creator. Unless the operator or
 * the league's organizer creates it, the seats other than the creator's are asked, but for
 * players who let themselves be seated without asking (the match is pending until all
 * agree). Written by group commit with its seed's commitment, the
 * first deal, the notifications and `idem`'s answer (NULL: none). *id gets the new match's
 * id and `answer` (NULL: not wanted) the caller's view (201); when a request with the same
 * key committed first, *id is 0 and `answer` holds that request's answer. False with e:
 * ERR_UNAUTHORIZED, ERR_FORBIDDEN, ERR_INVALID (unknown_league, league_rules, league_clock,
 * league_match_limit, bad_option, wrong_player_count, not_member, bad_clock,
 * unknown_player), ERR_MALFORMED (a clock that is not an object), or the database's. */
bool core_match_create(struct api_app *app, const struct api_caller *c,
                       const struct core_match_spec *spec, const struct core_idem *idem,
                       int64_t *id, struct core_answer *answer, struct err *e);

/* A move as a request gives it: its text, and the seq the player saw (optional). When the
 * request could not be read, `unreadable` says why (ERR_MALFORMED): it is refused after the
 * caller, the match and the seat are known, where a bad body has always been refused. */
struct core_move {
    const char *text;
    size_t len;
    bool has_seq;
    int64_t seq;
    const struct err *unreadable;
};

/* How an operation that may wait ended for now. */
enum core_progress {
    CORE_DONE,        /* answered: `out` filled */
    CORE_FAILED,      /* refused: e filled */
    CORE_SUSPENDED,   /* async->resume(cls, false) comes once `out` (status 201) or, failing
                       * (out->status 0), e is filled; resume(cls, true) when the request is
                       * to be made again from the start (the match was busy) */
};

/* The caller's move in match `id`, answered (201, the mover's view) once it is durable: it
 * suspends (async) until its group commit is done, or until the match's move before it is.
 * Refusals: ERR_UNAUTHORIZED, ERR_NOT_FOUND, ERR_FORBIDDEN (no seat), ERR_MALFORMED,
 * ERR_CONFLICT (match_pending, match_cancelled, match_over, stale_seq, not_your_turn),
 * ERR_INVALID/ERR_ILLEGAL (the notation's or the engine's tag, "idempotency_key_reused").
 * With idem->key, a retry gets the stored answer. `out` and `e` must live until the
 * resume. */
enum core_progress core_match_move(struct api_app *app, const struct api_caller *c, int64_t id,
                                   const struct core_move *in, const struct core_idem *idem,
                                   struct core_answer *out, const struct api_async *async,
                                   struct err *e);

/* Whether `m` has started: else ERR_CONFLICT match_pending or match_cancelled. Call with
 * m->lock held. */
bool core_match_started(const struct api_match *m, struct err *e);

/* ---- Stream tickets (tickets.c) ------------------------------------------------------------
 *
 * What a browser's EventSource puts in its stream's URL instead of the token it cannot
 * send: drawn with the seat's token, it opens one stream of that match as that player,
 * once, within API_TICKET_SECONDS, on whichever process it reaches. Only their sha256 is
 * kept, at most API_TICKETS_MAX in all and API_TICKETS_PER_PLAYER unused per player: in
 * memory (SQLite: one process), or in the shared database (store_ticket_add). */
#define API_TICKET_CHARS (4 + 2 * TLOG_SEED_BYTES + 1)    /* "cps_", 64 hex digits, NUL */
#define API_TICKET_SECONDS 30
#define API_TICKETS_MAX 1024
#define API_TICKETS_PER_PLAYER 8

struct api_tickets;

/* The table of tickets (NULL without memory); destroy accepts NULL. */
struct api_tickets *api_tickets_create(void);
void api_tickets_destroy(struct api_tickets *t);

/* A new ticket in `ticket` for caller `c`, a seat of started match `id` (0: the player's own
 * stream of all their seats), and when it expires (the service's Unix ms). ERR_UNAUTHORIZED, ERR_FORBIDDEN (the operator; not a
 * seat), ERR_NOT_FOUND, ERR_CONFLICT (not started), ERR_LIMITED too_many_tickets (with
 * retry_after), ERR_UNAVAILABLE (the table is full). */
bool core_stream_ticket_issue(struct api_app *app, const struct api_caller *c, int64_t id,
                              char ticket[API_TICKET_CHARS], int64_t *expires_ms,
                              struct err *e);

/* Use `ticket` (burnt by this call, whatever its outcome) for a stream of match `id` (0: the
 * player's stream): the
 * player it was drawn for in *out; else ERR_UNAUTHORIZED bad_ticket (unknown, used,
 * expired, or drawn for another match), or a shared database's error (ERR_UNAVAILABLE). */
bool core_stream_ticket_redeem(struct api_app *app, const char *ticket, int64_t id,
                               struct api_caller *out, struct err *e);

/* The caller's answer to pending match `id`: `accept` agrees (the last acceptance starts
 * it: seed, first deal, clock, match_started), else declines (cancelled). The caller's view
 * in *view (owned, *len bytes). ERR_UNAUTHORIZED, ERR_NOT_FOUND, ERR_FORBIDDEN (no seat),
 * ERR_CONFLICT (match_started on a decline, match_cancelled). */
bool core_match_consent(struct api_app *app, const struct api_caller *c, int64_t id,
                        bool accept, char **view, size_t *len, struct err *e);

/* The caller's view of match `id` as JSON text (owned, *len bytes). ERR_NOT_FOUND. */
bool core_match_view(struct api_app *app, const struct api_caller *c, int64_t id, char **view,
                     size_t *len, struct err *e);

/* The log of match `id` as the caller may see it (turn-log.md, redacted). NULL with e:
 * ERR_NOT_FOUND, ERR_CONFLICT (not started), ERR_IO "corrupt_match". */
json_t *core_match_log(struct api_app *app, const struct api_caller *c, int64_t id,
                       struct err *e);

/* Every step of finished match `id` seen by the omniscient viewer. NULL with e:
 * ERR_NOT_FOUND, ERR_CONFLICT (not started; match_running), ERR_IO "corrupt_match". */
json_t *core_match_replay(struct api_app *app, int64_t id, struct err *e);

/* A "clock" value of a request (absent: the game's default; null: none). ERR_MALFORMED
 * "bad_request" when it is not an object, ERR_INVALID "bad_clock". */
bool core_clock_parse(json_t *v, enum rules_game_id g, struct api_clock *c, struct err *e);

/* Schedule league `id`'s matches for `rounds` rounds (0: the default, one round of every
 * pairing for two seats, else enough for everybody to meet once; 1 to 100, else
 * ERR_INVALID "invalid_field"): the caller is its organizer or the operator. Creates them through core_match_create; their ids in *ids
 * (malloc'd, *n of them). ERR_UNAUTHORIZED, ERR_NOT_FOUND, ERR_FORBIDDEN, ERR_INVALID
 * (not_enough_members, schedule_too_large, league_match_limit, or a match's refusal). The
 * matches created before a refusal stay. (leagues.c) */
bool core_league_schedule(struct api_app *app, const struct api_caller *c, int64_t id,
                          int rounds, int64_t **ids, size_t *n, struct err *e);

/* ---- The match cache (cache.c) ------------------------------------------------------------ */

/* Whether e is a change refused because another process changed the match first
 * (store_match_lock's ERR_CONFLICT "stale_match"): reload it (api_match_refresh), then
 * judge the request again. */
bool api_stale(const struct err *e);

/* Bring `m` up to its row when another process changed it (a shared database; else
 * nothing): its row's version is read, and the match reloaded in place when it differs
 * (*changed then; wake its streams: api_match_changed). Call with m->lock held and m not
 * busy. False with e on a database error (m as it was). */
bool api_match_refresh(struct api_app *app, struct api_match *m, bool *changed, struct err *e);

/* The listener heard that match `id` is now at version `rev` (-1: check it; `streams_only`:
 * only if it has event streams open): if it is in memory and another version, it is
 * refreshed and its streams woken. Never loads a match that is not in memory. */
void api_match_heard(struct api_app *app, int64_t id, int64_t rev, bool streams_only);

/* Call api_match_heard(app, id, -1, true) for every match in memory: the listener's
 * catch-up (after it reconnected, and now and then in case a notification was lost). */
void api_matches_catch_up(struct api_app *app);

/* ---- Several processes (shared.c) --------------------------------------------------------- */

/* Start the listener thread (a shared database only; else nothing), stop it. */
bool api_listener_start(struct api_app *app, struct err *e);

/* Tell the other processes that `player`'s token changed ("t PLAYER"; shared.c), when this
 * process is not alone on a shared database (an alone one caches tokens: it must hear it). */
void api_token_announce(struct api_app *app, int64_t player);

/* How many processes serve the database, this one included, as far as its listener heard
 * in the last few seconds (1 on SQLite): the rate limits are shared among them. */
int api_processes(struct api_app *app);
void api_listener_stop(struct api_app *app);

/* This thread's own connection to a shared database, for the small reads every request
 * makes (its token, a match's version): used without a lock (only this thread has it),
 * opened at the thread's first call and closed when it ends. NULL with e
 * (ERR_UNAVAILABLE when the database cannot be reached). */
struct store *api_quick_store(struct api_app *app, struct err *e);

/* Tell the other processes that `player`'s latest vacation now ends at `until` (their
 * vacations tables), at the commit; nothing unless shared. Inside the transaction that
 * changed it, db_lock held. */
bool api_vacation_announce(struct api_app *app, int64_t player, int64_t until, struct err *e);

/* A new, empty match object (not in the cache); free it with api_match_free. */
struct api_match *api_match_new(void);

/* Fill `d` with what `m` is (its id, state, seats, seed, clock, consent), for a change
 * prepared before it is durable; its lock, condition, references, links and streams are
 * left zero and never used (a lock is never copied). The replay's hands and the names are
 * m's, borrowed. Call with m->lock held. */
void api_match_draft(struct api_match *d, const struct api_match *m);

/* How many matches the cache holds (the figures of /v1/admin/stats). */
size_t api_matches_in_memory(struct api_app *app);

/* Free a match object (not one in the cache); accepts NULL. */
void api_match_free(struct api_match *m);

/* Put a match just created (its row committed) in the cache, taking ownership of it.
 * Returns it referenced, or the copy a reader loaded from the database meanwhile (then `m`
 * is freed); NULL with e (ERR_NOMEM, or api_match_find's). */
struct api_match *api_match_insert(struct api_app *app, struct api_match *m, struct err *e);

/* Set the names of m's `n` players (in seat order; copied). ERR_NOMEM, or ERR_IO when one
 * is missing. */
bool api_match_set_names(struct api_match *m, char *const *names, int n, struct err *e);

/* The name of the player in `seat` of `m`. */
const char *api_match_name(const struct api_match *m, int seat);

/* Render m's head, the members every view of it opens with: its id, game, options and
 * players, which never change once it has its id (a view then copies them; without a head,
 * after running out of memory, each view writes them). */
void api_match_head_build(struct api_match *m);

/* The state snapshot stored with each change: the replay `rp` after `seq` events with
 * `chance_events` chance events among them, as bytes tagged with this build's state layout
 * (malloc'd, `*len` of them; NULL without memory). */
void *api_match_snapshot(const struct tlog_replay *rp, int64_t seq, uint32_t chance_events,
                         size_t *len);

/* The caller's view of a replay that belongs to `m` (its own, or one about to be
 * committed), written as JSON text (the answer to every GET and move). NULL without memory;
 * *len gets its length. Call with m->lock held. */
char *api_match_view_text(const struct api_match *m, const struct tlog_replay *rp, int64_t seq,
                          int seat, size_t *len);
/* The same with all the legal moves if there are at most `legal_all`, else only the first
 * `legal_few` and their number in all as "legal_count": for an email, which lists that
 * many (render_match_text), not the 286 passes a Hearts hand begins with. */
char *api_match_view_text_cut(const struct api_match *m, const struct tlog_replay *rp,
                              int64_t seq, int seat, int legal_all, int legal_few, size_t *len);

/* The same view, cut as api_match_view_text_cut cuts it, as a jansson tree (that text read
 * back): an email's (render_match_text) and the spectators' view a finished match's replay
 * opens with. NULL without memory. */
json_t *api_match_view_of(const struct api_match *m, const struct tlog_replay *rp, int64_t seq,
                          int seat, int legal_all, int legal_few);

/* ---- Notifications and the clock (outbox.c, sched.c) -------------------------------------- */

/* What a committed change tells the seats: called inside the change's transaction with
 * m->lock and db_lock held. `before` is NULL for a new match; `after` the state after `seq`
 * events; `mover` the seat that moved (-1: none); `timed_out` the seat whose time ran out
 * (-1: none). Writes the outbox rows (per the players' preferences) and returns false on a
 * database error. With `into`, the rows are only prepared (players read through the
 * reading connection, bodies built) and kept there for api_outbox_write: the move path does
 * that before its transaction, so the committer only inserts them. */
bool api_outbox_changed(struct api_app *app, const struct api_match *m, int64_t seq,
                        const struct tlog_replay *before, const struct tlog_replay *after,
                        int mover, int timed_out, int64_t now_ms, struct api_notes *into,
                        struct err *e);

/* A "league_invitation" notification to player `p`, invited to league `l`: its rows, email
 * and webhook as `p` wants them, rendered now (docs/api.md "Notifications"). In the
 * invitation's transaction (db_lock held). */
bool api_outbox_league_invitation(struct api_app *app, const struct store_league *l,
                                  const struct store_player *p, int64_t now_ms, struct err *e);

/* Write one notification of `type` for `seat` of `m` (reminders). Same locking. */
bool api_outbox_notify(struct api_app *app, const struct api_match *m, int64_t seq,
                       const struct tlog_replay *rp, int seat, const char *type,
                       int64_t now_ms, struct api_notes *into, struct err *e);

/* An email's parts: as a row rendered at delivery makes them (each string its own:
 * api_mail_free), or as a row rendered when it was written holds them in its body's JSON
 * ({"to", "subject", "text", "reply_to"}). */
struct api_mail {
    char *to, *subject, *text, *reply_to;
};

void api_mail_free(struct api_mail *mail);

/* A row rendered at delivery (o->seat >= 0), for player `p`, from the match's state at
 * o->seq (the log's), the row's deadline and created_at: a webhook's body (its JSON) into
 * *body, an email's parts into *mail (no JSON between the two: the view's is parsed once,
 * for the email's table). The same bytes at every attempt while the player's name and
 * address stay. False with e (the match cannot be read, no memory). Call with no lock held. */
bool api_outbox_render(struct api_app *app, const struct store_outbox *o,
                       const struct store_player *p, char **body, struct api_mail *mail,
                       struct err *e);

/* ---- What a player's notifications need (facts.c) --------------------------------------- */

/* A player's notification facts: exactly what api_outbox_notify reads of the player to
 * decide which rows a change writes for them, and to write them (a plain value, copied). */
struct api_facts {
    int64_t player;
    bool email;                   /* an address, confirmed */
    bool webhook;                 /* an endpoint, not disabled (410 Gone) */
    bool email_when_watching;     /* preferences' "email_when_watching" */
    uint8_t want[2];              /* by channel (enum store_channel): bit t, whether the
                                   * preferences want type t (api_prefs_type) */
    char destination[280];        /* the webhook's "host:port" ("" none, or not a URL) */
};

/* The facts of the record `p`. */
void api_facts_of(const struct store_player *p, struct api_facts *out);

/* Whether `f`'s preferences want a notification of `type` by `channel` (api_prefs_want's
 * answer, without parsing them again). */
bool api_facts_want(const struct api_facts *f, int channel, const char *type);

/* The cache of every process (api_app.facts): create (NULL with e without memory), destroy
 * (accepts NULL). */
struct api_facts_cache *api_facts_create(struct err *e);
void api_facts_destroy(struct api_facts_cache *c);

/* Player `player`'s facts into *out: the cache's, else read (through the reading connection
 * under read_lock when `reader`, else through app->store, whose db_lock the caller holds)
 * and kept. False with e when the player cannot be read (ERR_NOT_FOUND: none). */
bool api_player_facts(struct api_app *app, int64_t player, bool reader, struct api_facts *out,
                      struct err *e);

/* Forget `player`'s facts (0: everyone's), after a write of its row is over (committed or
 * not): the next use reads the row, and a read that began before does not keep what it read.
 * Every write of a player's email, confirmation, webhook or preferences calls it. */
void api_facts_forget(struct api_app *app, int64_t player);

/* Whether the cache is used: always on a database of one process; on a shared one only
 * while the listener is connected (it hears the other processes' changes), so off, and
 * every entry forgotten, when it loses its connection and until it has it again. */
void api_facts_live(struct api_app *app, bool live);
bool api_facts_used(struct api_app *app);

/* Tell the other processes that `player`'s row changed (their listeners forget its facts),
 * at the commit; nothing unless shared. Inside the transaction that changed it, db_lock
 * held. */
bool api_player_announce(struct api_app *app, int64_t player, struct err *e);

/* The notification types by index (match_started, turn, reminder, timeout, match_over,
 * invitation): `type`'s, or -1 for another. Bit t of api_prefs_bits: whether `prefs` want
 * type t by `channel`. */
#define API_PREFS_TYPES 7
int api_prefs_type(const char *type);
unsigned api_prefs_bits(const char *prefs, int channel);

/* The cache of recent notification states (api_app.states): create (NULL with e without
 * memory) and destroy (accepts NULL). */
struct api_states *api_states_create(struct err *e);
void api_states_destroy(struct api_states *s);

/* The state of `m` after its first `seq` events, replayed from the stored log into `rp`
 * (zeroed by the caller; finish it whatever the outcome). `m` may be a copy of a match's
 * fields taken under its lock: only its id, game and options are read, none of them ever
 * changes, and the replay reads the database, not the match (so it needs no match lock). */
bool api_match_replay_at(struct api_app *app, const struct api_match *m, int64_t seq,
                         struct tlog_replay *rp, struct err *e);

/* The same, going on from `rp`, the state after the first `from` events, up to `seq`. */
bool api_match_replay_from(struct api_app *app, const struct api_match *m, int64_t from,
                           int64_t seq, struct tlog_replay *rp, struct err *e);

/* Insert the rows prepared in `notes` (inside the transaction); they stay in `notes`, for
 * api_notes_free, and a write run again inserts them again (storage/store.h). */
bool api_outbox_write(struct api_app *app, struct api_notes *notes, int64_t now_ms,
                      struct err *e);
void api_notes_free(struct api_notes *notes);

/* Run the clock of match `id` at the service's time: the timeout policy for every seat
 * whose time ran out, and each seat's reminder (vacations pause a seat's clock). */
void api_match_clock_tick(struct api_app *app, int64_t id);

/* Recompute the stored deadlines of all `player`'s clocked matches (a vacation changed). */
void api_player_clocks_changed(struct api_app *app, int64_t player);

/* ---- Deadlines (clock.c) ------------------------------------------------------------------ */

/* Read the players' latest vacations into app->vacations (at start). */
bool api_vacations_load(struct api_app *app, struct err *e);

/* Free app->vacations (when the app is destroyed). */
void api_vacations_free(struct api_app *app);

/* `player`'s latest vacation now ends at `until` (it began, or ended early). */
void api_vacation_noted(struct api_app *app, int64_t player, int64_t until);

/* When the time of a seat of `player` runs out in a turn that began at `turn_started` with
 * `move_seconds` a move: the turn's start plus move_seconds plus every second of the
 * player's vacations that falls inside the turn (a vacation that begins before the deadline
 * so far moves it on by its length after the turn began). The one computation of a
 * deadline: the view, the notifications and the scheduler all use it. */
int64_t api_seat_deadline(struct api_app *app, int64_t player, int64_t turn_started,
                          int64_t move_seconds);

/* The end of `player`'s vacation running at `now`, or 0 when they are not on vacation. */
int64_t api_player_away_until(struct api_app *app, int64_t player, int64_t now);

/* The clock of `m` after a change from `before` (NULL: the match starts) to `after`, with
 * `mover` the seat that moved (-1: none), at `now_s`: the turn starts again when a seat gets
 * something to do that it had not, or the mover still has; then the deadline and the
 * scheduler's next visit (api_clock_plan). */
struct api_clock api_clock_after(struct api_app *app, const struct api_match *m,
                                 const struct rules_state *before, const struct rules_state *after,
                                 int mover, int64_t now_s);

/* Fill c->deadline (the earliest of the seats to move in `st`) and c->wake_at (the first
 * deadline or reminder still due, a reminder of a seat away not before its return) for the
 * players of `m` at `now_s`. */
void api_clock_plan(struct api_app *app, const struct api_match *m, const struct rules_state *st,
                    struct api_clock *c, int64_t now_s);

/* Ids above `after` of the active matches in which `player` holds a seat (pending ones
 * included), in order, at most `max`, read on the reading connection; -1 with e. */
int api_active_matches_of_player(struct api_app *app, int64_t player, int64_t after,
                                 int64_t *out, int max, struct err *e);

/* A heartbeat's time: monotonic seconds. */
int64_t api_beat_now(void);

/* Whether the service is ready (GET /readyz): the database answers a trivial read (on a
 * connection of its own) and the delivery workers and the scheduler are alive (a heartbeat
 * within their longest possible turn); else false with what is not in `why`. */
bool core_ready(struct api_app *app, char *why, size_t size);

/* The delivery workers and the scheduler (started by api_app_start_threads). */
void *api_outbox_worker(void *worker);
void *api_scheduler(void *app);

/* The event stream: the SSE messages for events of `m` after `after` (a seq; -1 for
 * all), as the seat sees them, appended to `out` (a growing text), read back from the
 * database (a stream's first message, or one too far behind the feed). Returns the seq of
 * the last event covered. Call with m->lock held. */
int64_t api_match_stream_chunk(struct api_app *app, struct api_match *m, int seat,
                               int64_t after, char **out, size_t *len);

/* The stream's `state` message alone for `seat` (its view at m's latest seq) in *out
 * (owned; NULL without memory). Call with m->lock held. */
void api_match_stream_state(const struct api_match *m, int seat, char **out, size_t *len);

/* A stream of `seat` (-1: a spectator) opens (delta 1) or closes (-1) on `m`: from its next
 * commit on, m's feed holds that visibility's messages, with each commit's events when the
 * stream is sent them (`events`: a match's own stream; a player's is sent states alone);
 * the feed goes with the last stream. Call with m->lock held. */
void api_match_streams_add(struct api_match *m, int seat, int delta, bool events);

/* The feed entry of `m` that follows seq `after` for `seat`, referenced (release it with
 * api_feed_release), its text for `seat` rendered (by this call, if it is the first to want
 * it), or NULL when the feed has none (the stream reads the database instead), or, when
 * the caller needs the commit's `events`, none with them. Call with m->lock held. */
struct api_feed *api_match_feed_get(struct api_app *app, struct api_match *m, int seat,
                                    int64_t after, bool events);

/* Drop a reference to a feed entry; accepts NULL. */
void api_feed_release(struct api_feed *f);

#endif
