/* listen.c - the PostgreSQL backend's listening connection (store.h: store_listen): a
 * connection of its own that LISTENs on the database's channel, and waits on its socket
 * for the notifications the other processes' commits send (store_match_changed,
 * store_notify). A notification is delivered to every listener connected when it commits;
 * one whose connection was lost meanwhile never gets it, hence the caller's catch-up.
 */
#include "pg-int.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>

struct store_listen_conn {
    PGconn *db;
};

static void quiet(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

void pg_listener_close(struct store_listen_conn *l)
{
    if (!l)
        return;
    PQfinish(l->db);
    free(l);
}

struct store_listen_conn *pg_listen(const char *url, struct err *e)
{
    struct store_listen_conn *l = calloc(1, sizeof *l);
    if (!l) {
        err_set(e, ERR_NOMEM, "nomem", "out of memory");
        return NULL;
    }
    l->db = PQconnectdb(url);
    PGresult *r = NULL;
    if (l->db && PQstatus(l->db) == CONNECTION_OK) {
        PQsetNoticeProcessor(l->db, quiet, NULL);
        r = PQexec(l->db, "LISTEN " PG_CHANNEL);
    }
    if (!r || PQresultStatus(r) != PGRES_COMMAND_OK) {
        err_set(e, ERR_UNAVAILABLE, "database_unavailable", "listen: %s",
                l->db ? PQerrorMessage(l->db) : "no connection");
        PQclear(r);
        pg_listener_close(l);
        return NULL;
    }
    PQclear(r);
    return l;
}

bool pg_listener_wait(struct store_listen_conn *l, int timeout_ms,
                      void (*fn)(void *cls, const char *payload), void *cls, struct err *e)
{
    struct pollfd p = {.fd = PQsocket(l->db), .events = POLLIN};
    if (p.fd < 0)
        return err_set(e, ERR_UNAVAILABLE, "database_unavailable", "listen: no connection");
    int n = poll(&p, 1, timeout_ms);
    if (n < 0 && errno != EINTR)
        return err_set(e, ERR_IO, "poll", "listen: poll failed");
    if (n > 0 && (!PQconsumeInput(l->db) || PQstatus(l->db) != CONNECTION_OK))
        return err_set(e, ERR_UNAVAILABLE, "database_unavailable", "listen: %s",
                       PQerrorMessage(l->db));
    PGnotify *note;
    while ((note = PQnotifies(l->db)) != NULL) {
        fn(cls, note->extra);
        PQfreemem(note);
    }
    return true;
}
