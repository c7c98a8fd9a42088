/* open.c - the PostgreSQL backend: connecting (libpq; the address is a postgresql:// or
 * postgres:// URI as libpq takes it), applying the embedded migrations in one transaction
 * under an advisory lock (several processes may start at once), transactions and savepoints,
 * the helpers its other files run statements with, and the backend's table of operations
 * (backend.h). The SQLite file operations (backup, restore, ...) are refused here.
 */
#include "pg-int.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The advisory lock key the migrations are applied under: "cardpost" in ASCII. */
#define PG_MIGRATION_LOCK 0x63617264706f7374LL

/* ---- Parameters and results ---------------------------------------------------------------- */

static void add(struct pg_params *p, const char *v, int len, int format)
{
    assert(p->n < PG_MAX_PARAMS);
    p->value[p->n] = v;
    p->length[p->n] = len;
    p->format[p->n] = format;
    p->n++;
}

void pg_null(struct pg_params *p)
{
    add(p, NULL, 0, 0);
}

void pg_int(struct pg_params *p, int64_t v)
{
    snprintf(p->number[p->n], sizeof p->number[p->n], "%lld", (long long)v);
    add(p, p->number[p->n], 0, 0);
}

void pg_int_or_null(struct pg_params *p, int64_t v)
{
    if (v)
        pg_int(p, v);
    else
        pg_null(p);
}

void pg_bool(struct pg_params *p, bool v)
{
    add(p, v ? "true" : "false", 0, 0);
}

void pg_double(struct pg_params *p, double v)
{
    snprintf(p->number[p->n], sizeof p->number[p->n], "%.17g", v);
    add(p, p->number[p->n], 0, 0);
}

void pg_text(struct pg_params *p, const char *s)
{
    add(p, s, 0, 0);
}

void pg_bytes(struct pg_params *p, const void *b, size_t len)
{
    add(p, b ? (len ? (const char *)b : "") : NULL, (int)len, 1);
}

int64_t pg_get_int(const PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col) ? 0 : strtoll(PQgetvalue(r, row, col), NULL, 10);
}

bool pg_get_bool(const PGresult *r, int row, int col)
{
    return !PQgetisnull(r, row, col) && PQgetvalue(r, row, col)[0] == 't';
}

double pg_get_double(const PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col) ? 0 : strtod(PQgetvalue(r, row, col), NULL);
}

char *pg_get_text(const PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col) ? NULL : strdup(PQgetvalue(r, row, col));
}

void *pg_get_blob(const PGresult *r, int row, int col, size_t *len)
{
    *len = 0;
    if (PQgetisnull(r, row, col))
        return NULL;
    size_t n = 0;
    unsigned char *b = PQunescapeBytea((const unsigned char *)PQgetvalue(r, row, col), &n);
    void *out = b && n ? malloc(n) : NULL;
    if (out) {
        memcpy(out, b, n);
        *len = n;
    }
    PQfreemem(b);
    return out;
}

size_t pg_get_bytes(const PGresult *r, int row, int col, void *out, size_t max)
{
    size_t n = 0;
    void *b = pg_get_blob(r, row, col, &n);
    if (n > max)
        n = max;
    if (b)
        memcpy(out, b, n);
    free(b);
    return n;
}

/* ---- Running statements ------------------------------------------------------------------- */

bool pg_fail(struct store_conn *c, const PGresult *r, const char *what, struct err *e)
{
    const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    const char *msg = r ? PQresultErrorMessage(r) : NULL;
    if (!msg || !*msg)
        msg = c && c->db ? PQerrorMessage(c->db) : "no connection";
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
        n--;
    bool constraint = state && !strncmp(state, "23", 2);
    /* The connection lost, the server shutting down or starting (08, 57P0x) */
    bool gone = (c && c->db && PQstatus(c->db) == CONNECTION_BAD) ||
                (state && (!strncmp(state, "08", 2) || !strncmp(state, "57P0", 4)));
    if (gone)
        return err_set(e, ERR_UNAVAILABLE, "database_unavailable", "%s: %.*s", what, (int)n,
                       msg);
    /* Two transactions (of two processes) waiting for each other's rows: the server undid
     * this statement; what it wrote is to be judged again (store_match_lock's refusal). */
    if (state && (!strcmp(state, "40P01") || !strcmp(state, "40001")))
        return err_set(e, ERR_CONFLICT, "stale_match", "%s: %.*s", what, (int)n, msg);
    return err_set(e, constraint ? ERR_INVALID : ERR_IO, constraint ? "constraint" : "postgres",
                   "%s: %.*s", what, (int)n, msg);
}

/* The name `sql` is prepared under on c, preparing it first if needed; "" when the cache is
 * full (then it runs unprepared); NULL on failure. */
static const char *prepared(struct store_conn *c, const char *sql, int nparams, char name[16],
                            const char *what, struct err *e)
{
    int i = 0;
    while (i < c->nprepared && c->prepared[i] != sql)
        i++;
    snprintf(name, 16, "cp%d", i);
    if (i < c->nprepared)
        return name;
    if (i == PG_MAX_STATEMENTS)
        return "";
    PGresult *r = PQprepare(c->db, name, sql, nparams, NULL);
    bool ok = r && PQresultStatus(r) == PGRES_COMMAND_OK;
    if (!ok)
        pg_fail(c, r, what, e);
    PQclear(r);
    if (!ok)
        return NULL;
    c->prepared[c->nprepared++] = sql;
    return name;
}

static bool session(struct store_conn *c, struct err *e);

/* Whether c can run a statement: a connection lost (the server restarted, a network cut) is
 * made again, with its session's settings, unless a transaction was open on it (that one
 * is gone: it fails, and its caller rolls back). */
static bool usable(struct store_conn *c, const char *what, struct err *e)
{
    if (PQstatus(c->db) != CONNECTION_BAD)
        return true;
    if (c->in_txn)
        return err_set(e, ERR_UNAVAILABLE, "database_unavailable",
                       "%s: the connection to PostgreSQL was lost", what);
    PQreset(c->db);
    c->nprepared = 0; /* (the server forgot them) */
    if (PQstatus(c->db) != CONNECTION_OK)
        return pg_fail(c, NULL, what, e);
    return session(c, e);
}

/* Run `sql` once on c as it is (prepared first if it can be). */
static PGresult *run_once(struct store_conn *c, const char *sql, const struct pg_params *p,
                          const char *what, struct err *e)
{
    char name[16];
    const char *as = prepared(c, sql, p->n, name, what, e);
    if (!as)
        return NULL;
    PGresult *r = *as ? PQexecPrepared(c->db, as, p->n, p->value, p->length, p->format, 0)
                      : PQexecParams(c->db, sql, p->n, NULL, p->value, p->length, p->format, 0);
    ExecStatusType st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK)
        return r;
    pg_fail(c, r, what, e);
    PQclear(r);
    return NULL;
}

PGresult *pg_run(struct store_conn *c, const char *sql, const struct pg_params *p,
                 const char *what, struct err *e)
{
    static const struct pg_params none;
    if (!p)
        p = &none;
    if (!usable(c, what, e))
        return NULL;
    PGresult *r = run_once(c, sql, p, what, e);
    /* An idle connection learns that the server restarted only when it is used: outside a
     * transaction the statement is sent once more on a new connection (it went out on the
     * old one, which the server had closed). */
    if (!r && !c->in_txn && PQstatus(c->db) == CONNECTION_BAD && usable(c, what, e))
        r = run_once(c, sql, p, what, e);
    return r;
}

bool pg_do(struct store_conn *c, const char *sql, const struct pg_params *p, int64_t *changed,
           const char *what, struct err *e)
{
    PGresult *r = pg_run(c, sql, p, what, e);
    if (!r)
        return false;
    if (changed)
        *changed = strtoll(PQcmdTuples(r), NULL, 10);
    PQclear(r);
    return true;
}

/* A statement (or several) without parameters, not prepared: the migrations, SET. */
static bool exec(struct store_conn *c, const char *sql, const char *what, struct err *e)
{
    PGresult *r = PQexec(c->db, sql);
    ExecStatusType st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    bool ok = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
    if (!ok)
        pg_fail(c, r, what, e);
    PQclear(r);
    return ok;
}

/* ---- Opening and migrating ----------------------------------------------------------------- */

int pg_migration_count(void)
{
    return pg_nmigrations;
}

static int pg_version(struct store_conn *c)
{
    PGresult *r = PQexec(c->db, "SELECT coalesce(max(version), 0) FROM schema_migrations");
    int v = r && PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1
                ? (int)pg_get_int(r, 0, 0)
                : 0;
    PQclear(r);
    return v;
}

/* Every migration the database has not recorded, by its number (as the SQLite backend),
 * all in one transaction under a transaction-scoped advisory lock: a second process
 * starting at the same time waits for the first to commit, then finds nothing to do. */
static bool migrate(struct store_conn *c, struct err *e)
{
    if (!exec(c, "BEGIN", "migrate", e))
        return false;
    char lock[96];
    snprintf(lock, sizeof lock, "SELECT pg_advisory_xact_lock(%lld)",
             (long long)PG_MIGRATION_LOCK);
    bool ok = exec(c, lock, "take the migration lock", e) &&
              exec(c,
                   "CREATE TABLE IF NOT EXISTS schema_migrations ("
                   " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)",
                   "create schema_migrations", e);
    for (int i = 0; ok && i < pg_nmigrations; i++) {
        const struct pg_migration *m = &pg_migrations[i];
        struct pg_params p = {0};
        pg_int(&p, m->version);
        PGresult *r = pg_run(c, "SELECT 1 FROM schema_migrations WHERE version = $1", &p,
                             "read the migrations", e);
        if (!r) {
            ok = false;
            break;
        }
        bool applied = PQntuples(r) > 0;
        PQclear(r);
        if (applied)
            continue;
        char what[96];
        snprintf(what, sizeof what, "migration %s", m->name);
        struct pg_params q = {0};
        pg_int(&q, m->version);
        pg_text(&q, m->name);
        ok = exec(c, m->sql, what, e) &&
             pg_do(c,
                   "INSERT INTO schema_migrations VALUES ($1, $2,"
                   " extract(epoch FROM now())::bigint)",
                   &q, NULL, "record a migration", e);
    }
    if (ok)
        return exec(c, "COMMIT", "commit the migrations", e);
    exec(c, "ROLLBACK", "roll the migrations back", NULL);
    return false;
}

static void quiet(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

static void pg_close(struct store_conn *c)
{
    if (!c)
        return;
    PQfinish(c->db);
    free(c);
}

/* A connection to `url`, without migrating. */
static struct store_conn *connect_to(const char *url, struct err *e)
{
    struct store_conn *c = calloc(1, sizeof *c);
    if (!c) {
        err_set(e, ERR_NOMEM, "nomem", "out of memory");
        return NULL;
    }
    c->db = PQconnectdb(url);
    if (!c->db || PQstatus(c->db) != CONNECTION_OK) {
        pg_fail(c, NULL, "connect to PostgreSQL", e);
        if (e)
            e->code = ERR_IO, e->tag = "postgres"; /* (at the start: the address, the server) */
        pg_close(c);
        return NULL;
    }
    PQsetNoticeProcessor(c->db, quiet, NULL);
    return c;
}

/* STORE_DURABLE_CRASH: synchronous_commit off, like SQLite's synchronous=NORMAL: a commit
 * survives the end of cardpostd (the server has it), and the database stays consistent
 * if the server or the machine dies, but the last few milliseconds of commits may be lost
 * then. STORE_DURABLE_POWER: on, each commit waits for the server's WAL flush. */
static bool session(struct store_conn *c, struct err *e)
{
    return exec(c, "SET client_min_messages = warning", "configure the session", e) &&
           exec(c, c->durability == STORE_DURABLE_POWER ? "SET synchronous_commit = on"
                                                        : "SET synchronous_commit = off",
                "configure the session", e);
}

static struct store_conn *pg_open(const char *url, enum store_durability d, struct err *e)
{
    struct store_conn *c = connect_to(url, e);
    if (!c)
        return NULL;
    c->durability = d;
    if (!session(c, e) || !migrate(c, e)) {
        pg_close(c);
        return NULL;
    }
    return c;
}

/* ---- Transactions ------------------------------------------------------------------------ */

bool pg_begin(struct store_conn *c, struct err *e)
{
    return (c->in_txn = pg_do(c, "BEGIN", NULL, NULL, "begin", e));
}

bool pg_commit(struct store_conn *c, struct err *e)
{
    bool ok = pg_do(c, "COMMIT", NULL, NULL, "commit", e);
    c->in_txn = false;
    return ok;
}

static void pg_rollback(struct store_conn *c)
{
    if (PQstatus(c->db) == CONNECTION_OK && PQtransactionStatus(c->db) != PQTRANS_IDLE)
        pg_do(c, "ROLLBACK", NULL, NULL, "rollback", NULL);
    c->in_txn = false;
}

bool pg_savepoint(struct store_conn *c, struct err *e)
{
    return pg_do(c, "SAVEPOINT w", NULL, NULL, "savepoint", e);
}

bool pg_release(struct store_conn *c, struct err *e)
{
    return pg_do(c, "RELEASE SAVEPOINT w", NULL, NULL, "release", e);
}

bool pg_rollback_to(struct store_conn *c, struct err *e)
{
    return pg_do(c, "ROLLBACK TO SAVEPOINT w", NULL, NULL, "rollback to", e) &&
           pg_do(c, "RELEASE SAVEPOINT w", NULL, NULL, "release", e);
}

/* ---- The database as a whole --------------------------------------------------------------- */

/* The database's size (pg_database_size); PostgreSQL's WAL is the server's, not the
 * database's: 0. */
bool pg_file_sizes(struct store_conn *c, int64_t *db_bytes, int64_t *wal_bytes, struct err *e)
{
    PGresult *r = pg_run(c, "SELECT pg_database_size(current_database())", NULL,
                         "database size", e);
    if (!r)
        return false;
    *db_bytes = pg_get_int(r, 0, 0);
    *wal_bytes = 0;
    PQclear(r);
    return true;
}

/* The advisory locks of the leases: the migrations' key plus the lease's (store.h:
 * enum store_lease_key), so they meet no other key of ours. */
bool pg_lease(struct store_conn *c, int64_t key, bool *held, struct err *e)
{
    /* Held already (session locks stack: taking it again each time would pile up counts), or
     * free to take now: pg_try_advisory_lock never waits. A bigint key shows in pg_locks as
     * its high and low 32 bits. */
    static const char sql[] =
        "SELECT CASE WHEN EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory'"
        " AND pid = pg_backend_pid() AND granted AND objsubid = 1"
        " AND classid = ($1::bigint >> 32)::oid AND objid = ($1::bigint & 4294967295)::oid)"
        " THEN true ELSE pg_try_advisory_lock($1::bigint) END";
    struct pg_params p = {0};
    pg_int(&p, PG_MIGRATION_LOCK + key);
    PGresult *r = pg_run(c, sql, &p, "lease", e);
    if (!r)
        return false;
    *held = pg_get_bool(r, 0, 0);
    PQclear(r);
    return true;
}

static bool sqlite_only(const char *what, struct err *e)
{
    return err_set(e, ERR_INVALID, "sqlite_only",
                   "%s is for SQLite databases; use pg_dump and pg_restore for PostgreSQL", what);
}

static bool pg_backup(const char *url, const char *out, struct store_copy_info *info,
                      struct err *e)
{
    (void)url, (void)out, (void)info;
    return sqlite_only("cardpost backup", e);
}

static bool pg_check_copy(const char *url, struct store_copy_info *info, struct err *e)
{
    (void)url, (void)info;
    return sqlite_only("checking a copy", e);
}

static bool pg_in_use(const char *url, bool *in_use, struct err *e)
{
    (void)url, (void)in_use;
    return sqlite_only("asking whether a database is in use", e);
}

static bool pg_restore(const char *backup, const char *url, bool force,
                       struct store_copy_info *info, struct err *e)
{
    (void)backup, (void)url, (void)force, (void)info;
    return sqlite_only("cardpost restore", e);
}

/* The readiness probe: a connection of its own, and the schema version read on it. */
static bool pg_probe(const char *url, struct err *e)
{
    struct store_conn *c = connect_to(url, e);
    if (!c)
        return false;
    PGresult *r = pg_run(c, "SELECT max(version) FROM schema_migrations", NULL, "probe", e);
    bool ok = r && PQntuples(r) == 1 && !PQgetisnull(r, 0, 0);
    if (r && !ok)
        err_set(e, ERR_IO, "not_cardpost", "the database records no schema version");
    PQclear(r);
    pg_close(c);
    return ok;
}

const struct store_backend store_postgres_backend = {
    .name = "postgres",
    .open = pg_open,
    .close = pg_close,
    .version = pg_version,
    .rollback = pg_rollback,
    .outbox_add = pg_outbox_add,
    .backup = pg_backup,
    .check_copy = pg_check_copy,
    .in_use = pg_in_use,
    .restore = pg_restore,
    .probe = pg_probe,
    .migration_count = pg_migration_count,
    .listen = pg_listen,
    .listener_wait = pg_listener_wait,
    .listener_close = pg_listener_close,
#define PG_MEMBER(ret, op, params, args) .op = pg_##op,
    STORE_OPS(PG_MEMBER)
#undef PG_MEMBER
};
