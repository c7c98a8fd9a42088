/* cardpost.c - the command-line tool: `cardpost replay|legal|verify FILE` (turn-log.md §4).
 * A public contract: other programs check logs with it. Everything it prints, errors
 * included, goes to standard output as one JSON object; exit 0 ok, 1 illegal or false,
 * 2 not a valid log (or bad usage).
 * And `cardpost mail-in`: the mail server pipes each message for play+ addresses to it; it
 * hands the message to cardpostd and answers the mail server in sysexits.h codes.
 * And `cardpost bot`: plays seats through the REST API (service/client/bot.c, docs/bots.md).
 * And `cardpost backup|restore`: an online copy of the service's database, checked, and
 * putting one back (storage/backup.c, docs/operations.md).
 * And `cardpost migrate-db FROM TO`: a SQLite database copied to PostgreSQL (migrate.c).
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bot.h"
#include "buf.h"
#include "mail.h"
#include "migrate.h"
#include "store.h"
#include "turnlog.h"

/* sysexits.h */
#define EX_OK 0
#define EX_USAGE 64
#define EX_NOPERM 77
#define EX_TEMPFAIL 75

static void usage(FILE *out)
{
    fputs("usage: cardpost replay FILE   replay a cardpost-log/1, print the result\n"
          "       cardpost legal FILE    print every legal move of the seats to move\n"
          "       cardpost verify FILE   replay and check every deal against the seed\n"
          "FILE may be - for standard input.\n"
          "       cardpost mail-in [--url URL] [--token-file FILE] [--recipient ADDRESS]\n"
          "                              hand one email (standard input) to cardpostd\n"
          "                              (defaults: $CARDPOST_URL or http://127.0.0.1:8080,\n"
          "                              $CARDPOST_OPERATOR_TOKEN); exit 0 done, 77 refused\n"
          "                              (the reason on standard error, for the bounce),\n"
          "                              75 try again later\n"
          "       cardpost bot --url URL --token TOKEN ... (--match ID ... | --league ID)\n"
          "                    [--policy random|sensible] [--seed N] [--delay-ms N]\n"
          "                              play seats of matches (docs/bots.md)\n"
          "       cardpost backup --db PATH OUT\n"
          "                              copy the database (cardpostd may be running) to the\n"
          "                              new file OUT, checked; exit 0 done, 1 failed\n"
          "       cardpost restore BACKUP --db PATH [--force]\n"
          "                              check BACKUP and make it the database PATH (refused\n"
          "                              while cardpostd holds PATH open; --force replaces an\n"
          "                              existing PATH); exit 0 done, 1 refused or failed\n"
          "       cardpost migrate-db FROM.db postgresql://...\n"
          "                              copy a SQLite database into a fresh PostgreSQL one\n"
          "                              and verify every match's log there (docs/scaling.md);\n"
          "                              exit 0 done, 1 refused or failed\n",
          out);
}

static void print(json_t *j)
{
    char *text = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
    if (text) {
        puts(text);
        free(text);
    }
    json_decref(j);
}

static int print_failure(const struct tlog_failure *f)
{
    print(tlog_failure_json(f));
    return f->exit;
}

/* What mail-in tells the mail server of the service's answer `code` with body `text`: done
 * (the answer printed), refused for good (the reason on standard error, for the bounce), or
 * try again later. */
static int mail_in_answer(long code, const char *text)
{
    int status = EX_TEMPFAIL;
    json_t *j = text && *text ? json_loads(text, 0, NULL) : NULL;
    const char *detail = json_string_value(json_object_get(j, "detail"));
    if (code == 200) {
        status = EX_OK;
        if (text && *text)
            puts(text);
    } else if (code == 422 || code == 404 || code == 413) {
        status = EX_NOPERM;
        fprintf(stderr, "cardpost: your message was not accepted: %s\n",
                detail ? detail : "refused");
    } else {
        fprintf(stderr, "cardpost mail-in: the service answered %ld: %s\n", code,
                detail ? detail : "");
    }
    json_decref(j);
    return status;
}

/* mail-in: read one message, POST it to /v1/mail/inbound. A message over the limit is cut to
 * its header section, so that the service can still tell the player why nothing happened. */
static int mail_in(int argc, char **argv)
{
    const char *url = getenv("CARDPOST_URL");
    const char *token = getenv("CARDPOST_OPERATOR_TOKEN");
    const char *recipient = NULL, *token_file = NULL;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--url") && i + 1 < argc)
            url = argv[++i];
        else if (!strcmp(argv[i], "--token-file") && i + 1 < argc)
            token_file = argv[++i];
        else if (!strcmp(argv[i], "--recipient") && i + 1 < argc)
            recipient = argv[++i];
        else {
            usage(stderr);
            return EX_USAGE;
        }
    }
    char file_token[512];
    if (token_file) {
        FILE *f = fopen(token_file, "r");
        if (!f || !fgets(file_token, sizeof file_token, f)) {
            fprintf(stderr, "cardpost mail-in: cannot read %s\n", token_file);
            if (f)
                fclose(f);
            return EX_TEMPFAIL;
        }
        fclose(f);
        file_token[strcspn(file_token, "\r\n")] = '\0';
        token = file_token;
    }
    if (!token || !*token) {
        fprintf(stderr, "cardpost mail-in: no operator token (--token-file or "
                        "CARDPOST_OPERATOR_TOKEN)\n");
        return EX_TEMPFAIL;
    }
    struct tlog_failure f;
    size_t len;
    char *msg = tlog_read_file("-", &len, &f);
    if (!msg) {
        fprintf(stderr, "cardpost mail-in: %s\n", f.message);
        return EX_TEMPFAIL;
    }
    size_t send = len;
    long long truncated = 0;
    if (len > MAIL_MAX_MESSAGE) {
        char *blank = strstr(msg, "\r\n\r\n");
        char *lf = strstr(msg, "\n\n");
        char *end = blank && (!lf || blank < lf) ? blank + 4 : lf ? lf + 2 : msg + 65536;
        send = (size_t)(end - msg) < 65536 ? (size_t)(end - msg) : 65536;
        truncated = (long long)len;
    }
    char endpoint[1200], auth[600], rcpt[600], cut[64];
    snprintf(endpoint, sizeof endpoint, "%s/v1/mail/inbound",
             url && *url ? url : "http://127.0.0.1:8080");
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
    struct curl_slist *h = curl_slist_append(NULL, auth);
    h = curl_slist_append(h, "Content-Type: message/rfc822");
    if (recipient) {
        snprintf(rcpt, sizeof rcpt, "X-Cardpost-Recipient: %s", recipient);
        h = curl_slist_append(h, rcpt);
    }
    if (truncated) {
        snprintf(cut, sizeof cut, "X-Cardpost-Truncated: %lld", truncated);
        h = curl_slist_append(h, cut);
    }
    struct buf answer = BUF_INIT;
    CURL *c = curl_easy_init();
    int status = EX_TEMPFAIL;
    long code = 0;
    if (c) {
        curl_easy_setopt(c, CURLOPT_URL, endpoint);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, msg);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)send);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, buf_write);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &answer);
        curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
        CURLcode rc = curl_easy_perform(c);
        char *text = buf_finish(&answer, NULL);
        if (rc != CURLE_OK) {
            fprintf(stderr, "cardpost mail-in: %s: %s\n", endpoint, curl_easy_strerror(rc));
        } else {
            curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
            status = mail_in_answer(code, text);
        }
        free(text);
        curl_easy_cleanup(c);
    }
    curl_slist_free_all(h);
    free(msg);
    return status;
}

/* backup and restore: one JSON line on standard output when done, the reason on standard
 * error when not (exit 1; 2 for bad usage). */
static int backup_restore(int argc, char **argv)
{
    bool restore = !strcmp(argv[1], "restore"), force = false;
    const char *db = NULL, *file = NULL;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--db") && i + 1 < argc)
            db = argv[++i];
        else if (restore && !strcmp(argv[i], "--force"))
            force = true;
        else if (argv[i][0] != '-' && !file)
            file = argv[i];
        else
            file = db = NULL, i = argc;
    }
    if (!db || !file) {
        usage(stderr);
        return 2;
    }
    struct store_copy_info info;
    struct err e;
    bool ok = restore ? store_restore(file, db, force, &info, &e)
                      : store_backup(db, file, &info, &e);
    if (!ok) {
        fprintf(stderr, "cardpost %s: %s\n", argv[1], e.msg);
        return 1;
    }
    json_t *j = json_pack("{s:s, s:s, s:i, s:I, s:s}", restore ? "restored" : "backup", file,
                          "db", db, "schema_version", info.version, "bytes",
                          (json_int_t)info.bytes, "integrity", "ok");
    print(j);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "mail-in"))
        return mail_in(argc, argv);
    if (argc >= 2 && !strcmp(argv[1], "bot"))
        return bot_main(argc, argv);
    if (argc >= 2 && !strcmp(argv[1], "migrate-db"))
        return migrate_db_main(argc, argv);
    if (argc >= 2 && (!strcmp(argv[1], "backup") || !strcmp(argv[1], "restore")))
        return backup_restore(argc, argv);
    if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        usage(stdout);
        return 0;
    }
    if (argc != 3 || (strcmp(argv[1], "replay") && strcmp(argv[1], "legal") &&
                      strcmp(argv[1], "verify"))) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    struct tlog_failure f;
    size_t len;
    char *buf = tlog_read_file(argv[2], &len, &f);
    if (!buf)
        return print_failure(&f);
    struct tlog *log = tlog_parse(buf, len, &f);
    free(buf);
    if (!log)
        return print_failure(&f);

    struct tlog_replay r;
    int status = 0;
    if (!tlog_replay(log, !strcmp(cmd, "verify"), &r, &f))
        status = print_failure(&f);
    else if (!strcmp(cmd, "legal"))
        print(tlog_legal_json(&r.state));
    else
        print(tlog_result_json(&r));
    tlog_replay_finish(&r);
    tlog_destroy(log);
    return status;
}
