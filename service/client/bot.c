/* bot.c - `cardpost bot`: plays seats of cardpostd matches through the REST API (libcurl).
 * One thread per (match, seat) reads the match's event stream (server-sent events, resumed
 * with Last-Event-ID when it drops); each `state` message is the seat's whole view, and when
 * it lists legal moves the policy's pick is posted with `seq`. With --league the main thread
 * re-reads the league every few seconds for new matches. The policies are at the end.
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

#define BOT_MAX_TOKENS 16
#define BOT_MAX_JOBS 1024
#define BOT_MAX_CONNECT_FAILURES 30

struct bot_config {
    const char *url;
    const char *tokens[BOT_MAX_TOKENS];
    long long player_ids[BOT_MAX_TOKENS];
    int ntokens;
    const char *policy;
    uint64_t seed;
    long delay_ms;
    long league;
    bool once;
    long idle_seconds;
};

/* One seat of one match, played by its own thread. */
struct job {
    const struct bot_config *cfg;
    long long match;
    int token;
    int seat;
    pthread_t thread;
    uint64_t rng;
    /* Stream parsing. */
    char *line;
    size_t line_len, line_cap;
    char event[32];
    char *data;
    size_t data_len;
    long long id, last_id;
    /* Playing. */
    long long min_seq;   /* state messages older than our last accepted move are stale */
    long long acted_seq; /* the seq we last posted a move at */
    bool over;
    bool failed;
    bool done; /* under jobs_lock */
};

static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t jobs_lock = PTHREAD_MUTEX_INITIALIZER;

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

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* ---- HTTP -------------------------------------------------------------------------------- */

struct buf {
    char *p;
    size_t len;
};

static size_t buf_write(char *p, size_t size, size_t n, void *ctx)
{
    struct buf *b = ctx;
    size_t k = size * n;
    char *grown = realloc(b->p, b->len + k + 1);
    if (!grown)
        return 0;
    memcpy(grown + b->len, p, k);
    b->p = grown;
    b->len += k;
    b->p[b->len] = '\0';
    return k;
}

/* One JSON request. Returns the HTTP status (0 when the service could not be reached) and
 * the parsed answer in *out (owned by the caller, NULL when not JSON). */
static long http_json(const struct bot_config *cfg, const char *method, const char *path,
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
    struct buf answer = {0};
    long code = 0;
    CURL *c = curl_easy_init();
    if (c) {
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
        curl_easy_cleanup(c);
    }
    if (out)
        *out = answer.p ? json_loads(answer.p, 0, NULL) : NULL;
    free(answer.p);
    free(text);
    curl_slist_free_all(h);
    return code;
}

/* ---- Playing one seat ---------------------------------------------------------------------- */

static void post_move(struct job *j, json_t *state, int pick)
{
    json_t *legal = json_object_get(state, "legal");
    long long seq = json_integer_value(json_object_get(state, "seq"));
    for (int attempt = 0; attempt < 2; attempt++) {
        const char *move = json_string_value(json_array_get(legal, (size_t)pick));
        char path[128];
        snprintf(path, sizeof path, "/v1/matches/%lld/moves", j->match);
        json_t *body = json_pack("{s:s, s:I}", "move", move, "seq", (json_int_t)seq);
        json_t *answer = NULL;
        long code = http_json(j->cfg, "POST", path, j->cfg->tokens[j->token], body, &answer);
        json_decref(body);
        if (code == 201) {
            j->min_seq = json_integer_value(json_object_get(answer, "seq"));
            say("match %lld seat %d: seq %lld plays %s", j->match, j->seat, seq, move);
            json_decref(answer);
            return;
        }
        const char *why = json_string_value(json_object_get(answer, "code"));
        say("match %lld seat %d: seq %lld %s refused (%ld %s)%s", j->match, j->seat, seq, move,
            code, why ? why : "", code == 409 ? "; waiting for the next state" : "");
        json_decref(answer);
        /* A 409 means the state moved on: the stream brings the next one. An illegal pick
         * (a policy bug) falls back to the first legal move once. */
        if (code != 422 || pick == 0)
            return;
        pick = 0;
    }
}

static void on_state(struct job *j, json_t *state)
{
    const char *status = json_string_value(json_object_get(state, "status"));
    json_t *you = json_object_get(state, "you");
    if (json_is_integer(you))
        j->seat = (int)json_integer_value(you);
    if (status && strcmp(status, "active") != 0) {
        if (!j->over)
            say("match %lld seat %d: match %s", j->match, j->seat, status);
        j->over = true;
        return;
    }
    long long seq = json_integer_value(json_object_get(state, "seq"));
    if (seq < j->min_seq || seq == j->acted_seq)
        return;
    int pick = bot_choose(j->cfg->policy, state, &j->rng);
    if (pick < 0)
        return;
    if (j->cfg->delay_ms > 0)
        sleep_ms(j->cfg->delay_ms);
    j->acted_seq = seq;
    post_move(j, state, pick);
}

static void dispatch(struct job *j)
{
    if (j->id >= 0)
        j->last_id = j->id;
    if (!strcmp(j->event, "state") && j->data) {
        json_t *state = json_loads(j->data, 0, NULL);
        if (state)
            on_state(j, state);
        json_decref(state);
    }
    free(j->data);
    j->data = NULL;
    j->data_len = 0;
    j->event[0] = '\0';
    j->id = -1;
}

static void sse_line(struct job *j, char *line)
{
    if (!*line) {
        dispatch(j);
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
        snprintf(j->event, sizeof j->event, "%s", value);
    } else if (!strcmp(line, "id")) {
        j->id = strtoll(value, NULL, 10);
    } else if (!strcmp(line, "data")) {
        size_t k = strlen(value);
        char *grown = realloc(j->data, j->data_len + k + 2);
        if (!grown)
            return;
        j->data = grown;
        if (j->data_len)
            j->data[j->data_len++] = '\n';
        memcpy(j->data + j->data_len, value, k + 1);
        j->data_len += k;
    }
}

static size_t sse_write(char *p, size_t size, size_t n, void *ctx)
{
    struct job *j = ctx;
    size_t k = size * n;
    for (size_t i = 0; i < k; i++) {
        if (p[i] == '\n') {
            if (j->line_len && j->line[j->line_len - 1] == '\r')
                j->line_len--;
            j->line[j->line_len] = '\0';
            sse_line(j, j->line);
            j->line_len = 0;
            if (j->over)
                return 0; /* the match is over: stop reading */
            continue;
        }
        if (j->line_len + 2 > j->line_cap) {
            size_t cap = j->line_cap ? 2 * j->line_cap : 4096;
            char *grown = realloc(j->line, cap);
            if (!grown)
                return 0;
            j->line = grown;
            j->line_cap = cap;
        }
        j->line[j->line_len++] = p[i];
    }
    return k;
}

static void *play_seat(void *arg)
{
    struct job *j = arg;
    char url[1024], auth[600], last[64];
    snprintf(url, sizeof url, "%s/v1/matches/%lld/events", j->cfg->url, j->match);
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", j->cfg->tokens[j->token]);
    int failures = 0;
    while (!j->over) {
        struct curl_slist *h = curl_slist_append(NULL, auth);
        h = curl_slist_append(h, "Accept: text/event-stream");
        if (j->last_id >= 0) {
            snprintf(last, sizeof last, "Last-Event-ID: %lld", j->last_id);
            h = curl_slist_append(h, last);
        }
        say("match %lld seat %d: stream %s (Last-Event-ID %lld)", j->match, j->seat,
            failures || j->last_id >= 0 ? "reconnects" : "connects", j->last_id);
        j->line_len = 0;
        j->id = -1;
        CURL *c = curl_easy_init();
        long code = 0;
        CURLcode rc = CURLE_FAILED_INIT;
        if (c) {
            curl_easy_setopt(c, CURLOPT_URL, url);
            curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
            curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sse_write);
            curl_easy_setopt(c, CURLOPT_WRITEDATA, j);
            curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
            curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
            /* keep-alive comments come every 15 s: a silent minute is a dead connection */
            curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
            curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
            rc = curl_easy_perform(c);
            curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
            curl_easy_cleanup(c);
        }
        curl_slist_free_all(h);
        if (j->over)
            break;
        if (code == 401 || code == 403 || code == 404) {
            say("match %lld seat %d: the stream answered %ld; giving up", j->match, j->seat,
                code);
            j->failed = true;
            break;
        }
        failures = code == 200 ? 0 : failures + 1;
        if (failures >= BOT_MAX_CONNECT_FAILURES) {
            say("match %lld seat %d: cannot reach the service (%s); giving up", j->match,
                j->seat, curl_easy_strerror(rc));
            j->failed = true;
            break;
        }
        sleep_ms(failures ? (failures < 10 ? 200L * failures : 2000L) : 100L);
    }
    free(j->line);
    free(j->data);
    j->line = j->data = NULL;
    pthread_mutex_lock(&jobs_lock);
    j->done = true;
    pthread_mutex_unlock(&jobs_lock);
    return NULL;
}

/* ---- The jobs -------------------------------------------------------------------------------- */

static struct job *jobs[BOT_MAX_JOBS];
static int njobs;

static bool have_job(long long match, int token)
{
    for (int i = 0; i < njobs; i++)
        if (jobs[i]->match == match && jobs[i]->token == token)
            return true;
    return false;
}

static bool start_job(const struct bot_config *cfg, long long match, int token, int seat)
{
    if (have_job(match, token))
        return true;
    if (njobs == BOT_MAX_JOBS) {
        say("too many matches (%d)", BOT_MAX_JOBS);
        return false;
    }
    struct job *j = calloc(1, sizeof *j);
    if (!j)
        return false;
    j->cfg = cfg;
    j->match = match;
    j->token = token;
    j->seat = seat;
    j->last_id = -1;
    j->id = -1;
    j->min_seq = 0;
    j->acted_seq = -1;
    j->rng = cfg->seed ^ ((uint64_t)match * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)seat << 56);
    splitmix(&j->rng);
    if (pthread_create(&j->thread, NULL, play_seat, j) != 0) {
        free(j);
        return false;
    }
    jobs[njobs++] = j;
    return true;
}

static int running_jobs(void)
{
    int n = 0;
    pthread_mutex_lock(&jobs_lock);
    for (int i = 0; i < njobs; i++)
        n += !jobs[i]->done;
    pthread_mutex_unlock(&jobs_lock);
    return n;
}

/* The seat of player `token` in match `m` (a league's match entry or a view), or -1. */
static int seat_of(const struct bot_config *cfg, json_t *m, int token)
{
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(m, "players"), i, p) {
        if (json_integer_value(json_object_get(p, "id")) == cfg->player_ids[token])
            return (int)json_integer_value(json_object_get(p, "seat"));
    }
    return -1;
}

/* Reads the league and starts a job for every running match of ours not yet played.
 * Returns the number of jobs started, or -1 when the league cannot be read. */
static int scan_league(const struct bot_config *cfg)
{
    char path[64];
    snprintf(path, sizeof path, "/v1/leagues/%ld", cfg->league);
    json_t *league = NULL;
    long code = http_json(cfg, "GET", path, cfg->tokens[0], NULL, &league);
    if (code != 200) {
        say("GET %s answered %ld", path, code);
        json_decref(league);
        return -1;
    }
    int started = 0;
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(league, "matches"), i, m) {
        const char *status = json_string_value(json_object_get(m, "status"));
        if (status && strcmp(status, "active") != 0) /* finished, or not started */
            continue;
        long long mid = json_integer_value(json_object_get(m, "id"));
        for (int t = 0; t < cfg->ntokens; t++) {
            int seat = seat_of(cfg, m, t);
            if (seat >= 0 && !have_job(mid, t)) {
                if (!start_job(cfg, mid, t, seat)) {
                    json_decref(league);
                    return -1;
                }
                started++;
            }
        }
    }
    json_decref(league);
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

int bot_main(int argc, char **argv)
{
    static struct bot_config cfg = {.policy = "random", .idle_seconds = 20, .league = -1};
    long long matches[BOT_MAX_JOBS];
    int nmatches = 0;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--once")) {
            cfg.once = true;
            continue;
        }
        if (!v) {
            usage(stderr);
            return 2;
        }
        i++;
        if (!strcmp(a, "--url"))
            cfg.url = v;
        else if (!strcmp(a, "--token") && cfg.ntokens < BOT_MAX_TOKENS)
            cfg.tokens[cfg.ntokens++] = v;
        else if (!strcmp(a, "--match") && nmatches < BOT_MAX_JOBS)
            matches[nmatches++] = strtoll(v, NULL, 10);
        else if (!strcmp(a, "--league"))
            cfg.league = strtol(v, NULL, 10);
        else if (!strcmp(a, "--policy") && (!strcmp(v, "random") || !strcmp(v, "sensible")))
            cfg.policy = v;
        else if (!strcmp(a, "--seed"))
            cfg.seed = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--delay-ms"))
            cfg.delay_ms = strtol(v, NULL, 10);
        else if (!strcmp(a, "--idle"))
            cfg.idle_seconds = strtol(v, NULL, 10);
        else {
            usage(stderr);
            return 2;
        }
    }
    if (!cfg.url || !cfg.ntokens || (nmatches > 0) == (cfg.league >= 0)) {
        usage(stderr);
        return 2;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int status = 0;
    for (int t = 0; t < cfg.ntokens; t++) {
        json_t *me = NULL;
        long code = http_json(&cfg, "GET", "/v1/players/me", cfg.tokens[t], NULL, &me);
        if (code != 200) {
            say("token %d: GET /v1/players/me answered %ld", t + 1, code);
            json_decref(me);
            curl_global_cleanup();
            return 1;
        }
        cfg.player_ids[t] = json_integer_value(json_object_get(me, "id"));
        json_decref(me);
    }
    for (int i = 0; i < nmatches; i++) {
        char path[64];
        snprintf(path, sizeof path, "/v1/matches/%lld", matches[i]);
        json_t *view = NULL;
        long code = http_json(&cfg, "GET", path, cfg.tokens[0], NULL, &view);
        if (code != 200) {
            say("GET %s answered %ld", path, code);
            status = 1;
        }
        for (int t = 0; code == 200 && t < cfg.ntokens; t++) {
            int seat = seat_of(&cfg, view, t);
            if (seat >= 0 && !start_job(&cfg, matches[i], t, seat))
                status = 1;
        }
        json_decref(view);
    }
    if (cfg.league >= 0) {
        time_t last_new = time(NULL);
        if (scan_league(&cfg) < 0)
            status = 1;
        while (status == 0) {
            for (int k = 0; k < 30 && running_jobs() > 0; k++)
                sleep_ms(100); /* re-read the league every 3 s, or when a match ends */
            int n = running_jobs();
            if (n == 0 && cfg.once)
                break;
            int started = scan_league(&cfg);
            if (started < 0) {
                status = 1;
                break;
            }
            if (started > 0)
                last_new = time(NULL);
            else if (n == 0 && time(NULL) - last_new >= cfg.idle_seconds)
                break;
            if (n == 0 && started == 0)
                sleep_ms(1000);
        }
    }
    for (int i = 0; i < njobs; i++) {
        pthread_join(jobs[i]->thread, NULL);
        if (jobs[i]->failed)
            status = 1;
        free(jobs[i]);
    }
    say("done: %d seat(s) played", njobs);
    curl_global_cleanup();
    return status;
}

/* ---- Policies ---------------------------------------------------------------------------------
 * Cards are 0..51 = suit*13 + rank (rank 0 = '2' .. 12 = 'A'; suits C D H S). Each policy
 * reads the view and returns an index into `legal`; -1 means "cannot decide" and the first
 * legal move is played. */

static int card_parse(const char *s)
{
    static const char ranks[] = "23456789TJQKA", suits[] = "CDHS";
    if (!s || !s[0] || !s[1] || s[2])
        return -1;
    const char *r = strchr(ranks, s[0]), *u = strchr(suits, s[1]);
    return r && u ? (int)(u - suits) * 13 + (int)(r - ranks) : -1;
}

#define RANK(c) ((c) % 13)
#define SUIT(c) ((c) / 13)

/* The card of a legal move "verb C", or -1. */
static int move_card(json_t *legal, size_t i)
{
    const char *m = json_string_value(json_array_get(legal, i));
    const char *sp = m ? strchr(m, ' ') : NULL;
    return sp ? card_parse(sp + 1) : -1;
}

/* The index of the legal move equal to `text`, or -1. */
static int find_move(json_t *legal, const char *text)
{
    size_t i;
    json_t *m;
    json_array_foreach(legal, i, m) {
        if (!strcmp(json_string_value(m), text))
            return (int)i;
    }
    return -1;
}

/* Cards of a JSON array of card strings, as a mask. */
static uint64_t card_mask(json_t *arr)
{
    uint64_t mask = 0;
    size_t i;
    json_t *c;
    json_array_foreach(arr, i, c) {
        int k = card_parse(json_string_value(c));
        if (k >= 0)
            mask |= 1ull << k;
    }
    return mask;
}

/* "verb A B C" with the cards of `mask` in deck order. */
static void format_cards(char *out, size_t size, const char *verb, uint64_t mask)
{
    static const char ranks[] = "23456789TJQKA", suits[] = "CDHS";
    size_t n = (size_t)snprintf(out, size, "%s", verb);
    for (int c = 0; c < 52 && n + 4 < size; c++)
        if (mask & (1ull << c))
            n += (size_t)snprintf(out + n, size - n, " %c%c", ranks[RANK(c)], suits[SUIT(c)]);
}

/* The legal "verb C" move whose card has the largest score(c, ctx) (first on ties), among
 * those with a score >= 0; -1 when none. */
static int best_card(json_t *legal, int (*score)(int c, const void *ctx), const void *ctx)
{
    int best = -1, best_score = -1;
    for (size_t i = 0; i < json_array_size(legal); i++) {
        int c = move_card(legal, i);
        if (c < 0)
            continue;
        int s = score(c, ctx);
        if (s > best_score) {
            best_score = s;
            best = (int)i;
        }
    }
    return best;
}

static int score_low(int c, const void *ctx)
{
    (void)ctx;
    return 12 - RANK(c);
}

/* ---- Hearts: pass the dangerous cards; duck under the trick; dump the queen and hearts. */

static int hearts_danger(int c)
{
    if (c == 3 * 13 + 10)
        return 1000; /* QS */
    if (SUIT(c) == 3 && RANK(c) > 10)
        return 900 + RANK(c); /* KS, AS: they catch the queen */
    if (SUIT(c) == 2)
        return 500 + RANK(c);
    return RANK(c);
}

struct trick_ctx {
    int led;  /* suit led */
    int high; /* highest rank of the led suit so far */
};

static int hearts_follow(int c, const void *ctx)
{
    const struct trick_ctx *t = ctx;
    if (SUIT(c) != t->led)
        return -1;
    return RANK(c) < t->high ? 100 + RANK(c) : 12 - RANK(c); /* highest loser, else lowest */
}

static int hearts_discard(int c, const void *ctx)
{
    (void)ctx;
    return hearts_danger(c);
}

static int hearts(json_t *state, json_t *view, json_t *legal)
{
    const char *phase = json_string_value(json_object_get(view, "phase"));
    if (phase && !strcmp(phase, "pass")) {
        int you = (int)json_integer_value(json_object_get(state, "you"));
        json_t *hand = json_object_get(json_array_get(json_object_get(view, "hands"),
                                                      (size_t)you), "cards");
        uint64_t cards = card_mask(hand), pass = 0;
        for (int k = 0; k < 3; k++) {
            int best = -1;
            for (int c = 0; c < 52; c++)
                if ((cards & ~pass & (1ull << c)) &&
                    (best < 0 || hearts_danger(c) > hearts_danger(best)))
                    best = c;
            if (best >= 0)
                pass |= 1ull << best;
        }
        char text[64];
        format_cards(text, sizeof text, "pass", pass);
        return find_move(legal, text);
    }
    if (!phase || strcmp(phase, "play"))
        return -1;
    json_t *tricks = json_object_get(view, "tricks");
    json_t *last = json_array_get(tricks, json_array_size(tricks) - 1);
    json_t *cards = json_object_get(last, "cards");
    if (!last || json_is_integer(json_object_get(last, "winner")) || !json_array_size(cards))
        return best_card(legal, score_low, NULL); /* leading: the lowest card */
    struct trick_ctx t = {card_parse(json_string_value(json_array_get(cards, 0))) / 13, -1};
    size_t i;
    json_t *cj;
    json_array_foreach(cards, i, cj) {
        int c = card_parse(json_string_value(cj));
        if (c >= 0 && SUIT(c) == t.led && RANK(c) > t.high)
            t.high = RANK(c);
    }
    int pick = best_card(legal, hearts_follow, &t);
    return pick >= 0 ? pick : best_card(legal, hearts_discard, NULL);
}

/* ---- Horse Thief: stay with two trumps or a bower, discard non-trumps, win cheaply. */

struct ht_ctx {
    int trump;
    int led; /* effective suit led, -1 when leading */
    int beat; /* power to beat */
};

static int ht_suit(int c, int trump)
{
    return RANK(c) == 9 && SUIT(c) == 3 - trump ? trump : SUIT(c); /* the left bower */
}

static int ht_power(int c, int trump, int led)
{
    if (ht_suit(c, trump) == trump)
        return 100 + (RANK(c) == 9 ? (SUIT(c) == trump ? 20 : 19) : RANK(c));
    return ht_suit(c, trump) == led ? RANK(c) : -1;
}

static int ht_play(int c, const void *ctx)
{
    const struct ht_ctx *t = ctx;
    int p = ht_power(c, t->trump, t->led < 0 ? ht_suit(c, t->trump) : t->led);
    if (t->led < 0)
        return p; /* leading: the strongest card */
    if (p > t->beat)
        return 10000 - p; /* the lowest winning card */
    return 5000 - ((p + 1) * 13 + RANK(c)); /* else the weakest */
}

static int horse_thief(json_t *state, json_t *view, json_t *legal)
{
    const char *phase = json_string_value(json_object_get(view, "phase"));
    const char *ts = json_string_value(json_object_get(view, "trump"));
    if (!phase || !ts || !strchr("CDHS", ts[0]) || !ts[0])
        return -1;
    int trump = (int)(strchr("CDHS", ts[0]) - "CDHS");
    int you = (int)json_integer_value(json_object_get(state, "you"));
    json_t *me = json_array_get(json_object_get(view, "seats"), (size_t)you);
    uint64_t hand = card_mask(json_object_get(me, "cards"));
    if (!strcmp(phase, "stay")) {
        int trumps = 0;
        bool bower = false;
        for (int c = 0; c < 52; c++)
            if ((hand & (1ull << c)) && ht_suit(c, trump) == trump) {
                trumps++;
                bower |= RANK(c) == 9;
            }
        return find_move(legal, trumps >= 2 || bower ? "stay" : "drop");
    }
    if (!strcmp(phase, "discard")) {
        int limit = (int)json_integer_value(json_object_get(view, "draw_limit"));
        uint64_t out = 0;
        for (int rank = 0, n = 0; rank < 12 && n < limit; rank++) /* aces are kept */
            for (int suit = 0; suit < 4 && n < limit; suit++) {
                int c = suit * 13 + rank;
                if ((hand & (1ull << c)) && ht_suit(c, trump) != trump) {
                    out |= 1ull << c;
                    n++;
                }
            }
        char text[64];
        format_cards(text, sizeof text, "discard", out);
        return find_move(legal, text);
    }
    if (strcmp(phase, "play"))
        return -1;
    json_t *tricks = json_object_get(view, "tricks");
    json_t *last = json_array_get(tricks, json_array_size(tricks) - 1);
    json_t *plays = json_object_get(last, "plays");
    struct ht_ctx t = {trump, -1, -1};
    if (last && !json_is_integer(json_object_get(last, "winner")) && json_array_size(plays)) {
        int first = card_parse(json_string_value(
            json_object_get(json_array_get(plays, 0), "card")));
        t.led = first >= 0 ? ht_suit(first, trump) : -1;
        size_t i;
        json_t *p;
        json_array_foreach(plays, i, p) {
            int c = card_parse(json_string_value(json_object_get(p, "card")));
            if (c >= 0 && ht_power(c, trump, t.led) > t.beat)
                t.beat = ht_power(c, trump, t.led);
        }
    }
    return best_card(legal, ht_play, &t);
}

/* ---- Snag: play for the suit you are longest in. */

struct snag_ctx {
    int suit_score[4];
    int long_suit;
    bool contest; /* the trick holds a card of the long suit */
};

static int snag_take(int c, const void *ctx)
{
    const struct snag_ctx *s = ctx;
    return s->suit_score[SUIT(c)] * 16 + RANK(c);
}

static int snag_lead(int c, const void *ctx)
{
    const struct snag_ctx *s = ctx;
    return (SUIT(c) == s->long_suit ? 100 : 0) + RANK(c);
}

static int snag_play(int c, const void *ctx)
{
    const struct snag_ctx *s = ctx;
    return s->contest ? RANK(c) : 12 - RANK(c);
}

static int snag(json_t *state, json_t *view, json_t *legal)
{
    const char *phase = json_string_value(json_object_get(view, "phase"));
    int you = (int)json_integer_value(json_object_get(state, "you"));
    if (!phase)
        return -1;
    struct snag_ctx s = {{0}, 0, false};
    uint64_t taken = card_mask(json_array_get(json_object_get(view, "taken"), (size_t)you));
    uint64_t hand = card_mask(json_object_get(
        json_array_get(json_object_get(view, "hands"), (size_t)you), "cards"));
    for (int c = 0; c < 52; c++) {
        s.suit_score[SUIT(c)] += (taken & (1ull << c)) ? 4 : 0;
        s.suit_score[SUIT(c)] += (hand & (1ull << c)) ? 1 : 0;
    }
    for (int u = 1; u < 4; u++)
        if (s.suit_score[u] > s.suit_score[s.long_suit])
            s.long_suit = u;
    if (!strcmp(phase, "take"))
        return best_card(legal, snag_take, &s);
    if (!strcmp(phase, "lead"))
        return best_card(legal, snag_lead, &s);
    if (strcmp(phase, "play"))
        return -1;
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(json_object_get(view, "trick"), "cards"), i, p) {
        int c = card_parse(json_string_value(json_object_get(p, "card")));
        s.contest |= c >= 0 && SUIT(c) == s.long_suit;
    }
    return best_card(legal, snag_play, &s);
}

/* ---- Speed: play, else flip, else move to an empty column, else ready. */

static int speed(json_t *legal)
{
    static const char *const order[] = {"play ", "flip ", "move ", "ready"};
    for (size_t k = 0; k < 4; k++)
        for (size_t i = 0; i < json_array_size(legal); i++)
            if (!strncmp(json_string_value(json_array_get(legal, i)), order[k],
                         strlen(order[k])))
                return (int)i;
    return -1;
}

/* ---- Horseshoe: make pairs when you can, else win with the lowest winning card. */

struct hs_ctx {
    uint64_t avail;
    int pair_rank; /* a rank to pair with, or -1 */
    int led;       /* card 1's suit, -1 when leading */
    int high;      /* the highest rank of card 1's suit on the table */
    bool pair_ahead; /* card 2: prefer a card that another available card pairs */
};

static bool hs_has_rank(uint64_t avail, int rank, int except)
{
    for (int u = 0; u < 4; u++)
        if (u * 13 + rank != except && (avail & (1ull << (u * 13 + rank))))
            return true;
    return false;
}

static int hs_play(int c, const void *ctx)
{
    const struct hs_ctx *h = ctx;
    if (h->led < 0)
        return (hs_has_rank(h->avail, RANK(c), c) ? 100 : 0) + RANK(c); /* lead */
    if (RANK(c) == h->pair_rank)
        return 300;
    if (h->pair_ahead && hs_has_rank(h->avail, RANK(c), c))
        return 200 + RANK(c);
    if (SUIT(c) == h->led && RANK(c) > h->high)
        return 100 + 12 - RANK(c); /* the lowest winning card */
    return 12 - RANK(c);
}

static int horseshoe(json_t *state, json_t *view, json_t *legal)
{
    int you = (int)json_integer_value(json_object_get(state, "you"));
    struct hs_ctx h = {0, -1, -1, -1, false};
    h.avail = card_mask(json_object_get(
        json_array_get(json_object_get(view, "hands"), (size_t)you), "cards"));
    size_t i;
    json_t *col;
    json_array_foreach(json_object_get(json_array_get(json_object_get(view, "boards"),
                                                      (size_t)you), "columns"), i, col) {
        int c = card_parse(json_string_value(json_object_get(col, "up")));
        if (c >= 0)
            h.avail |= 1ull << c;
    }
    json_t *cards = json_object_get(json_object_get(view, "trick"), "cards");
    int played[4], n = 0;
    json_t *p;
    json_array_foreach(cards, i, p) {
        if (n < 4)
            played[n++] = card_parse(json_string_value(json_object_get(p, "card")));
    }
    for (int k = 0; k < n; k++)
        if (played[k] < 0)
            return -1;
    if (n > 0) {
        h.led = SUIT(played[0]);
        for (int k = 0; k < n; k++)
            if (SUIT(played[k]) == h.led && RANK(played[k]) > h.high)
                h.high = RANK(played[k]);
    }
    if (n == 1)
        h.pair_ahead = true;            /* card 2: keep a pair for card 3 */
    if (n == 2)
        h.pair_rank = RANK(played[1]); /* card 3 pairs card 2 */
    if (n == 3)
        h.pair_rank = RANK(played[0]); /* card 4 pairs card 1 */
    return best_card(legal, hs_play, &h);
}

int bot_choose(const char *policy, json_t *state, uint64_t *rng)
{
    json_t *legal = json_object_get(state, "legal");
    size_t n = json_array_size(legal);
    if (!n)
        return -1;
    if (strcmp(policy, "sensible") != 0)
        return (int)(splitmix(rng) % n);
    const char *game = json_string_value(json_object_get(state, "game"));
    json_t *view = json_object_get(state, "view");
    int pick = -1;
    if (!game)
        pick = -1;
    else if (!strcmp(game, "hearts"))
        pick = hearts(state, view, legal);
    else if (!strcmp(game, "horse-thief"))
        pick = horse_thief(state, view, legal);
    else if (!strcmp(game, "snag"))
        pick = snag(state, view, legal);
    else if (!strcmp(game, "speed"))
        pick = speed(legal);
    else if (!strcmp(game, "horseshoe"))
        pick = horseshoe(state, view, legal);
    return pick >= 0 && (size_t)pick < n ? pick : 0;
}
