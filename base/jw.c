/* jw.c - the JSON text writer (jw.h). */
#include "jw.h"

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

/* A string literal, escaped as jansson escapes it (JSON_COMPACT, no ENSURE_ASCII): the
 * quote, the backslash and the control characters; UTF-8 is copied as it is. */
static void quoted(struct jw *w, const char *s, size_t n)
{
    put(w, "\"", 1);
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        put(w, s + run, i - run);
        run = i + 1;
        char esc[8];
        switch (c) {
        case '"': put(w, "\\\"", 2); break;
        case '\\': put(w, "\\\\", 2); break;
        case '\b': put(w, "\\b", 2); break;
        case '\f': put(w, "\\f", 2); break;
        case '\n': put(w, "\\n", 2); break;
        case '\r': put(w, "\\r", 2); break;
        case '\t': put(w, "\\t", 2); break;
        default:
            snprintf(esc, sizeof esc, "\\u%04X", c);
            put(w, esc, 6);
        }
    }
    put(w, s + run, n - run);
    put(w, "\"", 1);
}

/* The comma before a member or element, and the key of a member. */
static void member(struct jw *w, const char *key)
{
    if (!w->first[w->depth])
        put(w, ",", 1);
    w->first[w->depth] = false;
    if (key) {
        quoted(w, key, strlen(key));
        put(w, ":", 1);
    }
}

static void open_container(struct jw *w, const char *key, char c)
{
    member(w, key);
    put(w, &c, 1);
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
    member(w, key);
    char text[24];
    char *p = text + sizeof text;
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    do
        *--p = (char)('0' + u % 10);
    while (u /= 10);
    if (v < 0)
        *--p = '-';
    put(w, p, (size_t)(text + sizeof text - p));
}

void jw_bool(struct jw *w, const char *key, bool v)
{
    member(w, key);
    put(w, v ? "true" : "false", v ? 4 : 5);
}

void jw_null(struct jw *w, const char *key)
{
    member(w, key);
    put(w, "null", 4);
}

void jw_string(struct jw *w, const char *key, const char *s)
{
    jw_stringn(w, key, s, strlen(s));
}

void jw_stringn(struct jw *w, const char *key, const char *s, size_t n)
{
    member(w, key);
    quoted(w, s, n);
}

void jw_raw(struct jw *w, const char *key, const char *json, size_t n)
{
    member(w, key);
    put(w, json, n);
}
