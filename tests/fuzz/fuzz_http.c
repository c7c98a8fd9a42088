/* fuzz_http.c - libFuzzer target: the HTTP request surface of cardpostd. The real daemon's
 * insides (api_app over a SQLite file in a temp dir, http_start on a loopback port) run in
 * this process; each input is one request, sent over a socket, so it goes through
 * libmicrohttpd, the limits and authentication from the headers, the routing, the handlers
 * and their JSON parsing exactly as a client's would. Any answer is fine except a crash
 * (the sanitizers), a 5xx, no answer at all, or an error that is not problem+json.
 *
 * Input: "METHOD PATH\n", header lines "Name: value\n", an empty line, then the body (sent
 * with its Content-Length). In the path, headers and body, $P0 $P1 $P2 $P3 stand for four
 * players' tokens (seated in Hearts match $M, members of league $L) and $OP for the
 * operator's token; $M and $L for the ids. Every RESET_EVERY inputs the daemon starts again
 * on a fresh database, so that what earlier inputs made (players, league members, matches)
 * stays small enough for any one request to be quick.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core.h"
#include "handlers.h"
#include "buf.h"
#include "config.h"
#include "http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define OPERATOR "fuzz-operator-token-fuzz-operator-token"
#define MAX_INPUT (96 * 1024)
#define RESET_EVERY 1000

static struct {
    bool ready;
    int inputs;                   /* since the last start */
    char dir[64];
    struct api_app *app;
    struct http_server *srv;
    int port;
    char token[4][128];
    char match[24], league[24];
} F;

/* A growing buffer (base/buf.h) that never runs out quietly. */
static void put(struct buf *b, const void *s, size_t n)
{
    buf_put(b, s, n);
    if (b->failed)
        abort();
}

static void puts_(struct buf *b, const char *s)
{
    put(b, s, strlen(s));
}

/* Copy `s` (n bytes) replacing the placeholders. */
static void put_expanded(struct buf *b, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '$') {
            const char *rest = s + i + 1;
            size_t left = n - i - 1;
            if (left >= 2 && !memcmp(rest, "OP", 2)) {
                puts_(b, OPERATOR);
                i += 2;
                continue;
            }
            if (left >= 2 && rest[0] == 'P' && rest[1] >= '0' && rest[1] <= '3') {
                puts_(b, F.token[rest[1] - '0']);
                i += 2;
                continue;
            }
            if (left >= 1 && rest[0] == 'M') {
                puts_(b, F.match);
                i += 1;
                continue;
            }
            if (left >= 1 && rest[0] == 'L') {
                puts_(b, F.league);
                i += 1;
                continue;
            }
        }
        put(b, &s[i], 1);
    }
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Send `req` and read the answer: until the server closes, or (an event stream) once some
 * bytes came and then nothing for 20 ms. Returns the status (0: none) and the answer. */
static int exchange(const struct buf *req, struct buf *answer)
{
    int fd;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)F.port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    for (;;) { /* (libFuzzer's timer signal may interrupt a call: again) */
        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            abort();
        if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0)
            break;
        if (errno != EINTR) {
            perror("fuzz_http: connect");
            abort();
        }
        close(fd);
    }
    size_t off = 0;
    while (off < req->len) {
        ssize_t n = send(fd, req->p + off, req->len - off, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break; /* (refused early: the answer is there to read) */
        off += (size_t)n;
    }
    int64_t start = mono_ms();
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int waited = answer->len ? 20 : 5000;
        int ready = poll(&p, 1, waited);
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready <= 0)
            break;
        char chunk[16384];
        ssize_t n = recv(fd, chunk, sizeof chunk, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        put(answer, chunk, (size_t)n);
        if (mono_ms() - start > 5000)
            break;
    }
    close(fd);
    int status = 0;
    if (answer->len > 12 && !strncmp(answer->p, "HTTP/1.1 ", 9))
        status = atoi(answer->p + 9);
    return status;
}

/* One request built by the harness itself (set-up). */
static int call(const char *method, const char *path, const char *token, const char *body,
                struct buf *answer)
{
    struct buf req = {0};
    char head[512];
    snprintf(head, sizeof head, "%s %s HTTP/1.1\r\nHost: fuzz\r\nConnection: close\r\n", method,
             path);
    puts_(&req, head);
    if (token) {
        puts_(&req, "Authorization: Bearer ");
        puts_(&req, token);
        puts_(&req, "\r\n");
    }
    snprintf(head, sizeof head, "Content-Length: %zu\r\n\r\n", body ? strlen(body) : 0);
    puts_(&req, head);
    if (body)
        puts_(&req, body);
    int status = exchange(&req, answer);
    free(req.p);
    return status;
}

/* A string field of the JSON body of an answer. */
static bool answer_field(const struct buf *answer, const char *key, char *out, size_t size)
{
    const char *body = answer->p ? strstr(answer->p, "\r\n\r\n") : NULL;
    json_t *j = body ? json_loads(body + 4, 0, NULL) : NULL;
    json_t *v = json_object_get(j, key);
    bool ok = true;
    if (json_is_string(v))
        snprintf(out, size, "%s", json_string_value(v));
    else if (json_is_integer(v))
        snprintf(out, size, "%lld", (long long)json_integer_value(v));
    else
        ok = false;
    json_decref(j);
    return ok;
}

static void teardown(void)
{
    if (!F.ready)
        return;
    http_stop(F.srv);
    api_app_destroy(F.app);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", F.dir);
    if (system(cmd) != 0)
        fprintf(stderr, "fuzz_http: could not remove %s\n", F.dir);
    F.ready = false;
}

static void setup(void)
{
    snprintf(F.dir, sizeof F.dir, "/tmp/cardpost-fuzz-http-XXXXXX");
    if (!mkdtemp(F.dir))
        abort();
    struct config c;
    config_defaults(&c);
    snprintf(c.db, sizeof c.db, "%s/fuzz.db", F.dir);
    snprintf(c.operator_token, sizeof c.operator_token, "%s", OPERATOR);
    c.durable_power = false;   /* durability = crash: no fdatasync per input */
    c.test_clock = true;       /* POST /v1/admin/clock is a route too */
    c.http_threads = 2;
    c.rate_per_address = c.rate_per_token = 0;
    c.max_connections_per_address = c.max_streams_per_address = c.max_streams = 0;
    struct err e;
    F.app = api_app_create(&c, &e);
    if (!F.app) {
        fprintf(stderr, "fuzz_http: %s\n", e.msg);
        abort();
    }
    F.srv = http_start(F.app, "127.0.0.1:0", &e);
    if (!F.srv) {
        fprintf(stderr, "fuzz_http: %s\n", e.msg);
        abort();
    }
    F.port = http_port(F.srv);
    static bool registered;
    if (!registered)
        atexit(teardown);
    registered = true;
    F.inputs = 0;

    char ids[4][24], body[512];
    for (int i = 0; i < 4; i++) {
        struct buf a = {0};
        snprintf(body, sizeof body, "{\"name\": \"fuzz%d\", \"email\": \"fuzz%d@fuzz.test\"}", i,
                 i);
        if (call("POST", "/v1/players", NULL, body, &a) != 201 ||
            !answer_field(&a, "token", F.token[i], sizeof F.token[i]) ||
            !answer_field(&a, "id", ids[i], sizeof ids[i])) {
            fprintf(stderr, "fuzz_http: cannot register a player: %s\n", a.p ? a.p : "");
            abort();
        }
        free(a.p);
    }
    struct buf a = {0};
    snprintf(body, sizeof body, "{\"game\": \"hearts\", \"players\": [%s, %s, %s, %s]}", ids[0],
             ids[1], ids[2], ids[3]);
    if (call("POST", "/v1/matches", F.token[0], body, &a) != 201 ||
        !answer_field(&a, "id", F.match, sizeof F.match))
        snprintf(F.match, sizeof F.match, "1");
    free(a.p);
    a = (struct buf){0};
    if (call("POST", "/v1/leagues", F.token[0], "{\"name\": \"fuzz\", \"game\": \"hearts\"}",
             &a) != 201 ||
        !answer_field(&a, "id", F.league, sizeof F.league))
        snprintf(F.league, sizeof F.league, "1");
    free(a.p);
    for (int i = 1; i < 4; i++) {
        a = (struct buf){0};
        char path[64];
        snprintf(path, sizeof path, "/v1/leagues/%s/members", F.league);
        snprintf(body, sizeof body, "{\"player\": %s}", ids[i]);
        call("POST", path, F.token[0], body, &a);
        free(a.p);
    }
    F.ready = true;
}

/* A 4xx or 5xx answer of ours is problem+json, and never a 5xx. Every answer of ours
 * carries X-Request-Id; libmicrohttpd answers what it cannot parse itself, without one
 * (a 400 in HTML for a bad header line, say, and with no body at all to a HEAD). */
static void check_answer(int status, const struct buf *answer, const struct buf *req)
{
    const char *head_end = answer->p ? strstr(answer->p, "\r\n\r\n") : NULL;
    const char *id = answer->p ? strstr(answer->p, "\r\nX-Request-Id: ") : NULL;
    bool ours = head_end && id && id < head_end;
    const char *why = NULL;
    if (status == 0)
        why = "no answer";
    else if (ours && status >= 500)
        why = "a server error";
    else if (ours && status >= 400 && !strstr(answer->p, "application/problem+json"))
        why = "an error that is not problem+json";
    if (!why)
        return;
    fprintf(stderr, "fuzz_http: %s\n--- request:\n%.2000s\n--- answer:\n%.2000s\n", why,
            req->p, answer->p ? answer->p : "");
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > MAX_INPUT)
        return 0;
    if (F.ready && F.inputs >= RESET_EVERY)
        teardown();
    if (!F.ready)
        setup();
    F.inputs++;
    const char *in = (const char *)data, *end = in + size;
    const char *nl = memchr(in, '\n', size);
    if (!nl)
        return 0;
    /* The request line: METHOD SP PATH (no CR, LF or NUL in either). */
    const char *sp = memchr(in, ' ', (size_t)(nl - in));
    if (!sp || sp == in || memchr(in, '\r', (size_t)(nl - in)) || memchr(in, '\0', (size_t)(nl - in)))
        return 0;
    if (nl - sp > 2048)
        return 0;
    struct buf req = {0};
    put(&req, in, (size_t)(sp - in));
    puts_(&req, " ");
    put_expanded(&req, sp + 1, (size_t)(nl - sp - 1));
    puts_(&req, " HTTP/1.1\r\nHost: fuzz\r\nConnection: close\r\n");
    /* Header lines up to an empty one (within 6 KiB: beyond, libmicrohttpd answers 431). */
    const char *p = nl + 1;
    bool chunked = false;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol)
            eol = end;
        if (eol == p) {
            p++;
            break;
        }
        size_t n = (size_t)(eol - p);
        /* (The harness frames the request itself: its length, or chunks when a
         * Transfer-Encoding header says chunked.) */
        bool te = n >= 17 && !strncasecmp(p, "transfer-encoding", 17);
        if (te && n >= 25 && !strncasecmp(eol - 7, "chunked", 7))
            chunked = true;
        if (te || memchr(p, '\r', n) || memchr(p, '\0', n) || !memchr(p, ':', n) ||
            (n >= 14 && !strncasecmp(p, "content-length", 14)) ||
            (n >= 10 && !strncasecmp(p, "connection", 10))) {
            p = eol + 1;
            continue;
        }
        if (req.len + n > 6 * 1024)
            break;
        put_expanded(&req, p, n);
        puts_(&req, "\r\n");
        p = eol + 1;
    }
    struct buf body = {0};
    if (p < end)
        put_expanded(&body, p, (size_t)(end - p));
    char cl[48];
    if (chunked)
        snprintf(cl, sizeof cl, "Transfer-Encoding: chunked\r\n");
    else
        snprintf(cl, sizeof cl, "Content-Length: %zu\r\n", body.len);
    puts_(&req, cl);
    puts_(&req, "\r\n");
    if (chunked && body.len) {
        snprintf(cl, sizeof cl, "%zx\r\n", body.len);
        puts_(&req, cl);
        put(&req, body.p, body.len);
        puts_(&req, "\r\n0\r\n\r\n");
    } else if (chunked) {
        puts_(&req, "0\r\n\r\n");
    } else if (body.len) {
        put(&req, body.p, body.len);
    }
    struct buf answer = {0};
    int status = exchange(&req, &answer);
    if (getenv("FUZZ_HTTP_VERBOSE")) { /* what each input got */
        const char *b = answer.p ? strstr(answer.p, "\r\n\r\n") : NULL;
        fprintf(stderr, "%d %.*s -> %.160s\n", status, (int)(strchr(req.p, '\r') - req.p),
                req.p, b ? b + 4 : "");
    }
    check_answer(status, &answer, &req);
    free(answer.p);
    free(body.p);
    free(req.p);
    return 0;
}
