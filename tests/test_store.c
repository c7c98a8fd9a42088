/* test_store.c - the storage (storage/store.h) on real databases: SQLite files in a temp
 * dir, or, with CARDPOST_TEST_PG=<postgresql:// address> (tests/pg/run-with-pg.sh starts a
 * throwaway cluster for it: meson test store_pg), a PostgreSQL database emptied before each
 * test. The backend an address chooses, migrations applied once and recorded, players,
 * matches and their summary, the append-only event log, transactions and idempotency keys,
 * email confirmation and token rotation, the outbox, leagues and standings; for SQLite
 * also WAL mode and the files' modes (skipped on PostgreSQL, which has no database files of
 * ours); for PostgreSQL also concurrent starts migrating once. A second plain
 * connection (sqlite3 or libpq) looks at what the store wrote.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <libpq-fe.h>
#include <sqlite3.h>

#include "store.h"
#include "testdb.h"

struct fixture {
    char dir[64];
    char path[512];
    struct store *s;
};

/* The PostgreSQL database the tests run on (CARDPOST_TEST_PG), or NULL: SQLite files. */
static const char *pg_url;

static void pg_quiet(void *arg, const char *message)
{
    (void)arg, (void)message;
}

/* A libpq connection to pg_url (fails the test when there is none). */
static PGconn *pg_connect(void)
{
    PGconn *db = PQconnectdb(pg_url);
    if (PQstatus(db) != CONNECTION_OK)
        fail_msg("connect to %s: %s", pg_url, PQerrorMessage(db));
    PQsetNoticeProcessor(db, pg_quiet, NULL);
    return db;
}

/* Run `sql` on its own connection to pg_url; its first value, or 0. */
static int64_t pg_exec(const char *sql)
{
    PGconn *db = pg_connect();
    PGresult *r = PQexec(db, sql);
    ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
        fail_msg("%s: %s", sql, PQresultErrorMessage(r));
    int64_t v = st == PGRES_TUPLES_OK && PQntuples(r) > 0 && !PQgetisnull(r, 0, 0)
                    ? strtoll(PQgetvalue(r, 0, 0), NULL, 10)
                    : 0;
    PQclear(r);
    PQfinish(db);
    return v;
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    snprintf(f->dir, sizeof f->dir, "/tmp/test_store.XXXXXX");
    if (!mkdtemp(f->dir)) {
        free(f);
        return -1;
    }
    snprintf(f->path, sizeof f->path, "%s/cardpost.db", f->dir);
    if (pg_url) { /* a fresh, empty database for each test */
        pg_exec("DROP SCHEMA public CASCADE; CREATE SCHEMA public");
        snprintf(f->path, sizeof f->path, "%s", pg_url);
    }
    struct err e;
    f->s = store_open(f->path, &e);
    if (!f->s) {
        fprintf(stderr, "store_open: %s\n", e.msg);
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    store_close(f->s);
    if (!pg_url)
        tdb_remove(f->path);
    rmdir(f->dir);
    free(f);
    return 0;
}

/* One integer from `sql` run on a separate connection to the same database. */
static int64_t peek_int(const struct fixture *f, const char *sql)
{
    if (pg_url)
        return pg_exec(sql);
    sqlite3 *db;
    assert_int_equal(sqlite3_open_v2(f->path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

static void peek_exec(const struct fixture *f, const char *sql)
{
    if (pg_url) {
        pg_exec(sql);
        return;
    }
    sqlite3 *db;
    assert_int_equal(sqlite3_open_v2(f->path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
}

static void reopen(struct fixture *f)
{
    struct err e;
    store_close(f->s);
    f->s = store_open(f->path, &e);
    assert_non_null(f->s);
}

static void hash_of(uint8_t h[STORE_HASH_BYTES], uint8_t fill)
{
    memset(h, fill, STORE_HASH_BYTES);
}

static int64_t add_player(struct store *s, const char *name, uint8_t fill)
{
    uint8_t h[STORE_HASH_BYTES];
    hash_of(h, fill);
    struct store_player p = {.name = (char *)name, .created_at = 1700000000};
    struct err e;
    assert_true(store_player_insert(s, &p, h, &e));
    assert_true(p.id > 0);
    return p.id;
}

static int64_t add_match(struct store *s, int seats, const int64_t *players)
{
    struct store_match m = {
        .game = "hearts",
        .options = "{\"seats\":4,\"target\":100,\"moon\":\"add\",\"first_dealer\":0}",
        .seats = seats,
        .created_at = 1700000001,
        .seq = 1,
        .to_move = "[0,1,2,3]",
        .totals = "[0,0,0,0]",
    };
    for (int i = 0; i < 32; i++)
        m.seed[i] = (uint8_t)(i * 7 + 1);
    snprintf(m.commitment, sizeof m.commitment, "%064d", 42);
    memcpy(m.players, players, (size_t)seats * sizeof *players);
    struct err e;
    assert_true(store_match_insert(s, &m, &e));
    assert_true(m.id > 0);
    return m.id;
}

/* ---- Opening and migrations ---------------------------------------------------------- */

static void test_new_database_is_migrated(void **state)
{
    struct fixture *f = *state;
    assert_true(store_migration_count() >= 1);
    assert_true(store_version(f->s) >= store_migration_count()); /* (numbers may have gaps) */
    assert_int_equal(peek_int(f, "SELECT count(*) FROM schema_migrations"),
                     store_migration_count());
    assert_int_equal(peek_int(f, "SELECT min(version) FROM schema_migrations"), 1);
    /* every table of 0001-init.sql is there */
    assert_int_equal(peek_int(f, pg_url ? "SELECT count(*) FROM information_schema.tables WHERE"
                                          " table_schema = 'public' AND table_name IN"
                                          " ('players', 'matches', 'match_seats', 'events',"
                                          " 'idempotency')"
                                        : "SELECT count(*) FROM sqlite_master WHERE"
                                          " type = 'table' AND name IN ('players', 'matches',"
                                          " 'match_seats', 'events', 'idempotency')"),
                     5);
}

static void test_wal_mode(void **state)
{
    struct fixture *f = *state;
    if (pg_url)
        skip(); /* SQLite's journal */
    sqlite3 *db;
    assert_int_equal(sqlite3_open_v2(f->path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(st, 0), "wal");
    sqlite3_finalize(st);
    sqlite3_close(db);
}

static void test_reopen_applies_nothing_twice(void **state)
{
    struct fixture *f = *state;
    int64_t ann = add_player(f->s, "ann", 1);
    int64_t applied = peek_int(f, "SELECT sum(applied_at) FROM schema_migrations");
    reopen(f);
    int version = store_version(f->s);
    reopen(f);
    assert_int_equal(store_version(f->s), version);
    assert_int_equal(peek_int(f, "SELECT count(*) FROM schema_migrations"),
                     store_migration_count());
    assert_int_equal(peek_int(f, "SELECT sum(applied_at) FROM schema_migrations"), applied);
    /* the data survived, so no table was recreated */
    struct store_player p;
    struct err e;
    assert_true(store_player_get(f->s, ann, &p, &e));
    assert_string_equal(p.name, "ann");
    store_player_finish(&p);
}

/* Decision: a database migrated by a newer build (schema_migrations names a version this
 * build does not carry) is still opened as it is, and nothing is re-applied: migrations
 * only ever add, so an older build keeps working on the tables it knows. */
static void test_newer_database_is_opened(void **state)
{
    struct fixture *f = *state;
    int future = store_migration_count() + 5;
    char sql[160];
    snprintf(sql, sizeof sql,
             "INSERT INTO schema_migrations VALUES (%d, '%04d-from-the-future', 0)", future,
             future);
    peek_exec(f, sql);
    reopen(f);
    assert_int_equal(store_version(f->s), future);
    assert_int_equal(peek_int(f, "SELECT count(*) FROM schema_migrations"),
                     store_migration_count() + 1);
    assert_true(add_player(f->s, "bo", 2) > 0);
}

/* Several processes may start on one PostgreSQL database at once: each open applies the
 * migrations under the advisory lock, so one applies them and the others find them done.
 * (PostgreSQL only: a SQLite file is one process's.) */
static void *open_one(void *arg)
{
    struct err e;
    return store_open(arg, &e);
}

static void test_concurrent_opens(void **state)
{
    struct fixture *f = *state;
    if (!pg_url)
        skip();
    store_close(f->s);
    f->s = NULL;
    pg_exec("DROP SCHEMA public CASCADE; CREATE SCHEMA public");
    pthread_t t[6];
    for (int i = 0; i < 6; i++)
        assert_int_equal(pthread_create(&t[i], NULL, open_one, f->path), 0);
    for (int i = 0; i < 6; i++) {
        void *s = NULL;
        assert_int_equal(pthread_join(t[i], &s), 0);
        assert_non_null(s);
        assert_true(store_version(s) >= store_migration_count()); /* (numbers may have gaps) */
        if (!f->s)
            f->s = s;
        else
            store_close(s);
    }
    assert_int_equal(peek_int(f, "SELECT count(*) FROM schema_migrations"),
                     store_migration_count());
    assert_true(add_player(f->s, "ann", 1) > 0);
}

static void test_open_failure(void **state)
{
    (void)state;
    struct err e;
    assert_null(store_open("/nonexistent-dir/for/sure/cardpost.db", &e));
    assert_int_equal(e.code, ERR_IO);
    /* a PostgreSQL server that is not there */
    e = (struct err){0};
    assert_null(store_open("postgresql:///cardpost?host=/nonexistent-dir/for/sure", &e));
    assert_int_equal(e.code, ERR_IO);
    assert_non_null(strstr(e.msg, "connect to PostgreSQL"));
    e = (struct err){0};
    assert_false(store_probe("postgres://cardpost@/cardpost?host=/nonexistent-dir", &e));
    assert_int_equal(e.code, ERR_IO);
}

/* The address chooses the backend: a path or a sqlite: address opens the same SQLite file;
 * postgres:// and postgresql:// open a PostgreSQL database (the same one by either name), on
 * which the SQLite file operations are refused clearly; any other scheme is refused (and
 * nothing is created). */
static void test_open_chooses_backend(void **state)
{
    struct fixture *f = *state;
    struct err e;
    int64_t ann = add_player(f->s, "ann", 1);
    store_close(f->s);
    char url[sizeof f->path + 16];
    if (pg_url) /* the other of the two schemes */
        snprintf(url, sizeof url, "%s%s",
                 strncmp(pg_url, "postgresql://", 13) ? "postgresql://" : "postgres://",
                 strstr(pg_url, "://") + 3);
    else
        snprintf(url, sizeof url, "sqlite:%s", f->path);
    f->s = store_open(url, &e);
    assert_non_null(f->s);
    struct store_player p = {0};
    assert_true(store_player_get(f->s, ann, &p, &e));
    assert_string_equal(p.name, "ann");
    store_player_finish(&p);
    store_close(f->s);
    if (!pg_url)
        snprintf(url, sizeof url, "sqlite://%s", f->path); /* sqlite:///tmp/... */
    f->s = store_open(url, &e);
    assert_non_null(f->s);
    assert_true(store_probe(url, &e));

    if (pg_url) {
        struct store_copy_info info;
        bool in_use;
        e = (struct err){0};
        assert_false(store_backup(url, "/tmp/never-written.db", &info, &e));
        assert_int_equal(e.code, ERR_INVALID);
        assert_string_equal(e.tag, "sqlite_only");
        assert_non_null(strstr(e.msg, "pg_dump"));
        e = (struct err){0};
        assert_false(store_restore("/tmp/never-written.db", url, true, &info, &e));
        assert_int_equal(e.code, ERR_INVALID);
        e = (struct err){0};
        assert_false(store_in_use(url, &in_use, &e));
        assert_int_equal(e.code, ERR_INVALID);
        int64_t db_bytes = 0, wal_bytes = -1;
        assert_true(store_file_sizes(f->s, &db_bytes, &wal_bytes, &e));
        assert_true(db_bytes > 0);
        assert_int_equal(wal_bytes, 0);
    }
    e = (struct err){0};
    assert_null(store_open("mysql://localhost/cardpost", &e));
    assert_int_equal(e.code, ERR_INVALID);
    assert_non_null(strstr(e.msg, "mysql"));
    assert_int_equal(access("/tmp/never-written.db", F_OK), -1);
}

/* ---- Players ------------------------------------------------------------------------- */

/* The database holds secrets: it and its -wal and -shm files are 0600 whatever the umask,
 * and an existing database open to others is narrowed when opened. */
static void test_files_are_private(void **state)
{
    (void)state;
    if (pg_url)
        skip(); /* SQLite's files */
    mode_t old = umask(022);
    char dir[64], path[96], side[128];
    snprintf(dir, sizeof dir, "/tmp/test_store.XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/cardpost.db", dir);
    struct err e;
    struct store *s = store_open(path, &e);
    assert_non_null(s);
    struct store *reader = store_open(path, &e); /* a second connection, as the daemon has */
    assert_non_null(reader);
    uint8_t h[STORE_HASH_BYTES] = {1};
    struct store_player p = {.name = "ann", .created_at = 1};
    assert_true(store_player_insert(s, &p, h, &e));
    static const char *const suffixes[] = {"", "-wal", "-shm"};
    struct stat st;
    for (int i = 0; i < 3; i++) {
        snprintf(side, sizeof side, "%s%s", path, suffixes[i]);
        assert_int_equal(stat(side, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0600);
    }
    store_close(reader);
    store_close(s);
    assert_int_equal(chmod(path, 0644), 0);
    s = store_open(path, &e);
    assert_non_null(s);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    store_close(s);
    for (int i = 0; i < 3; i++) {
        snprintf(side, sizeof side, "%s%s", path, suffixes[i]);
        unlink(side);
    }
    rmdir(dir);
    umask(old);
}

/* An address is unconfirmed until its code comes back in time; a new address starts over;
 * a new token hash replaces the old; confirmation emails are counted per player and per
 * address. */
static void test_email_and_token(void **state)
{
    struct fixture *f = *state;
    uint8_t h1[STORE_HASH_BYTES], h2[STORE_HASH_BYTES], code[STORE_HASH_BYTES],
        other[STORE_HASH_BYTES];
    hash_of(h1, 0x41);
    hash_of(h2, 0x42);
    hash_of(code, 0x43);
    hash_of(other, 0x44);
    struct err e;
    struct store_player ann = {.name = "ann", .created_at = 1};
    assert_true(store_player_insert(f->s, &ann, h1, &e));
    struct store_player p;
    assert_true(store_player_get(f->s, ann.id, &p, &e));
    assert_false(p.email_confirmed);
    store_player_finish(&p);
    /* no address: nothing to confirm */
    assert_false(store_player_email_confirm(f->s, ann.id, NULL, 10, &e));
    assert_int_equal(e.code, ERR_NOT_FOUND);

    assert_true(store_player_email_set(f->s, ann.id, "ann@example.org", code, 100, &e));
    assert_false(store_player_email_confirm(f->s, ann.id, other, 10, &e));
    assert_int_equal(e.code, ERR_INVALID);
    assert_false(store_player_email_confirm(f->s, ann.id, code, 100, &e)); /* expired */
    assert_int_equal(e.code, ERR_INVALID);
    assert_true(store_player_get(f->s, ann.id, &p, &e));
    assert_string_equal(p.email, "ann@example.org");
    assert_false(p.email_confirmed);
    /* an update of the other fields keeps the address (and does not write it) */
    free(p.email);
    p.email = NULL;
    assert_true(store_player_update(f->s, &p, &e));
    store_player_finish(&p);
    assert_true(store_player_email_confirm(f->s, ann.id, code, 99, &e));
    assert_true(store_player_get(f->s, ann.id, &p, &e));
    assert_string_equal(p.email, "ann@example.org");
    assert_true(p.email_confirmed);
    assert_true(store_player_update(f->s, &p, &e));
    store_player_finish(&p);
    assert_true(store_player_get(f->s, ann.id, &p, &e));
    assert_true(p.email_confirmed);
    store_player_finish(&p);
    /* the code is used up; a new address is unconfirmed */
    assert_false(store_player_email_confirm(f->s, ann.id, code, 10, &e));
    assert_true(store_player_email_set(f->s, ann.id, "ann@example.net", NULL, 0, &e));
    assert_true(store_player_get(f->s, ann.id, &p, &e));
    assert_false(p.email_confirmed);
    store_player_finish(&p);
    assert_true(store_player_email_confirm(f->s, ann.id, NULL, 0, &e)); /* the operator */

    /* a 410 Gone disables the webhook it came from, and writes nothing else */
    assert_true(store_player_get(f->s, ann.id, &p, &e));
    free(p.webhook_url);
    free(p.prefs);
    p.webhook_url = strdup("https://a.example/hook");
    p.prefs = strdup("{\"email\":false}");
    assert_true(store_player_update(f->s, &p, &e));
    store_player_finish(&p);
    assert_true(store_player_webhook_gone(f->s, ann.id, "https://old.example/hook", &e));
    assert_true(store_player_get(f->s, ann.id, &p, &e));
    assert_false(p.webhook_disabled); /* (changed since: the new one stays on) */
    store_player_finish(&p);
    assert_true(store_player_webhook_gone(f->s, ann.id, "https://a.example/hook", &e));
    assert_true(store_player_get(f->s, ann.id, &p, &e));
    assert_true(p.webhook_disabled);
    assert_string_equal(p.webhook_url, "https://a.example/hook");
    assert_string_equal(p.prefs, "{\"email\":false}");
    assert_string_equal(p.email, "ann@example.net");
    store_player_finish(&p);

    /* tokens */
    assert_true(store_player_token_set(f->s, ann.id, h2, &e));
    assert_false(store_player_by_token(f->s, h1, &p, &e));
    assert_int_equal(e.code, ERR_NOT_FOUND);
    assert_true(store_player_by_token(f->s, h2, &p, &e));
    assert_int_equal(p.id, ann.id);
    store_player_finish(&p);
    assert_false(store_player_token_set(f->s, ann.id + 100, h1, &e));
    assert_int_equal(e.code, ERR_NOT_FOUND);

    /* counting confirmation emails */
    assert_true(store_confirmation_add(f->s, ann.id, "a@x.test", 50, &e));
    assert_true(store_confirmation_add(f->s, ann.id, "b@x.test", 60, &e));
    assert_true(store_confirmation_add(f->s, ann.id, "b@x.test", 70, &e));
    int n;
    int64_t oldest;
    assert_true(store_confirmations_count(f->s, ann.id, NULL, 55, &n, &oldest, &e));
    assert_int_equal(n, 2);
    assert_int_equal(oldest, 60);
    assert_true(store_confirmations_count(f->s, 0, "b@x.test", 0, &n, &oldest, &e));
    assert_int_equal(n, 2);
    assert_true(store_confirmations_count(f->s, 0, "c@x.test", 0, &n, &oldest, &e));
    assert_int_equal(n, 0);
    assert_int_equal(oldest, 0);
}

static void test_players(void **state)
{
    struct fixture *f = *state;
    uint8_t h1[STORE_HASH_BYTES], h2[STORE_HASH_BYTES], h3[STORE_HASH_BYTES];
    hash_of(h1, 0x11);
    hash_of(h2, 0x22);
    hash_of(h3, 0x33);
    struct store_player ann = {.name = "ann", .email = "ann@example.org", .created_at = 5};
    struct store_player bo = {.name = "bo", .webhook_url = "https://bo.example/hook",
                              .created_at = 6};
    struct err e;
    assert_true(store_player_insert(f->s, &ann, h1, &e));
    assert_true(store_player_insert(f->s, &bo, h2, &e));
    assert_true(ann.id != bo.id);

    struct store_player p;
    assert_true(store_player_by_token(f->s, h2, &p, &e));
    assert_int_equal(p.id, bo.id);
    assert_string_equal(p.name, "bo");
    assert_null(p.email);
    assert_string_equal(p.webhook_url, "https://bo.example/hook");
    assert_int_equal(p.created_at, 6);
    store_player_finish(&p);

    assert_true(store_player_get(f->s, ann.id, &p, &e));
    assert_string_equal(p.name, "ann");
    assert_string_equal(p.email, "ann@example.org");
    assert_null(p.webhook_url);
    assert_int_equal(p.created_at, 5);
    store_player_finish(&p);

    assert_false(store_player_by_token(f->s, h3, &p, &e));
    assert_int_equal(e.code, ERR_NOT_FOUND);
    assert_false(store_player_get(f->s, bo.id + 100, &p, &e));
    assert_int_equal(e.code, ERR_NOT_FOUND);

    /* a token hash belongs to one player only */
    struct store_player twin = {.name = "twin", .created_at = 7};
    assert_false(store_player_insert(f->s, &twin, h1, &e));
    assert_int_equal(e.code, ERR_INVALID);
}

/* ---- Stream tickets ------------------------------------------------------------------------ */

static struct store_ticket ticket(uint8_t n, int64_t player, int64_t match, int64_t expires_ms)
{
    struct store_ticket k = {.player = player, .match = match, .expires_ms = expires_ms};
    memset(k.hash, n, sizeof k.hash);
    return k;
}

struct ticket_race {
    const char *url;
    struct store_ticket k;
    int per_player;
    bool take;       /* take k (else add it) */
    bool ok;         /* added, or taken */
};

static void *ticket_racer(void *arg)
{
    struct ticket_race *r = arg;
    struct err e = {0};
    struct store *s = store_open(r->url, &e);
    assert_non_null(s);
    if (r->take) {
        struct store_ticket got;
        r->ok = store_ticket_take(s, r->k.hash, &got, &e);
        assert_true(r->ok || e.code == ERR_NOT_FOUND);
    } else {
        struct store_ticket_room room;
        assert_true(store_ticket_add(s, &r->k, 1000, r->per_player, 1024, &room, &e));
        r->ok = room.added;
    }
    store_close(s);
    return NULL;
}

/* `n` connections at once, each adding its own ticket for player 9 (take: each taking the
 * ticket of hash 0x77); how many got through. */
static int ticket_race(const struct fixture *f, int n, bool take)
{
    struct ticket_race r[16];
    pthread_t t[16];
    assert_true(n <= 16);
    for (int i = 0; i < n; i++) {
        r[i] = (struct ticket_race){.url = f->path, .per_player = 4, .take = take,
                                    .k = ticket(take ? 0x77 : (uint8_t)(0x80 + i), 9, 7, 60000)};
        assert_int_equal(pthread_create(&t[i], NULL, ticket_racer, &r[i]), 0);
    }
    int through = 0;
    for (int i = 0; i < n; i++) {
        assert_int_equal(pthread_join(t[i], NULL), 0);
        through += r[i].ok;
    }
    return through;
}

/* Decision: on a shared database the tickets are the database's (store.h): drawn on one
 * connection, taken on another, once; bounded per player and in all, counted from the
 * table; expired ones deleted at the next draw. Many connections at once keep the bounds and
 * the single use exactly. On SQLite the service keeps them in memory: not_shared. */
static void test_stream_tickets(void **state)
{
    struct fixture *f = *state;
    struct err e = {0};
    struct store_ticket_room room;
    struct store_ticket got, k = ticket(1, 5, 7, 31000);
    if (!pg_url) {
        assert_false(store_ticket_add(f->s, &k, 1000, 8, 1024, &room, &e));
        assert_string_equal(e.tag, "not_shared");
        assert_false(store_ticket_take(f->s, k.hash, &got, &e));
        assert_string_equal(e.tag, "not_shared");
        return;
    }
    struct store *other = store_open(f->path, &e);
    assert_non_null(other);
    assert_true(store_ticket_add(f->s, &k, 1000, 8, 1024, &room, &e));
    assert_true(room.added);
    assert_int_equal(room.held, 0);
    assert_true(store_ticket_take(other, k.hash, &got, &e)); /* another connection takes it */
    assert_memory_equal(got.hash, k.hash, sizeof k.hash);
    assert_int_equal(got.player, 5);
    assert_int_equal(got.match, 7);
    assert_int_equal(got.expires_ms, 31000);
    assert_false(store_ticket_take(f->s, k.hash, &got, &e)); /* once */
    assert_int_equal(e.code, ERR_NOT_FOUND);
    assert_false(store_ticket_take(other, k.hash, &got, &e));
    assert_int_equal(e.code, ERR_NOT_FOUND);

    /* per player: 3 at most here; the first to expire named */
    for (uint8_t i = 0; i < 3; i++) {
        k = ticket(10 + i, 5, 7, 31000 + i);
        assert_true(store_ticket_add(i % 2 ? other : f->s, &k, 1000, 3, 5, &room, &e));
        assert_true(room.added);
        assert_int_equal(room.held, i);
    }
    k = ticket(13, 5, 7, 32000);
    assert_true(store_ticket_add(other, &k, 1000, 3, 5, &room, &e));
    assert_false(room.added);
    assert_int_equal(room.held, 3);
    assert_int_equal(room.first_expiry, 31000);
    /* in all: 5 here, another player's two fill it */
    for (uint8_t i = 0; i < 3; i++) {
        k = ticket(20 + i, 6, 8, 40000);
        assert_true(store_ticket_add(f->s, &k, 1000, 3, 5, &room, &e));
        assert_int_equal(room.added, i < 2);
        assert_int_equal(room.held, i < 2 ? i : 2);
        assert_int_equal(room.all, 3 + (i < 2 ? i : 2));
    }
    assert_int_equal(peek_int(f, "SELECT count(*) FROM stream_tickets"), 5);
    /* an expired ticket is still taken and shown (the service compares); the next draw
     * deletes every expired one */
    assert_true(store_ticket_take(f->s, ticket(10, 0, 0, 0).hash, &got, &e));
    assert_int_equal(got.expires_ms, 31000);
    k = ticket(30, 5, 7, 65000);
    assert_true(store_ticket_add(other, &k, 35000, 3, 5, &room, &e));
    assert_true(room.added);
    assert_int_equal(room.held, 0);
    assert_int_equal(room.all, 2); /* player 6's, until 40000 */
    assert_int_equal(peek_int(f, "SELECT count(*) FROM stream_tickets"), 3);
    store_close(other);

    /* at once: 12 connections draw for one player, bound 4: exactly 4 get one; 12 take one
     * ticket: exactly one gets it */
    pg_exec("DELETE FROM stream_tickets");
    assert_int_equal(ticket_race(f, 12, false), 4);
    assert_int_equal(peek_int(f, "SELECT count(*) FROM stream_tickets WHERE player_id = 9"), 4);
    k = ticket(0x77, 9, 7, 60000);
    pg_exec("DELETE FROM stream_tickets");
    assert_true(store_ticket_add(f->s, &k, 1000, 4, 1024, &room, &e));
    assert_int_equal(ticket_race(f, 12, true), 1);
}

/* ---- Vacations --------------------------------------------------------------------------- */

static void collect_latest(void *cls, int64_t player, int64_t until)
{
    int64_t *out = cls;
    out[player] = until;
}

static void test_vacations(void **state)
{
    struct fixture *f = *state;
    uint8_t h1[STORE_HASH_BYTES], h2[STORE_HASH_BYTES];
    hash_of(h1, 0x41);
    hash_of(h2, 0x42);
    struct store_player ann = {.name = "ann", .created_at = 1};
    struct store_player bo = {.name = "bo", .created_at = 1};
    struct err e;
    assert_true(store_player_insert(f->s, &ann, h1, &e));
    assert_true(store_player_insert(f->s, &bo, h2, &e));
    /* ann: three vacations, the last ended early; one that is ended at once is forgotten */
    assert_true(store_vacation_add(f->s, ann.id, 100, 200, &e));
    assert_true(store_vacation_add(f->s, ann.id, 300, 400, &e));
    assert_true(store_vacation_add(f->s, ann.id, 500, 900, &e));
    assert_true(store_vacation_end(f->s, ann.id, 650, &e));
    assert_true(store_vacation_add(f->s, ann.id, 700, 800, &e));
    assert_true(store_vacation_end(f->s, ann.id, 700, &e));
    assert_true(store_vacation_add(f->s, bo.id, 10, 20, &e));

    struct store_vacation v[8];
    int n = store_vacations_of(f->s, ann.id, 0, v, 8, &e);
    assert_int_equal(n, 3);
    assert_int_equal(v[0].from, 100);
    assert_int_equal(v[0].until, 200);
    assert_int_equal(v[1].from, 300);
    assert_int_equal(v[2].from, 500);
    assert_int_equal(v[2].until, 650); /* ended early */
    /* only those that end after `after`, at most `max` */
    n = store_vacations_of(f->s, ann.id, 200, v, 8, &e);
    assert_int_equal(n, 2);
    assert_int_equal(v[0].from, 300);
    assert_int_equal(store_vacations_of(f->s, ann.id, 0, v, 1, &e), 1);
    assert_int_equal(store_vacations_of(f->s, ann.id, 650, v, 8, &e), 0);
    /* ending when not on vacation changes nothing */
    assert_true(store_vacation_end(f->s, bo.id, 50, &e));
    assert_int_equal(store_vacations_of(f->s, bo.id, 0, v, 8, &e), 1);
    assert_int_equal(v[0].until, 20);

    int64_t latest[8] = {0};
    assert_true(ann.id < 8 && bo.id < 8);
    assert_true(store_vacations_latest(f->s, collect_latest, latest, &e));
    assert_int_equal(latest[ann.id], 650);
    assert_int_equal(latest[bo.id], 20);
}

static void test_settings(void **state)
{
    struct fixture *f = *state;
    struct err e;
    int64_t v = 5, got = 0;
    size_t len = 0;
    assert_false(store_setting_get(f->s, "x", &got, sizeof got, &len, &e));
    assert_int_equal(e.code, ERR_NOT_FOUND);
    assert_true(store_setting_init(f->s, "x", &v, sizeof v, &e));
    int64_t w = 7;
    assert_true(store_setting_init(f->s, "x", &w, sizeof w, &e)); /* the first writer wins */
    assert_int_equal(w, 5);
    w = 9;
    assert_true(store_setting_put(f->s, "x", &w, sizeof w, &e)); /* put replaces */
    assert_true(store_setting_get(f->s, "x", &got, sizeof got, &len, &e));
    assert_int_equal(len, sizeof got);
    assert_int_equal(got, 9);
}

/* ---- The outbox ------------------------------------------------------------------------ */

static int64_t add_note(struct store *s, int64_t player, int channel, const char *id,
                        int64_t due)
{
    struct store_outbox o = {.player = player, .channel = channel, .seq = 3, .body = "{}",
                             .next_attempt = due, .created_at = 10};
    snprintf(o.type, sizeof o.type, "turn");
    snprintf(o.webhook_id, sizeof o.webhook_id, "%s", id);
    struct err e;
    assert_true(store_outbox_add(s, &o, &e));
    assert_true(o.id > 0);
    return o.id;
}

/* SQLite: every fresh row taken into outbox (migration 0020), as claims take them, for a test
 * of what a claim or an update does to the rows there. */
static void settle(struct fixture *f)
{
    if (!pg_url)
        peek_exec(f, "INSERT INTO outbox (id, player_id, type, match_id, seq, webhook_id, body,"
                     " created_at, seat, deadline, destination, email_status, email_next,"
                     " webhook_status, webhook_next) SELECT id, player_id, type, match_id, seq,"
                     " webhook_id, body, created_at, seat, deadline, destination,"
                     " iif(channels & 1, 'pending', NULL), iif(channels & 1, next_attempt, NULL),"
                     " iif(channels & 2, 'pending', NULL), iif(channels & 2, next_attempt, NULL)"
                     " FROM outbox_fresh ORDER BY id; DELETE FROM outbox_fresh");
}

static void finish_rows(struct store_outbox *o, int n)
{
    for (int i = 0; i < n; i++)
        store_outbox_finish(&o[i]);
}

/* Deliveries fall due by channel and time, attempts are recorded with the delivery's new
 * state, a delivery is redelivered, the backlog counts by channel and status, and a player's
 * deliveries list newest first. */
static void test_outbox(void **state)
{
    struct fixture *f = *state;
    struct err e;
    int64_t ann = add_player(f->s, "ann", 1), bo = add_player(f->s, "bo", 2);
    int64_t mail = add_note(f->s, ann, STORE_EMAIL, "msg_1", 100);
    int64_t hook = add_note(f->s, ann, STORE_WEBHOOK, "msg_2", 50);
    int64_t later = add_note(f->s, bo, STORE_WEBHOOK, "msg_3", 200);

    struct store_outbox o[4];
    assert_true(store_outbox_get(f->s, hook, &o[0], &e));
    assert_int_equal(o[0].id, hook);
    assert_int_equal(o[0].channel, STORE_WEBHOOK);
    assert_int_equal(o[0].player, ann);
    assert_string_equal(o[0].type, "turn");
    assert_string_equal(o[0].webhook_id, "msg_2");
    assert_string_equal(o[0].body, "{}");
    assert_int_equal(o[0].status, STORE_PENDING);
    assert_int_equal(o[0].next_attempt, 50);
    assert_int_equal(o[0].match, 0);
    store_outbox_finish(&o[0]);
    int n;
    int64_t when = 0;
    assert_true(store_outbox_next(f->s, STORE_WEBHOOK, &when, &e));
    assert_int_equal(when, 50);
    assert_true(store_outbox_next(f->s, STORE_EMAIL, &when, &e));
    assert_int_equal(when, 100);
    /* a row of one channel has no delivery by the other */
    assert_false(store_outbox_get(f->s, mail + 1, &o[0], &e));
    assert_int_equal(e.code, ERR_NOT_FOUND);
    assert_false(store_outbox_get(f->s, -1, &o[0], &e));
    assert_int_equal(e.code, ERR_NOT_FOUND);

    struct store_attempt failed = {.at = 60, .ok = false, .status = 500, .duration_ms = 7};
    snprintf(failed.error, sizeof failed.error, "boom");
    assert_true(store_outbox_record(f->s, hook, &failed, STORE_PENDING, 1, 300, &e));
    assert_true(store_outbox_get(f->s, hook, &o[0], &e));
    assert_int_equal(o[0].attempts, 1);
    assert_int_equal(o[0].next_attempt, 300);
    assert_string_equal(o[0].last_error, "boom");
    assert_int_equal(o[0].delivered_at, 0);
    store_outbox_finish(&o[0]);
    struct store_attempt sent = {.at = 310, .ok = true, .status = 204, .duration_ms = 3};
    assert_true(store_outbox_record(f->s, hook, &sent, STORE_DELIVERED, 2, 300, &e));
    assert_true(store_outbox_get(f->s, hook, &o[0], &e));
    assert_int_equal(o[0].status, STORE_DELIVERED);
    assert_int_equal(o[0].delivered_at, 310);
    assert_string_equal(o[0].last_error, "boom"); /* (kept from the failure) */
    store_outbox_finish(&o[0]);
    struct store_attempt a[4];
    assert_int_equal(store_attempts_of(f->s, hook, a, 4, &e), 2);
    assert_false(a[0].ok);
    assert_int_equal(a[0].status, 500);
    assert_string_equal(a[0].error, "boom");
    assert_int_equal(a[0].duration_ms, 7);
    assert_true(a[1].ok);
    assert_int_equal(a[1].at, 310);
    assert_string_equal(a[1].error, "");

    int64_t pending[2], dead[2];
    assert_true(store_outbox_backlog(f->s, pending, dead, &e));
    assert_int_equal(pending[STORE_EMAIL], 1);
    assert_int_equal(pending[STORE_WEBHOOK], 1);
    assert_int_equal(dead[STORE_EMAIL] + dead[STORE_WEBHOOK], 0);
    assert_true(store_outbox_record(f->s, later, &failed, STORE_DEAD, 9, 0, &e));
    assert_true(store_outbox_backlog(f->s, pending, dead, &e));
    assert_int_equal(pending[STORE_WEBHOOK], 0);
    assert_int_equal(dead[STORE_WEBHOOK], 1);

    n = store_outbox_of_player(f->s, ann, 0, o, 4, &e);
    assert_int_equal(n, 2);
    assert_int_equal(o[0].id, hook); /* newest first */
    assert_int_equal(o[1].id, mail);
    finish_rows(o, n);
    n = store_outbox_of_player(f->s, ann, hook, o, 4, &e);
    assert_int_equal(n, 1);
    assert_int_equal(o[0].id, mail);
    finish_rows(o, n);

    assert_true(store_outbox_redeliver(f->s, hook, 400, &e));
    assert_true(store_outbox_get(f->s, hook, &o[0], &e));
    assert_int_equal(o[0].status, STORE_PENDING);
    assert_int_equal(o[0].next_attempt, 400);
    store_outbox_finish(&o[0]);
    assert_false(store_outbox_redeliver(f->s, 9999, 400, &e));
    assert_int_equal(e.code, ERR_NOT_FOUND);
    assert_false(store_outbox_get(f->s, 9999, &o[0], &e));
    assert_int_equal(e.code, ERR_NOT_FOUND);
    assert_true(store_outbox_next(f->s, STORE_WEBHOOK, &when, &e));
    assert_int_equal(when, 400);

    /* a row for nobody is refused (the foreign key); a webhook id is not looked up, and
     * two rows may carry the same (0014-outbox-lean) */
    struct store_outbox nobody = {.player = 9999, .channel = STORE_EMAIL, .body = "{}"};
    snprintf(nobody.type, sizeof nobody.type, "turn");
    snprintf(nobody.webhook_id, sizeof nobody.webhook_id, "msg_9");
    e = (struct err){0};
    assert_false(store_outbox_add(f->s, &nobody, &e));
    assert_int_equal(e.code, ERR_INVALID);
    assert_true(add_note(f->s, bo, STORE_EMAIL, "msg_1", 100) > later);
}

/* Player `player`'s deliveries, read page by page (the newest first, up to 100 a page), are
 * `ids` (`count` of them, oldest first). */
static void listing_is(struct fixture *f, int64_t player, const int64_t *ids, int count)
{
    struct store_outbox o[100];
    struct err e;
    int64_t before = 0;
    int seen = 0;
    for (;;) {
        int n = store_outbox_of_player(f->s, player, before, o, 100, &e);
        assert_true(n >= 0);
        for (int i = 0; i < n; i++) {
            assert_true(seen < count);
            assert_int_equal(o[i].id, ids[count - 1 - seen]);
            assert_int_equal(o[i].player, player);
            seen++;
        }
        if (n > 0)
            before = o[n - 1].id;
        finish_rows(o, n);
        if (n == 0) /* (a page may hold fewer: a row whose webhook is past `before`) */
            break;
    }
    assert_int_equal(seen, count);
}

/* A player's deliveries, newest first and page by page, whether SQLite holds them in
 * outbox_players (filled 1,024 rows at a time: migration 0018) or past its mark; the same on
 * PostgreSQL (its index). On SQLite the table takes the rows at the 1,024th past its mark, in
 * that row's transaction, and a connection opened later counts the rows already past it. */
static void test_outbox_of_player_batches(void **state)
{
    struct fixture *f = *state;
    int64_t p[3] = {add_player(f->s, "ann", 1), add_player(f->s, "bo", 2),
                    add_player(f->s, "cy", 3)};
    static int64_t ids[3][3100];
    int count[3] = {0};
    for (int i = 0; i < 3100; i++) {
        if (i == 2500) { /* (a new connection: 452 rows past the mark, then 600 more) */
            listing_is(f, p[0], ids[0], count[0]);
            reopen(f);
        }
        int k = i % 7 == 0 ? 2 : i % 2; /* (uneven shares, interleaved) */
        char wid[32];
        snprintf(wid, sizeof wid, "msg_%d", i);
        ids[k][count[k]++] = add_note(f->s, p[k], i % 3 ? STORE_WEBHOOK : STORE_EMAIL, wid, i);
        if (i == 1500 || i == 2800) /* (SQLite: the rows so far taken out of outbox_fresh) */
            settle(f);
        if (!pg_url && (i == 1022 || i == 1023 || i == 2047 || i == 2499 || i == 3070)) {
            int batches = i < 1023 ? 0 : i < 2047 ? 1 : i < 3071 ? 2 : 3;
            assert_int_equal(peek_int(f, "SELECT count(*) FROM outbox_players"), 1024 * batches);
            assert_int_equal(peek_int(f, "SELECT upto - (SELECT min(id) - 1 FROM outbox_all)"
                                         " FROM outbox_indexed"),
                             1024 * batches);
        }
    }
    if (!pg_url) {
        assert_int_equal(peek_int(f, "SELECT count(*) FROM outbox_players"), 3072);
        assert_int_equal(peek_int(f, "SELECT count(*) FROM outbox_players op JOIN outbox_all o"
                                     " USING (id) WHERE o.player_id = op.player_id"),
                         3072);
    }
    for (int k = 0; k < 3; k++)
        listing_is(f, p[k], ids[k], count[k]);
    /* a page that starts past the mark and ends within the table */
    struct store_outbox o[100];
    struct err e;
    int n = store_outbox_of_player(f->s, p[1], ids[1][count[1] - 5], o, 100, &e);
    assert_true(n == 99 || n == 100);
    for (int i = 0; i < n; i++)
        assert_int_equal(o[i].id, ids[1][count[1] - 6 - i]);
    finish_rows(o, n);
}

/* 0014-outbox-lean and 0015-outbox-notification rebuild the outbox of a database written
 * before them (a row a channel, as 0002 and 0011 made it): every row and its attempts kept,
 * each row the delivery of its one channel, under the id of its row and channel; no unique
 * index on webhook_id any more; the foreign keys on again once they are applied.
 * (SQLite rebuilds the table; PostgreSQL alters it in place.) */
static void test_outbox_rebuilt(void **state)
{
    struct fixture *f = *state;
    struct err e;
    int64_t ann = add_player(f->s, "ann", 1);
    store_close(f->s);
    f->s = NULL;
    /* The outbox and its attempts as 0002, 0010 and 0011 made them, with a row of each
     * channel and an attempt, and neither 0014 nor 0015 applied. */
    const char *old =
        pg_url
            ? "DROP VIEW outbox_all;" /* (0020's) */
              "DROP TABLE delivery_attempts; DROP TABLE outbox;"
              "CREATE TABLE outbox (id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,"
              " player_id BIGINT NOT NULL REFERENCES players(id),"
              " channel TEXT NOT NULL CHECK (channel IN ('email', 'webhook')),"
              " type TEXT NOT NULL, match_id BIGINT REFERENCES matches(id), seq BIGINT,"
              " webhook_id TEXT NOT NULL UNIQUE, body TEXT NOT NULL,"
              " status TEXT NOT NULL DEFAULT 'pending'"
              " CHECK (status IN ('pending', 'delivered', 'dead')),"
              " attempts INTEGER NOT NULL DEFAULT 0, next_attempt BIGINT NOT NULL,"
              " created_at BIGINT NOT NULL, delivered_at BIGINT, last_error TEXT,"
              " seat INTEGER, deadline BIGINT, destination TEXT NOT NULL DEFAULT '',"
              " held BOOLEAN NOT NULL DEFAULT false, claimed_until BIGINT);"
              "CREATE INDEX outbox_due ON outbox(channel, next_attempt)"
              " WHERE status = 'pending';"
              "CREATE INDEX outbox_by_player ON outbox(player_id, id);"
              "CREATE INDEX outbox_dead ON outbox(channel) WHERE status = 'dead';"
              "CREATE INDEX outbox_held ON outbox(channel, destination) WHERE held;"
              "CREATE TABLE delivery_attempts (id BIGINT GENERATED BY DEFAULT AS IDENTITY"
              " PRIMARY KEY, outbox_id BIGINT NOT NULL REFERENCES outbox(id),"
              " at BIGINT NOT NULL, ok BOOLEAN NOT NULL, status BIGINT, error TEXT,"
              " duration_ms BIGINT NOT NULL);"
              "CREATE INDEX delivery_attempts_by_outbox ON delivery_attempts(outbox_id);"
            : "PRAGMA foreign_keys=OFF;"
              "DROP TABLE delivery_attempts; DROP TABLE outbox;"
              "DROP TABLE outbox_players; DROP TABLE outbox_indexed;" /* (0018's) */
              "DROP VIEW outbox_all; DROP TABLE outbox_fresh;" /* (0020's) */
              "CREATE TABLE outbox (id INTEGER PRIMARY KEY,"
              " player_id INTEGER NOT NULL REFERENCES players(id),"
              " channel TEXT NOT NULL CHECK (channel IN ('email', 'webhook')),"
              " type TEXT NOT NULL, match_id INTEGER REFERENCES matches(id), seq INTEGER,"
              " webhook_id TEXT NOT NULL UNIQUE, body TEXT NOT NULL,"
              " status TEXT NOT NULL DEFAULT 'pending'"
              " CHECK (status IN ('pending', 'delivered', 'dead')),"
              " attempts INTEGER NOT NULL DEFAULT 0, next_attempt INTEGER NOT NULL,"
              " created_at INTEGER NOT NULL, delivered_at INTEGER, last_error TEXT,"
              " seat INTEGER, deadline INTEGER, destination TEXT NOT NULL DEFAULT '',"
              " held INTEGER NOT NULL DEFAULT 0, claimed_until INTEGER);"
              "CREATE INDEX outbox_due ON outbox(channel, next_attempt)"
              " WHERE status = 'pending';"
              "CREATE INDEX outbox_by_player ON outbox(player_id, id);"
              "CREATE INDEX outbox_dead ON outbox(channel) WHERE status = 'dead';"
              "CREATE INDEX outbox_held ON outbox(channel, destination) WHERE held = 1;"
              "CREATE TABLE delivery_attempts (id INTEGER PRIMARY KEY,"
              " outbox_id INTEGER NOT NULL REFERENCES outbox(id), at INTEGER NOT NULL,"
              " ok INTEGER NOT NULL, status INTEGER, error TEXT,"
              " duration_ms INTEGER NOT NULL);"
              "CREATE INDEX delivery_attempts_by_outbox ON delivery_attempts(outbox_id);";
    char sql[3600];
    snprintf(sql, sizeof sql,
             "%s"
             "INSERT INTO outbox (id, player_id, channel, type, seq, webhook_id, body,"
             " next_attempt, created_at) VALUES (7, %lld, 'email', 'turn', 3, 'msg_a', '{}',"
             " 100, 10);"
             "INSERT INTO outbox (id, player_id, channel, type, seq, webhook_id, body, status,"
             " attempts, next_attempt, created_at, seat, destination) VALUES (8, %lld,"
             " 'webhook', 'turn', 3, 'msg_b', '', 'delivered', 1, 50, 10, 2, 'h:1');"
             "INSERT INTO delivery_attempts (outbox_id, at, ok, status, duration_ms)"
             " VALUES (8, 7, %s, 204, 3);"
             "DELETE FROM schema_migrations WHERE version >= 14;",
             old, (long long)ann, (long long)ann, pg_url ? "true" : "1");
    peek_exec(f, sql);
    f->s = store_open(f->path, &e);
    if (!f->s)
        fail_msg("store_open: %s", e.msg);
    assert_int_equal(peek_int(f, "SELECT count(*) FROM schema_migrations"
                                 " WHERE version IN (14, 15)"), 2);
    if (pg_url) {
        assert_int_equal(peek_int(f, "SELECT count(*) FROM pg_indexes WHERE tablename ="
                                     " 'outbox' AND indexname <> 'outbox_pkey'"), 8); /* (0017's too) */
    } else {
        assert_int_equal(peek_int(f, "SELECT count(*) FROM sqlite_master"
                                     " WHERE name = 'sqlite_autoindex_outbox_1'"), 0);
        /* (0017's too; 0018 took outbox_by_player into outbox_players, with its rows) */
        assert_int_equal(peek_int(f, "SELECT count(*) FROM sqlite_master WHERE type = 'index'"
                                     " AND tbl_name = 'outbox'"), 7);
        assert_int_equal(peek_int(f, "SELECT count(*) FROM outbox_players WHERE player_id ="
                                     " (SELECT player_id FROM outbox WHERE id = 7)"
                                     " AND id IN (7, 8)"), 2);
        assert_int_equal(peek_int(f, "SELECT upto FROM outbox_indexed"), 8);
        assert_int_equal(peek_int(f, "SELECT count(*) FROM pragma_foreign_key_list("
                                     "'delivery_attempts') WHERE \"table\" = 'outbox'"), 1);
        assert_int_equal(peek_int(f, "SELECT count(*) FROM pragma_foreign_key_check"), 0);
    }
    int64_t a = STORE_DELIVERY_ID(7, STORE_EMAIL), b = STORE_DELIVERY_ID(8, STORE_WEBHOOK);
    struct store_outbox o;
    assert_true(store_outbox_get(f->s, a, &o, &e));
    assert_string_equal(o.webhook_id, "msg_a");
    assert_int_equal(o.channel, STORE_EMAIL);
    assert_int_equal(o.status, STORE_PENDING);
    assert_int_equal(o.next_attempt, 100);
    assert_int_equal(o.seat, -1);
    store_outbox_finish(&o);
    assert_true(store_outbox_get(f->s, b, &o, &e));
    assert_string_equal(o.webhook_id, "msg_b");
    assert_int_equal(o.channel, STORE_WEBHOOK);
    assert_int_equal(o.status, STORE_DELIVERED);
    assert_int_equal(o.attempts, 1);
    assert_int_equal(o.seat, 2);
    assert_string_equal(o.destination, "h:1");
    store_outbox_finish(&o);
    /* each row is its one channel's delivery, no other */
    assert_false(store_outbox_get(f->s, STORE_DELIVERY_ID(7, STORE_WEBHOOK), &o, &e));
    assert_false(store_outbox_get(f->s, STORE_DELIVERY_ID(8, STORE_EMAIL), &o, &e));
    struct store_attempt at[2];
    assert_int_equal(store_attempts_of(f->s, b, at, 2, &e), 1);
    assert_int_equal(at[0].status, 204);
    assert_int_equal(store_attempts_of(f->s, STORE_DELIVERY_ID(8, STORE_EMAIL), at, 2, &e), 0);
    int64_t pending[2], dead[2];
    assert_true(store_outbox_backlog(f->s, pending, dead, &e));
    assert_int_equal(pending[STORE_EMAIL], 1);
    assert_int_equal(pending[STORE_WEBHOOK], 0);
    /* the foreign keys hold again, and a webhook id may repeat */
    add_note(f->s, ann, STORE_WEBHOOK, "msg_a", 60);
    struct store_outbox nobody = {.player = 9999, .channel = STORE_EMAIL, .body = "{}"};
    snprintf(nobody.type, sizeof nobody.type, "turn");
    assert_false(store_outbox_add(f->s, &nobody, &e));
    assert_int_equal(e.code, ERR_INVALID);
}

/* A notification by email and webhook is one row (docs/service.md "Data flow of a move"):
 * two deliveries under its id, each due, claimed, recorded, listed and redelivered on its
 * own, and counted in its channel's backlog. */
static void test_outbox_one_row(void **state)
{
    struct fixture *f = *state;
    struct err e;
    int64_t ann = add_player(f->s, "ann", 1);
    struct store_outbox n = {.player = ann,
                             .channels = STORE_CHANNEL_BIT(STORE_EMAIL) |
                                         STORE_CHANNEL_BIT(STORE_WEBHOOK),
                             .seq = 5, .body = "", .seat = 1, .next_attempt = 100,
                             .created_at = 90};
    snprintf(n.type, sizeof n.type, "turn");
    snprintf(n.webhook_id, sizeof n.webhook_id, "msg_both");
    snprintf(n.destination, sizeof n.destination, "h:2");
    assert_true(store_outbox_add(f->s, &n, &e));
    int64_t mail = n.id, hook = n.id + 1;
    if (pg_url) /* (outside a transaction the id comes back there too) */
        assert_true(mail > 0);
    assert_int_equal(mail % 2, STORE_EMAIL);
    if (!pg_url)
        assert_int_equal(peek_int(f, "SELECT count(*) FROM outbox_all"), 1);

    struct store_outbox o[4];
    assert_true(store_outbox_get(f->s, mail, &o[0], &e));
    assert_int_equal(o[0].channel, STORE_EMAIL);
    assert_string_equal(o[0].destination, ""); /* (the relay's) */
    assert_int_equal(o[0].seat, 1);
    store_outbox_finish(&o[0]);
    assert_true(store_outbox_get(f->s, hook, &o[0], &e));
    assert_int_equal(o[0].channel, STORE_WEBHOOK);
    assert_string_equal(o[0].destination, "h:2");
    assert_string_equal(o[0].webhook_id, "msg_both");
    store_outbox_finish(&o[0]);
    int64_t pending[2], dead[2];
    assert_true(store_outbox_backlog(f->s, pending, dead, &e));
    assert_int_equal(pending[STORE_EMAIL], 1);
    assert_int_equal(pending[STORE_WEBHOOK], 1);

    /* the email's claim leaves the webhook's delivery to the webhook's */
    assert_int_equal(store_outbox_claim(f->s, STORE_EMAIL, 200, 1000, "[]", "{}", 0, 0, o, 4, &e),
                     1);
    assert_int_equal(o[0].id, mail);
    finish_rows(o, 1);
    assert_int_equal(store_outbox_claim(f->s, STORE_EMAIL, 200, 1000, "[]", "{}", 0, 0, o, 4, &e),
                     0);
    assert_int_equal(store_outbox_claim(f->s, STORE_WEBHOOK, 200, 1000, "[]", "{\"h:2\": 0}", 0, 0,
                                        o, 4, &e),
                     0); /* (its destination left out) */
    char skip[32];
    snprintf(skip, sizeof skip, "[%lld]", (long long)hook);
    assert_int_equal(store_outbox_claim(f->s, STORE_WEBHOOK, 200, 1000, skip, "{}", 0, 0, o, 4, &e),
                     0); /* (its id left out) */
    assert_int_equal(store_outbox_claim(f->s, STORE_WEBHOOK, 200, 1000, "[]", "{}", 0, 0, o, 4, &e),
                     1);
    assert_int_equal(o[0].id, hook);
    finish_rows(o, 1);

    /* each recorded on its own */
    struct store_attempt sent = {.at = 210, .ok = true, .status = 250, .duration_ms = 2};
    struct store_attempt failed = {.at = 220, .ok = false, .status = 503, .duration_ms = 4};
    snprintf(failed.error, sizeof failed.error, "busy");
    assert_true(store_outbox_record(f->s, mail, &sent, STORE_DELIVERED, 1, 100, &e));
    assert_true(store_outbox_record(f->s, hook, &failed, STORE_PENDING, 1, 5000, &e));
    assert_true(store_outbox_get(f->s, mail, &o[0], &e));
    assert_int_equal(o[0].status, STORE_DELIVERED);
    assert_int_equal(o[0].delivered_at, 210);
    assert_null(o[0].last_error);
    store_outbox_finish(&o[0]);
    assert_true(store_outbox_get(f->s, hook, &o[0], &e));
    assert_int_equal(o[0].status, STORE_PENDING);
    assert_int_equal(o[0].attempts, 1);
    assert_int_equal(o[0].next_attempt, 5000);
    assert_string_equal(o[0].last_error, "busy");
    store_outbox_finish(&o[0]);
    struct store_attempt a[4];
    assert_int_equal(store_attempts_of(f->s, mail, a, 4, &e), 1);
    assert_int_equal(a[0].status, 250);
    assert_int_equal(store_attempts_of(f->s, hook, a, 4, &e), 1);
    assert_int_equal(a[0].status, 503);
    assert_true(store_outbox_backlog(f->s, pending, dead, &e));
    assert_int_equal(pending[STORE_EMAIL], 0);
    assert_int_equal(pending[STORE_WEBHOOK], 1);

    /* listed newest first: the webhook's, then the email's; paged by id */
    int64_t later = add_note(f->s, ann, STORE_EMAIL, "msg_later", 300);
    int k = store_outbox_of_player(f->s, ann, 0, o, 4, &e);
    assert_int_equal(k, 3);
    assert_int_equal(o[0].id, later);
    assert_int_equal(o[1].id, hook);
    assert_int_equal(o[2].id, mail);
    finish_rows(o, k);
    k = store_outbox_of_player(f->s, ann, 0, o, 2, &e);
    assert_int_equal(k, 2);
    assert_int_equal(o[1].id, hook);
    finish_rows(o, k);
    k = store_outbox_of_player(f->s, ann, hook, o, 4, &e);
    assert_int_equal(k, 1);
    assert_int_equal(o[0].id, mail);
    finish_rows(o, k);
    k = store_outbox_of_player(f->s, ann, mail, o, 4, &e);
    assert_int_equal(k, 0);

    /* one redelivered, the other as it was */
    assert_true(store_outbox_redeliver(f->s, mail, 7000, &e));
    assert_true(store_outbox_get(f->s, mail, &o[0], &e));
    assert_int_equal(o[0].status, STORE_PENDING);
    assert_int_equal(o[0].next_attempt, 7000);
    store_outbox_finish(&o[0]);
    assert_true(store_outbox_get(f->s, hook, &o[0], &e));
    assert_int_equal(o[0].next_attempt, 5000);
    store_outbox_finish(&o[0]);
    assert_false(store_outbox_redeliver(f->s, later + 1, 7000, &e)); /* (no webhook there) */
    assert_int_equal(e.code, ERR_NOT_FOUND);
}

/* A row written for rendering at delivery: its seat, deadline and destination. */
static int64_t add_held_note(struct store *s, int64_t player, const char *id, int64_t due,
                             const char *destination)
{
    struct store_outbox o = {.player = player, .channel = STORE_WEBHOOK, .seq = 4, .body = "",
                             .seat = 2, .deadline = 777, .next_attempt = due,
                             .created_at = 10};
    snprintf(o.type, sizeof o.type, "turn");
    snprintf(o.webhook_id, sizeof o.webhook_id, "%s", id);
    snprintf(o.destination, sizeof o.destination, "%s", destination);
    struct err e;
    assert_true(store_outbox_add(s, &o, &e));
    return o.id;
}

/* `n` webhooks of `player` for destination busy:1, due at 10, 11, ... */
static void add_backlog(struct store *s, int64_t player, int n)
{
    for (int i = 0; i < n; i++) {
        char id[32];
        snprintf(id, sizeof id, "msg_busy%d", i);
        add_held_note(s, player, id, 10 + i, "busy:1");
    }
}

static int claim_sorted(struct store *s, int64_t now, int64_t until, struct store_outbox *o,
                        int max)
{
    struct err e;
    int n = store_outbox_claim(s, STORE_WEBHOOK, now, until, "[]", "{}", 0, 0, o, max, &e);
    assert_true(n >= 0);
    for (int i = 1; i < n; i++) /* (RETURNING has no order) */
        for (int k = i; k > 0 && o[k].id < o[k - 1].id; k--) {
            struct store_outbox t = o[k];
            o[k] = o[k - 1];
            o[k - 1] = t;
        }
    return n;
}

static int64_t next_of(struct store *s, int64_t id)
{
    struct store_outbox o;
    struct err e;
    assert_true(store_outbox_get(s, id, &o, &e));
    int64_t next = o.next_attempt;
    store_outbox_finish(&o);
    return next;
}

/* A claim without a window (the dispatcher's look past the first rows due) goes by
 * destination (migration 0017): it steps over a destination left out, whatever its backlog,
 * and takes the first rows due among all the others in due order (the earliest of each
 * destination's first rows, not all of one destination before the next), leaving out rows
 * claimed or named, at most `max` and none not yet due. */
static void test_outbox_claim_by_destination(void **state)
{
    struct fixture *f = *state;
    struct err e;
    int64_t ann = add_player(f->s, "ann", 1);
    add_backlog(f->s, ann, 300); /* a busy destination's, due first */
    int64_t c1 = add_held_note(f->s, ann, "msg_cc1", 400, "c:1");
    int64_t b1 = add_held_note(f->s, ann, "msg_bb1", 401, "b:1");
    int64_t c2 = add_held_note(f->s, ann, "msg_cc2", 402, "c:1");
    int64_t b2 = add_held_note(f->s, ann, "msg_bb2", 403, "b:1");
    int64_t c3 = add_held_note(f->s, ann, "msg_cc3", 404, "c:1");
    int64_t d1 = add_held_note(f->s, ann, "msg_dd1", 405, "d:1");
    add_held_note(f->s, ann, "msg_late", 100000, "e:1"); /* not due */
    settle(f);
    struct store_outbox o[8];
    /* Within a window of the first rows due: all the busy destination's, so nothing; but
     * SQLite walks the five destinations (claim_walk), as without a window (given back). */
    int n = store_outbox_claim(f->s, STORE_WEBHOOK, 1000, 5000, "[]", "{\"busy:1\": 0}", 0, 64, o,
                               4, &e);
    assert_int_equal(n, pg_url ? 0 : 4);
    for (int i = 0; i < n; i++) {
        assert_string_not_equal(o[i].destination, "busy:1");
        assert_true(o[i].id == c1 || o[i].id == b1 || o[i].id == c2 || o[i].id == b2);
        assert_true(store_outbox_release(f->s, o[i].id, &e));
    }
    finish_rows(o, n);
    /* Past it: the four first due of the others, across destinations (c1 b1 c2 b2). */
    char skip[64];
    snprintf(skip, sizeof skip, "[%lld]", (long long)c2);
    n = store_outbox_claim(f->s, STORE_WEBHOOK, 1000, 5000, skip, "{\"busy:1\": 0}", 0, 0, o, 4, &e);
    assert_int_equal(n, 4);
    int64_t want[] = {c1, b1, b2, c3}; /* (c2 named: left out) */
    for (int k = 0; k < 4; k++) {
        bool found = false;
        for (int i = 0; i < n; i++)
            found |= o[i].id == want[k];
        assert_true(found);
        assert_string_not_equal(o[k].destination, "busy:1");
    }
    finish_rows(o, n);
    /* Again: those four are claimed now; of the rest, c2 and d1 (b has no more). */
    n = store_outbox_claim(f->s, STORE_WEBHOOK, 1000, 5000, "[]", "{\"busy:1\": 0, \"x:1\": 0}", 0, 0, o,
                           8, &e);
    assert_int_equal(n, 2);
    int64_t got[2] = {o[0].id, o[1].id};
    assert_true((got[0] == c2 && got[1] == d1) || (got[1] == c2 && got[0] == d1));
    finish_rows(o, n);
    /* Nothing left out: the busy destination's first rows, as in due order. */
    n = store_outbox_claim(f->s, STORE_WEBHOOK, 1000, 5000, "[]", "{}", 0, 0, o, 3, &e);
    assert_int_equal(n, 3);
    for (int i = 0; i < n; i++) {
        assert_string_equal(o[i].destination, "busy:1");
        assert_true(o[i].next_attempt <= 12);
    }
    finish_rows(o, n);
}

/* Count the rows of `o` for destination `dest`. */
static int rows_for(const struct store_outbox *o, int n, const char *dest)
{
    int k = 0;
    for (int i = 0; i < n; i++)
        k += !strcmp(o[i].destination, dest);
    return k;
}

/* A claim takes no more of a destination's rows than its room: what `rooms` gives for it
 * (the destinations the caller delivers to already), `room` for any other, whether it
 * looks within a window or past it by destination; so none is claimed only to be given
 * back (the dispatcher gave back two rows for each it delivered to a busy destination). */
static void test_outbox_claim_rooms(void **state)
{
    struct fixture *f = *state;
    struct err e;
    int64_t ann = add_player(f->s, "ann", 1);
    for (int i = 0; i < 5; i++) {
        char id[32];
        snprintf(id, sizeof id, "msg_a%d", i);
        add_held_note(f->s, ann, id, 10 + i, "a:1");
    }
    add_held_note(f->s, ann, "msg_b0", 20, "b:1");
    add_held_note(f->s, ann, "msg_b1", 21, "b:1");
    add_held_note(f->s, ann, "msg_b2", 22, "b:1");
    add_held_note(f->s, ann, "msg_c0", 30, "c:1");
    struct store_outbox o[16];
    /* a:1 has room for one more, any other for two: 1 + 2 + 1 of the 9 due. */
    int n = store_outbox_claim(f->s, STORE_WEBHOOK, 1000, 5000, "[]", "{\"a:1\": 1}", 2, 64,
                               o, 8, &e);
    assert_int_equal(n, 4);
    assert_int_equal(rows_for(o, n, "a:1"), 1);
    assert_int_equal(rows_for(o, n, "b:1"), 2);
    assert_int_equal(rows_for(o, n, "c:1"), 1);
    for (int i = 0; i < n; i++)
        if (!strcmp(o[i].destination, "a:1"))
            assert_int_equal(o[i].next_attempt, 10); /* (each destination's first due) */
    finish_rows(o, n);
    /* Past the window, by destination: a:1 full, b:1 one more, the rest claimed already. */
    n = store_outbox_claim(f->s, STORE_WEBHOOK, 1000, 5000, "[]", "{\"a:1\": 0, \"b:1\": 1}", 2,
                           0, o, 8, &e);
    assert_int_equal(n, 1);
    assert_string_equal(o[0].destination, "b:1");
    assert_int_equal(o[0].next_attempt, 22);
    finish_rows(o, n);
    /* No room given (0): no limit but `max`. */
    n = store_outbox_claim(f->s, STORE_WEBHOOK, 1000, 5000, "[]", "{}", 0, 64, o, 8, &e);
    assert_int_equal(n, 4); /* (a:1's four left) */
    assert_int_equal(rows_for(o, n, "a:1"), 4);
    finish_rows(o, n);
}

/* SQLite: a webhook claim within a window walks the destinations first when there are at
 * most eight of them (claim_walk), so a full destination's backlog due first hides nobody's
 * rows; with more, it claims within its window as PostgreSQL does, and goes straight to it
 * for a second before it walks again. */
static void test_outbox_claim_walk(void **state)
{
    struct fixture *f = *state;
    if (pg_url)
        skip();
    struct err e;
    int64_t ann = add_player(f->s, "ann", 1);
    add_backlog(f->s, ann, 100); /* a full destination's, due first */
    int64_t other[8];
    for (int i = 0; i < 8; i++) { /* eight more destinations, one row each */
        char id[32], dest[32];
        snprintf(id, sizeof id, "msg_other%d", i);
        snprintf(dest, sizeof dest, "d%d:1", i);
        other[i] = add_held_note(f->s, ann, id, 200 + i, dest);
    }
    settle(f);
    struct store_outbox o[8];
    const char *busy = "{\"busy:1\": 0}";
    /* Nine destinations: within the window of the first 64 rows due, all busy:1's. */
    int n = store_outbox_claim(f->s, STORE_WEBHOOK, 1000, 9000, "[]", busy, 0, 64, o, 2, &e);
    assert_int_equal(n, 0);
    /* Down to eight (d0's row claimed), but within the second the window still. */
    n = store_outbox_claim(f->s, STORE_WEBHOOK, 1000, 9000, "[]", busy, 0, 0, o, 1, &e);
    assert_int_equal(n, 1);
    assert_int_equal(o[0].id, other[0]);
    finish_rows(o, n);
    struct store_attempt sent = {.at = 1500, .ok = true, .status = 200};
    assert_true(store_outbox_record(f->s, other[0], &sent, STORE_DELIVERED, 1, 0, &e));
    n = store_outbox_claim(f->s, STORE_WEBHOOK, 1999, 9000, "[]", busy, 0, 64, o, 2, &e);
    assert_int_equal(n, 0);
    /* A second on: eight destinations, walked: the two first due past the backlog. */
    n = store_outbox_claim(f->s, STORE_WEBHOOK, 2000, 9000, "[]", busy, 0, 64, o, 2, &e);
    assert_int_equal(n, 2);
    for (int i = 0; i < n; i++)
        assert_true(o[i].id == other[1] || o[i].id == other[2]);
    finish_rows(o, n);
}

/* Claims: a claimed row is nobody else's until its lease runs out, it is released or its
 * attempt recorded; the next due time counts the lease; a success makes the rows held for
 * its destination (could not connect) due, and only those; at start SQLite forgets every
 * claim, PostgreSQL none. */
static void test_outbox_claims(void **state)
{
    struct fixture *f = *state;
    struct err e;
    int64_t ann = add_player(f->s, "ann", 1), bo = add_player(f->s, "bo", 2);
    int64_t w1 = add_held_note(f->s, ann, "msg_c1", 50, "h:1");
    int64_t w2 = add_held_note(f->s, bo, "msg_c2", 60, "h:1");
    int64_t w3 = add_held_note(f->s, bo, "msg_c3", 500, "h:2");
    struct store_outbox o[4];
    /* A destination left out: within a window of the first two rows due, nothing (SQLite
     * walks the two destinations: the other's, given back); looking at every row, the
     * other destination's. */
    int n = store_outbox_claim(f->s, STORE_WEBHOOK, 600, 1000, "[]", "{\"h:1\": 0}", 0, 2, o, 4, &e);
    assert_int_equal(n, pg_url ? 0 : 1);
    if (n == 1) {
        assert_int_equal(o[0].id, w3);
        assert_true(store_outbox_release(f->s, w3, &e));
    }
    finish_rows(o, n);
    n = store_outbox_claim(f->s, STORE_WEBHOOK, 600, 1000, "[]", "{\"h:1\": 0}", 0, 0, o, 4, &e);
    assert_int_equal(n, 1);
    assert_int_equal(o[0].id, w3);
    finish_rows(o, n);
    n = store_outbox_claim(f->s, STORE_WEBHOOK, 600, 1000, "[1,2,3]", "{}", 0, 3, o, 4, &e);
    assert_int_equal(n, 2 - (w1 <= 3) - (w2 <= 3)); /* (w3 claimed; ids left out) */
    finish_rows(o, n);
    assert_true(store_outbox_release(f->s, w1, &e));
    assert_true(store_outbox_release(f->s, w2, &e));
    assert_true(store_outbox_release(f->s, w3, &e));
    n = claim_sorted(f->s, 100, 1000, o, 4);
    assert_int_equal(n, 2);
    assert_int_equal(o[0].id, w1);
    assert_int_equal(o[1].id, w2);
    assert_int_equal(o[0].seat, 2);
    assert_int_equal(o[0].deadline, 777);
    assert_string_equal(o[0].destination, "h:1");
    assert_string_equal(o[0].body, "");
    finish_rows(o, n);
    assert_int_equal(claim_sorted(f->s, 100, 1000, o, 4), 0); /* claimed */
    int64_t when = 0;
    assert_true(store_outbox_next(f->s, STORE_WEBHOOK, &when, &e));
    assert_int_equal(when, 50); /* (claims are not looked at) */
    assert_true(store_outbox_release(f->s, w2, &e));
    n = claim_sorted(f->s, 100, 1000, o, 4);
    assert_int_equal(n, 1);
    assert_int_equal(o[0].id, w2);
    finish_rows(o, n);
    n = claim_sorted(f->s, 1000, 2000, o, 4); /* the leases ran out; w3 is due too */
    assert_int_equal(n, 3);
    finish_rows(o, n);

    /* w1 and w2 could not connect: held; w4 (same destination) got a 503: not held. */
    struct store_attempt refused = {.at = 1100, .unreachable = true, .duration_ms = 1};
    snprintf(refused.error, sizeof refused.error, "Couldn't connect to server");
    assert_true(store_outbox_record(f->s, w1, &refused, STORE_PENDING, 1, 300000, &e));
    assert_true(store_outbox_record(f->s, w2, &refused, STORE_PENDING, 1, 300000, &e));
    int64_t w4 = add_held_note(f->s, ann, "msg_c4", 1100, "h:1");
    struct store_attempt busy = {.at = 1100, .status = 503, .duration_ms = 1};
    assert_true(store_outbox_record(f->s, w4, &busy, STORE_PENDING, 1, 300000, &e));
    assert_true(store_outbox_record(f->s, w3, &refused, STORE_PENDING, 1, 300000, &e));
    assert_int_equal(claim_sorted(f->s, 1200, 9000, o, 4), 0); /* (all waiting) */
    int64_t w5 = add_held_note(f->s, bo, "msg_c5", 1200, "h:1");
    struct store_attempt sent = {.at = 1300, .ok = true, .status = 204, .duration_ms = 1};
    assert_true(store_outbox_record(f->s, w5, &sent, STORE_DELIVERED, 1, 0, &e));
    assert_int_equal(next_of(f->s, w1), 1300); /* held for h:1: due now */
    assert_int_equal(next_of(f->s, w2), 1300);
    assert_int_equal(next_of(f->s, w4), 300000); /* answered 503: its own backoff */
    assert_int_equal(next_of(f->s, w3), 300000); /* held for another destination */
    n = claim_sorted(f->s, 1300, 9000, o, 4);
    assert_int_equal(n, 2);
    assert_int_equal(o[0].id, w1);
    assert_int_equal(o[1].id, w2);
    finish_rows(o, n);
    assert_true(store_outbox_record(f->s, w1, &sent, STORE_DELIVERED, 2, 0, &e));

    /* A claim left at start: SQLite's is a dead process's; PostgreSQL's may be alive. */
    assert_true(store_outbox_claims_reset(f->s, &e));
    n = claim_sorted(f->s, 1400, 9000, o, 4);
    assert_int_equal(n, pg_url ? 0 : 1);
    finish_rows(o, n);

    /* A destination found unreachable keeps its rows held for it and due again (w7) waiting,
     * not one never tried (w8) nor one it answered (w9: a 503). */
    int64_t w6 = add_held_note(f->s, ann, "msg_c6", 5000, "h:9");
    int64_t w7 = add_held_note(f->s, bo, "msg_c7", 5000, "h:9");
    int64_t w8 = add_held_note(f->s, bo, "msg_c8", 5000, "h:9");
    int64_t w9 = add_held_note(f->s, bo, "msg_c9", 5000, "h:9");
    struct store_attempt refused1 = {.at = 5000, .unreachable = true, .duration_ms = 1};
    assert_true(store_outbox_record(f->s, w7, &refused1, STORE_PENDING, 1, 5100, &e));
    struct store_attempt busy2 = {.at = 5000, .status = 503, .duration_ms = 1};
    assert_true(store_outbox_record(f->s, w9, &busy2, STORE_PENDING, 1, 5100, &e));
    struct store_attempt refused2 = {.at = 6000, .unreachable = true, .duration_ms = 1};
    assert_true(store_outbox_record(f->s, w6, &refused2, STORE_PENDING, 1, 9000, &e));
    assert_int_equal(next_of(f->s, w7), 9000);
    assert_int_equal(next_of(f->s, w8), 5000);
    assert_int_equal(next_of(f->s, w9), 5100);
    struct store_attempt sent2 = {.at = 6100, .ok = true, .status = 204, .duration_ms = 1};
    assert_true(store_outbox_record(f->s, w8, &sent2, STORE_DELIVERED, 1, 0, &e));
    assert_int_equal(next_of(f->s, w6), 6100); /* both held: due at the success */
    assert_int_equal(next_of(f->s, w7), 6100);
}

/* SQLite writes a notification to outbox_fresh, not to outbox (migration 0020): every read
 * of a row sees it there all the same (by id, a player's listing, the backlog, when the
 * next falls due), and a claim that comes back short takes the oldest fresh rows into outbox
 * (64 at most, the same ids) when some are for its channel and a destination with room,
 * and takes only those; a row's ids never repeat, fresh or not, after a take left
 * outbox_fresh empty. */
static void test_outbox_fresh(void **state)
{
    struct fixture *f = *state;
    if (pg_url)
        skip();
    struct err e;
    int64_t ann = add_player(f->s, "ann", 1);
    int64_t first = add_held_note(f->s, ann, "msg_f1", 30, "a:1");
    int64_t second = add_held_note(f->s, ann, "msg_f2", 20, "a:1");
    add_note(f->s, ann, STORE_EMAIL, "msg_f3", 40);
    assert_int_equal(peek_int(f, "SELECT count(*) FROM outbox_fresh"), 3);
    assert_int_equal(peek_int(f, "SELECT count(*) FROM outbox"), 0);
    struct store_outbox o[8];
    assert_true(store_outbox_get(f->s, second, &o[0], &e));
    assert_int_equal(o[0].status, STORE_PENDING);
    assert_int_equal(o[0].next_attempt, 20);
    assert_string_equal(o[0].destination, "a:1");
    store_outbox_finish(&o[0]);
    assert_int_equal(store_outbox_of_player(f->s, ann, 0, o, 8, &e), 3);
    finish_rows(o, 3);
    int64_t pending[2], dead[2], when = 0;
    assert_true(store_outbox_backlog(f->s, pending, dead, &e));
    assert_int_equal(pending[STORE_WEBHOOK], 2);
    assert_int_equal(pending[STORE_EMAIL], 1);
    assert_true(store_outbox_next(f->s, STORE_WEBHOOK, &when, &e));
    assert_int_equal(when, 20);
    assert_true(store_outbox_next(f->s, STORE_EMAIL, &when, &e));
    assert_int_equal(when, 40);
    assert_true(store_outbox_redeliver(f->s, first, 50, &e)); /* (pending already) */

    /* A claim: nothing in outbox, so the fresh rows of its channel are taken, then claimed
     * in due order; the email's waits for a claim of emails. */
    int n = store_outbox_claim(f->s, STORE_WEBHOOK, 100, 5000, "[]", "{}", 0, 64, o, 1, &e);
    assert_int_equal(n, 1);
    assert_int_equal(o[0].id, second);
    finish_rows(o, n);
    assert_int_equal(peek_int(f, "SELECT count(*) FROM outbox_fresh"), 1);
    assert_int_equal(peek_int(f, "SELECT count(*) FROM outbox"), 2);
    n = store_outbox_claim(f->s, STORE_EMAIL, 100, 5000, "[]", "{}", 0, 8, o, 8, &e);
    assert_int_equal(n, 1);
    assert_int_equal(o[0].channel, STORE_EMAIL);
    finish_rows(o, n);
    assert_int_equal(peek_int(f, "SELECT count(*) FROM outbox_fresh"), 0);
    assert_true(store_outbox_get(f->s, first, &o[0], &e)); /* (the same id) */
    assert_string_equal(o[0].webhook_id, "msg_f1");
    store_outbox_finish(&o[0]);

    /* A destination without room: its fresh rows stay fresh however short the claim (what
     * is fresh read from the table by a new connection), and a row of another destination
     * is taken past them. The ids go on past outbox's. */
    add_backlog(f->s, ann, 2);
    reopen(f);
    const char *full = "{\"busy:1\": 0, \"a:1\": 0}";
    int n2 = store_outbox_claim(f->s, STORE_WEBHOOK, 100, 5000, "[]", full, 0, 64, o, 4, &e);
    assert_int_equal(n2, 0);
    assert_int_equal(peek_int(f, "SELECT count(*) FROM outbox_fresh"), 2);
    int64_t next = add_held_note(f->s, ann, "msg_f4", 10, "b:1");
    assert_true(next > first && next > second);
    n = store_outbox_claim(f->s, STORE_WEBHOOK, 100, 5000, "[]", full, 0, 64, o, 4, &e);
    assert_int_equal(n, 1);
    assert_int_equal(o[0].id, next);
    finish_rows(o, n);
    assert_int_equal(peek_int(f, "SELECT count(*) FROM outbox_fresh"), 2);
    assert_int_equal(peek_int(f, "SELECT count(*) FROM outbox WHERE destination = 'busy:1'"), 0);
    /* once it has room, they are taken */
    n = store_outbox_claim(f->s, STORE_WEBHOOK, 100, 5000, "[]", "{\"a:1\": 0}", 0, 64, o, 4,
                           &e);
    assert_int_equal(n, 2);
    finish_rows(o, n);
    assert_int_equal(peek_int(f, "SELECT count(*) FROM outbox_fresh"), 0);

    /* A record of a row never claimed takes it out of outbox_fresh (its attempt's reference
     * holds). */
    int64_t last = add_held_note(f->s, ann, "msg_f5", 10, "c:1");
    assert_true(last > next);
    struct store_attempt failed = {.at = 110, .ok = false, .status = 500, .duration_ms = 1};
    assert_true(store_outbox_record(f->s, last, &failed, STORE_PENDING, 1, 9000, &e));
    assert_int_equal(peek_int(f, "SELECT count(*) FROM outbox_fresh"), 0);
    assert_true(store_outbox_get(f->s, last, &o[0], &e));
    assert_int_equal(o[0].attempts, 1);
    assert_int_equal(o[0].next_attempt, 9000);
    store_outbox_finish(&o[0]);
}

/* What outbox_fresh holds is counted by destination on the writing connection: through
 * many destinations come and gone (the count's table made again without them), a full
 * destination's row stays fresh while the others' are taken, and is taken once it has room. */
static void test_outbox_fresh_destinations(void **state)
{
    struct fixture *f = *state;
    if (pg_url)
        skip();
    struct err e;
    int64_t ann = add_player(f->s, "ann", 1);
    struct store_outbox o[64];
    const char *full = "{\"d0:1\": 0}";
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 30; i++) {
            char id[32], dest[32];
            snprintf(id, sizeof id, "msg_%d_%d", round, i);
            snprintf(dest, sizeof dest, "d%d:%d", i ? round * 100 + i : 0, i ? 2 : 1);
            add_held_note(f->s, ann, id, 10, dest);
        }
        int n = store_outbox_claim(f->s, STORE_WEBHOOK, 100, 5000, "[]", full, 0, 64, o, 64,
                                   &e);
        assert_int_equal(n, 29); /* (every destination's but d0:1's) */
        for (int i = 0; i < n; i++)
            assert_string_not_equal(o[i].destination, "d0:1");
        finish_rows(o, n);
        assert_int_equal(peek_int(f, "SELECT count(*) FROM outbox_fresh"), round + 1);
    }
    int n = store_outbox_claim(f->s, STORE_WEBHOOK, 100, 5000, "[]", "{}", 0, 64, o, 64, &e);
    assert_int_equal(n, 3);
    finish_rows(o, n);
    assert_int_equal(peek_int(f, "SELECT count(*) FROM outbox_fresh"), 0);
}

/* A take undone with its savepoint leaves its rows fresh, and what the connection counted of
 * them is read again: the next claim takes them. */
static void test_outbox_fresh_undone(void **state)
{
    struct fixture *f = *state;
    if (pg_url)
        skip();
    struct err e;
    int64_t ann = add_player(f->s, "ann", 1);
    int64_t row = add_held_note(f->s, ann, "msg_u1", 10, "u:1");
    struct store_outbox o[4];
    assert_true(store_begin(f->s, &e));
    assert_true(store_savepoint(f->s, &e));
    int n = store_outbox_claim(f->s, STORE_WEBHOOK, 100, 5000, "[]", "{}", 0, 64, o, 4, &e);
    assert_int_equal(n, 1);
    finish_rows(o, n);
    assert_true(store_rollback_to(f->s, &e));
    assert_true(store_commit(f->s, &e));
    assert_int_equal(peek_int(f, "SELECT count(*) FROM outbox_fresh"), 1);
    n = store_outbox_claim(f->s, STORE_WEBHOOK, 100, 5000, "[]", "{}", 0, 64, o, 4, &e);
    assert_int_equal(n, 1);
    assert_int_equal(o[0].id, row);
    finish_rows(o, n);
}

/* A success releases the rows held for its destination STORE_RECOVER_BATCH at a time, those
 * due first; the next success the next ones: a long outage's backlog is never one update that
 * holds up the commits behind it. Another destination's held rows stay held. */
static void test_outbox_recover_in_batches(void **state)
{
    struct fixture *f = *state;
    struct err e;
    int64_t ann = add_player(f->s, "ann", 1);
    int held = STORE_RECOVER_BATCH + 88;
    for (int i = 0; i < held; i++) {
        char id[32];
        snprintf(id, sizeof id, "msg_down%d", i);
        add_held_note(f->s, ann, id, 100000 - i, "down:1"); /* (the last written due first) */
    }
    add_held_note(f->s, ann, "msg_other", 5, "other:1");
    settle(f);
    peek_exec(f, pg_url ? "UPDATE outbox SET webhook_held = true"
                        : "UPDATE outbox SET webhook_held = 1");
    const char *still_held =
        "SELECT count(*) FROM outbox WHERE webhook_held AND destination = 'down:1'";
    assert_int_equal(peek_int(f, still_held), held);

    int64_t probe = add_held_note(f->s, ann, "msg_probe1", 10, "down:1");
    struct store_attempt sent = {.at = 200000, .ok = true, .status = 204, .duration_ms = 1};
    assert_true(store_outbox_record(f->s, probe, &sent, STORE_DELIVERED, 1, 0, &e));
    assert_int_equal(peek_int(f, "SELECT count(*) FROM outbox WHERE webhook_next = 200000"),
                     STORE_RECOVER_BATCH);
    assert_int_equal(peek_int(f, still_held), held - STORE_RECOVER_BATCH);
    assert_int_equal(peek_int(f, "SELECT min(webhook_next) FROM outbox WHERE webhook_held"),
                     5); /* (the other destination's) */
    assert_int_equal(peek_int(f, "SELECT min(webhook_next) FROM outbox WHERE webhook_held AND"
                                 " destination = 'down:1'"),
                     100000 - held + 1 + STORE_RECOVER_BATCH);

    probe = add_held_note(f->s, ann, "msg_probe2", 10, "down:1");
    sent.at = 200100;
    assert_true(store_outbox_record(f->s, probe, &sent, STORE_DELIVERED, 1, 0, &e));
    assert_int_equal(peek_int(f, "SELECT count(*) FROM outbox WHERE webhook_next = 200100"),
                     held - STORE_RECOVER_BATCH);
    assert_int_equal(peek_int(f, still_held), 0);
    assert_int_equal(peek_int(f, "SELECT count(*) FROM outbox WHERE webhook_held"), 1);
}

/* SQLite's plan for `sql` on a separate connection: its steps' details, "; " between. */
static void plan_of(const struct fixture *f, const char *sql, char *out, size_t size)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open_v2(f->path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    char *explain = sqlite3_mprintf("EXPLAIN QUERY PLAN %s", sql);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, explain, -1, &st, NULL), SQLITE_OK);
    size_t at = 0;
    out[0] = '\0';
    while (sqlite3_step(st) == SQLITE_ROW && at < size)
        at += (size_t)snprintf(out + at, size - at, "%s; ", sqlite3_column_text(st, 3));
    sqlite3_finalize(st);
    sqlite3_free(explain);
    sqlite3_close(db);
}

/* The rows held for an unreachable destination and due by a time are found by a seek to them
 * (migration 0019), not by reading every row held for it: a failed try during an outage
 * holds the rows due with it, and with the held flag (emails) or the destination (webhooks)
 * alone as the key, each such try read the outage's whole backlog (docs/benchmarks.md
 * "A receiver down"). */
static void test_outbox_held_by_due(void **state)
{
    struct fixture *f = *state;
    if (pg_url)
        skip(); /* (SQLite's plans; PostgreSQL's 0019 is the same index) */
    char plan[512];
    plan_of(f,
            "UPDATE outbox INDEXED BY outbox_email_held SET email_next = 9 WHERE email_held = 1"
            " AND email_status = 'pending' AND email_next <= 5",
            plan, sizeof plan);
    assert_non_null(strstr(plan, "USING INDEX outbox_email_held (email_next<?)"));
    plan_of(f,
            "UPDATE outbox INDEXED BY outbox_webhook_held SET webhook_next = 9 WHERE"
            " webhook_held = 1 AND webhook_status = 'pending' AND webhook_next <= 5 AND"
            " destination = 'h:1'",
            plan, sizeof plan);
    assert_non_null(
        strstr(plan, "USING INDEX outbox_webhook_held (destination=? AND webhook_next<?)"));
}

/* A record made on a thread of its own, and whether it ended (test_outbox_record_skips_held). */
struct record_call {
    struct store *s;
    int64_t id;
    struct store_attempt a;
    int status;
    int64_t next;
    bool ok;
    atomic_bool done;
};

static void *record_thread(void *arg)
{
    struct record_call *r = arg;
    struct err e;
    r->ok = store_outbox_record(r->s, r->id, &r->a, r->status, 1, r->next, &e);
    atomic_store(&r->done, true);
    return NULL;
}

/* Record `r` while `holder` keeps a row locked in its open transaction: whether it ended
 * within two seconds without waiting for the holder (which then rolls back either way, so
 * that a record that waits ends too). */
static bool record_beside_lock(struct record_call *r, PGconn *holder)
{
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, record_thread, r), 0);
    struct timespec nap = {.tv_nsec = 10 * 1000000};
    for (int i = 0; i < 200 && !atomic_load(&r->done); i++)
        nanosleep(&nap, NULL);
    bool alone = atomic_load(&r->done);
    PQclear(PQexec(holder, "ROLLBACK"));
    assert_int_equal(pthread_join(t, NULL), 0);
    return alone && r->ok;
}

/* Lock row `id` (a delivery's id) in a transaction left open on `holder`. */
static void hold_row(PGconn *holder, int64_t id)
{
    char sql[128];
    snprintf(sql, sizeof sql,
             "BEGIN; UPDATE outbox SET webhook_error = webhook_error WHERE id = %lld",
             (long long)(id >> 1));
    PGresult *r = PQexec(holder, sql);
    assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
    PQclear(r);
}

/* PostgreSQL: a record's updates of its destination's other rows (unreachable: the rows held
 * and due wait with it; a success: they are due now) take only the rows no other transaction
 * holds, and never wait for one: two records of one destination's rows at once, each holding
 * its own row and wanting the other's, were a deadlock the server breaks after a second,
 * with every write of the process queued behind it (CI once saw a move of 1000 ms; perhaps
 * this). A row left out keeps its time. */
static void test_outbox_record_skips_held(void **state)
{
    struct fixture *f = *state;
    if (!pg_url)
        skip(); /* (SQLite: one writer, no row locks) */
    struct err e;
    int64_t ann = add_player(f->s, "ann", 1);
    int64_t a = add_held_note(f->s, ann, "msg_k1", 100, "h:5");
    int64_t b = add_held_note(f->s, ann, "msg_k2", 100, "h:5");
    int64_t c = add_held_note(f->s, ann, "msg_k3", 100, "h:5");
    struct store_attempt refused = {.at = 100, .unreachable = true, .duration_ms = 1};
    snprintf(refused.error, sizeof refused.error, "Couldn't connect to server");
    assert_true(store_outbox_record(f->s, b, &refused, STORE_PENDING, 1, 150, &e));
    assert_true(store_outbox_record(f->s, c, &refused, STORE_PENDING, 1, 150, &e));
    assert_int_equal(next_of(f->s, b), 150); /* (held, due again at 150) */

    PGconn *holder = pg_connect();
    hold_row(holder, c);
    struct record_call r = {.s = f->s, .id = a, .status = STORE_PENDING, .next = 9000};
    r.a = refused;
    r.a.at = 200;
    assert_true(record_beside_lock(&r, holder));
    assert_int_equal(next_of(f->s, b), 9000); /* waits with a */
    assert_int_equal(next_of(f->s, c), 150);  /* held by another: left as it was */

    hold_row(holder, b);
    struct record_call ok = {.s = f->s, .id = a, .status = STORE_DELIVERED};
    ok.a = (struct store_attempt){.at = 300, .ok = true, .status = 204, .duration_ms = 1};
    assert_true(record_beside_lock(&ok, holder));
    assert_int_equal(next_of(f->s, c), 300);  /* due now */
    assert_int_equal(next_of(f->s, b), 9000); /* held by another: left as it was */
    PQfinish(holder);
}

/* A settle (store_outbox_settle) on a thread of its own, on a connection of its own. */
struct settle_call {
    struct store *s;
    struct store_settle rows[3];
    int n;
    bool ok;
    struct err e;
};

static void *settle_thread(void *arg)
{
    struct settle_call *c = arg;
    c->ok = store_outbox_settle(c->s, c->rows, c->n, &c->e);
    return NULL;
}

/* Wait until `n` sessions of the database wait for a lock (within five seconds). */
static void wait_lock_waiters(PGconn *db, int n)
{
    struct timespec nap = {.tv_nsec = 10 * 1000000};
    for (int i = 0; i < 500; i++) {
        PGresult *r = PQexec(db, "SELECT count(*) FROM pg_stat_activity WHERE"
                                 " wait_event_type = 'Lock' AND datname = current_database()");
        int waiting = PQresultStatus(r) == PGRES_TUPLES_OK ? atoi(PQgetvalue(r, 0, 0)) : -1;
        PQclear(r);
        if (waiting >= n)
            return;
        nanosleep(&nap, NULL);
    }
    fail_msg("%d sessions never waited for a lock", n);
}

/* PostgreSQL: two settles of the same rows at once, in opposite orders (the email worker's
 * records and the webhook worker's, whose channels share a row), never wait for each other:
 * each takes its rows first, in the order of their ids. Here the first holds row b and
 * waits for c (held by a third session) when the second takes a and waits for b; the
 * first, let go, then wants a: a deadlock, one of them undone after a second, when the
 * rows are taken as the records come (CI saw it: a move waited 1,005 ms behind it). */
static void test_outbox_settle_in_one_order(void **state)
{
    struct fixture *f = *state;
    if (!pg_url)
        skip(); /* (SQLite: one writer, no row locks) */
    struct err e;
    int64_t ann = add_player(f->s, "ann", 1);
    int64_t id[3];
    for (int i = 0; i < 3; i++) {
        struct store_outbox o = {.player = ann, .seq = 4 + i, .body = "", .seat = 2,
                                 .next_attempt = 100, .created_at = 10,
                                 .channels = STORE_CHANNEL_BIT(STORE_EMAIL) |
                                             STORE_CHANNEL_BIT(STORE_WEBHOOK)};
        snprintf(o.type, sizeof o.type, "turn");
        snprintf(o.webhook_id, sizeof o.webhook_id, "msg_o%d", i);
        snprintf(o.destination, sizeof o.destination, "h:6");
        assert_true(store_outbox_add(f->s, &o, &e));
        id[i] = o.id; /* (its email's: the row's webhook is id + 1) */
    }
    int64_t a = id[0], b = id[1], c = id[2];
    struct store_attempt sent = {.at = 200, .ok = true, .status = 250, .duration_ms = 1};
    struct settle_call email = {.s = store_open(f->path, &e), .n = 3};
    struct settle_call hook = {.s = store_open(f->path, &e), .n = 2};
    assert_non_null(email.s);
    assert_non_null(hook.s);
    int64_t order[3] = {b, c, a};
    for (int i = 0; i < 3; i++)
        email.rows[i] = (struct store_settle){order[i], &sent, STORE_DELIVERED, 1, 0};
    hook.rows[0] = (struct store_settle){a + 1, &sent, STORE_DELIVERED, 1, 0};
    hook.rows[1] = (struct store_settle){b + 1, &sent, STORE_DELIVERED, 1, 0};

    PGconn *holder = pg_connect();
    hold_row(holder, c);
    pthread_t t1, t2;
    assert_int_equal(pthread_create(&t1, NULL, settle_thread, &email), 0);
    wait_lock_waiters(holder, 1);
    assert_int_equal(pthread_create(&t2, NULL, settle_thread, &hook), 0);
    wait_lock_waiters(holder, 2);
    PQclear(PQexec(holder, "COMMIT"));
    assert_int_equal(pthread_join(t1, NULL), 0);
    assert_int_equal(pthread_join(t2, NULL), 0);
    if (!email.ok || !hook.ok)
        fail_msg("a settle failed: %s", !email.ok ? email.e.msg : hook.e.msg);
    for (int i = 0; i < 3; i++) {
        struct store_outbox o;
        assert_true(store_outbox_get(f->s, id[i], &o, &e));
        assert_int_equal(o.status, STORE_DELIVERED);
        store_outbox_finish(&o);
        if (i < 2) {
            assert_true(store_outbox_get(f->s, id[i] + 1, &o, &e));
            assert_int_equal(o.status, STORE_DELIVERED);
            store_outbox_finish(&o);
        }
    }
    store_close(email.s);
    store_close(hook.s);
    PQfinish(holder);
}

/* ---- Leagues --------------------------------------------------------------------------- */

static void seatings_count(void *ctx, const int64_t *players, int n)
{
    int *count = ctx;
    (void)players;
    *count += n;
}

/* A player's leagues: organised, played in, invited to; newest first; a left one is gone. */
static void test_player_leagues(void **state)
{
    struct fixture *f = *state;
    struct err e;
    int64_t ann = add_player(f->s, "ann", 1), bo = add_player(f->s, "bo", 2);
    int64_t cy = add_player(f->s, "cy", 3), di = add_player(f->s, "di", 4);
    struct store_league a = {.name = "A", .game = "snag", .options = "{\"seats\":2}",
                             .points = "[1,0]", .organizer = ann, .created_at = 100};
    struct store_league b = a;
    b.name = "B";
    b.organizer = cy;
    assert_true(store_league_insert(f->s, &a, &e));
    assert_true(store_league_insert(f->s, &b, &e));
    assert_true(store_member_add(f->s, a.id, bo, 110, &e));
    assert_true(store_member_add(f->s, b.id, bo, 111, &e));
    assert_true(store_member_leave(f->s, b.id, bo, 112, &e));
    assert_true(store_invitation_add(f->s, a.id, cy, 120, &e));
    assert_true(store_member_add(f->s, b.id, cy, 121, &e));

    struct store_league out[4];
    unsigned roles[4];
    /* ann organises A without playing in it. */
    assert_int_equal(store_player_leagues(f->s, ann, out, roles, 4, &e), 1);
    assert_int_equal(out[0].id, a.id);
    assert_int_equal(roles[0], 0);
    assert_int_equal(out[0].members, 1);
    store_league_finish(&out[0]);
    /* bo plays in A; he left B. */
    assert_int_equal(store_player_leagues(f->s, bo, out, roles, 4, &e), 1);
    assert_int_equal(out[0].id, a.id);
    assert_int_equal(roles[0], STORE_LEAGUE_MEMBER);
    store_league_finish(&out[0]);
    /* cy organises and plays in B (the newer, first) and is invited to A. */
    assert_int_equal(store_player_leagues(f->s, cy, out, roles, 4, &e), 2);
    assert_int_equal(out[0].id, b.id);
    assert_int_equal(roles[0], STORE_LEAGUE_MEMBER);
    assert_string_equal(out[0].name, "B");
    assert_int_equal(out[1].id, a.id);
    assert_int_equal(roles[1], STORE_LEAGUE_INVITED);
    store_league_finish(&out[0]);
    store_league_finish(&out[1]);
    assert_int_equal(store_player_leagues(f->s, cy, out, roles, 1, &e), 1);
    store_league_finish(&out[0]);
    assert_int_equal(store_player_leagues(f->s, di, out, roles, 4, &e), 0);
}

/* A count of a league's matches on a thread of its own, inside a write of its own store. */
struct count_call {
    struct store *s;
    int64_t league, n;
    bool ok;
    atomic_bool done;
};

static void *count_thread(void *arg)
{
    struct count_call *c = arg;
    struct err e;
    c->ok = store_begin(c->s, &e) && store_league_take(c->s, c->league, &e) &&
            store_league_match_count(c->s, c->league, &c->n, &e);
    store_rollback(c->s);
    atomic_store(&c->done, true);
    return NULL;
}

/* What a write counts of a league after taking it stays true until its transaction ends:
 * on PostgreSQL a second write that takes the league waits for the first write's end and
 * counts the match it added (counted at once, it would find room the first had just
 * taken). SQLite has one writer. */
static void test_league_take(void **state)
{
    struct fixture *f = *state;
    if (!pg_url)
        skip(); /* (SQLite: one writer) */
    struct err e;
    int64_t ann = add_player(f->s, "ann", 1), bo = add_player(f->s, "bo", 2);
    struct store_league l = {.name = "L", .game = "snag", .options = "{\"seats\":2}",
                             .points = "[1,0]", .organizer = ann, .created_at = 100};
    assert_true(store_league_insert(f->s, &l, &e));
    int64_t n = -1;
    assert_true(store_begin(f->s, &e));
    assert_true(store_league_take(f->s, l.id, &e));
    assert_true(store_league_match_count(f->s, l.id, &n, &e));
    assert_int_equal(n, 0);
    struct store_match x = {.game = "snag", .options = "{}", .seats = 2, .created_at = 200,
                            .league = l.id, .to_move = "[0]", .totals = "[0,0]",
                            .players = {ann, bo}};
    assert_true(store_match_insert(f->s, &x, &e));

    struct count_call c = {.s = store_open(f->path, &e), .league = l.id, .n = -1};
    assert_non_null(c.s);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, count_thread, &c), 0);
    struct timespec nap = {.tv_nsec = 10 * 1000000};
    for (int i = 0; i < 30 && !atomic_load(&c.done); i++)
        nanosleep(&nap, NULL);
    bool waited = !atomic_load(&c.done);
    assert_true(store_commit(f->s, &e));
    assert_int_equal(pthread_join(t, NULL), 0);
    store_close(c.s);
    assert_true(waited);
    assert_true(c.ok);
    assert_int_equal(c.n, 1);
}

/* A league with members, invitations, matches and standings, on both backends alike. */
static void test_leagues(void **state)
{
    struct fixture *f = *state;
    struct err e;
    int64_t ann = add_player(f->s, "ann", 1), bo = add_player(f->s, "bo", 2);
    int64_t cy = add_player(f->s, "cy", 3);
    struct store_league l = {.name = "Tuesday", .game = "snag", .options = "{\"seats\":2}",
                             .points = "[3,0]", .organizer = ann, .created_at = 100};
    assert_true(store_league_insert(f->s, &l, &e));
    assert_true(l.id > 0);
    struct store_league got;
    assert_true(store_league_get(f->s, l.id, &got, &e));
    assert_string_equal(got.name, "Tuesday");
    assert_null(got.clock);
    assert_int_equal(got.organizer, ann);
    store_league_finish(&got);
    assert_false(store_league_get(f->s, l.id + 1, &got, &e));
    assert_int_equal(e.code, ERR_NOT_FOUND);

    assert_true(store_member_add(f->s, l.id, ann, 110, &e));
    assert_true(store_member_add(f->s, l.id, bo, 120, &e));
    assert_false(store_member_add(f->s, l.id, bo, 121, &e));
    assert_string_equal(e.tag, "already_member");
    bool current = false;
    assert_true(store_member_is(f->s, l.id, bo, &current, &e) && current);
    assert_false(store_member_is(f->s, l.id, cy, &current, &e));
    assert_int_equal(e.code, ERR_NOT_FOUND);
    assert_true(store_invitation_add(f->s, l.id, cy, 130, &e));
    assert_false(store_invitation_add(f->s, l.id, cy, 131, &e));
    assert_string_equal(e.tag, "already_invited");
    struct store_member m[4];
    assert_int_equal(store_invitations(f->s, l.id, m, 4, &e), 1);
    assert_int_equal(m[0].player, cy);
    assert_string_equal(m[0].name, "cy");
    store_member_finish(&m[0]);
    int64_t size = 0;
    assert_true(store_league_size(f->s, l.id, &size, &e));
    assert_int_equal(size, 3);
    assert_true(store_invitation_drop(f->s, l.id, cy, &e));
    assert_false(store_invitation_drop(f->s, l.id, cy, &e));
    assert_int_equal(e.code, ERR_NOT_FOUND);
    assert_true(store_member_leave(f->s, l.id, bo, 140, &e));
    assert_false(store_member_leave(f->s, l.id, bo, 141, &e));
    assert_int_equal(e.code, ERR_NOT_FOUND);
    assert_int_equal(store_members(f->s, l.id, m, 4, &e), 2);
    assert_int_equal(m[0].player, ann);
    assert_int_equal(m[0].left_at, 0);
    assert_int_equal(m[1].player, bo);
    assert_int_equal(m[1].left_at, 140);
    store_member_finish(&m[0]);
    store_member_finish(&m[1]);
    assert_true(store_member_add(f->s, l.id, bo, 150, &e)); /* back again */
    assert_true(store_member_is(f->s, l.id, bo, &current, &e) && current);

    int64_t ids[3];
    for (int i = 0; i < 3; i++) {
        int64_t seats[2] = {ann, i == 2 ? cy : bo};
        struct store_match x = {.game = "snag", .options = "{}", .seats = 2, .created_at = 200,
                                .league = l.id, .finished = i == 0, .to_move = "[0]",
                                .totals = "[0,0]"};
        memcpy(x.players, seats, sizeof seats);
        assert_true(store_match_insert(f->s, &x, &e));
        ids[i] = x.id;
    }
    int64_t out[4];
    assert_int_equal(store_league_matches(f->s, l.id, 0, false, 0, out, 4, &e), 3);
    assert_int_equal(out[0], ids[2]); /* newest first */
    assert_int_equal(store_league_matches(f->s, l.id, 0, true, 0, out, 4, &e), 2);
    assert_int_equal(store_league_matches(f->s, l.id, cy, false, 0, out, 4, &e), 1);
    assert_int_equal(out[0], ids[2]);
    assert_int_equal(store_league_matches(f->s, l.id, 0, false, ids[2], out, 4, &e), 2);
    assert_int_equal(out[0], ids[1]);
    int64_t count = 0;
    assert_true(store_league_match_count(f->s, l.id, &count, &e));
    assert_int_equal(count, 3);
    l.members = l.matches_active = l.matches_finished = -1;
    assert_true(store_league_counts(f->s, &l, &e));
    assert_int_equal(l.members, 2);
    assert_int_equal(l.matches_active, 2);
    assert_int_equal(l.matches_finished, 1);
    struct store_league list[2];
    assert_int_equal(store_leagues(f->s, list, 2, &e), 1);
    assert_int_equal(list[0].matches_finished, 1);
    store_league_finish(&list[0]);
    int seated = 0;
    assert_true(store_league_seatings(f->s, l.id, seatings_count, &seated, &e));
    assert_int_equal(seated, 6);

    struct store_standing st;
    assert_true(store_standing_get(f->s, l.id, ann, &st, &e));
    assert_int_equal(st.played, 0);
    assert_true(st.rating == 1500);
    struct store_standing rows[] = {
        {.player = ann, .played = 2, .won = 1, .lost = 1, .points = 3, .points_for = 10,
         .points_against = 30, .rating = 1510.25},
        {.player = bo, .played = 1, .won = 1, .points = 3, .points_for = 20,
         .points_against = 5, .rating = 1490.5},
        {.player = cy, .played = 1, .lost = 1, .points = 0.5, .rating = 1499.125},
    };
    for (int i = 0; i < 3; i++)
        assert_true(store_standing_put(f->s, l.id, &rows[i], &e));
    rows[2].points = 0.75; /* put replaces */
    assert_true(store_standing_put(f->s, l.id, &rows[2], &e));
    struct store_standing table[4];
    assert_int_equal(store_standings(f->s, l.id, false, table, 4, &e), 3);
    assert_int_equal(table[0].player, bo); /* +15 before -20 */
    assert_string_equal(table[0].name, "bo");
    assert_int_equal(table[1].player, ann);
    assert_true(table[1].rating == 1510.25);
    assert_true(table[2].points == 0.75);
    for (int i = 0; i < 3; i++)
        store_standing_finish(&table[i]);
    assert_int_equal(store_standings(f->s, l.id, true, table, 4, &e), 3);
    assert_int_equal(table[0].player, ann); /* low wins: fewer points taken comes first */
    for (int i = 0; i < 3; i++)
        store_standing_finish(&table[i]);
}

/* ---- Matches ------------------------------------------------------------------------- */

static void test_matches(void **state)
{
    struct fixture *f = *state;
    int64_t ps[4];
    const char *names[4] = {"ann", "bo", "", "dee"};
    for (int i = 0; i < 4; i++)
        ps[i] = add_player(f->s, names[i], (uint8_t)(0x40 + i));
    int64_t id = add_match(f->s, 4, ps);

    struct store_match m;
    struct err e;
    assert_true(store_match_get(f->s, id, &m, &e));
    for (int i = 0; i < 4; i++)
        assert_string_equal(m.names[i], names[i]);
    assert_null(m.names[4]);
    assert_null(m.state); /* none yet */
    assert_int_equal(m.state_len, 0);
    assert_int_equal(m.id, id);
    assert_string_equal(m.game, "hearts");
    assert_string_equal(m.options,
                        "{\"seats\":4,\"target\":100,\"moon\":\"add\",\"first_dealer\":0}");
    assert_int_equal(m.seats, 4);
    for (int i = 0; i < 4; i++)
        assert_int_equal(m.players[i], ps[i]);
    for (int i = 0; i < 32; i++)
        assert_int_equal(m.seed[i], (uint8_t)(i * 7 + 1));
    assert_int_equal(strlen(m.commitment), 64);
    assert_int_equal(m.created_by, 0);
    assert_int_equal(m.created_at, 1700000001);
    assert_false(m.finished);
    assert_int_equal(m.seq, 1);
    assert_string_equal(m.to_move, "[0,1,2,3]");
    assert_string_equal(m.totals, "[0,0,0,0]");
    assert_null(m.result);
    assert_int_equal(m.deadline, 0);
    assert_int_equal(m.finished_at, 0);
    store_match_finish(&m);

    int64_t of[4];
    assert_int_equal(store_matches_of_player(f->s, ps[2], of, 4, &e), 1);
    assert_int_equal(of[0], id);

    struct store_match upd = {.id = id, .finished = true, .seq = 77, .to_move = "[]",
                              .totals = "[26,0,52,100]", .result = "{\"finished\":true}",
                              .deadline = 1800000000, .finished_at = 1800000001};
    assert_true(store_match_update(f->s, &upd, &e));
    assert_true(store_match_get(f->s, id, &m, &e));
    assert_true(m.finished);
    assert_int_equal(m.seq, 77);
    assert_string_equal(m.to_move, "[]");
    assert_string_equal(m.totals, "[26,0,52,100]");
    assert_string_equal(m.result, "{\"finished\":true}");
    assert_int_equal(m.deadline, 1800000000);
    assert_int_equal(m.finished_at, 1800000001);
    assert_string_equal(m.game, "hearts"); /* untouched */
    assert_null(m.state);
    store_match_finish(&m);

    /* the state snapshot: bytes (NULs included) written with an update, kept by an update
     * without one */
    static const uint8_t snap[5] = {1, 0, 2, 0, 3};
    upd.state = (void *)snap;
    upd.state_len = sizeof snap;
    assert_true(store_match_update(f->s, &upd, &e));
    assert_true(store_match_get(f->s, id, &m, &e));
    assert_int_equal(m.state_len, sizeof snap);
    assert_memory_equal(m.state, snap, sizeof snap);
    store_match_finish(&m);
    upd.state = NULL;
    upd.seq = 78;
    assert_true(store_match_update(f->s, &upd, &e));
    assert_true(store_match_get(f->s, id, &m, &e));
    assert_int_equal(m.seq, 78);
    assert_int_equal(m.state_len, sizeof snap);
    assert_memory_equal(m.state, snap, sizeof snap);
    store_match_finish(&m);
    store_match_finish(&m); /* twice: nothing left to free */

    /* clock_kept: seq, to_move, totals and the snapshot are written; the caller vouches for
     * the rest, which SQLite then leaves as they are (their indexes not rewritten at every
     * move) and PostgreSQL writes all the same. Told other values here, to see which. */
    struct store_match kept = {.id = id, .seq = 79, .to_move = "[1]", .totals = "[1,2,3,4]",
                               .deadline = 1900000000, .wake_at = 1900000000,
                               .clock_kept = true, .state = (void *)snap, .state_len = 2};
    assert_true(store_match_update(f->s, &kept, &e));
    assert_true(store_match_get(f->s, id, &m, &e));
    assert_int_equal(m.seq, 79);
    assert_string_equal(m.to_move, "[1]");
    assert_string_equal(m.totals, "[1,2,3,4]");
    assert_int_equal(m.state_len, 2);
    assert_int_equal(m.finished, !pg_url);
    assert_int_equal(m.deadline, pg_url ? 1900000000 : 1800000000);
    assert_int_equal(m.wake_at, pg_url ? 1900000000 : 0);
    if (pg_url)
        assert_null(m.result);
    else
        assert_string_equal(m.result, "{\"finished\":true}");
    store_match_finish(&m);

    assert_false(store_match_get(f->s, id + 1, &m, &e));
    assert_int_equal(e.code, ERR_NOT_FOUND);
    upd.id = id + 1;
    assert_false(store_match_update(f->s, &upd, &e));
    assert_int_equal(e.code, ERR_NOT_FOUND);

    /* and one inserted with its snapshot */
    struct store_match with = {.game = "hearts", .options = "{}", .seats = 4, .created_at = 1,
                               .state = (void *)snap, .state_len = sizeof snap};
    memcpy(with.players, ps, sizeof ps);
    assert_true(store_match_insert(f->s, &with, &e));
    assert_true(store_match_get(f->s, with.id, &m, &e));
    assert_int_equal(m.state_len, sizeof snap);
    assert_memory_equal(m.state, snap, sizeof snap);
    store_match_finish(&m);

    /* one player per seat: the same player twice is refused */
    int64_t twice[4] = {ps[0], ps[0], ps[1], ps[2]};
    struct store_match dup = {.game = "hearts", .options = "{}", .seats = 4, .created_at = 1};
    memcpy(dup.players, twice, sizeof twice);
    assert_false(store_match_insert(f->s, &dup, &e));
    assert_int_equal(e.code, ERR_INVALID);
}

/* ---- Events -------------------------------------------------------------------------- */

struct collected {
    int n;
    int64_t seq[8];
    int kind[8];
    int seat[8];
    char body[8][160];
    bool automatic[8];
    int64_t at[8];
    int stop_after; /* 0: never */
};

static bool collect(void *ctx, const struct store_event *ev, struct err *e)
{
    struct collected *c = ctx;
    if (c->n >= 8)
        return err_set(e, ERR_INVALID, "too_many", "too many events");
    c->seq[c->n] = ev->seq;
    c->kind[c->n] = ev->kind;
    c->seat[c->n] = ev->seat;
    snprintf(c->body[c->n], sizeof c->body[0], "%s", ev->body);
    c->automatic[c->n] = ev->automatic;
    c->at[c->n] = ev->at;
    c->n++;
    if (c->stop_after && c->n == c->stop_after)
        return err_set(e, ERR_INVALID, "stopped", "stopped by the callback");
    return true;
}

/* A pending match's consent columns (migrations/0008-consent.sql): stored, read back, due
 * for expiry, started with its seed, cancelled as finished; league invitations and the
 * pages of a league's matches. */
static void test_consent(void **state)
{
    struct fixture *f = *state;
    int64_t ps[4];
    for (int i = 0; i < 4; i++)
        ps[i] = add_player(f->s, "p", (uint8_t)(0x60 + i));
    struct store_match m = {.game = "hearts", .options = "{}", .seats = 4, .created_at = 1,
                            .invitation = STORE_MATCH_PENDING, .accepted = 0x5,
                            .invited_until = 1000};
    memcpy(m.players, ps, sizeof ps);
    struct err e;
    assert_true(store_match_insert(f->s, &m, &e));
    int64_t id = m.id, due[4];
    struct store_match got;
    assert_true(store_match_get(f->s, id, &got, &e));
    assert_int_equal(got.invitation, STORE_MATCH_PENDING);
    assert_int_equal(got.accepted, 0x5);
    assert_int_equal(got.invited_until, 1000);
    store_match_finish(&got);
    assert_int_equal(store_invitations_due(f->s, 999, due, 4, &e), 0);
    assert_int_equal(store_invitations_due(f->s, 1000, due, 4, &e), 1);
    assert_int_equal(due[0], id);

    struct store_match start = {.id = id, .invitation = STORE_MATCH_STARTED, .accepted = 0xf};
    start.seed[0] = 9;
    snprintf(start.commitment, sizeof start.commitment, "%064d", 7);
    assert_true(store_match_invitation(f->s, &start, &e));
    assert_true(store_match_get(f->s, id, &got, &e));
    assert_int_equal(got.invitation, STORE_MATCH_STARTED);
    assert_int_equal(got.seed[0], 9);
    assert_int_equal(strlen(got.commitment), 64);
    assert_false(got.finished);
    store_match_finish(&got);
    assert_int_equal(store_invitations_due(f->s, 5000, due, 4, &e), 0);

    struct store_match cancel = {.id = id, .invitation = STORE_MATCH_EXPIRED, .finished = true,
                                 .finished_at = 2000};
    assert_true(store_match_invitation(f->s, &cancel, &e));
    assert_true(store_match_get(f->s, id, &got, &e));
    assert_int_equal(got.invitation, STORE_MATCH_EXPIRED);
    assert_true(got.finished);
    assert_int_equal(got.finished_at, 2000);
    store_match_finish(&got);
    cancel.id = id + 100;
    assert_false(store_match_invitation(f->s, &cancel, &e));
    assert_int_equal(e.code, ERR_NOT_FOUND);

    /* A league: an invitation, twice, answered; its matches page by page. */
    struct store_league l = {.name = "l", .game = "hearts", .options = "{}", .points = "[]",
                             .created_at = 1};
    assert_true(store_league_insert(f->s, &l, &e));
    assert_true(store_invitation_add(f->s, l.id, ps[1], 5, &e));
    assert_false(store_invitation_add(f->s, l.id, ps[1], 6, &e));
    assert_string_equal(e.tag, "already_invited");
    int64_t n = 0;
    assert_true(store_member_add(f->s, l.id, ps[0], 5, &e));
    assert_true(store_league_size(f->s, l.id, &n, &e)); /* a member and an invitation */
    assert_int_equal(n, 2);
    struct store_member inv[2];
    assert_int_equal(store_invitations(f->s, l.id, inv, 2, &e), 1);
    assert_int_equal(inv[0].player, ps[1]);
    assert_int_equal(inv[0].joined_at, 5);
    store_member_finish(&inv[0]);
    assert_true(store_invitation_drop(f->s, l.id, ps[1], &e));
    assert_false(store_invitation_drop(f->s, l.id, ps[1], &e));
    assert_int_equal(e.code, ERR_NOT_FOUND);

    int64_t ids[5], page[2];
    for (int i = 0; i < 5; i++) {
        struct store_match lm = {.game = "hearts", .options = "{}", .seats = 4, .created_at = 1,
                                 .league = l.id};
        memcpy(lm.players, ps, sizeof ps);
        assert_true(store_match_insert(f->s, &lm, &e));
        ids[i] = lm.id;
    }
    assert_true(store_league_match_count(f->s, l.id, &n, &e));
    assert_int_equal(n, 5);
    assert_int_equal(store_league_matches(f->s, l.id, ps[0], true, 0, page, 2, &e), 2);
    assert_int_equal(page[0], ids[4]);
    assert_int_equal(page[1], ids[3]);
    assert_int_equal(store_league_matches(f->s, l.id, ps[0], true, page[1], page, 2, &e), 2);
    assert_int_equal(page[0], ids[2]);
    assert_int_equal(store_league_matches(f->s, l.id, ps[0], true, ids[1], page, 2, &e), 1);
    assert_int_equal(page[0], ids[0]);
}

static void test_events(void **state)
{
    struct fixture *f = *state;
    int64_t ps[4];
    for (int i = 0; i < 4; i++)
        ps[i] = add_player(f->s, "p", (uint8_t)(0x50 + i));
    int64_t id = add_match(f->s, 4, ps);
    int64_t other = add_match(f->s, 4, ps);

    struct err e;
    /* appended out of order on purpose: they come back in seq order */
    struct store_event evs[] = {
        {.seq = 0, .kind = STORE_DEAL, .body = "2C 3C 4C", .at = 1000},
        {.seq = 2, .kind = STORE_MOVE, .seat = 3, .body = "play 2C", .automatic = true,
         .at = 1002},
        {.seq = 1, .kind = STORE_MOVE, .seat = 0, .body = "pass 2H 3H 4H", .at = 1001},
        {.seq = 3, .kind = STORE_SHUFFLE, .body = "AS KS", .at = 1003},
    };
    for (size_t i = 0; i < 4; i++)
        assert_true(store_event_append(f->s, id, &evs[i], &e));
    struct store_event theirs = {.seq = 0, .kind = STORE_MOVE, .seat = 1, .body = "resign",
                                 .at = 5};
    assert_true(store_event_append(f->s, other, &theirs, &e)); /* seq is per match */

    struct store_event dup = {.seq = 2, .kind = STORE_MOVE, .seat = 1, .body = "play 3C",
                              .at = 1004};
    assert_false(store_event_append(f->s, id, &dup, &e));
    assert_int_equal(e.code, ERR_INVALID);

    struct collected c = {0};
    assert_true(store_events_each(f->s, id, collect, &c, &e));
    assert_int_equal(c.n, 4);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(c.seq[i], i);
        assert_int_equal(c.at[i], 1000 + i);
    }
    assert_int_equal(c.kind[0], STORE_DEAL);
    assert_string_equal(c.body[0], "2C 3C 4C");
    assert_int_equal(c.kind[1], STORE_MOVE);
    assert_int_equal(c.seat[1], 0);
    assert_string_equal(c.body[1], "pass 2H 3H 4H");
    assert_false(c.automatic[1]);
    assert_int_equal(c.seat[2], 3);
    assert_string_equal(c.body[2], "play 2C"); /* the refused duplicate changed nothing */
    assert_true(c.automatic[2]);
    assert_int_equal(c.kind[3], STORE_SHUFFLE);
    assert_string_equal(c.body[3], "AS KS");

    /* a range: from <= seq < until */
    struct collected mid = {0};
    assert_true(store_events_range(f->s, id, 1, 3, collect, &mid, &e));
    assert_int_equal(mid.n, 2);
    assert_int_equal(mid.seq[0], 1);
    assert_int_equal(mid.seq[1], 2);
    struct collected head = {0};
    assert_true(store_events_range(f->s, id, 0, 0, collect, &head, &e));
    assert_int_equal(head.n, 0);

    /* a callback that fails stops the walk with its error */
    struct collected stop = {.stop_after = 2};
    assert_false(store_events_each(f->s, id, collect, &stop, &e));
    assert_int_equal(stop.n, 2);
    assert_string_equal(e.tag, "stopped");

    /* the walk is usable again afterwards, and a match without events has none */
    struct collected none = {0};
    assert_true(store_events_each(f->s, id + 100, collect, &none, &e));
    assert_int_equal(none.n, 0);
    struct collected again = {0};
    assert_true(store_events_each(f->s, other, collect, &again, &e));
    assert_int_equal(again.n, 1);
    assert_string_equal(again.body[0], "resign");
}

/* ---- Transactions -------------------------------------------------------------------- */

/* Whether compiling `sql` on `db` gives a program that builds a temporary table
 * (OpenEphemeral): what SQLite does for a CHECK's `IN` list of three values or more. */
static bool builds_temporary_table(sqlite3 *db, const char *sql)
{
    char explain[2048];
    snprintf(explain, sizeof explain, "EXPLAIN %s", sql);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, explain, -1, &st, NULL) != SQLITE_OK)
        fail_msg("prepare %s: %s", explain, sqlite3_errmsg(db));
    bool found = false;
    while (sqlite3_step(st) == SQLITE_ROW)
        found |= !strcmp((const char *)sqlite3_column_text(st, 1), "OpenEphemeral");
    sqlite3_finalize(st);
    return found;
}

/* 0016 rebuilds the event log with its kind check as comparisons: an old log's rows come
 * through, the check still refuses what it refused, and no table's insert builds a
 * temporary table any more but the matches' (one a match, for its invitation check). */
static void test_events_rebuilt(void **state)
{
    struct fixture *f = *state;
    if (pg_url)
        skip(); /* PostgreSQL's IN checks cost nothing: its 0016 changes nothing */
    int64_t ps[4];
    for (int i = 0; i < 4; i++)
        ps[i] = add_player(f->s, "p", (uint8_t)(0x60 + i));
    int64_t id = add_match(f->s, 4, ps);
    store_close(f->s);
    f->s = NULL;
    char sql[1600];
    snprintf(sql, sizeof sql,
             "PRAGMA foreign_keys=OFF; DROP TABLE events;"
             "CREATE TABLE events (match_id INTEGER NOT NULL REFERENCES matches(id),"
             " seq INTEGER NOT NULL,"
             " kind TEXT NOT NULL CHECK (kind IN ('deal', 'shuffle', 'move')),"
             " seat INTEGER, body TEXT NOT NULL, auto INTEGER NOT NULL DEFAULT 0,"
             " at INTEGER NOT NULL, PRIMARY KEY (match_id, seq)) WITHOUT ROWID;"
             "INSERT INTO events VALUES (%lld, 0, 'deal', NULL, '2C 3C', 0, 1000);"
             "INSERT INTO events VALUES (%lld, 1, 'move', 2, 'play 2C', 1, 1001);"
             "DELETE FROM schema_migrations WHERE version = 16;",
             (long long)id, (long long)id);
    peek_exec(f, sql);
    sqlite3 *db;
    assert_int_equal(sqlite3_open_v2(f->path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    const char *append = "INSERT INTO events (match_id, seq, kind, seat, body, auto, at)"
                         " VALUES (?, ?, ?, ?, ?, ?, ?)";
    assert_true(builds_temporary_table(db, append)); /* the old table: one an insert */
    sqlite3_close(db);

    struct err e;
    f->s = store_open(f->path, &e);
    if (!f->s)
        fail_msg("store_open: %s", e.msg);
    assert_int_equal(peek_int(f, "SELECT count(*) FROM schema_migrations WHERE version = 16"),
                     1);
    struct collected c = {0};
    assert_true(store_events_each(f->s, id, collect, &c, &e));
    assert_int_equal(c.n, 2);
    assert_int_equal(c.kind[0], STORE_DEAL);
    assert_string_equal(c.body[0], "2C 3C");
    assert_int_equal(c.kind[1], STORE_MOVE);
    assert_int_equal(c.seat[1], 2);
    assert_string_equal(c.body[1], "play 2C");
    assert_true(c.automatic[1]);
    assert_int_equal(c.at[1], 1001);
    struct store_event next = {.seq = 2, .kind = STORE_SHUFFLE, .body = "AS", .at = 1002};
    assert_true(store_event_append(f->s, id, &next, &e));

    assert_int_equal(sqlite3_open_v2(f->path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    assert_int_not_equal(sqlite3_exec(db,
                                      "INSERT INTO events VALUES (1, 9, 'bid', NULL, 'x', 0, 1)",
                                      NULL, NULL, NULL),
                         SQLITE_OK);
    assert_non_null(strstr(sqlite3_errmsg(db), "CHECK"));
    /* Every table's insert of all its columns, as the backend's statements write them. */
    sqlite3_stmt *tables;
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "SELECT name, (SELECT group_concat(name, ', ') FROM"
                                        " pragma_table_info(m.name)), (SELECT"
                                        " group_concat('?', ', ') FROM pragma_table_info(m.name))"
                                        " FROM sqlite_master m WHERE type = 'table'"
                                        " AND name NOT LIKE 'sqlite_%'",
                                        -1, &tables, NULL),
                     SQLITE_OK);
    int seen = 0;
    while (sqlite3_step(tables) == SQLITE_ROW) {
        const char *table = (const char *)sqlite3_column_text(tables, 0);
        char insert[1600];
        snprintf(insert, sizeof insert, "INSERT INTO %s (%s) VALUES (%s)", table,
                 (const char *)sqlite3_column_text(tables, 1),
                 (const char *)sqlite3_column_text(tables, 2));
        bool temporary = builds_temporary_table(db, insert);
        if (temporary != !strcmp(table, "matches"))
            fail_msg("%s %s a temporary table", insert, temporary ? "builds" : "no longer builds");
        seen++;
    }
    sqlite3_finalize(tables);
    assert_true(seen >= 10);
    assert_false(builds_temporary_table(db, append));
    sqlite3_close(db);
}

static void test_rollback_leaves_nothing(void **state)
{
    struct fixture *f = *state;
    int64_t ps[4];
    for (int i = 0; i < 4; i++)
        ps[i] = add_player(f->s, "p", (uint8_t)(0x60 + i));
    int64_t id = add_match(f->s, 4, ps);
    struct err e;

    assert_true(store_begin(f->s, &e));
    int64_t ghost = add_player(f->s, "ghost", 0x70);
    int64_t ghost_match = add_match(f->s, 4, ps);
    struct store_event ev = {.seq = 0, .kind = STORE_DEAL, .body = "2C", .at = 1};
    assert_true(store_event_append(f->s, id, &ev, &e));
    struct store_match upd = {.id = id, .seq = 9, .to_move = "[1]", .totals = "[1,2,3,4]"};
    assert_true(store_match_update(f->s, &upd, &e));
    struct store_idem r = {.status = 201, .body = "{}"};
    assert_true(store_idem_put(f->s, ps[0], "k", &r, 1, &e));
    store_rollback(f->s);
    store_rollback(f->s); /* outside a transaction: nothing to do */

    struct store_player p;
    assert_false(store_player_get(f->s, ghost, &p, &e));
    assert_int_equal(e.code, ERR_NOT_FOUND);
    struct store_match m;
    assert_false(store_match_get(f->s, ghost_match, &m, &e));
    assert_int_equal(e.code, ERR_NOT_FOUND);
    assert_true(store_match_get(f->s, id, &m, &e));
    assert_int_equal(m.seq, 1);
    assert_string_equal(m.to_move, "[0,1,2,3]");
    store_match_finish(&m);
    struct collected c = {0};
    assert_true(store_events_each(f->s, id, collect, &c, &e));
    assert_int_equal(c.n, 0);
    struct store_idem got;
    assert_false(store_idem_get(f->s, ps[0], "k", &got, &e));
    assert_int_equal(e.code, ERR_NOT_FOUND);
    assert_int_equal(peek_int(f, "SELECT count(*) FROM match_seats"), 4);

    /* and a commit keeps everything, visible to another connection */
    assert_true(store_begin(f->s, &e));
    assert_true(store_event_append(f->s, id, &ev, &e));
    assert_true(store_match_update(f->s, &upd, &e));
    assert_true(store_commit(f->s, &e));
    assert_int_equal(peek_int(f, "SELECT count(*) FROM events"), 1);
    assert_int_equal(peek_int(f, "SELECT seq FROM matches WHERE id = 1"), 9);
}

/* How many of this process's open files are SQLite temporary files ("etilqs_...", unlinked
 * at once: "(deleted)" in /proc/self/fd). */
static int sqlite_temp_files(void)
{
    int n = 0;
    for (int fd = 0; fd < 1024; fd++) {
        char link[64], target[512];
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        ssize_t len = readlink(link, target, sizeof target - 1);
        if (len <= 0)
            continue;
        target[len] = '\0';
        n += strstr(target, "etilqs_") != NULL;
    }
    return n;
}

/* SQLite's allocations counted by this test itself (SQLite keeps no statistics of its own:
 * test_no_memory_statistics): the default allocator, wrapped before SQLite's first use, with
 * the bytes held now and the most held since heap_peak_reset. */
static sqlite3_mem_methods heap_system;
static _Atomic sqlite3_int64 heap_now, heap_peak;

static void heap_add(sqlite3_int64 n)
{
    sqlite3_int64 now = atomic_fetch_add(&heap_now, n) + n;
    sqlite3_int64 peak = atomic_load(&heap_peak);
    while (now > peak && !atomic_compare_exchange_weak(&heap_peak, &peak, now)) {
    }
}

static void *heap_malloc(int n)
{
    void *p = heap_system.xMalloc(n);
    if (p)
        heap_add(heap_system.xSize(p));
    return p;
}

static void heap_free(void *p)
{
    if (p)
        heap_add(-(sqlite3_int64)heap_system.xSize(p));
    heap_system.xFree(p);
}

static void *heap_realloc(void *p, int n)
{
    sqlite3_int64 was = p ? heap_system.xSize(p) : 0;
    void *q = heap_system.xRealloc(p, n);
    if (q)
        heap_add(heap_system.xSize(q) - was);
    return q;
}

static void heap_count(void)
{
    sqlite3_config(SQLITE_CONFIG_GETMALLOC, &heap_system);
    sqlite3_mem_methods m = heap_system;
    m.xMalloc = heap_malloc;
    m.xFree = heap_free;
    m.xRealloc = heap_realloc;
    assert_int_equal(sqlite3_config(SQLITE_CONFIG_MALLOC, &m), SQLITE_OK);
}

/* The bytes held now; the peak starts over from them. */
static sqlite3_int64 heap_peak_reset(void)
{
    sqlite3_int64 now = atomic_load(&heap_now);
    atomic_store(&heap_peak, now);
    return now;
}

/* SQLite keeps no memory statistics: with them, every allocation it makes takes a
 * process-wide mutex (storage/sqlite/open.c sqlite_configure). Set before SQLite's first
 * use; counted, the connection open here would show its memory. */
static void test_no_memory_statistics(void **state)
{
    struct fixture *f = *state;
    if (pg_url)
        skip(); /* SQLite's allocator */
    struct err e;
    assert_true(store_begin(f->s, &e));
    store_rollback(f->s);
    assert_true(atomic_load(&heap_now) > 0); /* (SQLite holds memory: heap_count) */
    assert_int_equal(sqlite3_memory_used(), 0);
    assert_int_equal(sqlite3_memory_highwater(0), 0);
}

/* A temporary table costs the pages it holds (storage/sqlite/open.c: no page cache starts
 * with 20 pages allocated at once). A claim of the outbox builds five or six, each with a
 * page cache of its own: with SQLite's default, every one of them allocated 87 KB. */
static void test_temporary_tables_small(void **state)
{
    struct fixture *f = *state;
    if (pg_url)
        skip(); /* SQLite's page caches */
    sqlite3 *db;
    assert_int_equal(sqlite3_open_v2(f->path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    /* (a NOT IN list from json_each: a temporary table, as in the outbox's claims) */
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "SELECT 5 NOT IN (SELECT value FROM"
                                        " json_each('[1, 2, 3]'))",
                                        -1, &st, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW); /* (the schema read, the cache warm) */
    sqlite3_reset(st);
    sqlite3_int64 before = heap_peak_reset();
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    sqlite3_int64 peak = atomic_load(&heap_peak);
    sqlite3_finalize(st);
    sqlite3_close(db);
    assert_true(before > 0); /* (the allocations are counted) */
    if (peak - before >= 40 * 1024)
        fail_msg("a temporary table took %lld bytes", (long long)(peak - before));
}

/* A savepoint's sub-journal stays in memory up to 126 KiB (storage/sqlite/open.c): a write
 * of a group commit that changes more than SQLite's default 64 KiB of pages (as creating a
 * match with its notifications does) writes no temporary file. */
static void test_savepoint_journal_in_memory(void **state)
{
    struct fixture *f = *state;
    if (pg_url)
        skip(); /* SQLite's sub-journal */
    int64_t ps[4];
    for (int i = 0; i < 4; i++)
        ps[i] = add_player(f->s, "p", (uint8_t)(0x40 + i));
    enum { MATCHES = 200 };
    static uint8_t blob[1000];
    int64_t ids[MATCHES];
    struct err e;
    assert_true(store_begin(f->s, &e));
    for (int i = 0; i < MATCHES; i++)
        ids[i] = add_match(f->s, 4, ps);
    assert_true(store_commit(f->s, &e));

    /* each match row rewritten with a 1,000-byte state: the pages that held them changed
     * (over 64 KiB of them: without the setting, this fails) */
    assert_true(store_begin(f->s, &e));
    assert_true(store_savepoint(f->s, &e));
    for (int i = 0; i < MATCHES; i++) {
        blob[0] = (uint8_t)i;
        struct store_match upd = {.id = ids[i], .seq = 2, .to_move = "[1]",
                                  .totals = "[0,0,0,0]", .state = blob,
                                  .state_len = sizeof blob};
        assert_true(store_match_update(f->s, &upd, &e));
    }
    assert_int_equal(sqlite_temp_files(), 0);
    assert_true(store_release(f->s, &e));
    assert_true(store_commit(f->s, &e));
    assert_int_equal(peek_int(f, "SELECT count(*) FROM matches WHERE length(state) = 1000"),
                     MATCHES);
}

/* ---- Idempotency keys ---------------------------------------------------------------- */

/* The clock's lease (store_lease): one connection at a time holds it on PostgreSQL, asking
 * again keeps it, and it passes to another when its holder's connection ends; on SQLite
 * every connection has it. */
static void test_lease(void **state)
{
    struct fixture *f = *state;
    struct err e;
    struct store *other = store_open(f->path, &e);
    assert_non_null(other);
    bool held = false, other_held = true;
    assert_true(store_lease(f->s, STORE_LEASE_CLOCK, &held, &e));
    assert_true(held);
    for (int i = 0; i < 3; i++) { /* asked again and again: still held, and no count piles up */
        assert_true(store_lease(f->s, STORE_LEASE_CLOCK, &held, &e));
        assert_true(held);
    }
    assert_true(store_lease(other, STORE_LEASE_CLOCK, &other_held, &e));
    assert_true(pg_url ? !other_held : other_held);
    if (pg_url) {
        /* The holder's connection ends: the server frees the lock as its session ends (a
         * moment after the client hangs up). */
        store_close(f->s);
        f->s = NULL;
        for (int i = 0; i < 500 && !other_held; i++) {
            assert_true(store_lease(other, STORE_LEASE_CLOCK, &other_held, &e));
            if (!other_held)
                nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
        }
        assert_true(other_held);
        f->s = store_open(f->path, &e);
        assert_non_null(f->s);
        assert_true(store_lease(f->s, STORE_LEASE_CLOCK, &held, &e));
        assert_false(held);
    }
    store_close(other);
}

/* Several processes on one database (store.h): a match's version changes with every change
 * of its row, whoever makes it; a change checked against an old version is refused; the
 * lock holds a second connection until the first commits; the listener hears the commit's
 * notification and not a rolled-back one's. On SQLite: versions 0, every check passes,
 * nobody listens. */
static void heard_one(void *cls, const char *payload)
{
    snprintf(cls, 64, "%s", payload);
}

struct locker {
    const char *url;
    int64_t id, rev;
    bool ok;
    struct err e;
};

static void *lock_later(void *arg)
{
    struct locker *l = arg;
    struct err e;
    struct store *s = store_open(l->url, &e);
    assert_non_null(s);
    assert_true(store_begin(s, &e));
    /* (it waits for the other's commit; the refusal may come only with the commit) */
    l->ok = store_match_lock(s, l->id, l->rev, &l->e) && store_commit(s, &l->e);
    store_rollback(s);
    store_close(s);
    return NULL;
}

static void test_match_versions(void **state)
{
    struct fixture *f = *state;
    int64_t ps[4];
    for (int i = 0; i < 4; i++)
        ps[i] = add_player(f->s, "v", (uint8_t)(0x70 + i));
    int64_t id = add_match(f->s, 4, ps);
    struct store_match got;
    struct err e;
    assert_true(store_match_get(f->s, id, &got, &e));
    int64_t rev = got.rev, now;
    store_match_finish(&got);
    assert_true(store_match_rev(f->s, id, &now, &e));
    assert_int_equal(now, rev);
    if (!pg_url) {
        assert_false(store_shared(f->s));
        assert_int_equal(rev, 0);
        assert_true(store_match_lock(f->s, id, 12345, &e));
        assert_null(store_listen(f->path, &e));
        assert_string_equal(e.tag, "not_shared");
        return;
    }
    assert_true(store_shared(f->s));
    struct store_listener *l = store_listen(f->path, &e);
    assert_non_null(l);

    /* A change under the lock: a new version, read back before the commit, told at it. */
    assert_true(store_begin(f->s, &e));
    assert_true(store_match_lock(f->s, id, rev, &e));
    /* (a read in the transaction waits for every answer before its own: the lock is taken) */
    assert_true(store_match_rev(f->s, id, &now, &e));
    assert_int_equal(now, rev);
    struct locker other = {.url = f->path, .id = id, .rev = rev};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, lock_later, &other), 0);
    struct store_match change = {.id = id, .seq = 2, .to_move = "[1]", .totals = "[0,0,0,0]"};
    assert_true(store_match_update(f->s, &change, &e));
    int64_t after = 0;
    assert_true(store_match_changed(f->s, id, 2, &after, &e));
    struct timespec pause = {0, 100 * 1000 * 1000};
    nanosleep(&pause, NULL); /* (the other connection waits on the row meanwhile) */
    assert_true(store_commit(f->s, &e));
    assert_true(after != 0 && after != rev); /* (filled by the commit at the latest) */
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_false(other.ok); /* it waited, then found the new version */
    assert_int_equal(other.e.code, ERR_CONFLICT);
    assert_string_equal(other.e.tag, "stale_match");
    assert_true(store_match_rev(f->s, id, &now, &e));
    assert_int_equal(now, after);
    char payload[64] = "";
    for (int i = 0; i < 20 && !payload[0]; i++)
        assert_true(store_listener_wait(l, 100, heard_one, payload, &e));
    char want[64];
    snprintf(want, sizeof want, "m %lld %lld 2", (long long)id, (long long)after);
    assert_string_equal(payload, want);

    /* A change rolled back tells nobody and leaves the version; a stale check is refused. */
    assert_true(store_begin(f->s, &e));
    assert_true(store_match_lock(f->s, id, after, &e));
    assert_true(store_match_update(f->s, &change, &e));
    assert_true(store_match_changed(f->s, id, 2, &now, &e));
    store_rollback(f->s);
    payload[0] = '\0';
    assert_true(store_listener_wait(l, 200, heard_one, payload, &e));
    assert_string_equal(payload, "");
    assert_true(store_match_rev(f->s, id, &now, &e));
    assert_int_equal(now, after);
    /* A stale check undoes what the transaction wrote after it, whenever it is reported
     * (PostgreSQL sends the statements without waiting for the check's answer). */
    assert_true(store_begin(f->s, &e));
    struct store_match stale = {.id = id, .seq = 9, .to_move = "[2]", .totals = "[9,9,9,9]"};
    bool ok = store_match_lock(f->s, id, rev, &e) && store_match_update(f->s, &stale, &e) &&
              store_commit(f->s, &e);
    assert_false(ok);
    assert_int_equal(e.code, ERR_CONFLICT);
    assert_string_equal(e.tag, "stale_match");
    store_rollback(f->s);
    assert_true(store_match_get(f->s, id, &got, &e));
    assert_int_equal(got.seq, 2);
    assert_int_equal(got.rev, after);
    store_match_finish(&got);
    assert_false(store_match_lock(f->s, id + 1000, after, &e));
    assert_int_equal(e.code, ERR_NOT_FOUND);
    store_listener_close(l);
}

static void test_idempotency(void **state)
{
    struct fixture *f = *state;
    struct err e;
    struct store_idem r = {.status = 201, .body = "{\"seq\":5}"};
    memset(r.request, 0xab, sizeof r.request);
    assert_true(store_idem_put(f->s, 7, "key-1", &r, 1234, &e));
    /* the same key of another caller (0: the operator) is another record */
    struct store_idem op = {.status = 409, .body = "{\"code\":\"x\"}"};
    assert_true(store_idem_put(f->s, 0, "key-1", &op, 1235, &e));

    struct store_idem got;
    assert_true(store_idem_get(f->s, 7, "key-1", &got, &e));
    assert_int_equal(got.status, 201);
    assert_string_equal(got.body, "{\"seq\":5}");
    assert_memory_equal(got.request, r.request, STORE_HASH_BYTES);
    store_idem_finish(&got);
    assert_true(store_idem_get(f->s, 0, "key-1", &got, &e));
    assert_int_equal(got.status, 409);
    store_idem_finish(&got);

    assert_false(store_idem_get(f->s, 7, "key-2", &got, &e));
    assert_int_equal(e.code, ERR_NOT_FOUND);

    struct store_idem again = {.status = 201, .body = "{\"seq\":6}"};
    assert_false(store_idem_put(f->s, 7, "key-1", &again, 1236, &e));
    assert_int_equal(e.code, ERR_INVALID);
    assert_true(store_idem_get(f->s, 7, "key-1", &got, &e));
    assert_string_equal(got.body, "{\"seq\":5}");
    store_idem_finish(&got);
}

int main(void)
{
    pg_url = getenv("CARDPOST_TEST_PG");
    if (pg_url && !*pg_url)
        pg_url = NULL;
    heap_count(); /* (before SQLite's first use) */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_new_database_is_migrated, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wal_mode, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_memory_statistics, setup, teardown),
        cmocka_unit_test_setup_teardown(test_savepoint_journal_in_memory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_temporary_tables_small, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reopen_applies_nothing_twice, setup, teardown),
        cmocka_unit_test_setup_teardown(test_newer_database_is_opened, setup, teardown),
        cmocka_unit_test(test_open_failure),
        cmocka_unit_test_setup_teardown(test_concurrent_opens, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_chooses_backend, setup, teardown),
        cmocka_unit_test_setup_teardown(test_players, setup, teardown),
        cmocka_unit_test(test_files_are_private),
        cmocka_unit_test_setup_teardown(test_email_and_token, setup, teardown),
        cmocka_unit_test_setup_teardown(test_matches, setup, teardown),
        cmocka_unit_test_setup_teardown(test_consent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_events, setup, teardown),
        cmocka_unit_test_setup_teardown(test_events_rebuilt, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rollback_leaves_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_idempotency, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lease, setup, teardown),
        cmocka_unit_test_setup_teardown(test_match_versions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stream_tickets, setup, teardown),
        cmocka_unit_test_setup_teardown(test_vacations, setup, teardown),
        cmocka_unit_test_setup_teardown(test_settings, setup, teardown),
        cmocka_unit_test_setup_teardown(test_outbox, setup, teardown),
        cmocka_unit_test_setup_teardown(test_outbox_claims, setup, teardown),
        cmocka_unit_test_setup_teardown(test_outbox_claim_by_destination, setup, teardown),
        cmocka_unit_test_setup_teardown(test_outbox_claim_walk, setup, teardown),
        cmocka_unit_test_setup_teardown(test_outbox_claim_rooms, setup, teardown),
        cmocka_unit_test_setup_teardown(test_outbox_rebuilt, setup, teardown),
        cmocka_unit_test_setup_teardown(test_outbox_held_by_due, setup, teardown),
        cmocka_unit_test_setup_teardown(test_outbox_record_skips_held, setup, teardown),
        cmocka_unit_test_setup_teardown(test_outbox_settle_in_one_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_league_take, setup, teardown),
        cmocka_unit_test_setup_teardown(test_outbox_recover_in_batches, setup, teardown),
        cmocka_unit_test_setup_teardown(test_outbox_of_player_batches, setup, teardown),
        cmocka_unit_test_setup_teardown(test_outbox_one_row, setup, teardown),
        cmocka_unit_test_setup_teardown(test_outbox_fresh, setup, teardown),
        cmocka_unit_test_setup_teardown(test_outbox_fresh_destinations, setup, teardown),
        cmocka_unit_test_setup_teardown(test_outbox_fresh_undone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_leagues, setup, teardown),
        cmocka_unit_test_setup_teardown(test_player_leagues, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
