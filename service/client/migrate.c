/* migrate.c - `cardpost migrate-db FROM TO`: a SQLite database moved to PostgreSQL
 * (docs/scaling.md). storage/migrate.c copies every table; this checks the copy the way
 * anyone checks a match: each match's log, rebuilt from the target's rows, is replayed, its
 * deals checked against its seed (turn-log.md §4, `cardpost verify`), its events as many as
 * its seq, and a finished match's replayed result the one its row records. One JSON line on
 * standard output when done; the reason on standard error when not.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "migrate.h"
#include "store.h"
#include "turnlog.h"

static bool append_event(void *ctx, const struct store_event *ev, struct err *e)
{
    struct tlog *log = ctx;
    if (ev->seq != (int64_t)log->nevents)
        return err_set(e, ERR_IO, "corrupt", "event %lld out of order", (long long)ev->seq);
    if (ev->kind == STORE_MOVE)
        return tlog_append_move(log, ev->seat, ev->body, ev->automatic, e);
    rules_card cards[RULES_NCARDS];
    int n = 0;
    for (const char *p = ev->body; *p && n < RULES_NCARDS;) {
        size_t len = strcspn(p, " ");
        if (!rules_card_parse(p, len, &cards[n++]))
            return err_set(e, ERR_IO, "corrupt", "bad cards in event %lld", (long long)ev->seq);
        p += len;
        p += strspn(p, " ");
    }
    return tlog_append_chance(log, ev->kind == STORE_DEAL ? TLOG_DEAL : TLOG_SHUFFLE, cards, n,
                              e);
}

/* The match's log as the service serves it after its end (seed revealed), from its rows. */
static struct tlog *log_of(struct store *s, const struct store_match *m, struct err *e)
{
    enum rules_game_id g;
    struct rules_options o;
    json_t *opts = json_loads(m->options, 0, NULL);
    bool ok = rules_game_lookup(m->game, &g) && tlog_options_parse(g, opts, &o, e);
    json_decref(opts);
    struct tlog *log = ok ? tlog_create(g, &o, e) : NULL;
    if (!log) {
        err_set(e, ERR_IO, "corrupt", "bad game or options");
        return NULL;
    }
    char seed[TLOG_HEX_BYTES];
    tlog_hex(m->seed, sizeof m->seed, seed);
    json_t *names = json_array();
    for (int i = 0; i < m->seats; i++)
        json_array_append_new(names, json_string(m->names[i] ? m->names[i] : ""));
    json_t *commitment = json_string(m->commitment), *seed_j = json_string(seed);
    tlog_set_meta(log, "seed_commitment", commitment);
    tlog_set_meta(log, "seed", seed_j);
    tlog_set_meta(log, "players", names);
    json_decref(commitment);
    json_decref(seed_j);
    json_decref(names);
    if (!store_events_each(s, m->id, append_event, log, e)) {
        tlog_destroy(log);
        return NULL;
    }
    return log;
}

/* One match checked on the target; false with e saying why. */
static bool check_match(struct store *s, int64_t id, bool *finished, struct err *e)
{
    struct store_match m;
    if (!store_match_get(s, id, &m, e))
        return false;
    struct tlog *log = log_of(s, &m, e);
    bool ok = log != NULL;
    if (ok && (int64_t)log->nevents != m.seq)
        ok = err_set(e, ERR_IO, "corrupt", "%zu events, seq %lld", log->nevents,
                     (long long)m.seq);
    struct tlog_replay r = {0};
    struct tlog_failure f;
    if (ok && !tlog_replay(log, true, &r, &f)) {
        json_t *why = tlog_failure_json(&f);
        char *text = json_dumps(why, JSON_COMPACT);
        ok = err_set(e, ERR_IO, "verify", "the log does not verify: %s", text ? text : "?");
        free(text);
        json_decref(why);
    }
    *finished = m.finished;
    if (ok && m.finished) {
        json_t *res = tlog_result_json(&r);
        char *text = json_dumps(res, JSON_COMPACT);
        ok = r.state.over && text && m.result && !strcmp(text, m.result);
        if (!ok)
            err_set(e, ERR_IO, "verify", "the replayed result is not the recorded one");
        free(text);
        json_decref(res);
    }
    tlog_replay_finish(&r);
    tlog_destroy(log);
    store_match_finish(&m);
    return ok;
}

int migrate_db_main(int argc, char **argv)
{
    if (argc != 4) {
        fputs("usage: cardpost migrate-db FROM.db postgresql://...\n", stderr);
        return 2;
    }
    struct store_migrate_info info;
    struct err e;
    if (!store_migrate_db(argv[2], argv[3], &info, &e)) {
        fprintf(stderr, "cardpost migrate-db: %s\n", e.msg);
        return 1;
    }
    struct store *s = store_open(argv[3], &e);
    bool ok = s != NULL;
    int64_t finished = 0;
    for (size_t i = 0; s && i < info.nmatches; i++) { /* each failure said, then exit 1 */
        bool done = false;
        if (!check_match(s, info.matches[i], &done, &e)) {
            fprintf(stderr, "cardpost migrate-db: match %lld: %s\n",
                    (long long)info.matches[i], e.msg);
            ok = false;
        }
        finished += done;
    }
    if (!s)
        fprintf(stderr, "cardpost migrate-db: %s\n", e.msg);
    store_close(s);
    if (ok) {
        json_t *j = json_pack("{s:s, s:i, s:i, s:I, s:I, s:I}", "migrated", argv[2],
                              "schema_version", info.version, "tables", info.tables, "rows",
                              (json_int_t)info.rows, "matches_verified",
                              (json_int_t)info.nmatches, "finished", (json_int_t)finished);
        char *text = json_dumps(j, JSON_COMPACT);
        puts(text ? text : "{}");
        free(text);
        json_decref(j);
    }
    store_migrate_info_finish(&info);
    return ok ? 0 : 1;
}
