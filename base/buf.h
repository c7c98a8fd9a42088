/* buf.h - the growing text buffer: bytes appended to one allocation that doubles as it
 * fills, always NUL-terminated. Running out of memory sets `failed`; the buffer then
 * ignores everything until buf_finish, which returns NULL, so a caller checks once at the
 * end instead of after every append (and no text is ever dropped silently).
 */
#ifndef CARDPOST_BUF_H
#define CARDPOST_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct buf {
    char *p;                   /* NULL until the first byte */
    size_t len, cap;
    bool failed;
};

/* An empty buffer; no allocation until the first byte. */
#define BUF_INIT {NULL, 0, 0, false}

/* Append `n` bytes (which may hold NULs): inline when they fit, for a view's text is
 * written in hundreds of pieces of a few bytes (jw.c), and a call, a check of memory and a
 * call of memcpy each cost more than such a copy; buf_put_grow otherwise. */
void buf_put_grow(struct buf *b, const void *s, size_t n);

static inline void buf_put(struct buf *b, const void *s, size_t n)
{
    if (b->failed || n >= b->cap - b->len) { /* (no room for them and the NUL) */
        buf_put_grow(b, s, n);
        return;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

/* Room for `n` more bytes and the NUL: where they go (the caller writes them, then
 * buf_commit), or NULL once memory ran out. For a writer that fills its bytes itself; inline
 * when they fit (jw.c reserves for every member of a view), buf_reserve_grow otherwise. */
char *buf_reserve_grow(struct buf *b, size_t n);
static inline char *buf_reserve(struct buf *b, size_t n)
{
    if (b->failed || n >= b->cap - b->len)
        return buf_reserve_grow(b, n);
    return b->p + b->len;
}

/* The bytes written after buf_reserve, up to `end`, are the buffer's. */
static inline void buf_commit(struct buf *b, char *end)
{
    b->len = (size_t)(end - b->p);
    *end = '\0';
}

/* The room buf_decimal needs: 20 digits and a sign. */
#define BUF_DECIMAL_MAX 21

/* `v` in decimal, written backwards to end just before `end` (BUF_DECIMAL_MAX bytes of room
 * before it, no NUL): where it starts. No printf: a view, a stream message and a log line
 * each write several numbers. */
static inline char *buf_decimal(char *end, int64_t v)
{
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    do
        *--end = (char)('0' + u % 10);
    while (u /= 10);
    if (v < 0)
        *--end = '-';
    return end;
}

/* `v` in decimal written forwards at `p` (BUF_DECIMAL_MAX bytes of room, all of which it may
 * write over; no NUL): where the digits end. A number of up to 8 digits (most of a view's,
 * a stream message's, a log line's) is made in a register and stored once: digits stored
 * a byte at a time and read back as one word cannot be forwarded from the store buffer, and
 * that wait was the largest part of jw_int's time (docs/benchmarks.md "Numbers stored once"). */
static inline char *buf_decimal_at(char *p, int64_t v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if ((uint64_t)v < 100000000u) {
        uint64_t u = (uint64_t)v, x = 0;
        char *end = p;
        do { /* (the first digit made is the last: shifted up as the next comes below it) */
            x = x << 8 | (uint64_t)('0' + u % 10);
            end++;
        } while (u /= 10);
        memcpy(p, &x, 8);
        return end;
    }
#endif
    char text[BUF_DECIMAL_MAX];
    char *d = buf_decimal(text + sizeof text, v);
    size_t n = (size_t)(text + sizeof text - d);
    memcpy(p, d, n);
    return p + n;
}

/* Append a NUL-terminated string. */
void buf_puts(struct buf *b, const char *s);

/* Append printf-formatted text, whole, however long. */
void buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The text (NUL-terminated, owned by the caller; its length in *len if len is not NULL),
 * or NULL if memory ran out; the buffer is reset either way. An empty buffer gives "". */
char *buf_finish(struct buf *b, size_t *len);

/* Drop the text. */
void buf_free(struct buf *b);

/* An fwrite-style sink (libcurl's CURLOPT_WRITEFUNCTION takes it with the buffer as its
 * data): appends size * n bytes, and returns 0 once memory ran out. */
size_t buf_write(char *p, size_t size, size_t n, void *buf);

#endif
