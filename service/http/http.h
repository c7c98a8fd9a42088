/* http.h - the HTTP server of cardpostd (libmicrohttpd), over an api_app. */
#ifndef CARDPOST_HTTP_H
#define CARDPOST_HTTP_H

#include "core.h"
#include "handlers.h"

struct http_server;

/* Listen on "HOST:PORT" (port 0: any free port) and serve the API from a pool of threads
 * of its own (config http_threads). NULL with e filled when the address is bad or taken. */
struct http_server *http_start(struct api_app *app, const char *listen, struct err *e);

/* The port actually bound. */
int http_port(const struct http_server *srv);

/* The event streams open now. */
int http_streams_open(struct http_server *srv);

/* GET /metrics in the Prometheus text format (metrics.c, docs/operations.md "Monitoring")
 * on an address of its own, "HOST:PORT" (the metrics_listen setting), served without a
 * token by a thread of its own; `srv` (borrowed) counts the event streams. NULL with e when
 * the address is bad or taken. http_metrics_stop accepts NULL; stop it before `srv`. */
struct http_metrics;
struct http_metrics *http_metrics_start(struct api_app *app, struct http_server *srv,
                                        const char *listen, struct err *e);
int http_metrics_port(const struct http_metrics *hm);
void http_metrics_stop(struct http_metrics *hm);

/* Stop accepting, end the event streams, finish the requests in flight, and free;
 * accepts NULL. */
void http_stop(struct http_server *srv);


#endif
