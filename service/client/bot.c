/* bot.c - `cardpost bot`: plays seats of cardpostd matches through the REST API (libcurl).
 * One thread per token holds the player's stream of all their matches open
 * (GET /v1/players/me/events, server-sent events, opened again when it drops); each `state`
 * message is the player's whole view of one match, and when it is one of the bot's matches
 * and lists legal moves the policy's pick is posted with `seq`, from the same thread. With
 * --match the thread reads the player's matches after each connection (which named ones are
 * theirs, which ended meanwhile); with --league the main thread re-reads the league every
 * few seconds for its matches. The policies are in policy.c and policies/, one file per game.
 */
#include "bot.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bot-policy.h"
#include "buf.h"

#define BOT_MAX_TOKENS 16
/* The most --match ids, and the most matches a player's table holds at once (a player's
 * stream carries at most 1,024). */
#define BOT_MAX_MATCHES 1024
#define BOT_MAX_CONNECT_FAILURES 30

struct bot_config {
    const char *url;
    const char *tokens[BOT_MAX_TOKENS];
    long long player_ids[BOT_MAX_TOKENS];
    int ntokens;
    long long matches[BOT_MAX_MATCHES]; /* --match */
    int nmatches;
    const char *policy;
    uint64_t seed;
    long delay_ms;
    long league;
    bool once;
    long idle_seconds;
};

/* One match on a player's stream: a --match id (until the player's matches say it is not
 * theirs), a match of the --league, or (with --league) a match of the player's that the
 * league has not listed yet, whose newest state is kept in case it does. A free slot has
 * match 0. Under bot_lock. */
struct seat {
    long long match;
    int seat;    /* the player's seat, -1 until known */
    bool wanted; /* the bot plays it */
    bool over;
    uint64_t rng;
    long long min_seq;   /* state messages older than our last accepted move are stale */
    long long acted_seq; /* the seq we last posted a move at */
    json_t *state;       /* the newest state not acted on yet, or NULL */
    long long due;       /* with --delay-ms: when its move is due (now_ms), or 0 */
};

/* One token: its thread, its stream, its matches. */
struct player {
    const struct bot_config *cfg;
    int token;
    long long id;
    pthread_t thread;
    CURLM *multi; /* the stream's; curl_multi_wakeup has the thread look at its table again */
    CURL *http;   /* the thread's requests: the moves, the reads of the player's matches */
    /* Stream parsing. */
    struct buf line; /* the line being read */
    char event[32];
    struct buf data; /* the message's data lines, joined by '\n' */
    /* Under bot_lock. */
    struct seat seats[BOT_MAX_MATCHES];
    int played;   /* seats played: wanted, the seat known */
    bool closing; /* no match will be added: the thread ends when its matches are over */
    bool rolled;  /* (--match) the player's matches were read once, or the thread ended */
    bool failed;
    bool done;
};

static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;
/* The players' tables and flags, and `claimed`. Taken before out_lock (say). */
static pthread_mutex_t bot_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t rolled_cond = PTHREAD_COND_INITIALIZER;
static struct player *players[BOT_MAX_TOKENS];
static int nplayers;
static bool claimed[BOT_MAX_MATCHES]; /* (--match) a player's seat in matches[i] is known */

static void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&out_lock);
    fputs("bot: ", stdout);
    vprintf(fmt, ap);
    fputc('\n', stdout);
    fflush(stdout);
    pthread_mutex_unlock(&out_lock);
    va_end(ap);
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* ---- HTTP ----------------------------------------------------------------------------------- */

/* One JSON request on handle `c` (reset first; its connection is reused). Returns the HTTP
 * status (0 when the service could not be reached) and the parsed answer in *out (owned by
 * the caller, NULL when not JSON). */
static long http_json(CURL *c, const struct bot_config *cfg, const char *method, const char *path,
                      const char *token, json_t *body, json_t **out)
{
    char url[1024], auth[600];
    snprintf(url, sizeof url, "%s%s", cfg->url, path);
    struct curl_slist *h = NULL;
    if (token) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
        h = curl_slist_append(h, auth);
    }
    char *text = NULL;
    if (body) {
        text = json_dumps(body, JSON_COMPACT);
        h = curl_slist_append(h, "Content-Type: application/json");
    }
    struct buf answer = BUF_INIT;
    long code = 0;
    if (c) {
        curl_easy_reset(c);
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
        if (text)
            curl_easy_setopt(c, CURLOPT_POSTFIELDS, text);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, buf_write);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &answer);
        curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        if (curl_easy_perform(c) == CURLE_OK)
            curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    }
    char *got = buf_finish(&answer, NULL);
    if (out)
        *out = got && *got ? json_loads(got, 0, NULL) : NULL;
    free(got);
    free(text);
    curl_slist_free_all(h);
    return code;
}

/* ---- A player's matches --------------------------------------------------------------------- */

/* The slot of `match` in p's table (match 0: a free one), or NULL (bot_lock held). */
static struct seat *seat_find(struct player *p, long long match)
{
    for (int i = 0; i < BOT_MAX_MATCHES; i++)
        if (p->seats[i].match == match)
            return &p->seats[i];
    return NULL;
}

/* A new slot for `match`, or NULL when the table is full (said). */
static struct seat *seat_add(struct player *p, long long match)
{
    struct seat *s = seat_find(p, 0);
    if (!s) {
        say("player %lld: more than %d matches at once", p->id, BOT_MAX_MATCHES);
        return NULL;
    }
    *s = (struct seat){.match = match, .seat = -1, .acted_seq = -1};
    return s;
}

/* The slot is free again (its held state dropped). */
static void seat_drop(struct seat *s)
{
    json_decref(s->state);
    *s = (struct seat){0};
}

/* The player's seat in wanted match `s` is known: it is played from now on, with its own
 * random stream. */
static void seat_known(struct player *p, struct seat *s, int seat)
{
    const struct bot_config *cfg = p->cfg;
    s->seat = seat;
    s->rng = cfg->seed ^ ((uint64_t)s->match * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)seat << 56);
    bot_random(&s->rng);
    p->played++;
    for (int i = 0; i < cfg->nmatches; i++)
        if (cfg->matches[i] == s->match)
            claimed[i] = true;
}

/* Match `s` is over (`status`, said once); its held state is dropped. */
static void seat_over(struct seat *s, const char *status)
{
    if (!s->over)
        say("match %lld seat %d: match %s", s->match, s->seat, status);
    s->over = true;
    json_decref(s->state);
    s->state = NULL;
    s->due = 0;
}

/* The player's matches the bot plays that are not over (bot_lock held). */
static int running(const struct player *p)
{
    int n = 0;
    for (int i = 0; i < BOT_MAX_MATCHES; i++)
        n += p->seats[i].wanted && !p->seats[i].over;
    return n;
}

static bool finished(struct player *p)
{
    pthread_mutex_lock(&bot_lock);
    bool f = p->closing && running(p) == 0;
    pthread_mutex_unlock(&bot_lock);
    return f;
}

/* The seat of player `id` in match `m` (a listing's match entry or a view), or -1. */
static int seat_of(json_t *m, long long id)
{
    size_t i;
    json_t *q;
    json_array_foreach(json_object_get(m, "players"), i, q) {
        if (json_integer_value(json_object_get(q, "id")) == id)
            return (int)json_integer_value(json_object_get(q, "seat"));
    }
    return -1;
}

/* What a read of named match `s` found: the player's seat (-1: none) and its status. */
static void seat_read(struct player *p, struct seat *s, int seat, const char *status)
{
    if (seat < 0) {
        if (s->seat < 0)
            seat_drop(s); /* not the player's */
        return;
    }
    if (s->seat < 0)
        seat_known(p, s, seat);
    if (!status || !strcmp(status, "active"))
        return;
    if (!strcmp(status, "finished")) {
        seat_over(s, status);
        return;
    }
    if (!s->over) /* pending, cancelled: no stream will bring it */
        say("match %lld seat %d: match %s; not played", s->match, s->seat, status);
    s->over = true;
    p->failed = true;
}

/* --match, after each connection of the stream: which of the named matches not over are the
 * player's, and which ended while the stream was away (the stream brings the active ones
 * only). One read of the player's matches (the newest 200); the view of each named match
 * older than those. False when the player's matches cannot be read. */
static bool roll_call(struct player *p)
{
    const struct bot_config *cfg = p->cfg;
    const char *token = cfg->tokens[p->token];
    json_t *list = NULL;
    long code = http_json(p->http, cfg, "GET", "/v1/players/me/matches", token, NULL, &list);
    if (code != 200) {
        say("player %lld: GET /v1/players/me/matches answered %ld", p->id, code);
        json_decref(list);
        return false;
    }
    bool more = json_is_true(json_object_get(list, "more"));
    long long older[BOT_MAX_MATCHES];
    int nolder = 0;
    pthread_mutex_lock(&bot_lock);
    for (int i = 0; i < BOT_MAX_MATCHES; i++) {
        struct seat *s = &p->seats[i];
        if (!s->wanted || s->over)
            continue;
        size_t k;
        json_t *m, *found = NULL;
        json_array_foreach(json_object_get(list, "matches"), k, m) {
            if (json_integer_value(json_object_get(m, "id")) == s->match)
                found = m;
        }
        if (found)
            seat_read(p, s, seat_of(found, p->id),
                      json_string_value(json_object_get(found, "status")));
        else if (more)
            older[nolder++] = s->match;
        else if (s->seat < 0)
            seat_drop(s);
    }
    pthread_mutex_unlock(&bot_lock);
    json_decref(list);
    for (int k = 0; k < nolder; k++) {
        char path[64];
        snprintf(path, sizeof path, "/v1/matches/%lld", older[k]);
        json_t *view = NULL;
        code = http_json(p->http, cfg, "GET", path, token, NULL, &view);
        json_t *you = json_object_get(view, "you");
        pthread_mutex_lock(&bot_lock);
        struct seat *s = seat_find(p, older[k]);
        if (s) /* (not readable: main says so once every player had their say) */
            seat_read(p, s, code == 200 && json_is_integer(you) ? (int)json_integer_value(you) : -1,
                      json_string_value(json_object_get(view, "status")));
        pthread_mutex_unlock(&bot_lock);
        json_decref(view);
    }
    return true;
}

/* ---- Playing -------------------------------------------------------------------------------- */

/* Posts move `pick` of `state` in `match`. Returns the seq after it (201), 0 when it was
 * refused, -1 when no answer came (then it may be posted again at the same seq: a move that
 * was taken makes that seq stale). */
static long long post_move(struct player *p, long long match, int seat, json_t *state, int pick)
{
    json_t *legal = json_object_get(state, "legal");
    long long seq = json_integer_value(json_object_get(state, "seq"));
    for (int attempt = 0; attempt < 2; attempt++) {
        const char *move = json_string_value(json_array_get(legal, (size_t)pick));
        char path[128];
        snprintf(path, sizeof path, "/v1/matches/%lld/moves", match);
        json_t *body = json_pack("{s:s, s:I}", "move", move, "seq", (json_int_t)seq);
        json_t *answer = NULL;
        long code =
            http_json(p->http, p->cfg, "POST", path, p->cfg->tokens[p->token], body, &answer);
        json_decref(body);
        if (code == 201) {
            long long after = json_integer_value(json_object_get(answer, "seq"));
            say("match %lld seat %d: seq %lld plays %s", match, seat, seq, move);
            json_decref(answer);
            return after;
        }
        const char *why = json_string_value(json_object_get(answer, "code"));
        say("match %lld seat %d: seq %lld %s refused (%ld %s)%s", match, seat, seq, move, code,
            why ? why : "", code == 409 ? "; waiting for the next state" : "");
        json_decref(answer);
        /* A 409 means the state moved on: the stream brings the next one. An illegal pick
         * (a policy bug) falls back to the first legal move once. */
        if (code != 422 || pick == 0)
            return code ? 0 : -1;
        pick = 0;
    }
    return 0;
}

/* Plays the held states of p's matches: a stale one, or one with nothing to play, is
 * dropped; a finished one ends its match. Returns the ms until the next move that
 * --delay-ms holds back is due, or -1. */
static long act(struct player *p)
{
    const struct bot_config *cfg = p->cfg;
    long next = -1;
    pthread_mutex_lock(&bot_lock);
    for (int i = 0; i < BOT_MAX_MATCHES; i++) {
        struct seat *s = &p->seats[i];
        json_t *state = s->state;
        if (!state || !s->wanted || s->seat < 0)
            continue;
        const char *status = json_string_value(json_object_get(state, "status"));
        if (s->over || !status || strcmp(status, "active") != 0) {
            seat_over(s, status ? status : "over");
            continue;
        }
        long long seq = json_integer_value(json_object_get(state, "seq"));
        if (seq < s->min_seq || seq == s->acted_seq ||
            !json_array_size(json_object_get(state, "legal"))) {
            json_decref(state);
            s->state = NULL;
            s->due = 0;
            continue;
        }
        if (cfg->delay_ms > 0) {
            long long now = now_ms();
            if (!s->due)
                s->due = now + cfg->delay_ms;
            if (now < s->due) {
                if (next < 0 || s->due - now < next)
                    next = (long)(s->due - now);
                continue;
            }
        }
        int pick = bot_choose(cfg->policy, state, &s->rng);
        long long match = s->match;
        int seat = s->seat;
        s->state = NULL;
        s->due = 0;
        s->acted_seq = seq;
        pthread_mutex_unlock(&bot_lock);
        long long after = post_move(p, match, seat, state, pick);
        json_decref(state);
        pthread_mutex_lock(&bot_lock);
        if (after > s->min_seq)
            s->min_seq = after;
        else if (after < 0 && s->acted_seq == seq)
            s->acted_seq = -1;
    }
    pthread_mutex_unlock(&bot_lock);
    return next;
}

/* A `state` message (owned): kept as its match's newest, for act. */
static void on_state(struct player *p, json_t *state)
{
    long long match = json_integer_value(json_object_get(state, "id"));
    json_t *you = json_object_get(state, "you");
    const char *status = json_string_value(json_object_get(state, "status"));
    bool active = status && !strcmp(status, "active");
    pthread_mutex_lock(&bot_lock);
    struct seat *s = match > 0 ? seat_find(p, match) : NULL;
    if (!s && p->cfg->league >= 0 && active)
        s = seat_add(p, match); /* a new match of the league's, perhaps: kept until it says */
    if (s && s->wanted && s->seat < 0 && json_is_integer(you))
        seat_known(p, s, (int)json_integer_value(you));
    if (s && !s->wanted && !active) {
        seat_drop(s);
    } else if (s) {
        json_decref(s->state);
        s->state = state;
        state = NULL;
    }
    pthread_mutex_unlock(&bot_lock);
    json_decref(state);
}

static void dispatch(struct player *p)
{
    char *data = buf_finish(&p->data, NULL);
    if (!strcmp(p->event, "state") && data) {
        json_t *state = json_loads(data, 0, NULL);
        if (state)
            on_state(p, state);
    }
    free(data);
    p->event[0] = '\0';
}

static void sse_line(struct player *p, char *line)
{
    if (!*line) {
        dispatch(p);
        return;
    }
    if (*line == ':')
        return; /* a comment: keep-alive */
    char *value = strchr(line, ':');
    if (value) {
        *value++ = '\0';
        if (*value == ' ')
            value++;
    } else {
        value = line + strlen(line);
    }
    if (!strcmp(line, "event")) {
        snprintf(p->event, sizeof p->event, "%s", value);
    } else if (!strcmp(line, "data")) {
        if (p->data.len)
            buf_puts(&p->data, "\n");
        buf_puts(&p->data, value);
    }
}

static size_t sse_write(char *c, size_t size, size_t n, void *ctx)
{
    struct player *p = ctx;
    size_t k = size * n;
    for (size_t i = 0; i < k; i++) {
        if (c[i] != '\n') {
            buf_put(&p->line, c + i, 1);
            continue;
        }
        if (p->line.failed)
            return 0; /* out of memory: this connection ends, and is made again */
        char empty[1] = "", *line = p->line.len ? p->line.p : empty;
        if (p->line.len && line[p->line.len - 1] == '\r')
            line[p->line.len - 1] = '\0';
        sse_line(p, line);
        p->line.len = 0; /* the next line reuses the allocation */
    }
    return k;
}

static void mark_rolled(struct player *p)
{
    pthread_mutex_lock(&bot_lock);
    p->rolled = true;
    pthread_cond_broadcast(&rolled_cond);
    pthread_mutex_unlock(&bot_lock);
}

/* One connection of p's stream, read until it ends or the player's matches are over,
 * playing as the states come. Returns the HTTP status (0: none, or the player's matches
 * could not be read); *rc is libcurl's outcome. */
static long read_stream(struct player *p, const char *url, struct curl_slist *headers, CURLcode *rc)
{
    CURL *c = curl_easy_init();
    *rc = CURLE_FAILED_INIT;
    if (!c)
        return 0;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sse_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, p);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
    /* keep-alive comments come every 15 s: a silent minute is a dead connection */
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
    buf_free(&p->line);
    buf_free(&p->data);
    p->event[0] = '\0';
    long code = 0;
    bool connected = false, ended = false;
    curl_multi_add_handle(p->multi, c);
    while (!ended) {
        int n;
        curl_multi_perform(p->multi, &n);
        CURLMsg *msg;
        while ((msg = curl_multi_info_read(p->multi, &n))) {
            if (msg->msg == CURLMSG_DONE) {
                *rc = msg->data.result;
                ended = true;
            }
        }
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
        if (code == 200 && !connected) {
            /* The stream is open (the service adds the matches that start from now on to
             * it before it answers): what it will not bring, the player's matches say. */
            connected = true;
            if (p->cfg->league < 0) {
                if (!roll_call(p)) {
                    code = 0;
                    break;
                }
                mark_rolled(p);
            }
        }
        long wait = act(p);
        if (finished(p))
            break;
        if (!ended)
            curl_multi_poll(p->multi, NULL, 0, wait < 0 || wait > 1000 ? 1000 : (int)wait, NULL);
    }
    curl_multi_remove_handle(p->multi, c);
    curl_easy_cleanup(c);
    return code;
}

static void *play_player(void *arg)
{
    struct player *p = arg;
    char url[1024], auth[600];
    snprintf(url, sizeof url, "%s/v1/players/me/events", p->cfg->url);
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", p->cfg->tokens[p->token]);
    struct curl_slist *h = curl_slist_append(NULL, auth);
    h = curl_slist_append(h, "Accept: text/event-stream");
    int failures = 0;
    for (int connection = 0; !finished(p); connection++) {
        say("player %lld: stream %s", p->id, connection ? "reconnects" : "connects");
        CURLcode rc;
        long code = read_stream(p, url, h, &rc);
        if (finished(p))
            break;
        if (code == 401 || code == 403 || code == 404) {
            say("player %lld: the stream answered %ld; giving up", p->id, code);
            pthread_mutex_lock(&bot_lock);
            p->failed = true;
            pthread_mutex_unlock(&bot_lock);
            break;
        }
        failures = code == 200 ? 0 : failures + 1;
        if (failures >= BOT_MAX_CONNECT_FAILURES) {
            say("player %lld: cannot reach the service (%s); giving up", p->id,
                curl_easy_strerror(rc));
            pthread_mutex_lock(&bot_lock);
            p->failed = true;
            pthread_mutex_unlock(&bot_lock);
            break;
        }
        /* (a wait that curl_multi_wakeup may cut short) */
        curl_multi_poll(p->multi, NULL, 0, failures ? (failures < 10 ? 200 * failures : 2000) : 100,
                        NULL);
    }
    curl_slist_free_all(h);
    buf_free(&p->line);
    buf_free(&p->data);
    pthread_mutex_lock(&bot_lock);
    p->done = true;
    p->rolled = true;
    pthread_cond_broadcast(&rolled_cond);
    pthread_mutex_unlock(&bot_lock);
    return NULL;
}

/* ---- The players ---------------------------------------------------------------------------- */

static void player_destroy(struct player *p)
{
    if (!p)
        return;
    for (int i = 0; i < BOT_MAX_MATCHES; i++)
        json_decref(p->seats[i].state);
    curl_multi_cleanup(p->multi);
    curl_easy_cleanup(p->http);
    free(p);
}

/* Starts the thread of token `token` (with --match, its table holds the named matches, until
 * the player's matches say which are theirs); false when it cannot start. */
static bool start_player(const struct bot_config *cfg, int token)
{
    struct player *p = calloc(1, sizeof *p);
    if (!p)
        return false;
    p->cfg = cfg;
    p->token = token;
    p->id = cfg->player_ids[token];
    p->multi = curl_multi_init();
    p->http = curl_easy_init();
    p->closing = cfg->league < 0;
    for (int i = 0; i < cfg->nmatches; i++) {
        if (seat_find(p, cfg->matches[i]))
            continue; /* (named twice) */
        struct seat *s = seat_add(p, cfg->matches[i]);
        if (s)
            s->wanted = true;
    }
    if (!p->multi || !p->http || pthread_create(&p->thread, NULL, play_player, p) != 0) {
        player_destroy(p);
        return false;
    }
    players[nplayers++] = p;
    return true;
}

/* Has p's thread look at its table now (a held state may be the bot's to play now, or the
 * thread may be done). */
static void wake(struct player *p)
{
    curl_multi_wakeup(p->multi);
}

/* The matches not over that the players still playing play. */
static int running_all(void)
{
    int n = 0;
    pthread_mutex_lock(&bot_lock);
    for (int i = 0; i < nplayers; i++)
        if (!players[i]->done)
            n += running(players[i]);
    pthread_mutex_unlock(&bot_lock);
    return n;
}

/* Match `match` of the league is player p's to play, at `seat`: 1 when it is new, 0 when it
 * was known, -1 when p's table is full (bot_lock held). */
static int want(struct player *p, long long match, int seat)
{
    struct seat *s = seat_find(p, match);
    if (s && s->wanted)
        return 0;
    if (!s && !(s = seat_add(p, match)))
        return -1;
    s->wanted = true;
    seat_known(p, s, seat);
    return 1;
}

/* Reads the league: its running matches in which our players sit are theirs to play (their
 * threads are woken, for a state of one of them may be waiting), its finished ones are over.
 * Returns the number of seats new to the bot, or -1 when the league cannot be read. */
static int scan_league(const struct bot_config *cfg, CURL *http)
{
    char path[64];
    snprintf(path, sizeof path, "/v1/leagues/%ld", cfg->league);
    json_t *league = NULL;
    long code = http_json(http, cfg, "GET", path, cfg->tokens[0], NULL, &league);
    if (code != 200) {
        say("GET %s answered %ld", path, code);
        json_decref(league);
        return -1;
    }
    int started = 0;
    bool woken[BOT_MAX_TOKENS] = {false};
    size_t i;
    json_t *m;
    pthread_mutex_lock(&bot_lock);
    json_array_foreach(json_object_get(league, "matches"), i, m) {
        const char *status = json_string_value(json_object_get(m, "status"));
        long long mid = json_integer_value(json_object_get(m, "id"));
        for (int t = 0; t < nplayers && started >= 0; t++) {
            struct player *p = players[t];
            int seat = seat_of(m, p->id);
            if (seat < 0)
                continue;
            if (status && !strcmp(status, "finished")) {
                struct seat *s = seat_find(p, mid);
                if (s && s->wanted)
                    seat_over(s, status);
            } else if (!status || !strcmp(status, "active")) { /* (not pending, cancelled) */
                int n = want(p, mid, seat);
                started = n < 0 ? -1 : started + n;
                woken[t] = woken[t] || n > 0;
            }
        }
    }
    pthread_mutex_unlock(&bot_lock);
    json_decref(league);
    for (int t = 0; t < nplayers; t++)
        if (woken[t])
            wake(players[t]);
    return started;
}

static void usage(FILE *out)
{
    fputs("usage: cardpost bot --url URL --token TOKEN [--token TOKEN ...]\n"
          "                    (--match ID [--match ID ...] | --league ID [--once] [--idle S])\n"
          "                    [--policy random|sensible] [--seed N] [--delay-ms N]\n"
          "  plays every seat the tokens hold in those matches (docs/bots.md)\n",
          out);
}

/* Reads the options into *cfg; false on bad usage (printed). */
static bool parse_args(int argc, char **argv, struct bot_config *cfg)
{
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--once")) {
            cfg->once = true;
            continue;
        }
        if (!v) {
            usage(stderr);
            return false;
        }
        i++;
        if (!strcmp(a, "--url"))
            cfg->url = v;
        else if (!strcmp(a, "--token") && cfg->ntokens < BOT_MAX_TOKENS)
            cfg->tokens[cfg->ntokens++] = v;
        else if (!strcmp(a, "--match") && cfg->nmatches < BOT_MAX_MATCHES)
            cfg->matches[cfg->nmatches++] = strtoll(v, NULL, 10);
        else if (!strcmp(a, "--league"))
            cfg->league = strtol(v, NULL, 10);
        else if (!strcmp(a, "--policy") && (!strcmp(v, "random") || !strcmp(v, "sensible")))
            cfg->policy = v;
        else if (!strcmp(a, "--seed"))
            cfg->seed = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--delay-ms"))
            cfg->delay_ms = strtol(v, NULL, 10);
        else if (!strcmp(a, "--idle"))
            cfg->idle_seconds = strtol(v, NULL, 10);
        else {
            usage(stderr);
            return false;
        }
    }
    if (!cfg->url || !cfg->ntokens || (cfg->nmatches > 0) == (cfg->league >= 0)) {
        usage(stderr);
        return false;
    }
    return true;
}

/* Learns the player id of every token (cfg->player_ids); false when one is refused. */
static bool find_players(struct bot_config *cfg, CURL *http)
{
    for (int t = 0; t < cfg->ntokens; t++) {
        json_t *me = NULL;
        long code = http_json(http, cfg, "GET", "/v1/players/me", cfg->tokens[t], NULL, &me);
        if (code != 200) {
            say("token %d: GET /v1/players/me answered %ld", t + 1, code);
            json_decref(me);
            return false;
        }
        cfg->player_ids[t] = json_integer_value(json_object_get(me, "id"));
        json_decref(me);
    }
    return true;
}

/* --match, once every player read their matches: a named match in which none of them found
 * a seat is read, to tell one that cannot be read (false) from one without our players. */
static bool check_unclaimed(const struct bot_config *cfg, CURL *http)
{
    pthread_mutex_lock(&bot_lock);
    for (int i = 0; i < nplayers; i++)
        while (!players[i]->rolled)
            pthread_cond_wait(&rolled_cond, &bot_lock);
    bool seen[BOT_MAX_MATCHES];
    memcpy(seen, claimed, sizeof seen);
    pthread_mutex_unlock(&bot_lock);
    bool ok = true;
    for (int i = 0; i < cfg->nmatches; i++) {
        if (seen[i])
            continue;
        char path[64];
        snprintf(path, sizeof path, "/v1/matches/%lld", cfg->matches[i]);
        long code = http_json(http, cfg, "GET", path, cfg->tokens[0], NULL, NULL);
        if (code != 200) {
            say("GET %s answered %ld", path, code);
            ok = false;
        }
    }
    return ok;
}

/* --league: plays the league's matches as they come, until ours are over and none came for
 * --idle seconds (with --once, until the ones we know are over). False when the league
 * cannot be read. */
static bool follow_league(const struct bot_config *cfg, CURL *http)
{
    time_t last_new = time(NULL);
    if (scan_league(cfg, http) < 0)
        return false;
    for (;;) {
        for (int k = 0; k < 30 && running_all() > 0; k++)
            sleep_ms(100); /* re-read the league every 3 s, or when a match ends */
        int n = running_all();
        if (n == 0 && cfg->once)
            return true;
        int started = scan_league(cfg, http);
        if (started < 0)
            return false;
        if (started > 0)
            last_new = time(NULL);
        else if (n == 0 && time(NULL) - last_new >= cfg->idle_seconds)
            return true;
        if (n == 0 && started == 0)
            sleep_ms(1000);
    }
}

int bot_main(int argc, char **argv)
{
    static struct bot_config cfg = {.policy = "random", .idle_seconds = 20, .league = -1};
    if (!parse_args(argc, argv, &cfg))
        return 2;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    CURL *http = curl_easy_init();
    if (!find_players(&cfg, http)) {
        curl_easy_cleanup(http);
        curl_global_cleanup();
        return 1;
    }
    int status = 0;
    for (int t = 0; t < cfg.ntokens; t++) {
        if (!start_player(&cfg, t)) {
            say("token %d: cannot start its thread", t + 1);
            status = 1;
        }
    }
    if (cfg.league < 0 && !check_unclaimed(&cfg, http))
        status = 1;
    if (cfg.league >= 0 && !follow_league(&cfg, http))
        status = 1;
    /* No match comes any more: each thread ends when its matches are over. */
    pthread_mutex_lock(&bot_lock);
    for (int i = 0; i < nplayers; i++)
        players[i]->closing = true;
    pthread_mutex_unlock(&bot_lock);
    int played = 0;
    for (int i = 0; i < nplayers; i++) {
        wake(players[i]);
        pthread_join(players[i]->thread, NULL);
        if (players[i]->failed)
            status = 1;
        played += players[i]->played;
        player_destroy(players[i]);
    }
    say("done: %d seat(s) played", played);
    curl_easy_cleanup(http);
    curl_global_cleanup();
    return status;
}
