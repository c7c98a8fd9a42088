/* limits.h - the abuse limits of cardpostd's HTTP side (docs/security.md "Limits"): who a
 * request comes from (its peer's address, or the X-Forwarded-For of a trusted proxy),
 * counts per client address (connections, event streams) and token buckets (requests per
 * second per client address and per token). Thread-safe; its memory is bounded whatever
 * the clients do.
 */
#ifndef CARDPOST_LIMITS_H
#define CARDPOST_LIMITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "err.h"

/* A client: an IPv4 address (as ::ffff:a.b.c.d) or an IPv6 address cut to its /64 (what one
 * subscriber usually holds), as 16 bytes. */
struct limits_key {
    uint8_t b[16];
};

/* The addresses whose X-Forwarded-For is believed: addresses or networks (CIDR). */
#define LIMITS_PROXIES_MAX 32
struct limits_proxies {
    int n;
    struct {
        uint8_t addr[16];     /* IPv4 mapped into ::ffff:0:0/96 */
        int bits;             /* prefix length over the 128 bits */
    } net[LIMITS_PROXIES_MAX];
};

/* Parse a `trusted_proxies` value: addresses or CIDR networks separated by commas or
 * spaces (empty: none). False with ERR_INVALID naming the bad item. */
bool limits_proxies_parse(const char *text, struct limits_proxies *p, struct err *e);

/* The client key of a socket address (false for a family other than IPv4 and IPv6). */
bool limits_key_of_sockaddr(const struct sockaddr *sa, struct limits_key *k);

/* Whether `sa` is one of the trusted proxies. */
bool limits_proxy_trusted(const struct limits_proxies *p, const struct sockaddr *sa);

/* The client behind a trusted proxy: the right-most address of an X-Forwarded-For value
 * that is not itself a trusted proxy. False when there is none (a malformed header). */
bool limits_key_of_forwarded(const struct limits_proxies *p, const char *xff,
                             struct limits_key *k);

/* The client key as text, for logs ("203.0.113.9", "2001:db8:1:2::/64"). */
void limits_key_text(const struct limits_key *k, char *out, size_t size);

enum limits_count { LIMITS_CONNECTIONS, LIMITS_STREAMS };
enum limits_rate { LIMITS_RATE_ADDRESS, LIMITS_RATE_TOKEN };

struct limits_rate_setting {
    double per_second;        /* 0: no limit */
    double burst;             /* the bucket's size */
};

struct limits;

/* Token buckets of the two rates. NULL without memory. */
struct limits *limits_create(struct limits_rate_setting address, struct limits_rate_setting token);
void limits_destroy(struct limits *l);

/* Count one more of `what` for client `k` unless it holds `max` already (0: no limit):
 * false then, and nothing is counted. limits_count_put gives one back. */
bool limits_count_take(struct limits *l, enum limits_count what, const struct limits_key *k,
                       int max);
void limits_count_put(struct limits *l, enum limits_count what, const struct limits_key *k);

/* How many of `what` client `k` holds. */
int limits_count_get(struct limits *l, enum limits_count what, const struct limits_key *k);

/* Share the rates with `processes` processes in all (this one among them; 1 at first):
 * each keeps a bucket of its own, of 1/processes of each rate and burst (a burst at least
 * 1), so that a client whose requests a balancer spreads over them gets about the whole
 * rate, not that many times it. */
void limits_rate_share(struct limits *l, int processes);

/* Take a request from the bucket of `key` (an address key, or the first 16 bytes of a
 * token's sha256) at monotonic time `now_ms`: true if there was one; else false with the
 * whole seconds until there is in *retry_after. */
bool limits_rate_take(struct limits *l, enum limits_rate which, const uint8_t key[16],
                      int64_t now_ms, int *retry_after);

#endif
