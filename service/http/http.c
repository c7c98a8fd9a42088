/* http.c - cardpostd's HTTP side, on libmicrohttpd: a pool of threads (http_threads, one
 * per processor by default), each polling its share of the connections with epoll and
 * running their requests; the limits checked from the headers before any body is read
 * (limits.h, docs/security.md "Limits"); request bodies collected up to API_MAX_BODY (413
 * beyond), the REST API's requests parsed and routed by its table (routes.h; a move that
 * waits for its group commit: async.h), JSON and problem+json answers, and the server-sent
 * event streams of matches, which sleep suspended (no thread, no polling) until a commit.
 * Every answer carries the request's id (X-Request-Id; problem+json's "request_id"), and
 * every request ends with one line in the log (log.h, docs/operations.md "Logs").
 */
#include "http.h"
#include "buf.h"
#include "async.h"
#include "limits.h"
#include "log.h"
#include "mail.h"
#include "metrics.h"
#include "routes.h"

#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/* What libmicrohttpd may use per connection for the request's line and headers, the
 * incoming bytes and the answer's headers (its default is 32 KiB): a request of ours fits in
 * 1 KiB, and at 10,000 connections each KiB is 10 MiB. Bodies are copied out as they come
 * (on_request), so a large one still goes through. */
#define HTTP_CONNECTION_MEMORY (8 * 1024)

/* How long a stop waits for the connections in flight to finish. */
#define HTTP_DRAIN_MS 3000

/* The longest X-Request-Id taken from a trusted proxy (nginx's $request_id has 32). */
#define HTTP_REQUEST_ID_MAX 64

struct http_stream;

struct http_server {
    struct MHD_Daemon *daemon;
    struct api_app *app;
    int port;
    /* The listening socket, ours (see "The listening socket" below). */
    int listen_fd;
    int accept_stop_fd;           /* an eventfd: the acceptor returns */
    pthread_t acceptor;
    bool acceptor_started;
    /* The event streams (see "The event stream" below). */
    struct lock streams_lock;
    struct http_stream *streams;
    int epoll_fd;                 /* the reaper's: hang-ups of the streams' clients */
    int wake_fd;                  /* an eventfd in that set: stops the reaper */
    pthread_t reaper;
    bool reaper_started, reaper_stop;
    bool stopping;                /* every stream ends (under streams_lock) */
    int nstreams;                 /* open event streams (under streams_lock) */
    /* Under streams_lock: the matches whose later streams are due a wake-up, in the order
     * of their due times (each is a commit's time plus the same STREAM_LATER_MS), and
     * when the reaper wakes next (monotonic ms). */
    struct api_match *later, *later_tail;
    int64_t reaper_deadline;
    /* Under streams_lock: the suspended streams the reaper is to write to (stream_queue),
     * in the order they were queued. */
    struct http_stream *due, *due_tail;
    /* Under streams_lock: the players' streams of all their seats, and how many were ever
     * opened (a match compares it with its players_seen: streams_wake). */
    struct http_stream *players;
    uint64_t players_opened;
    struct limits *limits;        /* per client address and token (docs/security.md) */
};

/* Per request: the body as it arrives, and the state of a request that waits for its
 * answer (a move waiting for its group commit): its connection suspended meanwhile. */
struct request {
    char *body;
    size_t len;
    size_t limit;         /* API_MAX_BODY, or more for inbound mail */
    bool too_large;
    size_t seen;          /* the bytes of a body past its limit, read and thrown away */
    bool answered;
    bool query_cut;               /* its query cut off unparsed (http_uri_guard): a 414 */
    struct limits_key client;     /* who it comes from (limits.h) */
    struct api_caller caller;     /* authenticated from the headers, before any body */
    struct route_found found;     /* what its method and path find in the table (routes.h) */
    struct http_async async;      /* a move's answer, which may come later (async.h) */
    /* For its log line and its answer's X-Request-Id: */
    char id[HTTP_REQUEST_ID_MAX + 1];
    int64_t started_us;           /* monotonic, when its headers were complete */
    char method[8];
    char path[256];               /* (cut; MHD gives it without the query string) */
    const char *page;             /* the page pattern it was served, else NULL */
    int status;                   /* of the answer queued, 0 none */
    uint64_t bytes;               /* the answer's body; an event stream's as it is sent */
};

/* The request whose answer this thread is queuing. MHD lets an answer be queued only from
 * its access handler (on_request), on the connection's own thread: so the answer paths
 * below find the request there (its id for X-Request-Id and problem+json, its status and
 * size for the log) without every send taking the request. Set by on_request. */
static _Thread_local struct request *answering;

/* Queue `resp` with the request's id, noting its status and the body's `bytes` for the
 * request's log line; `resp` is destroyed. Every answer goes through here. */
static enum MHD_Result queue(struct MHD_Connection *conn, int status, struct MHD_Response *resp,
                             uint64_t bytes)
{
    return http_queue(conn, status, resp, bytes);
}

enum MHD_Result http_queue(struct MHD_Connection *conn, int status, struct MHD_Response *resp,
                           uint64_t bytes)
{
    struct request *req = answering;
    if (req) {
        MHD_add_response_header(resp, "X-Request-Id", req->id);
        req->status = status;
        req->bytes = bytes;
    }
    enum MHD_Result ret = MHD_queue_response(conn, (unsigned)status, resp);
    MHD_destroy_response(resp);
    return ret;
}

/* A problem+json body names the request it answers (docs/api.md "Errors"). */
static void problem_with_id(json_t *body)
{
    if (answering && json_is_object(body))
        json_object_set_new(body, "request_id", json_string(answering->id));
}

/* A JSON answer (problem+json when `problem`), with a Retry-After header when retry_after
 * (seconds) is above 0. */
static enum MHD_Result send_json_after(struct MHD_Connection *conn, int status, json_t *body,
                                       bool problem, int retry_after)
{
    if (problem)
        problem_with_id(body);
    char *text = body ? json_dumps(body, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    size_t len = text ? strlen(text) : 0;
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(len, text ? text : (void *)"", text ? MHD_RESPMEM_MUST_FREE
                                                                            : MHD_RESPMEM_PERSISTENT);
    if (!resp) {
        free(text);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                            problem ? "application/problem+json" : "application/json");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    if (retry_after > 0) {
        char secs[24];
        snprintf(secs, sizeof secs, "%d", retry_after);
        MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, secs);
    }
    return queue(conn, status, resp, len);
}

/* An answer already written as JSON text (taken over). */
static enum MHD_Result send_text(struct MHD_Connection *conn, int status, char *text, size_t len)
{
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(text);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    return queue(conn, status, resp, len);
}

static enum MHD_Result send_reply(struct MHD_Connection *conn, struct api_reply *r)
{
    enum MHD_Result ret;
    if (r->text && !r->problem) {
        json_decref(r->body);
        ret = send_text(conn, r->status ? r->status : 500, r->text, r->text_len);
    } else {
        free(r->text);
        ret = send_json_after(conn, r->status ? r->status : 500, r->body, r->problem,
                              r->retry_after);
        json_decref(r->body);
    }
    r->body = NULL;
    r->text = NULL;
    return ret;
}

/* A 405 carries the methods the resource allows (RFC 9110 §15.5.6). */
enum MHD_Result http_send_reply(struct MHD_Connection *conn, struct api_reply *r)
{
    return send_reply(conn, r);
}

static enum MHD_Result send_reply_allow(struct MHD_Connection *conn, struct api_reply *r,
                                        const char *allow)
{
    problem_with_id(r->body);
    char *text = json_dumps(r->body, JSON_COMPACT);
    json_decref(r->body);
    r->body = NULL;
    size_t len = text ? strlen(text) : 0;
    struct MHD_Response *resp = MHD_create_response_from_buffer(
        len, text ? text : (void *)"",
        text ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (!resp) {
        free(text);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/problem+json");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, allow);
    return queue(conn, 405, resp, len);
}

static enum MHD_Result send_problem(struct MHD_Connection *conn, int status, const char *type,
                                    const char *detail)
{
    struct api_reply r = {0};
    api_problem(&r, status, type, "%s", detail);
    return send_reply(conn, &r);
}

/* A limit's refusal (docs/security.md "Limits"): problem+json with "retry_after" and the
 * Retry-After header when the client may try again after that many seconds (0: neither). */
static enum MHD_Result send_refusal(struct MHD_Connection *conn, int status, const char *type,
                                    int retry_after, const char *detail)
{
    struct api_reply r = {0};
    api_problem(&r, status, type, "%s", detail);
    if (retry_after > 0)
        json_object_set_new(r.body, "retry_after", json_integer(retry_after));
    enum MHD_Result ret = send_json_after(conn, status, r.body, true, retry_after);
    json_decref(r.body);
    return ret;
}

/* ---- The event stream ---------------------------------------------------------------------
 *
 * A stream is a response whose body never ends while the match runs. libmicrohttpd sends
 * its headers and first message; when its reader finds nothing new, it suspends the
 * connection (MHD then leaves it out of the poll, so an idle stream costs no thread and no
 * CPU). From then on the reaper thread writes to the sleeping stream's socket itself:
 * api_match_changed queues the streams of the seats to move after a commit (streams_wake),
 * and the reaper, woken once for all the streams queued meanwhile, sends each what is new
 * (stream_push), with no resume, no wake-up of libmicrohttpd's threads and no change of its
 * epoll set. The body is plain bytes up to the close (no chunks to frame), so only what a
 * socket does not take at once goes back to libmicrohttpd: the stream is resumed, and its
 * reader sends the rest when the socket can take it. Every stream sits in two lists under
 * srv->streams_lock: the server's (for the reaper and the stop) and its match's (for the
 * wake-ups). The reaper also resumes a sleeping stream when its client hangs up (epoll on
 * EPOLLRDHUP: a stream that stops counting as watching lets emails flow again at once),
 * writes the keep-alive comments, and writes to the later streams (the spectators', and
 * those of the seats a commit left with nothing to do) 25 ms after it. What a stream is
 * sent is its match's feed (api_feed): each commit's messages, rendered once per visibility
 * and shared by every stream that sees them. Streams are counted per client address and in
 * all (max_streams_per_address, max_streams).
 *
 * A player's stream (GET /v1/players/me/events) is one stream of all the player's matches:
 * an entry (struct stream_sub) in each match's list, where a match's own stream has one, and
 * only `state` messages, each the slice of the feed's text after its events. A commit marks
 * the entry due in its stream's list, and the stream is queued as a seat's or a later one;
 * the writer then sends the states of every match due in one write (so a player who holds
 * a seat in many matches costs one send a wake-up, not one a match). A match that starts
 * after the stream opened is found at its next wake-up: the match remembers how many
 * players' streams had been opened when it last looked its players up (players_seen). A
 * match that ends is sent its last state and let go.
 */

#define STREAM_KEEPALIVE_MS 15000
#define STREAM_LATER_MS 25        /* the later streams (spectators, seats not to move) see
                                   * a commit at most this much after it */
#define STREAM_BLOCK 4096         /* libmicrohttpd's buffer per stream */
#define STREAM_SNDBUF (64 * 1024) /* the kernel's send buffer per stream (SO_SNDBUF) */

/* One match a stream carries, as one seat (or a spectator): a match's own stream has one,
 * a player's stream one for each match of the player's (see "A player's stream" below).
 * Each sits in its match's list, which a commit's wake-up walks (streams_wake). */
struct stream_sub {
    struct http_stream *s;
    struct api_match *match;  /* referenced (a match's stream) or pinned (a player's) */
    int seat;
    int64_t sent;             /* seq of the last event sent (a player's: of its last state) */
    bool watching;            /* counted in match->watching[seat] (match->lock) */
    bool in_feed;             /* counted in match->stream_vis (match->lock) */
    /* Under srv->streams_lock: */
    bool linked;              /* in match->streams */
    bool due;                 /* in s->due_subs: a player's stream has its state to send */
    struct stream_sub *mprev, *mnext;     /* match->streams */
    struct stream_sub *snext;             /* s->subs (a player's stream) */
    struct stream_sub *due_next;          /* s->due_subs */
};

struct http_stream {
    struct http_server *srv;
    struct api_app *app;
    struct MHD_Connection *conn;
    struct stream_sub one;    /* a match's stream: its match (unused by a player's) */
    int64_t player;           /* a player's stream of all their seats: the player; else 0 */
    char *pending;        /* text not yet handed to MHD: its own, or the feed's */
    size_t len, off;
    struct api_feed *feed;    /* the match's feed entry `pending` is the text of, or NULL */
    bool done;
    int fd;               /* the client's socket */
    bool counted;         /* in srv->nstreams and the client's count of streams */
    struct limits_key client;
    int64_t last_write;   /* monotonic ms of the last bytes handed to MHD */
    uint64_t *bytes;      /* its request's count of bytes sent (for the log), or NULL */
    /* Under srv->streams_lock: */
    bool suspended;
    bool hung_up;         /* the reaper saw the client close its end, or its player's token
                           * changed (streams_cut) */
    bool queued;          /* in srv->due */
    bool pushing;         /* the reaper writes to its socket: a resume waits (resume_after) */
    bool resume_after;
    struct http_stream *due_next;         /* srv->due */
    struct http_stream *push_next;        /* the reaper's list of those it is pushing */
    struct http_stream *prev, *next;      /* srv->streams */
    /* A player's stream, under srv->streams_lock: its matches, those with a state to send
     * (in the order their commits came), how many, and its place in srv->players. */
    struct stream_sub *subs, *due_subs, *due_subs_tail;
    int nsubs;
    struct http_stream *pprev, *pnext;
};

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* The client closed its end: the socket reads end-of-file. */
static bool peer_gone(int fd)
{
    char c;
    return fd >= 0 && recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

/* The most matches one player's stream carries (more are not carried: docs/api.md). */
#define STREAM_PLAYER_MATCHES 1024

/* Stop counting the entry as watching (once), so emails flow again at once. Call with
 * the match's lock held. */
static void unwatch(struct stream_sub *u)
{
    assert(lock_held(&u->match->lock));
    if (u->watching)
        u->match->watching[u->seat]--;
    u->watching = false;
}

/* Start counting the entry as watching and as a stream of its seat's feed (its match's
 * lock held). */
static void watch(struct stream_sub *u)
{
    assert(lock_held(&u->match->lock));
    if (u->seat >= 0) {
        u->match->watching[u->seat]++;
        u->watching = true;
    }
    api_match_streams_add(u->match, u->seat, 1, !u->s->player);
    u->in_feed = true;
}

/* Resume a suspended stream (streams_lock held); while the reaper writes to it, once the
 * reaper is done. */
static void stream_resume(struct http_stream *s)
{
    assert(lock_held(&s->srv->streams_lock));
    if (s->pushing) {
        s->resume_after = true;
    } else if (s->suspended) {
        s->suspended = false;
        MHD_resume_connection(s->conn);
    }
}

/* Queue a suspended stream for the reaper to write to (streams_lock held): true when the
 * reaper must be woken for it (the queue was empty). A stream libmicrohttpd is running
 * finds the commit itself (stream_refill checks stream_gen before it sleeps). */
static bool stream_queue(struct http_stream *s)
{
    struct http_server *srv = s->srv;
    assert(lock_held(&srv->streams_lock));
    if (s->queued || !s->suspended)
        return false;
    s->queued = true;
    s->due_next = NULL;
    if (srv->due_tail)
        srv->due_tail->due_next = s;
    else
        srv->due = s;
    srv->due_tail = s;
    return srv->due == s;
}

static void reaper_kick(void *cls)
{
    struct http_server *srv = cls;
    uint64_t one = 1;
    if (write(srv->wake_fd, &one, sizeof one) < 0)
        (void)0; /* (the counter is full: the reaper is awake already) */
}

/* A player's entry has its match's state to send (streams_lock held): at the end of its
 * stream's list, once. */
static void sub_due(struct stream_sub *u)
{
    struct http_stream *s = u->s;
    if (u->due)
        return;
    u->due = true;
    u->due_next = NULL;
    if (s->due_subs_tail)
        s->due_subs_tail->due_next = u;
    else
        s->due_subs = u;
    s->due_subs_tail = u;
}

/* Put entry `u` (its match and seat set) in its match's list (streams_lock held). */
static void sub_link(struct stream_sub *u)
{
    assert(lock_held(&u->s->srv->streams_lock));
    u->mprev = NULL;
    u->mnext = u->match->streams;
    if (u->match->streams)
        u->match->streams->mprev = u;
    u->match->streams = u;
    u->linked = true;
}

/* Take `x` out of the singly linked queue at `*head` whose entries link through `field`,
 * with `*tail` kept its last entry (the later, due and due_subs queues). `x` is in it. */
#define QUEUE_REMOVE(type, head, tail, x, field)                                              \
    do {                                                                                      \
        type **at_ = (head), *last_ = NULL;                                                   \
        while (*at_ != (x)) {                                                                 \
            last_ = *at_;                                                                     \
            at_ = &(*at_)->field;                                                             \
        }                                                                                     \
        *at_ = (x)->field;                                                                    \
        if (*(tail) == (x))                                                                   \
            *(tail) = last_;                                                                  \
    } while (0)

/* Take entry `u` out of its match's list, and the match out of the later list when that
 * leaves it no stream (streams_lock held). */
static void sub_unlink(struct stream_sub *u)
{
    struct http_server *srv = u->s->srv;
    struct api_match *m = u->match;
    assert(lock_held(&srv->streams_lock));
    if (!u->linked)
        return;
    if (u->mprev)
        u->mprev->mnext = u->mnext;
    else
        m->streams = u->mnext;
    if (u->mnext)
        u->mnext->mprev = u->mprev;
    u->linked = false;
    if (!m->streams && m->later_due) { /* (the reaper finds it no more) */
        QUEUE_REMOVE(struct api_match, &srv->later, &srv->later_tail, m, later_next);
        m->later_due = false;
    }
}

/* The entry of `m` in player's stream `s`, or NULL (streams_lock held). */
static struct stream_sub *sub_find(struct http_stream *s, struct api_match *m)
{
    for (struct stream_sub *u = m->streams; u; u = u->mnext)
        if (u->s == s)
            return u;
    return NULL;
}

/* A new entry of player's stream `s` for `m` (pinned by this call), where the player holds
 * `seat`, due its first state (streams_lock held). Nothing when the stream carries
 * STREAM_PLAYER_MATCHES already, or without memory. */
static void sub_add(struct http_stream *s, struct api_match *m, int seat)
{
    assert(lock_held(&s->srv->streams_lock));
    struct stream_sub *u = s->nsubs < STREAM_PLAYER_MATCHES ? calloc(1, sizeof *u) : NULL;
    if (!u)
        return;
    api_match_pin(m);
    u->s = s;
    u->match = m;
    u->seat = seat;
    u->sent = -2; /* (never sent: its first state is due, whatever its seq) */
    sub_link(u);
    u->snext = s->subs;
    s->subs = u;
    s->nsubs++;
    sub_due(u);
}

/* The players' streams that `m` has no entry in yet, for the players holding its seats, are
 * given one (streams_lock held): only when a player's stream was opened since `m` last
 * looked (its players and seats never change). */
static void players_look_up(struct http_server *srv, struct api_match *m)
{
    if (m->players_seen == srv->players_opened)
        return;
    m->players_seen = srv->players_opened;
    for (struct http_stream *s = srv->players; s; s = s->pnext)
        for (int seat = 0; seat < RULES_MAX_SEATS; seat++)
            if (m->players[seat] == s->player && !sub_find(s, m))
                sub_add(s, m, seat);
}

/* api_on_match_changed: a commit to `m` (under app->wake_lock). The streams of the seats
 * it leaves to move are written to now, by the reaper; the later ones (the other seats, the
 * spectators) STREAM_LATER_MS after the first commit they have not seen, with the events
 * of every commit since and the newest state (a send to 1,000 spectators costs about
 * 10 ms, which the seats would otherwise wait behind, and a seat with nothing to do needs
 * no push a commit: this way the seats to move go first, and the others are sent once for
 * all the commits of those milliseconds). A player's stream is queued as its seat's stream
 * would be, its entry of the match marked due with it. True when the reaper is to be kicked
 * (reaper_kick, which the core calls at once or after the rest of a batch's commits). */
static bool streams_wake(void *cls, struct api_match *m)
{
    struct http_server *srv = cls;
    bool later = false, kick = false;
    uint32_t to_move = (uint32_t)atomic_load(&m->stream_now);
    lock_take(&srv->streams_lock);
    m->stream_gen++;
    if (srv->players)
        players_look_up(srv, m);
    for (struct stream_sub *u = m->streams; u; u = u->mnext) {
        struct http_stream *s = u->s;
        bool now = u->seat >= 0 && ((to_move >> u->seat) & 1);
        if (s->player && (now || !srv->reaper_started))
            sub_due(u);
        if (!srv->reaper_started)
            stream_resume(s);
        else if (now)
            kick = stream_queue(s) || kick;
        else
            later = true;
    }
    if (later && !m->later_due) {
        m->later_due = true;
        m->later_next = NULL;
        if (srv->later_tail)
            srv->later_tail->later_next = m;
        else
            srv->later = m;
        srv->later_tail = m;
        int64_t due = m->later_at = mono_ms() + STREAM_LATER_MS;
        if (due < srv->reaper_deadline) { /* (the reaper sleeps past it: wake it) */
            srv->reaper_deadline = due;
            kick = true;
        }
    }
    lock_drop(&srv->streams_lock);
    return kick;
}

/* api_on_token_changed: `player`'s token was rotated or revoked. The streams opened with
 * the old one (or with a ticket drawn with it) end, as if their clients had hung up: what
 * they carry is the player's, and the token that let them open no longer works. */
static void streams_cut(void *cls, int64_t player)
{
    struct http_server *srv = cls;
    lock_take(&srv->streams_lock);
    for (struct http_stream *s = srv->streams; s; s = s->next) {
        const struct stream_sub *u = &s->one;
        if (s->player == player || (u->match && u->seat >= 0 && u->match->players[u->seat] == player)) {
            s->hung_up = true;
            stream_resume(s);
        }
    }
    lock_drop(&srv->streams_lock);
}

/* Put stream `s` in the server's lists (its match's entry too, for a match's stream; the
 * players' list for a player's) and its socket in the reaper's set. */
static void stream_link(struct http_stream *s)
{
    struct http_server *srv = s->srv;
    lock_take(&srv->streams_lock);
    s->next = srv->streams;
    if (srv->streams)
        srv->streams->prev = s;
    srv->streams = s;
    if (s->player) {
        s->pnext = srv->players;
        if (srv->players)
            srv->players->pprev = s;
        srv->players = s;
        srv->players_opened++;
        api_player_streams_add(s->app, 1);
    } else {
        sub_link(&s->one);
    }
    if (srv->epoll_fd >= 0 && s->fd >= 0) {
        struct epoll_event ev = {.events = EPOLLRDHUP | EPOLLET, .data.fd = s->fd};
        epoll_ctl(srv->epoll_fd, EPOLL_CTL_ADD, s->fd, &ev);
    }
    lock_drop(&srv->streams_lock);
}

/* Take stream `s` out of every list (its entries out of their matches' lists). */
static void stream_unlink(struct http_stream *s)
{
    struct http_server *srv = s->srv;
    lock_take(&srv->streams_lock);
    if (srv->epoll_fd >= 0 && s->fd >= 0)
        epoll_ctl(srv->epoll_fd, EPOLL_CTL_DEL, s->fd, NULL);
    if (s->prev)
        s->prev->next = s->next;
    else
        srv->streams = s->next;
    if (s->next)
        s->next->prev = s->prev;
    if (s->player) {
        if (s->pprev)
            s->pprev->pnext = s->pnext;
        else
            srv->players = s->pnext;
        if (s->pnext)
            s->pnext->pprev = s->pprev;
        api_player_streams_add(s->app, -1);
        for (struct stream_sub *u = s->subs; u; u = u->snext)
            sub_unlink(u);
        s->due_subs = s->due_subs_tail = NULL;
    } else {
        sub_unlink(&s->one);
    }
    if (s->queued) { /* (ended by the stop before the reaper came to it) */
        QUEUE_REMOVE(struct http_stream, &srv->due, &srv->due_tail, s, due_next);
        s->queued = false;
    }
    lock_drop(&srv->streams_lock);
}

/* Let go of an entry out of every list: its counts on its match, and its reference (a
 * match's stream's) or pin (a player's entry, freed). */
static void sub_finish(struct http_stream *s, struct stream_sub *u)
{
    struct api_match *m = u->match;
    lock_take(&m->lock);
    unwatch(u);
    if (u->in_feed)
        api_match_streams_add(m, u->seat, -1, !s->player);
    lock_drop(&m->lock);
    if (u == &s->one) {
        api_match_release(s->app, m);
    } else {
        api_match_unpin(m);
        free(u);
    }
}

/* A player's stream is done with entry `u` (its match ended, or never started): out of the
 * lists, and let go. */
static void sub_drop(struct http_stream *s, struct stream_sub *u)
{
    struct http_server *srv = s->srv;
    lock_take(&srv->streams_lock);
    sub_unlink(u);
    struct stream_sub **p = &s->subs;
    while (*p != u)
        p = &(*p)->snext;
    *p = u->snext;
    s->nsubs--;
    if (u->due) /* (a commit marked it again meanwhile) */
        QUEUE_REMOVE(struct stream_sub, &s->due_subs, &s->due_subs_tail, u, due_next);
    lock_drop(&srv->streams_lock);
    sub_finish(s, u);
}

/* Let go of the text sent (the stream's own, or its share of the feed). */
static void stream_drop_pending(struct http_stream *s)
{
    if (s->feed)
        api_feed_release(s->feed);
    else
        free(s->pending);
    s->feed = NULL;
    s->pending = NULL;
    s->len = s->off = 0;
}

/* A match's stream: what came since it last sent is the match's feed, rendered once per
 * commit for all the streams that see it; only a stream further behind than the feed reads
 * the log. */
static void match_next(struct http_stream *s)
{
    struct stream_sub *u = &s->one;
    struct api_match *m = u->match;
    lock_take(&m->lock);
    if (m->seq - 1 > u->sent) {
        struct api_feed *f = api_match_feed_get(s->app, m, u->seat, u->sent, true);
        if (f) {
            int v = u->seat >= 0 ? u->seat : RULES_MAX_SEATS;
            s->feed = f;
            s->pending = f->text[v];
            /* A stream woken after several commits is sent their events and the newest
             * state only (the state of a commit with a newer one after it is stale). */
            s->len = f->last < m->seq - 1 ? f->events_len[v] : f->len[v];
            u->sent = f->last;
        } else {
            u->sent = api_match_stream_chunk(s->app, m, u->seat, u->sent, &s->pending, &s->len);
        }
    } else if (m->replay.state.over)
        s->done = true;
    lock_drop(&m->lock);
}

/* The state of entry `u`'s match for its seat in s->pending (m->lock held): the newest feed
 * entry's text after its events, when that visibility's is rendered with its state, else a
 * text of its own (a match whose entry came after the commit). */
static void player_state(struct http_stream *s, struct stream_sub *u, struct api_match *m)
{
    struct api_feed *f = m->feed;
    if (f && f->last == m->seq - 1 &&
        (f = api_match_feed_get(s->app, m, u->seat, f->after, false))) {
        if (f->len[u->seat] > f->events_len[u->seat]) {
            s->feed = f;
            s->pending = f->text[u->seat] + f->events_len[u->seat];
            s->len = f->len[u->seat] - f->events_len[u->seat];
            return;
        }
        api_feed_release(f);
    }
    api_match_stream_state(m, u->seat, &s->pending, &s->len);
}

/* A player's stream: the newest state of the next of its matches due one. A match pending
 * waits for its start; one that is over is sent its last state and let go; one cancelled
 * (declined, expired) is let go. */
static void player_next(struct http_stream *s)
{
    struct http_server *srv = s->srv;
    while (!s->pending) {
        lock_take(&srv->streams_lock);
        struct stream_sub *u = s->due_subs;
        if (u) {
            s->due_subs = u->due_next;
            if (!s->due_subs)
                s->due_subs_tail = NULL;
            u->due = false;
        }
        lock_drop(&srv->streams_lock);
        if (!u)
            return;
        struct api_match *m = u->match;
        lock_take(&m->lock);
        bool pending = m->invitation == STORE_MATCH_PENDING, drop = false;
        if (!pending && m->invitation != STORE_MATCH_STARTED) {
            drop = true;
        } else if (!pending && m->seq - 1 > u->sent) {
            if (!u->in_feed)
                watch(u);
            player_state(s, u, m);
            u->sent = m->seq - 1;
            drop = m->replay.state.over;
        }
        lock_drop(&m->lock);
        if (drop)
            sub_drop(s, u);
    }
}

/* Fill s->pending with what the stream should send next, or a keep-alive comment after
 * STREAM_KEEPALIVE_MS of silence if `may_keepalive`; false when there is nothing yet. */
static bool stream_next(struct http_stream *s, int64_t now, bool may_keepalive)
{
    if (s->player)
        player_next(s);
    else
        match_next(s);
    if (!s->pending && !s->done && may_keepalive && now - s->last_write >= STREAM_KEEPALIVE_MS) {
        s->pending = strdup(": keep-alive\n\n");
        s->len = s->pending ? strlen(s->pending) : 0;
    }
    return s->pending != NULL;
}

/* What stream_refill found: text to send, nothing for now, or the end. */
enum stream_refill { STREAM_TEXT, STREAM_NOTHING, STREAM_END };

/* Find the stream's next text once what it had is sent. With nothing to send it sleeps
 * until the next commit if `may_sleep` (nothing copied into MHD's buffer by this read). */
static enum stream_refill stream_refill(struct http_stream *s, bool may_sleep)
{
    struct http_server *srv = s->srv;
    for (;;) {
        stream_drop_pending(s);
        lock_take(&srv->streams_lock);
        uint64_t gen = s->player ? 0 : s->one.match->stream_gen;
        bool gone = s->hung_up, stop = srv->stopping || api_stopping(s->app);
        lock_drop(&srv->streams_lock);
        if (s->done || stop)
            return STREAM_END;
        if (!gone && stream_next(s, mono_ms(), true))
            return STREAM_TEXT; /* (a client gone since: the send fails, and MHD closes) */
        if (s->done)
            return STREAM_END;
        /* (The reaper's epoll tells a hang-up; without the reaper the socket is asked,
         * a syscall per stream per commit that 1,000 spectators would feel.) A player's
         * stream stops watching when it is freed, which follows. */
        if (gone || (srv->epoll_fd < 0 && peer_gone(s->fd))) {
            if (!s->player) {
                lock_take(&s->one.match->lock);
                unwatch(&s->one);
                lock_drop(&s->one.match->lock);
            }
            return STREAM_END;
        }
        if (!may_sleep)
            return STREAM_NOTHING;
        /* Nothing to send: sleep until the next commit, unless one came since `gen`. The
         * stop resumes every stream after setting srv->stopping, under the same lock. */
        lock_take(&srv->streams_lock);
        bool idle = s->player ? !s->due_subs : s->one.match->stream_gen == gen;
        if (idle && !s->hung_up && !srv->stopping) {
            MHD_suspend_connection(s->conn);
            s->suspended = true;
            lock_drop(&srv->streams_lock);
            return STREAM_NOTHING;
        }
        lock_drop(&srv->streams_lock);
    }
}

/* MHD asks for the stream's next bytes: as many of the texts due as fit in `buf`, so that
 * a stream woken after several commits sends them in one write. */
static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    struct http_stream *s = cls;
    size_t n = 0;
    while (n < max) {
        if (s->off == s->len) {
            enum stream_refill r = stream_refill(s, n == 0);
            if (r == STREAM_END && n == 0)
                /* (Not END_WITH_ERROR: nobody is there to tell, and libmicrohttpd would
                 * log every closed browser tab as an application error.) */
                return MHD_CONTENT_READER_END_OF_STREAM;
            if (r != STREAM_TEXT)
                break; /* (the end comes at the next read) */
        }
        size_t k = s->len - s->off < max - n ? s->len - s->off : max - n;
        memcpy(buf + n, s->pending + s->off, k);
        s->off += k;
        n += k;
    }
    if (n == 0)
        return 0;
    s->last_write = mono_ms();
    if (s->bytes) /* (the request outlives its stream's last read) */
        *s->bytes += n;
    return (ssize_t)n;
}

static void stream_free(void *cls)
{
    struct http_stream *s = cls;
    stream_unlink(s);
    if (s->counted) {
        lock_take(&s->srv->streams_lock);
        s->srv->nstreams--;
        lock_drop(&s->srv->streams_lock);
        limits_count_put(s->srv->limits, LIMITS_STREAMS, &s->client);
    }
    /* (out of every list: nobody else reaches its entries now) */
    for (struct stream_sub *u = s->subs, *next; u; u = next) {
        next = u->snext;
        sub_finish(s, u);
    }
    if (s->one.match)
        sub_finish(s, &s->one);
    stream_drop_pending(s);
    free(s);
}

/* Queue the later streams of the matches whose wake-up time has come (streams_lock held),
 * their players' entries due: the head of srv->later, which is in due order, so the work is
 * the matches due, not every stream open. The next such time, or now + 1 s when none is
 * due. */
static int64_t later_wake(struct http_server *srv, int64_t now)
{
    struct api_match *m;
    while ((m = srv->later) && m->later_at <= now) {
        srv->later = m->later_next;
        if (!srv->later)
            srv->later_tail = NULL;
        for (struct stream_sub *u = m->streams; u; u = u->mnext) {
            if (u->s->player)
                sub_due(u); /* (a seat to move is sent nothing new: its state is sent) */
            stream_queue(u->s); /* (the seats to move are up to date: nothing to send) */
        }
        m->later_due = false;
    }
    return m && m->later_at < now + 1000 ? m->later_at : now + 1000;
}

/* The most texts one push gathers into one write (a stream woken after several commits is
 * due one text each, a player's stream one a match; more go in the next write). */
#define STREAM_PUSH_MAX 64

/* Texts gathered for one write: each its feed entry's (a reference) or the stream's own. */
struct stream_texts {
    int n;
    size_t total;
    struct iovec iov[STREAM_PUSH_MAX];
    struct api_feed *feed[STREAM_PUSH_MAX];
};

static void stream_texts_release(struct stream_texts *t)
{
    for (int i = 0; i < t->n; i++) {
        if (t->feed[i])
            api_feed_release(t->feed[i]);
        else
            free(t->iov[i].iov_base);
    }
    t->n = 0;
    t->total = 0;
}

/* What of `t` the socket did not take (its first `sent` bytes went): the stream's own text,
 * for libmicrohttpd to send; false without memory. */
static bool stream_keep_rest(struct http_stream *s, const struct stream_texts *t, size_t sent)
{
    char *rest = malloc(t->total - sent + 1);
    if (!rest)
        return false;
    size_t at = 0;
    for (int i = 0; i < t->n; i++) {
        size_t len = t->iov[i].iov_len, skip = sent < len ? sent : len;
        memcpy(rest + at, (char *)t->iov[i].iov_base + skip, len - skip);
        at += len - skip;
        sent -= skip;
    }
    s->pending = rest;
    s->len = at;
    s->off = 0;
    return true;
}

/* Write what a suspended stream is due straight to its socket (the reaper, with
 * s->pushing set: nothing resumes it meanwhile, so libmicrohttpd, which sent all it had
 * before the stream slept, neither writes nor frees it): every text due, up to
 * STREAM_PUSH_MAX a write, in one sendmsg. A stream's body is plain bytes up to the close
 * (stream responses are HTTP/1.0-compatible: no chunks to frame), so what the socket does
 * not take at once is left in s->pending for libmicrohttpd to send when the socket can
 * take it: true when the stream must be resumed for that, or for its end. */
static bool stream_push(struct http_stream *s)
{
    int64_t now = mono_ms();
    struct stream_texts t = {0};
    for (;;) {
        /* (a keep-alive only alone: one, not one a round) */
        while (t.n < STREAM_PUSH_MAX && stream_next(s, now, t.n == 0)) {
            bool keepalive = !s->feed && s->pending[0] == ':';
            t.iov[t.n] = (struct iovec){s->pending, s->len};
            t.feed[t.n++] = s->feed;
            t.total += s->len;
            s->pending = NULL; /* (now t's) */
            s->feed = NULL;
            s->len = s->off = 0;
            if (keepalive)
                break;
        }
        if (t.n == 0)
            return s->done;
        struct msghdr msg = {.msg_iov = t.iov, .msg_iovlen = (size_t)t.n};
        ssize_t n = sendmsg(s->fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
        size_t sent = n > 0 ? (size_t)n : 0;
        if (sent > 0) {
            s->last_write = now;
            if (s->bytes)
                *s->bytes += sent;
        }
        bool more = t.n == STREAM_PUSH_MAX;
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            stream_texts_release(&t);
            return true; /* (libmicrohttpd's send fails the same way, and ends it) */
        }
        if (sent < t.total) {
            if (!stream_keep_rest(s, &t, sent))
                s->done = true; /* (the stream cannot go on whole: it ends, and the client
                                 * resumes from its Last-Event-ID) */
            stream_texts_release(&t);
            return true;
        }
        stream_texts_release(&t);
        if (!more)
            return s->done;
    }
}

/* The reaper's writes: every stream queued (stream_queue) that still sleeps is pushed. */
static void streams_push(struct http_server *srv)
{
    lock_take(&srv->streams_lock);
    struct http_stream *list = NULL, **tail = &list;
    for (struct http_stream *s = srv->due; s; s = s->due_next) {
        s->queued = false; /* (a commit from now on queues it again) */
        if (s->suspended && !s->hung_up && !srv->stopping) {
            s->pushing = true;
            *tail = s;
            tail = &s->push_next;
        }
    }
    *tail = NULL;
    srv->due = srv->due_tail = NULL;
    lock_drop(&srv->streams_lock);
    for (struct http_stream *s = list, *next; s; s = next) {
        next = s->push_next; /* (once resumed, s may be freed) */
        bool resume = stream_push(s);
        lock_take(&srv->streams_lock);
        s->pushing = false;
        if (resume || s->resume_after || srv->stopping) {
            s->resume_after = false;
            stream_resume(s);
        }
        lock_drop(&srv->streams_lock);
    }
}

/* The reaper: writes to the streams a commit woke (streams_wake) and, after it, to the
 * later streams (later_wake) and the streams due a keep-alive; resumes suspended streams
 * whose client hung up. */
static void *reaper_main(void *cls)
{
    thread_name("streams");
    struct http_server *srv = cls;
    struct epoll_event evs[64];
    int wait_ms = 1000;
    int64_t keepalive_at = 0;
    for (;;) {
        int n = epoll_wait(srv->epoll_fd, evs, 64, wait_ms);
        lock_take(&srv->streams_lock);
        if (srv->reaper_stop) {
            lock_drop(&srv->streams_lock);
            return NULL;
        }
        for (int i = 0; i < n; i++) {
            uint64_t count;
            if (evs[i].data.fd == srv->wake_fd && read(srv->wake_fd, &count, sizeof count) < 0)
                (void)0; /* (read by an earlier event of this batch) */
            for (struct http_stream *s = srv->streams; s && evs[i].data.fd != srv->wake_fd;
                 s = s->next)
                if (s->fd == evs[i].data.fd) {
                    s->hung_up = true;
                    stream_resume(s);
                }
        }
        int64_t now = mono_ms();
        if (now >= keepalive_at) { /* (once a second, not at every commit's wake-up) */
            for (struct http_stream *s = srv->streams; s; s = s->next)
                if (s->suspended && now - s->last_write >= STREAM_KEEPALIVE_MS)
                    stream_queue(s);
            keepalive_at = now + 1000;
        }
        srv->reaper_deadline = later_wake(srv, now);
        if (srv->reaper_deadline > keepalive_at)
            srv->reaper_deadline = keepalive_at;
        wait_ms = (int)(srv->reaper_deadline > now ? srv->reaper_deadline - now : 0);
        lock_drop(&srv->streams_lock);
        streams_push(srv);
    }
}

/* Count one more stream for `client`, in all and per address: 0, or the status of the
 * refusal (429 for the address, 503 in all). */
static int streams_take(struct http_server *srv, const struct limits_key *client)
{
    const struct config *cf = api_config(srv->app);
    lock_take(&srv->streams_lock);
    bool full = cf->max_streams > 0 && srv->nstreams >= cf->max_streams;
    if (!full)
        srv->nstreams++;
    lock_drop(&srv->streams_lock);
    if (full)
        return 503;
    if (!limits_count_take(srv->limits, LIMITS_STREAMS, client, cf->max_streams_per_address)) {
        lock_take(&srv->streams_lock);
        srv->nstreams--;
        lock_drop(&srv->streams_lock);
        return 429;
    }
    return 0;
}

/* How long a client refused a stream should wait before it tries again (streams end when
 * their watchers go, not on a timer). */
#define STREAM_RETRY_AFTER 30

/* The refusal of a stream over a limit: `status` 429 for the client's address, 503 in all. */
static enum MHD_Result stream_refuse(struct http_server *srv, struct MHD_Connection *conn,
                                     int status)
{
    char detail[160];
    snprintf(detail, sizeof detail,
             status == 429 ? "your address has %d event streams open, the most allowed"
                           : "the service has %d event streams open, the most it allows",
             status == 429 ? srv->app->config.max_streams_per_address
                           : srv->app->config.max_streams);
    return send_refusal(conn, status, status == 429 ? "too_many_streams" : "unavailable",
                        STREAM_RETRY_AFTER, detail);
}

/* Who a stream is for: the request's caller (its Authorization header), or the player of
 * the `ticket` in its URL (core_stream_ticket_redeem), which a browser's EventSource sends
 * since it cannot send headers. A token is never taken from the URL: a URL is logged by
 * proxies and kept in histories, so `token`, `access_token` or a token given as the
 * ticket is refused (400 token_in_url) before anything else. False with the refusal in r. */
static bool stream_caller(const struct route_call *k, int64_t match, struct api_caller *by_ticket,
                          const struct api_caller **c, struct api_reply *r)
{
    struct MHD_Connection *conn = k->conn;
    const char *ticket = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "ticket");
    *c = k->caller;
    if (MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "token") ||
        MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "access_token") ||
        (ticket && !strncmp(ticket, "cpt_", 4)))
        return api_problem(r, 400, "token_in_url",
                           "a token never goes in a URL: send it as Authorization: Bearer, "
                           "or draw a stream ticket (POST %s)",
                           match ? "/v1/matches/{id}/events/ticket"
                                 : "/v1/players/me/events/ticket");
    if (!ticket)
        return true;
    if (k->caller->authenticated)
        return api_problem(r, 400, "bad_request",
                           "a stream takes a ticket or an Authorization header, not both");
    struct err e;
    if (!core_stream_ticket_redeem(k->app, ticket, match, by_ticket, &e))
        return api_problem_from_err(r, &e);
    *c = by_ticket;
    return true;
}

/* A new stream on `conn` for `client` (counted: streams_take), or NULL without memory (the
 * count given back). */
static struct http_stream *stream_new(struct http_server *srv, struct MHD_Connection *conn,
                                      const struct limits_key *client)
{
    struct http_stream *s = calloc(1, sizeof *s);
    if (!s) {
        lock_take(&srv->streams_lock);
        srv->nstreams--;
        lock_drop(&srv->streams_lock);
        limits_count_put(srv->limits, LIMITS_STREAMS, client);
        return NULL;
    }
    s->counted = true;
    s->client = *client;
    s->srv = srv;
    s->app = srv->app;
    s->conn = conn;
    s->one.s = s;
    s->one.sent = -1;
    s->last_write = mono_ms();
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    s->fd = ci ? ci->connect_fd : -1;
    /* What the kernel may hold for a client that does not read: its own bound (the kernel
     * doubles it), not the megabytes it would grow to, with thousands of streams open. */
    int sndbuf = STREAM_SNDBUF;
    if (s->fd >= 0)
        setsockopt(s->fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
    return s;
}

/* The answer that carries stream `s` (linked): its body is the stream, until the close. */
static enum MHD_Result stream_answer(struct MHD_Connection *conn, struct http_stream *s)
{
    /* (libmicrohttpd's buffer carries the first message and what a socket did not take at
     * once; the reaper writes the rest: STREAM_BLOCK, not more, for each open stream) */
    struct MHD_Response *resp =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, STREAM_BLOCK, stream_read, s, stream_free);
    if (!resp) {
        stream_free(s);
        return MHD_NO;
    }
    /* Plain bytes up to the close, not chunks: the reaper writes to the socket itself. */
    MHD_set_response_options(resp, MHD_RF_HTTP_1_0_COMPATIBLE_STRICT, MHD_RO_END);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    /* A stream that ended does not leave an idle connection behind (that would hold a stop). */
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    /* (before queue: a response MHD refuses is destroyed there, and the stream with it) */
    s->bytes = answering ? &answering->bytes : NULL;
    return queue(conn, MHD_HTTP_OK, resp, 0);
}

/* GET /v1/matches/{id}/events (routes.h): a started match's stream, answered here. */
enum MHD_Result http_stream_open(const struct route_call *k)
{
    struct http_server *srv = k->srv;
    struct MHD_Connection *conn = k->conn;
    const struct api_caller *c;
    struct api_caller by_ticket;
    const struct limits_key *client = k->client;
    struct api_reply r = {0};
    struct err e;
    if (!stream_caller(k, k->id[0], &by_ticket, &c, &r))
        return send_reply(conn, &r);
    if (c == &by_ticket && answering) /* (its log line names the ticket's player) */
        answering->caller = by_ticket;
    struct api_match *m = api_match_find(srv->app, k->id[0], &e);
    if (!m) {
        api_problem_from_err(&r, &e);
        return send_reply(conn, &r);
    }
    lock_take(&m->lock);
    bool started = api_match_started(m, &r); /* a pending or cancelled match has no events */
    lock_drop(&m->lock);
    if (!started) {
        api_match_release(srv->app, m);
        return send_reply(conn, &r);
    }
    int refused = streams_take(srv, client);
    if (refused) {
        api_match_release(srv->app, m);
        return stream_refuse(srv, conn, refused);
    }
    struct http_stream *s = stream_new(srv, conn, client);
    if (!s) {
        api_match_release(srv->app, m);
        return send_problem(conn, 500, "nomem", "out of memory");
    }
    struct stream_sub *u = &s->one;
    u->match = m;
    const char *last = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Last-Event-ID");
    if (last && *last) {
        char *end;
        long long v = strtoll(last, &end, 10);
        if (*end == '\0' && v >= -1)
            u->sent = v;
    }
    lock_take(&m->lock);
    u->seat = api_match_seat(m, c);
    watch(u);
    /* The first message: what happened since Last-Event-ID, and the current state. */
    int64_t latest = m->seq - 1;
    if (u->sent >= latest) {
        api_match_stream_state(m, u->seat, &s->pending, &s->len);
        u->sent = latest;
    } else {
        u->sent = api_match_stream_chunk(srv->app, m, u->seat, u->sent, &s->pending, &s->len);
    }
    lock_drop(&m->lock);
    stream_link(s);
    return stream_answer(conn, s);
}

/* Give player's stream `s` (linked: a match that starts from now on finds it) an entry for
 * each active match in which its player holds a seat, in the order of their ids, up to
 * STREAM_PLAYER_MATCHES. */
static void player_matches(struct http_stream *s, const struct api_caller *c)
{
    struct api_app *app = s->app;
    int64_t ids[256], after = 0;
    for (int total = 0; total < STREAM_PLAYER_MATCHES;) {
        struct err e;
        int n = api_active_matches_of_player(app, s->player, after, ids, 256, &e);
        if (n < 0)
            log_msg(LOG_LEVEL_ERROR, "stream", "player %lld's matches: %s",
                    (long long)s->player, e.msg);
        for (int i = 0; i < n; i++) {
            struct api_match *m = api_match_find(app, ids[i], &e);
            if (!m)
                continue;
            lock_take(&m->lock);
            int seat = api_match_seat(m, c);
            lock_drop(&m->lock);
            lock_take(&s->srv->streams_lock);
            if (seat >= 0 && !sub_find(s, m))
                sub_add(s, m, seat);
            total = s->nsubs;
            lock_drop(&s->srv->streams_lock);
            api_match_release(app, m);
        }
        if (n < 256)
            return;
        after = ids[n - 1];
    }
}

/* GET /v1/players/me/events (routes.h): the player's stream of all their seats (see "A
 * player's stream" above), answered here. */
enum MHD_Result http_player_stream_open(const struct route_call *k)
{
    struct http_server *srv = k->srv;
    struct MHD_Connection *conn = k->conn;
    const struct api_caller *c;
    struct api_caller by_ticket;
    struct api_reply r = {0};
    if (!stream_caller(k, 0, &by_ticket, &c, &r))
        return send_reply(conn, &r);
    if (c == &by_ticket && answering)
        answering->caller = by_ticket;
    if (!c->authenticated)
        return send_problem(conn, 401, "unauthorized",
                            "a player's stream needs the player's token, or a stream ticket "
                            "(POST /v1/players/me/events/ticket)");
    if (!c->player)
        return send_problem(conn, 403, "forbidden",
                            "a player's stream is a player's own: the operator holds no seat");
    int refused = streams_take(srv, k->client);
    if (refused)
        return stream_refuse(srv, conn, refused);
    struct http_stream *s = stream_new(srv, conn, k->client);
    if (!s)
        return send_problem(conn, 500, "nomem", "out of memory");
    s->player = c->player;
    s->one.seat = -1;
    stream_link(s);
    player_matches(s, c);
    return stream_answer(conn, s);
}

/* ---- The browser pages (web/) --------------------------------------------------------------- */

/* The file of web/ that serves `url`: "/" the leagues, "/leagues/N" a league, "/leagues/new"
 * the form that creates one, "/matches/N" a match, "/account", "/me" and "/settings" the
 * player's own pages, "/assets/NAME" the
 * scripts and styles (a plain name: letters, digits, '-', '.').
 * NULL for anything else. The returned pointer is into static storage or `url`; *pattern
 * is the page's pattern (for the log). */
static const char *page_for(const char *url, const char **pattern)
{
    int64_t id[ROUTES_MAX_IDS];
    *pattern = "/";
    if (!strcmp(url, "/"))
        return "index.html";
    if (routes_pattern_match(*pattern = "/leagues/{id}", url, id))
        return "league.html";
    if (routes_pattern_match(*pattern = "/matches/{id}", url, id))
        return "match.html";
    static const char *const own[][2] = {
        {"/account", "account.html"}, {"/me", "me.html"}, {"/settings", "settings.html"},
        {"/leagues/new", "league-new.html"},
    };
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
        if (!strcmp(url, *pattern = own[i][0]))
            return own[i][1];
    *pattern = "/assets/{name}";
    if (!strncmp(url, "/assets/", 8) && url[8] && url[8] != '.') {
        for (const char *p = url + 8; *p; p++)
            if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                  (*p >= '0' && *p <= '9') || *p == '-' || *p == '.' || *p == '_'))
                return NULL;
        return url + 8;
    }
    return NULL;
}

static const char *content_type(const char *name)
{
    static const struct {
        const char *ext, *type;
    } types[] = {
        {".html", "text/html; charset=utf-8"}, {".css", "text/css; charset=utf-8"},
        {".js", "text/javascript; charset=utf-8"}, {".svg", "image/svg+xml"},
        {".png", "image/png"}, {".json", "application/json"},
    };
    const char *dot = strrchr(name, '.');
    for (size_t i = 0; dot && i < sizeof types / sizeof types[0]; i++)
        if (!strcmp(dot, types[i].ext))
            return types[i].type;
    return "application/octet-stream";
}

static enum MHD_Result send_file(struct http_server *srv, struct MHD_Connection *conn,
                                 const char *name)
{
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", srv->app->config.web_dir, name);
    FILE *f = fopen(path, "rb");
    if (!f)
        return send_problem(conn, 404, "not_found", "no such page");
    struct buf b = BUF_INIT;
    char chunk[8192];
    size_t got, len;
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0)
        buf_put(&b, chunk, got);
    fclose(f);
    char *buf = buf_finish(&b, &len);
    if (!buf)
        return send_problem(conn, 500, "nomem", "out of memory");
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, buf, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(buf);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type(name));
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(resp, "Content-Security-Policy",
                            "default-src 'self'; img-src 'self' data:; style-src 'self'");
    return queue(conn, MHD_HTTP_OK, resp, len);
}

/* ---- Routing (routes.h) ------------------------------------------------------------------- */

/* A 405: the path is there, not with this method. Outside the JSON API its detail only says
 * which method to use, and /healthz's carries no Allow (as they always have). */
static enum MHD_Result send_not_allowed(struct MHD_Connection *conn, const struct route_found *f,
                                        const char *method, const char *url)
{
    struct api_reply r = {0};
    if (f->plain)
        api_problem(&r, 405, "method_not_allowed", "use %s", f->path->method);
    else
        api_problem(&r, 405, "method_not_allowed", "%s is not allowed on %s (allowed: %s)",
                    method, url, f->allow);
    return f->path->no_allow ? send_reply(conn, &r) : send_reply_allow(conn, &r, f->allow);
}

/* Call the route found, once its caller may (routes_allow): a reply sent at once, a move's
 * answer when its group commit is done (async.h), or the event stream. */
static enum MHD_Result call(struct request *req, const struct route *rt,
                            const struct route_call *k)
{
    struct api_reply r = {0};
    if (!routes_allow(rt, k->caller, &r))
        return send_reply(k->conn, &r);
    if (rt->stream)
        return rt->stream(k);
    if (rt->async)
        return http_async_call(&req->async, rt->async, k) == HTTP_ASYNC_ANSWER
                   ? send_reply(k->conn, &req->async.reply)
                   : MHD_YES; /* (suspended: sent when MHD calls the request again) */
    rt->reply(k, &r);
    return send_reply(k->conn, &r);
}

/* The sha256 of "METHOD PATH\nBODY": what an Idempotency-Key's request was (computed only
 * for a request with one). */
static bool request_hash(const char *method, const char *url, const struct request *req,
                         uint8_t hash[API_SHA256_BYTES])
{
    size_t ml = strlen(method), ul = strlen(url);
    char *all = malloc(ml + ul + req->len + 2);
    if (!all)
        return false;
    memcpy(all, method, ml);
    all[ml] = ' ';
    memcpy(all + ml + 1, url, ul);
    all[ml + 1 + ul] = '\n';
    if (req->len)
        memcpy(all + ml + ul + 2, req->body, req->len);
    api_sha256(all, ml + ul + 2 + req->len, hash);
    free(all);
    return true;
}

/* A request of the JSON API (or of no path at all): its body parsed and its
 * Idempotency-Key checked whatever the path (a malformed one is a 400 even where there is
 * no route), then the 404, the 405, or the call. */
static enum MHD_Result route_api(struct request *req, const struct route_found *f,
                                 struct route_call *k, const char *method, const char *url)
{
    struct MHD_Connection *conn = k->conn;
    json_t *body = NULL;
    bool with_body = !strcmp(method, "POST") || !strcmp(method, "PATCH") ||
                     !strcmp(method, "DELETE");
    if (with_body && req->len > 0) {
        json_error_t jerr;
        body = json_loadb(req->body, req->len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
        if (!body) {
            char detail[256];
            snprintf(detail, sizeof detail, "the body is not valid JSON: %s", jerr.text);
            return send_problem(conn, 400, "malformed_json", detail);
        }
    }
    const char *idem = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Idempotency-Key");
    uint8_t hash[API_SHA256_BYTES] = {0};
    enum MHD_Result ret;
    if (idem && (!*idem || strlen(idem) > 255))
        ret = send_problem(conn, 400, "bad_idempotency_key",
                           "an Idempotency-Key is 1 to 255 characters");
    else if (idem && !request_hash(method, url, req, hash))
        ret = send_problem(conn, 500, "nomem", "out of memory");
    else if (!f->path)
        ret = send_problem(conn, 404, "not_found", "no such resource");
    else if (!f->route)
        ret = send_not_allowed(conn, f, method, url);
    else {
        k->body = f->route->body == ROUTE_JSON ? body : NULL;
        k->idem = idem;
        k->request_hash = hash;
        ret = call(req, f->route, k);
    }
    json_decref(body);
    return ret;
}

/* A request, its body read: a page of web/, a path outside the JSON API (health, readiness,
 * inbound mail: no JSON body), or the API. Handled again from the start when a move's
 * resume asks for that (async.h). */
static enum MHD_Result route(struct http_server *srv, struct MHD_Connection *conn,
                             const char *url, const char *method, struct request *req)
{
    if ((!strcmp(method, "GET") || !strcmp(method, "HEAD")) && strncmp(url, "/v1/", 4) != 0) {
        const char *pattern, *file = page_for(url, &pattern);
        if (file) {
            req->page = pattern;
            return send_file(srv, conn, file);
        }
    }
    const struct route_found *f = &req->found; /* (found from the headers) */
    struct route_call k = {.app = srv->app, .caller = &req->caller, .raw = req->body,
                           .raw_len = req->len, .conn = conn, .srv = srv, .client = &req->client};
    memcpy(k.id, f->id, sizeof k.id);
    if (f->path && f->plain)
        return f->route ? call(req, f->route, &k) : send_not_allowed(conn, f, method, url);
    return route_api(req, f, &k, method, url);
}

/* ---- Limits (docs/security.md "Limits") ------------------------------------------------------ */

/* Who the request comes from: its peer, or, when the peer is a trusted proxy, the client its
 * X-Forwarded-For names. */
static void client_of(struct http_server *srv, struct MHD_Connection *conn, struct limits_key *k)
{
    const struct limits_proxies *proxies = &api_config(srv->app)->proxies;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const struct sockaddr *sa = ci ? ci->client_addr : NULL;
    memset(k, 0, sizeof *k);
    if (sa && limits_proxy_trusted(proxies, sa) &&
        limits_key_of_forwarded(proxies,
                                MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                            "X-Forwarded-For"),
                                k))
        return;
    if (!sa || !limits_key_of_sockaddr(sa, k))
        memset(k, 0, sizeof *k);
}

/* Whether the request announces a body (a length above zero, or chunks). */
static bool has_body(struct MHD_Connection *conn)
{
    const char *cl =
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    const char *te =
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
    return (cl && strtoull(cl, NULL, 10) > 0) || (te && strcasecmp(te, "identity") != 0);
}

/* ---- The request's id and its log line (log.h) --------------------------------------------- */

/* Whether `id` may stand for a request: 1 to HTTP_REQUEST_ID_MAX of [A-Za-z0-9._-] (what
 * goes into a header and a log as is). */
static bool request_id_ok(const char *id)
{
    size_t n = strspn(id, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-");
    return n > 0 && n <= HTTP_REQUEST_ID_MAX && id[n] == '\0';
}

/* A request's own id: 64 bits of a per-thread splitmix64 sequence seeded from getrandom
 * once (a syscall per request was one of the few left on a move's path; the ids need to
 * differ, and not be guessed from one another, not be secret). */
static uint64_t request_id_next(const struct request *req)
{
    static _Thread_local uint64_t state;
    static _Thread_local bool seeded;
    static atomic_uint_fast64_t fallback;
    if (!seeded) {
        if (getrandom(&state, sizeof state, GRND_NONBLOCK) != (ssize_t)sizeof state)
            state = (uint64_t)req->started_us * 0x9e3779b97f4a7c15u +
                    atomic_fetch_add(&fallback, 1);
        seeded = true;
    }
    uint64_t z = (state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* `s` into out[size], cut to fit: snprintf's "%s" without its formatting (three of them a
 * request were 1% of the daemon's time under load). */
static void copy_cut(char *out, size_t size, const char *s)
{
    size_t n = strnlen(s, size - 1);
    memcpy(out, s, n);
    out[n] = '\0';
}

/* A new request: when it began, what it asks, and its id: the X-Request-Id of a trusted
 * proxy (one that names the client) when it looks like an id, else 16 random hex digits.
 * A client's own X-Request-Id is not taken: it could make its lines pass for another's. */
static void request_begin(struct http_server *srv, struct MHD_Connection *conn,
                          const char *url, const char *method, struct request *req)
{
    req->started_us = mono_us();
    copy_cut(req->method, sizeof req->method, method);
    copy_cut(req->path, sizeof req->path, url);
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const char *given = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Request-Id");
    if (given && ci && limits_proxy_trusted(&api_config(srv->app)->proxies, ci->client_addr) &&
        request_id_ok(given)) {
        copy_cut(req->id, sizeof req->id, given);
        return;
    }
    static const char hex[] = "0123456789abcdef"; /* ("%016llx") */
    uint64_t v = request_id_next(req);
    _Static_assert(sizeof req->id > 16, "a request id holds 16 hex digits");
    for (int i = 15; i >= 0; i--, v >>= 4)
        req->id[i] = hex[v & 15];
    req->id[16] = '\0';
}

static const char *termination_name(enum MHD_RequestTerminationCode toe)
{
    switch (toe) {
    case MHD_REQUEST_TERMINATED_COMPLETED_OK: return "ok";
    case MHD_REQUEST_TERMINATED_WITH_ERROR: return "error";
    case MHD_REQUEST_TERMINATED_TIMEOUT_REACHED: return "timeout";
    case MHD_REQUEST_TERMINATED_DAEMON_SHUTDOWN: return "shutdown";
    case MHD_REQUEST_TERMINATED_READ_ERROR: return "read_error";
    case MHD_REQUEST_TERMINATED_CLIENT_ABORT: return "client_gone";
    default: return "other";
    }
}

/* The request's line: who asked what (the route's pattern, the path without its query),
 * the answer's status and size, how long it took, and the player (never a token, a body
 * or a card). */
static void log_request(const struct request *req, enum MHD_RequestTerminationCode toe)
{
    struct log_line l;
    if (!log_begin(&l, LOG_LEVEL_INFO, "request"))
        return;
    const struct route_found *f = &req->found;
    char client[64];
    limits_key_text(&req->client, client, sizeof client);
    log_str(&l, "request_id", req->id);
    log_str(&l, "client", client);
    log_str(&l, "method", req->method);
    log_str(&l, "route", req->page ? req->page
                         : f->route ? f->route->pattern
                         : f->path  ? f->path->pattern
                                    : NULL);
    log_str(&l, "path", req->path);
    log_int(&l, "status", req->status);
    log_int(&l, "bytes", (long long)req->bytes);
    log_ms(&l, "duration_ms", (double)(mono_us() - req->started_us) / 1000.0);
    if (req->caller.operator)
        log_bool(&l, "operator", true);
    else if (req->caller.authenticated)
        log_int(&l, "player", req->caller.player);
    if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK)
        log_str(&l, "end", termination_name(toe));
    log_end_soon(&l);
}

/* Mark a request answered by a refusal queued on its first call. */
static enum MHD_Result refused(struct request *req, enum MHD_Result queued)
{
    req->answered = true;
    return queued;
}

/* The first call of a request, its headers complete and no byte of its body read: the
 * limits on the client's address, the token, what the path's routes need of a body (a
 * token, but for registration; inbound mail's caller in full) and the declared length. A
 * refusal is queued at once (req->answered); the body, if any, is never read. */
static enum MHD_Result on_headers(struct http_server *srv, struct MHD_Connection *conn,
                                  const char *url, const char *method, struct request *req)
{
    struct api_app *app = srv->app;
    const struct config *cf = api_config(app);
    client_of(srv, conn, &req->client);
    routes_find(routes_api, method, url, cf->test_clock, &req->found); /* (its log line's route) */
    const char *auth = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
    uint8_t token[API_SHA256_BYTES];
    bool has_token = api_bearer_hash(auth, token);
    bool op = has_token && api_is_operator(app, token);
    int retry = 0;
    char detail[160];
    limits_rate_share(srv->limits, api_processes(app));
    if (!op && !limits_rate_take(srv->limits, LIMITS_RATE_ADDRESS, req->client.b, mono_ms(),
                                 &retry)) {
        snprintf(detail, sizeof detail,
                 "more than %d requests a second from your address; retry in %d s",
                 cf->rate_per_address, retry);
        return refused(req, send_refusal(conn, 429, "rate_limited", retry, detail));
    }
    if (req->query_cut)
        return refused(req, send_problem(conn, 414, "uri_too_long", HTTP_URI_TOO_LONG));
    struct api_reply r = {0};
    struct err e;
    if (!api_authenticate(app, auth, has_token ? token : NULL, &req->caller, &e)) {
        api_problem_from_err(&r, &e);
        return refused(req, send_reply(conn, &r));
    }
    if (has_token && req->caller.authenticated && !req->caller.operator &&
        !limits_rate_take(srv->limits, LIMITS_RATE_TOKEN, token, mono_ms(), &retry)) {
        snprintf(detail, sizeof detail,
                 "more than %d requests a second with your token; retry in %d s",
                 cf->rate_per_token, retry);
        return refused(req, send_refusal(conn, 429, "rate_limited", retry, detail));
    }
    const struct route_found *f = &req->found;
    bool body = has_body(conn);
    if (body && f->raw && !routes_allow(f->raw, &req->caller, &r))
        return refused(req, send_reply(conn, &r));
    if (body && !req->caller.authenticated && !f->open_body)
        return refused(req, send_problem(conn, 401, "unauthorized",
                                         "a request with a body needs a token "
                                         "(Authorization: Bearer ...)"));
    req->limit = f->raw ? MAIL_MAX_MESSAGE + API_MAX_BODY : API_MAX_BODY;
    const char *cl =
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (cl && strtoull(cl, NULL, 10) > req->limit)
        return refused(req,
                       send_problem(conn, 413, "body_too_large", "the request body is too large"));
    return MHD_YES;
}

void http_mhd_message(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    struct log_line l;
    if (!log_begin(&l, LOG_LEVEL_INFO, "http"))
        return;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
        msg[--n] = '\0';
    log_str(&l, "msg", msg);
    log_end_soon(&l);
}

/* The mark of a request whose query was cut off (routes.h); only its address is used. */
static char query_cut;

void *http_uri_guard(void *cls, const char *uri, struct MHD_Connection *conn)
{
    (void)cls, (void)conn;
    char *query = strchr(uri, '?');
    if (!query)
        return NULL;
    size_t params = 1;
    for (const char *p = query + 1; *p; p++)
        params += *p == '&';
    if (params <= HTTP_QUERY_MAX_PARAMS && strlen(uri) <= HTTP_TARGET_MAX)
        return NULL;
    /* `uri` is libmicrohttpd's own copy of the request line in the connection's read
     * buffer, which it cuts up in place itself: the query it is about to parse starts
     * after the '?', and now ends there. */
    query[1] = '\0';
    return &query_cut;
}

bool http_query_was_cut(void **con_cls)
{
    if (*con_cls != &query_cut)
        return false;
    *con_cls = NULL;
    return true;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
    (void)version;
    struct http_server *srv = cls;
    bool cut = http_query_was_cut(con_cls);
    struct request *req = *con_cls;
    if (!req) {
        req = calloc(1, sizeof *req);
        if (!req)
            return MHD_NO;
        *con_cls = req;
        http_async_init(&req->async, conn);
        request_begin(srv, conn, url, method, req);
        answering = req;
        req->query_cut = cut;
        return on_headers(srv, conn, url, method, req);
    }
    answering = req;
    if (*upload_data_size > 0) {
        if (req->too_large) {
            /* Past the limit the bytes are only counted: a body that ends within twice the
             * limit gets its 413; one that goes on is cut off (it might never end). */
            req->seen += *upload_data_size;
            if (req->seen > 2 * req->limit)
                return MHD_NO;
        } else if (!req->answered) {
            if (req->len + *upload_data_size > req->limit) {
                req->too_large = true;
                req->seen = req->len + *upload_data_size;
                free(req->body);
                req->body = NULL;
                req->len = 0;
            } else {
                char *grown = realloc(req->body, req->len + *upload_data_size + 1);
                if (!grown)
                    return MHD_NO;
                memcpy(grown + req->len, upload_data, *upload_data_size);
                req->body = grown;
                req->len += *upload_data_size;
            }
        }
        *upload_data_size = 0;
        return MHD_YES;
    }
    enum http_async_next next = http_async_resumed(&req->async);
    if (next == HTTP_ASYNC_ANSWER) /* resumed: the answer came */
        return send_reply(conn, &req->async.reply);
    if (next != HTTP_ASYNC_AGAIN && req->answered) /* (again: the match's move before it is
                                                      * done; handled from the start) */
        return MHD_YES;
    req->answered = true;
    if (req->too_large)
        return send_problem(conn, 413, "body_too_large", "the request body is too large");
    return route(srv, conn, url, method, req);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)cls, (void)conn;
    (void)http_query_was_cut(con_cls); /* (its headers failed after its line) */
    struct request *req = *con_cls;
    if (req) {
        metrics_request(req->found.route ? (int)(req->found.route - routes_api) : -1,
                        req->status, (double)(mono_us() - req->started_us) / 1e6);
        log_request(req, toe);
        if (answering == req)
            answering = NULL;
        free(req->body);
        http_async_finish(&req->async);
        free(req);
        *con_cls = NULL;
    }
}

/* The most connections a client address may hold: 0 for no limit, and none for a trusted
 * proxy's address (it limits its own clients). */
static int connections_allowed(struct http_server *srv, const struct sockaddr *addr)
{
    int max = srv->app->config.max_connections_per_address;
    return max > 0 && !limits_proxy_trusted(&api_config(srv->app)->proxies, addr) ? max : 0;
}

/* A first look at the connection limit per client address, when a connection is accepted
 * (on the acceptor's thread), before libmicrohttpd spends anything on it. The count is
 * taken in on_connection, on the connection's own thread, later: the connections of a burst
 * all pass here, and the firm check is there. */
static enum MHD_Result on_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
    (void)addrlen;
    struct http_server *srv = cls;
    int max = connections_allowed(srv, addr);
    struct limits_key k;
    if (max <= 0 || !limits_key_of_sockaddr(addr, &k))
        return MHD_YES;
    return limits_count_get(srv->limits, LIMITS_CONNECTIONS, &k) < max ? MHD_YES : MHD_NO;
}

/* Count a connection for its client address, or end one past the address's limit: shut
 * down, its client reads the end at once, and libmicrohttpd, reading it too, closes it. */
static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    struct http_server *srv = cls;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    struct limits_key k;
    if (!ci || !limits_key_of_sockaddr(ci->client_addr, &k))
        return;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        if (limits_count_take(srv->limits, LIMITS_CONNECTIONS, &k,
                              connections_allowed(srv, ci->client_addr))) {
            *socket_context = srv; /* counted */
        } else {
            const union MHD_ConnectionInfo *fd =
                MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
            if (fd)
                shutdown(fd->connect_fd, SHUT_RDWR);
        }
    } else if (*socket_context) {
        limits_count_put(srv->limits, LIMITS_CONNECTIONS, &k);
        *socket_context = NULL;
    }
}

/* As many connections as open files allow, after raising the soft limit to the hard one
 * (an event stream holds its connection for as long as a client watches). */
static unsigned connection_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return 1000;
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    rlim_t n = rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > 1000000 ? 1000000 : rl.rlim_cur;
    return n > 256 ? (unsigned)(n - 128) : (unsigned)(n / 2);
}

static bool reaper_start(struct http_server *srv, struct err *e)
{
    srv->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    srv->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    srv->reaper_deadline = INT64_MAX; /* (its first commit with spectators wakes it) */
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = srv->wake_fd};
    if (srv->epoll_fd < 0 || srv->wake_fd < 0 ||
        epoll_ctl(srv->epoll_fd, EPOLL_CTL_ADD, srv->wake_fd, &ev) != 0 ||
        pthread_create(&srv->reaper, NULL, reaper_main, srv) != 0)
        return err_set(e, ERR_IO, "threads", "cannot start the event stream reaper");
    srv->reaper_started = true;
    return true;
}

/* ---- The listening socket ------------------------------------------------------------------ */

/* The socket is ours, not libmicrohttpd's: a thread accepts and hands each connection to the
 * daemon (MHD_add_connection, which asks on_accept as its own accepting would), and the
 * stop closes the socket, so that new clients are refused by the kernel at once while the
 * requests in flight finish. libmicrohttpd's own way to stop accepting, MHD_quiesce_daemon,
 * races its pool threads (0.9.75: the socket is taken out of a thread's epoll set by both,
 * and the one that finds it gone aborts the process, "Failed to remove listen FD from epoll
 * set"; test_lifecycle.py test_sigterm_race). */

/* How many connections the acceptor takes at one wake-up before it looks at the stop. */
#define ACCEPT_BATCH 64

/* Bind and listen on `ai`: the socket, its port in *port; -1 with `e` set. SO_REUSEADDR, so
 * that a restart binds while the last run's connections linger in TIME_WAIT; not
 * SO_REUSEPORT, so that a second cardpostd on a port in use fails to start instead of
 * silently taking half its connections (docs/decisions.md "One port, one daemon"). IPv6
 * only on an IPv6 address. */
static int listen_open(const struct addrinfo *ai, const char *listen_at, int *port,
                       struct err *e)
{
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int on = 1;
    if (fd >= 0) {
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
        if (ai->ai_family == AF_INET6)
            setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on);
    }
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, SOMAXCONN) != 0 ||
        getsockname(fd, (struct sockaddr *)&ss, &len) != 0) {
        err_set(e, ERR_IO, "listen", "cannot listen on %s: %s", listen_at, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    *port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                          : ((struct sockaddr_in *)&ss)->sin_port);
    return fd;
}

/* Out of descriptors or memory: the connections wait in the backlog a while (the kernel
 * keeps them) rather than the acceptor spinning; said once every ten seconds. */
static void accept_starved(void)
{
    static _Thread_local int64_t said_at = INT64_MIN;
    int64_t now = mono_ms();
    if (now - said_at >= 10000) {
        log_msg(LOG_LEVEL_WARN, "listen", "cannot accept connections: %s", strerror(errno));
        said_at = now;
    }
    struct timespec nap = {.tv_nsec = 100 * 1000000};
    nanosleep(&nap, NULL);
}

static void *acceptor_main(void *cls)
{
    thread_name("accept");
    struct http_server *srv = cls;
    struct pollfd p[2] = {{.fd = srv->listen_fd, .events = POLLIN},
                          {.fd = srv->accept_stop_fd, .events = POLLIN}};
    for (;;) {
        if (poll(p, 2, -1) < 0 && errno != EINTR)
            accept_starved(); /* (ENOMEM: as for accept) */
        if (p[1].revents)
            return NULL;
        for (int i = 0; i < ACCEPT_BATCH; i++) {
            struct sockaddr_storage ss;
            socklen_t len = sizeof ss;
            int c = accept(srv->listen_fd, (struct sockaddr *)&ss, &len);
            if (c < 0) {
                if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
                    accept_starved();
                break; /* (EAGAIN: none left; a client gone before its accept: poll again) */
            }
            fcntl(c, F_SETFD, FD_CLOEXEC); /* (non-blocking: libmicrohttpd sets it) */
            /* (refused by on_accept or a full daemon: closed by libmicrohttpd) */
            MHD_add_connection(srv->daemon, c, (struct sockaddr *)&ss, len);
        }
    }
}

static bool acceptor_start(struct http_server *srv, struct err *e)
{
    srv->accept_stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (srv->accept_stop_fd < 0 || pthread_create(&srv->acceptor, NULL, acceptor_main, srv) != 0)
        return err_set(e, ERR_IO, "threads", "cannot start the thread that accepts connections");
    srv->acceptor_started = true;
    return true;
}

/* Stop accepting: the acceptor returns and the socket closes (a client connecting now is
 * refused; one in the backlog, never accepted, is reset). */
static void acceptor_stop(struct http_server *srv)
{
    if (srv->acceptor_started) {
        uint64_t one = 1;
        if (write(srv->accept_stop_fd, &one, sizeof one) < 0)
            (void)0; /* (cannot fail: the counter is far from full) */
        pthread_join(srv->acceptor, NULL);
        srv->acceptor_started = false;
    }
    if (srv->listen_fd >= 0)
        close(srv->listen_fd);
    srv->listen_fd = -1;
}

/* Stop the reaper and free the server (its daemon already stopped or never started). */
static void server_free(struct http_server *srv)
{
    acceptor_stop(srv);
    if (srv->accept_stop_fd >= 0)
        close(srv->accept_stop_fd);
    if (srv->reaper_started) {
        lock_take(&srv->streams_lock);
        srv->reaper_stop = true;
        lock_drop(&srv->streams_lock);
        reaper_kick(srv); /* (else it still stops within its 1 s timeout) */
        pthread_join(srv->reaper, NULL);
    }
    if (srv->epoll_fd >= 0)
        close(srv->epoll_fd);
    if (srv->wake_fd >= 0)
        close(srv->wake_fd);
    lock_finish(&srv->streams_lock);
    limits_destroy(srv->limits);
    free(srv);
}

struct addrinfo *http_listen_address(const char *listen, const char *setting, struct err *e)
{
    char host[256];
    const char *colon = strrchr(listen, ':');
    if (!colon || colon == listen || (size_t)(colon - listen) >= sizeof host) {
        err_set(e, ERR_INVALID, "bad_listen", "%s takes HOST:PORT, not %s", setting, listen);
        return NULL;
    }
    memcpy(host, listen, (size_t)(colon - listen));
    host[colon - listen] = '\0';
    char *h = host;
    if (h[0] == '[' && h[strlen(h) - 1] == ']') { /* [::1]:8080 */
        h[strlen(h) - 1] = '\0';
        h++;
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICSERV};
    struct addrinfo *ai = NULL;
    int rc = getaddrinfo(h, colon + 1, &hints, &ai);
    if (rc != 0) {
        err_set(e, ERR_INVALID, "bad_listen", "cannot listen on %s: %s", listen,
                gai_strerror(rc));
        return NULL;
    }
    return ai;
}

/* libmicrohttpd's fatal errors (a broken invariant of its own, or of ours in how we call
 * it) end the process as its own handler does, but said in the log first, with where. */
static void on_panic(void *cls, const char *file, unsigned int line, const char *reason)
{
    (void)cls;
    log_msg(LOG_LEVEL_ERROR, "panic", "libmicrohttpd %s:%u: %s", file ? file : "?", line,
            reason ? reason : "(no reason given)");
    abort();
}

struct http_server *http_start(struct api_app *app, const char *listen, struct err *e)
{
    MHD_set_panic_func(on_panic, NULL);
    struct addrinfo *ai = http_listen_address(listen, "--listen", e);
    if (!ai)
        return NULL;
    struct http_server *srv = calloc(1, sizeof *srv);
    if (!srv) {
        freeaddrinfo(ai);
        err_set(e, ERR_NOMEM, "nomem", "out of memory");
        return NULL;
    }
    srv->app = app;
    srv->epoll_fd = srv->wake_fd = srv->listen_fd = srv->accept_stop_fd = -1;
    lock_init(&srv->streams_lock, API_LOCK_STREAMS, "streams_lock");
    const struct config *cf = api_config(app);
    srv->limits = limits_create(
        (struct limits_rate_setting){cf->rate_per_address, cf->rate_burst_per_address},
        (struct limits_rate_setting){cf->rate_per_token, cf->rate_burst_per_token});
    if (!srv->limits) {
        freeaddrinfo(ai);
        server_free(srv);
        err_set(e, ERR_NOMEM, "nomem", "out of memory");
        return NULL;
    }
    srv->listen_fd = listen_open(ai, listen, &srv->port, e);
    freeaddrinfo(ai);
    if (srv->listen_fd < 0 || !reaper_start(srv, e)) {
        server_free(srv);
        return NULL;
    }
    unsigned threads = api_config(app)->http_threads > 0 ? (unsigned)api_config(app)->http_threads
                                                     : thread_processors();
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
                     MHD_USE_ERROR_LOG | MHD_USE_ITC | MHD_USE_NO_LISTEN_SOCKET;
    unsigned most = connection_limit();
    if (cf->max_connections > 0 && (unsigned)cf->max_connections < most)
        most = (unsigned)cf->max_connections;
    srv->daemon = MHD_start_daemon(flags, 0, on_accept, srv, on_request, srv,
                                   MHD_OPTION_EXTERNAL_LOGGER, http_mhd_message, NULL,
                                   MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv,
                                   MHD_OPTION_NOTIFY_CONNECTION, on_connection, srv,
                                   MHD_OPTION_URI_LOG_CALLBACK, http_uri_guard, NULL,
                                   MHD_OPTION_THREAD_POOL_SIZE, threads,
                                   MHD_OPTION_CONNECTION_LIMIT, most,
                                   MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)120,
                                   MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTP_CONNECTION_MEMORY,
                                   MHD_OPTION_END);
    if (!srv->daemon) {
        server_free(srv);
        err_set(e, ERR_IO, "listen", "cannot start the HTTP server on %s", listen);
        return NULL;
    }
    if (!acceptor_start(srv, e)) {
        MHD_stop_daemon(srv->daemon);
        server_free(srv);
        return NULL;
    }
    api_on_match_changed(app, streams_wake, reaper_kick, srv);
    api_on_token_changed(app, streams_cut, srv);
    return srv;
}

int http_port(const struct http_server *srv)
{
    return srv->port;
}

int http_streams_open(struct http_server *srv)
{
    lock_take(&srv->streams_lock);
    int n = srv->nstreams;
    lock_drop(&srv->streams_lock);
    return n;
}

void http_stop(struct http_server *srv)
{
    if (!srv)
        return;
    /* Stop accepting, end the event streams, then let the connections in flight finish:
     * MHD_stop_daemon alone cuts them off (and must not find a connection suspended).
     * Idle keep-alive connections hold the stop for at most HTTP_DRAIN_MS. */
    acceptor_stop(srv); /* new clients are refused at once, not left in the backlog */
    lock_take(&srv->streams_lock);
    srv->stopping = true;
    for (struct http_stream *s = srv->streams; s; s = s->next)
        stream_resume(s);
    lock_drop(&srv->streams_lock);
    struct timespec t0, now, nap = {.tv_nsec = 10 * 1000000};
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        const union MHD_DaemonInfo *info =
            MHD_get_daemon_info(srv->daemon, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (!info || info->num_connections == 0 ||
            (now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000 >
                HTTP_DRAIN_MS)
            break;
        nanosleep(&nap, NULL);
    }
    MHD_stop_daemon(srv->daemon);
    api_on_match_changed(srv->app, NULL, NULL, NULL);
    api_on_token_changed(srv->app, NULL, NULL);
    server_free(srv);
}
