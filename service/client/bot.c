/* bot.c - `cardpost bot`: plays seats of cardpostd matches through the REST API (libcurl).
 * One thread per (match, seat) reads the match's event stream (server-sent events, resumed
 * with Last-Event-ID when it drops); each `state` message is the seat's whole view, and when
 * it lists legal moves the policy's pick is posted with `seq`. With --league the main thread
 * re-reads the league every few seconds for new matches. The policies are in policy.c
 * and policies/, one file per game.
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
    struct buf line; /* the line being read */
    char event[32];
    struct buf data; /* the message's data lines, joined by '\n' */
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

/* ---- HTTP -------------------------------------------------------------------------------- */

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
    struct buf answer = BUF_INIT;
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
    char *got = buf_finish(&answer, NULL);
    if (out)
        *out = got && *got ? json_loads(got, 0, NULL) : NULL;
    free(got);
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
    char *data = buf_finish(&j->data, NULL);
    if (!strcmp(j->event, "state") && data) {
        json_t *state = json_loads(data, 0, NULL);
        if (state)
            on_state(j, state);
        json_decref(state);
    }
    free(data);
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
        if (j->data.len)
            buf_puts(&j->data, "\n");
        buf_puts(&j->data, value);
    }
}

static size_t sse_write(char *p, size_t size, size_t n, void *ctx)
{
    struct job *j = ctx;
    size_t k = size * n;
    for (size_t i = 0; i < k; i++) {
        if (p[i] != '\n') {
            buf_put(&j->line, p + i, 1);
            continue;
        }
        if (j->line.failed)
            return 0; /* out of memory: this connection ends, and is made again */
        char empty[1] = "", *line = j->line.len ? j->line.p : empty;
        if (j->line.len && line[j->line.len - 1] == '\r')
            line[j->line.len - 1] = '\0';
        sse_line(j, line);
        j->line.len = 0; /* the next line reuses the allocation */
        if (j->over)
            return 0; /* the match is over: stop reading */
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
        buf_free(&j->line);
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
    buf_free(&j->line);
    buf_free(&j->data);
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
    bot_random(&j->rng);
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

/* Reads the options into *cfg and the --match ids into matches[*nmatches]; false on bad
 * usage (printed). */
static bool parse_args(int argc, char **argv, struct bot_config *cfg, long long *matches,
                       int *nmatches)
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
        else if (!strcmp(a, "--match") && *nmatches < BOT_MAX_JOBS)
            matches[(*nmatches)++] = strtoll(v, NULL, 10);
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
    if (!cfg->url || !cfg->ntokens || (*nmatches > 0) == (cfg->league >= 0)) {
        usage(stderr);
        return false;
    }
    return true;
}

/* Learns the player id of every token (cfg->player_ids); false when one is refused. */
static bool find_players(struct bot_config *cfg)
{
    for (int t = 0; t < cfg->ntokens; t++) {
        json_t *me = NULL;
        long code = http_json(cfg, "GET", "/v1/players/me", cfg->tokens[t], NULL, &me);
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

/* Starts a job for every seat our players hold in match `id`; false when the match cannot
 * be read or a job cannot start. */
static bool start_match(const struct bot_config *cfg, long long id)
{
    char path[64];
    snprintf(path, sizeof path, "/v1/matches/%lld", id);
    json_t *view = NULL;
    long code = http_json(cfg, "GET", path, cfg->tokens[0], NULL, &view);
    bool ok = code == 200;
    if (!ok)
        say("GET %s answered %ld", path, code);
    for (int t = 0; code == 200 && t < cfg->ntokens; t++) {
        int seat = seat_of(cfg, view, t);
        if (seat >= 0 && !start_job(cfg, id, t, seat))
            ok = false;
    }
    json_decref(view);
    return ok;
}

/* --league: plays the league's matches as they come, until ours are over and none came for
 * --idle seconds (with --once, until the ones we know are over). False when the league
 * cannot be read. */
static bool follow_league(const struct bot_config *cfg)
{
    time_t last_new = time(NULL);
    if (scan_league(cfg) < 0)
        return false;
    for (;;) {
        for (int k = 0; k < 30 && running_jobs() > 0; k++)
            sleep_ms(100); /* re-read the league every 3 s, or when a match ends */
        int n = running_jobs();
        if (n == 0 && cfg->once)
            return true;
        int started = scan_league(cfg);
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
    long long matches[BOT_MAX_JOBS];
    int nmatches = 0;
    if (!parse_args(argc, argv, &cfg, matches, &nmatches))
        return 2;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (!find_players(&cfg)) {
        curl_global_cleanup();
        return 1;
    }
    int status = 0;
    for (int i = 0; i < nmatches; i++)
        if (!start_match(&cfg, matches[i]))
            status = 1;
    if (cfg.league >= 0 && !follow_league(&cfg))
        status = 1;
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
