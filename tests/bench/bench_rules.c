/* bench_rules.c - throughput of the pure rules engine, for every game it implements
 * (ops/bench-rules runs it; docs/benchmarks.md records the figures). It plays a large corpus
 * of random complete matches in memory, then times, single-threaded: replaying the corpus
 * from parsed moves, replaying it from move text, and listing legal moves.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jw.h"
#include "rules.h"
#include "turnlog.h"

/* ---- Randomness and time ------------------------------------------------------------------ */

static uint64_t rng_next(uint64_t *s) /* splitmix64 */
{
    uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static uint32_t rng_below(uint64_t *s, uint32_t n)
{
    return (uint32_t)(rng_next(s) % n);
}

/* CPU time of this thread: the figures stay meaningful on a machine shared with other work
 * (wall time would count the time other processes hold the core). */
static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#define GROW(ptr, count, cap)                                                                      \
    do {                                                                                           \
        if ((count) == (cap)) {                                                                    \
            (cap) = (cap) ? (cap)*2 : 4096;                                                        \
            void *grown_ = realloc((ptr), (cap) * sizeof *(ptr));                                  \
            if (!grown_) {                                                                         \
                fprintf(stderr, "bench_rules: out of memory\n");                                   \
                exit(1);                                                                           \
            }                                                                                      \
            (ptr) = grown_;                                                                        \
        }                                                                                          \
    } while (0)

/* ---- The corpus ---------------------------------------------------------------------------- */

/* One event of a match: a chance event (seat < 0, kind, cards at chance[arg]) or a seat's
 * move (as a struct, and as canonical text at text[arg]). */
struct event {
    int8_t seat;
    uint8_t kind; /* enum rules_due of a chance event */
    uint8_t ncards;
    uint8_t len; /* of the move text */
    uint32_t arg;
    struct rules_move move;
};

struct corpus {
    enum rules_game_id game;
    struct rules_options options;
    size_t nmatches, matches_cap;
    size_t *match_end; /* events of match i end at match_end[i] */
    size_t nevents, events_cap;
    struct event *events;
    size_t nchance, chance_cap;
    rules_card (*chance)[RULES_NCARDS];
    size_t ntext, text_cap;
    char *text;
    size_t nmoves, unfinished;
    /* A sample of positions where a seat is to move, for the legal-move listing. */
    size_t npositions, positions_cap;
    struct position {
        struct rules_state state;
        int seat;
    } * positions;
};

#define MAX_MATCH_EVENTS 100000
#define SAMPLE_EVERY 16

static void fail_event(const struct corpus *c, const char *what, const struct err *e)
{
    fprintf(stderr, "bench_rules: %s: %s refused an event of its own legal list: %s\n",
            rules_game_name(c->game), what, e->msg);
    exit(1);
}

/* Play one random match to its end (or MAX_MATCH_EVENTS), appending its events. */
static void play_match(struct corpus *c, uint64_t *rng)
{
    static struct rules_move legal[RULES_MAX_LEGAL];
    struct rules_state st;
    struct err e;
    if (!rules_init(&st, c->game, &c->options, &e))
        fail_event(c, "rules_init", &e);
    size_t start = c->nevents;
    while (!st.over && c->nevents - start < MAX_MATCH_EVENTS) {
        GROW(c->events, c->nevents, c->events_cap);
        struct event *ev = &c->events[c->nevents];
        memset(ev, 0, sizeof *ev);
        enum rules_due due = rules_due(&st);
        if (due != RULES_DUE_NONE) {
            GROW(c->chance, c->nchance, c->chance_cap);
            rules_card *cards = c->chance[c->nchance];
            int n = rules_chance_source(&st, cards);
            for (int i = n - 1; i > 0; i--) { /* Fisher-Yates */
                int j = (int)rng_below(rng, (uint32_t)i + 1);
                rules_card t = cards[i];
                cards[i] = cards[j];
                cards[j] = t;
            }
            if (!rules_chance(&st, due, cards, n, &e))
                fail_event(c, "rules_chance", &e);
            ev->seat = -1;
            ev->kind = (uint8_t)due;
            ev->ncards = (uint8_t)n;
            ev->arg = (uint32_t)c->nchance++;
            c->nevents++;
            continue;
        }
        uint32_t to_move = rules_to_move(&st);
        if (!to_move)
            break; /* stuck: a game bug, but not the benchmark's to judge */
        int seats[RULES_MAX_SEATS], nseats = 0;
        for (int s = 0; s < st.nseats; s++)
            if (to_move & (1u << s))
                seats[nseats++] = s;
        int seat = seats[rng_below(rng, (uint32_t)nseats)];
        if (c->nevents % SAMPLE_EVERY == 0) {
            GROW(c->positions, c->npositions, c->positions_cap);
            c->positions[c->npositions].state = st;
            c->positions[c->npositions++].seat = seat;
        }
        int n = rules_legal(&st, seat, legal, RULES_MAX_LEGAL);
        if (n <= 0 || n > RULES_MAX_LEGAL) {
            fprintf(stderr, "bench_rules: %s: seat %d is to move with %d legal moves\n",
                    rules_game_name(c->game), seat, n);
            exit(1);
        }
        ev->seat = (int8_t)seat;
        ev->move = legal[rng_below(rng, (uint32_t)n)];
        while (c->ntext + RULES_MOVE_TEXT_MAX > c->text_cap) {
            c->text_cap = c->text_cap ? c->text_cap * 2 : 1 << 16;
            c->text = realloc(c->text, c->text_cap);
            if (!c->text) {
                fprintf(stderr, "bench_rules: out of memory\n");
                exit(1);
            }
        }
        size_t len = rules_move_format(&ev->move, c->text + c->ntext, RULES_MOVE_TEXT_MAX);
        ev->arg = (uint32_t)c->ntext;
        ev->len = (uint8_t)len;
        c->ntext += len + 1;
        if (!rules_apply(&st, seat, &ev->move, &e))
            fail_event(c, "rules_apply", &e);
        c->nevents++;
        c->nmoves++;
    }
    if (!st.over)
        c->unfinished++;
    GROW(c->match_end, c->nmatches, c->matches_cap);
    c->match_end[c->nmatches++] = c->nevents;
}

static void corpus_build(struct corpus *c, enum rules_game_id g, size_t min_moves, uint64_t seed)
{
    memset(c, 0, sizeof *c);
    c->game = g;
    rules_options_default(g, &c->options);
    uint64_t rng = seed ^ ((uint64_t)g << 32);
    while (c->nmoves < min_moves)
        play_match(c, &rng);
}

static void corpus_free(struct corpus *c)
{
    free(c->match_end);
    free(c->events);
    free(c->chance);
    free(c->text);
    free(c->positions);
}

/* ---- The measurements --------------------------------------------------------------------- */

/* Replay the whole corpus once; with `parse`, every move from its text. Returns a checksum
 * of the final totals, so nothing can be optimised away. */
static int64_t replay(const struct corpus *c, bool parse)
{
    struct rules_state st;
    struct err e;
    int64_t sum = 0;
    size_t i = 0;
    for (size_t m = 0; m < c->nmatches; m++) {
        if (!rules_init(&st, c->game, &c->options, &e))
            fail_event(c, "rules_init", &e);
        for (; i < c->match_end[m]; i++) {
            const struct event *ev = &c->events[i];
            bool ok;
            if (ev->seat < 0) {
                ok =
                    rules_chance(&st, (enum rules_due)ev->kind, c->chance[ev->arg], ev->ncards, &e);
            } else if (parse) {
                struct rules_move mv;
                ok = rules_move_parse(c->text + ev->arg, ev->len, &mv, &e) &&
                     rules_apply(&st, ev->seat, &mv, &e);
            } else {
                ok = rules_apply(&st, ev->seat, &ev->move, &e);
            }
            if (!ok)
                fail_event(c, parse ? "replay from text" : "replay", &e);
        }
        for (int s = 0; s < st.nseats; s++)
            sum += st.totals[s];
    }
    return sum;
}

/* List the legal moves at every sampled position once. Returns how many moves were listed. */
static int64_t list_legal(const struct corpus *c)
{
    static struct rules_move out[RULES_MAX_LEGAL];
    int64_t total = 0;
    for (size_t i = 0; i < c->npositions; i++)
        total += rules_legal(&c->positions[i].state, c->positions[i].seat, out, RULES_MAX_LEGAL);
    return total;
}

/* Write the seat's view and legal moves at every sampled position once, as a stream's state
 * message and a move's answer carry them (tlog_view_write, tlog_moves_write). Returns the
 * bytes written. */
static int64_t write_views(const struct corpus *c)
{
    int64_t bytes = 0;
    for (size_t i = 0; i < c->npositions; i++) {
        struct jw w;
        size_t len = 0;
        jw_init(&w);
        jw_object_begin(&w, NULL);
        tlog_view_write(&w, "view", &c->positions[i].state, c->positions[i].seat);
        tlog_moves_write(&w, "legal", &c->positions[i].state, c->positions[i].seat);
        jw_object_end(&w);
        free(jw_finish(&w, &len));
        bytes += (int64_t)len;
    }
    return bytes;
}

struct rate {
    double per_second;
    double seconds;
};

/* Repeat `pass` until `seconds` have gone by; `units` counts the work of one pass. */
#define MEASURE(result, seconds, units, pass)                                                      \
    do {                                                                                           \
        double t0_ = now(), t_;                                                                    \
        size_t passes_ = 0;                                                                        \
        do {                                                                                       \
            pass;                                                                                  \
            passes_++;                                                                             \
            t_ = now() - t0_;                                                                      \
        } while (t_ < (seconds));                                                                  \
        (result).seconds = t_;                                                                     \
        (result).per_second = (double)(units) * (double)passes_ / t_;                              \
    } while (0)

static void usage(void)
{
    fprintf(stderr, "usage: bench_rules [-t SECONDS] [-n MOVES] [-s SEED]\n"
                    "  -t  seconds each measurement runs for (default 3)\n"
                    "  -n  seat moves in each game's corpus (default 1000000)\n"
                    "  -s  seed of the corpus (default 1)\n");
}

int main(int argc, char **argv)
{
    double seconds = 3;
    size_t min_moves = 1000000;
    uint64_t seed = 1;
    int opt;
    while ((opt = getopt(argc, argv, "t:n:s:h")) != -1) {
        switch (opt) {
        case 't':
            seconds = atof(optarg);
            break;
        case 'n':
            min_moves = (size_t)strtoull(optarg, NULL, 10);
            break;
        case 's':
            seed = strtoull(optarg, NULL, 10);
            break;
        default:
            usage();
            return opt == 'h' ? 0 : 2;
        }
    }

    printf("sizeof(struct rules_state) = %zu bytes; %.1f s of thread CPU time per measurement; "
           "seed %llu\n\n",
           sizeof(struct rules_state), seconds, (unsigned long long)seed);
    printf("%-12s %8s %10s %8s %8s | %12s %12s %12s %12s %12s %11s\n", "game", "matches", "moves",
           "chance", "mv/match", "apply Mmv/s", "parse Mmv/s", "legal M/s", "listed/call",
           "view k/s", "view bytes");
    for (int g = 0; g < RULES_NGAMES; g++) {
        enum rules_game_id id;
        const char *name = rules_game_name((enum rules_game_id)g);
        if (!name || !rules_game_lookup(name, &id))
            continue;
        struct corpus c;
        corpus_build(&c, id, min_moves, seed);
        if (c.unfinished)
            fprintf(stderr, "bench_rules: %s: %zu matches stopped before their end\n", name,
                    c.unfinished);

        struct rate apply, parse, legal, views;
        volatile int64_t sink = 0;
        MEASURE(apply, seconds, c.nmoves, sink += replay(&c, false));
        MEASURE(parse, seconds, c.nmoves, sink += replay(&c, true));
        int64_t listed = list_legal(&c);
        MEASURE(legal, seconds, c.npositions, sink += list_legal(&c));
        int64_t view_bytes = write_views(&c);
        MEASURE(views, seconds, c.npositions, sink += write_views(&c));
        (void)sink;

        double positions = (double)(c.npositions ? c.npositions : 1);
        printf("%-12s %8zu %10zu %8zu %8.1f | %12.2f %12.2f %12.2f %12.1f %12.1f %11.0f\n", name,
               c.nmatches, c.nmoves, c.nchance, (double)c.nmoves / (double)c.nmatches,
               apply.per_second / 1e6, parse.per_second / 1e6, legal.per_second / 1e6,
               (double)listed / positions, views.per_second / 1e3, (double)view_bytes / positions);
        fflush(stdout);
        corpus_free(&c);
    }
    return 0;
}
