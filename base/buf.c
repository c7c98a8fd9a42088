/* buf.c - the growing text buffer (buf.h). */
#include "buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Room for `n` more bytes and the NUL; false (and failed) without memory. */
static bool room(struct buf *b, size_t n)
{
    if (b->failed)
        return false;
    if (b->len + n + 1 <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 1024;
    while (cap < b->len + n + 1)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
        b->failed = true;
        return false;
    }
    b->p = p;
    b->cap = cap;
    return true;
}

char *buf_reserve_grow(struct buf *b, size_t n)
{
    return room(b, n) ? b->p + b->len : NULL;
}

void buf_put_grow(struct buf *b, const void *s, size_t n)
{
    if (!room(b, n))
        return;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void buf_puts(struct buf *b, const char *s)
{
    buf_put(b, s, strlen(s));
}

void buf_printf(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->failed = true;
        return;
    }
    if ((size_t)n < sizeof small) {
        buf_put(b, small, (size_t)n);
        return;
    }
    if (!room(b, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

char *buf_finish(struct buf *b, size_t *len)
{
    if (!b->failed && !b->p && room(b, 0))
        b->p[0] = '\0'; /* "" */
    char *p = b->failed ? NULL : b->p;
    if (!p)
        free(b->p);
    else if (len)
        *len = b->len;
    *b = (struct buf)BUF_INIT;
    return p;
}

void buf_free(struct buf *b)
{
    free(b->p);
    *b = (struct buf)BUF_INIT;
}

size_t buf_write(char *p, size_t size, size_t n, void *buf)
{
    struct buf *b = buf;
    buf_put(b, p, size * n);
    return b->failed ? 0 : size * n;
}
