/* routes.h - the REST API as data: one table of routes (method, path pattern, who may call,
 * what body it takes, the handler), and the one matcher over it from which 404, 405 and
 * its Allow header follow. http.c parses a request, finds its route here, checks the caller
 * against it and calls the handler; the handlers themselves are in handlers.h and core.h.
 */
#ifndef CARDPOST_ROUTES_H
#define CARDPOST_ROUTES_H

#include <microhttpd.h>
#include <stdarg.h>

#include "handlers.h"
#include "limits.h"

/* The most `{id}` segments in a pattern. */
#define ROUTES_MAX_IDS 2

struct http_server;

/* What a handler is called with: the request as http.c parsed it. All borrowed. */
struct route_call {
    struct api_app *app;
    const struct api_caller *caller;
    int64_t id[ROUTES_MAX_IDS];       /* the path's {id} segments, in order */
    json_t *body;                     /* a JSON route's body, parsed (NULL: none) */
    const char *raw;                  /* the body as it came (a raw route's) */
    size_t raw_len;
    const char *idem;                 /* the Idempotency-Key header, or NULL */
    const uint8_t *request_hash;      /* sha256 of "METHOD PATH\nBODY" (32 bytes) */
    struct MHD_Connection *conn;      /* for a route that reads headers or answers itself */
    struct http_server *srv;
    const struct limits_key *client;  /* who the request comes from (limits.h) */
};

/* The handlers' three shapes: one that fills a reply; one that may answer later
 * (core.h, struct api_async: the move that waits for its group commit); one that answers
 * by itself (the event stream). */
typedef void route_reply_fn(const struct route_call *k, struct api_reply *r);
typedef void route_async_fn(const struct route_call *k, struct api_reply *r,
                            const struct api_async *async);
typedef enum MHD_Result route_stream_fn(const struct route_call *k);

/* Who may call a route, and what anyone else is told (each refusal worded as its handler
 * words it, so that the table's check and the handler's agree to the byte). */
enum route_need {
    ROUTE_ANYONE,                     /* no token needed */
    ROUTE_PLAYER,                     /* a player's token (the operator is refused) */
    ROUTE_OPERATOR,                   /* the operator's token */
    ROUTE_EITHER,                     /* a player's or the operator's */
};
struct route_auth {
    enum route_need need;
    const char *unauthorized_type;    /* the 401's problem type (NULL: "unauthorized") */
    const char *unauthorized;         /* the 401's detail: no token */
    const char *forbidden;            /* the 403's detail: the wrong kind of token */
};

/* What body a route takes: none, JSON (at most API_MAX_BODY), or raw bytes (inbound mail,
 * up to MAIL_MAX_MESSAGE + API_MAX_BODY: its caller is checked in full from the headers,
 * before any byte of it is read). */
enum route_body { ROUTE_NO_BODY, ROUTE_JSON, ROUTE_RAW };

struct route {
    const char *method;               /* "GET" (HEAD too), "POST", "PATCH", "DELETE" */
    const char *pattern;              /* "/v1/matches/{id}/moves": {id} a positive integer */
    const struct route_auth *auth;
    enum route_body body;
    route_reply_fn *reply;            /* the handler: exactly one of the three */
    route_async_fn *async;
    route_stream_fn *stream;
    bool test_clock;                  /* there only while the test clock is on */
    bool no_allow;                    /* its 405 carries no Allow header (/healthz's, kept) */
    bool own_auth;                    /* the table lets anyone through: the handler checks
                                       * the caller itself (/metrics: the operator's, once it
                                       * is served on this address at all) */
};

/* The API: every route of cardpostd (docs/api.md). */
extern const struct route routes_api[];

/* What a request's method and path find in a table. */
struct route_found {
    const struct route *route;        /* the route to call, or NULL: */
    const struct route *path;         /* a route of that path (any method); NULL: 404 */
    bool plain;                       /* the path is outside the JSON API: outside /v1/, or
                                       * its body raw (inbound mail) */
    const struct route *raw;          /* the path's route that takes a raw body, or NULL */
    bool open_body;                   /* a route of the path takes a body without a token
                                       * (registration; every other body needs one) */
    char allow[64];                   /* the path's methods, for a 405's Allow: "GET, HEAD" */
    int64_t id[ROUTES_MAX_IDS];       /* the path's {id} segments */
};

/* Find `method` `path` in `table` (ended by a route with a NULL method): true with f->route
 * when there is a route; false with f->path NULL when no pattern matches (404), or with
 * f->path and f->allow when the path is there without that method (405). Routes marked
 * test_clock count only when `test_clock` is on. */
bool routes_find(const struct route *table, const char *method, const char *path,
                 bool test_clock, struct route_found *f);

/* Whether `path` matches `pattern`, its {id} segments in id[] (ROUTES_MAX_IDS). An {id} is
 * a whole segment of digits not starting with 0, at most 9223372036854775799 (the digits
 * are refused once one more might overflow). */
bool routes_pattern_match(const char *pattern, const char *path, int64_t *id);

/* Whether the caller may call route `rt`; else false with its refusal (401 or 403) in r. */
bool routes_allow(const struct route *rt, const struct api_caller *c, struct api_reply *r);

/* The API's description, docs/openapi.json as built (service/http/embed-openapi.py): the
 * answer of GET /v1/openapi.json, `routes_openapi_json_len` bytes (and a NUL). */
extern const char routes_openapi_json[];
extern const size_t routes_openapi_json_len;

/* The edge's own handlers: a match's event stream (http.c); the metrics (metrics.c). */
route_stream_fn http_stream_open;
route_stream_fn http_player_stream_open;
route_stream_fn http_metrics_get;

/* For the edge's own answer paths (metrics.c): queue `resp` (destroyed) with `status`, the
 * request's X-Request-Id and its status and `bytes` noted for the log line; answer `r` (its
 * body taken) as every handler's answer is sent. */
enum MHD_Result http_queue(struct MHD_Connection *conn, int status, struct MHD_Response *resp,
                           uint64_t bytes);
enum MHD_Result http_send_reply(struct MHD_Connection *conn, struct api_reply *r);

/* The address a HOST:PORT setting (`setting`, for the error: "--listen") names, resolved
 * (HOST may be a name, an IPv4 or a bracketed IPv6 address); free it with freeaddrinfo. NULL
 * with ERR_INVALID "bad_listen". */
struct addrinfo;
struct addrinfo *http_listen_address(const char *listen, const char *setting, struct err *e);

/* The URI callback of both servers (MHD_OPTION_URI_LOG_CALLBACK), called before
 * libmicrohttpd parses the query. libmicrohttpd 0.9.75 keeps a record of each query
 * parameter in the connection's memory, and when they do not fit, its 431 is lost: the
 * connection hangs until its timeout, unanswered. So a query of more than
 * HTTP_QUERY_MAX_PARAMS parameters, or in a request target of more than HTTP_TARGET_MAX
 * bytes, is cut off here before it is parsed, and the request is marked: the access handler
 * finds the mark as its *con_cls on its first call, and http_query_was_cut takes it off
 * (true) so the handler answers 414. */
#define HTTP_QUERY_MAX_PARAMS 32
#define HTTP_TARGET_MAX 4096
#define HTTP_TEXT_(n) #n
#define HTTP_TEXT(n) HTTP_TEXT_(n)
#define HTTP_URI_TOO_LONG                                                                      \
    "a query has at most " HTTP_TEXT(HTTP_QUERY_MAX_PARAMS) " parameters, and a request"       \
    " target at most " HTTP_TEXT(HTTP_TARGET_MAX) " bytes" /* (the 414's detail) */
void *http_uri_guard(void *cls, const char *uri, struct MHD_Connection *conn);
bool http_query_was_cut(void **con_cls);

/* libmicrohttpd's own messages (MHD_OPTION_EXTERNAL_LOGGER of both servers): a request it
 * answered itself (431 for headers over its memory, 400 for a line it cannot parse) or a
 * connection it dropped. Lines of the log (info, event "http", the message as "msg"), not
 * text on standard error beside it. It is the daemons' first option: libmicrohttpd prints
 * what comes before it on standard error. */
void http_mhd_message(void *cls, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

#endif
