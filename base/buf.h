/* buf.h - the growing text buffer: bytes appended to one allocation that doubles as it
 * fills, always NUL-terminated. Running out of memory sets `failed`; the buffer then
 * ignores everything until buf_finish, which returns NULL, so a caller checks once at the
 * end instead of after every append (and no text is ever dropped silently).
 */
#ifndef CARDPOST_BUF_H
#define CARDPOST_BUF_H

#include <stdbool.h>
#include <stddef.h>

struct buf {
    char *p;                   /* NULL until the first byte */
    size_t len, cap;
    bool failed;
};

/* An empty buffer; no allocation until the first byte. */
#define BUF_INIT {NULL, 0, 0, false}

/* Append `n` bytes (which may hold NULs). */
void buf_put(struct buf *b, const void *s, size_t n);

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
