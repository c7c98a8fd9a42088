/* migrate.c - `cardpost migrate-db FROM TO`: every table of a SQLite database copied into a
 * fresh PostgreSQL database (docs/scaling.md "Moving a SQLite database to PostgreSQL").
 * Both are first opened as the daemon would open them, so both carry every migration; the
 * copy then reads SQLite in one read transaction (a consistent snapshot, even while a
 * cardpostd writes the file) and writes PostgreSQL in one transaction (all or nothing):
 * tables in the order their foreign keys need, each by COPY, then each identity's sequence
 * set past the largest id copied. A target holding any row is refused. The tables and their
 * columns must be the same on both sides (they are, migration for migration); a table or a
 * column only one side has stops the copy, so nothing is silently left behind. Apart from
 * SQLite's outbox_players and outbox_indexed (migration 0018): an index of the outbox kept as
 * a table, derived from it, which PostgreSQL keeps as an index instead; and its outbox_fresh
 * (migration 0020): rows of the outbox not yet taken into it, copied as the outbox's own
 * (read through the view outbox_all), as PostgreSQL keeps them.
 */
#include "store.h"

#include <libpq-fe.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TABLES 64
#define MAX_COLUMNS 64

struct table {
    char name[64];
    int ncols;
    char col[MAX_COLUMNS][64];
    char type[MAX_COLUMNS][32];  /* PostgreSQL's data_type: text, bigint, bytea, boolean, ... */
    bool copied;
};

struct copy {
    sqlite3 *src;
    PGconn *dst;
    int ntables;
    struct table t[MAX_TABLES];
    struct store_migrate_info *info;
};

static bool pg_failed(PGconn *c, PGresult *r, const char *what, struct err *e)
{
    const char *msg = r ? PQresultErrorMessage(r) : "";
    if (!msg || !*msg)
        msg = PQerrorMessage(c);
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
        n--;
    err_set(e, ERR_IO, "postgres", "%s: %.*s", what, (int)n, msg);
    PQclear(r);
    return false;
}

/* A statement whose answer is rows; NULL (e filled) on failure. */
static PGresult *pg_rows(PGconn *c, const char *sql, int n, const char *const *params,
                         const char *what, struct err *e)
{
    PGresult *r = PQexecParams(c, sql, n, NULL, params, NULL, NULL, 0);
    ExecStatusType st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK)
        return r;
    pg_failed(c, r, what, e);
    return NULL;
}

static bool pg_exec(PGconn *c, const char *sql, const char *what, struct err *e)
{
    PGresult *r = pg_rows(c, sql, 0, NULL, what, e);
    PQclear(r);
    return r != NULL;
}

static bool sqlite_failed(sqlite3 *db, const char *what, struct err *e)
{
    return err_set(e, ERR_IO, "sqlite", "%s: %s", what, sqlite3_errmsg(db));
}

/* ---- The tables ------------------------------------------------------------------------------ */

/* The target's tables (schema_migrations apart: each side records its own), their columns
 * in order and their types. */
static bool target_tables(struct copy *cp, struct err *e)
{
    PGresult *r = pg_rows(cp->dst,
                          "SELECT c.table_name, c.column_name, c.data_type FROM"
                          " information_schema.columns c JOIN information_schema.tables t"
                          " USING (table_schema, table_name) WHERE c.table_schema ="
                          " current_schema() AND t.table_type = 'BASE TABLE' AND c.table_name"
                          " <> 'schema_migrations' ORDER BY c.table_name, c.ordinal_position",
                          0, NULL, "read the target's tables", e);
    if (!r)
        return false;
    bool ok = true;
    for (int i = 0; ok && i < PQntuples(r); i++) {
        const char *name = PQgetvalue(r, i, 0);
        struct table *t = cp->ntables ? &cp->t[cp->ntables - 1] : NULL;
        if (!t || strcmp(t->name, name)) {
            if (cp->ntables == MAX_TABLES || strlen(name) >= sizeof t->name) {
                ok = err_set(e, ERR_INVALID, "schema", "too many tables, or a long name");
                break;
            }
            t = &cp->t[cp->ntables++];
            snprintf(t->name, sizeof t->name, "%s", name);
        }
        if (t->ncols == MAX_COLUMNS || strlen(PQgetvalue(r, i, 1)) >= sizeof t->col[0]) {
            ok = err_set(e, ERR_INVALID, "schema", "table %s: too many columns", name);
            break;
        }
        snprintf(t->col[t->ncols], sizeof t->col[0], "%s", PQgetvalue(r, i, 1));
        snprintf(t->type[t->ncols], sizeof t->type[0], "%s", PQgetvalue(r, i, 2));
        t->ncols++;
    }
    PQclear(r);
    return ok;
}

static struct table *table_named(struct copy *cp, const char *name)
{
    for (int i = 0; i < cp->ntables; i++)
        if (!strcmp(cp->t[i].name, name))
            return &cp->t[i];
    return NULL;
}

/* Every column of `t` is in the source's table, and the source's has no other. */
static bool same_columns(struct copy *cp, const struct table *t, struct err *e)
{
    char sql[160];
    snprintf(sql, sizeof sql, "SELECT name FROM pragma_table_info('%s')", t->name);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(cp->src, sql, -1, &st, NULL) != SQLITE_OK)
        return sqlite_failed(cp->src, "read the source's columns", e);
    int n = 0;
    bool ok = true;
    while (ok && sqlite3_step(st) == SQLITE_ROW) {
        const char *col = (const char *)sqlite3_column_text(st, 0);
        bool found = false;
        for (int i = 0; !found && i < t->ncols; i++)
            found = !strcmp(t->col[i], col);
        if (!found)
            ok = err_set(e, ERR_INVALID, "schema",
                         "the source's %s has a column %s the target's has not", t->name, col);
        n++;
    }
    sqlite3_finalize(st);
    if (ok && n != t->ncols)
        ok = err_set(e, ERR_INVALID, "schema", "the target's %s has %d columns, the source's %d",
                     t->name, t->ncols, n);
    return ok;
}

/* The source has the target's tables, with the same columns, and no other (but its index
 * tables: the head of this file). */
static bool same_tables(struct copy *cp, struct err *e)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(cp->src,
                           "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT"
                           " LIKE 'sqlite_%' AND name NOT IN ('schema_migrations',"
                           " 'outbox_players', 'outbox_indexed', 'outbox_fresh')",
                           -1, &st, NULL) != SQLITE_OK)
        return sqlite_failed(cp->src, "read the source's tables", e);
    int n = 0;
    bool ok = true;
    while (ok && sqlite3_step(st) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 0);
        const struct table *t = table_named(cp, name);
        if (!t)
            ok = err_set(e, ERR_INVALID, "schema", "the source has a table %s the target has not",
                         name);
        else
            ok = same_columns(cp, t, e);
        n++;
    }
    sqlite3_finalize(st);
    if (ok && n != cp->ntables)
        ok = err_set(e, ERR_INVALID, "schema", "the target has %d tables, the source %d",
                     cp->ntables, n);
    return ok;
}

/* The target holds no row in any table: a copy goes into a fresh database only. */
static bool target_empty(struct copy *cp, struct err *e)
{
    for (int i = 0; i < cp->ntables; i++) {
        char sql[160];
        snprintf(sql, sizeof sql, "SELECT EXISTS (SELECT 1 FROM \"%s\")", cp->t[i].name);
        PGresult *r = pg_rows(cp->dst, sql, 0, NULL, "read the target", e);
        if (!r)
            return false;
        bool rows = PQgetvalue(r, 0, 0)[0] == 't';
        PQclear(r);
        if (rows)
            return err_set(e, ERR_CONFLICT, "not_empty",
                           "the target database is not empty (table %s has rows): "
                           "migrate-db copies into a fresh database only", cp->t[i].name);
    }
    return true;
}

/* ---- Copying ------------------------------------------------------------------------------- */

struct line {
    char *b;
    size_t len, cap;
};

static bool put(struct line *l, const char *s, size_t n)
{
    if (l->len + n + 1 > l->cap) {
        size_t cap = (l->cap ? l->cap * 2 : 4096) + n;
        char *b = realloc(l->b, cap);
        if (!b)
            return false;
        l->b = b;
        l->cap = cap;
    }
    memcpy(l->b + l->len, s, n);
    l->len += n;
    return true;
}

/* Text as COPY's text format writes it: backslash, tab, newline and carriage return escaped. */
static bool put_escaped(struct line *l, const char *s, size_t n)
{
    bool ok = true;
    for (size_t i = 0; ok && i < n; i++) {
        const char *esc = s[i] == '\\' ? "\\\\" : s[i] == '\t' ? "\\t" : s[i] == '\n' ? "\\n"
                          : s[i] == '\r' ? "\\r" : NULL;
        ok = esc ? put(l, esc, 2) : put(l, s + i, 1);
    }
    return ok;
}

/* One value of the source's row, as COPY takes it for a column of type `type`. */
static bool put_value(struct line *l, sqlite3_stmt *st, int i, const char *type)
{
    int kind = sqlite3_column_type(st, i);
    if (kind == SQLITE_NULL)
        return put(l, "\\N", 2);
    if (!strcmp(type, "bytea")) {
        const unsigned char *b = sqlite3_column_blob(st, i);
        int n = sqlite3_column_bytes(st, i);
        bool ok = put(l, "\\\\x", 3);
        for (int k = 0; ok && k < n; k++) {
            char hex[3];
            snprintf(hex, sizeof hex, "%02x", b[k]);
            ok = put(l, hex, 2);
        }
        return ok;
    }
    if (!strcmp(type, "boolean"))
        return put(l, sqlite3_column_int64(st, i) ? "t" : "f", 1);
    if (kind == SQLITE_FLOAT) {
        char num[40];
        int n = snprintf(num, sizeof num, "%.17g", sqlite3_column_double(st, i));
        return put(l, num, (size_t)n);
    }
    const char *s = (const char *)sqlite3_column_text(st, i);
    return put_escaped(l, s, (size_t)sqlite3_column_bytes(st, i));
}

/* Copy one table's rows, by COPY ... FROM STDIN in its text format. */
static bool copy_table(struct copy *cp, struct table *t, struct err *e)
{
    /* (each name is under 64 bytes: quoted, with its comma, under 68) */
    char cols[MAX_COLUMNS * 68] = "", sql[sizeof cols + 128];
    size_t off = 0;
    for (int i = 0; i < t->ncols; i++)
        off += (size_t)snprintf(cols + off, sizeof cols - off, "%s\"%s\"", i ? ", " : "",
                                t->col[i]);
    /* (the outbox with its fresh rows: the head of this file) */
    snprintf(sql, sizeof sql, "SELECT %s FROM \"%s\"", cols,
             strcmp(t->name, "outbox") ? t->name : "outbox_all");
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(cp->src, sql, -1, &st, NULL) != SQLITE_OK)
        return sqlite_failed(cp->src, "read the source", e);
    snprintf(sql, sizeof sql, "COPY \"%s\" (%s) FROM STDIN", t->name, cols);
    PGresult *r = PQexec(cp->dst, sql);
    if (!r || PQresultStatus(r) != PGRES_COPY_IN) {
        sqlite3_finalize(st);
        return pg_failed(cp->dst, r, "start the copy", e);
    }
    PQclear(r);
    struct line l = {0};
    bool ok = true;
    int step;
    while (ok && (step = sqlite3_step(st)) == SQLITE_ROW) {
        l.len = 0;
        for (int i = 0; ok && i < t->ncols; i++)
            ok = (!i || put(&l, "\t", 1)) && put_value(&l, st, i, t->type[i]);
        ok = ok && put(&l, "\n", 1);
        if (!ok)
            err_set(e, ERR_NOMEM, "nomem", "out of memory");
        else if (PQputCopyData(cp->dst, l.b, (int)l.len) != 1)
            ok = pg_failed(cp->dst, NULL, "copy a row", e);
        else
            cp->info->rows++;
    }
    if (ok && step != SQLITE_DONE)
        ok = sqlite_failed(cp->src, "read the source", e);
    free(l.b);
    sqlite3_finalize(st);
    if (PQputCopyEnd(cp->dst, ok ? NULL : "cardpost migrate-db stopped") != 1 && ok)
        ok = pg_failed(cp->dst, NULL, "end the copy", e);
    r = PQgetResult(cp->dst);
    if (ok && (!r || PQresultStatus(r) != PGRES_COMMAND_OK))
        ok = pg_failed(cp->dst, r, "copy the table", e);
    else
        PQclear(r);
    while ((r = PQgetResult(cp->dst)))
        PQclear(r);
    t->copied = ok;
    return ok;
}

/* Copy every table, each after the tables its foreign keys point to. */
static bool copy_tables(struct copy *cp, struct err *e)
{
    PGresult *fk = pg_rows(cp->dst,
                           "SELECT conrelid::regclass::text, confrelid::regclass::text"
                           " FROM pg_constraint WHERE contype = 'f'"
                           " AND connamespace = current_schema()::regnamespace",
                           0, NULL, "read the foreign keys", e);
    if (!fk)
        return false;
    bool ok = true;
    for (int done = 0; ok && done < cp->ntables;) {
        int before = done;
        for (int i = 0; ok && i < cp->ntables; i++) {
            struct table *t = &cp->t[i];
            bool ready = !t->copied;
            for (int k = 0; ready && k < PQntuples(fk); k++) {
                const struct table *to = table_named(cp, PQgetvalue(fk, k, 1));
                ready = strcmp(PQgetvalue(fk, k, 0), t->name) || !to || to == t || to->copied;
            }
            if (ready && (ok = copy_table(cp, t, e)))
                done++;
        }
        if (ok && done == before)
            ok = err_set(e, ERR_INVALID, "schema", "the foreign keys make a cycle");
    }
    PQclear(fk);
    cp->info->tables = cp->ntables;
    return ok;
}

/* Each identity column's sequence past the largest id copied, so new rows get new ids. */
static bool set_sequences(struct copy *cp, struct err *e)
{
    PGresult *r = pg_rows(cp->dst,
                          "SELECT table_name, column_name FROM information_schema.columns WHERE"
                          " table_schema = current_schema() AND (is_identity = 'YES' OR"
                          " column_default LIKE 'nextval(%')",
                          0, NULL, "read the identities", e);
    if (!r)
        return false;
    bool ok = true;
    for (int i = 0; ok && i < PQntuples(r); i++) {
        char sql[400];
        const char *tab = PQgetvalue(r, i, 0), *col = PQgetvalue(r, i, 1);
        snprintf(sql, sizeof sql,
                 "SELECT setval(pg_get_serial_sequence('\"%s\"', '%s'),"
                 " coalesce(max(\"%s\"), 0) + 1, false) FROM \"%s\"",
                 tab, col, col, tab);
        ok = pg_exec(cp->dst, sql, "set a sequence", e);
    }
    PQclear(r);
    return ok;
}

/* The ids of the matches copied, for the caller's check. */
static bool match_ids(struct copy *cp, struct err *e)
{
    PGresult *r = pg_rows(cp->dst, "SELECT id FROM matches ORDER BY id", 0, NULL,
                          "read the matches", e);
    if (!r)
        return false;
    size_t n = (size_t)PQntuples(r);
    cp->info->matches = malloc((n ? n : 1) * sizeof *cp->info->matches);
    bool ok = cp->info->matches != NULL;
    for (size_t i = 0; ok && i < n; i++)
        cp->info->matches[i] = strtoll(PQgetvalue(r, (int)i, 0), NULL, 10);
    cp->info->nmatches = ok ? n : 0;
    PQclear(r);
    return ok || err_set(e, ERR_NOMEM, "nomem", "out of memory");
}

/* ---- The whole ------------------------------------------------------------------------------- */

static bool copy_all(struct copy *cp, struct err *e)
{
    if (!target_tables(cp, e) || !same_tables(cp, e))
        return false;
    if (sqlite3_exec(cp->src, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
        return sqlite_failed(cp->src, "begin reading", e);
    bool ok = pg_exec(cp->dst, "BEGIN", "begin", e) &&
              pg_exec(cp->dst, "LOCK TABLE matches IN EXCLUSIVE MODE", "lock the target", e) &&
              target_empty(cp, e) && copy_tables(cp, e) && set_sequences(cp, e) &&
              pg_exec(cp->dst, "COMMIT", "commit", e) && match_ids(cp, e);
    if (!ok && PQtransactionStatus(cp->dst) != PQTRANS_IDLE)
        PQclear(PQexec(cp->dst, "ROLLBACK"));
    sqlite3_exec(cp->src, "COMMIT", NULL, NULL, NULL);
    return ok;
}

bool store_migrate_db(const char *from, const char *to, struct store_migrate_info *info,
                      struct err *e)
{
    *info = (struct store_migrate_info){0};
    if (!strncmp(from, "postgres://", 11) || !strncmp(from, "postgresql://", 13) ||
        (strncmp(to, "postgres://", 11) && strncmp(to, "postgresql://", 13)))
        return err_set(e, ERR_INVALID, "usage",
                       "migrate-db copies a SQLite file to a postgresql:// database");
    /* Both as the daemon opens them: every migration applied (the source's too, as a
     * cardpostd of this build would at its start). */
    struct store *s = store_open(from, e);
    if (!s)
        return false;
    info->version = store_version(s);
    store_close(s);
    if (!(s = store_open(to, e)))
        return false;
    int version = store_version(s);
    store_close(s);
    if (version != info->version)
        return err_set(e, ERR_INVALID, "schema", "schema version %d here, %d there",
                       info->version, version);

    struct copy *cp = calloc(1, sizeof *cp);
    if (!cp)
        return err_set(e, ERR_NOMEM, "nomem", "out of memory");
    cp->info = info;
    const char *path = !strncmp(from, "sqlite:", 7) ? from + 7 : from;
    if (!strncmp(path, "//", 2))
        path += 2;
    bool ok = true;
    if (sqlite3_open_v2(path, &cp->src, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
        ok = sqlite_failed(cp->src, "open the source", e);
    else
        sqlite3_busy_timeout(cp->src, 10000);
    cp->dst = ok ? PQconnectdb(to) : NULL;
    if (ok && PQstatus(cp->dst) != CONNECTION_OK)
        ok = pg_failed(cp->dst, NULL, "connect to the target", e);
    ok = ok && copy_all(cp, e);
    sqlite3_close(cp->src);
    PQfinish(cp->dst);
    free(cp);
    return ok;
}

void store_migrate_info_finish(struct store_migrate_info *info)
{
    free(info->matches);
    info->matches = NULL;
    info->nmatches = 0;
}
