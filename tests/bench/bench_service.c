/* bench_service.c - load generator for cardpostd (ops/bench-service runs it; docs/benchmarks.md
 * records the figures). N threads each drive one 4-seat Hearts match over its own keep-alive
 * connection (a libcurl easy handle), playing every seat in turn like N real clients: read the
 * seat's view, post one of its legal moves, wait for the answer. Prints one result row.
 */
#include <curl/curl.h>
#include <getopt.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define SEATS 4

static const char *base_url;
static struct curl_slist *operator_headers;
static struct curl_slist *seat_headers[SEATS];
static int64_t player_ids[SEATS];
static double deadline; /* CLOCK_MONOTONIC seconds; threads stop after their move past it */
static pthread_barrier_t start_line;
static atomic_int failures;

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

/* ---- Samples ------------------------------------------------------------------------------ */

struct samples {
    double *v; /* seconds */
    size_t n, cap;
};

static void samples_add(struct samples *s, double x)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 1024;
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

/* ---- HTTP ---------------------------------------------------------------------------------- */

struct client {
    CURL *curl;
    char *buf;
    size_t len, cap;
    uint64_t rng;
    struct samples post, get;
    long moves, matches;
};

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
    struct client *c = arg;
    size_t n = size * nmemb;
    if (c->len + n + 1 > c->cap) {
        while (c->len + n + 1 > c->cap)
            c->cap = c->cap ? c->cap * 2 : 16384;
        c->buf = realloc(c->buf, c->cap);
        if (!c->buf)
            die("out of memory");
    }
    memcpy(c->buf + c->len, data, n);
    c->len += n;
    c->buf[c->len] = '\0';
    return n;
}

/* One request on the client's connection; returns the parsed answer if the status is `want`,
 * else NULL (reported). `took` gets the time from sending to the whole answer. */
static json_t *request(struct client *c, const char *path, struct curl_slist *headers,
                       const char *body, long want, double *took)
{
    char url[512];
    snprintf(url, sizeof url, "%s%s", base_url, path);
    c->len = 0;
    curl_easy_setopt(c->curl, CURLOPT_URL, url);
    curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, headers);
    if (body) {
        curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, body);
    } else {
        curl_easy_setopt(c->curl, CURLOPT_HTTPGET, 1L);
    }
    double t0 = now();
    CURLcode rc = curl_easy_perform(c->curl);
    double t1 = now();
    if (took)
        *took = t1 - t0;
    long status = 0;
    curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status);
    if (rc != CURLE_OK || status != want) {
        fprintf(stderr, "bench_service: %s %s: %s, HTTP %ld: %.300s\n", body ? "POST" : "GET", path,
                curl_easy_strerror(rc), status, c->buf ? c->buf : "");
        atomic_fetch_add(&failures, 1);
        return NULL;
    }
    json_error_t jerr;
    json_t *answer = json_loadb(c->buf, c->len, 0, &jerr);
    if (!answer) {
        fprintf(stderr, "bench_service: %s: answer is not JSON: %s\n", path, jerr.text);
        atomic_fetch_add(&failures, 1);
    }
    return answer;
}

static uint64_t rng_next(uint64_t *s) /* splitmix64 */
{
    uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* ---- One client: one match at a time, every seat ------------------------------------------ */

static json_t *create_match(struct client *c)
{
    char body[256];
    snprintf(body, sizeof body, "{\"game\": \"hearts\", \"players\": [%lld, %lld, %lld, %lld]}",
             (long long)player_ids[0], (long long)player_ids[1], (long long)player_ids[2],
             (long long)player_ids[3]);
    json_t *m = request(c, "/v1/matches", operator_headers, body, 201, NULL);
    if (m)
        c->matches++;
    return m;
}

/* Plays until the deadline: the seat to move reads its view unless the last answer is
 * already its current view (the seat moved last and moves again), then posts a random legal
 * move with the seq it saw. A finished match is replaced by a new one. */
static void *client_main(void *arg)
{
    struct client *c = arg;
    json_t *state = create_match(c); /* the latest view seen, any seat's (or the operator's) */
    pthread_barrier_wait(&start_line);
    while (state && now() < deadline) {
        if (strcmp(json_string_value(json_object_get(state, "status")), "active") != 0) {
            json_decref(state);
            state = create_match(c);
            continue;
        }
        long long id = (long long)json_integer_value(json_object_get(state, "id"));
        json_t *to_move = json_object_get(state, "to_move");
        if (json_array_size(to_move) == 0) {
            fprintf(stderr, "bench_service: match %lld: active with nobody to move\n", id);
            atomic_fetch_add(&failures, 1);
            break;
        }
        int seat = (int)json_integer_value(json_array_get(to_move, 0));
        char path[128];
        json_t *you = json_object_get(state, "you");
        if (!json_is_integer(you) || json_integer_value(you) != seat) {
            snprintf(path, sizeof path, "/v1/matches/%lld", id);
            double took;
            json_t *view = request(c, path, seat_headers[seat], NULL, 200, &took);
            samples_add(&c->get, took);
            json_decref(state);
            state = view;
            if (!state)
                break;
        }
        json_t *legal = json_object_get(state, "legal");
        size_t nlegal = json_array_size(legal);
        if (nlegal == 0) {
            fprintf(stderr, "bench_service: match %lld: seat %d to move with no legal move\n", id,
                    seat);
            atomic_fetch_add(&failures, 1);
            break;
        }
        const char *move = json_string_value(json_array_get(legal, rng_next(&c->rng) % nlegal));
        char body[128];
        snprintf(body, sizeof body, "{\"move\": \"%s\", \"seq\": %lld}", move,
                 (long long)json_integer_value(json_object_get(state, "seq")));
        snprintf(path, sizeof path, "/v1/matches/%lld/moves", id);
        double took;
        json_t *next = request(c, path, seat_headers[seat], body, 201, &took);
        json_decref(state);
        state = next;
        if (next) {
            samples_add(&c->post, took);
            c->moves++;
        }
    }
    json_decref(state);
    return NULL;
}

/* ---- Setup and the daemon's figures -------------------------------------------------------- */

static struct curl_slist *auth_headers(const char *token)
{
    char h[512];
    snprintf(h, sizeof h, "Authorization: Bearer %s", token);
    struct curl_slist *l = curl_slist_append(NULL, "Content-Type: application/json");
    l = curl_slist_append(l, h);
    if (!l)
        die("out of memory");
    return l;
}

static CURL *new_handle(struct client *c)
{
    CURL *curl = curl_easy_init();
    if (!curl)
        die("curl_easy_init failed");
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, c);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT, 120L);
    return curl;
}

/* Registers the four players every match seats. */
static void register_players(void)
{
    struct client c = {0};
    c.curl = new_handle(&c);
    struct curl_slist *json = curl_slist_append(NULL, "Content-Type: application/json");
    for (int s = 0; s < SEATS; s++) {
        char body[64];
        snprintf(body, sizeof body, "{\"name\": \"bench%d\"}", s);
        json_t *p = request(&c, "/v1/players", json, body, 201, NULL);
        if (!p)
            die("cannot register the players");
        player_ids[s] = json_integer_value(json_object_get(p, "id"));
        seat_headers[s] = auth_headers(json_string_value(json_object_get(p, "token")));
        json_decref(p);
    }
    curl_slist_free_all(json);
    curl_easy_cleanup(c.curl);
    free(c.buf);
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

static double self_cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

static void usage(void)
{
    fprintf(stderr, "usage: bench_service -u URL -k OPERATOR_TOKEN -p DAEMON_PID [-c MATCHES]"
                    " [-t SECONDS] [-s SEED] [-H]\n"
                    "  -H prints the table header and exits\n");
    exit(2);
}

static void print_header(void)
{
    printf("| matches | moves | moves/s | POST p50 ms | POST p99 ms | POST max ms | GET p50 ms "
           "| GET p99 ms | daemon CPU | daemon us/move | client CPU | VmHWM MiB | VmRSS MiB |\n"
           "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
           "| ---: |\n");
}

int main(int argc, char **argv)
{
    const char *token = NULL;
    long pid = 0, conc = 1;
    double seconds = 15;
    uint64_t seed = 1;
    int opt;
    while ((opt = getopt(argc, argv, "u:k:p:c:t:s:H")) != -1) {
        switch (opt) {
        case 'u':
            base_url = optarg;
            break;
        case 'k':
            token = optarg;
            break;
        case 'p':
            pid = strtol(optarg, NULL, 10);
            break;
        case 'c':
            conc = strtol(optarg, NULL, 10);
            break;
        case 't':
            seconds = strtod(optarg, NULL);
            break;
        case 's':
            seed = strtoull(optarg, NULL, 10);
            break;
        case 'H':
            print_header();
            return 0;
        default:
            usage();
        }
    }
    if (!base_url || !token || pid <= 0 || conc < 1 || conc > 4096 || seconds <= 0)
        usage();
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0)
        die("curl_global_init failed");
    operator_headers = auth_headers(token);
    register_players();

    struct client *clients = calloc((size_t)conc, sizeof *clients);
    pthread_t *threads = calloc((size_t)conc, sizeof *threads);
    if (!clients || !threads)
        die("out of memory");
    if (pthread_barrier_init(&start_line, NULL, (unsigned)conc + 1) != 0)
        die("pthread_barrier_init failed");
    deadline = 1e300;
    for (long i = 0; i < conc; i++) {
        clients[i].curl = new_handle(&clients[i]);
        clients[i].rng = seed * 1000003u + (uint64_t)i;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, 256 * 1024);
        if (pthread_create(&threads[i], &attr, client_main, &clients[i]) != 0)
            die("pthread_create failed");
        pthread_attr_destroy(&attr);
    }
    /* Every client has created its first match; the clock starts. */
    double cpu0 = proc_cpu_seconds(pid), self0 = self_cpu_seconds();
    deadline = now() + seconds;
    double t0 = now();
    pthread_barrier_wait(&start_line);
    for (long i = 0; i < conc; i++)
        pthread_join(threads[i], NULL);
    double wall = now() - t0;
    double cpu = proc_cpu_seconds(pid) - cpu0, self = self_cpu_seconds() - self0;

    struct samples post = {0}, get = {0};
    long moves = 0;
    for (long i = 0; i < conc; i++) {
        for (size_t j = 0; j < clients[i].post.n; j++)
            samples_add(&post, clients[i].post.v[j]);
        for (size_t j = 0; j < clients[i].get.n; j++)
            samples_add(&get, clients[i].get.v[j]);
        moves += clients[i].moves;
        curl_easy_cleanup(clients[i].curl);
        free(clients[i].buf);
        free(clients[i].post.v);
        free(clients[i].get.v);
    }
    qsort(post.v, post.n, sizeof *post.v, cmp_double);
    qsort(get.v, get.n, sizeof *get.v, cmp_double);
    printf("| %ld | %ld | %.0f | %.2f | %.2f | %.1f | %.2f | %.2f | %.0f%% | %.0f | %.0f%% | %.1f "
           "| %.1f |\n",
           conc, moves, (double)moves / wall, quantile_ms(&post, 0.50), quantile_ms(&post, 0.99),
           post.n ? post.v[post.n - 1] * 1e3 : 0.0, quantile_ms(&get, 0.50),
           quantile_ms(&get, 0.99), 100 * cpu / wall, moves ? cpu * 1e6 / (double)moves : 0.0,
           100 * self / wall, proc_status_mib(pid, "VmHWM"), proc_status_mib(pid, "VmRSS"));
    fflush(stdout);
    int failed = atomic_load(&failures);
    if (failed)
        fprintf(stderr, "bench_service: %d requests failed\n", failed);

    free(post.v);
    free(get.v);
    free(clients);
    free(threads);
    pthread_barrier_destroy(&start_line);
    for (int s = 0; s < SEATS; s++)
        curl_slist_free_all(seat_headers[s]);
    curl_slist_free_all(operator_headers);
    curl_global_cleanup();
    return failed ? 1 : 0;
}
