/* cardpostd.c - the service: `cardpostd --db PATH --listen HOST:PORT`. Opens (creating and
 * migrating) the database, serves the REST API, and on SIGTERM or SIGINT stops accepting,
 * ends the event streams, finishes the requests in flight and exits 0.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "http.h"

#define DEFAULT_DB "var/cardpost.db"
#define DEFAULT_LISTEN "127.0.0.1:8080"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: cardpostd [--db PATH] [--listen HOST:PORT] [--operator-token TOKEN]\n"
            "  --db PATH          the SQLite database (default %s; created and migrated)\n"
            "  --listen HOST:PORT where to serve HTTP (default %s; port 0 picks one)\n"
            "  --operator-token   the operator's bearer token (or CARDPOST_OPERATOR_TOKEN)\n",
            DEFAULT_DB, DEFAULT_LISTEN);
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

int main(int argc, char **argv)
{
    const char *db = DEFAULT_DB, *listen = DEFAULT_LISTEN;
    const char *operator_token = getenv("CARDPOST_OPERATOR_TOKEN");
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--db") && i + 1 < argc)
            db = argv[++i];
        else if (!strcmp(argv[i], "--listen") && i + 1 < argc)
            listen = argv[++i];
        else if (!strcmp(argv[i], "--operator-token") && i + 1 < argc)
            operator_token = argv[++i];
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            return 2;
        }
    }

    /* Signals are taken by sigwait in this thread; every other thread inherits the mask. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);

    if (!strcmp(db, DEFAULT_DB))
        ensure_parent(db);
    struct err e;
    struct api_app *app = api_app_create(db, operator_token, &e);
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
    char host[256];
    snprintf(host, sizeof host, "%.*s", (int)(strrchr(listen, ':') - listen), listen);
    printf("cardpostd: listening on http://%s:%d (database %s)\n", host, http_port(srv), db);
    fflush(stdout);

    int sig = 0;
    sigwait(&stop, &sig);
    fprintf(stderr, "cardpostd: %s, finishing requests in flight\n",
            sig == SIGTERM ? "SIGTERM" : "SIGINT");
    app->stopping = 1;
    pthread_mutex_lock(&app->table_lock);
    for (size_t i = 0; i < app->nmatches; i++)
        if (app->matches[i]) {
            pthread_mutex_lock(&app->matches[i]->lock);
            pthread_cond_broadcast(&app->matches[i]->changed);
            pthread_mutex_unlock(&app->matches[i]->lock);
        }
    pthread_mutex_unlock(&app->table_lock);
    http_stop(srv);
    api_app_destroy(app);
    return 0;
}
