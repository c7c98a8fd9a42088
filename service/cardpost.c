/* cardpost.c - the command-line tool: `cardpost replay|legal|verify FILE` (turn-log.md §4).
 * A public contract: other programs check logs with it. Everything it prints, errors
 * included, goes to standard output as one JSON object; exit 0 ok, 1 illegal or false,
 * 2 not a valid log (or bad usage).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "turnlog.h"

static void usage(FILE *out)
{
    fputs("usage: cardpost replay FILE   replay a cardpost-log/1, print the result\n"
          "       cardpost legal FILE    print every legal move of the seats to move\n"
          "       cardpost verify FILE   replay and check every deal against the seed\n"
          "FILE may be - for standard input.\n",
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

int main(int argc, char **argv)
{
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
