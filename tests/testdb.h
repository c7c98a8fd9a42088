/* testdb.h - what the tests on real SQLite files share: removing a database file with the
 * WAL files beside it. Tests only. */
#ifndef CARDPOST_TESTDB_H
#define CARDPOST_TESTDB_H

#include <stdio.h>
#include <unistd.h>

/* Remove the SQLite database at `path` and its -wal and -shm files (those that exist). */
static inline void tdb_remove(const char *path)
{
    static const char *const tails[] = {"", "-wal", "-shm"};
    for (size_t i = 0; i < sizeof tails / sizeof tails[0]; i++) {
        char p[4096];
        snprintf(p, sizeof p, "%s%s", path, tails[i]);
        unlink(p);
    }
}

#endif
