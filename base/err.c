/* err.c - filling the error value; no allocation, no I/O. */
#include "err.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

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
    utf8_clean(e->msg); /* (a message may echo input, cut by its buffer or a "%.40s") */
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

void utf8_clean(char *s)
{
    unsigned char *p = (unsigned char *)s;
    while (*p) {
        int n = *p < 0x80 ? 1 : (*p & 0xe0) == 0xc0 && *p >= 0xc2 ? 2 : (*p & 0xf0) == 0xe0 ? 3
                : (*p & 0xf8) == 0xf0 && *p <= 0xf4 ? 4 : 0;
        int k = 1;
        while (k < n && (p[k] & 0xc0) == 0x80)
            k++;
        bool overlong = (n == 3 && p[0] == 0xe0 && k > 1 && p[1] < 0xa0) ||
                        (n == 3 && p[0] == 0xed && k > 1 && p[1] >= 0xa0) ||
                        (n == 4 && p[0] == 0xf0 && k > 1 && p[1] < 0x90) ||
                        (n == 4 && p[0] == 0xf4 && k > 1 && p[1] >= 0x90);
        if (n > 1 && k < n && !p[k]) { /* cut at the end */
            *p = '\0';
            return;
        }
        if (n == 0 || k < n || overlong) {
            *p++ = '?';
            continue;
        }
        p += n;
    }
}

size_t utf8_prefix(const char *s, size_t max)
{
    size_t n = 0;
    while (n <= max && s[n])
        n++;
    if (n <= max)
        return n;
    n = max;
    while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
        n--;
    return n > 0 || ((unsigned char)s[0] & 0xc0) != 0x80 ? n : max;
}
