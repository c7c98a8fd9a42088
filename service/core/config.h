/* config.h - cardpostd's settings: built-in defaults, then a configuration file of
 * `key = value` lines (--config), then environment variables (CARDPOST_*), then flags.
 * ops/cardpost.conf.example lists every key.
 */
#ifndef CARDPOST_CONFIG_H
#define CARDPOST_CONFIG_H

#include <stdbool.h>
#include <stdio.h>

#include "err.h"
#include "limits.h"
#include "log.h"
#include "notify.h"

struct config {
    char db[1024];
    char listen[300];
    char operator_token[256];
    char public_url[512];        /* base URL for links in emails; empty: none */
    char web_dir[1024];          /* the browser pages (web/ of the source tree by default) */
    struct notify_smtp smtp;     /* url empty: no email */
    char mail_domain[256];       /* of the play+ reply addresses; empty: mail_from's domain */
    struct notify_policy webhooks;
    int vacation_days;           /* per calendar year */
    int http_threads;            /* HTTP worker threads; 0: thread_processors() */
    bool durable_power;          /* durability = power: fdatasync per group commit */
    int match_cache;             /* matches kept in memory, least recently used evicted */
    int db_pool;                 /* PostgreSQL: connections writing at once, each write its
                                  * own transaction (the server groups their commits);
                                  * 0: the default (storage's STORE_POOL_DEFAULT) */
    bool test_clock;             /* POST /v1/admin/clock moves the service's time (tests) */
    int confirm_per_address;     /* confirmation emails an hour to one address */
    int confirm_per_player;      /* confirmation emails an hour for one player */
    /* Consent and the league limits (docs/security.md "Consent") */
    int invitation_seconds;      /* a pending match is cancelled this long after its creation */
    int schedule_max_matches;    /* matches one POST /v1/leagues/{id}/schedule may create */
    int league_max_matches;      /* matches a league may have in all */
    int league_max_members;      /* members (and invitations waiting) a league may have */
    /* The abuse limits (docs/security.md "Limits"); 0 means none unless said otherwise. */
    int max_connections;         /* in all; 0: as many as open files allow */
    int max_connections_per_address;
    int max_streams;             /* open event streams in all */
    int max_streams_per_address;
    int rate_per_address;        /* requests per second per client address ... */
    int rate_burst_per_address;  /* ... with bursts of this many */
    int rate_per_token;          /* requests per second per player token ... */
    int rate_burst_per_token;
    char trusted_proxies[1024];  /* whose X-Forwarded-For names the client; empty: none */
    struct limits_proxies proxies;   /* trusted_proxies parsed */
    char metrics_listen[300];    /* HOST:PORT serving GET /metrics without a token; empty:
                                  * /metrics on `listen`, the operator's */
    /* The log (log.h, docs/operations.md "Logs") */
    char log_file[1024];         /* empty: stderr */
    enum log_level log_level;    /* the most verbose level written: info by default */
};

/* The shortest operator token cardpostd accepts (docs/security.md). */
#define CONFIG_OPERATOR_TOKEN_MIN 32

/* Defaults: var/cardpost.db, 127.0.0.1:8080, no SMTP, private webhooks refused, 30 days,
 * 1,024 matches in memory, 3 confirmation emails an hour per address and 5 per player;
 * invitations expire after 7 days; 500 matches per schedule request, 10,000 per league,
 * 1,000 members per league; the limits of docs/security.md "Limits"; the log on stderr at
 * level info. */
void config_defaults(struct config *c);

/* Apply a `key = value` file ('#' starts a comment). Unknown keys and bad values fail
 * with ERR_INVALID naming the line. */
bool config_load_file(struct config *c, const char *path, struct err *e);

/* Apply the CARDPOST_* environment variables. */
bool config_load_env(struct config *c, struct err *e);

/* Set one key (the names of the file; the environment uses CARDPOST_ + upper case).
 * operator_token_file reads the operator token from that file at once (its first line,
 * without the line end). */
bool config_set(struct config *c, const char *key, const char *value, struct err *e);

/* cardpostd --check-config: read a `key = value` file with config_set (the daemon's own
 * parser) and print one line `FILE:LINE: KEY: what is wrong` to `out` for every bad line
 * (every one, not only the first). Returns the number of bad lines, -1 if the file cannot
 * be read. */
int config_check_file(const char *path, FILE *out);

#endif
