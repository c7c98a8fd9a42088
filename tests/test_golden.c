/* test_golden.c - the golden-log runner: every tests/golden/<game>/<name>.expect.json holds
 * checks {command, exit, output} for the log <name>.json beside it; each check runs
 * `$CARDPOST <command> <log>` and compares the exit code and the printed JSON (json_equal).
 * One cmocka test per golden file; no golden file at all is a failure.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define EXPECT_SUFFIX ".expect.json"

static const char *cardpost;

struct golden {
    char *expect;  /* path of the .expect.json */
    char *log;     /* path of the log it checks */
    char *name;    /* <game>/<name>, the test's name */
};

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

static char *join(const char *a, const char *b, const char *c)
{
    size_t n = strlen(a) + strlen(b) + strlen(c) + 1;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%s%s%s", a, b, c);
    return s;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct golden *)a)->name, ((const struct golden *)b)->name);
}

/* Every <root>/<game>/<name>.expect.json, sorted by name. Returns the count. */
static size_t find_goldens(const char *root, struct golden **out)
{
    size_t n = 0, cap = 0;
    struct golden *g = NULL;
    DIR *top = opendir(root);
    if (!top) {
        fprintf(stderr, "cannot open %s: %s\n", root, strerror(errno));
        *out = NULL;
        return 0;
    }
    struct dirent *game;
    while ((game = readdir(top))) {
        if (game->d_name[0] == '.')
            continue;
        char *dir = join(root, "/", game->d_name);
        struct stat sb;
        DIR *d = (dir && stat(dir, &sb) == 0 && S_ISDIR(sb.st_mode)) ? opendir(dir) : NULL;
        struct dirent *f;
        while (d && (f = readdir(d))) {
            if (!ends_with(f->d_name, EXPECT_SUFFIX))
                continue;
            if (n == cap) {
                cap = cap ? cap * 2 : 64;
                g = realloc(g, cap * sizeof *g);
                assert_non_null(g);
            }
            size_t base = strlen(f->d_name) - strlen(EXPECT_SUFFIX);
            char *stem = strndup(f->d_name, base);
            g[n].expect = join(dir, "/", f->d_name);
            char *dirslash = join(dir, "/", "");
            g[n].log = join(dirslash, stem, ".json");
            g[n].name = join(game->d_name, "/", stem);
            free(dirslash);
            free(stem);
            n++;
        }
        if (d)
            closedir(d);
        free(dir);
    }
    closedir(top);
    if (n)
        qsort(g, n, sizeof *g, by_name);
    *out = g;
    return n;
}

/* Run `cardpost <command> <log>`; its standard output into *text (caller frees). Returns
 * the exit code, or -1 when it did not exit normally. */
static int run_cardpost(const char *command, const char *log, char **text)
{
    int fd[2];
    *text = NULL;
    if (pipe(fd) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        dup2(fd[1], STDOUT_FILENO);
        close(fd[0]);
        close(fd[1]);
        execl(cardpost, cardpost, command, log, (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    size_t n = 0, cap = 4096;
    char *buf = malloc(cap);
    for (;;) {
        if (n + 1 >= cap) {
            cap *= 2;
            buf = realloc(buf, cap);
        }
        ssize_t got = read(fd[0], buf + n, cap - n - 1);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        n += (size_t)got;
    }
    close(fd[0]);
    buf[n] = '\0';
    *text = buf;
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Run one check; print what differs and return false on a mismatch. */
static bool run_check(const struct golden *g, size_t i, json_t *check)
{
    json_t *cmd = json_object_get(check, "command");
    json_t *want_exit = json_object_get(check, "exit");
    json_t *want = json_object_get(check, "output");
    const char *c = json_string_value(cmd);
    if (!c || (strcmp(c, "replay") && strcmp(c, "legal") && strcmp(c, "verify")) ||
        !json_is_integer(want_exit) || !json_is_object(want)) {
        print_error("%s: check %zu is malformed (needs command replay|legal|verify, integer "
                    "exit, object output)\n", g->expect, i);
        return false;
    }
    char *text;
    int got_exit = run_cardpost(c, g->log, &text);
    json_error_t jerr;
    json_t *got = json_loads(text, JSON_DECODE_ANY, &jerr);
    bool ok = got_exit == json_integer_value(want_exit) && got && json_equal(got, want);
    if (!ok) {
        char *w = json_dumps(want, JSON_COMPACT | JSON_SORT_KEYS);
        char *a = got ? json_dumps(got, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
        print_error("%s: check %zu `cardpost %s %s`\n  expected exit %lld: %s\n"
                    "  actual   exit %d: %s\n",
                    g->expect, i, c, g->log, (long long)json_integer_value(want_exit), w,
                    got_exit, a ? a : text);
        free(w);
        free(a);
    }
    json_decref(got);
    free(text);
    return ok;
}

static void test_golden_file(void **state)
{
    const struct golden *g = *state;
    json_error_t jerr;
    json_t *expect = json_load_file(g->expect, 0, &jerr);
    if (!expect)
        fail_msg("%s: not valid JSON: %s (line %d)", g->expect, jerr.text, jerr.line);
    json_t *checks = json_object_get(expect, "checks");
    if (!json_is_string(json_object_get(expect, "about")) || !json_is_array(checks) ||
        json_array_size(checks) == 0) {
        json_decref(expect);
        fail_msg("%s: needs a string \"about\" and a non-empty \"checks\" array", g->expect);
    }
    if (access(g->log, R_OK) != 0) {
        json_decref(expect);
        fail_msg("%s: the log %s is missing", g->expect, g->log);
    }
    int bad = 0;
    for (size_t i = 0; i < json_array_size(checks); i++)
        bad += !run_check(g, i, json_array_get(checks, i));
    json_decref(expect);
    if (bad)
        fail_msg("%s: %d check(s) failed", g->name, bad);
}

static void test_no_golden_files(void **state)
{
    fail_msg("no golden files (*%s) found under %s", EXPECT_SUFFIX, (const char *)*state);
}

int main(void)
{
    cardpost = getenv("CARDPOST");
    const char *source = getenv("CARDPOST_SOURCE_ROOT");
    if (!cardpost || !source) {
        fprintf(stderr, "CARDPOST and CARDPOST_SOURCE_ROOT must be set (meson test does)\n");
        return 1;
    }
    char *root = join(source, "/tests/golden", "");
    struct golden *g;
    size_t n = find_goldens(root, &g);
    struct CMUnitTest *tests = calloc(n ? n : 1, sizeof *tests);
    if (n == 0) {
        tests[0] = (struct CMUnitTest){.name = "no_golden_files",
                                       .test_func = test_no_golden_files,
                                       .initial_state = root};
    }
    for (size_t i = 0; i < n; i++)
        tests[i] = (struct CMUnitTest){.name = g[i].name,
                                       .test_func = test_golden_file,
                                       .initial_state = &g[i]};
    int failed = _cmocka_run_group_tests("golden", tests, n ? n : 1, NULL, NULL);
    for (size_t i = 0; i < n; i++) {
        free(g[i].expect);
        free(g[i].log);
        free(g[i].name);
    }
    free(g);
    free(tests);
    free(root);
    return failed;
}
