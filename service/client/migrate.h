/* migrate.h - `cardpost migrate-db FROM TO` (migrate.c). */
#ifndef CARDPOST_CLIENT_MIGRATE_H
#define CARDPOST_CLIENT_MIGRATE_H

/* argv[1] is "migrate-db"; exit 0 copied and checked, 1 refused or failed, 2 bad usage. */
int migrate_db_main(int argc, char **argv);

#endif
