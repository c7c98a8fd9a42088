/* bench_service.c - load generator for cardpostd (ops/bench-service runs it; docs/benchmarks.md
 * records the figures). C clients, each one keep-alive HTTP/1.1 connection, play M concurrent
 * matches like bots: read the seat's view, post one of its legal moves, wait for the answer;
 * a client with several matches plays them round-robin, one move in each in turn. With -S
 * (the one-request shape of issue 18) a client instead holds each seat's own event stream
 * and posts a move on the strength of the pushed view, no read before it (its GET columns
 * are then the push: from the answer to a move to the next mover's view). -P plays the same
 * way on one stream per player instead (GET /v1/players/me/events, each state naming its
 * match by "id"): every event loop seats players of its own, a set of them for each 1,024
 * of its matches (the most one stream carries), so a player's stream brings only the states
 * of its loop's matches and the moves go out on that loop's connections; its GET columns are
 * the push too. -W N adds N spectator streams on the first match, read by a loop of their
 * own (what watchers add to a move). Every client runs in one event loop per thread
 * (libcurl's multi socket interface over epoll), so thousands of connections cost the client
 * little CPU next to the daemon it shares the cores with. Prints one markdown table row.
 */
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define MAX_SEATS 5   /* the most seats any game below has with its default options */
#define MOVE_MAX 48   /* a legal move as the daemon's JSON string literal, quotes included */
#define MAX_REPORTS 5 /* failures described on stderr; the rest are only counted */

/* The games, with the seats their default options give. "mix" cycles through all five. */
static const struct game {
    const char *name;
    int seats;
} games[] = {
    {"hearts", 4}, {"horseshoe", 2}, {"snag", 2}, {"horse-thief", 5}, {"speed", 2},
};
#define NGAMES ((int)(sizeof games / sizeof games[0]))

/* A match being played. The client keeps only what its next request needs, not the answer:
 * with 10,000 matches a parsed view for each would cost more memory than the daemon. */
struct match {
    int64_t id;
    int64_t seq;         /* the seq of the latest answer */
    uint32_t to_move;    /* bit per seat, from the latest answer */
    int8_t game;         /* index into games[] */
    int8_t holder;       /* the seat whose current view the latest answer was, or -1 */
    bool over;           /* finished: the client creates a new match in its place */
    char move[MOVE_MAX]; /* the holder's chosen legal move, when the holder is to move */
};

/* ---- Settings and shared state ----------------------------------------------------------- */

/* Read-only once the loops run, but for the matches (each client writes only its own) and
 * the atomics. */
static const char *base_url; /* the first -u: players are registered there */
#define MAX_PROCS 8
static const char *base_urls[MAX_PROCS]; /* every -u: match i is played on base_urls[i % n] */
static int nurls;

/* Where match `i` (an index into matches) is created and played: one process per match, as
 * ops/nginx/cardpost-upstream.conf routes a match's requests. */
static const char *url_of(size_t i)
{
    return base_urls[i % (size_t)nurls];
}
static struct curl_slist *operator_headers;
static struct roster *rosters; /* the players: one roster, or with -P one per set of matches */
static size_t nrosters;
static int nseats; /* the most seats of the run's matches (-P: the players with a stream) */
static struct match *matches;
static double deadline; /* CLOCK_MONOTONIC seconds; clients stop after their request past it */
/* CARDPOST_BENCH_TRACE=FILE: a line per timed move: when it was sent (CLOCK_MONOTONIC
 * seconds, as perf's timestamps), its latency in ms, its match's index and its body; for
 * finding what a tail is made of (docs/benchmarks.md). */
static FILE *trace;
static bool stream_mode;          /* -S, -P: moves on the seats' pushed views */
static bool player_streams;       /* -P: pushed by a stream per player, not per seat */
static long nwatchers;            /* -W: spectator streams on the first match */
static const char *match_options; /* -o: the matches' options (JSON), or NULL */
static double pause_s;            /* -i: a client's pause after each answer to a move */
static pthread_barrier_t set_up, watching, start_line;
static atomic_bool aborted;
static atomic_long failures;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what)
{
    fprintf(stderr, "bench_service: %s\n", what);
    exit(1);
}

/* Counts a failure; the first few are described on stderr. */
static void failed(const char *fmt, ...)
{
    long n = atomic_fetch_add(&failures, 1);
    if (n >= MAX_REPORTS)
        return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "bench_service: %s\n", msg);
}

static uint64_t rng_next(uint64_t *s) /* splitmix64 */
{
    uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* ---- Samples ------------------------------------------------------------------------------ */

struct samples {
    double *v; /* seconds */
    size_t n, cap;
};

static void samples_add(struct samples *s, double x)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 4096;
        s->v = realloc(s->v, s->cap * sizeof *s->v);
        if (!s->v)
            die("out of memory");
    }
    s->v[s->n++] = x;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The q-quantile (nearest rank) of sorted samples, in milliseconds. */
static double quantile_ms(const struct samples *s, double q)
{
    if (s->n == 0)
        return 0;
    size_t i = (size_t)(q * (double)s->n);
    if (i >= s->n)
        i = s->n - 1;
    return s->v[i] * 1e3;
}

/* ---- Reading the answers ------------------------------------------------------------------ */

/* Answers are read by a scanner that walks the top level of the object and skips every
 * nested value unread: a view is 1 to 3 KB of which the client needs six members, and
 * building a jansson tree of each answer would cost the client more CPU than its HTTP. */

struct span {
    const char *p; /* the value's text in the answer, NULL if the member is absent */
    size_t n;
};

struct answer {
    struct span id, status, seq, to_move, you, legal, token;
};

static const char *skip_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
        p++;
    return p;
}

/* p is at a string's opening quote; returns the end of the string, or NULL. memchr finds
 * the closing quote; a backslash before it (rare: no card or move has one) means a walk. */
static const char *skip_string(const char *p, const char *end)
{
    const char *q = memchr(p + 1, '"', (size_t)(end - p - 1));
    if (q && !memchr(p + 1, '\\', (size_t)(q - p - 1)))
        return q + 1;
    for (p++; p < end; p++) {
        if (*p == '\\')
            p++;
        else if (*p == '"')
            return p + 1;
    }
    return NULL;
}

/* What a byte is to skip_value's walk through an object or array: most bytes are nothing. */
enum { SK_NONE, SK_QUOTE, SK_OPEN, SK_CLOSE };
static const unsigned char skip_class[256] = {
    ['"'] = SK_QUOTE, ['{'] = SK_OPEN, ['['] = SK_OPEN, ['}'] = SK_CLOSE, [']'] = SK_CLOSE,
};

/* p is at a value; returns its end, or NULL if it does not end before `end`. */
static const char *skip_value(const char *p, const char *end)
{
    if (p >= end)
        return NULL;
    if (*p == '"')
        return skip_string(p, end);
    if (*p == '{' || *p == '[') {
        int depth = 0;
        while (p < end) {
            switch (skip_class[(unsigned char)*p]) {
            case SK_QUOTE:
                if (!(p = skip_string(p, end)))
                    return NULL;
                continue;
            case SK_OPEN:
                depth++;
                break;
            case SK_CLOSE:
                if (--depth == 0)
                    return p + 1;
                break;
            }
            p++;
        }
        return NULL;
    }
    const char *q = p; /* a number, true, false or null */
    while (q < end && (*q == '-' || *q == '+' || *q == '.' || (*q >= '0' && *q <= '9') ||
                       (*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z')))
        q++;
    return q > p ? q : NULL;
}

static bool key_is(const char *k, size_t n, const char *name)
{
    return strlen(name) == n && !memcmp(k, name, n);
}

/* Finds the members the client uses in a top-level JSON object. False if it is not one. */
static bool answer_read(const char *buf, size_t len, struct answer *a)
{
    const char *p = buf, *end = buf + len;
    memset(a, 0, sizeof *a);
    p = skip_ws(p, end);
    if (p == end || *p++ != '{')
        return false;
    p = skip_ws(p, end);
    if (p < end && *p == '}')
        return true;
    while (p < end) {
        if (*p != '"')
            return false;
        const char *k = p + 1, *kend = skip_string(p, end);
        if (!kend)
            return false;
        size_t kn = (size_t)(kend - 1 - k);
        p = skip_ws(kend, end);
        if (p == end || *p++ != ':')
            return false;
        p = skip_ws(p, end);
        const char *v = p;
        if (!(p = skip_value(p, end)))
            return false;
        struct span s = {v, (size_t)(p - v)};
        if (key_is(k, kn, "id"))
            a->id = s;
        else if (key_is(k, kn, "status"))
            a->status = s;
        else if (key_is(k, kn, "seq"))
            a->seq = s;
        else if (key_is(k, kn, "to_move"))
            a->to_move = s;
        else if (key_is(k, kn, "you"))
            a->you = s;
        else if (key_is(k, kn, "legal"))
            a->legal = s;
        else if (key_is(k, kn, "token"))
            a->token = s;
        p = skip_ws(p, end);
        if (p < end && *p == '}')
            return true;
        if (p == end || *p++ != ',')
            return false;
        p = skip_ws(p, end);
    }
    return false;
}

/* An integer member; false if absent or not an integer (null included). */
static bool span_int(struct span s, int64_t *out)
{
    if (!s.p || s.n == 0 || s.n > 20 || !(*s.p == '-' || (*s.p >= '0' && *s.p <= '9')))
        return false;
    char tmp[24], *end;
    memcpy(tmp, s.p, s.n);
    tmp[s.n] = '\0';
    long long v = strtoll(tmp, &end, 10);
    if (*end)
        return false;
    *out = v;
    return true;
}

static bool span_is(struct span s, const char *text)
{
    return s.p && key_is(s.p, s.n, text);
}

/* The elements of an array member, one at a time: `*it` starts at the array's text. */
static bool span_next(struct span arr, const char **it, struct span *elem)
{
    const char *end = arr.p + arr.n - 1; /* the closing ']' */
    const char *p = skip_ws(*it, end);
    if (p == arr.p) /* the first call: step over '[' */
        p = skip_ws(p + 1, end);
    else if (p < end && *p == ',')
        p = skip_ws(p + 1, end);
    if (p >= end)
        return false;
    const char *q = skip_value(p, end);
    if (!q)
        return false;
    *elem = (struct span){p, (size_t)(q - p)};
    *it = q;
    return true;
}

/* A seat array ("to_move") as a bit mask; false if malformed. */
static bool span_seats(struct span arr, uint32_t *mask)
{
    if (!arr.p || arr.n < 2 || arr.p[0] != '[')
        return false;
    *mask = 0;
    const char *it = arr.p;
    struct span e;
    int64_t seat;
    while (span_next(arr, &it, &e)) {
        if (!span_int(e, &seat) || seat < 0 || seat >= 32)
            return false;
        *mask |= UINT32_C(1) << seat;
    }
    return true;
}

/* Picks a random element of the "legal" array and copies its JSON literal into `out`
 * (it goes into the move's body as it is: no unescaping). False if the list is empty. */
static bool pick_move(struct span legal, uint64_t *rng, char out[MOVE_MAX])
{
    if (!legal.p || legal.n < 2 || legal.p[0] != '[')
        return false;
    size_t n = 0;
    const char *it = legal.p;
    struct span e;
    while (span_next(legal, &it, &e))
        n++;
    if (n == 0)
        return false;
    size_t k = (size_t)(rng_next(rng) % n);
    it = legal.p;
    for (size_t i = 0; i <= k; i++)
        span_next(legal, &it, &e);
    if (e.n >= MOVE_MAX || e.p[0] != '"')
        return false;
    memcpy(out, e.p, e.n);
    out[e.n] = '\0';
    return true;
}

/* ---- Clients and their event loop --------------------------------------------------------- */

enum request { REQ_NONE, REQ_CREATE, REQ_GET, REQ_POST };

struct loop;

/* A libcurl multi handle for up to POOL_CLIENTS clients of a loop. libcurl 7.88's
 * curl_multi_remove_handle walks the whole connection cache of its multi handle, and a
 * transfer's search for an idle connection to its host walks the busy ones: with all
 * 10,000 clients in one multi handle every request cost about 100 us of the client's CPU
 * (perf: a hash walk under curl_multi_remove_handle). In pools of 64 a request costs the
 * same at any number of clients. */
#define POOL_CLIENTS 64

struct pool {
    struct loop *loop;
    CURLM *multi;
    double timer_at; /* when libcurl wants CURL_SOCKET_TIMEOUT handled; < 0: not wanted */
    bool due;        /* on the loop's list of pools whose timer is due at once */
};

struct client;

struct roster;

/* An event stream the client reads (-S: a seat's own; -P: a player's; -W: a spectator's). */
struct stream {
    bool is_stream;         /* true: tells a transfer's owner apart (struct client: false) */
    struct client *c;       /* the client whose seat it is; NULL for a player's, a spectator's */
    struct roster *roster;  /* -P: the roster whose player it is; NULL for the others */
    struct pool *pool;
    int seat;               /* the seat of its client's match, or its player's in the roster */
    bool got_state;         /* its first state came */
    CURL *curl;             /* NULL: closed */
    char *buf;              /* text not yet split into messages */
    size_t len, cap;
};

/* The players who sit at a client's match: seat s is player s of the client's roster. One
 * roster for all the clients, but with -P one for each set of at most ROSTER_MATCHES
 * clients of a loop, each player with their own stream of all their matches. */
#define ROSTER_MATCHES 1024 /* -P: the most matches a player's stream carries */

struct roster {
    int64_t ids[MAX_SEATS];
    struct curl_slist *headers[MAX_SEATS];
    struct stream streams[MAX_SEATS]; /* -P: player s's own (the seats the games have) */
    struct pool *pool;                /* -P: the pool the streams are in */
};

struct client {
    bool is_stream;         /* false (see struct stream) */
    struct pool *pool;
    CURL *curl;
    size_t first, nmatches; /* its matches: matches[first .. first + nmatches) */
    size_t cur;             /* the one it plays now (round-robin), or creates during set-up */
    size_t created;         /* matches created during set-up */
    enum request req;       /* the request in flight */
    int seat;               /* the seat it reads or moves for */
    struct roster *roster;  /* who sits at its matches */
    double sent;            /* when the request went out */
    uint64_t rng;
    char url[128];
    char body[320]; /* a POST's body: libcurl reads it while sending */
    char *buf;      /* the answer so far */
    size_t len, cap;
    /* -S, -P: its match's seats' streams (-S), the move picked from each seat's latest
     * pushed view (at seq pend_seq, -1 none), the seq each seat last moved at and the
     * latest seq pushed to each seat. */
    struct stream streams[MAX_SEATS];
    char pend[MAX_SEATS][MOVE_MAX];
    int64_t pend_seq[MAX_SEATS], acted[MAX_SEATS], heard[MAX_SEATS];
    int nopen;      /* of its streams, those open (-P: its seats still to hear the end) */
    uint32_t ended; /* -P: the seats whose stream brought the match's final state */
    double answered; /* when the answer to its last move came (0: its push was timed) */
    double news;     /* when its match last had news (a view, an answer): stalls show */
    double resume_at; /* -i: when it goes on after its pause (0: not paused) */
    bool queued;    /* on its loop's list of clients with a move to post */
};

/* One thread's event loop: epoll over the sockets of its pools' multi handles. */
struct loop {
    pthread_t thread;
    int epfd;
    struct pool *pools;
    size_t npools;
    size_t *due; /* pools whose timer is due at once (a new request), to run right away */
    size_t ndue;
    struct client *clients;
    size_t nclients;
    size_t busy;  /* clients with a request in flight */
    bool playing; /* false while the clients create their first matches */
    struct samples post, get;
    long moves, requests, connects, replaced, refused;
    long nstreams;              /* stream transfers open */
    struct client **queue;      /* -S: clients with a pushed move to post (nclients) */
    size_t nqueue;
    struct stream *watchers;    /* -W: the first loop's spectator streams */
    long watchers_ready;        /* of them, those that had their first state */
    long watchers_gone;         /* of them, those whose match ended before the deadline */
    struct roster *rosters;     /* -P: the loop's own players (its clients' rosters) */
    size_t nrosters;
    int64_t *ids;               /* -P: the clients' matches by id, by_id[i] playing ids[i] */
    struct client **by_id;      /*     (open addressing; NULL: a free slot) */
    size_t id_mask;             /*     (the slots, a power of two, less one) */
    struct early *early;        /* -P: states of matches whose creation is not answered yet */
    size_t nearly, early_cap;
    long repeats;               /* states pushed to a seat that had had that seq (or a newer) */
    long stalled;               /* stream clients without news the last second of the run */
};

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
    struct client *c = arg;
    size_t n = size * nmemb;
    if (c->len + n + 1 > c->cap) {
        while (c->len + n + 1 > c->cap)
            c->cap = c->cap ? c->cap * 2 : 4096;
        c->buf = realloc(c->buf, c->cap);
        if (!c->buf)
            die("out of memory");
    }
    memcpy(c->buf + c->len, data, n);
    c->len += n;
    c->buf[c->len] = '\0';
    return n;
}

/* libcurl tells which sockets to watch for what (CURLMOPT_SOCKETFUNCTION). An epoll event
 * carries the pool's index and the socket; a socket's `socketp` is non-NULL once it is in
 * the epoll set. */
static int on_socket(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp)
{
    (void)easy;
    struct pool *p = userp;
    struct loop *l = p->loop;
    if (what == CURL_POLL_REMOVE) {
        epoll_ctl(l->epfd, EPOLL_CTL_DEL, s, NULL); /* it may be closed already */
        return 0;
    }
    struct epoll_event ev = {
        .events = ((what & CURL_POLL_IN) ? EPOLLIN : 0u) | ((what & CURL_POLL_OUT) ? EPOLLOUT : 0u),
        .data.u64 = (uint64_t)(p - l->pools) << 32 | (uint32_t)s,
    };
    if (socketp && epoll_ctl(l->epfd, EPOLL_CTL_MOD, s, &ev) == 0)
        return 0;
    if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, s, &ev) != 0 &&
        (errno != EEXIST || epoll_ctl(l->epfd, EPOLL_CTL_MOD, s, &ev) != 0))
        return -1;
    curl_multi_assign(p->multi, s, p);
    return 0;
}

/* libcurl asks to be called back after timeout_ms (CURLMOPT_TIMERFUNCTION); -1 cancels.
 * 0 (a request was just added) puts the pool on the loop's due list. */
static int on_timer(CURLM *multi, long timeout_ms, void *userp)
{
    (void)multi;
    struct pool *p = userp;
    p->timer_at = timeout_ms < 0 ? -1 : now() + (double)timeout_ms * 1e-3;
    if (timeout_ms == 0 && !p->due) {
        p->due = true;
        p->loop->due[p->loop->ndue++] = (size_t)(p - p->loop->pools);
    }
    return 0;
}

/* Sends the client's next request: a POST when `body` is given, else a GET. */
static void client_send(struct client *c, enum request req, struct curl_slist *headers,
                        const char *body)
{
    c->req = req;
    c->len = 0;
    curl_easy_setopt(c->curl, CURLOPT_URL, c->url);
    curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, headers);
    if (body) {
        curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    } else {
        curl_easy_setopt(c->curl, CURLOPT_HTTPGET, 1L);
    }
    c->sent = now();
    if (curl_multi_add_handle(c->pool->multi, c->curl) != CURLM_OK)
        die("curl_multi_add_handle failed");
    c->pool->loop->busy++;
}

static void send_create(struct client *c)
{
    const struct match *m = &matches[c->cur];
    int n =
        snprintf(c->body, sizeof c->body, "{\"game\": \"%s\", \"players\": [", games[m->game].name);
    for (int s = 0; s < games[m->game].seats; s++)
        n += snprintf(c->body + n, sizeof c->body - (size_t)n, "%s%lld", s ? ", " : "",
                      (long long)c->roster->ids[s]);
    snprintf(c->body + n, sizeof c->body - (size_t)n, "]%s%s}",
             match_options ? ", \"options\": " : "", match_options ? match_options : "");
    snprintf(c->url, sizeof c->url, "%s/v1/matches", url_of(c->cur));
    client_send(c, REQ_CREATE, operator_headers, c->body);
}

/* ---- The one-request clients (-S, -P) and the watchers (-W) ------------------------------ */

static void client_next(struct client *c);

/* A stream transfer is added to its pool like a request, but never ends by itself while its
 * match runs (a player's: while the loop plays): the loop closes it at the deadline. Each
 * message is split off as it comes; only `state` messages matter (a view, like a GET's
 * answer). */
static size_t on_stream(char *data, size_t size, size_t nmemb, void *arg);

/* Opens the stream of matches[i], on the process that plays it; or with -P, s->roster set,
 * the stream of s's player (i unused: -P plays on one process). */
static void stream_open(struct stream *s, struct pool *p, size_t i, struct curl_slist *h)
{
    char url[160];
    if (s->roster)
        snprintf(url, sizeof url, "%s/v1/players/me/events", base_url);
    else
        snprintf(url, sizeof url, "%s/v1/matches/%lld/events", url_of(i),
                 (long long)matches[i].id);
    s->is_stream = true;
    s->pool = p;
    s->len = 0;
    s->got_state = false;
    if (!(s->curl = curl_easy_init()))
        die("curl_easy_init failed");
    curl_easy_setopt(s->curl, CURLOPT_URL, url);
    curl_easy_setopt(s->curl, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(s->curl, CURLOPT_WRITEFUNCTION, on_stream);
    curl_easy_setopt(s->curl, CURLOPT_WRITEDATA, s);
    curl_easy_setopt(s->curl, CURLOPT_PRIVATE, s);
    curl_easy_setopt(s->curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(s->curl, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(s->curl, CURLOPT_PROXY, "");
    if (curl_multi_add_handle(p->multi, s->curl) != CURLM_OK)
        die("curl_multi_add_handle failed");
    p->loop->nstreams++;
    if (s->c)
        s->c->nopen++;
}

static void stream_close(struct stream *s)
{
    if (!s->curl)
        return;
    curl_multi_remove_handle(s->pool->multi, s->curl);
    curl_easy_cleanup(s->curl);
    s->curl = NULL;
    s->pool->loop->nstreams--;
    if (s->c)
        s->c->nopen--;
}

/* Puts the client on its loop's list for loop_flush (libcurl's callbacks start nothing). */
static void client_queue(struct client *c)
{
    struct loop *l = c->pool->loop;
    if (!c->queued) {
        c->queued = true;
        l->queue[l->nqueue++] = c;
    }
}

/* A seat's pushed view (or the answer to its own move): the move it would make, to be
 * posted once nothing else is in flight. Runs inside libcurl's callbacks, so it only
 * queues the client; loop_flush posts. False if it is not the seat's view. */
static bool seat_view(struct client *c, int seat, const struct answer *a, const char *text,
                      bool pushed)
{
    struct loop *l = c->pool->loop;
    struct match *m = &matches[c->cur];
    int64_t seq, you = -1;
    uint32_t to_move;
    if (!span_int(a->seq, &seq) || !span_seats(a->to_move, &to_move) || !a->status.p ||
        !span_int(a->you, &you) || you != seat) {
        failed("match %lld seat %d: not the seat's view: %.200s", (long long)m->id, seat, text);
        return false;
    }
    c->news = now();
    if (pushed && seq <= c->heard[seat])
        l->repeats++; /* (each commit's state goes to a seat once, the newest last) */
    else if (pushed)
        c->heard[seat] = seq;
    if (seq < m->seq)
        return true; /* older than what the client knows already */
    m->seq = seq;
    m->to_move = to_move;
    if (!span_is(a->status, "\"active\"")) {
        m->over = true;
        return true;
    }
    if (!(to_move & (UINT32_C(1) << seat)) || c->acted[seat] == seq)
        return true;
    if (!pick_move(a->legal, &c->rng, c->pend[seat])) {
        failed("match %lld seat %d: to move without a legal move", (long long)m->id, seat);
        return true;
    }
    c->pend_seq[seat] = seq;
    if (pushed && l->playing && c->answered > 0) { /* the push: from the answer to here */
        samples_add(&l->get, now() - c->answered);
        c->answered = 0;
    }
    client_queue(c);
    return true;
}

/* The first `needle` (k bytes) in p[0 .. n), or NULL (memmem is not C11): memchr finds
 * each place its first byte is. */
static const char *find(const char *p, size_t n, const char *needle, size_t k)
{
    const char *end = p + n, *q = p;
    while (k <= (size_t)(end - q) && (q = memchr(q, needle[0], (size_t)(end - q) - k + 1))) {
        if (!memcmp(q, needle, k))
            return q;
        q++;
    }
    return NULL;
}

/* -P: the loop's matches by id, for a player's stream to find the client of a state: open
 * addressing with linear probing, at least twice as many slots as clients (each has one
 * match at a time). */
static size_t id_home(const struct loop *l, int64_t id)
{
    uint64_t z = (uint64_t)id;
    return (size_t)rng_next(&z) & l->id_mask;
}

static size_t id_slot(const struct loop *l, int64_t id)
{
    size_t i = id_home(l, id);
    while (l->by_id[i] && l->ids[i] != id)
        i = (i + 1) & l->id_mask;
    return i;
}

static void loop_carry(struct loop *l, int64_t id, struct client *c)
{
    size_t i = id_slot(l, id);
    l->ids[i] = id;
    l->by_id[i] = c;
}

/* Forgets match `id`: the entries after its slot that probed past it move up into the hole
 * (backward-shift deletion), so that every lookup still finds them. */
static void loop_drop(struct loop *l, int64_t id)
{
    size_t i = id_slot(l, id);
    if (!l->by_id[i])
        return;
    l->by_id[i] = NULL;
    for (size_t j = (i + 1) & l->id_mask; l->by_id[j]; j = (j + 1) & l->id_mask) {
        size_t h = id_home(l, l->ids[j]);
        if (i <= j ? (i < h && h <= j) : (i < h || h <= j))
            continue; /* (its home is after the hole: it stays) */
        l->ids[i] = l->ids[j];
        l->by_id[i] = l->by_id[j];
        l->by_id[j] = NULL;
        i = j;
    }
}

/* -P: a state that came before the answer creating its match (the match starts, and its
 * first states go out, before the creator hears back). A state of a match the loop no
 * longer plays (after every seat's final one) waits too, forever: the run counts them. */
struct early {
    struct stream *s; /* the player's stream it came on */
    int64_t id;       /* its match */
    char *text;       /* the state's JSON */
};

static void early_keep(struct loop *l, struct stream *s, int64_t id, const char *text, size_t n)
{
    if (l->nearly == l->early_cap) {
        l->early_cap = l->early_cap ? 2 * l->early_cap : 64;
        if (!(l->early = realloc(l->early, l->early_cap * sizeof *l->early)))
            die("out of memory");
    }
    char *copy = malloc(n + 1);
    if (!copy)
        die("out of memory");
    memcpy(copy, text, n);
    copy[n] = '\0';
    l->early[l->nearly++] = (struct early){s, id, copy};
}

/* -P: a state from a player's stream, for the client whose match its "id" names. Each
 * seat's final state ends the match for that seat; after the last seat's the client
 * replaces the match (as -S's client does once its match's streams have ended). */
static void player_state(struct stream *s, const struct answer *a, const char *text, size_t n)
{
    struct loop *l = s->pool->loop;
    int64_t id;
    if (!span_int(a->id, &id)) {
        failed("player %lld's stream: a state without a match id: %.200s",
               (long long)s->roster->ids[s->seat], text);
        return;
    }
    struct client *c = l->by_id[id_slot(l, id)];
    if (!c) {
        early_keep(l, s, id, text, n);
        return;
    }
    if (c->roster != s->roster) {
        failed("match %lld: a state on the stream of player %lld, who has no seat in it",
               (long long)id, (long long)s->roster->ids[s->seat]);
        return;
    }
    uint32_t seat = UINT32_C(1) << s->seat;
    if (!seat_view(c, s->seat, a, text, true) || span_is(a->status, "\"active\"") ||
        (c->ended & seat))
        return;
    c->ended |= seat;
    if (--c->nopen == 0) {
        loop_drop(l, id);
        client_queue(c);
    }
}

/* -P: the states of match `id` that came before its client took it on, in their order
 * (none of them can be its last seat's final state: nobody has moved in it yet). */
static void early_claim(struct loop *l, int64_t id)
{
    size_t kept = 0;
    for (size_t i = 0; i < l->nearly; i++) {
        struct early e = l->early[i];
        if (e.id != id) {
            l->early[kept++] = e;
            continue;
        }
        struct answer a;
        size_t n = strlen(e.text);
        if (answer_read(e.text, n, &a)) /* (it was read once) */
            player_state(e.s, &a, e.text, n);
        free(e.text);
    }
    l->nearly = kept;
}

/* Opens the streams of the client's match; with -P its players' streams carry it already
 * (or will, once open), and its seats count as open streams until each has heard the end. */
static void client_streams_open(struct client *c)
{
    const struct match *m = &matches[c->cur];
    for (int s = 0; s < games[m->game].seats; s++) {
        c->pend_seq[s] = c->acted[s] = c->heard[s] = -1;
        if (player_streams)
            continue;
        c->streams[s].c = c;
        c->streams[s].seat = s;
        stream_open(&c->streams[s], c->pool, c->cur, c->roster->headers[s]);
    }
    if (player_streams) {
        c->nopen = games[m->game].seats;
        c->ended = 0;
        loop_carry(c->pool->loop, m->id, c);
        early_claim(c->pool->loop, m->id);
    }
}

static void client_streams_close(struct client *c)
{
    for (int s = 0; s < MAX_SEATS; s++)
        stream_close(&c->streams[s]);
}

static void stream_message(struct stream *s, const char *msg, size_t n)
{
    static const char state[] = "event: state\n";
    const char *end = msg + n, *ev = find(msg, n, state, sizeof state - 1);
    const char *data = ev ? find(ev, (size_t)(end - ev), "data: ", 6) : NULL;
    if (!data)
        return; /* an event, or a keep-alive */
    data += 6;
    struct answer a;
    if (!answer_read(data, (size_t)(end - data), &a)) {
        failed("a stream's state is not JSON: %.200s", data);
        return;
    }
    if (!s->got_state && !s->c && !s->roster)
        s->pool->loop->watchers_ready++;
    s->got_state = true;
    if (s->c)
        seat_view(s->c, s->seat, &a, data, true);
    else if (s->roster)
        player_state(s, &a, data, (size_t)(end - data));
}

static size_t on_stream(char *data, size_t size, size_t nmemb, void *arg)
{
    struct stream *s = arg;
    size_t n = size * nmemb;
    if (s->len + n + 1 > s->cap) {
        while (s->len + n + 1 > s->cap)
            s->cap = s->cap ? s->cap * 2 : 4096;
        if (!(s->buf = realloc(s->buf, s->cap)))
            die("out of memory");
    }
    memcpy(s->buf + s->len, data, n);
    s->len += n;
    s->buf[s->len] = '\0'; /* (what a failure shows ends there) */
    const char *p = s->buf, *end = s->buf + s->len, *m;
    while ((m = find(p, (size_t)(end - p), "\n\n", 2))) {
        stream_message(s, p, (size_t)(m - p));
        p = m + 2;
    }
    s->len = (size_t)(end - p);
    memmove(s->buf, p, s->len);
    return n;
}

/* Posts the client's pending move at the match's latest seq, if it has one and nothing is
 * in flight. */
static void client_post_pending(struct client *c)
{
    struct match *m = &matches[c->cur];
    if (c->req != REQ_NONE || m->over || now() >= deadline || atomic_load(&aborted) ||
        c->resume_at > now())
        return;
    for (int s = 0; s < MAX_SEATS; s++)
        if (c->pend_seq[s] >= 0 && c->pend_seq[s] == m->seq) {
            c->acted[s] = m->seq;
            c->pend_seq[s] = -1;
            c->seat = s;
            snprintf(c->url, sizeof c->url, "%s/v1/matches/%lld/moves", url_of(c->cur),
                     (long long)m->id);
            snprintf(c->body, sizeof c->body, "{\"move\": %s, \"seq\": %lld}", c->pend[s],
                     (long long)m->seq);
            client_send(c, REQ_POST, c->roster->headers[s], c->body);
            return;
        }
}

/* The clients whose streams pushed a move, or with -P the end of their match to its last
 * seat: post the move, or replace the match (outside libcurl's callbacks). */
static void loop_flush(struct loop *l)
{
    while (l->nqueue > 0) {
        struct client *c = l->queue[--l->nqueue];
        c->queued = false;
        if (!player_streams)
            client_post_pending(c);
        else if (c->req == REQ_NONE)
            client_next(c);
    }
}

/* A stream ended: its match is over (the client then replaces the match once every seat's
 * stream has ended), or something is wrong (a player's stream does not end by itself). */
static void stream_done(struct stream *s, CURLcode rc)
{
    long status = 0;
    curl_easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &status);
    stream_close(s);
    struct client *c = s->c;
    if (s->roster) {
        if (now() < deadline)
            failed("player %lld's stream ended: %s, HTTP %ld: %.200s",
                   (long long)s->roster->ids[s->seat], curl_easy_strerror(rc), status,
                   s->buf ? s->buf : "");
        return;
    }
    if (!c && rc == CURLE_OK && status == 200) { /* a watcher: its match is over */
        s->pool->loop->watchers_gone += now() < deadline;
        return;
    }
    bool over = c && matches[c->cur].over;
    if ((rc != CURLE_OK || status != 200 || !over) && now() < deadline) {
        failed("a stream of match %lld ended: %s, HTTP %ld",
               (long long)(c ? matches[c->cur].id : matches[0].id), curl_easy_strerror(rc),
               status);
        return;
    }
    if (c && c->nopen == 0 && c->req == REQ_NONE)
        client_next(c);
}

/* The seat to play next: the seat whose view the client holds, if it is to move (a bot
 * would move again on the answer to its own move), else the first seat to move. In Speed
 * both seats may be to move; either is fine, one client plays both. */
static int seat_to_play(const struct match *m)
{
    if (m->holder >= 0 && (m->to_move & (UINT32_C(1) << m->holder)))
        return m->holder;
    for (int s = 0; s < MAX_SEATS; s++)
        if (m->to_move & (UINT32_C(1) << s))
            return s;
    return -1;
}

/* Starts the client's next request, or stops it: at the deadline, after a failure, or at
 * the end of set-up. */
static void client_next(struct client *c)
{
    if (atomic_load(&aborted))
        return;
    if (!c->pool->loop->playing) {
        if (c->created == c->nmatches)
            return;
        c->cur = c->first + c->created;
        send_create(c);
        return;
    }
    if (now() >= deadline)
        return;
    struct match *m = &matches[c->cur];
    if (stream_mode) { /* the streams push the views; a move goes when one is pushed */
        if (m->over && c->nopen == 0)
            send_create(c);
        else if (!m->over && c->nopen == 0)
            client_streams_open(c);
        else
            client_post_pending(c);
        return;
    }
    if (m->over) {
        send_create(c);
        return;
    }
    c->seat = seat_to_play(m);
    if (c->seat < 0) {
        failed("match %lld (%s): active with nobody to move", (long long)m->id,
               games[m->game].name);
        return;
    }
    if (c->seat == m->holder && m->move[0]) {
        snprintf(c->url, sizeof c->url, "%s/v1/matches/%lld/moves", url_of(c->cur),
                 (long long)m->id);
        snprintf(c->body, sizeof c->body, "{\"move\": %s, \"seq\": %lld}", m->move,
                 (long long)m->seq);
        client_send(c, REQ_POST, c->roster->headers[c->seat], c->body);
    } else {
        snprintf(c->url, sizeof c->url, "%s/v1/matches/%lld", url_of(c->cur), (long long)m->id);
        client_send(c, REQ_GET, c->roster->headers[c->seat], NULL);
    }
}

/* Takes a view (the answer to a create, a GET or a POST) into the match. Returns NULL, or
 * what is wrong with the answer. */
static const char *take_view(struct client *c, struct match *m, const struct answer *a)
{
    int64_t you = -1;
    if (!span_int(a->id, &m->id) || !span_int(a->seq, &m->seq) ||
        !span_seats(a->to_move, &m->to_move) || !a->status.p ||
        (!span_is(a->you, "null") && !span_int(a->you, &you)) || you >= MAX_SEATS)
        return "not a view";
    m->over = !span_is(a->status, "\"active\"");
    m->holder = (int8_t)you;
    m->move[0] = '\0';
    if (!m->over && you >= 0 && (m->to_move & (UINT32_C(1) << you)) &&
        !pick_move(a->legal, &c->rng, m->move))
        return "the seat is to move but has no legal move";
    return NULL;
}

/* A request of the client is done: check the answer, take it in, go on. */
static void client_done(struct client *c, CURLcode rc)
{
    struct loop *l = c->pool->loop;
    double took = now() - c->sent;
    enum request req = c->req;
    c->req = REQ_NONE;
    c->news = now();
    curl_multi_remove_handle(c->pool->multi, c->curl);
    l->busy--;
    long status = 0, connects = 0;
    curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_getinfo(c->curl, CURLINFO_NUM_CONNECTS, &connects);
    l->connects += connects;
    long want = req == REQ_GET ? 200 : 201;
    const char *method = req == REQ_GET ? "GET" : "POST";
    const char *path = strstr(c->url, "/v1/") ? strstr(c->url, "/v1/") : c->url;
    int shown = c->len < 300 ? (int)c->len : 300;
    if (stream_mode && l->playing && now() >= deadline)
        client_streams_close(c);
    if (stream_mode && req == REQ_POST && status == 409 && rc == CURLE_OK) {
        /* (Speed: the other seat's card came first; the streams bring the next view) */
        l->refused++;
        samples_add(&l->post, took);
        client_next(c);
        return;
    }
    if (rc != CURLE_OK || status != want) {
        failed("%s %s: %s, HTTP %ld (expected %ld): %.*s", method, path, curl_easy_strerror(rc),
               status, want, shown, c->buf ? c->buf : "");
        return;
    }
    struct answer a;
    struct match *m = &matches[c->cur];
    const char *wrong = !answer_read(c->buf, c->len, &a) ? "not JSON"
                        : stream_mode && req == REQ_POST ? NULL
                                                         : take_view(c, m, &a);
    if (stream_mode && req == REQ_POST && !wrong) { /* the mover's own view, as if pushed */
        c->answered = now();
        seat_view(c, c->seat, &a, c->buf, false);
    }
    if (wrong) {
        failed("%s %s (%s): %s: %.*s", method, path, games[m->game].name, wrong, shown, c->buf);
        return;
    }
    if (l->playing) {
        l->requests++;
        if (req == REQ_GET) {
            samples_add(&l->get, took);
            if (m->holder != c->seat || !m->move[0]) {
                failed("GET %s: seat %d is not to move in its own view", path, c->seat);
                return;
            }
        } else if (req == REQ_POST) {
            samples_add(&l->post, took);
            if (trace) /* (stdio's lock: the loops' lines whole) */
                fprintf(trace, "%.6f %.3f %d %s\n", c->sent, took * 1e3, (int)c->cur, c->body);
            l->moves++;
            if (pause_s > 0) { /* -i: like a player who thinks a moment */
                c->resume_at = now() + pause_s;
                if (!stream_mode)
                    c->cur = c->cur + 1 < c->first + c->nmatches ? c->cur + 1 : c->first;
                return;
            }
            c->cur = c->cur + 1 < c->first + c->nmatches ? c->cur + 1 : c->first;
        } else {
            l->replaced++;
        }
    } else {
        c->created++;
    }
    client_next(c);
}

/* Hands every finished transfer of the pool to its client. */
static void pool_collect(struct pool *p)
{
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(p->multi, &left))) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        char *c = NULL;
        CURLcode rc = msg->data.result;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &c);
        if (*(bool *)c) /* (both structs start with is_stream) */
            stream_done((struct stream *)c, rc);
        else
            client_done((struct client *)c, rc);
    }
}

static void pool_timeout(struct pool *p)
{
    int running;
    p->timer_at = -1;
    curl_multi_socket_action(p->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    pool_collect(p);
    loop_flush(p->loop);
}

/* Runs the pools whose timer is due at once: that is how libcurl starts new requests. */
static void loop_run_due(struct loop *l)
{
    while (l->ndue > 0) {
        struct pool *p = &l->pools[l->due[--l->ndue]];
        p->due = false;
        pool_timeout(p);
    }
}

/* Runs every pool whose timer has expired; returns the milliseconds until the next one
 * (at most a second). */
static int loop_run_timers(struct loop *l)
{
    loop_run_due(l);
    double t = now(), next = t + 1;
    for (size_t i = 0; i < l->npools; i++) {
        struct pool *p = &l->pools[i];
        if (p->timer_at >= 0 && p->timer_at <= t) {
            pool_timeout(p);
            loop_run_due(l);
        }
        if (p->timer_at >= 0 && p->timer_at < next)
            next = p->timer_at;
    }
    for (size_t i = 0; pause_s > 0 && i < l->nclients; i++)
        if (l->clients[i].resume_at > 0 && l->clients[i].resume_at < next)
            next = l->clients[i].resume_at;
    double ms = (next - now()) * 1e3;
    return ms <= 0 ? 0 : (int)ms + 1;
}

/* At the deadline every stream closes (a client with a move in flight closes its own when
 * the answer comes; -P: the players' streams close at once, answers need none). A client
 * with nothing in flight, not paused, whose match's streams had no news the last second
 * waits for a state that did not come: it counts as stalled. */
static void loop_deadline(struct loop *l)
{
    for (size_t i = 0; pause_s > 0 && i < l->nclients; i++) { /* -i: the pauses that ended */
        struct client *c = &l->clients[i];
        if (c->resume_at > 0 && c->resume_at <= now()) {
            c->resume_at = 0;
            client_next(c);
        }
    }
    if (!l->playing || l->nstreams == 0 || now() < deadline)
        return;
    for (size_t i = 0; i < l->nclients; i++) {
        struct client *c = &l->clients[i];
        if (c->req != REQ_NONE)
            continue;
        /* (counted once: its streams close, and -P's loop closes all of its own below) */
        l->stalled += c->nopen > 0 && c->resume_at == 0 && c->news < deadline - 1;
        client_streams_close(c);
    }
    for (size_t i = 0; i < l->nrosters; i++)
        for (int s = 0; s < MAX_SEATS; s++)
            stream_close(&l->rosters[i].streams[s]);
    for (long i = 0; l->watchers && i < nwatchers; i++)
        stream_close(&l->watchers[i]);
}

static void loop_pump(struct loop *l);

static bool loop_paused(const struct loop *l)
{
    for (size_t i = 0; pause_s > 0 && i < l->nclients; i++)
        if (l->clients[i].resume_at > 0)
            return true;
    return false;
}

/* Runs until no client has a request in flight and no stream is open. With -P the play
 * opens the loop's players' streams once every client has taken on its match. */
static void loop_run(struct loop *l)
{
    for (size_t i = 0; i < l->nclients; i++) {
        l->clients[i].news = now();
        client_next(&l->clients[i]);
    }
    for (size_t i = 0; l->playing && i < l->nrosters; i++) {
        struct roster *r = &l->rosters[i];
        for (int s = 0; s < nseats; s++) {
            r->streams[s].roster = r;
            r->streams[s].seat = s;
            stream_open(&r->streams[s], r->pool, 0, r->headers[s]);
        }
    }
    while (l->busy > 0 || l->nstreams > 0 || loop_paused(l)) {
        loop_pump(l);
        loop_deadline(l);
        if (atomic_load(&aborted) && l->busy == 0)
            break;
    }
}

/* One wait for events, and what they lead to. */
static void loop_pump(struct loop *l)
{
    struct epoll_event events[64];
    int wait_ms = loop_run_timers(l);
    int n = epoll_wait(l->epfd, events, (int)(sizeof events / sizeof events[0]), wait_ms);
    if (n < 0 && errno != EINTR)
        die("epoll_wait failed");
    for (int i = 0; i < n; i++) {
        struct pool *p = &l->pools[events[i].data.u64 >> 32];
        curl_socket_t s = (curl_socket_t)(uint32_t)events[i].data.u64;
        int flags = ((events[i].events & EPOLLIN) ? CURL_CSELECT_IN : 0) |
                    ((events[i].events & EPOLLOUT) ? CURL_CSELECT_OUT : 0) |
                    ((events[i].events & (EPOLLERR | EPOLLHUP)) ? CURL_CSELECT_ERR : 0);
        int running;
        curl_multi_socket_action(p->multi, s, flags, &running);
        pool_collect(p);
        loop_flush(l);
        /* Start the requests those answers led to now, not after the whole batch:
         * the wait would count in their latency. */
        loop_run_due(l);
    }
}

/* A thread: set-up (each client creates its matches), then the timed play. */
static void *loop_main(void *arg)
{
    struct loop *l = arg;
    loop_run(l);
    pthread_barrier_wait(&set_up);
    /* -W: the watchers' own loop (their reading is not the players' clients' wait) opens
     * them on the first match, and they get their first state, untimed. */
    for (long i = 0; l->watchers && i < nwatchers && !atomic_load(&aborted); i++)
        stream_open(&l->watchers[i], &l->pools[0], 0, NULL);
    while (l->watchers && l->watchers_ready < nwatchers && !atomic_load(&aborted))
        loop_pump(l);
    pthread_barrier_wait(&watching);
    pthread_barrier_wait(&start_line);
    l->playing = true;
    if (!atomic_load(&aborted))
        loop_run(l);
    return NULL;
}

static CURL *new_handle(struct client *c)
{
    CURL *curl = curl_easy_init();
    if (!curl)
        die("curl_easy_init failed");
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, c);
    curl_easy_setopt(curl, CURLOPT_PRIVATE, c);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT, 60L);
    curl_easy_setopt(curl, CURLOPT_PROXY, ""); /* straight to the daemon, whatever the env */
    return curl;
}

static void loop_init(struct loop *l, struct client *clients, size_t nclients)
{
    l->clients = clients;
    l->nclients = nclients;
    l->npools = nclients ? (nclients + POOL_CLIENTS - 1) / POOL_CLIENTS : 1;
    l->pools = calloc(l->npools, sizeof *l->pools);
    l->due = calloc(l->npools, sizeof *l->due);
    l->queue = calloc(nclients + 1, sizeof *l->queue);
    l->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (!l->pools || !l->due || !l->queue || l->epfd < 0)
        die("cannot set up an event loop");
    if (player_streams) { /* (a free slot at all times: lookups end) */
        size_t slots = 2;
        while (slots < 2 * nclients)
            slots *= 2;
        l->ids = calloc(slots, sizeof *l->ids);
        l->by_id = calloc(slots, sizeof *l->by_id);
        l->id_mask = slots - 1;
        if (!l->ids || !l->by_id)
            die("out of memory");
    }
    for (size_t i = 0; i < l->npools; i++) {
        struct pool *p = &l->pools[i];
        size_t lo = i * nclients / l->npools, hi = (i + 1) * nclients / l->npools;
        p->loop = l;
        p->timer_at = -1;
        if (!(p->multi = curl_multi_init()))
            die("curl_multi_init failed");
        curl_multi_setopt(p->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
        curl_multi_setopt(p->multi, CURLMOPT_SOCKETDATA, p);
        curl_multi_setopt(p->multi, CURLMOPT_TIMERFUNCTION, on_timer);
        curl_multi_setopt(p->multi, CURLMOPT_TIMERDATA, p);
        /* Keep every client's connections open between its requests: one connection per
         * client and process, never more, as each has one request at a time (libcurl's
         * cache counts the streams' connections too: -S's, -P's (one roster's at most in
         * a pool) and -W's). */
        long per_client = stream_mode && !player_streams ? MAX_SEATS + 1 : 1;
        curl_multi_setopt(p->multi, CURLMOPT_MAXCONNECTS,
                          nclients ? ((long)(hi - lo) * per_client +
                                      (player_streams ? MAX_SEATS : 0)) *
                                         (nurls > 1 ? nurls : 1)
                                   : nwatchers);
        for (size_t j = lo; j < hi; j++)
            clients[j].pool = p;
    }
}

/* -P: the rosters that seat a loop of n clients (none without -P). */
static size_t loop_rosters(size_t n)
{
    return player_streams ? (n + ROSTER_MATCHES - 1) / ROSTER_MATCHES : 0;
}

/* -P: seats the loop's clients, an equal share of them in order at each of the rosters
 * r[0 .. loop_rosters), whose streams go in the pool of their first client. */
static void loop_seat(struct loop *l, struct roster *r)
{
    l->rosters = r;
    l->nrosters = loop_rosters(l->nclients);
    for (size_t j = 0; l->nrosters > 0 && j < l->nclients; j++) {
        struct roster *mine = &r[j * l->nrosters / l->nclients];
        l->clients[j].roster = mine;
        if (!mine->pool)
            mine->pool = l->clients[j].pool;
    }
}

/* -P: the states kept that no match of the loop claimed, but for the first states of the
 * matches created as the clock ran out (answered after the deadline: never taken on). */
static long loop_strays(const struct loop *l)
{
    long n = 0;
    for (size_t i = 0; i < l->nearly; i++) {
        bool late = false;
        for (size_t j = 0; j < l->nclients && !late; j++) {
            const struct match *m = &matches[l->clients[j].cur];
            late = m->id == l->early[i].id && !m->over;
        }
        n += !late;
    }
    return n;
}

static void loop_finish(struct loop *l)
{
    for (size_t i = 0; i < l->nclients; i++) {
        client_streams_close(&l->clients[i]);
        for (int s = 0; s < MAX_SEATS; s++)
            free(l->clients[i].streams[s].buf);
        curl_easy_cleanup(l->clients[i].curl);
        free(l->clients[i].buf);
    }
    for (size_t i = 0; i < l->nrosters; i++)
        for (int s = 0; s < MAX_SEATS; s++) {
            stream_close(&l->rosters[i].streams[s]);
            free(l->rosters[i].streams[s].buf);
        }
    for (size_t i = 0; i < l->nearly; i++)
        free(l->early[i].text);
    free(l->early);
    free(l->ids);
    free(l->by_id);
    for (long i = 0; l->watchers && i < nwatchers; i++) {
        stream_close(&l->watchers[i]);
        free(l->watchers[i].buf);
    }
    free(l->watchers);
    free(l->queue);
    for (size_t i = 0; i < l->npools; i++)
        curl_multi_cleanup(l->pools[i].multi);
    free(l->pools);
    free(l->due);
    if (l->epfd >= 0)
        close(l->epfd);
    free(l->post.v);
    free(l->get.v);
}

/* ---- Set-up and the daemon's figures ------------------------------------------------------- */

static struct curl_slist *auth_headers(const char *token, size_t n)
{
    char h[512];
    snprintf(h, sizeof h, "Authorization: Bearer %.*s", (int)n, token);
    struct curl_slist *l = curl_slist_append(NULL, "Content-Type: application/json");
    l = curl_slist_append(l, h);
    if (!l)
        die("out of memory");
    return l;
}

/* The operator confirms `player`'s email address (POST /v1/players/{id}/email/confirm). */
static void confirm_email(struct client *c, int64_t player)
{
    char url[512];
    snprintf(url, sizeof url, "%s/v1/players/%lld/email/confirm", base_url, (long long)player);
    CURL *h = new_handle(c);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, operator_headers);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, "{}");
    CURLcode rc = curl_easy_perform(h);
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(h);
    if (rc != CURLE_OK || status != 200) {
        fprintf(stderr, "bench_service: confirming player %lld's email: %s, HTTP %ld\n",
                (long long)player, curl_easy_strerror(rc), status);
        die("cannot confirm the players' email addresses");
    }
}

/* Registers roster k's players (benchS, or with -P benchK-S after the first roster), with
 * an email address and a webhook URL when asked, so that every move makes notifications. */
static void register_players(struct roster *r, size_t k, const char *email_domain,
                             const char *webhook_base)
{
    struct client c = {0};
    c.curl = new_handle(&c);
    struct curl_slist *json = curl_slist_append(NULL, "Content-Type: application/json");
    char url[512];
    snprintf(url, sizeof url, "%s/v1/players", base_url);
    curl_easy_setopt(c.curl, CURLOPT_URL, url);
    curl_easy_setopt(c.curl, CURLOPT_HTTPHEADER, json);
    for (int s = 0; s < MAX_SEATS; s++) {
        char name[48], body[1024];
        if (k > 0)
            snprintf(name, sizeof name, "bench%zu-%d", k, s);
        else
            snprintf(name, sizeof name, "bench%d", s);
        int n = snprintf(body, sizeof body, "{\"name\": \"%s\"", name);
        if (email_domain)
            n += snprintf(body + n, sizeof body - (size_t)n, ", \"email\": \"%s@%s\"", name,
                          email_domain);
        if (webhook_base)
            n += snprintf(body + n, sizeof body - (size_t)n,
                          ", \"webhook_url\": \"%s/hook/%s\"", webhook_base, name);
        /* (seated without being asked: the benchmark's matches start at once; mailed even
         * while watching the match's stream, as the one-request client does: every turn
         * makes an email too) */
        snprintf(body + n, sizeof body - (size_t)n,
                 ", \"preferences\": {\"seat_without_asking\": true%s}}",
                 email_domain ? ", \"email_when_watching\": true" : "");
        c.len = 0;
        curl_easy_setopt(c.curl, CURLOPT_POSTFIELDS, body);
        CURLcode rc = curl_easy_perform(c.curl);
        long status = 0;
        curl_easy_getinfo(c.curl, CURLINFO_RESPONSE_CODE, &status);
        struct answer a;
        if (rc != CURLE_OK || status != 201 || !answer_read(c.buf, c.len, &a) ||
            !span_int(a.id, &r->ids[s]) || !a.token.p || a.token.n < 3) {
            fprintf(stderr, "bench_service: POST /v1/players: %s, HTTP %ld: %.300s\n",
                    curl_easy_strerror(rc), status, c.buf ? c.buf : "");
            die("cannot register the players");
        }
        r->headers[s] = auth_headers(a.token.p + 1, a.token.n - 2);
        if (email_domain) /* (mailed only once the address is confirmed: the operator does) */
            confirm_email(&c, r->ids[s]);
    }
    curl_slist_free_all(json);
    curl_easy_cleanup(c.curl);
    free(c.buf);
}

/* Every client holds a socket: the soft limit on open files goes up to the hard one, and
 * as root both go up to what the run needs if the hard limit is lower. */
static void raise_open_files(rlim_t need)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return;
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need) {
        struct rlimit more = {need, need};
        if (setrlimit(RLIMIT_NOFILE, &more) == 0)
            return;
    }
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need)
        fprintf(stderr, "bench_service: at most %llu open files, about %llu needed\n",
                (unsigned long long)rl.rlim_cur, (unsigned long long)need);
}

/* A "Name:   123 kB" line of /proc/PID/status, in MiB; -1 if absent. */
static double proc_status_mib(long pid, const char *name)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%ld/status", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    double v = -1;
    size_t n = strlen(name);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, name, n) && line[n] == ':')
            v = strtod(line + n + 1, NULL) / 1024.0;
    fclose(f);
    return v;
}

/* User + system CPU seconds the process has used so far (/proc/PID/stat fields 14 and 15). */
static double proc_cpu_seconds(long pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* the command name may hold spaces */
    unsigned long long ut = 0, st = 0;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
        return -1;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* The CPU seconds of process `pid` and of its children (a PostgreSQL server: its backends). */
static double tree_cpu_seconds(long pid)
{
    double sum = proc_cpu_seconds(pid);
    DIR *d = opendir("/proc");
    struct dirent *de;
    while (d && (de = readdir(d))) {
        long child = strtol(de->d_name, NULL, 10);
        char path[64], buf[512];
        snprintf(path, sizeof path, "/proc/%ld/stat", child);
        FILE *f = child > 0 ? fopen(path, "r") : NULL;
        if (!f)
            continue;
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = '\0';
        char *p = strrchr(buf, ')');
        long ppid = 0;
        if (p && sscanf(p + 2, "%*c %ld", &ppid) == 1 && ppid == pid)
            sum += proc_cpu_seconds(child);
    }
    if (d)
        closedir(d);
    return sum;
}

static double self_cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: bench_service -u URL -k OPERATOR_TOKEN -p DAEMON_PID [-g GAME|mix]\n"
            "         [-c MATCHES] [-C CLIENTS] [-T THREADS] [-t SECONDS] [-s SEED]\n"
            "         [-e EMAIL_DOMAIN] [-w WEBHOOK_BASE_URL] [-S | -P] [-W WATCHERS]\n"
            "         [-o OPTIONS] [-i PAUSE_MS] [-D DB_PID] [-H]\n"
            "  -u, -p  again for each more daemon process over the same database (up to 8):\n"
            "      match i is played on the i-th URL modulo their number; the daemon CPU and\n"
            "      memory columns are their sums\n"
            "  -D  the database server's process (PostgreSQL's postmaster): its CPU and its\n"
            "      children's over the run, in one more column\n"
            "  -g  hearts (default), horseshoe, snag, horse-thief, speed, or mix (all five)\n"
            "  -c  concurrent matches (default 1); -C clients = connections (default: as many\n"
            "      as matches; each plays its share of the matches round-robin)\n"
            "  -T  event-loop threads (default 1); -t seconds of play (default 15)\n"
            "  -e, -w  register the players with an email address at that domain and a\n"
            "      webhook URL under that base, so every move makes notifications\n"
            "  -S  the one-request client: each seat's own event stream pushes its view, and\n"
            "      the move is posted on it, no GET (one client per match)\n"
            "  -P  the same on one stream per player (GET /v1/players/me/events) instead of one\n"
            "      per seat: each event-loop thread seats its own players, a set of them for\n"
            "      each 1,024 of its matches (one -u only)\n"
            "  -W  that many spectator streams on the first match, open before the clock\n"
            "  -o  the matches' options as JSON, e.g. '{\"target\": 100000}'\n"
            "  -i  a pause of that many ms after each answer to a move (a player's pace)\n"
            "  -H  prints the table header and exits\n");
    exit(2);
}

static void print_header(void)
{
    printf("| game | matches | clients | moves | moves/s | requests/s | POST p50 ms | POST p99 ms "
           "| POST max ms | GET p50 ms | GET p99 ms | daemon CPU | daemon us/move | client CPU "
           "| VmHWM MiB | VmRSS MiB |\n"
           "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
           "| ---: | ---: | ---: | ---: |\n");
}

/* What a run measured. */
struct run {
    const char *game;
    long matches, clients, moves, requests;
    double wall, daemon_cpu, client_cpu; /* seconds */
    long pids[MAX_PROCS];
    int npids;
    double db_cpu;                       /* seconds; < 0: no -D */
    struct samples post, get;
};

static double sum_status_mib(const struct run *r, const char *name)
{
    double sum = 0;
    for (int i = 0; i < r->npids; i++)
        sum += proc_status_mib(r->pids[i], name);
    return sum;
}

static void print_row(struct run *r)
{
    qsort(r->post.v, r->post.n, sizeof *r->post.v, cmp_double);
    qsort(r->get.v, r->get.n, sizeof *r->get.v, cmp_double);
    printf("| %s | %ld | %ld | %ld | %.0f | %.0f | %.2f | %.2f | %.1f | %.2f | %.2f | %.0f%% "
           "| %.0f | %.0f%% | %.1f | %.1f |",
           r->game, r->matches, r->clients, r->moves, (double)r->moves / r->wall,
           (double)r->requests / r->wall, quantile_ms(&r->post, 0.50), quantile_ms(&r->post, 0.99),
           r->post.n ? r->post.v[r->post.n - 1] * 1e3 : 0.0, quantile_ms(&r->get, 0.50),
           quantile_ms(&r->get, 0.99), 100 * r->daemon_cpu / r->wall,
           r->moves ? r->daemon_cpu * 1e6 / (double)r->moves : 0.0, 100 * r->client_cpu / r->wall,
           sum_status_mib(r, "VmHWM"), sum_status_mib(r, "VmRSS"));
    if (r->db_cpu >= 0)
        printf(" %.0f%% |", 100 * r->db_cpu / r->wall);
    printf("\n");
    fflush(stdout);
    if (r->npids > 1) { /* (the row has their sums) */
        fprintf(stderr, "bench_service: VmHWM of each process");
        for (int i = 0; i < r->npids; i++)
            fprintf(stderr, "%s %.1f", i ? "," : "", proc_status_mib(r->pids[i], "VmHWM"));
        fprintf(stderr, " MiB\n");
    }
}

int main(int argc, char **argv)
{
    const char *token = NULL, *game = "hearts", *email_domain = NULL, *webhook_base = NULL;
    long pids[MAX_PROCS], npids = 0, db_pid = 0, nmatches = 1, nclients = 0, nthreads = 1;
    double seconds = 15;
    uint64_t seed = 1;
    int opt;
    while ((opt = getopt(argc, argv, "u:k:p:g:c:C:T:t:s:e:w:SPW:o:i:D:H")) != -1) {
        switch (opt) {
        case 'u':
            if (nurls == MAX_PROCS)
                usage();
            base_urls[nurls++] = optarg;
            base_url = base_urls[0];
            break;
        case 'D':
            db_pid = strtol(optarg, NULL, 10);
            break;
        case 'k':
            token = optarg;
            break;
        case 'p':
            if (npids == MAX_PROCS)
                usage();
            pids[npids++] = strtol(optarg, NULL, 10);
            break;
        case 'g':
            game = optarg;
            break;
        case 'c':
            nmatches = strtol(optarg, NULL, 10);
            break;
        case 'C':
            nclients = strtol(optarg, NULL, 10);
            break;
        case 'T':
            nthreads = strtol(optarg, NULL, 10);
            break;
        case 't':
            seconds = strtod(optarg, NULL);
            break;
        case 's':
            seed = strtoull(optarg, NULL, 10);
            break;
        case 'e':
            email_domain = optarg;
            break;
        case 'w':
            webhook_base = optarg;
            break;
        case 'S':
            stream_mode = true;
            break;
        case 'P':
            stream_mode = player_streams = true;
            break;
        case 'W':
            nwatchers = strtol(optarg, NULL, 10);
            break;
        case 'o':
            match_options = optarg;
            break;
        case 'i':
            pause_s = strtod(optarg, NULL) / 1000;
            break;
        case 'H':
            print_header();
            return 0;
        default:
            usage();
        }
    }
    int only = -1; /* the game of every match, or -1 for the mix */
    for (int g = 0; g < NGAMES; g++)
        if (!strcmp(game, games[g].name))
            only = g;
    if (only < 0 && strcmp(game, "mix") != 0)
        usage();
    if (nclients == 0 || nclients > nmatches)
        nclients = nmatches;
    bool pids_ok = npids > 0;
    for (long i = 0; i < npids; i++)
        pids_ok = pids_ok && pids[i] > 0;
    if (!base_url || !token || !pids_ok || nmatches < 1 || nmatches > 1000000 || nclients < 1 ||
        nclients > 100000 || nthreads < 1 || nthreads > 64 || seconds <= 0)
        usage();
    if (nthreads > nclients)
        nthreads = nclients;
    if ((stream_mode && nclients != nmatches) || (player_streams && nurls > 1))
        usage(); /* (-S, -P: one client per match; -P: one process) */
    for (int g = 0; g < NGAMES; g++)
        if ((only < 0 || g == only) && games[g].seats > nseats)
            nseats = games[g].seats;
    raise_open_files((rlim_t)nclients * (stream_mode && !player_streams ? MAX_SEATS + 1 : 1) +
                     (player_streams ? (rlim_t)(nclients / ROSTER_MATCHES + nthreads) * MAX_SEATS
                                     : 0) +
                     (rlim_t)nwatchers + 64);
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0)
        die("curl_global_init failed");
    size_t ntok = strlen(token);
    operator_headers = auth_headers(token, ntok);

    /* The players: one roster seats every match; with -P each loop seats its clients'
     * matches with rosters of its own, one for each ROSTER_MATCHES of them or fewer. */
    nrosters = 0;
    for (long t = 0; player_streams && t < nthreads; t++)
        nrosters += loop_rosters((size_t)((t + 1) * nclients / nthreads - t * nclients / nthreads));
    if (!player_streams)
        nrosters = 1;
    if (!(rosters = calloc(nrosters, sizeof *rosters)))
        die("out of memory");
    for (size_t k = 0; k < nrosters; k++)
        register_players(&rosters[k], k, email_domain, webhook_base);

    /* Match i is of game i mod 5 in the mix; client i plays an equal share of the matches,
     * loop i drives an equal share of the clients. */
    matches = calloc((size_t)nmatches, sizeof *matches);
    struct client *clients = calloc((size_t)nclients, sizeof *clients);
    struct loop *loops = calloc((size_t)nthreads + 1, sizeof *loops);
    if (!matches || !clients || !loops)
        die("out of memory");
    for (long i = 0; i < nmatches; i++)
        matches[i] = (struct match){.game = (int8_t)(only >= 0 ? only : i % NGAMES), .holder = -1};
    for (long i = 0; i < nclients; i++) {
        struct client *c = &clients[i];
        c->first = (size_t)(i * nmatches / nclients);
        c->nmatches = (size_t)((i + 1) * nmatches / nclients) - c->first;
        c->cur = c->first;
        c->rng = seed * 1000003u + (uint64_t)i;
        c->curl = new_handle(c);
        c->roster = rosters; /* (-P: its loop's, below) */
    }
    long nloops = nthreads + (nwatchers > 0); /* -W: the last loop is the watchers' */
    struct roster *next_roster = rosters;
    if (pthread_barrier_init(&set_up, NULL, (unsigned)nloops + 1) != 0 ||
        pthread_barrier_init(&watching, NULL, (unsigned)nloops + 1) != 0 ||
        pthread_barrier_init(&start_line, NULL, (unsigned)nloops + 1) != 0)
        die("pthread_barrier_init failed");
    for (long t = 0; t < nloops; t++) {
        size_t lo = (size_t)(t * nclients / nthreads), hi = (size_t)((t + 1) * nclients / nthreads);
        if (t == nthreads) { /* the watchers' loop: no clients, one pool */
            loop_init(&loops[t], NULL, 0);
            if (!(loops[t].watchers = calloc((size_t)nwatchers, sizeof(struct stream))))
                die("out of memory");
        } else {
            loop_init(&loops[t], clients + lo, hi - lo);
            loop_seat(&loops[t], next_roster);
            next_roster += loops[t].nrosters;
        }
        if (pthread_create(&loops[t].thread, NULL, loop_main, &loops[t]) != 0)
            die("pthread_create failed");
    }
    /* Every match has been created and the watchers watch (untimed); the clock starts. */
    double t_setup = now();
    pthread_barrier_wait(&set_up);
    t_setup = now() - t_setup;
    pthread_barrier_wait(&watching);
    if (atomic_load(&failures) > 0)
        atomic_store(&aborted, true);
    double cpu0 = 0, self0 = self_cpu_seconds(), db0 = db_pid ? tree_cpu_seconds(db_pid) : 0;
    for (long i = 0; i < npids; i++)
        cpu0 += proc_cpu_seconds(pids[i]);
    const char *trace_path = getenv("CARDPOST_BENCH_TRACE");
    if (trace_path && *trace_path && !(trace = fopen(trace_path, "w")))
        die("CARDPOST_BENCH_TRACE: cannot write the file");
    double t0 = now();
    deadline = t0 + seconds;
    pthread_barrier_wait(&start_line);
    for (long t = 0; t < nloops; t++)
        pthread_join(loops[t].thread, NULL);
    double wall = now() - t0;
    double cpu = -cpu0, self = self_cpu_seconds() - self0;
    for (long i = 0; i < npids; i++)
        cpu += proc_cpu_seconds(pids[i]);
    long failed_requests = atomic_load(&failures);

    char label[96];
    snprintf(label, sizeof label, "%s%s", game,
             player_streams ? " (player streams)" : stream_mode ? " (streams)" : "");
    if (nwatchers > 0)
        snprintf(label + strlen(label), sizeof label - strlen(label), " +%ld watchers",
                 nwatchers);
    struct run r = {.game = label,
                    .matches = nmatches,
                    .clients = nclients,
                    .wall = wall,
                    .daemon_cpu = cpu,
                    .client_cpu = self,
                    .npids = (int)npids,
                    .db_cpu = db_pid ? tree_cpu_seconds(db_pid) - db0 : -1};
    memcpy(r.pids, pids, sizeof pids);
    long connects = 0, replaced = 0, refused = 0, gone = 0, repeats = 0, stalled = 0, strays = 0;
    for (long t = 0; t < nloops; t++) {
        for (size_t j = 0; j < loops[t].post.n; j++)
            samples_add(&r.post, loops[t].post.v[j]);
        for (size_t j = 0; j < loops[t].get.n; j++)
            samples_add(&r.get, loops[t].get.v[j]);
        r.moves += loops[t].moves;
        r.requests += loops[t].requests;
        connects += loops[t].connects;
        replaced += loops[t].replaced;
        refused += loops[t].refused;
        gone += loops[t].watchers_gone;
        repeats += loops[t].repeats;
        stalled += loops[t].stalled;
        strays += loop_strays(&loops[t]);
        loop_finish(&loops[t]);
    }
    if (atomic_load(&aborted)) {
        fprintf(stderr, "bench_service: %ld requests failed while creating the matches\n",
                failed_requests);
    } else {
        print_row(&r);
        fprintf(stderr,
                "bench_service: %ld matches created in %.1f s before the clock started, %ld "
                "finished and replaced while it ran; %ld connections opened in all\n",
                nmatches, t_setup, replaced, connects);
        if (gone)
            fprintf(stderr, "bench_service: %ld watchers saw their match end before the clock "
                            "did (-o '{\"target\": 100000}' makes it last)\n", gone);
        if (refused)
            fprintf(stderr, "bench_service: %ld moves refused 409 (the other seat first)\n",
                    refused);
        if (repeats)
            fprintf(stderr, "bench_service: %ld states pushed to a seat again (a seq it had "
                            "had already, or an older one)\n", repeats);
        if (strays)
            fprintf(stderr, "bench_service: %ld states pushed of matches no client was playing "
                            "(after their final state, or not the loop's)\n", strays);
        if (stalled)
            fprintf(stderr, "bench_service: %ld matches waited over a second for a pushed state "
                            "at the deadline (one lost, or pushes that slow)\n", stalled);
        if (failed_requests)
            fprintf(stderr, "bench_service: %ld requests failed\n", failed_requests);
    }

    if (trace)
        fclose(trace);
    free(r.post.v);
    free(r.get.v);
    free(clients);
    free(loops);
    free(matches);
    pthread_barrier_destroy(&set_up);
    pthread_barrier_destroy(&watching);
    pthread_barrier_destroy(&start_line);
    for (size_t k = 0; k < nrosters; k++)
        for (int s = 0; s < MAX_SEATS; s++)
            curl_slist_free_all(rosters[k].headers[s]);
    free(rosters);
    curl_slist_free_all(operator_headers);
    curl_global_cleanup();
    return failed_requests ? 1 : 0;
}
