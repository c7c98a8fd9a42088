/* cardpostd.c - the service: `cardpostd [--config FILE] --db PATH --listen HOST:PORT`.
 * Reads its settings (defaults, file, CARDPOST_* environment, flags), opens (creating and
 * migrating) the database, serves the REST API, runs the delivery workers and the deadline
 * scheduler, and on SIGTERM or SIGINT stops accepting, ends the event streams, finishes the
 * requests in flight and exits 0. SIGHUP opens the log file again (log.h: after logrotate).
 */
#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "http.h"
#include "log.h"
#include "mail.h"

#define DEFAULT_DB "var/cardpost.db"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: cardpostd [--config FILE] [--db PATH] [--listen HOST:PORT]\n"
            "                 [--operator-token-file FILE]\n"
            "  --config FILE      settings, `key = value` lines (ops/cardpost.conf.example)\n"
            "  --db PATH          the SQLite database (default %s; created and migrated)\n"
            "                     or a postgresql:// address (docs/scaling.md)\n"
            "  --listen HOST:PORT where to serve HTTP (default 127.0.0.1:8080; port 0 picks one)\n"
            "  --operator-token-file FILE  the operator's bearer token (at least %d characters),\n"
            "                     read from FILE (keep it 0600); --operator-token TOKEN also\n"
            "                     works but shows the token to `ps`\n"
            "  --check-config FILE  check FILE (every key known, every value good), print\n"
            "                     FILE:LINE: KEY: reason for each bad line; exit 0 good, 1 not\n"
            "Every setting can also come from the environment: CARDPOST_DB, CARDPOST_LISTEN,\n"
            "CARDPOST_OPERATOR_TOKEN, CARDPOST_SMTP_URL, CARDPOST_MAIL_FROM, CARDPOST_PUBLIC_URL,\n"
            "... (the file's key in upper case). Flags win over the environment, which wins\n"
            "over the file.\n",
            DEFAULT_DB, CONFIG_OPERATOR_TOKEN_MIN);
}

/* Create the directory holding `path` if it is the default var/ and missing. */
static void ensure_parent(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash || slash == path)
        return;
    char dir[4096];
    size_t n = (size_t)(slash - path);
    if (n >= sizeof dir)
        return;
    memcpy(dir, path, n);
    dir[n] = '\0';
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        fprintf(stderr, "cardpostd: cannot create %s: %s\n", dir, strerror(errno));
}

/* The directory of this program's binary in `dir`; false when it cannot be told. */
static bool exe_dir(char *dir, size_t size)
{
    ssize_t n = readlink("/proc/self/exe", dir, size - 1);
    if (n <= 0)
        return false;
    dir[n] = '\0';
    char *slash = strrchr(dir, '/');
    if (!slash)
        return false;
    *slash = '\0';
    return true;
}

/* Whether `dir` is this build's directory (the build tree's cardpostd). */
static bool is_build_root(const char *dir)
{
    struct stat here, build;
    return stat(dir, &here) == 0 && stat(CARDPOST_BUILD_ROOT, &build) == 0 &&
           here.st_dev == build.st_dev && here.st_ino == build.st_ino;
}

/* Where the binary's companions are, found from its own directory (so that a relocated or
 * DESTDIR installation uses its own): the browser pages, web/ of the source tree for the
 * build tree's cardpostd, else DATADIR/cardpost/web (a web_dir setting wins); the reader of
 * inbound mail, the module cardpost-mime.so (notify/mime.h), beside the build tree's
 * cardpostd, else in LIBDIR/cardpost (loaded at the first message, not now). */
static void default_paths(struct config *c)
{
    char exe[4096], mime[4200];
    if (!exe_dir(exe, sizeof exe)) {
        snprintf(c->web_dir, sizeof c->web_dir, "%s", CARDPOST_INSTALLED_WEB_DIR);
        snprintf(mime, sizeof mime, "%s/cardpost-mime.so", CARDPOST_INSTALLED_MIME_DIR);
    } else if (is_build_root(exe)) { /* (config_defaults' source tree web/ stays) */
        snprintf(mime, sizeof mime, "%s/cardpost-mime.so", exe);
    } else {
        if (snprintf(c->web_dir, sizeof c->web_dir, "%s/%s", exe, CARDPOST_WEB_FROM_BINDIR) >=
            (int)sizeof c->web_dir)
            snprintf(c->web_dir, sizeof c->web_dir, "%s", CARDPOST_INSTALLED_WEB_DIR);
        snprintf(mime, sizeof mime, "%s/%s/cardpost-mime.so", exe, CARDPOST_MIME_FROM_BINDIR);
    }
    mail_mime_module(mime);
}

/* Serve until SIGTERM or SIGINT, opening the log file again on each SIGHUP (a rotation);
 * then stop accepting, finish the requests in flight and free everything. */
static void serve(const sigset_t *signals, struct api_app *app, struct http_server *srv,
                  struct http_metrics *metrics)
{
    struct err e;
    int sig = 0;
    while (sigwait(signals, &sig) == 0 && sig == SIGHUP)
        if (!log_reopen(&e))
            log_msg(LOG_LEVEL_ERROR, "log", "%s", e.msg); /* (to the old file, still open) */
    log_msg(LOG_LEVEL_INFO, "stop", "%s, finishing requests in flight",
            sig == SIGTERM ? "SIGTERM" : "SIGINT");
    api_stop(app);
    http_metrics_stop(metrics);
    http_stop(srv);
    struct store_commit_figures k;
    api_commit_figures(app, &k);
    log_msg(LOG_LEVEL_INFO, "stop", "%llu writes (moves, new matches) in %llu group commits",
            (unsigned long long)k.writes, (unsigned long long)k.batches);
    api_app_destroy(app);
    log_close();
}

/* Append `len` bytes of `s` to out (n used of max, always terminated). */
static void put(char *out, size_t max, size_t *n, const char *s, size_t len)
{
    while (len-- && *n + 1 < max)
        out[(*n)++] = *s++;
    out[*n] = '\0';
}

/* `db` as cardpostd shows it (stdout, the log): the password of a PostgreSQL address, in
 * its user part or as a password= parameter, replaced by "***". */
static void db_shown(const char *db, char *out, size_t max)
{
    size_t n = 0;
    out[0] = '\0';
    const char *p = db, *auth = strstr(db, "://");
    if (auth) {
        auth += 3;
        const char *at = memchr(auth, '@', strcspn(auth, "/?"));
        const char *colon = at ? memchr(auth, ':', (size_t)(at - auth)) : NULL;
        if (colon) {
            put(out, max, &n, db, (size_t)(colon + 1 - db));
            put(out, max, &n, "***", 3);
            p = at;
        }
    }
    for (const char *q; auth && (q = strstr(p, "password=")) != NULL;) {
        put(out, max, &n, p, (size_t)(q - p) + 9);
        p = q + 9;
        if (q[-1] == '?' || q[-1] == '&') {
            put(out, max, &n, "***", 3);
            p += strcspn(p, "&");
        }
    }
    put(out, max, &n, p, strlen(p));
}

/* Start the daemon (the app, its HTTP server, its threads, the metrics' address if any),
 * say where it listens, and serve until a stop signal. The process's exit status. */
static int run(const struct config *config, const sigset_t *stop)
{
    struct err e;
    const char *db = config->db, *listen = config->listen;
    if (!strcmp(db, DEFAULT_DB))
        ensure_parent(db);
    struct api_app *app = api_app_create(config, &e);
    if (!app) {
        fprintf(stderr, "cardpostd: %s\n", e.msg);
        return 1;
    }
    struct http_server *srv = http_start(app, listen, &e);
    if (!srv) {
        fprintf(stderr, "cardpostd: %s\n", e.msg);
        api_app_destroy(app);
        return 1;
    }
    if (!api_app_start_threads(app, &e)) {
        fprintf(stderr, "cardpostd: %s\n", e.msg);
        http_stop(srv);
        api_app_destroy(app);
        return 1;
    }
    struct http_metrics *metrics = NULL;
    if (config->metrics_listen[0] &&
        !(metrics = http_metrics_start(app, srv, config->metrics_listen, &e))) {
        fprintf(stderr, "cardpostd: %s\n", e.msg);
        api_stop(app);
        http_stop(srv);
        api_app_destroy(app);
        return 1;
    }
    char host[256], shown[sizeof config->db + 16];
    snprintf(host, sizeof host, "%.*s", (int)(strrchr(listen, ':') - listen), listen);
    db_shown(db, shown, sizeof shown);
    printf("cardpostd: listening on http://%s:%d (database %s)\n", host, http_port(srv), shown);
    if (metrics)
        printf("cardpostd: metrics on http://%.*s:%d/metrics\n",
               (int)(strrchr(config->metrics_listen, ':') - config->metrics_listen),
               config->metrics_listen, http_metrics_port(metrics));
    fflush(stdout);

    log_msg(LOG_LEVEL_INFO, "start", "listening on http://%s:%d (database %s)", host,
            http_port(srv), shown);

    serve(stop, app, srv, metrics);
    return 0;
}

int main(int argc, char **argv)
{
    struct config config;
    struct err e;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--check-config")) {
            if (i + 1 >= argc || argc != 3) {
                usage(stderr);
                return 2;
            }
            int bad = config_check_file(argv[i + 1], stderr);
            if (bad == 0)
                printf("%s: ok\n", argv[i + 1]);
            return bad == 0 ? 0 : 1;
        }
    config_defaults(&config);
    default_paths(&config);
    const char *file = NULL;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--config") && i + 1 < argc)
            file = argv[++i];
    if (file && !config_load_file(&config, file, &e)) {
        fprintf(stderr, "cardpostd: %s\n", e.msg);
        return 2;
    }
    if (!config_load_env(&config, &e)) {
        fprintf(stderr, "cardpostd: environment: %s\n", e.msg);
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        const char *key = NULL;
        if (!strcmp(argv[i], "--config") && i + 1 < argc)
            i++;
        else if (!strcmp(argv[i], "--db") && i + 1 < argc)
            key = "db";
        else if (!strcmp(argv[i], "--listen") && i + 1 < argc)
            key = "listen";
        else if (!strcmp(argv[i], "--operator-token") && i + 1 < argc)
            key = "operator_token";
        else if (!strcmp(argv[i], "--operator-token-file") && i + 1 < argc)
            key = "operator_token_file";
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            return 2;
        }
        if (key && !config_set(&config, key, argv[++i], &e)) {
            fprintf(stderr, "cardpostd: %s\n", e.msg);
            return 2;
        }
    }
    /* A short operator token can be guessed: refuse it before anything starts. (None at
     * all is allowed: then nobody is the operator.) */
    size_t token_len = strlen(config.operator_token);
    if (token_len > 0 && token_len < CONFIG_OPERATOR_TOKEN_MIN) {
        fprintf(stderr,
                "cardpostd: the operator token is %zu characters long; it must have at least "
                "%d (for example: head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n' > FILE, "
                "then --operator-token-file FILE)\n",
                token_len, CONFIG_OPERATOR_TOKEN_MIN);
        return 2;
    }

#ifdef M_ARENA_MAX
    /* Two malloc arenas instead of glibc's eight per core: every connection thread would
     * otherwise get its own and keep its freed memory (2.5 MiB at 64 connections;
     * docs/benchmarks.md "Memory"). */
    mallopt(M_ARENA_MAX, 2);
#endif
#ifdef M_TRIM_THRESHOLD
    /* Keep up to 4 MiB free at the heap's top, not glibc's 128 KiB: the committer's batches
     * grew and shrank it with brk, and faulted its pages in again, over one call a move
     * (docs/benchmarks.md "Streams written straight to their sockets"). The peak is the
     * same. */
    mallopt(M_TRIM_THRESHOLD, 4 << 20);
#endif

    /* Signals are taken by sigwait in this thread; every other thread inherits the mask. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);

    /* The log, before anything logs (a start's failures go to stderr, as they did). */
    log_set_level(config.log_level);
    if (!log_open(config.log_file, &e) || !log_buffer_start(&e)) {
        fprintf(stderr, "cardpostd: %s\n", e.msg);
        return 2;
    }

    int rc = run(&config, &stop);
    log_close(); /* (the lines gathered, when a start failed) */
    return rc;
}
