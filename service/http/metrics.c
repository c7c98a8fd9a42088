/* metrics.c - GET /metrics, the Prometheus text exposition (format 0.0.4) of the daemon's
 * counters (core/metrics.h) with the gauges of the moment: on the API's address for the
 * operator (a route of routes.c), or, with the metrics_listen setting, on an address of its
 * own without a token (a small server of one thread: only /metrics), /metrics on the API's
 * address then answering 404. docs/operations.md "Monitoring" lists the metrics.
 */
#include "http.h"
#include "metrics.h"
#include "routes.h"

#include <microhttpd.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* The exposition, its routes labelled by the table's rows. NULL when out of memory. */
static char *exposition(struct api_app *app, struct http_server *srv, size_t *len)
{
    const char *methods[METRICS_ROUTES], *patterns[METRICS_ROUTES];
    struct metrics_gauges g = {.route_method = methods, .route_pattern = patterns};
    for (const struct route *rt = routes_api; rt->method; rt++) {
        assert(g.nroutes < METRICS_ROUTES); /* (raise METRICS_ROUTES with the table) */
        methods[g.nroutes] = rt->method;
        patterns[g.nroutes++] = rt->pattern;
    }
    g.streams_open = http_streams_open(srv);
    metrics_gauges_read(app, &g);
    char *text = NULL;
    FILE *out = open_memstream(&text, len);
    if (!out)
        return NULL;
    metrics_write(out, &g);
    if (fclose(out) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

static enum MHD_Result send_exposition(struct api_app *app, struct http_server *srv,
                                       struct MHD_Connection *conn)
{
    size_t len = 0;
    char *text = exposition(app, srv, &len);
    struct MHD_Response *resp =
        text ? MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE) : NULL;
    if (!resp) {
        free(text);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, METRICS_CONTENT_TYPE);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    return http_queue(conn, MHD_HTTP_OK, resp, len);
}

/* GET /metrics on the API's address: the operator's, or not there at all (404) when the
 * metrics have an address of their own. The route's caller is checked here, after that. */
enum MHD_Result http_metrics_get(const struct route_call *k)
{
    struct api_reply r = {0};
    if (api_config(k->app)->metrics_listen[0])
        api_problem(&r, 404, "not_found", "no such resource");
    else if (!api_need_operator(k->caller, &r))
        (void)0; /* (401 without a token, 403 for a player's) */
    else
        return send_exposition(k->app, k->srv, k->conn);
    return http_send_reply(k->conn, &r);
}

/* ---- The address of its own (metrics_listen) ------------------------------------------------ */

struct http_metrics {
    struct MHD_Daemon *daemon;
    struct api_app *app;
    struct http_server *srv;
    int port;
};

static enum MHD_Result on_scrape(void *cls, struct MHD_Connection *conn, const char *url,
                                 const char *method, const char *version,
                                 const char *upload_data, size_t *upload_data_size,
                                 void **con_cls)
{
    (void)version, (void)upload_data;
    struct http_metrics *hm = cls;
    bool cut = http_query_was_cut(con_cls);
    if (*upload_data_size) { /* (a body is read and ignored) */
        *upload_data_size = 0;
        return MHD_YES;
    }
    struct api_reply r = {0};
    if (cut)
        api_problem(&r, 414, "uri_too_long", "%s", HTTP_URI_TOO_LONG);
    else if (!strcmp(url, "/metrics") && (!strcmp(method, "GET") || !strcmp(method, "HEAD")))
        return send_exposition(hm->app, hm->srv, conn);
    else if (!strcmp(url, "/metrics"))
        api_problem(&r, 405, "method_not_allowed", "use GET");
    else
        api_problem(&r, 404, "not_found", "only /metrics is here");
    return http_send_reply(conn, &r);
}

struct http_metrics *http_metrics_start(struct api_app *app, struct http_server *srv,
                                        const char *listen, struct err *e)
{
    struct addrinfo *ai = http_listen_address(listen, "metrics_listen", e);
    if (!ai)
        return NULL;
    struct http_metrics *hm = calloc(1, sizeof *hm);
    if (hm) {
        hm->app = app;
        hm->srv = srv;
        unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
        if (ai->ai_family == AF_INET6)
            flags |= MHD_USE_IPv6;
        hm->daemon = MHD_start_daemon(flags, 0, NULL, NULL, on_scrape, hm,
                                      MHD_OPTION_EXTERNAL_LOGGER, http_mhd_message, NULL,
                                      MHD_OPTION_SOCK_ADDR, ai->ai_addr,
                                      MHD_OPTION_CONNECTION_LIMIT, (unsigned)64,
                                      MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30,
                                      MHD_OPTION_URI_LOG_CALLBACK, http_uri_guard, NULL,
                                      MHD_OPTION_LISTENING_ADDRESS_REUSE, (unsigned)1,
                                      MHD_OPTION_END);
    }
    freeaddrinfo(ai);
    if (!hm || !hm->daemon) {
        free(hm);
        err_set(e, ERR_IO, "listen", "cannot serve the metrics on %s", listen);
        return NULL;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(hm->daemon, MHD_DAEMON_INFO_BIND_PORT);
    hm->port = info ? info->port : 0;
    return hm;
}

int http_metrics_port(const struct http_metrics *hm)
{
    return hm->port;
}

void http_metrics_stop(struct http_metrics *hm)
{
    if (!hm)
        return;
    MHD_stop_daemon(hm->daemon);
    free(hm);
}
