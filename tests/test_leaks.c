/* test_leaks.c - hidden information never leaks through the service (issue 4). Random matches
 * of every game are played against the real build/cardpostd; every view, log, move answer
 * and event-stream message served to each seat and to a spectator is recorded, and every card
 * it names must be one the engine let that viewer see by then (a replay of the finished
 * match's public log). The odd seats' streams are opened with a stream ticket, the others'
 * with the token in a header. A positive control shows the checker does catch a leak.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "testlib.h"
#include "turnlog.h"

#define MAX_VIEWERS (RULES_MAX_SEATS + 1) /* index 0 is the spectator, seat s is s + 1 */
#define NPLAYERS 8

/* ---- The daemon ------------------------------------------------------------------------- */

static struct {
    pid_t pid;
    char dir[64];
    char base[64];
    CURL *http;
    int64_t player_id[NPLAYERS];
    char token[NPLAYERS][128];
} d;

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = calloc(1, 1 << 16);
    if (buf)
        fread(buf, 1, (1 << 16) - 1, f);
    fclose(f);
    return buf;
}

/* Start build/cardpostd on 127.0.0.1:0 with a fresh database; its stdout goes to a file in
 * which we wait for the "listening on" line. */
static int daemon_start(void)
{
    const char *exe = getenv("CARDPOSTD");
    if (!exe) {
        fprintf(stderr, "CARDPOSTD is not set\n");
        return -1;
    }
    snprintf(d.dir, sizeof d.dir, "/tmp/cardpost-leaks-XXXXXX");
    if (!mkdtemp(d.dir))
        return -1;
    char db[128], out[128], errp[128];
    snprintf(db, sizeof db, "%s/cardpost.db", d.dir);
    snprintf(out, sizeof out, "%s/stdout", d.dir);
    snprintf(errp, sizeof errp, "%s/stderr", d.dir);
    d.pid = fork();
    if (d.pid < 0)
        return -1;
    if (d.pid == 0) {
        int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int e = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (o < 0 || e < 0)
            _exit(127);
        dup2(o, 1);
        dup2(e, 2);
        /* Every stream and request of the test comes from 127.0.0.1: no limits per address
         * or token (docs/security.md "Limits"). */
        static const char *const unlimited[] = {
            "CARDPOST_RATE_PER_ADDRESS", "CARDPOST_RATE_PER_TOKEN",
            "CARDPOST_MAX_CONNECTIONS_PER_ADDRESS", "CARDPOST_MAX_STREAMS_PER_ADDRESS",
            "CARDPOST_MAX_STREAMS"};
        for (size_t i = 0; i < sizeof unlimited / sizeof unlimited[0]; i++)
            setenv(unlimited[i], "0", 1);
        execl(exe, exe, "--db", db, "--listen", "127.0.0.1:0", (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 600; i++) {
        char *text = slurp(out);
        const char *p = text ? strstr(text, "listening on http://127.0.0.1:") : NULL;
        if (p) {
            int port = atoi(p + strlen("listening on http://127.0.0.1:"));
            free(text);
            snprintf(d.base, sizeof d.base, "http://127.0.0.1:%d", port);
            return 0;
        }
        free(text);
        int status;
        if (waitpid(d.pid, &status, WNOHANG) == d.pid) {
            d.pid = 0;
            char *err = slurp(errp);
            fprintf(stderr, "cardpostd exited early: %s\n", err ? err : "");
            free(err);
            return -1;
        }
        sleep_ms(50);
    }
    return -1;
}

static void daemon_stop(void)
{
    if (d.pid > 0) {
        kill(d.pid, SIGTERM);
        int status = 0;
        waitpid(d.pid, &status, 0);
        d.pid = 0;
    }
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", d.dir);
    if (d.dir[0] && system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", d.dir);
}

/* ---- HTTP ----------------------------------------------------------------------------- */

/* (struct buf: base/buf.h) */
static void buf_add(struct buf *b, const char *data, size_t n)
{
    buf_put(b, data, n);
    assert_false(b->failed);
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *ctx)
{
    buf_add(ctx, data, size * nmemb);
    return size * nmemb;
}

/* One request on the shared keep-alive handle; the answer's JSON (fails the test if the
 * answer is not JSON or its status is not `want`). `token` NULL: anonymous. */
static json_t *http(const char *method, const char *path, const char *token, json_t *body,
                    long want)
{
    char url[256], auth[200];
    snprintf(url, sizeof url, "%s%s", d.base, path);
    struct buf b = {0};
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    if (token) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
        h = curl_slist_append(h, auth);
    }
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    CURL *c = d.http;
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
    if (!strcmp(method, "POST"))
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, text ? text : "");
    CURLcode rc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(h);
    free(text);
    if (rc != CURLE_OK || status != want)
        fail_msg("%s %s: curl %d, status %ld (want %ld): %s", method, path, (int)rc, status, want,
                 b.p ? b.p : "");
    json_error_t jerr;
    json_t *j = json_loadb(b.p ? b.p : "", b.len, 0, &jerr);
    if (!j)
        fail_msg("%s %s: not JSON: %s", method, path, b.p ? b.p : "");
    free(b.p);
    return j;
}

/* ---- The event stream: one thread per viewer -------------------------------------------- */

struct stream {
    pthread_t thread;
    char url[256];
    char auth[200];
    bool has_auth;
    pthread_mutex_t lock;
    struct buf data;
    bool got_state;
    CURLcode rc;
};

static size_t on_stream(char *data, size_t size, size_t nmemb, void *ctx)
{
    struct stream *s = ctx;
    pthread_mutex_lock(&s->lock);
    buf_add(&s->data, data, size * nmemb);
    if (strstr(s->data.p, "event: state\n"))
        s->got_state = true;
    pthread_mutex_unlock(&s->lock);
    return size * nmemb;
}

static void *stream_main(void *arg)
{
    struct stream *s = arg;
    CURL *c = curl_easy_init();
    struct curl_slist *h = s->has_auth ? curl_slist_append(NULL, s->auth) : NULL;
    curl_easy_setopt(c, CURLOPT_URL, s->url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_stream);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, s);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 300L);
    s->rc = curl_easy_perform(c);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    return NULL;
}

/* ---- What was served, reduced to what the checker needs --------------------------------- */

enum rec_kind { REC_VIEW, REC_LOG, REC_MOVE, REC_SSE_EVENT, REC_SSE_STATE, REC_NKINDS };

static const char *const kind_names[REC_NKINDS] = {"view", "log", "move answer", "stream event",
                                                   "stream state"};

struct rec {
    uint8_t kind;
    int8_t viewer;    /* seat, or -1 */
    int64_t seq;      /* the match's seq when it was served */
    uint64_t cards;   /* every card the response names */
    int ncards;       /* card strings seen (with repeats) */
    bool seed;        /* has a "seed" member */
    bool chance;      /* has a deal or shuffle event */
    size_t shown_off; /* m->shown[shown_off ..]: seqs of the events whose move text */
    size_t nshown;    /* this response shows (logs and stream events) */
};

struct match {
    int nseats;
    size_t nrecs, cap;
    struct rec *recs;
    int64_t final_seq;
    /* allowed[v + 1][n]: cards the engine showed v in some state of seq <= n. */
    uint64_t (*allowed)[MAX_VIEWERS];
    int64_t *shown; /* see struct rec */
    size_t nshown, shown_cap;
    /* secret_until[k]: the seq from which event k's move may be shown to the other seats
     * (0 for an open move or a chance event); seat_of[k]: its seat. */
    int64_t *secret_until;
    int *seat_of;
    char *full_text;        /* the finished match's public log, for diagnostics */
    int secret_moves;       /* secret moves in the match */
    int secret_pending_max; /* most unresolved secret events in one served log */
    int redacted_cards;     /* resolved pass/discard events served with only a count */
    size_t requests;
};

static void match_free(struct match *m)
{
    free(m->recs);
    free(m->allowed);
    free(m->full_text);
    free(m->shown);
    free(m->secret_until);
    free(m->seat_of);
    memset(m, 0, sizeof *m);
}

static void add_card_text(const char *s, size_t len, struct rec *r)
{
    /* Card strings are canonical two-character cards, alone or as words of a move text. */
    size_t i = 0;
    while (i < len) {
        while (i < len && s[i] == ' ')
            i++;
        size_t j = i;
        while (j < len && s[j] != ' ')
            j++;
        rules_card c;
        if (j - i == 2 && rules_card_parse(s + i, 2, &c)) {
            char canon[3];
            rules_card_format(c, canon);
            if (!memcmp(canon, s + i, 2)) {
                r->cards |= RULES_BIT(c);
                r->ncards++;
            }
        }
        i = j;
    }
}

static void walk(const json_t *j, struct rec *r)
{
    if (json_is_string(j)) {
        add_card_text(json_string_value(j), json_string_length(j), r);
    } else if (json_is_array(j)) {
        size_t i;
        json_t *v;
        json_array_foreach(j, i, v) walk(v, r);
    } else if (json_is_object(j)) {
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)j, k, v)
        {
            add_card_text(k, strlen(k), r);
            walk(v, r);
        }
    }
}

static bool is_chance_event(const json_t *ev)
{
    return json_object_get(ev, "deal") || json_object_get(ev, "shuffle");
}

/* Note the event if it shows its move's text. */
static void note_shown(struct match *m, const json_t *ev, int64_t seq)
{
    if (!json_is_string(json_object_get(ev, "move")))
        return;
    if (m->nshown == m->shown_cap) {
        m->shown_cap = m->shown_cap ? 2 * m->shown_cap : 4096;
        m->shown = realloc(m->shown, m->shown_cap * sizeof *m->shown);
        assert_non_null(m->shown);
    }
    m->shown[m->nshown++] = seq;
}

static struct rec *record(struct match *m, enum rec_kind kind, int viewer, int64_t seq,
                          const json_t *j)
{
    if (m->nrecs == m->cap) {
        m->cap = m->cap ? 2 * m->cap : 256;
        m->recs = realloc(m->recs, m->cap * sizeof *m->recs);
        assert_non_null(m->recs);
    }
    struct rec *r = &m->recs[m->nrecs++];
    *r = (struct rec){.kind = kind, .viewer = (int8_t)viewer, .seq = seq};
    walk(j, r);
    r->seed = json_object_get(j, "seed") != NULL;
    r->shown_off = m->nshown;
    if (kind == REC_SSE_EVENT) {
        r->chance = is_chance_event(j);
        note_shown(m, j, json_integer_value(json_object_get(j, "seq")));
    }
    if (kind == REC_LOG) {
        int secret = 0;
        size_t i;
        json_t *ev;
        json_array_foreach(json_object_get(j, "events"), i, ev)
        {
            if (is_chance_event(ev))
                r->chance = true;
            note_shown(m, ev, json_integer_value(json_object_get(ev, "seq")));
            if (json_is_true(json_object_get(ev, "secret")))
                secret++;
            if (json_is_integer(json_object_get(ev, "cards")))
                m->redacted_cards++;
        }
        if (secret > m->secret_pending_max)
            m->secret_pending_max = secret;
    }
    r->nshown = m->nshown - r->shown_off;
    return r;
}

/* ---- The checker ------------------------------------------------------------------------ */

struct stats {
    size_t responses, cards, leaks, structural, early_secrets, shown_moves;
    size_t by_kind[REC_NKINDS];
};

/* Check one record as served to `viewer` (not necessarily r->viewer: the positive control
 * hands a record to the wrong viewer). Returns the number of problems found. */
static size_t check_rec(const struct match *m, const struct rec *r, int viewer, struct stats *st,
                        bool quiet)
{
    size_t problems = 0;
    bool running = r->seq < m->final_seq;
    uint64_t allowed = running ? m->allowed[r->seq][viewer + 1] : RULES_ALL_CARDS;
    uint64_t leaked = r->cards & ~allowed;
    if (leaked) {
        problems += (size_t)rules_popcount(leaked);
        st->leaks += (size_t)rules_popcount(leaked);
        if (!quiet) {
            char names[160] = "";
            for (int c = 0; c < RULES_NCARDS; c++) {
                if (leaked & RULES_BIT(c)) {
                    char t[3];
                    rules_card_format((rules_card)c, t);
                    strcat(names, " ");
                    strcat(names, t);
                }
            }
            print_error("LEAK: %s served to viewer %d at seq %lld names%s\n", kind_names[r->kind],
                        viewer, (long long)r->seq, names);
        }
    }
    if (running && (r->seed || r->chance)) {
        problems++;
        st->structural++;
        if (!quiet)
            print_error("LEAK: %s served to viewer %d at seq %lld has %s while running\n",
                        kind_names[r->kind], viewer, (long long)r->seq,
                        r->seed ? "the seed" : "a deal or shuffle");
    }
    for (size_t i = 0; running && i < r->nshown; i++) {
        int64_t k = m->shown[r->shown_off + i];
        assert_true(k >= 0 && k < m->final_seq);
        st->shown_moves++;
        if (m->seat_of[k] != viewer && m->secret_until[k] > r->seq) {
            problems++;
            st->early_secrets++;
            if (!quiet)
                print_error("LEAK: %s served to viewer %d at seq %lld shows the secret move "
                            "of seat %d at seq %lld, which resolves only at seq %lld\n",
                            kind_names[r->kind], viewer, (long long)r->seq, m->seat_of[k],
                            (long long)k, (long long)m->secret_until[k]);
        }
    }
    st->responses++;
    st->cards += (size_t)r->ncards;
    st->by_kind[r->kind]++;
    return problems;
}

/* Replay the finished match's whole log with the library and fill m->allowed. */
static void compute_allowed(struct match *m, const json_t *full)
{
    char *text = json_dumps(full, JSON_COMPACT);
    assert_non_null(text);
    m->full_text = text;
    struct tlog_failure f;
    struct tlog *log = tlog_parse(text, strlen(text), &f);
    assert_non_null(log);
    struct tlog_replay rp = {0};
    assert_true(tlog_replay(log, true, &rp, &f)); /* the public log verifies */
    tlog_replay_finish(&rp);
    assert_int_equal((int64_t)log->nevents, m->final_seq);

    m->allowed = calloc(log->nevents + 1, sizeof *m->allowed);
    assert_non_null(m->allowed);
    m->secret_until = calloc(log->nevents, sizeof *m->secret_until);
    m->seat_of = calloc(log->nevents, sizeof *m->seat_of);
    assert_true(m->secret_until && m->seat_of);
    struct rules_state st;
    assert_true(rules_init(&st, log->game, &log->options, NULL));
    uint64_t acc[MAX_VIEWERS] = {0};
    for (size_t k = 0; k < log->nevents; k++) {
        const struct tlog_event *ev = &log->events[k];
        struct err e;
        bool open_card = false;
        rules_card open_card_value = 0;
        if (ev->kind == TLOG_MOVE) {
            struct rules_move mv;
            assert_true(rules_move_parse(ev->move, ev->move_len, &mv, &e));
            struct rules_secrecy_info secrecy;
            rules_move_secrecy(&st, (int)ev->seat, &mv, &secrecy);
            m->seat_of[k] = (int)ev->seat;
            if (secrecy.kind != RULES_OPEN)
                m->secret_until[k] = -1; /* not resolved yet */
            if (secrecy.kind == RULES_OPEN && (mv.verb == RULES_PLAY || mv.verb == RULES_LEAD ||
                                               mv.verb == RULES_TAKE || mv.verb == RULES_MOVE)) {
                open_card = true;
                open_card_value = mv.card;
            }
            assert_true(rules_apply(&st, (int)ev->seat, &mv, &e));
        } else {
            enum rules_due kind = ev->kind == TLOG_DEAL ? RULES_DUE_DEAL : RULES_DUE_SHUFFLE;
            assert_true(rules_chance(&st, kind, ev->cards, ev->ncards, &e));
            m->seat_of[k] = -2;
        }
        /* A secret move resolves in the first state after it where its seat is not pending
         * (rules.h); that state has seq k + 1. */
        uint32_t pending = rules_secret_pending(&st);
        for (size_t j = 0; j <= k; j++) {
            if (m->secret_until[j] < 0 && !(pending & (1u << m->seat_of[j])))
                m->secret_until[j] = (int64_t)k + 1;
        }
        /* An open play puts its card on the table for everyone, even when the view of the
         * next state no longer shows it (the last trick of a hand, once a deal is due). */
        uint64_t played = 0;
        if (ev->kind == TLOG_MOVE && open_card)
            played = RULES_BIT(open_card_value);
        for (int v = -1; v < m->nseats; v++) {
            bool well_formed;
            acc[v + 1] |= played;
            acc[v + 1] |= tl_view_cards(&st, v, &well_formed);
            assert_true(well_formed);
            m->allowed[k + 1][v + 1] = acc[v + 1];
        }
    }
    assert_true(st.over);
    for (size_t k = 0; k < log->nevents; k++) {
        if (m->secret_until[k] < 0)
            m->secret_until[k] = m->final_seq; /* shown once the match is over */
        if (m->secret_until[k] > 0)
            m->secret_moves++;
    }
    tlog_destroy(log);
}

/* ---- Playing a match -------------------------------------------------------------------- */

struct spec {
    const char *game;
    int seats;
    int64_t target;
    const char *moon; /* Hearts only, or NULL */
    int resign_after; /* > 0: seat 0 resigns after this many moves */
    uint64_t seed;
};

/* Split one stream's text into messages; events take the seq of the state that follows. */
static void record_stream(struct match *m, int viewer, const char *text)
{
    const char *p = text;
    json_t *pending[512];
    int npending = 0;
    while (*p) {
        const char *end = strstr(p, "\n\n");
        assert_non_null(end); /* the stream ends after a whole message */
        char event[32] = "";
        json_t *data = NULL;
        for (const char *line = p; line < end;) {
            const char *nl = memchr(line, '\n', (size_t)(end - line));
            const char *stop = nl ? nl : end;
            if (!strncmp(line, "event: ", 7))
                snprintf(event, sizeof event, "%.*s", (int)(stop - line - 7), line + 7);
            else if (!strncmp(line, "data: ", 6))
                data = json_loadb(line + 6, (size_t)(stop - line - 6), 0, NULL);
            line = stop + 1;
        }
        if (!strcmp(event, "event")) {
            assert_non_null(data);
            assert_true(npending < 512);
            pending[npending++] = data;
        } else if (!strcmp(event, "state")) {
            assert_non_null(data);
            int64_t seq = json_integer_value(json_object_get(data, "seq"));
            assert_true(seq >= 1);
            for (int i = 0; i < npending; i++) {
                record(m, REC_SSE_EVENT, viewer, seq, pending[i]);
                json_decref(pending[i]);
            }
            npending = 0;
            record(m, REC_SSE_STATE, viewer, seq, data);
            json_decref(data);
        } else {
            assert_null(data); /* a keep-alive comment */
        }
        p = end + 2;
    }
    assert_int_equal(npending, 0); /* every batch of events ends with the state */
}

static void play_match(const struct spec *sp, struct match *m)
{
    memset(m, 0, sizeof *m);
    m->nseats = sp->seats;
    uint64_t rng = sp->seed;
    json_t *players = json_array();
    for (int s = 0; s < sp->seats; s++)
        json_array_append_new(players, json_integer(d.player_id[s]));
    json_t *opts = json_pack("{s:i, s:I}", "seats", sp->seats, "target", (json_int_t)sp->target);
    if (sp->moon)
        json_object_set_new(opts, "moon", json_string(sp->moon));
    json_t *req =
        json_pack("{s:s, s:o, s:o}", "game", sp->game, "players", players, "options", opts);
    json_t *created = http("POST", "/v1/matches", d.token[0], req, 201);
    json_decref(req);
    int64_t id = json_integer_value(json_object_get(created, "id"));
    int64_t seq = json_integer_value(json_object_get(created, "seq"));
    record(m, REC_MOVE, 0, seq, created);
    json_decref(created);
    m->requests++;

    /* One event stream per viewer, open before the first move: the odd seats' with a
     * stream ticket in the URL (as a browser opens it), the others' with the token in the
     * Authorization header (as a program does). */
    struct stream streams[MAX_VIEWERS];
    for (int v = -1; v < sp->seats; v++) {
        struct stream *s = &streams[v + 1];
        memset(s, 0, sizeof *s);
        pthread_mutex_init(&s->lock, NULL);
        snprintf(s->url, sizeof s->url, "%s/v1/matches/%lld/events", d.base, (long long)id);
        if (v >= 0 && v % 2 == 1) {
            char path[96];
            snprintf(path, sizeof path, "/v1/matches/%lld/events/ticket", (long long)id);
            json_t *t = http("POST", path, d.token[v], NULL, 201);
            snprintf(s->url, sizeof s->url, "%s/v1/matches/%lld/events?ticket=%s", d.base,
                     (long long)id, json_string_value(json_object_get(t, "ticket")));
            json_decref(t);
            m->requests++;
        } else if (v >= 0) {
            snprintf(s->auth, sizeof s->auth, "Authorization: Bearer %s", d.token[v]);
            s->has_auth = true;
        }
        assert_int_equal(pthread_create(&s->thread, NULL, stream_main, s), 0);
    }
    for (int v = -1; v < sp->seats; v++) {
        struct stream *s = &streams[v + 1];
        bool ready = false;
        for (int i = 0; i < 400 && !ready; i++) {
            pthread_mutex_lock(&s->lock);
            ready = s->got_state;
            pthread_mutex_unlock(&s->lock);
            if (!ready)
                sleep_ms(10);
        }
        assert_true(ready);
    }

    char path[128], logpath[128];
    snprintf(path, sizeof path, "/v1/matches/%lld", (long long)id);
    snprintf(logpath, sizeof logpath, "/v1/matches/%lld/log", (long long)id);
    json_t *full = NULL;
    for (int moves = 0;; moves++) {
        json_t *views[MAX_VIEWERS] = {0};
        for (int v = -1; v < sp->seats; v++) {
            json_t *view = http("GET", path, v >= 0 ? d.token[v] : NULL, NULL, 200);
            assert_int_equal(json_integer_value(json_object_get(view, "seq")), seq);
            record(m, REC_VIEW, v, seq, view);
            views[v + 1] = view;
            json_t *log = http("GET", logpath, v >= 0 ? d.token[v] : NULL, NULL, 200);
            record(m, REC_LOG, v, seq, log);
            if (v < 0)
                full = log;
            else
                json_decref(log);
            m->requests += 2;
        }
        json_t *spectator = views[0];
        bool over = !strcmp(json_string_value(json_object_get(spectator, "status")), "finished");
        if (over) {
            m->final_seq = seq;
            for (int v = -1; v < sp->seats; v++)
                json_decref(views[v + 1]);
            break;
        }
        json_decref(full);
        full = NULL;
        /* A random seat among those to move, a random move from its legal list. */
        json_t *to_move = json_object_get(spectator, "to_move");
        assert_true(json_array_size(to_move) > 0);
        int seat = (int)json_integer_value(
            json_array_get(to_move, tl_below(&rng, (uint32_t)json_array_size(to_move))));
        json_t *legal = json_object_get(views[seat + 1], "legal");
        assert_true(json_array_size(legal) > 0);
        const char *text = json_string_value(
            json_array_get(legal, tl_below(&rng, (uint32_t)json_array_size(legal))));
        if ((sp->resign_after > 0 && moves == sp->resign_after) || moves == 4000) {
            seat = 0;
            text = "resign";
        }
        json_t *mv = json_pack("{s:s, s:I}", "move", text, "seq", (json_int_t)seq);
        char mpath[160];
        snprintf(mpath, sizeof mpath, "%s/moves", path);
        json_t *reply = http("POST", mpath, d.token[seat], mv, 201);
        json_decref(mv);
        int64_t next = json_integer_value(json_object_get(reply, "seq"));
        assert_true(next > seq);
        assert_int_equal(json_integer_value(json_object_get(reply, "you")), seat);
        record(m, REC_MOVE, seat, next, reply);
        json_decref(reply);
        m->requests += 2;
        seq = next;
        for (int v = -1; v < sp->seats; v++)
            json_decref(views[v + 1]);
    }

    for (int v = -1; v < sp->seats; v++) {
        struct stream *s = &streams[v + 1];
        pthread_join(s->thread, NULL);
        assert_int_equal(s->rc, CURLE_OK);
        record_stream(m, v, s->data.p ? s->data.p : "");
        free(s->data.p);
        pthread_mutex_destroy(&s->lock);
        m->requests++;
    }
    compute_allowed(m, full);
    json_decref(full);
}

/* ---- The tests ------------------------------------------------------------------------- */

static struct stats totals;

static void run_specs(const struct spec *specs, size_t n, bool want_secrets)
{
    for (size_t i = 0; i < n; i++) {
        struct match m;
        play_match(&specs[i], &m);
        struct stats st = {0};
        size_t problems = 0;
        for (size_t k = 0; k < m.nrecs; k++)
            problems += check_rec(&m, &m.recs[k], m.recs[k].viewer, &st, false);
        print_message("%s seats=%d target=%lld: %zu events, %zu requests, %zu responses, "
                      "%zu cards checked (views %zu, logs %zu, moves %zu, stream events %zu, "
                      "stream states %zu); %zu move texts checked against the %d secret moves; "
                      "unresolved secrets seen at once: %d, count-only passes/discards: %d\n",
                      specs[i].game, specs[i].seats, (long long)specs[i].target,
                      (size_t)m.final_seq, m.requests, st.responses, st.cards, st.by_kind[REC_VIEW],
                      st.by_kind[REC_LOG], st.by_kind[REC_MOVE], st.by_kind[REC_SSE_EVENT],
                      st.by_kind[REC_SSE_STATE], st.shown_moves, m.secret_moves,
                      m.secret_pending_max, m.redacted_cards);
        if (problems)
            print_error("the match's public log: %s\n", m.full_text);
        assert_int_equal(problems, 0);
        assert_true(st.cards > 0);
        assert_true(st.by_kind[REC_SSE_EVENT] > 0);
        if (want_secrets)
            assert_true(m.secret_pending_max >= 2); /* several seats had submitted */
        totals.responses += st.responses;
        totals.cards += st.cards;
        match_free(&m);
    }
}

static void test_hearts(void **state)
{
    (void)state;
    static const struct spec specs[] = {
        {"hearts", 3, 1, NULL, 0, 11},
        {"hearts", 4, 70, "choose", 0, 12}, /* several hands: every pass direction */
        {"hearts", 5, 1, NULL, 0, 13},
        {"hearts", 6, 1, "subtract", 0, 14},
    };
    run_specs(specs, sizeof specs / sizeof specs[0], true);
}

static void test_horse_thief(void **state)
{
    (void)state;
    static const struct spec specs[] = {
        {"horse-thief", 3, 10, NULL, 0, 21},
        {"horse-thief", 5, 8, NULL, 0, 22},
        {"horse-thief", 7, 8, NULL, 0, 23},
    };
    run_specs(specs, sizeof specs / sizeof specs[0], true);
}

static void test_two_seat_games(void **state)
{
    (void)state;
    static const struct spec specs[] = {
        {"horseshoe", 2, 3, NULL, 0, 31},
        {"horseshoe", 2, 5, NULL, 0, 32},
        {"snag", 2, 10, NULL, 0, 41},
        {"snag", 2, 50, NULL, 30, 42}, /* ends by a resignation mid-hand */
        {"speed", 2, 1, NULL, 0, 51},
        {"speed", 2, 2, NULL, 0, 52},
    };
    run_specs(specs, sizeof specs / sizeof specs[0], false);
}

/* The checker is not vacuous: a view or log of one viewer handed to another is caught. */
static void test_checker_catches_leaks(void **state)
{
    (void)state;
    static const struct spec sp = {"hearts", 4, 1, NULL, 0, 99};
    struct match m;
    play_match(&sp, &m);
    struct stats st = {0};
    size_t caught_view = 0, caught_spectator = 0, caught_log = 0, caught_stream = 0,
           caught_secret = 0;
    for (size_t k = 0; k < m.nrecs; k++) {
        const struct rec *r = &m.recs[k];
        if (r->seq >= m.final_seq)
            continue;
        if (r->kind == REC_VIEW && r->viewer == 1)
            caught_view += check_rec(&m, r, 0, &st, true) > 0;
        if (r->kind == REC_VIEW && r->viewer == 2)
            caught_spectator += check_rec(&m, r, -1, &st, true) > 0;
        if (r->kind == REC_SSE_STATE && r->viewer == 3)
            caught_stream += check_rec(&m, r, 2, &st, true) > 0;
        /* A seat's log shows its own pending pass; the next seat may not see it yet. */
        if (r->kind == REC_LOG && r->viewer >= 0) {
            struct stats secret = {0};
            check_rec(&m, r, (r->viewer + 1) % sp.seats, &secret, true);
            caught_secret += secret.early_secrets > 0;
        }
    }
    /* The finished, whole log served as if the match still ran at seq 1. */
    for (size_t k = 0; k < m.nrecs; k++) {
        struct rec r = m.recs[k];
        if (r.kind == REC_LOG && r.seq == m.final_seq && r.viewer == -1) {
            assert_true(r.seed && r.chance);
            r.seq = 1;
            caught_log += check_rec(&m, &r, 0, &st, true) > 0;
        }
    }
    print_message("positive control: leaks caught in %zu views of seat 1 shown to seat 0, "
                  "%zu views of seat 2 shown to a spectator, %zu stream states of seat 3 shown "
                  "to seat 2, %zu whole logs shown mid-match, %zu logs shown to the next seat with "
                  "a pending pass (%zu leaked cards, %zu seed/deal findings)\n",
                  caught_view, caught_spectator, caught_stream, caught_log, caught_secret, st.leaks,
                  st.structural);
    assert_true(caught_view > 0);
    assert_true(caught_spectator > 0);
    assert_true(caught_stream > 0);
    assert_int_equal(caught_log, 1);
    assert_true(caught_secret > 0);
    assert_true(st.structural >= 1);
    match_free(&m);
}

static int setup(void **state)
{
    (void)state;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK || daemon_start() != 0)
        return -1;
    d.http = curl_easy_init();
    for (int i = 0; i < NPLAYERS; i++) {
        char name[16];
        snprintf(name, sizeof name, "player-%d", i);
        /* (seated without being asked: the matches start at once) */
        json_t *req = json_pack("{s:s, s:{s:b}}", "name", name, "preferences",
                                "seat_without_asking", 1);
        json_t *p = http("POST", "/v1/players", NULL, req, 201);
        json_decref(req);
        d.player_id[i] = json_integer_value(json_object_get(p, "id"));
        snprintf(d.token[i], sizeof d.token[i], "%s",
                 json_string_value(json_object_get(p, "token")));
        json_decref(p);
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    print_message("in all: %zu responses and %zu card strings checked against the engine's "
                  "views\n",
                  totals.responses, totals.cards);
    curl_easy_cleanup(d.http);
    daemon_stop();
    curl_global_cleanup();
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_checker_catches_leaks),
        cmocka_unit_test(test_hearts),
        cmocka_unit_test(test_horse_thief),
        cmocka_unit_test(test_two_seat_games),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
