/* jw.h - a JSON text writer: values appended to a growing buffer, commas and escapes done
 * for the caller. For the hot answers (a seat's view after each move), where building a
 * jansson tree only to serialise it at once cost more than the move itself.
 *
 * The text is exactly what jansson's json_dumps(JSON_COMPACT) makes of the same values in
 * the same order (no spaces; strings escaped as jansson escapes them), so either way of
 * writing an answer gives the same bytes. Running out of memory sets `failed`; the writer
 * then ignores everything until jw_finish, which returns NULL.
 */
#ifndef CARDPOST_JW_H
#define CARDPOST_JW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

#define JW_MAX_DEPTH 32

struct jw {
    struct buf b;               /* the text; b.failed also when containers do not match */
    int depth;
    bool first[JW_MAX_DEPTH];   /* no member written yet in the open container */
};

/* Start an empty writer (no allocation until the first value). */
void jw_init(struct jw *w);

/* The text written (NUL-terminated, owned by the caller; its length in *len if len is not
 * NULL), or NULL if memory ran out or containers are still open. The writer is reset. */
char *jw_finish(struct jw *w, size_t *len);

/* Drop the text (after an error). */
void jw_discard(struct jw *w);

/* Each value takes a key inside an object and NULL inside an array or at the top. */
void jw_object_begin(struct jw *w, const char *key);
void jw_object_end(struct jw *w);
/* An object whose first members are the n bytes of `members` (compact JSON members, as a
 * writer wrote them between an object's braces: the text of a head rendered once); the
 * writer goes on after them. */
void jw_object_begin_with(struct jw *w, const char *key, const char *members, size_t n);
void jw_array_begin(struct jw *w, const char *key);
void jw_array_end(struct jw *w);
void jw_int(struct jw *w, const char *key, int64_t v);
void jw_bool(struct jw *w, const char *key, bool v);
void jw_null(struct jw *w, const char *key);
void jw_string(struct jw *w, const char *key, const char *s);
void jw_stringn(struct jw *w, const char *key, const char *s, size_t n);
/* A string the caller knows needs no escape (a card, a move as the rules format it: letters,
 * digits and spaces): copied as it is, between its quotes. */
void jw_plain(struct jw *w, const char *key, const char *s, size_t n);
/* The same, written in place: room for `max` bytes of such a string (and a NUL) where the
 * caller writes it, or NULL without memory; then jw_plain_end with where its text ends. */
char *jw_plain_begin(struct jw *w, const char *key, size_t max);
void jw_plain_end(struct jw *w, char *end);
/* A value already serialised as compact JSON text. */
void jw_raw(struct jw *w, const char *key, const char *json, size_t n);

#endif
