/* limits.c - client keys, per-address counts and token buckets for the HTTP side (see
 * limits.h). The counts live in a small hash table whose entries go when they reach zero
 * (so they never outnumber the connections); the buckets in a fixed table where a new
 * client takes the slot of the longest idle one nearby (a bucket idle for a while is full,
 * as a new one would be).
 */
#include "limits.h"
#include "core.h" /* (the lock order) */

#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COUNT_BUCKETS 4096
#define RATE_SLOTS 16384
#define RATE_PROBE 8

struct count_entry {
    struct limits_key key;
    int n[2];                       /* enum limits_count */
    struct count_entry *next;
};

struct rate_slot {
    uint8_t key[16];
    bool used;
    double tokens;
    int64_t last_ms;
};

struct limits {
    struct lock lock;
    struct count_entry *counts[COUNT_BUCKETS];
    struct limits_rate_setting rate[2];
    struct rate_slot *slots[2];     /* RATE_SLOTS each, for a rate that is on */
    atomic_int share;               /* the processes the rates are shared by */
};

/* ---- Addresses -------------------------------------------------------------------------- */

/* Text to 16 bytes (IPv4 mapped). */
static bool parse_addr(const char *text, uint8_t out[16])
{
    struct in_addr a4;
    if (inet_pton(AF_INET, text, &a4) == 1) {
        memset(out, 0, 10);
        out[10] = out[11] = 0xff;
        memcpy(out + 12, &a4, 4);
        return true;
    }
    struct in6_addr a6;
    if (inet_pton(AF_INET6, text, &a6) == 1) {
        memcpy(out, &a6, 16);
        return true;
    }
    return false;
}

static bool sockaddr_bytes(const struct sockaddr *sa, uint8_t out[16])
{
    if (!sa)
        return false;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)sa;
        memset(out, 0, 10);
        out[10] = out[11] = 0xff;
        memcpy(out + 12, &in->sin_addr, 4);
        return true;
    }
    if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)(const void *)sa;
        memcpy(out, &in6->sin6_addr, 16);
        return true;
    }
    return false;
}

static bool is_v4(const uint8_t a[16])
{
    static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    return !memcmp(a, prefix, sizeof prefix);
}

/* An address as a client key: IPv6 cut to its /64. */
static void key_of(const uint8_t a[16], struct limits_key *k)
{
    memcpy(k->b, a, 16);
    if (!is_v4(a))
        memset(k->b + 8, 0, 8);
}

static bool in_net(const uint8_t a[16], const uint8_t net[16], int bits)
{
    int whole = bits / 8, rest = bits % 8;
    if (memcmp(a, net, (size_t)whole) != 0)
        return false;
    if (!rest)
        return true;
    uint8_t mask = (uint8_t)(0xff << (8 - rest));
    return (a[whole] & mask) == (net[whole] & mask);
}

bool limits_proxies_parse(const char *text, struct limits_proxies *p, struct err *e)
{
    memset(p, 0, sizeof *p);
    const char *s = text;
    for (;;) {
        while (*s == ' ' || *s == ',' || *s == '\t')
            s++;
        if (!*s)
            return true;
        size_t n = strcspn(s, " ,\t");
        char item[64];
        if (n >= sizeof item)
            return err_set(e, ERR_INVALID, "bad_setting", "trusted_proxies: '%.*s' is too long",
                           40, s);
        memcpy(item, s, n);
        item[n] = '\0';
        s += n;
        if (p->n == LIMITS_PROXIES_MAX)
            return err_set(e, ERR_INVALID, "bad_setting",
                           "trusted_proxies: more than %d entries", LIMITS_PROXIES_MAX);
        char *slash = strchr(item, '/');
        long bits = -1;
        if (slash) {
            char *end;
            *slash = '\0';
            bits = strtol(slash + 1, &end, 10);
            if (!slash[1] || *end || bits < 0)
                bits = 999;
        }
        uint8_t *a = p->net[p->n].addr;
        if (!parse_addr(item, a))
            return err_set(e, ERR_INVALID, "bad_setting",
                           "trusted_proxies: '%s' is not an IP address or network", item);
        int max = is_v4(a) && strchr(item, '.') ? 32 : 128;
        if (bits < 0)
            bits = max;
        if (bits > max)
            return err_set(e, ERR_INVALID, "bad_setting",
                           "trusted_proxies: bad prefix length in '%s'", item);
        p->net[p->n].bits = (int)bits + (max == 32 ? 96 : 0);
        p->n++;
    }
}

bool limits_key_of_sockaddr(const struct sockaddr *sa, struct limits_key *k)
{
    uint8_t a[16];
    if (!sockaddr_bytes(sa, a))
        return false;
    key_of(a, k);
    return true;
}

static bool trusted_bytes(const struct limits_proxies *p, const uint8_t a[16])
{
    for (int i = 0; i < p->n; i++)
        if (in_net(a, p->net[i].addr, p->net[i].bits))
            return true;
    return false;
}

bool limits_proxy_trusted(const struct limits_proxies *p, const struct sockaddr *sa)
{
    uint8_t a[16];
    return p->n > 0 && sockaddr_bytes(sa, a) && trusted_bytes(p, a);
}

bool limits_key_of_forwarded(const struct limits_proxies *p, const char *xff,
                             struct limits_key *k)
{
    if (!xff)
        return false;
    size_t end = strlen(xff);
    /* From the right: each proxy appends the address it got the request from. */
    while (end > 0) {
        size_t start = end;
        while (start > 0 && xff[start - 1] != ',')
            start--;
        const char *item = xff + start;
        size_t n = end - start;
        while (n && (*item == ' ' || *item == '\t'))
            item++, n--;
        while (n && (item[n - 1] == ' ' || item[n - 1] == '\t'))
            n--;
        char text[64];
        uint8_t a[16];
        if (n == 0 || n >= sizeof text)
            return false;
        memcpy(text, item, n);
        text[n] = '\0';
        if (!parse_addr(text, a))
            return false;
        if (!trusted_bytes(p, a)) {
            key_of(a, k);
            return true;
        }
        end = start ? start - 1 : 0;
    }
    return false;
}

void limits_key_text(const struct limits_key *k, char *out, size_t size)
{
    char text[INET6_ADDRSTRLEN];
    if (is_v4(k->b)) { /* (dotted quad by hand: glibc's inet_ntop goes through printf, and
                        * every request's log line names its client) */
        char *p = text;
        for (int i = 12; i < 16; i++) {
            unsigned v = k->b[i];
            if (v >= 100)
                *p++ = (char)('0' + v / 100);
            if (v >= 10)
                *p++ = (char)('0' + v / 10 % 10);
            *p++ = (char)('0' + v % 10);
            *p++ = i < 15 ? '.' : '\0';
        }
        size_t n = (size_t)(p - text); /* (with its NUL) */
        if (n <= size)
            memcpy(out, text, n);
        else if (size > 0)
            out[0] = '\0'; /* (as inet_ntop, which refuses a room too small) */
    } else {
        inet_ntop(AF_INET6, k->b, text, sizeof text);
        snprintf(out, size, "%s/64", text);
    }
}

/* ---- Counts and buckets ----------------------------------------------------------------- */

static uint32_t hash16(const uint8_t b[16])
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (int i = 0; i < 16; i++)
        h = (h ^ b[i]) * 16777619u;
    return h;
}

struct limits *limits_create(struct limits_rate_setting address, struct limits_rate_setting token)
{
    struct limits *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    lock_init(&l->lock, API_LOCK_LIMITS, "limits");
    l->rate[LIMITS_RATE_ADDRESS] = address;
    l->rate[LIMITS_RATE_TOKEN] = token;
    for (int i = 0; i < 2; i++) {
        if (l->rate[i].per_second <= 0)
            continue;
        if (l->rate[i].burst < 1)
            l->rate[i].burst = 1;
        l->slots[i] = calloc(RATE_SLOTS, sizeof *l->slots[i]);
        if (!l->slots[i]) {
            limits_destroy(l);
            return NULL;
        }
    }
    return l;
}

void limits_destroy(struct limits *l)
{
    if (!l)
        return;
    for (int i = 0; i < COUNT_BUCKETS; i++) {
        struct count_entry *c = l->counts[i];
        while (c) {
            struct count_entry *next = c->next;
            free(c);
            c = next;
        }
    }
    free(l->slots[0]);
    free(l->slots[1]);
    lock_finish(&l->lock);
    free(l);
}

/* The entry of k (created when `create`); NULL without one. Call with l->lock held. */
static struct count_entry **count_find(struct limits *l, const struct limits_key *k)
{
    assert(lock_held(&l->lock));
    struct count_entry **p = &l->counts[hash16(k->b) % COUNT_BUCKETS];
    while (*p && memcmp((*p)->key.b, k->b, 16) != 0)
        p = &(*p)->next;
    return p;
}

bool limits_count_take(struct limits *l, enum limits_count what, const struct limits_key *k,
                       int max)
{
    lock_take(&l->lock);
    struct count_entry **p = count_find(l, k);
    bool ok = true;
    if (!*p) {
        *p = calloc(1, sizeof **p);
        if (*p)
            (*p)->key = *k;
    }
    if (!*p)
        ok = max <= 0; /* no memory: refuse only what is limited */
    else if (max > 0 && (*p)->n[what] >= max)
        ok = false;
    else
        (*p)->n[what]++;
    if (*p && !(*p)->n[0] && !(*p)->n[1]) {
        struct count_entry *gone = *p;
        *p = gone->next;
        free(gone);
    }
    lock_drop(&l->lock);
    return ok;
}

void limits_count_put(struct limits *l, enum limits_count what, const struct limits_key *k)
{
    lock_take(&l->lock);
    struct count_entry **p = count_find(l, k);
    if (*p && (*p)->n[what] > 0 && --(*p)->n[what] == 0 && !(*p)->n[1 - what]) {
        struct count_entry *gone = *p;
        *p = gone->next;
        free(gone);
    }
    lock_drop(&l->lock);
}

int limits_count_get(struct limits *l, enum limits_count what, const struct limits_key *k)
{
    lock_take(&l->lock);
    struct count_entry **p = count_find(l, k);
    int n = *p ? (*p)->n[what] : 0;
    lock_drop(&l->lock);
    return n;
}

void limits_rate_share(struct limits *l, int processes)
{
    if (atomic_load(&l->share) != processes) /* (every request says it: seldom a change) */
        atomic_store(&l->share, processes);
}

bool limits_rate_take(struct limits *l, enum limits_rate which, const uint8_t key[16],
                      int64_t now_ms, int *retry_after)
{
    if (!l->slots[which])
        return true;
    lock_take(&l->lock);
    /* (this process's share of the rate: the others, each with a bucket of its own,
     * take the rest) */
    int n = atomic_load(&l->share);
    n = n > 1 ? n : 1;
    struct limits_rate_setting share = {l->rate[which].per_second / n, l->rate[which].burst / n};
    if (share.burst < 1)
        share.burst = 1;
    const struct limits_rate_setting *rs = &share;
    struct rate_slot *slots = l->slots[which], *slot = NULL, *idlest = NULL;
    uint32_t h = hash16(key);
    for (int i = 0; i < RATE_PROBE && !slot; i++) {
        struct rate_slot *s = &slots[(h + (uint32_t)i) % RATE_SLOTS];
        if (s->used && !memcmp(s->key, key, 16))
            slot = s;
        else if (!s->used ? !idlest || idlest->used
                          : !idlest || (idlest->used && s->last_ms < idlest->last_ms))
            idlest = s; /* a free slot first, else the one idle longest */
    }
    if (!slot) {
        slot = idlest;
        memcpy(slot->key, key, 16);
        slot->used = true;
        slot->tokens = rs->burst;
        slot->last_ms = now_ms;
    }
    if (now_ms > slot->last_ms) {
        slot->tokens += (double)(now_ms - slot->last_ms) * rs->per_second / 1000.0;
        if (slot->tokens > rs->burst)
            slot->tokens = rs->burst;
        slot->last_ms = now_ms;
    }
    bool ok = slot->tokens >= 1.0;
    if (ok)
        slot->tokens -= 1.0;
    else
        *retry_after = (int)ceil((1.0 - slot->tokens) / rs->per_second);
    if (!ok && *retry_after < 1)
        *retry_after = 1;
    lock_drop(&l->lock);
    return ok;
}
