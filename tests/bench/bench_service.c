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
 * own (what watchers add to a move). Every client runs in one event loop per thread (epoll
 * over keep-alive HTTP/1.1 connections of its own: "The transport" below), so thousands of
 * connections cost the client little CPU next to the daemon it shares the cores with.
 * Prints one markdown table row.
 */
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
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

static struct curl_slist *operator_headers; /* (the set-up's libcurl requests) */
static char *operator_auth;                 /* the same as header lines, for the loops' */
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

static bool span_int(struct span s, int64_t *out);
static bool span_seats(struct span arr, uint32_t *mask);

/* Whether a view read so far (its members up to "you") is all the client needs: a seat
 * not to move has no use for its "view" and "legal", the bulk of its text, and a bot would
 * not read them. */
static bool answer_enough(const struct answer *a)
{
    int64_t you;
    uint32_t to_move;
    if (!a->id.p || !a->status.p || !a->seq.p || !a->to_move.p || !a->you.p)
        return false;
    return !span_int(a->you, &you) || !span_seats(a->to_move, &to_move) || you < 0 ||
           you >= 32 || !((to_move >> you) & 1);
}

/* Finds the members the client uses in a top-level JSON object, up to those it needs
 * (answer_enough). False if it is not one. */
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
        else if (key_is(k, kn, "you")) {
            a->you = s;
            if (answer_enough(a))
                return true;
        } else if (key_is(k, kn, "legal"))
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

/* ---- The transport: HTTP/1.1 on keep-alive sockets ---------------------------------------- */

/* The clients' requests and streams go over sockets of their own, with a reader of the few
 * answers the daemon gives (a status line, headers, a body of a Content-Length or chunked).
 * libcurl's multi socket interface did this until issue 18's session of 2026-11-29: its
 * transfer's set-up and header handling, its clock reads and its sockets' epoll changes
 * were a third of the load generator's samples (perf), about 15 µs a move, and unpinned the
 * load generator shares the daemon's two cores (docs/benchmarks.md "A load generator without
 * libcurl"). libcurl still makes the set-up's few requests (the players' registration). */

struct target { /* where base_urls[i] is */
    struct sockaddr_storage addr;
    socklen_t len;
    char host[128]; /* its Host header's value */
};
static struct target targets[MAX_PROCS];

/* A connection's owner hears of its answer's body as it comes and of its end: `error` NULL
 * and the status, or what went wrong (the connection is closed then). */
typedef void conn_data_fn(void *owner, const char *p, size_t n);
typedef void conn_done_fn(void *owner, const char *error, long status);

enum read_state { RS_HEAD, RS_LENGTH, RS_CHUNK_SIZE, RS_CHUNK_DATA, RS_CHUNK_END, RS_TRAILER,
                  RS_UNTIL_CLOSE };

struct conn {
    int fd; /* -1: not connected (a request connects it) */
    int target;
    struct loop *loop;
    void *owner;
    conn_data_fn *on_data;
    conn_done_fn *on_done;
    bool busy;          /* a request in flight */
    bool close_after;   /* the answer said Connection: close */
    bool watch_out;     /* EPOLLOUT is in its epoll set: a request not all written */
    enum read_state rs;
    long status;
    size_t left;        /* RS_LENGTH, RS_CHUNK_DATA: bytes still to come */
    char *out;          /* the request's bytes not yet written: out[out_off .. out_len) */
    size_t out_off, out_len, out_cap;
    char *in;           /* bytes read, not yet taken: in[in_off .. in_len) */
    size_t in_off, in_len, in_cap;
};

struct client;

struct roster;

/* An event stream the client reads (-S: a seat's own; -P: a player's; -W: a spectator's). */
struct stream {
    struct client *c;       /* the client whose seat it is; NULL for a player's, a spectator's */
    struct roster *roster;  /* -P: the roster whose player it is; NULL for the others */
    struct loop *loop;
    int seat;               /* the seat of its client's match, or its player's in the roster */
    bool got_state;         /* its first state came */
    bool open;              /* its request is out, on its own connection */
    struct conn conn;
    char *buf;              /* text not yet split into messages */
    size_t len, cap;
};

/* The players who sit at a client's match: seat s is player s of the client's roster. One
 * roster for all the clients, but with -P one for each set of at most ROSTER_MATCHES
 * clients of a loop, each player with their own stream of all their matches. */
#define ROSTER_MATCHES 1024 /* -P: the most matches a player's stream carries */

struct roster {
    int64_t ids[MAX_SEATS];
    char *auth[MAX_SEATS];            /* player s's header lines (their token) */
    struct stream streams[MAX_SEATS]; /* -P: player s's own (the seats the games have) */
    struct loop *loop;                /* -P: the loop the streams are in */
};

struct client {
    struct loop *loop;
    struct conn *conns;     /* one a process (-u), the one of base_urls[i] at i */
    size_t first, nmatches; /* its matches: matches[first .. first + nmatches) */
    size_t cur;             /* the one it plays now (round-robin), or creates during set-up */
    size_t created;         /* matches created during set-up */
    enum request req;       /* the request in flight */
    int seat;               /* the seat it reads or moves for */
    struct roster *roster;  /* who sits at its matches */
    double sent;            /* when the request went out */
    uint64_t rng;
    char url[128];  /* the request's path */
    char body[320]; /* a POST's body */
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

/* One thread's event loop: epoll over its connections. */
struct loop {
    pthread_t thread;
    int epfd;
    double checked; /* when the requests in flight were last looked at for a timeout */
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

/* Reads "http://HOST:PORT" (an IPv6 host in brackets) into target i. */
static void target_init(int i, const char *url)
{
    const char *p = strncmp(url, "http://", 7) ? NULL : url + 7;
    char host[128], port[16];
    const char *colon = p ? strrchr(p, ':') : NULL;
    if (!p || !colon || (size_t)(colon - p) >= sizeof host || strlen(colon + 1) >= sizeof port)
        die("a -u must be http://HOST:PORT");
    snprintf(targets[i].host, sizeof targets[i].host, "%s", p);
    size_t n = (size_t)(colon - p);
    if (n >= 2 && p[0] == '[' && p[n - 1] == ']')
        p++, n -= 2;
    memcpy(host, p, n);
    host[n] = '\0';
    snprintf(port, sizeof port, "%s", colon + 1);
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai;
    if (getaddrinfo(host, port, &hints, &ai) != 0)
        die("cannot resolve a -u's host");
    memcpy(&targets[i].addr, ai->ai_addr, ai->ai_addrlen);
    targets[i].len = ai->ai_addrlen;
    freeaddrinfo(ai);
}

static void conn_init(struct conn *k, struct loop *l, int target, void *owner,
                      conn_data_fn *on_data, conn_done_fn *on_done)
{
    *k = (struct conn){.fd = -1, .target = target, .loop = l, .owner = owner,
                       .on_data = on_data, .on_done = on_done};
}

/* (a conn never initialised, all zeros, has nothing to close) */
static void conn_close(struct conn *k)
{
    if (k->loop && k->fd >= 0) {
        epoll_ctl(k->loop->epfd, EPOLL_CTL_DEL, k->fd, NULL);
        close(k->fd);
    }
    k->fd = -1;
    k->busy = k->watch_out = k->close_after = false;
    k->out_off = k->out_len = k->in_off = k->in_len = 0;
}

static void conn_free(struct conn *k)
{
    conn_close(k);
    free(k->out);
    free(k->in);
    k->out = k->in = NULL;
    k->out_cap = k->in_cap = 0;
}

/* The request failed: the connection closes, its owner hears why. */
static void conn_fail(struct conn *k, const char *error)
{
    bool busy = k->busy;
    conn_close(k);
    if (busy)
        k->on_done(k->owner, error, 0);
}

static bool conn_watch(struct conn *k, bool out)
{
    struct epoll_event ev = {.events = EPOLLIN | (out ? EPOLLOUT : 0u), .data.ptr = k};
    if (epoll_ctl(k->loop->epfd, EPOLL_CTL_MOD, k->fd, &ev) != 0)
        return false;
    k->watch_out = out;
    return true;
}

/* Writes what it can of the request; the rest waits for EPOLLOUT. */
static void conn_flush(struct conn *k)
{
    while (k->out_off < k->out_len) {
        ssize_t n = send(k->fd, k->out + k->out_off, k->out_len - k->out_off, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (!k->watch_out && !conn_watch(k, true))
                conn_fail(k, "epoll_ctl failed");
            return;
        }
        if (n < 0) {
            conn_fail(k, strerror(errno));
            return;
        }
        k->out_off += (size_t)n;
    }
    if (k->watch_out && !conn_watch(k, false))
        conn_fail(k, "epoll_ctl failed");
}

static bool conn_connect(struct conn *k)
{
    const struct target *t = &targets[k->target];
    int fd = socket(t->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    /* (a blocking connect: the daemon listens on this machine, the handshake is at once) */
    if (fd < 0 || connect(fd, (const struct sockaddr *)&t->addr, t->len) != 0) {
        if (fd >= 0)
            close(fd);
        return false;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = k};
    if (epoll_ctl(k->loop->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
        close(fd);
        return false;
    }
    k->fd = fd;
    k->loop->connects++;
    return true;
}

/* Sends a request (`headers` whole lines, each ending in CRLF, or NULL; a POST when `body`
 * is given), connecting first if need be. Its answer comes to the owner's callbacks. */
static void conn_request(struct conn *k, const char *method, const char *path,
                         const char *headers, const char *body)
{
    k->busy = true;
    k->rs = RS_HEAD;
    if (k->fd < 0 && !conn_connect(k)) {
        conn_fail(k, strerror(errno));
        return;
    }
    size_t blen = body ? strlen(body) : 0;
    size_t need = strlen(method) + strlen(path) + strlen(targets[k->target].host) +
                  (headers ? strlen(headers) : 0) + blen + 96;
    if (need > k->out_cap) {
        k->out_cap = need;
        if (!(k->out = realloc(k->out, k->out_cap)))
            die("out of memory");
    }
    int n = snprintf(k->out, k->out_cap, "%s %s HTTP/1.1\r\nHost: %s\r\n%s", method, path,
                     targets[k->target].host, headers ? headers : "");
    if (body)
        n += snprintf(k->out + n, k->out_cap - (size_t)n, "Content-Length: %zu\r\n\r\n%s", blen,
                      body);
    else
        n += snprintf(k->out + n, k->out_cap - (size_t)n, "\r\n");
    k->out_off = 0;
    k->out_len = (size_t)n;
    conn_flush(k);
}

/* The value of header `name` (lower case, with its colon) if `line` is it. */
static const char *header_value(const char *line, const char *eol, const char *name)
{
    size_t n = strlen(name);
    if ((size_t)(eol - line) < n || strncasecmp(line, name, n))
        return NULL;
    line += n;
    while (line < eol && (*line == ' ' || *line == '\t'))
        line++;
    return line;
}

/* The head of an answer, in[in_off .. head_end): its status and how its body comes. */
static bool conn_head(struct conn *k, const char *p, const char *head_end)
{
    if (head_end - p < 12 || strncmp(p, "HTTP/1.", 7) || p[8] != ' ')
        return false;
    k->status = strtol(p + 9, NULL, 10);
    k->close_after = false;
    bool chunked = false, length = false;
    const char *line = (const char *)memchr(p, '\n', (size_t)(head_end - p)) + 1, *v;
    while (line < head_end) {
        const char *eol = memchr(line, '\r', (size_t)(head_end - line));
        if (!eol)
            eol = head_end;
        if ((v = header_value(line, eol, "content-length:"))) {
            length = true;
            k->left = (size_t)strtoull(v, NULL, 10);
        } else if ((v = header_value(line, eol, "transfer-encoding:")))
            chunked = (size_t)(eol - v) >= 7 && !strncasecmp(eol - 7, "chunked", 7);
        else if ((v = header_value(line, eol, "connection:")))
            k->close_after = (size_t)(eol - v) >= 5 && !strncasecmp(v, "close", 5);
        line = eol + 2;
    }
    k->rs = chunked ? RS_CHUNK_SIZE : length ? RS_LENGTH : RS_UNTIL_CLOSE;
    if (k->status == 204 || k->status == 304 || (k->rs == RS_LENGTH && k->left == 0))
        k->rs = RS_LENGTH, k->left = 0;
    return true;
}

/* The answer is whole: the connection is free for the next request (closed if the daemon
 * said so), and its owner hears of it (and may send that next request at once). */
static void conn_finish(struct conn *k)
{
    k->busy = false;
    k->rs = RS_HEAD;
    if (k->close_after)
        conn_close(k);
    k->on_done(k->owner, NULL, k->status);
}

/* Takes what the bytes read make: the head, the body's pieces, the end. */
static void conn_parse(struct conn *k)
{
    while (k->busy && k->in_off < k->in_len) {
        char *p = k->in + k->in_off;
        size_t have = k->in_len - k->in_off;
        const char *eol;
        switch (k->rs) {
        case RS_HEAD: {
            const char *end = have >= 4 ? find(p, have, "\r\n\r\n", 4) : NULL;
            if (!end) {
                if (have > 65536)
                    conn_fail(k, "an answer's head over 64 KiB");
                return;
            }
            if (!conn_head(k, p, end + 2)) {
                conn_fail(k, "not an HTTP/1.1 answer");
                return;
            }
            k->in_off += (size_t)(end + 4 - p);
            if (k->status >= 100 && k->status < 200) { /* (an interim answer) */
                k->rs = RS_HEAD;
                continue;
            }
            if (k->rs == RS_LENGTH && k->left == 0) {
                conn_finish(k);
                return;
            }
            continue;
        }
        case RS_LENGTH:
        case RS_CHUNK_DATA: {
            size_t n = have < k->left ? have : k->left;
            k->on_data(k->owner, p, n);
            k->in_off += n;
            k->left -= n;
            if (k->left > 0)
                return;
            if (k->rs == RS_LENGTH) {
                conn_finish(k);
                return;
            }
            k->rs = RS_CHUNK_END;
            continue;
        }
        case RS_CHUNK_END:
            if (have < 2)
                return;
            if (p[0] != '\r' || p[1] != '\n') {
                conn_fail(k, "a chunk without its CRLF");
                return;
            }
            k->in_off += 2;
            k->rs = RS_CHUNK_SIZE;
            continue;
        case RS_CHUNK_SIZE:
        case RS_TRAILER:
            if (!(eol = find(p, have, "\r\n", 2)))
                return;
            k->in_off += (size_t)(eol + 2 - p);
            if (k->rs == RS_TRAILER && eol == p) { /* (the empty line that ends it) */
                conn_finish(k);
                return;
            }
            if (k->rs == RS_TRAILER)
                continue;
            k->left = (size_t)strtoull(p, NULL, 16);
            k->rs = k->left ? RS_CHUNK_DATA : RS_TRAILER;
            continue;
        case RS_UNTIL_CLOSE:
            k->on_data(k->owner, p, have);
            k->in_off += have;
            return;
        }
    }
}

/* Its socket is readable (or writable, or failed). */
static void conn_event(struct conn *k, uint32_t events)
{
    if (k->fd < 0)
        return; /* (closed by an earlier event of the same wait) */
    if ((events & EPOLLOUT) && k->out_off < k->out_len) {
        conn_flush(k);
        if (k->fd < 0)
            return;
    }
    if (!(events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
        return;
    for (;;) {
        if (k->in_off == k->in_len)
            k->in_off = k->in_len = 0;
        if (k->in_cap - k->in_len < 16384) {
            if (k->in_off > 0) { /* (the bytes not yet taken to the front) */
                memmove(k->in, k->in + k->in_off, k->in_len - k->in_off);
                k->in_len -= k->in_off;
                k->in_off = 0;
            }
            if (k->in_cap - k->in_len < 16384) {
                k->in_cap = k->in_cap ? 2 * k->in_cap : 65536;
                if (!(k->in = realloc(k->in, k->in_cap)))
                    die("out of memory");
            }
        }
        ssize_t n = recv(k->fd, k->in + k->in_len, k->in_cap - k->in_len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n <= 0) { /* closed: the end of an answer that runs to it, else a failure */
            if (k->busy && k->rs == RS_UNTIL_CLOSE) {
                conn_close(k);
                k->on_done(k->owner, NULL, k->status);
            } else
                conn_fail(k, n == 0 ? "the daemon closed the connection" : strerror(errno));
            return;
        }
        size_t room = k->in_cap - k->in_len;
        k->in_len += (size_t)n;
        if (!k->busy) {
            conn_fail(k, "bytes from the daemon with no request in flight");
            return;
        }
        conn_parse(k);
        if (k->fd < 0 || (size_t)n < room)
            return; /* (a short read: the socket is empty, no second recv to learn it) */
    }
}

static void on_body(void *owner, const char *data, size_t n)
{
    struct client *c = owner;
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
}

/* Sends the client's next request: a POST when `body` is given, else a GET; to the process
 * that plays its match (match i on base_urls[i % n], as ops/nginx/cardpost-upstream.conf
 * routes a match's requests). */
static void client_send(struct client *c, enum request req, const char *headers,
                        const char *body)
{
    c->req = req;
    c->len = 0;
    c->sent = now();
    c->loop->busy++;
    conn_request(&c->conns[c->cur % (size_t)nurls], body ? "POST" : "GET", c->url, headers,
                 body);
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
    snprintf(c->url, sizeof c->url, "/v1/matches");
    client_send(c, REQ_CREATE, operator_auth, c->body);
}

/* ---- The one-request clients (-S, -P) and the watchers (-W) ------------------------------ */

static void client_next(struct client *c);

/* A stream is a request on a connection of its own that never ends by itself while its
 * match runs (a player's: while the loop plays): the loop closes it at the deadline. Each
 * message is split off as it comes; only `state` messages matter (a view, like a GET's
 * answer). */
static void on_stream(void *owner, const char *data, size_t n);
static void stream_done(void *owner, const char *error, long status);

/* Opens the stream of matches[i], on the process that plays it; or with -P, s->roster set,
 * the stream of s's player (i unused: -P plays on one process). */
static void stream_open(struct stream *s, struct loop *l, size_t i, const char *headers)
{
    char path[96];
    if (s->roster)
        snprintf(path, sizeof path, "/v1/players/me/events");
    else
        snprintf(path, sizeof path, "/v1/matches/%lld/events", (long long)matches[i].id);
    s->loop = l;
    s->len = 0;
    s->got_state = false;
    s->open = true;
    l->nstreams++;
    if (s->c)
        s->c->nopen++;
    int target = s->roster ? 0 : (int)(i % (size_t)nurls);
    if (s->conn.loop) { /* (-S: the stream of the client's match before: its buffers kept) */
        conn_close(&s->conn);
        s->conn.target = target;
    } else {
        conn_init(&s->conn, l, target, s, on_stream, stream_done);
    }
    conn_request(&s->conn, "GET", path, headers, NULL);
}

static void stream_close(struct stream *s)
{
    if (!s->open)
        return;
    conn_close(&s->conn);
    s->open = false;
    s->loop->nstreams--;
    if (s->c)
        s->c->nopen--;
}

/* Puts the client on its loop's list for loop_flush (a connection's callbacks start no
 * request: the connection may be in the middle of reading). */
static void client_queue(struct client *c)
{
    struct loop *l = c->loop;
    if (!c->queued) {
        c->queued = true;
        l->queue[l->nqueue++] = c;
    }
}

/* A seat's pushed view (or the answer to its own move): the move it would make, to be
 * posted once nothing else is in flight. Runs inside a connection's callbacks, so it only
 * queues the client; loop_flush posts. False if it is not the seat's view. */
static bool seat_view(struct client *c, int seat, const struct answer *a, const char *text,
                      bool pushed)
{
    struct loop *l = c->loop;
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
    struct loop *l = s->loop;
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
        stream_open(&c->streams[s], c->loop, c->cur, c->roster->auth[s]);
    }
    if (player_streams) {
        c->nopen = games[m->game].seats;
        c->ended = 0;
        loop_carry(c->loop, m->id, c);
        early_claim(c->loop, m->id);
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
        s->loop->watchers_ready++;
    s->got_state = true;
    if (s->c)
        seat_view(s->c, s->seat, &a, data, true);
    else if (s->roster)
        player_state(s, &a, data, (size_t)(end - data));
}

static void on_stream(void *owner, const char *data, size_t n)
{
    struct stream *s = owner;
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
            snprintf(c->url, sizeof c->url, "/v1/matches/%lld/moves", (long long)m->id);
            snprintf(c->body, sizeof c->body, "{\"move\": %s, \"seq\": %lld}", c->pend[s],
                     (long long)m->seq);
            client_send(c, REQ_POST, c->roster->auth[s], c->body);
            return;
        }
}

/* The clients whose streams pushed a move, or with -P the end of their match to its last
 * seat: post the move, or replace the match (outside the connections' callbacks). */
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
static void stream_done(void *owner, const char *error, long status)
{
    struct stream *s = owner;
    stream_close(s);
    struct client *c = s->c;
    if (s->roster) {
        if (now() < deadline)
            failed("player %lld's stream ended: %s, HTTP %ld: %.200s",
                   (long long)s->roster->ids[s->seat], error ? error : "ended", status,
                   s->buf ? s->buf : "");
        return;
    }
    if (!c && !error && status == 200) { /* a watcher: its match is over */
        s->loop->watchers_gone += now() < deadline;
        return;
    }
    bool over = c && matches[c->cur].over;
    if ((error || status != 200 || !over) && now() < deadline) {
        failed("a stream of match %lld ended: %s, HTTP %ld",
               (long long)(c ? matches[c->cur].id : matches[0].id), error ? error : "ended",
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
    if (!c->loop->playing) {
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
        snprintf(c->url, sizeof c->url, "/v1/matches/%lld/moves", (long long)m->id);
        snprintf(c->body, sizeof c->body, "{\"move\": %s, \"seq\": %lld}", m->move,
                 (long long)m->seq);
        client_send(c, REQ_POST, c->roster->auth[c->seat], c->body);
    } else {
        snprintf(c->url, sizeof c->url, "/v1/matches/%lld", (long long)m->id);
        client_send(c, REQ_GET, c->roster->auth[c->seat], NULL);
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
static void client_done(void *owner, const char *error, long status)
{
    struct client *c = owner;
    struct loop *l = c->loop;
    double took = now() - c->sent;
    enum request req = c->req;
    c->req = REQ_NONE;
    c->news = now();
    l->busy--;
    long want = req == REQ_GET ? 200 : 201;
    const char *method = req == REQ_GET ? "GET" : "POST";
    const char *path = c->url;
    int shown = c->len < 300 ? (int)c->len : 300;
    if (stream_mode && l->playing && now() >= deadline)
        client_streams_close(c);
    if (stream_mode && req == REQ_POST && status == 409 && !error) {
        /* (Speed: the other seat's card came first; the streams bring the next view) */
        l->refused++;
        samples_add(&l->post, took);
        client_next(c);
        return;
    }
    if (error || status != want) {
        failed("%s %s: %s, HTTP %ld (expected %ld): %.*s", method, path, error ? error : "answered",
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

/* A request in flight this long fails (the streams are requests that last: not theirs). */
#define REQUEST_TIMEOUT 60

/* Fails the requests in flight past REQUEST_TIMEOUT; looks once a second. */
static void loop_timeouts(struct loop *l)
{
    double t = now();
    if (t - l->checked < 1)
        return;
    l->checked = t;
    for (size_t i = 0; i < l->nclients; i++) {
        struct client *c = &l->clients[i];
        if (c->req != REQ_NONE && t - c->sent > REQUEST_TIMEOUT)
            conn_fail(&c->conns[c->cur % (size_t)nurls], "no answer in 60 s");
    }
}

/* The milliseconds until the next client's pause ends (-i), at most a second. */
static int loop_wait_ms(const struct loop *l)
{
    double next = now() + 1;
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
            stream_open(&r->streams[s], l, 0, r->auth[s]);
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
    int n = epoll_wait(l->epfd, events, (int)(sizeof events / sizeof events[0]), loop_wait_ms(l));
    if (n < 0 && errno != EINTR)
        die("epoll_wait failed");
    for (int i = 0; i < n; i++) {
        conn_event(events[i].data.ptr, events[i].events);
        /* (the moves those answers and states led to go now, not after the whole batch:
         * the wait would count in their latency) */
        loop_flush(l);
    }
    loop_timeouts(l);
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
        stream_open(&l->watchers[i], l, 0, NULL);
    while (l->watchers && l->watchers_ready < nwatchers && !atomic_load(&aborted))
        loop_pump(l);
    pthread_barrier_wait(&watching);
    pthread_barrier_wait(&start_line);
    l->playing = true;
    if (!atomic_load(&aborted))
        loop_run(l);
    return NULL;
}

/* The set-up's requests (libcurl's easy interface) keep their answer in c's buffer. */
static size_t setup_body(char *data, size_t size, size_t nmemb, void *arg)
{
    on_body(arg, data, size * nmemb);
    return size * nmemb;
}

static CURL *new_handle(struct client *c)
{
    CURL *curl = curl_easy_init();
    if (!curl)
        die("curl_easy_init failed");
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, setup_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, c);
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
    l->queue = calloc(nclients + 1, sizeof *l->queue);
    l->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (!l->queue || l->epfd < 0)
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
    /* A connection to each process a client plays on, opened at its first request and
     * kept open between requests (each client has one request at a time). */
    for (size_t i = 0; i < nclients; i++) {
        struct client *c = &clients[i];
        c->loop = l;
        if (!(c->conns = calloc((size_t)nurls, sizeof *c->conns)))
            die("out of memory");
        for (int u = 0; u < nurls; u++)
            conn_init(&c->conns[u], l, u, c, on_body, client_done);
    }
}

/* -P: the rosters that seat a loop of n clients (none without -P). */
static size_t loop_rosters(size_t n)
{
    return player_streams ? (n + ROSTER_MATCHES - 1) / ROSTER_MATCHES : 0;
}

/* -P: seats the loop's clients, an equal share of them in order at each of the rosters
 * r[0 .. loop_rosters), whose streams are the loop's. */
static void loop_seat(struct loop *l, struct roster *r)
{
    l->rosters = r;
    l->nrosters = loop_rosters(l->nclients);
    for (size_t j = 0; l->nrosters > 0 && j < l->nclients; j++) {
        struct roster *mine = &r[j * l->nrosters / l->nclients];
        l->clients[j].roster = mine;
        mine->loop = l;
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
        for (int s = 0; s < MAX_SEATS; s++) {
            conn_free(&l->clients[i].streams[s].conn);
            free(l->clients[i].streams[s].buf);
        }
        for (int u = 0; u < nurls; u++)
            conn_free(&l->clients[i].conns[u]);
        free(l->clients[i].conns);
        free(l->clients[i].buf);
    }
    for (size_t i = 0; i < l->nrosters; i++)
        for (int s = 0; s < MAX_SEATS; s++) {
            stream_close(&l->rosters[i].streams[s]);
            conn_free(&l->rosters[i].streams[s].conn);
            free(l->rosters[i].streams[s].buf);
        }
    for (size_t i = 0; i < l->nearly; i++)
        free(l->early[i].text);
    free(l->early);
    free(l->ids);
    free(l->by_id);
    for (long i = 0; l->watchers && i < nwatchers; i++) {
        stream_close(&l->watchers[i]);
        conn_free(&l->watchers[i].conn);
        free(l->watchers[i].buf);
    }
    free(l->watchers);
    free(l->queue);
    if (l->epfd >= 0)
        close(l->epfd);
    free(l->post.v);
    free(l->get.v);
}

/* ---- Set-up and the daemon's figures ------------------------------------------------------- */

/* A token's header lines for the loops' requests (each ending in CRLF). */
static char *auth_lines(const char *token, size_t n)
{
    char *h = malloc(n + 80);
    if (!h)
        die("out of memory");
    snprintf(h, n + 80, "Content-Type: application/json\r\nAuthorization: Bearer %.*s\r\n",
             (int)n, token);
    return h;
}

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
    CURL *curl = new_handle(&c);
    struct curl_slist *json = curl_slist_append(NULL, "Content-Type: application/json");
    char url[512];
    snprintf(url, sizeof url, "%s/v1/players", base_url);
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, json);
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
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
        CURLcode rc = curl_easy_perform(curl);
        long status = 0;
        curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
        struct answer a;
        if (rc != CURLE_OK || status != 201 || !answer_read(c.buf, c.len, &a) ||
            !span_int(a.id, &r->ids[s]) || !a.token.p || a.token.n < 3) {
            fprintf(stderr, "bench_service: POST /v1/players: %s, HTTP %ld: %.300s\n",
                    curl_easy_strerror(rc), status, c.buf ? c.buf : "");
            die("cannot register the players");
        }
        r->auth[s] = auth_lines(a.token.p + 1, a.token.n - 2);
        if (email_domain) /* (mailed only once the address is confirmed: the operator does) */
            confirm_email(&c, r->ids[s]);
    }
    curl_slist_free_all(json);
    curl_easy_cleanup(curl);
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
    operator_auth = auth_lines(token, ntok);
    for (int i = 0; i < nurls; i++)
        target_init(i, base_urls[i]);

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
            free(rosters[k].auth[s]);
    free(rosters);
    curl_slist_free_all(operator_headers);
    free(operator_auth);
    curl_global_cleanup();
    return failed_requests ? 1 : 0;
}
