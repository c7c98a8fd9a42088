/* notify.h - delivering notifications: signed webhooks (the Standard Webhooks convention of
 * spec/service.md) and RFC 5322 email through an SMTP relay, both with libcurl. These
 * functions do the network part only; what to send and when (the outbox, retries) is
 * outbox.c's. Every call is bounded by timeouts and never blocks a request thread.
 */
#ifndef CARDPOST_NOTIFY_H
#define CARDPOST_NOTIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* ---- Webhooks ------------------------------------------------------------------------------ */

#define NOTIFY_SECRET_MAX 64

/* A new webhook secret: "whsec_" + base64 of 24 random bytes. */
bool notify_secret_new(char out[NOTIFY_SECRET_MAX], struct err *e);

/* A new webhook id (the webhook-id header, the same on every retry of a notification):
 * "msg_", the time `now_ms` in 12 hex digits, then 12 random ones. `size` at least
 * NOTIFY_WEBHOOK_ID_MAX; false if the random source failed. */
#define NOTIFY_WEBHOOK_ID_MAX 29
bool notify_webhook_id(char *out, size_t size, int64_t now_ms);

/* The webhook-signature header value "v1,<base64 HMAC-SHA256(key, id.timestamp.body)>",
 * where key is the base64-decoded part of `secret` after "whsec_" (or the secret's own
 * bytes when it has no such prefix). `out` gets at most 128 bytes. */
bool notify_sign(const char *secret, const char *id, int64_t timestamp, const char *body,
                 size_t body_len, char out[128], struct err *e);

/* Whether webhooks may go to private, loopback and link-local addresses (operator's
 * setting; tests allow loopback). */
struct notify_policy {
    bool allow_private;
    long connect_timeout_ms;
    long total_timeout_ms;
    int concurrency;        /* webhook deliveries at once, in all (webhook_concurrency) */
    int per_destination;    /* ... and to one destination host and port (webhook_per_host) */
};

/* The outcome of one delivery attempt. */
struct notify_outcome {
    bool ok;                /* delivered (2xx / SMTP accepted) */
    bool retry;             /* a failure worth retrying (network, 429, 5xx, ...) */
    bool disable;           /* the endpoint said 410 Gone: stop sending to it */
    bool unreachable;       /* no connection could be made to it (refused, no route) */
    long status;            /* HTTP status, SMTP code, or 0 */
    char error[200];        /* what went wrong, for the attempt record */
};

/* Whether an IP address (text) is one webhooks must not reach unless the operator allows
 * private addresses: loopback, private, link- and site-local, shared (100.64/10), reserved,
 * documentation, benchmarking, multicast and broadcast ranges, and the IPv6 forms that embed
 * or translate IPv4 (NAT64, 6to4, Teredo, IPv4-compatible; an IPv4-mapped address is judged
 * by its IPv4 address). Text that is not an address counts as private. */
bool notify_address_private(const char *ip);

/* Check a webhook URL: http(s), an ASCII host (a name of letters, digits, hyphens and dots,
 * punycode for an internationalised one, or an IP literal), and (unless allowed) no private or loopback
 * address among those the host resolves to. Fails with ERR_INVALID and the reason. */
bool notify_webhook_url_ok(const char *url, const struct notify_policy *policy, bool resolve,
                           struct err *e);

/* The destination of a webhook URL as the delivery pool counts it: "host:port", the host in
 * lower case. Fails (ERR_INVALID) for a URL that is not one. */
bool notify_webhook_destination(const char *url, char *out, size_t size, struct err *e);

/* The connections a delivery thread keeps between its deliveries (a libcurl handle): the
 * next webhook to the same endpoint, or email to the relay, goes over the open connection,
 * without a new connect, TLS handshake or SMTP greeting. Owned by one thread at a time;
 * NULL where a function takes one: a connection of its own, closed at the end. */
struct notify_conn;
struct notify_conn *notify_conn_new(void);
void notify_conn_free(struct notify_conn *conn);

/* POST `body` (JSON) to `url` with the three webhook headers, over `conn`. The host is
 * resolved at each call and the connection pinned to the checked address; once connected,
 * or when a kept connection is used again, before anything is sent, the peer's address is
 * checked again (it must be the pinned one, and allowed). */
void notify_webhook_post(struct notify_conn *conn, const char *url, const char *secret,
                         const char *id, int64_t timestamp, const char *body,
                         const struct notify_policy *policy, struct notify_outcome *out);

/* ---- Email --------------------------------------------------------------------------------- */

/* Whether `addr` is a mailbox cardpost sends to: an RFC 5321 "local@domain" of at most 254
 * bytes, a dot-atom local part of at most 64 (letters, digits, !#$%&'*+-/=?^_`{|}~ and
 * single inner dots; so no spaces, controls, quotes or <>), and a domain of dot-separated
 * labels (letters, digits, inner hyphens; 1 to 63 each, at least two labels). Fails with
 * ERR_INVALID, tag "invalid_email", saying what is wrong. */
bool notify_mailbox_ok(const char *addr, struct err *e);

/* Whether the `n` bytes at `s` are one RFC 5322 msg-id, "<left@right>": printable ASCII
 * without spaces, quotes, backslashes or a second "<", ">" or "@", at most 250 bytes. What a
 * received message's Message-ID or References hold goes into our headers only if it is. */
bool notify_msgid_ok(const char *s, size_t n);

struct notify_smtp {
    char url[512];          /* smtp://host:port or smtps://host:port; empty: email is off */
    char user[128];
    char password[128];
    bool starttls;          /* require STARTTLS on smtp:// */
    char ca_file[512];      /* trust this CA bundle for the relay's certificate; empty: the
                               system's */
    char from[256];         /* the sender address, e.g. cardpost@example.org */
    long timeout_ms;
};

/* Send one complete RFC 5322 message (headers and body, CRLF line ends) from `smtp->from`
 * to `to`, over `conn`. A `to` that is not a mailbox (notify_mailbox_ok) or a sender
 * address holding a control character, space or <> is refused without connecting (not
 * retried): no envelope address with CR/LF ever reaches the wire. */
void notify_smtp_send(struct notify_conn *conn, const struct notify_smtp *smtp, const char *to,
                      const char *message, struct notify_outcome *out);

/* Build an RFC 5322 message: Date (from `now`), From, To, Subject (RFC 2047 encoded when it
 * is not ASCII; control characters become spaces), Message-ID, In-Reply-To (when given, a
 * valid msg-id and not the message's own id) and References (the valid msg-ids of
 * `references`, or else `in_reply_to`), Reply-To (when given), MIME-Version, a text/plain
 * UTF-8 body in quoted-printable with CRLF line ends. No header value ever holds a line
 * break: a From, To, Reply-To or Message-ID with a control character makes it fail. Returns
 * a new string (free it), or NULL without memory or for such a value. */
char *notify_email_build(const char *from, const char *to, const char *reply_to,
                         const char *subject, const char *message_id, const char *in_reply_to,
                         const char *references, int64_t now, const char *body);

#endif
