/* pglib.c - the PostgreSQL database of a test run (pglib.h), emptied over its own libpq
 * connection.
 */
#include "pglib.h"

#include <stdio.h>
#include <stdlib.h>

#include <libpq-fe.h>

const char *pgtest_url(void)
{
    const char *url = getenv("CARDPOST_TEST_PG");
    return url && *url ? url : NULL;
}

static void quiet(void *arg, const char *message)
{
    (void)arg, (void)message;
}

void pgtest_reset(void)
{
    PGconn *db = PQconnectdb(pgtest_url());
    if (PQstatus(db) != CONNECTION_OK) {
        fprintf(stderr, "pgtest_reset: %s", PQerrorMessage(db));
        abort();
    }
    PQsetNoticeProcessor(db, quiet, NULL);
    PGresult *r = PQexec(db, "DROP SCHEMA public CASCADE; CREATE SCHEMA public");
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
        fprintf(stderr, "pgtest_reset: %s", PQresultErrorMessage(r));
        abort();
    }
    PQclear(r);
    PQfinish(db);
}
