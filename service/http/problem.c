/* problem.c - answers that are problems (RFC 9457 problem+json), and the one mapping from
 * the domain core's error values to HTTP statuses.
 */
#include "handlers.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static const char *status_title(int status)
{
    switch (status) {
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 409: return "Conflict";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 422: return "Unprocessable Content";
    case 429: return "Too Many Requests";
    case 503: return "Service Unavailable";
    default: return "Internal Server Error";
    }
}

bool api_problem(struct api_reply *r, int status, const char *type, const char *fmt, ...)
{
    char detail[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    utf8_clean(detail); /* (a detail may echo input, cut by this buffer) */
    char uri[128];
    snprintf(uri, sizeof uri, "/problems/%s", type); /* a URI reference (RFC 9457 §3.1.1) */
    json_decref(r->body);
    free(r->text);
    r->text = NULL;
    r->status = status;
    r->problem = true;
    r->body = json_pack("{s:s, s:s, s:i, s:s, s:s}", "type", uri, "title", status_title(status),
                        "status", status, "detail", detail, "code", type);
    return false;
}

bool api_need_player(const struct api_caller *c, struct api_reply *r)
{
    struct err e;
    return core_need_player(c, &e) || api_problem_from_err(r, &e);
}

bool api_need_operator(const struct api_caller *c, struct api_reply *r)
{
    struct err e;
    return core_need_operator(c, &e) || api_problem_from_err(r, &e);
}

bool api_problem_from_err(struct api_reply *r, const struct err *e)
{
    int status;
    switch (e->code) {
    case ERR_MALFORMED: status = 400; break;
    case ERR_UNAUTHORIZED: status = 401; break;
    case ERR_FORBIDDEN: status = 403; break;
    case ERR_NOT_FOUND: status = 404; break;
    case ERR_CONFLICT: status = 409; break;
    case ERR_INVALID:
    case ERR_ILLEGAL:
    case ERR_MISMATCH: status = 422; break;
    case ERR_LIMITED: status = 429; break;
    case ERR_UNAVAILABLE: status = 503; break;
    default: status = 500; break;
    }
    api_problem(r, status, e->tag && e->tag[0] ? e->tag : err_code_name(e->code), "%s", e->msg);
    if (e->code == ERR_LIMITED)
        r->retry_after = e->retry_after > 0 ? e->retry_after : 1;
    return false;
}

void api_ready(struct api_app *app, struct api_reply *r)
{
    char why[400];
    if (!core_ready(app, why, sizeof why)) {
        api_problem(r, 503, "not_ready", "%s", why);
        return;
    }
    r->status = 200;
    r->body = json_pack("{s:s, s:{s:s, s:s, s:s}}", "status", "ready", "checks", "database",
                        "ok", "workers", "ok", "scheduler", "ok");
}
