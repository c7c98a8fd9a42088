/* jw.c - the JSON text writer (jw.h). */
#include "jw.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void jw_init(struct jw *w)
{
    memset(w, 0, sizeof *w);
    w->first[0] = true;
}

void jw_discard(struct jw *w)
{
    buf_free(&w->b);
    jw_init(w);
}

char *jw_finish(struct jw *w, size_t *len)
{
    if (w->depth != 0 || !w->b.p) {
        jw_discard(w);
        return NULL;
    }
    char *s = buf_finish(&w->b, len);
    jw_init(w);
    return s;
}

static void put(struct jw *w, const char *s, size_t n)
{
    buf_put(&w->b, s, n);
}

/* The longest string escaped in one pass into room reserved for its worst case (six bytes a
 * byte); a longer one goes piece by piece (quoted_long), not into six times its size. */
#define JW_SHORT 1024

/* Whether none of the 8 bytes in x needs escaping: none below 0x20, none a quote or a
 * backslash (each test exact for "any byte", the bit tricks of "Bit Twiddling Hacks"). */
static bool plain8(uint64_t x)
{
    const uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;
    uint64_t quote = x ^ (ones * '"'), backslash = x ^ (ones * '\\');
    uint64_t bad = ((x - ones * 0x20) & ~x) | ((quote - ones) & ~quote) |
                   ((backslash - ones) & ~backslash);
    return (bad & highs) == 0;
}

/* The bytes a JSON string must escape (as jansson escapes them, JSON_COMPACT without
 * ENSURE_ASCII): the control characters, the quote and the backslash. */
static const bool escaped[256] = {
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    ['"'] = 1, ['\\'] = 1,
};

/* s[0 .. n) escaped as jansson escapes it (JSON_COMPACT, no ENSURE_ASCII): the quote, the
 * backslash and the control characters; UTF-8 is copied as it is. Written at p (room for
 * 6 * n bytes); returns the end. Eight plain bytes at a time while they last, then a byte
 * at a time, no call: a view's strings are a few bytes each (a card, a key), hundreds of
 * them, and its legal passes thousands of bytes. */
static char *escape_into(char *p, const char *s, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t i = 0;
    for (uint64_t x; i + 8 <= n; i += 8, p += 8) {
        memcpy(&x, s + i, 8);
        if (!plain8(x))
            break;
        memcpy(p, &x, 8);
    }
    for (; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!escaped[c]) {
            *p++ = (char)c;
            continue;
        }
        *p++ = '\\';
        switch (c) {
        case '"': *p++ = '"'; break;
        case '\\': *p++ = '\\'; break;
        case '\b': *p++ = 'b'; break;
        case '\f': *p++ = 'f'; break;
        case '\n': *p++ = 'n'; break;
        case '\r': *p++ = 'r'; break;
        case '\t': *p++ = 't'; break;
        default:
            memcpy(p, "u00", 3);
            p[3] = hex[c >> 4];
            p[4] = hex[c & 15];
            p += 5;
        }
    }
    return p;
}

/* A long string literal, escaped in pieces of JW_SHORT bytes. */
static void quoted_long(struct jw *w, const char *s, size_t n)
{
    put(w, "\"", 1);
    for (size_t at = 0; at < n; at += JW_SHORT) {
        size_t k = n - at < JW_SHORT ? n - at : JW_SHORT;
        char *p = buf_reserve(&w->b, 6 * k);
        if (!p)
            return;
        buf_commit(&w->b, escape_into(p, s + at, k));
    }
    put(w, "\"", 1);
}

/* The longest key written in one pass (member_begin); a longer one, or one with a byte to
 * escape, the general way. */
#define JW_KEY_FAST 32

/* member_begin's general way: a key longer than JW_KEY_FAST or with a byte to escape,
 * measured, then escaped (or written in pieces past JW_SHORT). Out of line: the members of a
 * view never come here, and member_begin stays small enough to be inlined. */
static __attribute__((noinline)) char *member_begin_long(struct jw *w, const char *key,
                                                         size_t more)
{
    size_t k = strlen(key);
    if (k > JW_SHORT) {
        if (!w->first[w->depth])
            put(w, ",", 1);
        w->first[w->depth] = false;
        quoted_long(w, key, k);
        put(w, ":", 1);
        return buf_reserve(&w->b, more);
    }
    char *p = buf_reserve(&w->b, 1 + 6 * k + 3 + more);
    if (!p)
        return NULL;
    if (!w->first[w->depth])
        *p++ = ',';
    w->first[w->depth] = false;
    *p++ = '"';
    p = escape_into(p, key, k);
    *p++ = '"';
    *p++ = ':';
    return p;
}

/* Room for a member's comma and key and `more` bytes, the comma and key written: where its
 * value goes (then buf_commit), or NULL without memory. One check of room per piece. A key
 * (a view has hundreds, each a few plain bytes) is copied as it is read, without its length
 * first; one that needs more is written as any string is (nothing is committed before: the
 * general way writes over it). */
static inline char *member_begin(struct jw *w, const char *key, size_t more)
{
    char *p = buf_reserve(&w->b, 1 + 1 + JW_KEY_FAST + 2 + more);
    if (!p)
        return NULL;
    if (!w->first[w->depth])
        *p++ = ',';
    if (!key) {
        w->first[w->depth] = false;
        return p;
    }
    *p++ = '"';
    const unsigned char *s = (const unsigned char *)key;
    for (const unsigned char *end = s + JW_KEY_FAST; s < end && !escaped[*s]; s++)
        *p++ = (char)*s;
    if (*s != '\0')
        return member_begin_long(w, key, more);
    *p++ = '"';
    *p++ = ':';
    w->first[w->depth] = false;
    return p;
}

/* A member whose value is the literal text v[0 .. n) (a number, true, null ...). */
static void member_text(struct jw *w, const char *key, const char *v, size_t n)
{
    char *p = member_begin(w, key, n);
    if (!p)
        return;
    memcpy(p, v, n);
    buf_commit(&w->b, p + n);
}

static void open_container(struct jw *w, const char *key, char c)
{
    member_text(w, key, &c, 1);
    if (w->depth + 1 >= JW_MAX_DEPTH) {
        w->b.failed = true;
        return;
    }
    w->first[++w->depth] = true;
}

static void close_container(struct jw *w, char c)
{
    put(w, &c, 1);
    if (w->depth > 0)
        w->depth--;
    else
        w->b.failed = true;
}

void jw_object_begin(struct jw *w, const char *key)
{
    open_container(w, key, '{');
}

void jw_object_begin_with(struct jw *w, const char *key, const char *members, size_t n)
{
    open_container(w, key, '{');
    if (n == 0 || w->b.failed)
        return;
    put(w, members, n);
    w->first[w->depth] = false;
}

void jw_object_end(struct jw *w)
{
    close_container(w, '}');
}

void jw_array_begin(struct jw *w, const char *key)
{
    open_container(w, key, '[');
}

void jw_array_end(struct jw *w)
{
    close_container(w, ']');
}

void jw_int(struct jw *w, const char *key, int64_t v)
{
    char *p = member_begin(w, key, BUF_DECIMAL_MAX);
    if (p)
        buf_commit(&w->b, buf_decimal_at(p, v));
}

void jw_bool(struct jw *w, const char *key, bool v)
{
    member_text(w, key, v ? "true" : "false", v ? 4 : 5);
}

void jw_null(struct jw *w, const char *key)
{
    member_text(w, key, "null", 4);
}

void jw_string(struct jw *w, const char *key, const char *s)
{
    jw_stringn(w, key, s, strlen(s));
}

void jw_stringn(struct jw *w, const char *key, const char *s, size_t n)
{
    if (n > JW_SHORT) {
        member_text(w, key, "", 0);
        quoted_long(w, s, n);
        return;
    }
    char *p = member_begin(w, key, 6 * n + 2);
    if (!p)
        return;
    *p++ = '"';
    p = escape_into(p, s, n);
    *p++ = '"';
    buf_commit(&w->b, p);
}

void jw_plain(struct jw *w, const char *key, const char *s, size_t n)
{
#ifndef NDEBUG
    for (size_t i = 0; i < n; i++)
        assert((unsigned char)s[i] >= 0x20 && s[i] != '"' && s[i] != '\\');
#endif
    char *p = member_begin(w, key, n + 2);
    if (!p)
        return;
    *p++ = '"';
    if (n == 2) /* (a card, the most written of them: a copy of fixed size, no call) */
        memcpy(p, s, 2);
    else
        memcpy(p, s, n);
    p += n;
    *p++ = '"';
    buf_commit(&w->b, p);
}

char *jw_plain_begin(struct jw *w, const char *key, size_t max)
{
    char *p = member_begin(w, key, max + 2);
    if (p)
        *p++ = '"';
    return p;
}

void jw_plain_end(struct jw *w, char *end)
{
#ifndef NDEBUG
    for (const char *s = end; s[-1] != '"'; s--)
        assert((unsigned char)s[-1] >= 0x20 && s[-1] != '\\');
#endif
    *end++ = '"';
    buf_commit(&w->b, end);
}

void jw_raw(struct jw *w, const char *key, const char *json, size_t n)
{
    member_text(w, key, "", 0);
    put(w, json, n);
}
