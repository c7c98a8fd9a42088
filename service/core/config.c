/* config.c - reading cardpostd's settings from a file and the environment. */
#include "config.h"
#include "store.h" /* STORE_POOL_DEFAULT */

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

void config_defaults(struct config *c)
{
    memset(c, 0, sizeof *c);
    snprintf(c->db, sizeof c->db, "var/cardpost.db");
    snprintf(c->listen, sizeof c->listen, "127.0.0.1:8080");
    snprintf(c->web_dir, sizeof c->web_dir, "%s", CARDPOST_WEB_DIR);
    snprintf(c->smtp.from, sizeof c->smtp.from, "cardpost@localhost");
    c->smtp.timeout_ms = 30000;
    c->webhooks.connect_timeout_ms = 5000;
    c->webhooks.total_timeout_ms = 10000;
    c->webhooks.concurrency = 8;
    c->webhooks.per_destination = 2;
    c->vacation_days = 30;
    c->durable_power = true;
    c->match_cache = 1024;
    c->db_pool = STORE_POOL_DEFAULT;
    c->confirm_per_address = 3;
    c->confirm_per_player = 5;
    c->invitation_seconds = 7 * 86400;
    c->schedule_max_matches = 500;
    c->league_max_matches = 10000;
    c->league_max_members = 1000;
    c->max_connections_per_address = 64;
    c->max_streams = 10000;
    c->max_streams_per_address = 16;
    c->rate_per_address = 30;
    c->rate_burst_per_address = 120;
    c->rate_per_token = 20;
    c->rate_burst_per_token = 60;
    c->log_level = LOG_LEVEL_INFO;
}

/* The operator token from the first line of a file (the line end and surrounding blanks
 * dropped): a file keeps it out of `ps` and of the environment. */
static bool token_file(struct config *c, const char *path, struct err *e)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return err_set(e, ERR_INVALID, "bad_setting", "operator_token_file: cannot open %s: %s",
                       path, strerror(errno));
    char line[sizeof c->operator_token + 2];
    bool ok = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    size_t n = ok ? strlen(line) : 0;
    while (n > 0 && isspace((unsigned char)line[n - 1]))
        line[--n] = '\0';
    size_t start = 0;
    while (start < n && isspace((unsigned char)line[start]))
        start++;
    if (!ok || start == n)
        return err_set(e, ERR_INVALID, "bad_setting", "operator_token_file: %s is empty", path);
    if (n - start >= sizeof c->operator_token)
        return err_set(e, ERR_INVALID, "bad_setting",
                       "operator_token_file: the token in %s is too long", path);
    memcpy(c->operator_token, line + start, n - start + 1);
    return true;
}

static bool boolean(const char *v, bool *out)
{
    if (!strcasecmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes") ||
        !strcasecmp(v, "on"))
        *out = true;
    else if (!strcasecmp(v, "0") || !strcasecmp(v, "false") || !strcasecmp(v, "no") ||
             !strcasecmp(v, "off") || !*v)
        *out = false;
    else
        return false;
    return true;
}

static bool copy(char *dst, size_t size, const char *v)
{
    size_t n = strlen(v);
    if (n >= size)
        return false;
    memcpy(dst, v, n + 1);
    return true;
}

/* A whole number from lo to hi, nothing else on the line. */
static bool whole(const char *v, long lo, long hi, int *out)
{
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (errno || !*v || *end || n < lo || n > hi)
        return false;
    *out = (int)n;
    return true;
}

/* Whether the directory `path` would be created in exists (a log file's: cardpostd makes
 * the file, not its directory). */
static bool in_a_directory(const char *path)
{
    char dir[1024];
    const char *slash = strrchr(path, '/');
    if (!slash)
        return true; /* (the working directory) */
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    if (n >= sizeof dir)
        return false;
    memcpy(dir, path, n);
    dir[n] = '\0';
    struct stat st;
    return stat(dir, &st) == 0 && S_ISDIR(st.st_mode);
}

bool config_set(struct config *c, const char *key, const char *v, struct err *e)
{
    bool ok;
    if (!strcmp(key, "db"))
        ok = copy(c->db, sizeof c->db, v);
    else if (!strcmp(key, "listen"))
        ok = copy(c->listen, sizeof c->listen, v);
    else if (!strcmp(key, "web_dir"))
        ok = copy(c->web_dir, sizeof c->web_dir, v);
    else if (!strcmp(key, "operator_token"))
        ok = copy(c->operator_token, sizeof c->operator_token, v);
    else if (!strcmp(key, "operator_token_file"))
        return !*v || token_file(c, v, e);
    else if (!strcmp(key, "public_url")) {
        ok = copy(c->public_url, sizeof c->public_url, v);
        size_t len = strlen(c->public_url);
        while (ok && len > 0 && c->public_url[len - 1] == '/')
            c->public_url[--len] = '\0';
    } else if (!strcmp(key, "smtp_url"))
        ok = copy(c->smtp.url, sizeof c->smtp.url, v) &&
             (!*v || !strncmp(v, "smtp://", 7) || !strncmp(v, "smtps://", 8));
    else if (!strcmp(key, "mail_domain"))
        ok = copy(c->mail_domain, sizeof c->mail_domain, v) && !strchr(v, '@');
    else if (!strcmp(key, "smtp_user"))
        ok = copy(c->smtp.user, sizeof c->smtp.user, v);
    else if (!strcmp(key, "smtp_password"))
        ok = copy(c->smtp.password, sizeof c->smtp.password, v);
    else if (!strcmp(key, "smtp_ca_file"))
        ok = copy(c->smtp.ca_file, sizeof c->smtp.ca_file, v);
    else if (!strcmp(key, "smtp_starttls"))
        ok = boolean(v, &c->smtp.starttls);
    else if (!strcmp(key, "mail_from"))
        ok = copy(c->smtp.from, sizeof c->smtp.from, v) && strchr(v, '@');
    else if (!strcmp(key, "allow_private_webhooks"))
        ok = boolean(v, &c->webhooks.allow_private);
    else if (!strcmp(key, "test_clock"))
        ok = boolean(v, &c->test_clock);
    else if (!strcmp(key, "vacation_days"))
        ok = whole(v, 0, 366, &c->vacation_days);
    else if (!strcmp(key, "durability")) {
        ok = !strcmp(v, "crash") || !strcmp(v, "power");
        c->durable_power = !strcmp(v, "power");
    } else if (!strcmp(key, "http_threads"))
        ok = whole(v, 0, 256, &c->http_threads);
    else if (!strcmp(key, "match_cache"))
        ok = whole(v, 1, 10000000, &c->match_cache);
    else if (!strcmp(key, "db_pool"))
        ok = whole(v, 0, 64, &c->db_pool); /* (0: the default, as older files say) */
    else if (!strcmp(key, "confirm_per_address"))
        ok = whole(v, 1, 1000, &c->confirm_per_address);
    else if (!strcmp(key, "confirm_per_player"))
        ok = whole(v, 1, 1000, &c->confirm_per_player);
    else if (!strcmp(key, "webhook_concurrency"))
        ok = whole(v, 1, 256, &c->webhooks.concurrency);
    else if (!strcmp(key, "webhook_per_host"))
        ok = whole(v, 1, 256, &c->webhooks.per_destination);
    else if (!strcmp(key, "invitation_seconds"))
        ok = whole(v, 1, 366 * 86400, &c->invitation_seconds);
    else if (!strcmp(key, "schedule_max_matches"))
        ok = whole(v, 1, 1000000, &c->schedule_max_matches);
    else if (!strcmp(key, "league_max_matches"))
        ok = whole(v, 1, 100000000, &c->league_max_matches);
    else if (!strcmp(key, "league_max_members"))
        ok = whole(v, 2, 4096, &c->league_max_members);
    else if (!strcmp(key, "max_connections"))
        ok = whole(v, 0, 1000000, &c->max_connections);
    else if (!strcmp(key, "max_connections_per_address"))
        ok = whole(v, 0, 1000000, &c->max_connections_per_address);
    else if (!strcmp(key, "max_streams"))
        ok = whole(v, 0, 1000000, &c->max_streams);
    else if (!strcmp(key, "max_streams_per_address"))
        ok = whole(v, 0, 1000000, &c->max_streams_per_address);
    else if (!strcmp(key, "rate_per_address"))
        ok = whole(v, 0, 1000000, &c->rate_per_address);
    else if (!strcmp(key, "rate_burst_per_address"))
        ok = whole(v, 1, 1000000, &c->rate_burst_per_address);
    else if (!strcmp(key, "rate_per_token"))
        ok = whole(v, 0, 1000000, &c->rate_per_token);
    else if (!strcmp(key, "rate_burst_per_token"))
        ok = whole(v, 1, 1000000, &c->rate_burst_per_token);
    else if (!strcmp(key, "metrics_listen")) /* HOST:PORT, or empty */
        ok = copy(c->metrics_listen, sizeof c->metrics_listen, v) &&
             (!*v || (strrchr(v, ':') && strrchr(v, ':') != v && strrchr(v, ':')[1]));
    else if (!strcmp(key, "trusted_proxies")) {
        struct limits_proxies p;
        if (!limits_proxies_parse(v, &p, e))
            return false;
        ok = copy(c->trusted_proxies, sizeof c->trusted_proxies, v);
        if (ok)
            c->proxies = p;
    } else if (!strcmp(key, "log_file"))
        ok = copy(c->log_file, sizeof c->log_file, v) && (!*v || in_a_directory(v));
    else if (!strcmp(key, "log_level"))
        ok = log_level_parse(v, &c->log_level);
    else
        return err_set(e, ERR_INVALID, "unknown_setting", "unknown setting '%s'", key);
    if (!ok)
        return err_set(e, ERR_INVALID, "bad_setting", "bad value for %s", key);
    return true;
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

/* The next setting of a config file: 1 with *key and *value (trimmed, in `line`), 0 at the
 * end, CONFIG_LINE_LONG for a line that does not fit `line` (the rest of it skipped), or
 * CONFIG_LINE_NO_EQ for a line without '='. Comments and blank lines are passed over;
 * *lineno counts lines. The one reader of both config_load_file and config_check_file. */
enum { CONFIG_LINE_LONG = -1, CONFIG_LINE_NO_EQ = -2 };
static int next_setting(FILE *f, char *line, size_t size, int *lineno, char **key, char **value)
{
    while (fgets(line, (int)size, f)) {
        (*lineno)++;
        if (!strchr(line, '\n') && !feof(f)) {
            int ch;
            while ((ch = fgetc(f)) != EOF && ch != '\n')
                ;
            return CONFIG_LINE_LONG;
        }
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *s = trim(line);
        if (!*s)
            continue;
        char *eq = strchr(s, '=');
        if (!eq)
            return CONFIG_LINE_NO_EQ;
        *eq = '\0';
        *key = trim(s);
        *value = trim(eq + 1);
        return 1;
    }
    return 0;
}

#define CONFIG_LINE_MAX 2048

bool config_load_file(struct config *c, const char *path, struct err *e)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return err_set(e, ERR_IO, "config", "cannot open %s: %s", path, strerror(errno));
    char line[CONFIG_LINE_MAX], *key, *value;
    int lineno = 0, got;
    bool ok = true;
    while (ok && (got = next_setting(f, line, sizeof line, &lineno, &key, &value)) != 0) {
        struct err why;
        if (got == CONFIG_LINE_LONG)
            ok = err_set(e, ERR_INVALID, "bad_setting", "%s:%d: the line is longer than %d bytes",
                         path, lineno, CONFIG_LINE_MAX - 2);
        else if (got == CONFIG_LINE_NO_EQ)
            ok = err_set(e, ERR_INVALID, "bad_setting", "%s:%d: expected key = value", path,
                         lineno);
        else if (!config_set(c, key, value, &why))
            ok = err_set(e, ERR_INVALID, why.tag, "%s:%d: %s", path, lineno, why.msg);
    }
    fclose(f);
    return ok;
}

bool config_load_env(struct config *c, struct err *e)
{
    static const char *const keys[] = {
        "db",        "listen",        "operator_token", "public_url", "web_dir",
        "smtp_url",  "smtp_user",     "smtp_password",  "smtp_starttls", "smtp_ca_file",
        "mail_from", "mail_domain", "allow_private_webhooks", "test_clock", "vacation_days",
        "http_threads", "durability", "match_cache", "db_pool", "operator_token_file",
        "confirm_per_address", "confirm_per_player", "webhook_concurrency", "webhook_per_host",
        "invitation_seconds", "schedule_max_matches", "league_max_matches", "league_max_members",
        "max_connections", "max_connections_per_address", "max_streams", "max_streams_per_address",
        "rate_per_address", "rate_burst_per_address", "rate_per_token", "rate_burst_per_token",
        "trusted_proxies", "metrics_listen", "log_file", "log_level",
    };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        char name[64] = "CARDPOST_";
        size_t n = strlen(name);
        for (const char *k = keys[i]; *k && n + 1 < sizeof name; k++)
            name[n++] = (char)toupper((unsigned char)*k);
        name[n] = '\0';
        const char *v = getenv(name);
        if (v && !config_set(c, keys[i], v, e))
            return false;
    }
    return true;
}

/* What a good value of a key looks like, for --check-config (keys not listed: their
 * parser's word alone). */
static const char *value_hint(const char *key)
{
    static const char *const hints[][2] = {
        {"smtp_url", "smtp://HOST:PORT or smtps://HOST:PORT, or empty"},
        {"mail_domain", "a domain, without '@'"},
        {"mail_from", "an email address (with '@')"},
        {"smtp_starttls", "true or false"},
        {"allow_private_webhooks", "true or false"},
        {"test_clock", "true or false"},
        {"vacation_days", "a whole number from 0 to 366"},
        {"durability", "crash or power"},
        {"http_threads", "a whole number from 0 to 256"},
        {"match_cache", "a whole number from 1 to 10000000"},
        {"db_pool", "a whole number from 0 to 64"},
        {"metrics_listen", "HOST:PORT, or empty"},
        {"log_level", "error, warn, info or debug"},
        {"log_file", "a file in a directory that exists, or empty for standard error"},
    };
    for (size_t i = 0; i < sizeof hints / sizeof hints[0]; i++)
        if (!strcmp(hints[i][0], key))
            return hints[i][1];
    return NULL;
}

int config_check_file(const char *path, FILE *out)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(out, "%s: cannot open: %s\n", path, strerror(errno));
        return -1;
    }
    struct config scratch;
    config_defaults(&scratch);
    char line[CONFIG_LINE_MAX], *key, *value;
    int lineno = 0, bad = 0, got;
    while ((got = next_setting(f, line, sizeof line, &lineno, &key, &value)) != 0) {
        if (got == CONFIG_LINE_LONG) {
            fprintf(out, "%s:%d: the line is longer than %d bytes\n", path, lineno,
                    CONFIG_LINE_MAX - 2);
            bad++;
            continue;
        }
        if (got == CONFIG_LINE_NO_EQ) {
            fprintf(out, "%s:%d: expected key = value\n", path, lineno);
            bad++;
            continue;
        }
        struct err why;
        if (config_set(&scratch, key, value, &why))
            continue;
        bad++;
        if (!strcmp(why.tag, "unknown_setting")) {
            fprintf(out, "%s:%d: %s: unknown setting\n", path, lineno, key);
        } else {
            /* A secret's value is never printed. */
            bool secret = strstr(key, "token") || strstr(key, "password") ||
                          strstr(key, "secret");
            const char *hint = value_hint(key);
            fprintf(out, "%s:%d: %s: bad value", path, lineno, key);
            if (!secret)
                fprintf(out, " \"%s\"", value);
            if (hint)
                fprintf(out, " (expected %s)", hint);
            else if (strncmp(why.msg, "bad value for ", 14) != 0)
                fprintf(out, " (%s)", why.msg);
            fputc('\n', out);
        }
    }
    fclose(f);
    return bad;
}
