/* test_turnlog.c - the `cardpost-log/1` reader and the command-line contract of turn-log.md
 * §2-§4, through the real binary ($CARDPOST) fed from files in a temporary directory and
 * from standard input: every malformed-file class (exit 2), illegal events (exit 1), result
 * claims, the `legal` output, ignored metadata, default options, `verify`, and a
 * known-answer test of the §5 derivation against tests/tools/derive_vectors.py.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "testlib.h"
#include "turnlog.h"

static char tmpdir[64];
static int nfiles;

/* ---- Running the binary -------------------------------------------------------------------- */

static void write_all(int fd, const char *buf, size_t len)
{
    while (len) {
        ssize_t w = write(fd, buf, len);
        if (w <= 0)
            return; /* the child stopped reading; its output tells the rest */
        buf += w;
        len -= (size_t)w;
    }
}

/* Run `cardpost cmd path` with `input` on standard input (NULL: none). Returns the exit
 * status; *out receives the parsed standard output, which must be one JSON object. */
static int run_cli(const char *cmd, const char *path, const char *input, json_t **out)
{
    const char *exe = getenv("CARDPOST");
    assert_non_null(exe);
    int in[2], pout[2];
    assert_int_equal(pipe(in), 0);
    assert_int_equal(pipe(pout), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(pout[1], 1);
        close(in[0]);
        close(in[1]);
        close(pout[0]);
        close(pout[1]);
        execl(exe, exe, cmd, path, (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(pout[1]);
    if (input)
        write_all(in[1], input, strlen(input));
    close(in[1]);
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (len + 1 == cap)
            buf = realloc(buf, cap *= 2);
        assert_non_null(buf);
        ssize_t r = read(pout[0], buf + len, cap - len - 1);
        if (r <= 0)
            break;
        len += (size_t)r;
    }
    buf[len] = '\0';
    close(pout[0]);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    json_error_t jerr;
    *out = json_loads(buf, 0, &jerr);
    if (!*out || !json_is_object(*out))
        fail_msg("cardpost %s printed no JSON object: '%.300s'", cmd, buf);
    free(buf);
    return WEXITSTATUS(status);
}

static char *write_temp(const char *text)
{
    static char path[128];
    snprintf(path, sizeof path, "%s/log%d.json", tmpdir, nfiles++);
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(text, 1, strlen(text), fp), strlen(text));
    fclose(fp);
    return path;
}

/* Run `cmd` on `text` twice, from a file and from standard input ("-"): both runs must
 * agree on the exit status and the output. Returns the output (new reference). */
static json_t *run_text(const char *cmd, const char *text, int *exit_code)
{
    char *path = write_temp(text);
    json_t *from_file, *from_stdin;
    int a = run_cli(cmd, path, NULL, &from_file);
    int b = run_cli(cmd, "-", text, &from_stdin);
    unlink(path);
    assert_int_equal(a, b);
    if (!json_equal(from_file, from_stdin))
        fail_msg("cardpost %s: the file and standard input give different output", cmd);
    json_decref(from_stdin);
    *exit_code = a;
    return from_file;
}

static json_t *run_json(const char *cmd, const json_t *log, int *exit_code)
{
    char *text = json_dumps(log, JSON_COMPACT);
    assert_non_null(text);
    json_t *out = run_text(cmd, text, exit_code);
    free(text);
    return out;
}

/* The output must be {"error": {index, seat, move, code, message}} with that exit and
 * index (-1: null). Returns the inner object, borrowed from `out`. */
static json_t *check_error(json_t *out, int exit_code, int want_exit, long want_index,
                           const char *what)
{
    json_t *err = json_object_get(out, "error");
    if (exit_code != want_exit || !json_is_object(err)) {
        char *s = json_dumps(out, JSON_COMPACT);
        fail_msg("%.300s: exit %d, want %d: %.300s", what, exit_code, want_exit, s);
    }
    assert_int_equal(json_object_size(out), 1);
    assert_int_equal(json_object_size(err), 5);
    json_t *index = json_object_get(err, "index");
    if (want_index < 0 ? !json_is_null(index)
                       : !json_is_integer(index) || json_integer_value(index) != want_index) {
        char *s = json_dumps(out, JSON_COMPACT);
        fail_msg("%.300s: index should be %ld: %.300s", what, want_index, s);
    }
    assert_non_null(json_object_get(err, "seat"));
    assert_non_null(json_object_get(err, "move"));
    json_t *code = json_object_get(err, "code");
    assert_true(json_is_string(code) && json_string_length(code) > 0);
    json_t *message = json_object_get(err, "message");
    assert_true(json_is_string(message) && json_string_length(message) > 0);
    return err;
}

static void expect_text(const char *cmd, const char *text, int want_exit, long want_index)
{
    int code;
    json_t *out = run_text(cmd, text, &code);
    check_error(out, code, want_exit, want_index, text);
    json_decref(out);
}

static void expect_json(const char *cmd, json_t *log, int want_exit, long want_index)
{
    char *text = json_dumps(log, JSON_COMPACT);
    expect_text(cmd, text, want_exit, want_index);
    free(text);
}

/* ---- Building logs ------------------------------------------------------------------------- */

static json_t *cards_json(const rules_card *cards, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++) {
        char c[3];
        rules_card_format(cards[i], c);
        json_array_append_new(a, json_string(c));
    }
    return a;
}

/* {"deal": [2C 3C ... AS]}: canonical order, so position i is card i. */
static json_t *canonical_deal(void)
{
    rules_card deck[RULES_NCARDS];
    for (int i = 0; i < RULES_NCARDS; i++)
        deck[i] = (rules_card)i;
    return json_pack("{s:o}", "deal", cards_json(deck, RULES_NCARDS));
}

static json_t *move_event(int seat, const char *move)
{
    return json_pack("{s:i, s:s}", "seat", seat, "move", move);
}

/* Whether `j` equals the JSON in `text`. */
static bool json_equal_text(const json_t *j, const char *text)
{
    json_error_t jerr;
    json_t *want = json_loads(text, JSON_DECODE_ANY, &jerr);
    if (!want)
        fail_msg("bad expected JSON: %s", text);
    bool same = json_equal(j, want);
    json_decref(want);
    return same;
}

/* A Hearts log (steals `options`, which may be NULL for none, and `events`). */
static json_t *hearts_log(json_t *options, json_t *events)
{
    json_t *log = json_pack("{s:s, s:s, s:o}", "format", "cardpost-log/1", "game", "hearts",
                            "events", events);
    if (options)
        json_object_set_new(log, "options", options);
    return log;
}

/* The 4-seat opening used throughout, on the canonical deal with dealer 0: seat s holds the
 * cards i with (1 + i) mod 4 == s, so seat 1 holds 2C. Everyone passes three clubs left;
 * seat 1 keeps 2C and leads it; seat 2 (holding 6C TC AC now) follows. `upto` events. */
static json_t *opening(int upto)
{
    json_t *ev = json_array();
    json_t *all[] = {
        canonical_deal(),
        move_event(0, "pass 5C 9C KC"),
        move_event(1, "pass 6C TC AC"),
        move_event(2, "pass 3C 7C JC"),
        move_event(3, "pass 4C 8C QC"),
        move_event(1, "play 2C"),
        move_event(2, "play 6C"),
    };
    for (int i = 0; i < (int)(sizeof all / sizeof all[0]); i++) {
        if (i < upto)
            json_array_append_new(ev, all[i]);
        else
            json_decref(all[i]);
    }
    return ev;
}

/* ---- Exit 2: not a valid log ----------------------------------------------------------------- */

static void test_malformed_files(void **state)
{
    (void)state;
    static const char *const texts[] = {
        "",
        "not json",
        "{\"format\": \"cardpost-log/1\", \"game\": \"hearts\", \"events\": [",
        "[1, 2, 3]",
        "\"cardpost-log/1\"",
        "null",
        "{\"game\": \"hearts\", \"events\": []}",
        "{\"format\": \"cardpost-log/2\", \"game\": \"hearts\", \"events\": []}",
        "{\"format\": 1, \"game\": \"hearts\", \"events\": []}",
        "{\"format\": \"CARDPOST-LOG/1\", \"game\": \"hearts\", \"events\": []}",
        "{\"format\": \"cardpost-log/1\", \"events\": []}",
        "{\"format\": \"cardpost-log/1\", \"game\": \"chess\", \"events\": []}",
        "{\"format\": \"cardpost-log/1\", \"game\": \"Hearts\", \"events\": []}",
        "{\"format\": \"cardpost-log/1\", \"game\": 0, \"events\": []}",
        "{\"format\": \"cardpost-log/1\", \"game\": \"hearts\"}",
        "{\"format\": \"cardpost-log/1\", \"game\": \"hearts\", \"events\": {}}",
        "{\"format\": \"cardpost-log/1\", \"game\": \"hearts\", \"events\": \"deal\"}",
        "{\"format\": \"cardpost-log/1\", \"game\": \"hearts\", \"events\": null}",
    };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        expect_text("replay", texts[i], 2, -1);
        expect_text("legal", texts[i], 2, -1);
    }

    /* A missing file. */
    json_t *out;
    char path[160];
    snprintf(path, sizeof path, "%s/no-such-file.json", tmpdir);
    int code = run_cli("replay", path, NULL, &out);
    check_error(out, code, 2, -1, "missing file");
    json_decref(out);
}

static void test_bad_options(void **state)
{
    (void)state;
    static const char *const options[] = {
        "[]", "\"seats=4\"", "4", "true",
        "{\"seats\": 4, \"colour\": \"red\"}", "{\"players\": 4}", "{\"Seats\": 4}",
        "{\"seats\": 2}", "{\"seats\": 7}", "{\"seats\": 0}", "{\"seats\": -4}",
        "{\"seats\": 1.5}", "{\"seats\": \"4\"}", "{\"seats\": true}", "{\"seats\": 10}",
        "{\"target\": 0}", "{\"target\": -1}", "{\"target\": 1.5}", "{\"target\": \"100\"}",
        "{\"target\": false}",
        "{\"first_dealer\": 4}", "{\"seats\": 3, \"first_dealer\": 3}",
        "{\"first_dealer\": -1}", "{\"first_dealer\": \"0\"}", "{\"first_dealer\": 0.5}",
        "{\"seats\": 6, \"first_dealer\": 6}",
        "{\"moon\": \"none\"}", "{\"moon\": \"ADD\"}", "{\"moon\": \"\"}", "{\"moon\": 0}",
        "{\"moon\": [\"add\"]}", "{\"moon\": \"add \"}",
    };
    for (size_t i = 0; i < sizeof options / sizeof options[0]; i++) {
        char text[400];
        snprintf(text, sizeof text,
                 "{\"format\": \"cardpost-log/1\", \"game\": \"hearts\", \"options\": %s, "
                 "\"events\": []}",
                 options[i]);
        expect_text("replay", text, 2, -1);
    }
    /* The edges that are fine. */
    static const char *const fine[] = {
        "{\"seats\": 3}", "{\"seats\": 6, \"first_dealer\": 5}", "{\"target\": 1}",
        "{\"moon\": \"subtract\"}", "{\"moon\": \"choose\"}", "{}", "null",
    };
    for (size_t i = 0; i < sizeof fine / sizeof fine[0]; i++) {
        char text[400];
        snprintf(text, sizeof text,
                 "{\"format\": \"cardpost-log/1\", \"game\": \"hearts\", \"options\": %s, "
                 "\"events\": []}",
                 fine[i]);
        int code;
        json_t *out = run_text("replay", text, &code);
        if (code != 0)
            fail_msg("%s refused", fine[i]);
        json_decref(out);
    }
}

/* One event (JSON text) at `index` after `prefix` valid events of the opening. */
static void expect_bad_event(int prefix, const char *event, int want_exit)
{
    json_t *log = hearts_log(NULL, opening(prefix));
    json_error_t jerr;
    json_t *ev = json_loads(event, JSON_DECODE_ANY, &jerr);
    assert_non_null(ev);
    json_array_append_new(json_object_get(log, "events"), ev);
    expect_json("replay", log, want_exit, prefix);
    json_decref(log);
}

static void test_malformed_events(void **state)
{
    (void)state;
    static const char *const events[] = {
        "1", "\"play 2C\"", "null", "[]", "{}", "{\"at\": \"2024-01-01\"}",
        "{\"deal\": [], \"seat\": 0, \"move\": \"resign\"}",
        "{\"deal\": [], \"shuffle\": []}",
        "{\"shuffle\": [], \"seat\": 0}",
        "{\"seat\": \"0\", \"move\": \"resign\"}", "{\"seat\": 1.0, \"move\": \"resign\"}",
        "{\"seat\": null, \"move\": \"resign\"}", "{\"seat\": true, \"move\": \"resign\"}",
        "{\"move\": \"resign\"}",
        "{\"seat\": 0, \"move\": 5}", "{\"seat\": 0, \"move\": null}",
        "{\"seat\": 0, \"move\": [\"resign\"]}", "{\"seat\": 0}",
        "{\"deal\": \"2C 3C\"}", "{\"deal\": null}", "{\"deal\": {}}",
    };
    for (size_t i = 0; i < sizeof events / sizeof events[0]; i++) {
        expect_bad_event(0, events[i], 2);
        expect_bad_event(3, events[i], 2);
    }
}

/* A deal made of the canonical deck with `edit` applied to its JSON array. */
static void expect_bad_deal(void (*edit)(json_t *cards), int prefix)
{
    json_t *log = hearts_log(NULL, opening(prefix));
    json_t *deal = canonical_deal();
    edit(json_object_get(deal, "deal"));
    json_array_append_new(json_object_get(log, "events"), deal);
    expect_json("replay", log, 2, prefix);
    expect_json("verify", log, 2, prefix); /* structure before the commitment */
    json_decref(log);
}

static void drop_last(json_t *a)
{
    json_array_remove(a, json_array_size(a) - 1);
}

static void add_extra(json_t *a)
{
    json_array_append_new(a, json_string("2C"));
}

static void repeat_card(json_t *a)
{
    json_array_set_new(a, 51, json_string("2C"));
}

static void repeat_lenient(json_t *a)
{
    json_array_set_new(a, 51, json_string("2♣")); /* the same card as "2C" */
}

static void invalid_card(json_t *a)
{
    json_array_set_new(a, 7, json_string("1C"));
}

static void invalid_text(json_t *a)
{
    json_array_set_new(a, 0, json_string("XX"));
}

static void number_card(json_t *a)
{
    json_array_set_new(a, 20, json_integer(20));
}

static void empty_deal(json_t *a)
{
    json_array_clear(a);
}

static void test_bad_deals(void **state)
{
    (void)state;
    void (*const edits[])(json_t *) = {drop_last,    add_extra,    repeat_card, repeat_lenient,
                                       invalid_card, invalid_text, number_card, empty_deal};
    for (size_t i = 0; i < sizeof edits / sizeof edits[0]; i++)
        expect_bad_deal(edits[i], 0);
    /* A good deal where none is due: in the pass phase, and in the play phase: an illegal
     * event at its index (turn-log.md §2, issue 13). The verify runs reach the commitment
     * check first (exit 1), so only replay and legal are run. */
    for (int prefix = 1; prefix <= 6; prefix++) {
        json_t *log = hearts_log(NULL, opening(prefix));
        json_array_append_new(json_object_get(log, "events"), canonical_deal());
        expect_json("replay", log, 1, prefix);
        expect_json("legal", log, 1, prefix);
        json_decref(log);
    }
    /* A shuffle in Hearts is never due: an illegal event too. */
    json_t *log = hearts_log(NULL, opening(1));
    json_array_append_new(json_object_get(log, "events"), json_pack("{s:[s]}", "shuffle", "2C"));
    expect_json("replay", log, 1, 1);
    json_decref(log);
}

/* ---- Exit 1: illegal events ---------------------------------------------------------------- */

static void expect_illegal(int prefix, int seat, const char *move)
{
    json_t *log = hearts_log(NULL, opening(prefix));
    json_array_append_new(json_object_get(log, "events"), move_event(seat, move));
    int code;
    json_t *out = run_json("replay", log, &code);
    char what[200];
    snprintf(what, sizeof what, "event %d: seat %d '%s'", prefix, seat, move);
    json_t *err = check_error(out, code, 1, prefix, what);
    json_t *s = json_object_get(err, "seat");
    assert_true(json_is_integer(s) && json_integer_value(s) == seat);
    json_t *m = json_object_get(err, "move");
    assert_true(json_is_string(m));
    assert_string_equal(json_string_value(m), move); /* the log's text, as written */
    json_decref(out);
    /* legal replays the same way and fails at the same event. */
    out = run_json("legal", log, &code);
    check_error(out, code, 1, prefix, what);
    json_decref(out);
    json_decref(log);
}

static void test_illegal_events(void **state)
{
    (void)state;
    /* Move text that does not parse. */
    expect_illegal(1, 0, "fly away");
    expect_illegal(1, 0, "");
    expect_illegal(1, 0, "pass 5C 9C");
    expect_illegal(1, 0, "pass 5C 9C KC 4D");
    expect_illegal(1, 0, "  PASS 5c 9c XX ");
    expect_illegal(6, 3, "play");
    /* Seat out of range. */
    expect_illegal(1, 4, "pass 2C 6C TC");
    expect_illegal(1, -1, "pass 5C 9C KC");
    expect_illegal(0, 4, "resign");
    expect_illegal(6, 99, "play 3C");
    /* A seat move while the deal is due. */
    expect_illegal(0, 0, "pass 5C 9C KC");
    /* Wrong phase. */
    expect_illegal(1, 1, "play 2C");
    expect_illegal(5, 2, "pass 6C TC AC");
    expect_illegal(1, 0, "moon add");
    expect_illegal(1, 0, "lead 2C");
    expect_illegal(1, 0, "ready");
    /* Not your turn, and other refusals of the rules. */
    expect_illegal(5, 3, "play 3C");
    expect_illegal(5, 1, "play 5C");
    expect_illegal(7, 3, "play 5S");  /* 3 holds clubs: must follow */
    expect_illegal(7, 3, "play 2S");  /* not 3's card */
    expect_illegal(2, 0, "pass 5C 9C KC");  /* a pass cannot be made twice */
    expect_illegal(2, 0, "pass 5C 9C 4D");  /* nor changed */
    expect_illegal(1, 1, "pass 2C 2C 6C");
    expect_illegal(1, 1, "pass 3C 7C JC");  /* seat 2's cards */

    /* After a resign every event is illegal, a deal included (exit 1 for moves). */
    json_t *ev = opening(2);
    json_array_append_new(ev, move_event(3, "resign"));
    json_t *log = hearts_log(NULL, ev);
    int code;
    json_t *out = run_json("replay", log, &code);
    assert_int_equal(code, 0);
    assert_true(json_is_true(json_object_get(out, "finished")));
    assert_int_equal(json_integer_value(json_object_get(out, "resigned")), 3);
    json_decref(out);
    json_decref(log);
    static const char *const after[] = {"resign", "pass 3C 7C JC", "play 2C"};
    for (int i = 0; i < 3; i++) {
        ev = opening(3);
        json_array_append_new(ev, move_event(0, "resign"));
        json_array_append_new(ev, move_event(2, after[i]));
        log = hearts_log(NULL, ev);
        out = run_json("replay", log, &code);
        check_error(out, code, 1, 4, after[i]);
        json_decref(out);
        json_decref(log);
    }
    /* A deal after the match is over is one where none is due: an illegal event. */
    ev = opening(3);
    json_array_append_new(ev, move_event(0, "resign"));
    json_array_append_new(ev, canonical_deal());
    log = hearts_log(NULL, ev);
    expect_json("replay", log, 1, 4);
    json_decref(log);
    /* resign is legal before the first deal. */
    ev = json_array();
    json_array_append_new(ev, move_event(2, "resign"));
    log = hearts_log(json_pack("{s:i}", "seats", 5), ev);
    out = run_json("replay", log, &code);
    assert_int_equal(code, 0);
    assert_true(json_equal_text(out, "{\"finished\": true, \"totals\": [0, 0, 0, 0, 0], "
                                     "\"ranking\": [[0, 1, 3, 4], [2]], \"hands\": [], "
                                     "\"resigned\": 2, \"to_move\": []}"));
    json_decref(out);
    json_decref(log);
}

/* ---- Results and claims -------------------------------------------------------------------- */

static void test_result_and_claims(void **state)
{
    (void)state;
    json_t *log = hearts_log(NULL, opening(7));
    int code;
    json_t *out = run_json("replay", log, &code);
    assert_int_equal(code, 0);
    json_error_t jerr;
    assert_true(json_equal_text(out, "{\"finished\": false, \"totals\": [0, 0, 0, 0], "
                                     "\"ranking\": [[0, 1, 2, 3]], \"hands\": [], "
                                     "\"resigned\": null, \"to_move\": [3]}"));

    /* The whole result as a claim: it holds. So does a part of it. */
    json_object_set(log, "result", out);
    json_t *again = run_json("replay", log, &code);
    assert_int_equal(code, 0);
    assert_true(json_equal(again, out));
    json_decref(again);
    json_decref(out);
    static const char *const true_claims[] = {
        "{\"finished\": false}", "{\"to_move\": [3]}", "{}", "{\"totals\": [0, 0, 0, 0]}"};
    for (size_t i = 0; i < sizeof true_claims / sizeof true_claims[0]; i++) {
        json_object_set_new(log, "result", json_loads(true_claims[i], 0, &jerr));
        out = run_json("replay", log, &code);
        assert_int_equal(code, 0);
        json_decref(out);
    }
    /* Claims that do not hold: exit 1 with a null index (and null seat and move). */
    static const char *const false_claims[] = {
        "{\"finished\": true}",         "{\"totals\": [0, 0, 0, 1]}",
        "{\"ranking\": [[0], [1, 2, 3]]}", "{\"resigned\": 2}",
        "{\"to_move\": []}",            "{\"hands\": [{\"scores\": [0, 0, 0, 0]}]}",
        "{\"finished\": false, \"winner\": 1}",
    };
    for (size_t i = 0; i < sizeof false_claims / sizeof false_claims[0]; i++) {
        json_object_set_new(log, "result", json_loads(false_claims[i], 0, &jerr));
        out = run_json("replay", log, &code);
        json_t *err = check_error(out, code, 1, -1, false_claims[i]);
        assert_true(json_is_null(json_object_get(err, "seat")));
        assert_true(json_is_null(json_object_get(err, "move")));
        json_decref(out);
    }
    json_decref(log);
}

/* ---- legal --------------------------------------------------------------------------------- */

static json_t *legal_of(json_t *log)
{
    int code;
    json_t *out = run_json("legal", log, &code);
    assert_int_equal(code, 0);
    assert_int_equal(json_object_size(out), 2);
    assert_true(json_is_array(json_object_get(out, "to_move")));
    assert_true(json_is_object(json_object_get(out, "legal")));
    return out;
}

static void check_passes(json_t *list, int nseats_hand, const char *first, const char *last)
{
    size_t want = (size_t)nseats_hand * (nseats_hand - 1) * (nseats_hand - 2) / 6;
    assert_int_equal(json_array_size(list), want);
    assert_string_equal(json_string_value(json_array_get(list, 0)), first);
    assert_string_equal(json_string_value(json_array_get(list, want - 1)), last);
    for (size_t i = 0; i < want; i++) {
        const char *m = json_string_value(json_array_get(list, i));
        assert_non_null(m);
        assert_int_equal(strncmp(m, "pass ", 5), 0);
        assert_int_equal(strlen(m), 13);
        assert_null(strstr(m, "resign"));
        if (i > 0)
            assert_string_not_equal(m, json_string_value(json_array_get(list, i - 1)));
    }
}

static void test_legal_output(void **state)
{
    (void)state;
    /* Before the deal nobody moves (resign is left out). */
    json_t *log = hearts_log(NULL, json_array());
    json_t *out = legal_of(log);
    assert_true(json_equal_text(out, "{\"to_move\": [], \"legal\": {}}"));
    json_decref(out);
    json_decref(log);

    /* 4 seats after the deal: every combination, C(13,3) = 286 each, canonical order. */
    log = hearts_log(NULL, opening(1));
    out = legal_of(log);
    json_t *legal = json_object_get(out, "legal");
    assert_true(json_equal_text(json_object_get(out, "to_move"), "[0,1,2,3]"));
    assert_int_equal(json_object_size(legal), 4);
    check_passes(json_object_get(legal, "0"), 13, "pass 5C 9C KC", "pass 6S TS AS");
    check_passes(json_object_get(legal, "1"), 13, "pass 2C 6C TC", "pass 3S 7S JS");
    check_passes(json_object_get(legal, "2"), 13, "pass 3C 7C JC", "pass 4S 8S QS");
    check_passes(json_object_get(legal, "3"), 13, "pass 4C 8C QC", "pass 5S 9S KS");
    json_decref(out);
    json_decref(log);

    /* Once seats 0 and 1 have passed, only 2 and 3 are to move. */
    log = hearts_log(NULL, opening(3));
    out = legal_of(log);
    assert_true(json_equal_text(json_object_get(out, "to_move"), "[2,3]"));
    assert_int_equal(json_object_size(json_object_get(out, "legal")), 2);
    json_decref(out);
    json_decref(log);

    /* The first lead, then following suit. */
    log = hearts_log(NULL, opening(5));
    out = legal_of(log);
    assert_true(json_equal_text(out, "{\"to_move\": [1], \"legal\": {\"1\": [\"play 2C\"]}}"));
    json_decref(out);
    json_decref(log);
    log = hearts_log(NULL, opening(6));
    out = legal_of(log);
    assert_true(json_equal_text(out, "{\"to_move\": [2], \"legal\": {\"2\": [\"play 6C\", "
                                     "\"play TC\", \"play AC\"]}}"));
    json_decref(out);
    json_decref(log);

    /* 3 seats, dealer 0: 17 cards each, C(17,3) = 680 passes; AS is the hole. */
    json_t *ev = json_array();
    json_array_append_new(ev, canonical_deal());
    log = hearts_log(json_pack("{s:i}", "seats", 3), ev);
    out = legal_of(log);
    legal = json_object_get(out, "legal");
    assert_true(json_equal_text(json_object_get(out, "to_move"), "[0,1,2]"));
    check_passes(json_object_get(legal, "1"), 17, "pass 2C 5C 8C", "pass 5S 8S JS");
    check_passes(json_object_get(legal, "2"), 17, "pass 3C 6C 9C", "pass 6S 9S QS");
    check_passes(json_object_get(legal, "0"), 17, "pass 4C 7C TC", "pass 7S TS KS");
    json_decref(out);
    json_decref(log);
}

/* ---- Metadata and default options ------------------------------------------------------------ */

static void test_metadata_ignored(void **state)
{
    (void)state;
    json_t *plain = hearts_log(NULL, opening(7));
    json_t *dressed = json_deep_copy(plain);
    json_object_set_new(dressed, "players", json_pack("[s,s,s,s]", "ann", "bo", "cy", "di"));
    json_object_set_new(dressed, "comment", json_pack("{s:[i,i]}", "anything", 1, 2));
    json_object_set_new(dressed, "x-service", json_string("cardpost test"));
    json_object_set_new(dressed, "seed_commitment", json_string("not checked by replay"));
    json_t *events = json_object_get(dressed, "events");
    for (size_t i = 0; i < json_array_size(events); i++) {
        json_t *ev = json_array_get(events, i);
        json_object_set_new(ev, "at", json_string("2024-05-01T12:00:00Z"));
        json_object_set_new(ev, "note", json_integer((json_int_t)i));
        if (i == 3)
            json_object_set_new(ev, "auto", json_true());
    }
    for (int c = 0; c < 2; c++) {
        const char *cmd = c ? "legal" : "replay";
        int a, b;
        json_t *x = run_json(cmd, plain, &a);
        json_t *y = run_json(cmd, dressed, &b);
        assert_int_equal(a, 0);
        assert_int_equal(b, 0);
        assert_true(json_equal(x, y));
        json_decref(x);
        json_decref(y);
    }
    json_decref(plain);
    json_decref(dressed);
}

/* A move into the log, as canonical text. */
static void append_move(struct tlog *log, int seat, const struct rules_move *m)
{
    char text[RULES_MOVE_TEXT_MAX];
    rules_move_format(m, text, sizeof text);
    struct err e;
    assert_true(tlog_append_move(log, seat, text, false, &e));
}

/* Play a whole match through the engine, random moves except that seat `greedy` (if >= 0)
 * takes every trick it can and the others duck; deals from `seed` (k = 0, 1, ...) when given,
 * else random. Returns the log; *moons counts hands in which one seat took all 26. */
static struct tlog *play_match(uint64_t *rng, const struct rules_options *o, int greedy,
                               const uint8_t *seed, int *moons)
{
    static struct rules_move legal[RULES_MAX_LEGAL];
    struct err e;
    struct rules_state st;
    assert_true(rules_init(&st, RULES_GAME_HEARTS, o, &e));
    struct tlog *log = tlog_create(RULES_GAME_HEARTS, o, &e);
    assert_non_null(log);
    uint32_t k = 0;
    *moons = 0;
    while (!st.over) {
        if (rules_due(&st) == RULES_DUE_DEAL) {
            rules_card deck[RULES_NCARDS];
            if (seed)
                assert_int_equal(tlog_derive(seed, k++, &st, deck), RULES_NCARDS);
            else
                tl_random_deck(rng, deck);
            assert_true(rules_chance(&st, RULES_DUE_DEAL, deck, RULES_NCARDS, &e));
            assert_true(tlog_append_chance(log, TLOG_DEAL, deck, RULES_NCARDS, &e));
            continue;
        }
        uint32_t to_move = rules_to_move(&st);
        int seat = __builtin_ctz(to_move);
        int nl = rules_legal(&st, seat, legal, RULES_MAX_LEGAL);
        int pick = (int)tl_below(rng, (uint32_t)nl);
        if (greedy >= 0 && legal[0].verb == RULES_PLAY) {
            pick = 0;
            for (int i = 1; i < nl; i++) {
                int r = RULES_RANK(legal[i].card), b = RULES_RANK(legal[pick].card);
                if (seat == greedy ? r > b : r < b)
                    pick = i;
            }
        }
        uint32_t hands = st.hands_done;
        assert_true(rules_apply(&st, seat, &legal[pick], &e));
        append_move(log, seat, &legal[pick]);
        if (st.hands_done != hands)
            for (int s = 0; s < st.nseats; s++)
                *moons += st.hand_scores[s] == 0 && st.hand_scores[(s + 1) % st.nseats] == 26;
    }
    return log;
}

static void test_default_options(void **state)
{
    (void)state;
    /* A whole match under the defaults in which a moon was shot: replayed with the options
     * missing, null, empty or spelt out, it is the same finished match; under moon=subtract
     * or another first dealer it is not. */
    uint64_t rng = 12345;
    struct rules_options o;
    rules_options_default(RULES_GAME_HEARTS, &o);
    assert_int_equal(o.seats, 4);
    assert_int_equal(o.target, 100);
    assert_int_equal(o.moon, RULES_MOON_ADD);
    assert_int_equal(o.first_dealer, 0);
    struct tlog *match = NULL;
    int moons = 0;
    for (int tries = 0; tries < 200 && !moons; tries++) {
        tlog_destroy(match);
        match = play_match(&rng, &o, (int)tl_below(&rng, 4), NULL, &moons);
    }
    assert_true(moons > 0);
    json_t *log = tlog_to_json(match, NULL);
    tlog_destroy(match);

    int code;
    json_t *want = run_json("replay", log, &code);
    assert_int_equal(code, 0);
    assert_true(json_is_true(json_object_get(want, "finished")));
    json_error_t jerr;
    static const char *const same[] = {
        NULL, "null", "{}", "{\"seats\": 4}", "{\"target\": 100}", "{\"moon\": \"add\"}",
        "{\"first_dealer\": 0}", "{\"seats\": 4, \"target\": 100, \"moon\": \"add\", "
                                 "\"first_dealer\": 0}"};
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        if (same[i])
            json_object_set_new(log, "options", json_loads(same[i], JSON_DECODE_ANY, &jerr));
        else
            json_object_del(log, "options");
        json_t *out = run_json("replay", log, &code);
        assert_int_equal(code, 0);
        if (!json_equal(out, want))
            fail_msg("options %s change the result", same[i] ? same[i] : "(missing)");
        json_decref(out);
    }
    static const char *const other[] = {"{\"moon\": \"subtract\"}", "{\"first_dealer\": 1}",
                                        "{\"target\": 1000}"};
    for (size_t i = 0; i < sizeof other / sizeof other[0]; i++) {
        json_object_set_new(log, "options", json_loads(other[i], 0, &jerr));
        json_t *out = run_json("replay", log, &code);
        if (code == 0 && json_equal(out, want))
            fail_msg("options %s give the default result", other[i]);
        json_decref(out);
    }
    json_decref(want);
    json_decref(log);
}

/* ---- verify -------------------------------------------------------------------------------- */

static json_t *seeded_log(uint64_t *rng, int seats, int64_t target, uint8_t seed[TLOG_SEED_BYTES])
{
    struct err e;
    assert_true(tlog_seed_random(seed, &e));
    struct rules_options o;
    rules_options_default(RULES_GAME_HEARTS, &o);
    o.seats = seats;
    o.target = target;
    o.first_dealer = seats - 1;
    int moons;
    struct tlog *match = play_match(rng, &o, -1, seed, &moons);
    char hex[TLOG_HEX_BYTES], commitment[TLOG_HEX_BYTES];
    tlog_hex(seed, TLOG_SEED_BYTES, hex);
    tlog_commitment(seed, commitment);
    json_t *s = json_string(hex), *c = json_string(commitment);
    tlog_set_meta(match, "seed", s);
    tlog_set_meta(match, "seed_commitment", c);
    json_decref(s);
    json_decref(c);
    json_t *log = tlog_to_json(match, NULL);
    tlog_destroy(match);
    return log;
}

/* Indices of the deal events of a log. */
static int deal_indices(json_t *log, long *out, int max)
{
    json_t *events = json_object_get(log, "events");
    int n = 0;
    for (size_t i = 0; i < json_array_size(events); i++)
        if (json_object_get(json_array_get(events, i), "deal") && n < max)
            out[n++] = (long)i;
    return n;
}

static void test_verify(void **state)
{
    (void)state;
    uint64_t rng = 777;
    uint8_t seed[TLOG_SEED_BYTES];
    for (int seats = 3; seats <= 6; seats++) {
        json_t *log = seeded_log(&rng, seats, 40, seed);
        long deals[64];
        int ndeals = deal_indices(log, deals, 64);
        assert_true(ndeals >= 2);

        int code;
        json_t *replayed = run_json("replay", log, &code);
        assert_int_equal(code, 0);
        json_t *verified = run_json("verify", log, &code);
        assert_int_equal(code, 0);
        assert_true(json_equal(replayed, verified));
        assert_true(json_is_true(json_object_get(verified, "finished")));
        json_decref(replayed);
        json_decref(verified);

        /* One deal altered (two cards swapped): refused at that deal, whichever it is. */
        for (int d = 0; d < ndeals; d += ndeals - 1) {
            json_t *bad = json_deep_copy(log);
            json_t *cards =
                json_object_get(json_array_get(json_object_get(bad, "events"), deals[d]), "deal");
            json_t *a = json_incref(json_array_get(cards, 0));
            json_array_set(cards, 0, json_array_get(cards, 51));
            json_array_set_new(cards, 51, a);
            expect_json("verify", bad, 1, deals[d]);
            json_decref(bad);
        }
        /* The second deal replaced by the first (a valid deal, the wrong k). */
        json_t *bad = json_deep_copy(log);
        json_t *events = json_object_get(bad, "events");
        json_array_set(events, deals[1], json_array_get(events, deals[0]));
        expect_json("verify", bad, 1, deals[1]);
        json_decref(bad);

        /* The commitment altered, or the seed: null index. */
        bad = json_deep_copy(log);
        char commitment[TLOG_HEX_BYTES];
        snprintf(commitment, sizeof commitment, "%s",
                 json_string_value(json_object_get(bad, "seed_commitment")));
        commitment[10] = commitment[10] == '0' ? '1' : '0';
        json_object_set_new(bad, "seed_commitment", json_string(commitment));
        expect_json("verify", bad, 1, -1);
        /* replay does not look at the seed. */
        int rc;
        json_t *out = run_json("replay", bad, &rc);
        assert_int_equal(rc, 0);
        json_decref(out);
        json_decref(bad);

        bad = json_deep_copy(log);
        char hex[TLOG_HEX_BYTES];
        seed[0] ^= 1;
        tlog_hex(seed, TLOG_SEED_BYTES, hex);
        json_object_set_new(bad, "seed", json_string(hex));
        expect_json("verify", bad, 1, -1);
        /* A seed whose commitment matches, but not the one that made the deals. */
        tlog_commitment(seed, commitment);
        json_object_set_new(bad, "seed_commitment", json_string(commitment));
        expect_json("verify", bad, 1, deals[0]);
        json_decref(bad);

        /* A missing seed or commitment. */
        static const char *const keys[] = {"seed", "seed_commitment"};
        for (int k = 0; k < 2; k++) {
            bad = json_deep_copy(log);
            json_object_del(bad, keys[k]);
            expect_json("verify", bad, 1, -1);
            /* The structure is checked before the commitment: a bad option wins. */
            json_object_set_new(json_object_get(bad, "options"), "colour", json_string("red"));
            expect_json("verify", bad, 2, -1);
            json_decref(bad);
        }
        bad = json_deep_copy(log);
        json_object_set_new(bad, "seed", json_null());
        expect_json("verify", bad, 1, -1);
        json_decref(bad);
        json_decref(log);
    }

    /* A log with no events and a good commitment verifies. */
    struct err e;
    assert_true(tlog_seed_random(seed, &e));
    char hex[TLOG_HEX_BYTES], commitment[TLOG_HEX_BYTES];
    tlog_hex(seed, TLOG_SEED_BYTES, hex);
    tlog_commitment(seed, commitment);
    json_t *log = hearts_log(NULL, json_array());
    json_object_set_new(log, "seed", json_string(hex));
    json_object_set_new(log, "seed_commitment", json_string(commitment));
    int code;
    json_t *out = run_json("verify", log, &code);
    assert_int_equal(code, 0);
    json_decref(out);
    json_decref(log);
}

/* ---- §5 known answers ------------------------------------------------------------------------ */

/* Output of tests/tools/derive_vectors.py (an independent Python implementation of §5). */
static const char vector_commitment[] =
    "630dcd2966c4336691125448bbb25b4ff412a49c732db2c8abc1b8581bd710dd";
static const struct {
    uint32_t k;
    const char *deck;
} vectors[] = {
    {0, "7H QS TS 3H 2D KH 2H 8C QC 7S TH AD 7C 5D 4H 4D 5C 5H AH 7D KD TD 8S 3S 9H KC 9S 2C "
        "8D JS AC 3C AS 6C 8H 9D 6D 4S JD 5S 3D 2S TC QD 6H QH 9C KS 4C JC JH 6S"},
    {1, "7D 8S 3D TC KD AD 6H 2H QH AS 5S 2S 6D 7S JD KH 8D 5D JH TD 9S 6S 8H TH 4H JS QD 5C "
        "QC JC 7H 6C 3C 9D 4C 9C 3S AC AH 4D 8C 7C 2D 4S KS 9H 3H TS KC 2C QS 5H"},
    {7, "7S AS 2D 5D 3H 4D QD JD AH KS JH TD AC 5S 6C 2H 4C TC AD JS QH 3C 8H QC 6S 2C 8D TH "
        "7H 6D JC 4H TS 3S 4S 3D KH 7D KD KC 6H 5H 8C 9H 9C QS 5C 9S 9D 8S 7C 2S"},
};

static void deck_text(const rules_card *deck, char *out)
{
    for (int i = 0; i < RULES_NCARDS; i++) {
        rules_card_format(deck[i], out + 3 * i);
        out[3 * i + 2] = i + 1 < RULES_NCARDS ? ' ' : '\0';
    }
}

static void test_derivation_vectors(void **state)
{
    (void)state;
    uint8_t seed[TLOG_SEED_BYTES];
    for (int i = 0; i < TLOG_SEED_BYTES; i++)
        seed[i] = (uint8_t)i;
    char commitment[TLOG_HEX_BYTES];
    tlog_commitment(seed, commitment);
    assert_string_equal(commitment, vector_commitment);

    struct rules_state st;
    struct rules_options o;
    rules_options_default(RULES_GAME_HEARTS, &o);
    assert_true(rules_init(&st, RULES_GAME_HEARTS, &o, NULL));
    for (size_t v = 0; v < sizeof vectors / sizeof vectors[0]; v++) {
        rules_card deck[RULES_NCARDS];
        char text[3 * RULES_NCARDS];
        for (int i = 0; i < RULES_NCARDS; i++)
            deck[i] = (rules_card)i;
        tlog_shuffle(seed, vectors[v].k, deck, RULES_NCARDS);
        deck_text(deck, text);
        assert_string_equal(text, vectors[v].deck);
        /* tlog_derive shuffles the canonical deck for a deal. */
        memset(deck, 0xff, sizeof deck);
        assert_int_equal(tlog_derive(seed, vectors[v].k, &st, deck), RULES_NCARDS);
        deck_text(deck, text);
        assert_string_equal(text, vectors[v].deck);
    }
}

/* ---- Usage ----------------------------------------------------------------------------------- */

static void test_usage(void **state)
{
    (void)state;
    const char *exe = getenv("CARDPOST");
    assert_non_null(exe);
    static const char *const commands[] = {"play", "REPLAY", ""};
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            int null = open("/dev/null", O_WRONLY);
            dup2(null, 1);
            dup2(null, 2);
            execl(exe, exe, commands[i], "-", (char *)NULL);
            _exit(127);
        }
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 2);
    }
}

static int setup(void **state)
{
    (void)state;
    signal(SIGPIPE, SIG_IGN);
    snprintf(tmpdir, sizeof tmpdir, "/tmp/cardpost-turnlog-XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return rmdir(tmpdir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_malformed_files),   cmocka_unit_test(test_bad_options),
        cmocka_unit_test(test_malformed_events),  cmocka_unit_test(test_bad_deals),
        cmocka_unit_test(test_illegal_events),    cmocka_unit_test(test_result_and_claims),
        cmocka_unit_test(test_legal_output),      cmocka_unit_test(test_metadata_ignored),
        cmocka_unit_test(test_default_options),   cmocka_unit_test(test_verify),
        cmocka_unit_test(test_derivation_vectors), cmocka_unit_test(test_usage),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
