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

/* Stop accepting, end the event streams, finish the requests in flight, and free;
 * accepts NULL. */
void http_stop(struct http_server *srv);

#endif
