/* sqlite-int.h - what the SQLite backend's files share: the connection (`struct
 * store_conn`), its cache of prepared statements, helpers for SQLite errors and owned
 * strings, and the functions that fill its `struct store_backend` (open.c). Not for other
 * components, nor for storage's backend-neutral files (they see backend.h).
 */
#ifndef CARDPOST_SQLITE_INT_H
#define CARDPOST_SQLITE_INT_H

#include <sqlite3.h>

#include "backend.h"

struct store_migration {
    int version;
    const char *name;
    const char *sql;
};

/* Generated at build time from migrations/NNNN-name.sql (storage/embed-migrations.py). */
extern const struct store_migration store_migrations[];
extern const int store_nmigrations;

struct store_conn;
struct sqlite_checkpointer;

/* The backend's operations (backend.h: STORE_OPS, each documented at its store_ twin in
 * store.h), one file per table group. */
#define SQLITE_OP(ret, op, params, args) ret sqlite_##op(struct store_conn *s, STORE_LIST params);
STORE_OPS(SQLITE_OP)
#undef SQLITE_OP
struct store_conn *sqlite_open_durable(const char *path, enum store_durability d, struct err *e);
void sqlite_close(struct store_conn *s);
int sqlite_version(struct store_conn *s);
void sqlite_rollback(struct store_conn *s);
bool sqlite_outbox_add(struct store_conn *s, struct store_outbox *o, struct err *e);
/* Forget what the connection counted of outbox_fresh (read again at its next use). */
void sqlite_outbox_forget(struct store_conn *s);
int sqlite_migration_count(void);

/* backup.c */
bool sqlite_backup(const char *db_path, const char *out, struct store_copy_info *info,
                   struct err *e);
bool sqlite_check_copy(const char *path, struct store_copy_info *info, struct err *e);
bool sqlite_in_use(const char *db_path, bool *in_use, struct err *e);
bool sqlite_restore(const char *backup, const char *db_path, bool force,
                    struct store_copy_info *info, struct err *e);
bool sqlite_probe(const char *db_path, struct err *e);

/* checkpoint.c: the WAL's checkpoints, the upkeep of a connection that writes group commits
 * (backend.h). */
bool sqlite_upkeep_start(struct store_conn *s, struct err *e);
void sqlite_upkeep_poke(struct store_conn *s);
void sqlite_upkeep_count(struct store_conn *s, struct store_commit_figures *out);
void sqlite_upkeep_stop(struct store_conn *s);

/* gather.c: the name of the VFS that gathers a commit's WAL writes into one write, for the
 * connections whose commits sync the WAL (synchronous=FULL), or NULL when it could not be
 * registered (then SQLite's own); and how many writes it was given and made, in all. */
const char *sqlite_gather_vfs(void);
void sqlite_gather_figures(uint64_t *writes, uint64_t *flushes);

/* The cached statement number `slot` for `sql` (prepared on first use, reset before it is
 * handed out). NULL with e filled when it does not prepare. */
sqlite3_stmt *sqlite_stmt(struct store_conn *s, int slot, const char *sql, struct err *e);

/* Fill e from the connection's last error; returns false. */
bool sqlite_fail(struct store_conn *s, struct err *e, const char *what);

/* A malloc'd copy of a text column, or NULL for SQL NULL (or no memory). */
char *sqlite_column_text(sqlite3_stmt *st, int col);

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
    SQL_MATCH_UPDATE_KEPT,
    SQL_MATCHES_OF_PLAYER,
    SQL_EVENT_INSERT,
    SQL_EVENTS_EACH,
    SQL_IDEM_GET,
    SQL_IDEM_PUT,
    SQL_PLAYER_UPDATE,
    SQL_PLAYER_WEBHOOK_GONE,
    SQL_MATCHES_DUE,
    SQL_ACTIVE_OF_PLAYER,
    SQL_VACATION_ADD,
    SQL_VACATION_END,
    SQL_VACATION_DROP,
    SQL_VACATIONS_OF,
    SQL_VACATIONS_LATEST,
    SQL_SETTING_PUT,
    /* (a statement of one outbox channel has a slot for each, + enum store_channel: its
     * name's and the _W after it, for the webhook) */
    SQL_OUTBOX_ADD, SQL_OUTBOX_NEXT_ID, SQL_OUTBOX_FRESH_HAS,
    SQL_OUTBOX_FRESH_LAST, SQL_OUTBOX_FRESH_TAKE, SQL_OUTBOX_FRESH_DROP,
    SQL_OUTBOX_FRESH_COUNTS, SQL_OUTBOX_FRESH_WHICH,
    SQL_OUTBOX_GET, SQL_OUTBOX_GET_W,
    SQL_OUTBOX_NEXT, SQL_OUTBOX_NEXT_W,
    SQL_OUTBOX_RECORD, SQL_OUTBOX_RECORD_W,
    SQL_ATTEMPT_ADD,
    SQL_OUTBOX_OF_PLAYER, SQL_OUTBOX_UNINDEXED, SQL_OUTBOX_INDEX, SQL_OUTBOX_INDEXED,
    SQL_ATTEMPTS_OF,
    SQL_OUTBOX_REDELIVER, SQL_OUTBOX_REDELIVER_W,
    SQL_LEAGUE_INSERT,
    SQL_LEAGUE_GET,
    SQL_LEAGUE_COUNTS,
    SQL_LEAGUES,
    SQL_PLAYER_LEAGUES,
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
    SQL_OUTBOX_BACKLOG,
    SQL_OUTBOX_WINDOW, SQL_OUTBOX_WINDOW_W,
    SQL_OUTBOX_CLAIM_IDS, SQL_OUTBOX_CLAIM_IDS_W,
    SQL_OUTBOX_FIRST_DESTINATION,
    SQL_OUTBOX_NEXT_DESTINATION,
    SQL_OUTBOX_DESTINATION_DUE,
    SQL_JSON_EACH,
    SQL_OUTBOX_RELEASE, SQL_OUTBOX_RELEASE_W,
    SQL_OUTBOX_RECOVERED, SQL_OUTBOX_RECOVERED_W,
    SQL_OUTBOX_UNREACHABLE, SQL_OUTBOX_UNREACHABLE_W,
    SQL_NSTATEMENTS /* how many: the size of the statement cache */
};

struct store_conn {
    sqlite3 *db;
    sqlite3_stmt *stmts[SQL_NSTATEMENTS];
    struct sqlite_checkpointer *checkpointer;  /* or NULL (checkpoint.c) */
    bool commits_sync;     /* synchronous=FULL (STORE_DURABLE_POWER): each commit syncs the WAL */
    int outbox_unindexed;  /* outbox rows past outbox_indexed.upto, as far as this connection
                            * knows (-1: not read yet): outbox.c fills outbox_players at 1,024 */
    struct fresh_counts *fresh;  /* what outbox_fresh holds (outbox.c; NULL: read at its next
                                  * use) */
    bool fresh_touched;          /* this savepoint added or took fresh rows */
    bool fresh_touched_txn;      /* this transaction did (its released savepoints) */
    int64_t outbox_next_id;  /* the id of the next outbox row in this transaction (0: not read
                              * yet; outbox.c next_row_id) */
    int64_t walk_skipped_until; /* a webhook claim within a window met more destinations
                                 * than it walks (outbox.c, claim_walk): until then (Unix
                                 * ms; 0: none) claims go straight to their window */
};

#endif
