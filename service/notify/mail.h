/* mail.h - play by email: reading an inbound RFC 5322 message (GMime: MIME structure,
 * transfer encodings, charsets) down to what the service needs — the signed play+ address it
 * was sent to, its Message-ID and References, and the command on the first line the player
 * wrote above the quoted original — and the signed reply addresses themselves.
 */
#ifndef CARDPOST_MAIL_H
#define CARDPOST_MAIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

#define MAIL_KEY_BYTES 32
#define MAIL_MAX_MESSAGE (1024 * 1024)

/* What an inbound message says. Strings are owned; mail_parsed_finish frees them. */
struct mail_parsed {
    char *play_address;   /* the first play+... local part found (To, Cc, Delivered-To, ...,
                             or the envelope recipient), or NULL */
    char *from;           /* the From address, for logs only (it can be forged) */
    char *message_id;     /* "<...>" or NULL */
    char *references;     /* the References header, or NULL */
    char *subject;        /* or NULL */
    char *command;        /* the first line the player wrote, trimmed, or NULL if none */
    bool automatic;       /* an automatic message (RFC 3834: Auto-Submitted other than "no",
                             Precedence bulk/junk/list, a bounce): never answered */
};

void mail_parsed_finish(struct mail_parsed *p);

/* Parse `len` bytes of a message. `recipient` (or NULL) is the envelope recipient the mail
 * server passed on, preferred over the headers. Fails with ERR_INVALID ("malformed_mail")
 * when it is not a message at all, ERR_UNAVAILABLE when the module that reads it cannot be
 * loaded (mail_mime_ready); a message without a readable text part parses with command
 * NULL. */
bool mail_parse(const char *raw, size_t len, const char *recipient, struct mail_parsed *out,
                struct err *e);

/* Where the module that reads messages with GMime is (mime.h), for a program that does not
 * link mime.c itself: cardpostd, at its start. Copied. */
void mail_mime_module(const char *path);

/* Load that module now if it is not loaded yet (mail_parse does it at the first message);
 * false with ERR_UNAVAILABLE ("mail_reader_missing") and the reason when it cannot be. */
bool mail_mime_ready(struct err *e);

/* The command of a plain-text body: the first non-empty line above the quoted original,
 * ignoring quote lines ("> ..."), "On ... wrote:" attributions, signatures ("-- ") and
 * forwarded/original-message separators. A new string, or NULL when there is none. */
char *mail_first_line(const char *text);

/* The reply address for `seat` of `match` at `seq`: "play+M.S.Q.TAG@domain" where TAG is
 * the first 12 bytes of HMAC-SHA256(key, "M.S.Q") in lower-case hex. */
void mail_address(const uint8_t key[MAIL_KEY_BYTES], const char *domain, int64_t match,
                  int seat, int64_t seq, char out[160]);

/* Check a play+ local part ("play+M.S.Q.TAG", with or without "@domain"): true with its
 * match, seat and seq when the tag is genuine (constant-time comparison). */
bool mail_address_check(const uint8_t key[MAIL_KEY_BYTES], const char *address, int64_t *match,
                        int *seat, int64_t *seq);

#endif
