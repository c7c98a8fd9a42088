/* err.h - the one error value of cardpost.
 *
 * A function that can fail returns bool (or NULL) and takes `struct err *` last.
 * Filling an error never allocates, so the pure rules engine can use it too.
 * Callers may pass NULL when they do not want the reason.
 */
#ifndef CARDPOST_ERR_H
#define CARDPOST_ERR_H

#include <stdbool.h>
#include <stddef.h>

enum err_code {
    ERR_OK = 0,
    ERR_INVALID,   /* malformed input: bad JSON, bad option, bad deal, bad file */
    ERR_ILLEGAL,   /* well-formed, but the rules refuse it */
    ERR_MISMATCH,  /* a claim (result, commitment, derived deal) does not hold */
    ERR_IO,        /* the operating system refused */
    ERR_NOMEM,
    ERR_NOT_FOUND,
    /* What the service's domain core (service/core/) says of a request; the HTTP edge maps
     * each to one status (api_problem_from_err): */
    ERR_MALFORMED,     /* the request itself cannot be read (400) */
    ERR_UNAUTHORIZED,  /* nobody, or an unknown token, asks for what needs someone (401) */
    ERR_FORBIDDEN,     /* the caller may not do this (403) */
    ERR_CONFLICT,      /* not in the state the request needs (409) */
    ERR_LIMITED,       /* beyond a limit for now: retry_after seconds (429) */
    ERR_UNAVAILABLE,   /* the service cannot do it now (503) */
};

struct err {
    enum err_code code;
    const char *tag;  /* short stable machine code ("must_follow_suit"); static storage */
    char msg[160];    /* human-readable reason */
    int retry_after;  /* ERR_LIMITED: seconds until a retry may succeed (else 0) */
};

/* The name of a code, for logs ("illegal"). Never NULL. */
const char *err_code_name(enum err_code code);

/* Fill `e` (if not NULL) and return false, so callers can write
 * `return err_set(e, ERR_ILLEGAL, "not_your_turn", "seat %d may not move", s);`.
 * `tag` must have static storage duration. */
bool err_set(struct err *e, enum err_code code, const char *tag, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Make `s` valid UTF-8 in place: a byte that does not start a well-formed character becomes
 * '?', and a character cut at the end (by a fixed buffer) is dropped. jansson refuses
 * anything else, and an answer it cannot encode would be lost. err_set cleans its message. */
void utf8_clean(char *s);

/* How many of the first bytes of `s` to keep so that at most `max` are kept and no character
 * is cut (for "%.*s", or a chunk of an encoded header). Not UTF-8 there (no character starts
 * within the `max` bytes' reach): `max`. */
size_t utf8_prefix(const char *s, size_t max);

/* Reset `e` (if not NULL) to ERR_OK with empty tag and message. */
void err_clear(struct err *e);

#endif
