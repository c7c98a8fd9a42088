/* open.c - the PostgreSQL backend: connecting (libpq; the address is a postgresql:// or
 * postgres:// URI as libpq takes it), applying the embedded migrations in one transaction
 * under an advisory lock (several processes may start at once), transactions and savepoints,
 * the helpers its other files run statements with, and the backend's table of operations
 * (backend.h). The SQLite file operations (backup, restore, ...) are refused here.
 */
#include "pg-int.h"

#include <assert.h>
#include <poll.h>
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
    /* (cardpost_lock_match's "no such match": migrations/postgres/0013) */
    if (state && !strcmp(state, "P0002"))
        return err_set(e, ERR_NOT_FOUND, "not_found", "no such match");
    return err_set(e, constraint ? ERR_INVALID : ERR_IO, constraint ? "constraint" : "postgres",
                   "%s: %.*s", what, (int)n, msg);
}

static void queue_add(struct store_conn *c, const char *what, enum pg_expect expect, int64_t id,
                      int64_t want, int64_t *into, const char *sql);

/* The name `sql` is prepared under on c, preparing it first if needed (in a transaction:
 * sent, its answer read with the statement's); "" when the cache is full (then it runs
 * unprepared); NULL on failure. */
static const char *prepared(struct store_conn *c, const char *sql, int nparams, char name[16],
                            const char *what, struct err *e)
{
    int i = 0;
    while (i < c->nprepared && c->prepared[i] != sql)
        i++;
    if (i < c->nprepared) {
        snprintf(name, 16, "cp%u", c->prepared_as[i]);
        return name;
    }
    if (i == PG_MAX_STATEMENTS)
        return "";
    unsigned as = c->next_name++;
    snprintf(name, 16, "cp%u", as);
    if (c->in_txn) {
        if (!PQsendPrepare(c->db, name, sql, nparams, NULL)) {
            pg_fail(c, NULL, what, e);
            return NULL;
        }
        queue_add(c, what, PG_EXPECT_PREPARED, 0, 0, NULL, sql);
    } else {
        PGresult *r = PQprepare(c->db, name, sql, nparams, NULL);
        bool ok = r && PQresultStatus(r) == PGRES_COMMAND_OK;
        if (!ok)
            pg_fail(c, r, what, e);
        PQclear(r);
        if (!ok)
            return NULL;
    }
    c->prepared[c->nprepared] = sql;
    c->prepared_as[c->nprepared++] = as;
    return name;
}

/* A statement whose PREPARE, sent in a transaction, failed or was skipped (a statement
 * before it failed): prepared again, under a new name, next time. */
static void forget(struct store_conn *c, const char *sql)
{
    for (int i = 0; i < c->nprepared; i++)
        if (c->prepared[i] == sql) {
            c->nprepared--;
            c->prepared[i] = c->prepared[c->nprepared];
            c->prepared_as[i] = c->prepared_as[c->nprepared];
            return;
        }
}

static bool session(struct store_conn *c, struct err *e);
static void pg_rollback(struct store_conn *c);

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

/* ---- Transactions in pipeline mode ------------------------------------------------------------
 * Between pg_begin and its commit or rollback the connection is in libpq's pipeline mode:
 * each statement is sent at once, and the answers are read together when the transaction
 * needs one (pg_run) or commits. A move's transaction (BEGIN, its row locked and checked
 * by cardpost_lock_match, its events, its row, its outbox rows, its version read back,
 * COMMIT) is then one round trip to the server instead of seven: the server's CPU a move
 * was mostly the cost of those round trips. A statement that fails makes the server skip
 * everything sent after it up to the next sync (a COMMIT among them: the transaction is
 * undone); its error is the one reported, by the call that reads the answers. A check the
 * server does not make (pg_expect: the rows changed, a value) is made when its answer is
 * read, before a COMMIT is sent, unless the row it is about is the match this transaction
 * locked, which exists and is ours until the commit. */

static void queue_add(struct store_conn *c, const char *what, enum pg_expect expect, int64_t id,
                      int64_t want, int64_t *into, const char *sql)
{
    assert(c->nqueued < PG_MAX_QUEUED);
    c->queued[c->nqueued++] =
        (struct pg_queued){.what = what, .expect = expect, .id = id, .want = want,
                           .into = into, .sql = sql};
}

/* Whether q's answer is still to be checked here (its check would fail after a COMMIT). */
static bool unchecked(const struct store_conn *c, const struct pg_queued *q)
{
    bool checks = q->expect == PG_EXPECT_ONE_CHANGED || q->expect == PG_EXPECT_VALUE ||
                  q->expect == PG_EXPECT_FILL;
    return checks && !(c->locked && q->id == c->locked);
}

/* Check q's answer r; false with e filled (or left, when an earlier statement failed). */
static bool check(struct store_conn *c, const struct pg_queued *q, PGresult *r,
                  struct err *e)
{
    ExecStatusType st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    if (q->expect == PG_EXPECT_ANY)
        return true;
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
        if (q->expect == PG_EXPECT_PREPARED)
            forget(c, q->sql);
        return st == PGRES_PIPELINE_ABORTED || pg_fail(c, r, q->what, e);
    }
    bool one = PQntuples(r) == 1;
    switch (q->expect) {
    case PG_EXPECT_ONE_CHANGED:
        return strtoll(PQcmdTuples(r), NULL, 10) == 1 ||
               err_set(e, ERR_NOT_FOUND, "not_found", "no such match");
    case PG_EXPECT_VALUE:
        if (!one)
            return err_set(e, ERR_NOT_FOUND, "not_found", "no such match");
        return pg_get_int(r, 0, 0) == q->want ||
               err_set(e, ERR_CONFLICT, "stale_match",
                       "match %lld changed meanwhile (another process)", (long long)q->id);
    case PG_EXPECT_FILL:
        if (!one)
            return err_set(e, ERR_NOT_FOUND, "not_found", "no such match");
        *q->into = pg_get_int(r, 0, 0);
        return true;
    default:
        return true;
    }
}

/* Read every queued answer (a sync first), checking each; the last one's result is returned
 * when it is PG_EXPECT_RESULT's and everything succeeded. NULL with e filled by the first
 * failure otherwise; NULL with e untouched when there was no result to return. */
static PGresult *drain(struct store_conn *c, bool *ok, struct err *e)
{
    *ok = true;
    if (!c->nqueued)
        return NULL;
    if (!PQpipelineSync(c->db)) {
        c->nqueued = 0;
        *ok = false;
        pg_fail(c, NULL, "send", e);
        return NULL;
    }
    PGresult *kept = NULL;
    for (int i = 0; i < c->nqueued; i++) {
        const struct pg_queued *q = &c->queued[i];
        PGresult *r = PQgetResult(c->db);
        if (!check(c, q, r, *ok ? e : NULL)) /* (a PREPARE skipped is forgotten too) */
            *ok = false;
        if (*ok && q->expect == PG_EXPECT_RESULT && i == c->nqueued - 1)
            kept = r;
        else
            PQclear(r);
        while (r && (r = PQgetResult(c->db)) != NULL) /* (the NULL that ends each answer) */
            PQclear(r);
        if (!r && PQstatus(c->db) == CONNECTION_BAD) { /* (nothing more will come) */
            *ok = *ok && pg_fail(c, NULL, q->what, e);
            break;
        }
    }
    c->nqueued = 0;
    if (PQstatus(c->db) != CONNECTION_BAD) {
        PGresult *sync = PQgetResult(c->db); /* PGRES_PIPELINE_SYNC */
        PQclear(sync);
    }
    if (*ok && c->rev_into) { /* (the update's answer was read with the others) */
        *c->rev_into = c->written_rev;
        c->rev_into = NULL;
    }
    if (!*ok) {
        PQclear(kept);
        kept = NULL;
    }
    return kept;
}

/* Send `sql` in the transaction, its answer to be checked as `expect` says. */
static bool queue(struct store_conn *c, const char *sql, const struct pg_params *p,
                  enum pg_expect expect, int64_t id, int64_t want, int64_t *into,
                  const char *what, struct err *e)
{
    bool ok = true;
    if (c->nqueued > PG_MAX_QUEUED - 2) /* (a statement and its PREPARE) */
        drain(c, &ok, e);
    if (!ok)
        return false;
    char name[16];
    const char *as = prepared(c, sql, p->n, name, what, e);
    if (!as)
        return false;
    int sent = *as ? PQsendQueryPrepared(c->db, as, p->n, p->value, p->length, p->format, 0)
                   : PQsendQueryParams(c->db, sql, p->n, NULL, p->value, p->length, p->format,
                                       0);
    if (!sent)
        return pg_fail(c, NULL, what, e);
    queue_add(c, what, expect, id, want, into, NULL);
    return true;
}

PGresult *pg_run(struct store_conn *c, const char *sql, const struct pg_params *p,
                 const char *what, struct err *e)
{
    static const struct pg_params none;
    if (!p)
        p = &none;
    if (c->in_txn) {
        bool ok = true;
        if (!queue(c, sql, p, PG_EXPECT_RESULT, 0, 0, NULL, what, e))
            return NULL;
        PGresult *r = drain(c, &ok, e);
        return ok ? r : NULL;
    }
    if (!usable(c, what, e))
        return NULL;
    PGresult *r = run_once(c, sql, p, what, e);
    /* An idle connection learns that the server restarted only when it is used: outside a
     * transaction the statement is sent once more on a new connection (it went out on the
     * old one, which the server had closed). */
    if (!r && PQstatus(c->db) == CONNECTION_BAD && usable(c, what, e))
        r = run_once(c, sql, p, what, e);
    return r;
}

bool pg_do(struct store_conn *c, const char *sql, const struct pg_params *p, int64_t *changed,
           const char *what, struct err *e)
{
    static const struct pg_params none;
    if (c->in_txn && !changed)
        return queue(c, sql, p ? p : &none, PG_EXPECT_NOTHING, 0, 0, NULL, what, e);
    PGresult *r = pg_run(c, sql, p, what, e);
    if (!r)
        return false;
    if (changed)
        *changed = strtoll(PQcmdTuples(r), NULL, 10);
    PQclear(r);
    return true;
}

bool pg_expect(struct store_conn *c, const char *sql, const struct pg_params *p,
               enum pg_expect expect, int64_t id, int64_t want, int64_t *into,
               const char *what, struct err *e)
{
    if (c->in_txn)
        return queue(c, sql, p, expect, id, want, into, what, e);
    PGresult *r = pg_run(c, sql, p, what, e);
    if (!r)
        return false;
    struct pg_queued q = {.what = what, .expect = expect, .id = id, .want = want,
                          .into = into};
    bool ok = check(c, &q, r, e);
    PQclear(r);
    return ok;
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

/* An idle connection has nothing to read: something there is the server's goodbye (a
 * restart: "terminating connection", then the end), which libpq learns only when it reads.
 * The connection is made again now, before a transaction's statements go out on it: they
 * would be lost with it, and the request answered 503. */
static bool quiet_when_idle(struct store_conn *c, struct err *e)
{
    struct pollfd p = {.fd = PQsocket(c->db), .events = POLLIN};
    if (p.fd >= 0 && poll(&p, 1, 0) == 0)
        return true;
    PQreset(c->db);
    c->nprepared = 0; /* (the server forgot them) */
    if (PQstatus(c->db) != CONNECTION_OK)
        return pg_fail(c, NULL, "begin", e);
    return session(c, e);
}

bool pg_begin(struct store_conn *c, struct err *e)
{
    if (!quiet_when_idle(c, e) || !usable(c, "begin", e))
        return false;
    if (!PQenterPipelineMode(c->db))
        return pg_fail(c, NULL, "begin", e);
    c->in_txn = true;
    c->locked = c->written = 0;
    c->rev_into = NULL;
    c->nchanged = 0;
    if (pg_do(c, "BEGIN", NULL, NULL, "begin", e))
        return true;
    pg_rollback(c);
    return false;
}

/* Out of the transaction's pipeline mode, every answer read (a rollback's: ignored). */
static void leave(struct store_conn *c)
{
    bool ok;
    PQclear(drain(c, &ok, NULL));
    PQexitPipelineMode(c->db);
    c->in_txn = false;
    c->locked = c->written = 0;
    c->rev_into = NULL;
    c->nchanged = 0;
}

/* After the COMMIT, in its round trip: the other processes told of the match the
 * transaction changed (pg_match_changed), "m ID REV SEQ", in a transaction of its own that
 * writes nothing (so waits for no flush); skipped by the server if the COMMIT failed. A
 * process that dies between the two leaves the others to their catch-up read. */
static bool announce(struct store_conn *c, struct err *e)
{
    bool ok = true;
    for (int i = 0; ok && i < c->nchanged; i++) {
        struct pg_params a = {0};
        pg_int(&a, c->changed[i].id);
        pg_int(&a, c->changed[i].seq);
        ok = queue(c,
                   "SELECT pg_notify('" PG_CHANNEL "', 'm ' || id || ' ' || xmin::text || ' ' ||"
                   " $2::bigint) FROM matches WHERE id = $1",
                   &a, PG_EXPECT_ANY, 0, 0, NULL, "announce a change", e);
    }
    c->nchanged = 0;
    return ok;
}

bool pg_commit(struct store_conn *c, struct err *e)
{
    bool ok = true, checks = false;
    for (int i = 0; i < c->nqueued; i++)
        checks = checks || unchecked(c, &c->queued[i]);
    if (checks) /* (read first: a COMMIT cannot be undone) */
        drain(c, &ok, e);
    ok = ok && queue(c, "COMMIT", &(struct pg_params){0}, PG_EXPECT_NOTHING, 0, 0, NULL,
                     "commit", e) &&
         announce(c, e);
    if (ok)
        drain(c, &ok, e);
    bool open = PQtransactionStatus(c->db) != PQTRANS_IDLE;
    leave(c);
    if (!ok && open && PQstatus(c->db) == CONNECTION_OK) /* (a failed COMMIT is a rollback) */
        exec(c, "ROLLBACK", "rollback", NULL);
    return ok;
}

static void pg_rollback(struct store_conn *c)
{
    if (c->in_txn && PQstatus(c->db) == CONNECTION_OK)
        leave(c);
    if (PQpipelineStatus(c->db) != PQ_PIPELINE_OFF)
        PQexitPipelineMode(c->db);
    if (PQstatus(c->db) == CONNECTION_OK && PQtransactionStatus(c->db) != PQTRANS_IDLE)
        exec(c, "ROLLBACK", "rollback", NULL);
    c->in_txn = false;
    c->locked = c->written = 0;
    c->rev_into = NULL;
    c->nchanged = 0;
    c->nqueued = 0;
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
    .announce = pg_announce,
#define PG_MEMBER(ret, op, params, args) .op = pg_##op,
    STORE_OPS(PG_MEMBER)
#undef PG_MEMBER
};
