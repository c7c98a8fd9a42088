/* pglib.h - for the in-process tests that run a second time on PostgreSQL (the _pg tests of
 * tests/meson.build, under tests/pg/run-with-pg.sh): the database to use, and emptying it.
 */
#ifndef CARDPOST_TESTS_PGLIB_H
#define CARDPOST_TESTS_PGLIB_H

/* The PostgreSQL address CARDPOST_TEST_PG names, or NULL: the test runs on SQLite files. */
const char *pgtest_url(void);

/* Drop every table of that database (a fresh, empty schema); aborts the test run when it
 * cannot. */
void pgtest_reset(void);

#endif
