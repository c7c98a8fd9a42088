/* fuzz_log.c - libFuzzer target: arbitrary bytes as a cardpost-log/1 file. Whatever parses
 * is replayed with and without seed verification and turned into every JSON shape the CLI
 * prints (result, legal moves, each seat's and the spectator's view); a parsed log written
 * back must parse again and replay the same way. Game-agnostic: every game is covered.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "turnlog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Dump and free a JSON value, so the encoder sees every string the library built. */
static void consume(json_t *j)
{
    if (!j)
        abort();
    free(json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY));
    json_decref(j);
}

/* Replay `log`, build every output, and return the result (or failure) JSON it gives. */
static json_t *exercise(const struct tlog *log, bool verify)
{
    struct tlog_replay r;
    struct tlog_failure f;
    bool ok = tlog_replay(log, verify, &r, &f);
    json_t *outcome = ok ? tlog_result_json(&r) : tlog_failure_json(&f);
    /* Whether or not the replay went through, r.state is a valid state (the one before the
     * failing event), so everything that reads a state must cope with it. */
    consume(tlog_result_json(&r));
    consume(tlog_legal_json(&r.state));
    for (int seat = -1; seat < r.state.nseats; seat++)
        consume(tlog_view_json(&r.state, seat));
    tlog_replay_finish(&r);
    return outcome;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tlog_failure f;
    struct tlog *log = tlog_parse((const char *)data, size, &f);
    if (!log) {
        if (f.exit != 2)
            abort();
        consume(tlog_failure_json(&f));
        return 0;
    }
    json_t *plain = exercise(log, false);
    json_t *verified = exercise(log, true);

    /* Round trip: what tlog_to_json writes reads back and replays to the same outcome. */
    json_t *written = tlog_to_json(log, log->result);
    char *text = json_dumps(written, JSON_COMPACT);
    json_decref(written);
    if (!text)
        abort();
    struct tlog *again = tlog_parse(text, strlen(text), &f);
    if (!again) {
        fprintf(stderr, "written log does not parse back: %s\n%s\n", f.message, text);
        abort();
    }
    json_t *plain2 = exercise(again, false);
    if (!json_equal(plain, plain2)) {
        fprintf(stderr, "written log replays differently\n%s\n", text);
        abort();
    }
    free(text);
    json_decref(plain);
    json_decref(plain2);
    json_decref(verified);
    tlog_destroy(again);
    tlog_destroy(log);
    return 0;
}
