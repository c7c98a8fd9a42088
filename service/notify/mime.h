/* mime.h - the part of reading inbound mail that needs GMime (MIME structure, transfer
 * encodings, charsets, RFC 2047 words): a message's headers and body text as GMime decodes
 * them, nothing decided. mail.c decides the rest (mail.h).
 *
 * GMime brings GLib, GObject, GIO, GPGME and their own libraries with it: 2.4 MiB of mapped
 * pages in every process that links it, used only when a message comes. So cardpostd does
 * not link it: mime.c is built as the module cardpost-mime.so, which mail.c loads at the
 * first inbound message (docs/decisions.md "GMime loaded at the first message"). The tests
 * and fuzz targets link mime.c itself, and mail.c then calls it directly.
 */
#ifndef CARDPOST_MIME_H
#define CARDPOST_MIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* A message as GMime reads it. Strings are malloc'd (free() them) or NULL. */
struct mime_message {
    char *play_address;   /* the first play+ address in Delivered-To, X-Original-To, To, Cc */
    char *from;           /* the first From mailbox */
    char *message_id;     /* the Message-ID without its <>, decoded (unchecked) */
    char *references;     /* the References header as it came */
    char *subject;        /* decoded */
    char *auto_submitted; /* the Auto-Submitted header */
    char *precedence;     /* the Precedence header */
    char *text;           /* the first text/plain part that is not an attachment, else the
                             first text/html one */
    bool html;            /* `text` is HTML */
};

/* The module's one entry point, by this name. */
#define MIME_READ_SYMBOL "cardpost_mime_read"

/* Read `len` bytes (at least one) of `raw` into *out (all NULL first). False when GMime
 * finds no message there (out empty), or memory ran out (out freed). */
typedef bool mime_read_fn(const char *raw, size_t len, struct mime_message *out);
mime_read_fn cardpost_mime_read;

/* Free the strings of *m and empty it (inline: the module and cardpostd each have it, and
 * the module uses nothing of cardpostd's). */
static inline void mime_message_finish(struct mime_message *m)
{
    free(m->play_address);
    free(m->from);
    free(m->message_id);
    free(m->references);
    free(m->subject);
    free(m->auto_submitted);
    free(m->precedence);
    free(m->text);
    memset(m, 0, sizeof *m);
}

#endif
