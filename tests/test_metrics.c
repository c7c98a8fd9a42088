/* test_metrics.c - the daemon's counters (service/core/metrics.c) with real threads: move
 * refusals by reason from many threads at once, each reason one series however the threads
 * race for its slot, and the reasons beyond the table's 32 under "other"; a request's route
 * and status and its histogram's cumulative buckets, in the exposition's text.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "metrics.h"

#define THREADS 8
#define ROUNDS 1000
#define REASONS 40 /* more than METRICS_REASONS */

/* The reasons, as different strings at different addresses (err tags of different files). */
static char reasons[REASONS][16];

static void *refuser(void *arg)
{
    int first = (int)(intptr_t)arg;
    for (int i = 0; i < ROUNDS; i++)
        metrics_move_refused(reasons[(first + i) % REASONS]);
    return NULL;
}

/* The exposition as text (caller frees). */
static char *render(const struct metrics_gauges *g)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    assert_non_null(out);
    metrics_write(out, g);
    assert_int_equal(fclose(out), 0);
    return text;
}

/* The value of the sample line `series` ("name{labels}"), -1 when absent; fails when the
 * series appears twice. */
static double sample(const char *text, const char *series)
{
    double v = -1;
    size_t n = strlen(series);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (!strncmp(p, series, n) && p[n] == ' ') {
            assert_true(v < 0);
            v = strtod(p + n + 1, NULL);
        }
    return v;
}

static void test_refusals_by_reason_under_threads(void **state)
{
    (void)state;
    for (int i = 0; i < REASONS; i++)
        snprintf(reasons[i], sizeof reasons[i], "reason_%02d", i);
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++)
        assert_int_equal(pthread_create(&th[t], NULL, refuser, (void *)(intptr_t)(t * 5)), 0);
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    struct metrics_gauges g = {0};
    char *text = render(&g);
    double total = 0;
    int named = 0;
    char series[800];
    for (int i = 0; i < REASONS; i++) {
        snprintf(series, sizeof series, "cardpost_moves_refused_total{reason=\"%s\"}",
                 reasons[i]);
        double v = sample(text, series);
        if (v >= 0) {
            named++;
            total += v;
        }
    }
    double other = sample(text, "cardpost_moves_refused_total{reason=\"other\"}");
    assert_int_equal(named, METRICS_REASONS);
    assert_true(other > 0);
    assert_true(total + other == (double)THREADS * ROUNDS);
    free(text);
}

static void test_request_by_route_and_status(void **state)
{
    (void)state;
    metrics_request(1, 201, 0.003);
    metrics_request(1, 201, 0.2);
    metrics_request(1, 409, 20);
    metrics_request(-1, 404, 0.0001);
    metrics_request(0, 0, 1); /* no answer: not counted */
    const char *methods[2] = {"GET", "POST"}, *patterns[2] = {"/a", "/b/{id}"};
    struct metrics_gauges g = {.nroutes = 2, .route_method = methods, .route_pattern = patterns};
    char *text = render(&g);
    assert_true(sample(text, "cardpost_http_requests_total{method=\"POST\",route=\"/b/{id}\","
                             "code=\"201\"}") == 2);
    assert_true(sample(text, "cardpost_http_requests_total{method=\"POST\",route=\"/b/{id}\","
                             "code=\"409\"}") == 1);
    assert_true(sample(text, "cardpost_http_requests_total{method=\"other\",route=\"other\","
                             "code=\"404\"}") == 1);
    assert_null(strstr(text, "method=\"GET\",route=\"/a\""));
    const char *h = "cardpost_http_request_duration_seconds";
    char series[160];
    snprintf(series, sizeof series, "%s_bucket{method=\"POST\",route=\"/b/{id}\",le=\"0.0025\"}", h);
    assert_true(sample(text, series) == 0);
    snprintf(series, sizeof series, "%s_bucket{method=\"POST\",route=\"/b/{id}\",le=\"0.005\"}", h);
    assert_true(sample(text, series) == 1);
    snprintf(series, sizeof series, "%s_bucket{method=\"POST\",route=\"/b/{id}\",le=\"10\"}", h);
    assert_true(sample(text, series) == 2);
    snprintf(series, sizeof series, "%s_bucket{method=\"POST\",route=\"/b/{id}\",le=\"+Inf\"}", h);
    assert_true(sample(text, series) == 3);
    snprintf(series, sizeof series, "%s_sum{method=\"POST\",route=\"/b/{id}\"}", h);
    double sum = sample(text, series);
    assert_true(sum > 20.2029 && sum < 20.2031);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refusals_by_reason_under_threads),
        cmocka_unit_test(test_request_by_route_and_status),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
