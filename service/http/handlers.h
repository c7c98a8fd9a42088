/* handlers.h - the HTTP edge's handlers: each parses a request, calls the domain core
 * (core.h) and maps what it returns to an answer, errors through api_problem_from_err, the
 * one mapping from an error value to an HTTP status. http.c's route table calls them.
 */
#ifndef CARDPOST_HANDLERS_H
#define CARDPOST_HANDLERS_H

#include <jansson.h>

#include "core.h"

/* An HTTP answer: status, and a JSON body (owned; NULL for none) or the body already
 * written as JSON text (owned; used instead of `body` when set: the hot answers, written
 * without building a tree). Errors carry a problem+json body built by api_problem. */
struct api_reply {
    int status;
    json_t *body;
    char *text;
    size_t text_len;
    bool problem;
    int retry_after;              /* seconds: a Retry-After header (429), 0 none */
};

/* Fill `r` with a problem+json answer: type, title, status, detail. Returns false. */
bool api_problem(struct api_reply *r, int status, const char *type, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The one mapping from an error value to an HTTP problem: ERR_MALFORMED 400,
 * ERR_UNAUTHORIZED 401, ERR_FORBIDDEN 403, ERR_NOT_FOUND 404, ERR_CONFLICT 409,
 * ERR_INVALID, ERR_ILLEGAL and ERR_MISMATCH 422, ERR_LIMITED 429 (Retry-After from
 * e->retry_after), ERR_UNAVAILABLE 503, others 500; the problem's type is e->tag, its detail
 * e->msg. Returns false. */
bool api_problem_from_err(struct api_reply *r, const struct err *e);

/* Whether the caller is a player (else 401 without a token, 403 for the operator), or the
 * operator (else 401 / 403), with the problem in r. */
bool api_need_player(const struct api_caller *c, struct api_reply *r);
bool api_need_operator(const struct api_caller *c, struct api_reply *r);

#endif
