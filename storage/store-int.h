/* store-int.h - what the storage files share: the connection, its cache of prepared
 * statements, and helpers for SQLite errors and owned strings. Not for other components.
 */
#ifndef CARDPOST_STORE_INT_H
#define CARDPOST_STORE_INT_H

#include <sqlite3.h>

#include "store.h"

struct store_migration {
    int version;
    const char *name;
    const char *sql;
};

/* Generated at build time from migrations/NNNN-name.sql (storage/embed-migrations.py). */
extern const struct store_migration store_migrations[];
extern const int store_nmigrations;

struct store;

/* The cached statement number `slot` for `sql` (prepared on first use, reset before it is
 * handed out). NULL with e filled when it does not prepare. */
sqlite3_stmt *store_stmt(struct store *s, int slot, const char *sql, struct err *e);

/* Fill e from the connection's last error; returns false. */
bool store_fail(struct store *s, struct err *e, const char *what);

/* A malloc'd copy of a text column, or NULL for SQL NULL (or no memory). */
char *store_column_text(sqlite3_stmt *st, int col);

/* Statement slots, one per query. */
enum {
    SQL_PLAYER_INSERT,
    SQL_PLAYER_BY_TOKEN,
    SQL_PLAYER_GET,
    SQL_MATCH_INSERT,
    SQL_SEAT_INSERT,
    SQL_MATCH_GET,
    SQL_SEATS_GET,
    SQL_MATCH_UPDATE,
    SQL_MATCHES_OF_PLAYER,
    SQL_EVENT_INSERT,
    SQL_EVENTS_EACH,
    SQL_IDEM_GET,
    SQL_IDEM_PUT,
    SQL_PLAYER_UPDATE,
    SQL_MATCHES_DUE,
    SQL_CLOCKED_OF_PLAYER,
    SQL_VACATION_ADD,
    SQL_VACATION_END,
    SQL_VACATION_DROP,
    SQL_VACATIONS_OF,
    SQL_VACATIONS_LATEST,
    SQL_SETTING_PUT,
    SQL_OUTBOX_ADD,
    SQL_OUTBOX_GET,
    SQL_OUTBOX_DUE,
    SQL_OUTBOX_NEXT,
    SQL_OUTBOX_RECORD,
    SQL_ATTEMPT_ADD,
    SQL_OUTBOX_OF_PLAYER,
    SQL_ATTEMPTS_OF,
    SQL_OUTBOX_REDELIVER,
    SQL_OUTBOX_UPCOMING,
    SQL_LEAGUE_INSERT,
    SQL_LEAGUE_GET,
    SQL_LEAGUE_COUNTS,
    SQL_LEAGUES,
    SQL_MEMBER_ADD,
    SQL_MEMBER_LEAVE,
    SQL_MEMBER_IS,
    SQL_MEMBERS,
    SQL_LEAGUE_MATCHES,
    SQL_LEAGUE_SEATINGS,
    SQL_STANDING_GET,
    SQL_STANDING_PUT,
    SQL_STANDINGS,
    SQL_SETTING_GET,
    SQL_SETTING_INIT,
    SQL_MATCH_INVITATION,
    SQL_INVITATIONS_DUE,
    SQL_LEAGUE_MATCH_COUNT,
    SQL_INVITE_ADD,
    SQL_INVITE_DROP,
    SQL_INVITES,
    SQL_LEAGUE_SIZE,
    SQL_BEGIN,
    SQL_COMMIT,
    SQL_ROLLBACK,
    SQL_SAVEPOINT,
    SQL_RELEASE,
    SQL_ROLLBACK_TO,
    SQL_PLAYER_EMAIL_SET,
    SQL_PLAYER_EMAIL_CONFIRM,
    SQL_PLAYER_TOKEN_SET,
    SQL_CONFIRM_COUNT_PLAYER,
    SQL_CONFIRM_COUNT_ADDRESS,
    SQL_CONFIRM_ADD,
    SQL_NSTATEMENTS /* how many: the size of the statement cache */
};

struct store {
    sqlite3 *db;
    sqlite3_stmt *stmts[SQL_NSTATEMENTS];
};

#endif
