/* async.h - a request whose answer comes later: a move waits for its group commit, or for
 * the move before it on its match (core.h, struct api_async). Its connection sleeps
 * suspended (no thread, no polling) until the core resumes it with the answer, or asks for
 * the request to be handled again from the start. http.c holds one per request.
 */
#ifndef CARDPOST_ASYNC_H
#define CARDPOST_ASYNC_H

#include <microhttpd.h>
#include <pthread.h>

#include "routes.h"

struct http_async {
    struct MHD_Connection *conn;
    struct api_reply reply;       /* the answer: filled by the handler or whoever resumes */
    /* Under `lock`: the answer may come before the handler has returned, even before it
     * asks to be suspended (a move whose thread wrote its group commit itself): then the
     * connection is not suspended at all. */
    struct lock lock;
    bool suspended;               /* MHD_suspend_connection'd, not resumed yet */
    bool parked;                  /* the handler's call suspended it (even if resumed since) */
    bool resumed;                 /* resume came while not suspended */
    bool reply_ready;             /* `reply` is filled */
    bool retry;                   /* to be handled again */
};

/* What to do with the request next. */
enum http_async_next {
    HTTP_ASYNC_NOTHING,           /* nothing came: it is answered, or waits (suspended) */
    HTTP_ASYNC_ANSWER,            /* send `reply` */
    HTTP_ASYNC_AGAIN,             /* handle the request again from the start */
};

/* Ready `a` for a request on `conn`: no reply, nothing suspended. */
void http_async_init(struct http_async *a, struct MHD_Connection *conn);
/* Free the reply left unsent and the lock; accepts NULL. */
void http_async_finish(struct http_async *a);

/* Call `handler` for the route call k with the request's reply, emptied, and its suspend
 * and resume; called again (the same call) while the core asks for that before the request
 * was suspended. ANSWER when the answer is there (at once, or resumed before the handler
 * returned); NOTHING when the request sleeps suspended: MHD calls it again once resumed,
 * and http_async_resumed says what came. */
enum http_async_next http_async_call(struct http_async *a, route_async_fn *handler,
                                     const struct route_call *k);

/* When MHD calls a request again: ANSWER or AGAIN when a resume brought that (once), else
 * NOTHING. */
enum http_async_next http_async_resumed(struct http_async *a);

#endif
