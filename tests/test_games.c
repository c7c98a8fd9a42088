/* test_games.c - what registers a game, listed and checked for every game of the rules table
 * (README.md "Adding a sixth game"): its rules (rules/<game>.c in the engine's registry), and
 * optionally a bot policy (service/client/policies/<game>.c in the bot's table) and a view
 * drawer (web/game-<name>.js). And nothing else: no file of service/ outside the policies
 * names a game in a string or by its enum value, so a new game needs no line there.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "bot-policy.h"
#include "bot.h"
#include "turnlog.h"

/* The places in service/ allowed to name a game, each with why. Keep it short: a new entry
 * means a game is not only rules/ any more. */
static const struct {
    const char *file; /* under service/ */
    const char *word; /* the literal's game name or the enum identifier */
} allowed[] = {
    /* api_league_standings initialises the league's game before rules_game_lookup of a name
     * stored at creation (so always found): a placeholder, not a fact about Hearts. The
     * domain core's file, left to its owner (docs/decisions.md, issue 14). */
    {"core/leagues.c", "RULES_GAME_HEARTS"},
};

static const char *source_root(void)
{
    const char *root = getenv("CARDPOST_SOURCE_ROOT");
    return root ? root : ".";
}

/* The whole file at `path`, NUL-terminated (owned by the caller), or NULL. */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s)
        s[n] = '\0';
    fclose(f);
    return s;
}

/* "horse-thief" as its enum identifier, RULES_GAME_HORSE_THIEF. */
static void enum_name(const char *game, char *out, size_t size)
{
    size_t n = (size_t)snprintf(out, size, "RULES_GAME_");
    for (const char *p = game; *p && n + 1 < size; p++)
        out[n++] = *p == '-' ? '_' : (char)(*p >= 'a' && *p <= 'z' ? *p - 'a' + 'A' : *p);
    out[n] = '\0';
}

/* "horse-thief" as a file name of service/client/policies/, horse_thief. */
static void file_name(const char *game, char *out, size_t size)
{
    snprintf(out, size, "%s", game);
    for (char *p = out; *p; p++)
        if (*p == '-')
            *p = '_';
}

static bool word_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '-';
}

/* Whether `word` stands in s[0..n) as a whole word, case aside. */
static bool has_word(const char *s, size_t n, const char *word)
{
    size_t w = strlen(word);
    for (size_t i = 0; i + w <= n; i++)
        if (!strncasecmp(s + i, word, w) && (i == 0 || !word_char(s[i - 1])) &&
            (i + w == n || !word_char(s[i + w])))
            return true;
    return false;
}

/* ---- Rules: every game of the table has a name that finds it and default options ----- */

static void rules_register_every_game(void **unused)
{
    (void)unused;
    for (int g = 0; g < RULES_NGAMES; g++) {
        const char *name = rules_game_name((enum rules_game_id)g);
        assert_non_null(name);
        enum rules_game_id back;
        assert_true(rules_game_lookup(name, &back));
        assert_int_equal(back, g);
        json_t *none = json_object();
        struct rules_options o;
        struct err e;
        assert_true(tlog_options_parse((enum rules_game_id)g, none, &o, &e));
        assert_true(rules_options_check((enum rules_game_id)g, &o, &e));
        json_decref(none);
    }
    assert_null(rules_game_name(RULES_NGAMES));
    /* the list that errors give (the API's unknown_game, cardpost's) names every game */
    char list[160];
    rules_game_list(list, sizeof list);
    for (int g = 0; g < RULES_NGAMES; g++)
        assert_true(has_word(list, strlen(list), rules_game_name((enum rules_game_id)g)));
    assert_string_equal(rules_game_list(list, 6), "heart");
}

/* ---- The bot: a policy file per game that has one, the first legal move for the others -- */

static bool policy_file(const char *game, char *path, size_t size)
{
    char base[64];
    file_name(game, base, sizeof base);
    snprintf(path, size, "%s/service/client/policies/%s.c", source_root(), base);
    struct stat st;
    return stat(path, &st) == 0;
}

static void bot_plays_every_game(void **unused)
{
    (void)unused;
    for (int g = 0; g < RULES_NGAMES; g++) {
        const char *name = rules_game_name((enum rules_game_id)g);
        char path[1024];
        const struct bot_policy *p = bot_policy_for(name);
        /* a policy is in the table exactly when its file is there */
        assert_true((p != NULL) == policy_file(name, path, sizeof path));
        if (p)
            assert_string_equal(p->game, name);
        /* with a policy or without, a view gets a legal move */
        json_t *state = json_pack("{s:s, s:i, s:{}, s:[s, s]}", "game", name, "you", 0,
                                  "view", "legal", "resign", "resign");
        uint64_t rng = 1;
        int pick = bot_choose("sensible", state, &rng);
        assert_true(pick == 0 || pick == 1);
        json_decref(state);
    }
    json_t *state = json_pack("{s:s, s:[s, s]}", "game", "a-sixth-game", "legal", "x", "y");
    uint64_t rng = 1;
    assert_null(bot_policy_for("a-sixth-game"));
    assert_int_equal(bot_choose("sensible", state, &rng), 0); /* the first legal move */
    json_decref(state);
}

/* Every file of service/client/policies/ is the policy of a game of the rules table. */
static void bot_policies_are_games(void **unused)
{
    (void)unused;
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/service/client/policies", source_root());
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *ent;
    int n = 0;
    while ((ent = readdir(d))) {
        size_t len = strlen(ent->d_name);
        if (len < 3 || strcmp(ent->d_name + len - 2, ".c"))
            continue;
        bool found = false;
        for (int g = 0; g < RULES_NGAMES && !found; g++) {
            char base[64];
            file_name(rules_game_name((enum rules_game_id)g), base, sizeof base);
            found = strlen(base) == len - 2 && !strncmp(base, ent->d_name, len - 2);
        }
        if (!found)
            fail_msg("service/client/policies/%s is no game of the rules table", ent->d_name);
        n++;
    }
    closedir(d);
    assert_true(n > 0);
}

/* ---- The pages: a drawer per game that has one, registering itself by the game's name ---- */

static void web_drawers_are_games(void **unused)
{
    (void)unused;
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/web", source_root());
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *ent;
    while ((ent = readdir(d))) {
        size_t len = strlen(ent->d_name);
        if (strncmp(ent->d_name, "game-", 5) || len < 9 || strcmp(ent->d_name + len - 3, ".js"))
            continue;
        char name[64], path[1200], call[128];
        snprintf(name, sizeof name, "%.*s", (int)(len - 8), ent->d_name + 5);
        enum rules_game_id g;
        if (!rules_game_lookup(name, &g))
            fail_msg("web/%s draws no game of the rules table", ent->d_name);
        snprintf(path, sizeof path, "%s/%s", dir, ent->d_name);
        snprintf(call, sizeof call, "cpView.register('%s',", name);
        char *text = slurp(path);
        assert_non_null(text);
        if (!strstr(text, call))
            fail_msg("web/%s does not say %s", ent->d_name, call);
        free(text);
    }
    closedir(d);
}

/* The list itself, for the log: what registers each game. */
static void list_registrations(void **unused)
{
    (void)unused;
    for (int g = 0; g < RULES_NGAMES; g++) {
        const char *name = rules_game_name((enum rules_game_id)g);
        char path[1024], base[64];
        struct stat st;
        file_name(name, base, sizeof base);
        snprintf(path, sizeof path, "%s/web/game-%s.js", source_root(), name);
        bool drawer = stat(path, &st) == 0;
        print_message("%-12s rules/%s.c; bot: %s%s%s; web: %s%s%s\n", name, base,
                      bot_policy_for(name) ? "service/client/policies/" : "the first legal move",
                      bot_policy_for(name) ? base : "", bot_policy_for(name) ? ".c" : "",
                      drawer ? "web/game-" : "the generic view", drawer ? name : "",
                      drawer ? ".js" : "");
    }
}

/* ---- service/ names no game ------------------------------------------------------------------ */

static bool is_allowed(const char *file, const char *word)
{
    for (size_t i = 0; i < sizeof allowed / sizeof *allowed; i++)
        if (!strcmp(allowed[i].file, file) && !strcmp(allowed[i].word, word))
            return true;
    return false;
}

/* Counts the places in the C text of service/`file` (comments skipped: they may say "Hearts")
 * where a string literal holds a game's name as a word, or code names a game's enum value;
 * each printed when `report`. */
static int check_source(const char *file, const char *s, bool report)
{
    int found = 0;
    for (const char *p = s; *p;) {
        if (p[0] == '/' && p[1] == '*') {
            const char *end = strstr(p + 2, "*/");
            p = end ? end + 2 : p + strlen(p);
        } else if (p[0] == '/' && p[1] == '/') {
            p += strcspn(p, "\n");
        } else if (*p == '"' || *p == '\'') {
            const char *q = p + 1;
            while (*q && *q != *p)
                q += q[0] == '\\' && q[1] ? 2 : 1;
            for (int g = 0; *p == '"' && g < RULES_NGAMES; g++) {
                const char *name = rules_game_name((enum rules_game_id)g);
                if (has_word(p + 1, (size_t)(q - p - 1), name) && !is_allowed(file, name)) {
                    if (report)
                        print_error("service/%s names the game %s in a string\n", file, name);
                    found++;
                }
            }
            p = *q ? q + 1 : q;
        } else if (word_char(*p) && (p == s || !word_char(p[-1]))) {
            size_t n = 0;
            while (word_char(p[n]))
                n++;
            for (int g = 0; g < RULES_NGAMES; g++) {
                char id[64];
                enum_name(rules_game_name((enum rules_game_id)g), id, sizeof id);
                if (strlen(id) == n && !strncmp(p, id, n) && !is_allowed(file, id)) {
                    if (report)
                        print_error("service/%s names %s\n", file, id);
                    found++;
                }
            }
            p += n;
        } else {
            p++;
        }
    }
    return found;
}

static int check_tree(const char *root, const char *rel)
{
    char dir[1200];
    snprintf(dir, sizeof dir, "%s/service%s%s", root, *rel ? "/" : "", rel);
    DIR *d = opendir(dir);
    assert_non_null(d);
    int found = 0;
    struct dirent *ent;
    while ((ent = readdir(d))) {
        if (ent->d_name[0] == '.')
            continue;
        char sub[600], path[2000];
        snprintf(sub, sizeof sub, "%s%s%s", rel, *rel ? "/" : "", ent->d_name);
        snprintf(path, sizeof path, "%s/%s", dir, ent->d_name);
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        size_t len = strlen(ent->d_name);
        if (S_ISDIR(st.st_mode)) {
            if (strcmp(sub, "client/policies") != 0) /* a policy file names its game */
                found += check_tree(root, sub);
        } else if (len > 2 && (!strcmp(ent->d_name + len - 2, ".c") ||
                               !strcmp(ent->d_name + len - 2, ".h"))) {
            char *text = slurp(path);
            assert_non_null(text);
            found += check_source(sub, text, true);
            free(text);
        }
    }
    closedir(d);
    return found;
}

static void service_names_no_game(void **unused)
{
    (void)unused;
    assert_int_equal(check_tree(source_root(), ""), 0);
    /* and the check sees what it looks for */
    assert_int_equal(check_source("x.c", "if (!strcmp(game, \"horse-thief\")) g = "
                                         "RULES_GAME_SNAG; /* Hearts */ // \"speed\"\n", false),
                     2);
    assert_int_equal(check_source("x.c", "\"must be \\\"hearts\\\" or\" RULES_NGAMES", false), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rules_register_every_game),
        cmocka_unit_test(bot_plays_every_game),
        cmocka_unit_test(bot_policies_are_games),
        cmocka_unit_test(web_drawers_are_games),
        cmocka_unit_test(list_registrations),
        cmocka_unit_test(service_names_no_game),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
