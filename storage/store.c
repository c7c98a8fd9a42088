/* store.c - the storage interface's own part: choosing a backend from the database's address,
 * the connection the service holds (`struct store`, backend.h), and each store_ operation
 * forwarded to the backend's; and the _finish functions of the value structs, which every
 * backend fills alike.
 */
#include "backend.h"

#include <stdlib.h>
#include <string.h>

/* The backend for `url`, with *path the address as that backend takes it. NULL with e
 * filled for an address no backend of this build takes. */
static const struct store_backend *backend_for(const char *url, const char **path,
                                               struct err *e)
{
    if (!strncmp(url, "sqlite:", 7)) {
        *path = url + 7;
        if (!strncmp(*path, "//", 2)) /* sqlite:///var/lib/cardpost.db */
            *path += 2;
        return &store_sqlite_backend;
    }
    if (!strncmp(url, "postgres://", 11) || !strncmp(url, "postgresql://", 13)) {
        *path = url; /* libpq takes the whole URI */
        return &store_postgres_backend;
    }
    const char *colon = strstr(url, "://");
    if (colon && colon > url && !memchr(url, '/', (size_t)(colon - url)) &&
        strncmp(url, "file:", 5)) {
        err_set(e, ERR_INVALID, "no_backend", "no storage backend for %.*s addresses",
                (int)(colon - url), url);
        return NULL;
    }
    *path = url; /* a file path, or one of SQLite's own file: URIs */
    return &store_sqlite_backend;
}

struct store *store_open(const char *url, struct err *e)
{
    return store_open_durable(url, STORE_DURABLE_CRASH, e);
}

struct store *store_open_durable(const char *url, enum store_durability d, struct err *e)
{
    const char *path;
    const struct store_backend *b = backend_for(url, &path, e);
    if (!b)
        return NULL;
    struct store *s = calloc(1, sizeof *s);
    if (!s) {
        err_set(e, ERR_NOMEM, "nomem", "out of memory");
        return NULL;
    }
    *s = (struct store){.backend = b, .durability = d, .path = strdup(path)};
    if (!s->path) {
        err_set(e, ERR_NOMEM, "nomem", "out of memory");
        store_close(s);
        return NULL;
    }
    if (!(s->conn = b->open(path, d, e))) {
        store_close(s);
        return NULL;
    }
    return s;
}

void store_close(struct store *s)
{
    if (!s)
        return;
    if (s->conn)
        s->backend->close(s->conn);
    free(s->path);
    free(s);
}

int store_version(struct store *s)
{
    return s->backend->version(s->conn);
}

int store_migration_count(void)
{
    return store_sqlite_backend.migration_count();
}

/* A thread's own connection in the place of a shared store (store_bind): the committer's
 * pool writes each write on a connection of its own, through the store its callbacks know. */
static _Thread_local const struct store *bound_from;
static _Thread_local struct store *bound_to;

void store_bind(const struct store *s, struct store *own)
{
    bound_from = own ? s : NULL;
    bound_to = own;
}

static struct store *target(struct store *s)
{
    return s == bound_from ? bound_to : s;
}

void store_rollback(struct store *s)
{
    s = target(s);
    s->backend->rollback(s->conn);
}

bool store_outbox_add(struct store *s, struct store_outbox *o, struct err *e)
{
    s = target(s);
    if (!s->backend->outbox_add(s->conn, o, e))
        return false;
    s->outbox_rows++;
    return true;
}

bool store_outbox_record(struct store *s, int64_t id, const struct store_attempt *a, int status,
                         int attempts, int64_t next_attempt, struct err *e)
{
    struct store_settle r = {id, a, status, attempts, next_attempt};
    return store_outbox_settle(s, &r, 1, e);
}

bool store_outbox_release(struct store *s, int64_t id, struct err *e)
{
    return store_outbox_settle(s, &(struct store_settle){.id = id}, 1, e);
}

#define STORE_FORWARD(ret, op, params, args)                                                   \
    ret store_##op(struct store *s, STORE_LIST params)                                         \
    {                                                                                          \
        struct store *t = target(s);                                                           \
        return t->backend->op(t->conn, STORE_LIST args);                                       \
    }
STORE_OPS(STORE_FORWARD)
#undef STORE_FORWARD

/* ---- By address alone ---------------------------------------------------------------------- */

bool store_backup(const char *db_url, const char *out, struct store_copy_info *info,
                  struct err *e)
{
    const char *path;
    const struct store_backend *b = backend_for(db_url, &path, e);
    return b && b->backup(path, out, info, e);
}

bool store_check_copy(const char *url, struct store_copy_info *info, struct err *e)
{
    const char *path;
    const struct store_backend *b = backend_for(url, &path, e);
    return b && b->check_copy(path, info, e);
}

bool store_in_use(const char *db_url, bool *in_use, struct err *e)
{
    const char *path;
    const struct store_backend *b = backend_for(db_url, &path, e);
    return b && b->in_use(path, in_use, e);
}

bool store_restore(const char *backup, const char *db_url, bool force,
                   struct store_copy_info *info, struct err *e)
{
    const char *path;
    const struct store_backend *b = backend_for(db_url, &path, e);
    return b && b->restore(backup, path, force, info, e);
}

bool store_probe(const char *db_url, struct err *e)
{
    const char *path;
    const struct store_backend *b = backend_for(db_url, &path, e);
    return b && b->probe(path, e);
}

/* ---- Several processes on one database ----------------------------------------------------- */

bool store_shared(const struct store *s)
{
    return s->backend->listen != NULL;
}

struct store_listener {
    const struct store_backend *backend;
    struct store_listen_conn *conn;
};

struct store_listener *store_listen(const char *url, struct err *e)
{
    const char *path;
    const struct store_backend *b = backend_for(url, &path, e);
    if (!b)
        return NULL;
    if (!b->listen) {
        err_set(e, ERR_INVALID, "not_shared", "a %s database is one process's: nothing to hear",
                b->name);
        return NULL;
    }
    struct store_listener *l = calloc(1, sizeof *l);
    if (!l) {
        err_set(e, ERR_NOMEM, "nomem", "out of memory");
        return NULL;
    }
    l->backend = b;
    if (!(l->conn = b->listen(path, e))) {
        free(l);
        return NULL;
    }
    return l;
}

bool store_listener_wait(struct store_listener *l, int timeout_ms,
                         void (*fn)(void *cls, const char *payload), void *cls, struct err *e)
{
    return l->backend->listener_wait(l->conn, timeout_ms, fn, cls, e);
}

void store_announce_changes(const char *url, bool on)
{
    const char *path;
    const struct store_backend *b = backend_for(url, &path, NULL);
    if (b && b->announce)
        b->announce(on);
}

void store_listener_close(struct store_listener *l)
{
    if (!l)
        return;
    l->backend->listener_close(l->conn);
    free(l);
}

/* ---- The value structs --------------------------------------------------------------------- */

void store_player_finish(struct store_player *p)
{
    if (!p)
        return;
    free(p->name);
    free(p->email);
    free(p->webhook_url);
    free(p->webhook_secret);
    free(p->prefs);
    p->name = p->email = p->webhook_url = p->webhook_secret = p->prefs = NULL;
}

void store_match_finish(struct store_match *m)
{
    if (!m)
        return;
    free(m->game);
    free(m->options);
    free(m->to_move);
    free(m->totals);
    free(m->result);
    free(m->state);
    for (int i = 0; i < STORE_MAX_SEATS; i++) {
        free(m->names[i]);
        m->names[i] = NULL;
    }
    m->game = m->options = m->to_move = m->totals = m->result = NULL;
    m->state = NULL;
    m->state_len = 0;
}

void store_idem_finish(struct store_idem *r)
{
    if (!r)
        return;
    free(r->body);
    r->body = NULL;
}

void store_league_finish(struct store_league *l)
{
    if (!l)
        return;
    free(l->name);
    free(l->game);
    free(l->options);
    free(l->clock);
    free(l->points);
    l->name = l->game = l->options = l->clock = l->points = NULL;
}

void store_member_finish(struct store_member *m)
{
    if (m) {
        free(m->name);
        m->name = NULL;
    }
}

void store_standing_finish(struct store_standing *st)
{
    if (st) {
        free(st->name);
        st->name = NULL;
    }
}

void store_outbox_finish(struct store_outbox *o)
{
    if (!o)
        return;
    free(o->body);
    free(o->last_error);
    o->body = o->last_error = NULL;
}
