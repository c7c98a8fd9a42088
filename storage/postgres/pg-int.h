/* pg-int.h - what the PostgreSQL backend's files share: the connection (`struct store_conn`:
 * one libpq connection and the statements prepared on it), the parameters of a statement
 * (always sent as parameters, never spliced into SQL text), reading text results, the
 * mapping from SQLSTATE to err codes, and the functions that fill its `struct
 * store_backend` (open.c). Not for other components, nor for storage's backend-neutral
 * files (they see backend.h).
 */
#ifndef CARDPOST_PG_INT_H
#define CARDPOST_PG_INT_H

#include <libpq-fe.h>

#include "backend.h"

struct pg_migration {
    int version;
    const char *name;
    const char *sql;
};

/* Generated at build time from migrations/postgres/NNNN-name.sql (embed-migrations.py). */
extern const struct pg_migration pg_migrations[];
extern const int pg_nmigrations;

/* The backend's operations (backend.h: STORE_OPS, each documented at its store_ twin in
 * store.h), one file per table group. */
#define PG_OP(ret, op, params, args) ret pg_##op(struct store_conn *c, STORE_LIST params);
STORE_OPS(PG_OP)
#undef PG_OP
bool pg_outbox_add(struct store_conn *c, struct store_outbox *o, struct err *e);
int pg_migration_count(void);
/* The listening connection (listen.c). */
struct store_listen_conn *pg_listen(const char *url, struct err *e);
bool pg_listener_wait(struct store_listen_conn *l, int timeout_ms,
                      void (*fn)(void *cls, const char *payload), void *cls, struct err *e);
void pg_listener_close(struct store_listen_conn *l);
/* store_announce_changes (matches.c). */
void pg_announce(bool on);

/* The database's channel (LISTEN, NOTIFY): one per database, as channels are. */
#define PG_CHANNEL "cardpost"

#define PG_MAX_STATEMENTS 96  /* statements a connection prepares (more run unprepared) */
#define PG_MAX_PARAMS 26

#define PG_MAX_QUEUED 32     /* statements sent in a transaction before their answers are
                              * read (more: the first ones are read first) */

#define PG_MAX_CHANGED 8     /* matches a transaction announces after its commit (more:
                              * announced inside it) */

/* What is checked of a queued statement's answer when it is read (pg_expect). */
enum pg_expect {
    PG_EXPECT_NOTHING,       /* that it ran */
    PG_EXPECT_ONE_CHANGED,   /* that it changed exactly one row, else ERR_NOT_FOUND */
    PG_EXPECT_VALUE,         /* one row whose first value is `want`, else ERR_CONFLICT
                              * "stale_match" (ERR_NOT_FOUND for no row) */
    PG_EXPECT_FILL,          /* one row, whose first value goes to *into (ERR_NOT_FOUND) */
    PG_EXPECT_RESULT,        /* (its result is the caller's: pg_run) */
    PG_EXPECT_PREPARED,      /* a statement prepared on the way (forgotten if it failed) */
    PG_EXPECT_ANY,           /* nothing: its failure is not the transaction's (it runs
                              * after the COMMIT) */
};

/* A statement sent inside a transaction whose answer is not read yet. */
struct pg_queued {
    const char *what;        /* for its error */
    enum pg_expect expect;
    int64_t id, want;        /* the match, and PG_EXPECT_VALUE's value */
    int64_t *into;           /* PG_EXPECT_FILL's; must live until the commit */
    const char *sql;         /* PG_EXPECT_PREPARED's text */
};

/* One connection, used by one thread at a time (a process that wants more holds more:
 * the pool issue 15 adds is a set of these). Statements are prepared on first use, keyed
 * by their SQL text's address (each is a string literal at its one call site). Inside a
 * transaction the connection is in libpq's pipeline mode: statements are sent at once and
 * their answers read together, when one is needed or at the commit (open.c). */
struct store_conn {
    PGconn *db;
    enum store_durability durability;   /* the session's settings, again after a reconnect */
    bool in_txn;                        /* between pg_begin and its commit or rollback: a
                                         * lost connection fails it rather than reconnect */
    int nprepared;
    const char *prepared[PG_MAX_STATEMENTS];   /* their texts, */
    unsigned prepared_as[PG_MAX_STATEMENTS];   /* and names' numbers ("cpN": never reused) */
    unsigned next_name;
    int64_t locked;                     /* the match cardpost_lock_match locked (in_txn) */
    int64_t written, written_rev;       /* that match updated, and its version after it */
    int64_t *rev_into;                  /* where written_rev goes once read (pg_match_changed) */
    int nchanged;                       /* matches to announce after the commit (in_txn) */
    struct { int64_t id, seq; } changed[PG_MAX_CHANGED];
    int nqueued;                        /* sent, answers not read yet (in_txn only) */
    struct pg_queued queued[PG_MAX_QUEUED];
};

/* A statement's parameters, in order: text, except bytea (binary), NULL where asked. */
struct pg_params {
    int n;
    const char *value[PG_MAX_PARAMS];
    int length[PG_MAX_PARAMS];
    int format[PG_MAX_PARAMS];
    char number[PG_MAX_PARAMS][32];
};

void pg_null(struct pg_params *p);
void pg_int(struct pg_params *p, int64_t v);
void pg_int_or_null(struct pg_params *p, int64_t v);   /* 0: NULL */
void pg_bool(struct pg_params *p, bool v);
void pg_double(struct pg_params *p, double v);
void pg_text(struct pg_params *p, const char *s);      /* NULL: NULL */
void pg_bytes(struct pg_params *p, const void *b, size_t len);  /* NULL: NULL */

/* Run `sql` (prepared on first use) with `p` (NULL: none). The result (free with PQclear)
 * of a statement that succeeded; NULL with e filled (pg_fail) otherwise. */
PGresult *pg_run(struct store_conn *c, const char *sql, const struct pg_params *p,
                 const char *what, struct err *e);

/* pg_run for a statement whose result is not read: true when it ran; *changed (if not NULL)
 * receives the rows it changed. */
bool pg_do(struct store_conn *c, const char *sql, const struct pg_params *p, int64_t *changed,
           const char *what, struct err *e);

/* pg_do for a statement whose answer may be read later: inside a transaction it is sent
 * and checked (`expect`, with `id`, `want`, `into`) when the transaction next reads an
 * answer or commits, so its failure shows there (the transaction is lost either way);
 * outside one it runs and is checked at once. */
bool pg_expect(struct store_conn *c, const char *sql, const struct pg_params *p,
               enum pg_expect expect, int64_t id, int64_t want, int64_t *into,
               const char *what, struct err *e);

/* Fill e from a failed result (or the connection's error when r is NULL): ERR_INVALID
 * "constraint" for an integrity constraint (SQLSTATE class 23), ERR_UNAVAILABLE
 * "database_unavailable" when the server is gone or going (a lost connection, a shutdown:
 * the request may be tried again), ERR_CONFLICT "stale_match" for a deadlock or a
 * serialization failure (undone: judge it again), ERR_IO "postgres" otherwise. Returns
 * false. */
bool pg_fail(struct store_conn *c, const PGresult *r, const char *what, struct err *e);

/* Reading a text-format result: NULL reads as 0, false, NULL. */
int64_t pg_get_int(const PGresult *r, int row, int col);
bool pg_get_bool(const PGresult *r, int row, int col);
double pg_get_double(const PGresult *r, int row, int col);
char *pg_get_text(const PGresult *r, int row, int col);  /* malloc'd, or NULL */
/* A bytea into `out`: its length (at most `max`), 0 for NULL. */
size_t pg_get_bytes(const PGresult *r, int row, int col, void *out, size_t max);
/* A bytea, malloc'd (*len its length); NULL for NULL or empty. */
void *pg_get_blob(const PGresult *r, int row, int col, size_t *len);

#endif
