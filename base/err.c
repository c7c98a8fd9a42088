/* err.c - filling the error value; no allocation, no I/O. */
#include "err.h"

#include <stdarg.h>
#include <stdio.h>

const char *err_code_name(enum err_code code)
{
    switch (code) {
    case ERR_OK: return "ok";
    case ERR_INVALID: return "invalid";
    case ERR_ILLEGAL: return "illegal";
    case ERR_MISMATCH: return "mismatch";
    case ERR_IO: return "io";
    case ERR_NOMEM: return "nomem";
    case ERR_NOT_FOUND: return "not_found";
    case ERR_MALFORMED: return "malformed";
    case ERR_UNAUTHORIZED: return "unauthorized";
    case ERR_FORBIDDEN: return "forbidden";
    case ERR_CONFLICT: return "conflict";
    case ERR_LIMITED: return "limited";
    case ERR_UNAVAILABLE: return "unavailable";
    }
    return "unknown";
}

bool err_set(struct err *e, enum err_code code, const char *tag, const char *fmt, ...)
{
    if (!e)
        return false;
    e->code = code;
    e->tag = tag ? tag : err_code_name(code);
    e->retry_after = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    return false;
}

void err_clear(struct err *e)
{
    if (!e)
        return;
    e->code = ERR_OK;
    e->tag = "";
    e->msg[0] = '\0';
    e->retry_after = 0;
}
