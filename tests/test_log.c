/* test_log.c - service/core/log.c alone: a line is one JSON object whatever its values hold
 * (quotes, backslashes, newlines, control characters, bytes outside ASCII), a value too long
 * for a line is cut and the line says so, levels filter, and log_reopen moves the lines to a
 * new file at the path after a rotation (a real file in a temporary directory, read back and
 * parsed with jansson). Gathered lines (log_buffer_start) share writes of whole lines, at
 * most 4096 bytes each, in their order; a warning writes them at once, a lone line is
 * written soon, a stop and a rotation write what is gathered (each write read as one packet
 * of a SOCK_SEQPACKET socket put in stderr's place). tests/e2e/test_logs.py checks the
 * daemon's lines.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "log.h"

/* A line's text parsed: it must be one JSON object ending in exactly one newline, in
 * printable ASCII. */
static json_t *parse_line(const char *text, size_t len)
{
    assert_true(len > 1 && len < LOG_LINE_MAX);
    assert_int_equal(strlen(text), len);
    assert_int_equal(text[len - 1], '\n');
    for (size_t i = 0; i + 1 < len; i++)
        assert_true(text[i] >= 0x20 && text[i] < 0x7f);
    json_error_t je;
    json_t *v = json_loadb(text, len, 0, &je);
    if (!v)
        fail_msg("not JSON (%s): %s", je.text, text);
    assert_true(json_is_object(v));
    return v;
}

static void hostile_values_stay_in_their_line(void **state)
{
    (void)state;
    static const char *const values[] = {
        "say \"hi\"", "back\\slash", "two\nlines", "cr\r\nlf", "tab\there", "bell\a\x01\x1f",
        "del\x7f", "caf\xc3\xa9", "\xff\xfe broken utf-8", "\"}\n{\"level\":\"error\"",
        "\x1b[31mred\x1b[0m", "",
    };
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        struct log_line l;
        assert_true(log_begin(&l, LOG_LEVEL_INFO, "test"));
        log_str(&l, "value", values[i]);
        log_str(&l, "k\"ey\n", "x");
        log_int(&l, "n", -42);
        log_str(&l, "none", NULL);
        size_t n = log_finish_text(&l);
        json_t *v = parse_line(l.text, n);
        /* Bytes outside ASCII come back as their code points (\u00XX): the ASCII ones as
         * they were. */
        const char *got = json_string_value(json_object_get(v, "value"));
        assert_non_null(got);
        if (!strpbrk(values[i], "\x80\x81\xc3\xa9\xff\xfe"))
            assert_string_equal(got, values[i]);
        assert_string_equal(json_string_value(json_object_get(v, "k\"ey\n")), "x");
        assert_int_equal(json_integer_value(json_object_get(v, "n")), -42);
        assert_true(json_is_null(json_object_get(v, "none")));
        assert_string_equal(json_string_value(json_object_get(v, "event")), "test");
        assert_string_equal(json_string_value(json_object_get(v, "level")), "info");
        assert_null(json_object_get(v, "truncated"));
        json_decref(v);
    }
}

/* Milliseconds as "%.3f" writes them: three decimals, zeros kept, rounded. */
static void milliseconds(void **state)
{
    (void)state;
    static const struct {
        double ms;
        const char *text;
    } cases[] = {
        {0, "0.000"},        {0.0004, "0.000"},        {0.0006, "0.001"},
        {0.05, "0.050"},     {1, "1.000"},             {999.9996, "1000.000"},
        {86400000, "86400000.000"}, {-1, "0.000"},     {1e16, "0.000"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct log_line l;
        assert_true(log_begin(&l, LOG_LEVEL_WARN, "delivery"));
        log_ms(&l, "ms", cases[i].ms);
        log_finish_text(&l);
        char want[64];
        snprintf(want, sizeof want, "\"ms\":%s}", cases[i].text);
        if (!strstr(l.text, want))
            fail_msg("%g: %s has no %s", cases[i].ms, l.text, want);
    }
}

static void the_fields_and_the_time(void **state)
{
    (void)state;
    struct log_line l;
    assert_true(log_begin(&l, LOG_LEVEL_WARN, "delivery"));
    log_ms(&l, "duration_ms", 12.3456);
    log_bool(&l, "ok", false);
    log_time(&l, "at", 1795478400123LL); /* 2026-11-24T00:00:00.123Z */
    size_t n = log_finish_text(&l);
    json_t *v = parse_line(l.text, n);
    assert_true(json_real_value(json_object_get(v, "duration_ms")) > 12.345);
    assert_non_null(strstr(l.text, "\"duration_ms\":12.346,"));
    assert_true(json_is_false(json_object_get(v, "ok")));
    assert_string_equal(json_string_value(json_object_get(v, "at")), "2026-11-24T00:00:00.123Z");
    const char *t = json_string_value(json_object_get(v, "time"));
    assert_non_null(t);
    assert_int_equal(strlen(t), 24); /* YYYY-MM-DDTHH:MM:SS.mmmZ */
    assert_int_equal(t[23], 'Z');
    json_decref(v);
}

static void a_long_value_is_cut_and_said(void **state)
{
    (void)state;
    char big[3 * LOG_LINE_MAX];
    for (size_t i = 0; i < sizeof big - 1; i++)
        big[i] = "a\"\n\x01"[i % 4];
    big[sizeof big - 1] = '\0';
    struct log_line l;
    assert_true(log_begin(&l, LOG_LEVEL_ERROR, "test"));
    log_str(&l, "big", big);
    log_int(&l, "after", 7); /* no room left: left out, whole */
    size_t n = log_finish_text(&l);
    json_t *v = parse_line(l.text, n);
    assert_true(json_is_true(json_object_get(v, "truncated")));
    const char *got = json_string_value(json_object_get(v, "big"));
    assert_non_null(got);
    assert_true(strlen(got) > 100 && !strncmp(got, big, strlen(got)));
    json_decref(v);

    /* A long run with nothing to escape is cut within the run (log.c copies runs whole). */
    memset(big, 'z', sizeof big - 1);
    assert_true(log_begin(&l, LOG_LEVEL_ERROR, "test"));
    log_str(&l, "big", big);
    n = log_finish_text(&l);
    assert_true(n <= LOG_LINE_MAX);
    v = parse_line(l.text, n);
    assert_true(json_is_true(json_object_get(v, "truncated")));
    got = json_string_value(json_object_get(v, "big"));
    assert_non_null(got);
    assert_true(strlen(got) > LOG_LINE_MAX / 2 && !strncmp(got, big, strlen(got)));
    json_decref(v);
}

static void levels_filter(void **state)
{
    (void)state;
    enum log_level lv;
    assert_true(log_level_parse("warn", &lv));
    assert_int_equal(lv, LOG_LEVEL_WARN);
    assert_false(log_level_parse("verbose", &lv));
    assert_false(log_level_parse("", &lv));
    log_set_level(LOG_LEVEL_WARN);
    struct log_line l;
    assert_false(log_begin(&l, LOG_LEVEL_INFO, "request"));
    log_str(&l, "x", "y");
    assert_int_equal(log_finish_text(&l), 0);
    assert_true(log_begin(&l, LOG_LEVEL_ERROR, "x"));
    assert_true(log_finish_text(&l) > 0);
    log_set_level(LOG_LEVEL_INFO);
    assert_false(log_enabled(LOG_LEVEL_DEBUG));
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    static char text[65536];
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    return text;
}

/* A line ended with log_end_soon (as a request's), its "msg" `text` (NULL: "line i"), or
 * "i text". */
static void soon(enum log_level level, const char *text, int i)
{
    char msg[LOG_LINE_MAX];
    if (!text)
        snprintf(msg, sizeof msg, "line %d", i);
    else if (i < 0)
        snprintf(msg, sizeof msg, "%s", text);
    else if (snprintf(msg, sizeof msg, "%d %s", i, text) >= (int)sizeof msg)
        assert_int_equal(strlen(msg), sizeof msg - 1); /* (a big text: cut short, as meant) */
    struct log_line l;
    assert_true(log_begin(&l, level, "test"));
    log_str(&l, "msg", msg);
    log_end_soon(&l);
}

/* Log to a file, rotate it, log_reopen: the lines before the reopen are in the old file,
 * those after in the new; with the lines gathered (log_buffer_start) or not. */
static void rotation(bool gathered)
{
    char dir[] = "/tmp/cardpost-test-log-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256], rotated[256];
    snprintf(path, sizeof path, "%s/cardpost.log", dir);
    snprintf(rotated, sizeof rotated, "%s/cardpost.log.1", dir);
    struct err e;
    assert_true(log_open(path, &e));
    if (gathered)
        assert_true(log_buffer_start(&e));
    soon(LOG_LEVEL_INFO, "before 1", -1);
    assert_int_equal(rename(path, rotated), 0);
    soon(LOG_LEVEL_INFO, "still the old file", -1);
    assert_true(log_reopen(&e));
    soon(LOG_LEVEL_INFO, "after", -1);
    log_close();
    char *old = strdup(slurp(rotated));
    char *now = slurp(path);
    assert_non_null(now);
    assert_non_null(strstr(old, "\"msg\":\"before 1\""));
    assert_non_null(strstr(old, "still the old file"));
    assert_null(strstr(old, "\"after\""));
    assert_non_null(strstr(now, "\"msg\":\"after\""));
    assert_null(strstr(now, "before"));
    free(old);
    /* A path that cannot be opened is refused, and the log stays on stderr. */
    assert_false(log_open("/nonexistent-dir/x.log", &e));
    assert_int_equal(e.code, ERR_IO);
    unlink(path);
    unlink(rotated);
    rmdir(dir);
}

static void reopen_follows_a_rotation(void **state)
{
    (void)state;
    rotation(false);
    rotation(true);
}

/* stderr, where the log goes by default, replaced by one end of a SOCK_SEQPACKET pair: each
 * write(2) of the log is one packet at the other end. */
static int saved_stderr = -1;

static int capture_writes(void)
{
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
    saved_stderr = dup(STDERR_FILENO);
    assert_true(saved_stderr >= 0);
    assert_true(dup2(sv[0], STDERR_FILENO) >= 0);
    close(sv[0]);
    return sv[1];
}

static void release_writes(int fd)
{
    assert_true(dup2(saved_stderr, STDERR_FILENO) >= 0);
    close(saved_stderr);
    close(fd);
}

/* The next write's bytes (NUL-terminated in `out`), waiting up to `ms`; 0 when none came. */
static size_t next_write(int fd, char *out, size_t max, int ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, ms) != 1)
        return 0;
    ssize_t n = recv(fd, out, max - 1, 0);
    assert_true(n > 0);
    out[n] = '\0';
    return (size_t)n;
}

static void gathered_lines_share_writes(void **state)
{
    (void)state;
    int fd = capture_writes();
    struct err e;
    assert_true(log_buffer_start(&e));
    char big[LOG_LINE_MAX];
    memset(big, 'b', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    /* 40 lines, three of them nearly 2 KiB, then a warning. */
    for (int i = 0; i < 40; i++)
        soon(LOG_LEVEL_INFO, i % 13 == 5 ? big : NULL, i);
    soon(LOG_LEVEL_WARN, "the warning", -1);
    /* Written at once with the warning: every line there, whole, in order, in a few writes
     * (one a line without the gathering: 41). */
    char all[65536], one[8192];
    size_t len = 0, n;
    int writes = 0;
    while ((n = next_write(fd, one, sizeof one, 0)) > 0) {
        assert_true(n <= 4096);
        assert_int_equal(one[n - 1], '\n');
        assert_true(len + n < sizeof all);
        memcpy(all + len, one, n + 1);
        len += n;
        writes++;
    }
    assert_true(writes >= 2 && writes <= 6);
    const char *at = all;
    for (int i = 0; i < 40; i++) {
        char want[32];
        snprintf(want, sizeof want, i % 13 == 5 ? "\"msg\":\"%d bbb" : "\"msg\":\"line %d\"", i);
        const char *found = strstr(at, want);
        assert_non_null(found);
        at = found;
    }
    assert_non_null(strstr(at, "the warning"));
    for (const char *line = all; *line; line = strchr(line, '\n') + 1) {
        size_t k = (size_t)(strchr(line, '\n') + 1 - line);
        char text[LOG_LINE_MAX];
        memcpy(text, line, k);
        text[k] = '\0';
        json_decref(parse_line(text, k));
    }
    /* A line ended with log_end (any but a request's or a delivery's) is written at once,
     * after those gathered. */
    soon(LOG_LEVEL_INFO, "first", -1);
    soon(LOG_LEVEL_INFO, "second", -1);
    log_msg(LOG_LEVEL_INFO, "test", "third");
    n = next_write(fd, one, sizeof one, 0);
    assert_true(n > 0);
    const char *first = strstr(one, "\"first\""), *third = strstr(one, "\"third\"");
    assert_true(first && third && first < third);
    assert_int_equal(next_write(fd, one, sizeof one, 0), 0);
    /* A lone line is written by the flusher soon (100 ms; 5 s allowed). */
    soon(LOG_LEVEL_INFO, "alone", -1);
    n = next_write(fd, one, sizeof one, 5000);
    assert_true(n > 0);
    assert_non_null(strstr(one, "\"alone\""));
    /* A stop writes what is gathered, and lines are written alone after it. */
    soon(LOG_LEVEL_INFO, "gathered at the stop", -1);
    log_buffer_stop();
    n = next_write(fd, one, sizeof one, 0);
    assert_true(n > 0);
    assert_non_null(strstr(one, "gathered at the stop"));
    soon(LOG_LEVEL_INFO, "after the stop", -1);
    n = next_write(fd, one, sizeof one, 0);
    assert_true(n > 0);
    assert_non_null(strstr(one, "after the stop"));
    release_writes(fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(hostile_values_stay_in_their_line),
        cmocka_unit_test(milliseconds),
        cmocka_unit_test(the_fields_and_the_time),
        cmocka_unit_test(a_long_value_is_cut_and_said),
        cmocka_unit_test(levels_filter),
        cmocka_unit_test(reopen_follows_a_rotation),
        cmocka_unit_test(gathered_lines_share_writes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
