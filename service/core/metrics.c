/* metrics.c - the daemon's counters and histograms (metrics.h), and their exposition in the
 * Prometheus text format 0.0.4 with the gauges a scrape reads at its moment: the match
 * cache, the outbox's backlog and the database's files (through the store), the process's
 * resident memory and open files (/proc/self). Names and units as Prometheus's conventions
 * have them: cardpost_*_total counters, *_seconds and *_bytes, process_* as its clients do.
 */
#include "metrics.h"
#include "core.h"

#include <dirent.h>
#include <string.h>
#include <unistd.h>

/* Every counter of the process, zero at start. */
static struct {
    _Atomic uint64_t requests[METRICS_ROUTES + 1][METRICS_STATUSES];
    struct metrics_histogram request_seconds[METRICS_ROUTES + 1];
    _Atomic uint64_t moves_accepted;
    const char *_Atomic reason[METRICS_REASONS];
    _Atomic uint64_t moves_refused[METRICS_REASONS + 1];   /* the last: "other" */
    _Atomic uint64_t commits[2];                            /* failed, committed */
    struct metrics_histogram commit_writes, commit_seconds;
    _Atomic uint64_t cache[2];                              /* misses, hits */
    _Atomic uint64_t deliveries[2][3];                      /* channel, outcome */
    struct metrics_histogram attempt_seconds[2], queued_seconds[2];
    _Atomic uint64_t timeouts, reminders;
    _Atomic uint64_t stream_renders, stream_events_copied, stream_log_reads;
} m;

/* The buckets' upper bounds: request and commit latencies, writes per commit, and how long
 * a notification waited to be delivered (retries back off for hours). */
static const double seconds_bounds[METRICS_BUCKETS] = {
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
static const double writes_bounds[METRICS_BUCKETS] = {1,  2,  3,  4,   6,   8,   12,
                                                      16, 24, 32, 64, 128, 192, 256};
static const double queued_bounds[METRICS_BUCKETS] = {
    0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 3600};
/* A histogram's sum is kept whole: seconds in nanoseconds, writes as they are. */
#define SECONDS_SCALE 1e9

static void add(_Atomic uint64_t *c, uint64_t n)
{
    atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

static uint64_t get(_Atomic uint64_t *c)
{
    return atomic_load_explicit(c, memory_order_relaxed);
}

static void observe(struct metrics_histogram *h, const double *bounds, double v, double scale)
{
    int i = 0;
    while (i < METRICS_BUCKETS && v > bounds[i])
        i++;
    add(&h->bucket[i], 1);
    add(&h->sum, v > 0 ? (uint64_t)(v * scale + 0.5) : 0);
}

void metrics_request(int route, int status, double seconds)
{
    if (route < 0 || route >= METRICS_ROUTES)
        route = METRICS_NO_ROUTE;
    if (status < 100 || status >= 100 + METRICS_STATUSES)
        return; /* (no answer was sent: the client went first) */
    add(&m.requests[route][status - 100], 1);
    observe(&m.request_seconds[route], seconds_bounds, seconds, SECONDS_SCALE);
}

void metrics_move_accepted(void)
{
    add(&m.moves_accepted, 1);
}

/* The slot of a refusal's reason: the first slot holding it, or the first free one taken
 * for it (by compare-and-swap: two threads with a new reason agree on one slot). */
void metrics_move_refused(const char *reason)
{
    int i = 0;
    for (; reason && i < METRICS_REASONS; i++) {
        const char *there = atomic_load_explicit(&m.reason[i], memory_order_acquire);
        if (!there && atomic_compare_exchange_strong(&m.reason[i], &there, reason))
            break;
        if (!strcmp(there, reason))
            break;
    }
    add(&m.moves_refused[reason ? i : METRICS_REASONS], 1);
}

void metrics_commit(int writes, bool ok, double seconds)
{
    add(&m.commits[ok], 1);
    observe(&m.commit_writes, writes_bounds, writes, 1);
    observe(&m.commit_seconds, seconds_bounds, seconds, SECONDS_SCALE);
}

void metrics_cache(bool hit)
{
    add(&m.cache[hit], 1);
}

void metrics_delivery(int channel, enum metrics_outcome outcome, double attempt_seconds,
                      double queued_seconds)
{
    if (channel < 0 || channel > 1)
        return;
    add(&m.deliveries[channel][outcome], 1);
    observe(&m.attempt_seconds[channel], seconds_bounds, attempt_seconds, SECONDS_SCALE);
    if (outcome == METRICS_DELIVERED)
        observe(&m.queued_seconds[channel], queued_bounds, queued_seconds, SECONDS_SCALE);
}

void metrics_clock_timeout(void)
{
    add(&m.timeouts, 1);
}

void metrics_stream_render(void)
{
    add(&m.stream_renders, 1);
}

void metrics_stream_events_copied(void)
{
    add(&m.stream_events_copied, 1);
}

void metrics_stream_log_read(void)
{
    add(&m.stream_log_reads, 1);
}

void metrics_clock_reminders(int n)
{
    add(&m.reminders, (uint64_t)n);
}

/* ---- The scrape ---------------------------------------------------------------------------- */

void metrics_gauges_read(struct api_app *app, struct metrics_gauges *g)
{
    g->cache_size = (int64_t)api_matches_in_memory(app);
    g->cache_limit = api_config(app)->match_cache;
    struct err e;
    /* On the reading connection: a count of a backlog reads every pending row (a day's
     * outage: a million), and on the writing one, under db_lock, every commit would wait for
     * it (docs/decisions.md "A scrape never waits for the writer"). */
    lock_take(&app->read_lock);
    g->have_store = store_outbox_backlog(app->reader, g->pending, g->dead, &e) &&
                    store_file_sizes(app->reader, &g->db_bytes, &g->wal_bytes, &e);
    lock_drop(&app->read_lock);
}

static void head(FILE *out, const char *name, const char *type, const char *help)
{
    fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* One histogram's lines: cumulative buckets, sum, count; `labels` inside the braces
 * ("" or `route="..."`). */
static void histogram(FILE *out, const char *name, const char *labels,
                      struct metrics_histogram *h, const double *bounds, double scale)
{
    uint64_t total = 0;
    const char *comma = *labels ? "," : "";
    for (int i = 0; i <= METRICS_BUCKETS; i++) {
        total += get(&h->bucket[i]);
        if (i < METRICS_BUCKETS)
            fprintf(out, "%s_bucket{%s%sle=\"%g\"} %llu\n", name, labels, comma, bounds[i],
                    (unsigned long long)total);
        else
            fprintf(out, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels, comma,
                    (unsigned long long)total);
    }
    fprintf(out, "%s_sum%s%s%s %.9g\n", name, *labels ? "{" : "", labels, *labels ? "}" : "",
            (double)get(&h->sum) / scale);
    fprintf(out, "%s_count%s%s%s %llu\n", name, *labels ? "{" : "", labels,
            *labels ? "}" : "", (unsigned long long)total);
}

static uint64_t histogram_count(struct metrics_histogram *h)
{
    uint64_t n = 0;
    for (int i = 0; i <= METRICS_BUCKETS; i++)
        n += get(&h->bucket[i]);
    return n;
}

/* The label pair of request slot i: the route table row's method and pattern. */
static void route_labels(char *buf, size_t size, const struct metrics_gauges *g, int i)
{
    if (i < g->nroutes)
        snprintf(buf, size, "method=\"%s\",route=\"%s\"", g->route_method[i],
                 g->route_pattern[i]);
    else
        snprintf(buf, size, "method=\"other\",route=\"other\"");
}

static void write_requests(FILE *out, const struct metrics_gauges *g)
{
    char labels[300];
    head(out, "cardpost_http_requests_total", "counter",
         "HTTP requests answered, by route table row (method, pattern) and status; route "
         "\"other\": a page, a 404 or a refusal before routing");
    for (int i = 0; i <= METRICS_ROUTES; i++) {
        if (i >= g->nroutes && i != METRICS_NO_ROUTE)
            continue;
        route_labels(labels, sizeof labels, g, i);
        for (int s = 0; s < METRICS_STATUSES; s++)
            if (get(&m.requests[i][s]))
                fprintf(out, "cardpost_http_requests_total{%s,code=\"%d\"} %llu\n", labels,
                        s + 100, (unsigned long long)get(&m.requests[i][s]));
    }
    head(out, "cardpost_http_request_duration_seconds", "histogram",
         "Time from a request's headers to the end of its answer, by route");
    for (int i = 0; i <= METRICS_ROUTES; i++) {
        if ((i >= g->nroutes && i != METRICS_NO_ROUTE) || !histogram_count(&m.request_seconds[i]))
            continue;
        route_labels(labels, sizeof labels, g, i);
        histogram(out, "cardpost_http_request_duration_seconds", labels, &m.request_seconds[i],
                  seconds_bounds, SECONDS_SCALE);
    }
}

static void write_moves(FILE *out)
{
    head(out, "cardpost_moves_accepted_total", "counter",
         "Moves committed: players' (HTTP and email) and the clock's");
    fprintf(out, "cardpost_moves_accepted_total %llu\n",
            (unsigned long long)get(&m.moves_accepted));
    head(out, "cardpost_moves_refused_total", "counter",
         "Moves refused to a request, by reason (the problem type)");
    for (int i = 0; i <= METRICS_REASONS; i++) {
        const char *r = i < METRICS_REASONS ? atomic_load(&m.reason[i]) : "other";
        if (r && get(&m.moves_refused[i]))
            fprintf(out, "cardpost_moves_refused_total{reason=\"%s\"} %llu\n", r,
                    (unsigned long long)get(&m.moves_refused[i]));
    }
    head(out, "cardpost_group_commits_total", "counter",
         "Group commits (transactions of queued writes), by result");
    fprintf(out, "cardpost_group_commits_total{result=\"ok\"} %llu\n",
            (unsigned long long)get(&m.commits[1]));
    fprintf(out, "cardpost_group_commits_total{result=\"failed\"} %llu\n",
            (unsigned long long)get(&m.commits[0]));
    head(out, "cardpost_group_commit_writes", "histogram",
         "Writes (moves, new matches) per group commit");
    histogram(out, "cardpost_group_commit_writes", "", &m.commit_writes, writes_bounds, 1);
    head(out, "cardpost_group_commit_duration_seconds", "histogram",
         "Time of the database commit of a group commit (with durability = power, the "
         "fdatasync)");
    histogram(out, "cardpost_group_commit_duration_seconds", "", &m.commit_seconds,
              seconds_bounds, SECONDS_SCALE);
}

static void write_cache_clock(FILE *out, const struct metrics_gauges *g)
{
    head(out, "cardpost_match_cache_hits_total", "counter",
         "Matches found in memory when asked for");
    fprintf(out, "cardpost_match_cache_hits_total %llu\n", (unsigned long long)get(&m.cache[1]));
    head(out, "cardpost_match_cache_misses_total", "counter",
         "Matches loaded from the database when asked for");
    fprintf(out, "cardpost_match_cache_misses_total %llu\n",
            (unsigned long long)get(&m.cache[0]));
    head(out, "cardpost_match_cache_matches", "gauge", "Matches in memory now");
    fprintf(out, "cardpost_match_cache_matches %lld\n", (long long)g->cache_size);
    head(out, "cardpost_match_cache_limit", "gauge", "Matches kept in memory at most");
    fprintf(out, "cardpost_match_cache_limit %lld\n", (long long)g->cache_limit);
    head(out, "cardpost_event_streams_open", "gauge", "Event streams open now");
    fprintf(out, "cardpost_event_streams_open %lld\n", (long long)g->streams_open);
    head(out, "cardpost_event_stream_renders_total", "counter",
         "A commit's stream messages rendered for one visibility (a seat, or the spectators), "
         "shared by all its streams");
    fprintf(out, "cardpost_event_stream_renders_total %llu\n",
            (unsigned long long)get(&m.stream_renders));
    head(out, "cardpost_event_stream_events_copied_total", "counter",
         "Renders whose event messages were copied from another visibility's (every move of the "
         "commit open: the same for all)");
    fprintf(out, "cardpost_event_stream_events_copied_total %llu\n",
            (unsigned long long)get(&m.stream_events_copied));
    head(out, "cardpost_event_stream_log_reads_total", "counter",
         "Stream messages read back from the log (a stream's first, or one behind the feed)");
    fprintf(out, "cardpost_event_stream_log_reads_total %llu\n",
            (unsigned long long)get(&m.stream_log_reads));
    head(out, "cardpost_clock_timeouts_total", "counter",
         "Moves the clock played for a late seat (its timeout policy)");
    fprintf(out, "cardpost_clock_timeouts_total %llu\n", (unsigned long long)get(&m.timeouts));
    head(out, "cardpost_clock_reminders_total", "counter", "Reminders the clock queued");
    fprintf(out, "cardpost_clock_reminders_total %llu\n", (unsigned long long)get(&m.reminders));
}

static const char *const channels[2] = {"email", "webhook"};

static void write_outbox(FILE *out, const struct metrics_gauges *g)
{
    static const char *const outcomes[3] = {"delivered", "retry", "dead"};
    char labels[64];
    if (g->have_store) {
        head(out, "cardpost_outbox_pending", "gauge",
             "Notifications waiting for delivery, by channel (read from the database)");
        for (int c = 0; c < 2; c++)
            fprintf(out, "cardpost_outbox_pending{channel=\"%s\"} %lld\n", channels[c],
                    (long long)g->pending[c]);
        head(out, "cardpost_outbox_dead", "gauge",
             "Notifications given up on, by channel (read from the database)");
        for (int c = 0; c < 2; c++)
            fprintf(out, "cardpost_outbox_dead{channel=\"%s\"} %lld\n", channels[c],
                    (long long)g->dead[c]);
    }
    head(out, "cardpost_delivery_attempts_total", "counter",
         "Delivery attempts by channel and outcome (delivered, retry later, dead)");
    for (int c = 0; c < 2; c++)
        for (int o = 0; o < 3; o++)
            fprintf(out, "cardpost_delivery_attempts_total{channel=\"%s\",outcome=\"%s\"} %llu\n",
                    channels[c], outcomes[o], (unsigned long long)get(&m.deliveries[c][o]));
    head(out, "cardpost_outbox_delivered_total", "counter",
         "Notifications delivered since start, by channel");
    for (int c = 0; c < 2; c++)
        fprintf(out, "cardpost_outbox_delivered_total{channel=\"%s\"} %llu\n", channels[c],
                (unsigned long long)get(&m.deliveries[c][METRICS_DELIVERED]));
    head(out, "cardpost_delivery_attempt_duration_seconds", "histogram",
         "Time of one delivery attempt, by channel");
    for (int c = 0; c < 2; c++) {
        snprintf(labels, sizeof labels, "channel=\"%s\"", channels[c]);
        histogram(out, "cardpost_delivery_attempt_duration_seconds", labels,
                  &m.attempt_seconds[c], seconds_bounds, SECONDS_SCALE);
    }
    head(out, "cardpost_delivery_latency_seconds", "histogram",
         "Time from a notification's queueing to its delivery, by channel");
    for (int c = 0; c < 2; c++) {
        snprintf(labels, sizeof labels, "channel=\"%s\"", channels[c]);
        histogram(out, "cardpost_delivery_latency_seconds", labels, &m.queued_seconds[c],
                  queued_bounds, SECONDS_SCALE);
    }
}

/* The open file descriptors: the entries of /proc/self/fd (less the one reading it). */
static long open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    long n = 0;
    while (readdir(d))
        n++;
    closedir(d);
    return n - 3; /* ".", ".." and the directory's own descriptor */
}

static void write_process(FILE *out, const struct metrics_gauges *g)
{
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    bool statm = f && fscanf(f, "%ld %ld", &pages, &resident) == 2;
    if (f)
        fclose(f);
    if (statm) {
        head(out, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
        fprintf(out, "process_resident_memory_bytes %lld\n",
                (long long)resident * sysconf(_SC_PAGESIZE));
    }
    long fds = open_fds();
    if (fds >= 0) {
        head(out, "process_open_fds", "gauge", "Number of open file descriptors.");
        fprintf(out, "process_open_fds %ld\n", fds);
    }
    if (g->have_store) {
        head(out, "cardpost_database_bytes", "gauge", "Size of the database file");
        fprintf(out, "cardpost_database_bytes %lld\n", (long long)g->db_bytes);
        head(out, "cardpost_database_wal_bytes", "gauge",
             "Size of the database's write-ahead log");
        fprintf(out, "cardpost_database_wal_bytes %lld\n", (long long)g->wal_bytes);
    }
}

void metrics_write(FILE *out, const struct metrics_gauges *g)
{
    write_requests(out, g);
    write_moves(out);
    write_cache_clock(out, g);
    write_outbox(out, g);
    write_process(out, g);
}
