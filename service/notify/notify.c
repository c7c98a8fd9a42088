/* notify.c - the network side of notifications: webhook signatures (HMAC-SHA256, Standard
 * Webhooks), the private-address check with the connection pinned to the checked address,
 * webhook POSTs and SMTP sends through libcurl, and building RFC 5322 messages.
 */
#include "notify.h"

#include "buf.h"
#include "turnlog.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

/* ---- Signatures ---------------------------------------------------------------------------- */

bool notify_secret_new(char out[NOTIFY_SECRET_MAX], struct err *e)
{
    unsigned char raw[24];
    if (RAND_bytes(raw, sizeof raw) != 1)
        return err_set(e, ERR_IO, "random", "the random source failed");
    memcpy(out, "whsec_", 6);
    EVP_EncodeBlock((unsigned char *)out + 6, raw, sizeof raw);
    return true;
}

/* The random part of webhook ids comes from a pool of the calling thread's, refilled 64 ids
 * at a time: a call of RAND_bytes costs a few microseconds whatever it draws (OpenSSL's
 * generator and its locks), once a row a visible share of a notification's cost. */
#define WEBHOOK_RANDOM 6
#define WEBHOOK_POOL 64

bool notify_webhook_id(char *out, size_t size, int64_t now_ms)
{
    static _Thread_local unsigned char pool[WEBHOOK_RANDOM * WEBHOOK_POOL];
    static _Thread_local int left;
    if (size < NOTIFY_WEBHOOK_ID_MAX)
        return false;
    if (left == 0) {
        if (RAND_bytes(pool, sizeof pool) != 1)
            return false;
        left = WEBHOOK_POOL;
    }
    unsigned char *raw = pool + (size_t)--left * WEBHOOK_RANDOM;
    /* "msg_", the time in ms (12 hex digits), 12 random ones: unique, and in the order rows
     * are written, so that an index of them grows at one end instead of a random page per
     * row (each page a commit writes to the log is one more to sync). */
    snprintf(out, size, "msg_%012llx", (unsigned long long)now_ms & 0xffffffffffffull);
    tlog_hex(raw, WEBHOOK_RANDOM, out + 16);
    memset(raw, 0, WEBHOOK_RANDOM); /* (each drawn once) */
    return true;
}

bool notify_sign(const char *secret, const char *id, int64_t timestamp, const char *body,
                 size_t body_len, char out[128], struct err *e)
{
    unsigned char key[96];
    int key_len;
    if (!strncmp(secret, "whsec_", 6)) {
        const char *b64 = secret + 6;
        size_t n = strlen(b64);
        if (n == 0 || n % 4 != 0 || n / 4 * 3 > sizeof key)
            return err_set(e, ERR_INVALID, "bad_secret", "the webhook secret is not base64");
        key_len = EVP_DecodeBlock(key, (const unsigned char *)b64, (int)n);
        if (key_len < 0)
            return err_set(e, ERR_INVALID, "bad_secret", "the webhook secret is not base64");
        for (size_t i = n; i > 0 && b64[i - 1] == '='; i--)
            key_len--; /* EVP_DecodeBlock counts padding as zero bytes */
    } else {
        key_len = (int)strlen(secret);
        if ((size_t)key_len > sizeof key)
            return err_set(e, ERR_INVALID, "bad_secret", "the webhook secret is too long");
        memcpy(key, secret, (size_t)key_len);
    }
    char head[160];
    int head_len = snprintf(head, sizeof head, "%s.%lld.", id, (long long)timestamp);
    if (head_len < 0 || (size_t)head_len >= sizeof head)
        return err_set(e, ERR_INVALID, "bad_id", "the webhook id is too long");
    unsigned char *msg = malloc((size_t)head_len + body_len);
    if (!msg)
        return err_set(e, ERR_NOMEM, "nomem", "out of memory");
    memcpy(msg, head, (size_t)head_len);
    memcpy(msg + head_len, body, body_len);
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int mac_len = 0;
    bool ok = HMAC(EVP_sha256(), key, key_len, msg, (size_t)head_len + body_len, mac, &mac_len);
    free(msg);
    if (!ok)
        return err_set(e, ERR_IO, "hmac", "HMAC failed");
    memcpy(out, "v1,", 3);
    EVP_EncodeBlock((unsigned char *)out + 3, mac, (int)mac_len);
    return true;
}

/* ---- Addresses ----------------------------------------------------------------------------- */

/* Whether an IPv4 address (host order) is one a webhook must not reach: this host, private
 * networks, shared address space, link-local, IETF protocol assignments, documentation and
 * benchmarking ranges, multicast, reserved and broadcast (RFC 6890). */
static bool private_v4(uint32_t a)
{
    static const struct { uint32_t net; int bits; } ranges[] = {
        {0x00000000u, 8},  /* 0.0.0.0/8 this network */
        {0x0a000000u, 8},  /* 10.0.0.0/8 */
        {0x64400000u, 10}, /* 100.64.0.0/10 shared address space (CGN) */
        {0x7f000000u, 8},  /* 127.0.0.0/8 loopback */
        {0xa9fe0000u, 16}, /* 169.254.0.0/16 link local */
        {0xac100000u, 12}, /* 172.16.0.0/12 */
        {0xc0000000u, 24}, /* 192.0.0.0/24 IETF protocol assignments */
        {0xc0000200u, 24}, /* 192.0.2.0/24 TEST-NET-1 */
        {0xc0586300u, 24}, /* 192.88.99.0/24 6to4 relay anycast */
        {0xc0a80000u, 16}, /* 192.168.0.0/16 */
        {0xc6120000u, 15}, /* 198.18.0.0/15 benchmarking */
        {0xc6336400u, 24}, /* 198.51.100.0/24 TEST-NET-2 */
        {0xcb007100u, 24}, /* 203.0.113.0/24 TEST-NET-3 */
        {0xe0000000u, 4},  /* 224.0.0.0/4 multicast */
        {0xf0000000u, 4},  /* 240.0.0.0/4 reserved, and 255.255.255.255 broadcast */
    };
    for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++)
        if ((a ^ ranges[i].net) >> (32 - ranges[i].bits) == 0)
            return true;
    return false;
}

static bool v6_in(const uint8_t b[16], const uint8_t *net, int bits)
{
    int whole = bits / 8, rest = bits % 8;
    if (memcmp(b, net, (size_t)whole))
        return false;
    return rest == 0 || ((b[whole] ^ net[whole]) >> (8 - rest)) == 0;
}

/* Whether an address is one a webhook must not reach. IPv4-mapped addresses are judged by
 * the IPv4 address they hold; the other IPv6 forms that embed or translate IPv4 (NAT64,
 * 6to4, Teredo, IPv4-compatible, SIIT) are refused whole, since they may lead anywhere. */
static bool private_addr(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET)
        return private_v4(ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr));
    if (sa->sa_family != AF_INET6)
        return true;
    const uint8_t *b = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (!memcmp(b, mapped, 12))
        return private_v4((uint32_t)b[12] << 24 | (uint32_t)b[13] << 16 | (uint32_t)b[14] << 8 |
                          b[15]);
    static const struct { uint8_t net[16]; int bits; } ranges[] = {
        {{0}, 96},                                         /* ::/96: ::, ::1, IPv4-compatible */
        {{0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff}, 96},        /* ::ffff:0:0:0/96 SIIT */
        {{0, 0x64, 0xff, 0x9b}, 96},                       /* 64:ff9b::/96 NAT64 */
        {{0, 0x64, 0xff, 0x9b, 0, 1}, 48},                 /* 64:ff9b:1::/48 local NAT64 */
        {{0x01, 0x00}, 64},                                /* 100::/64 discard only */
        {{0x20, 0x01, 0, 0}, 32},                          /* 2001::/32 Teredo */
        {{0x20, 0x01, 0x0d, 0xb8}, 32},                    /* 2001:db8::/32 documentation */
        {{0x20, 0x02}, 16},                                /* 2002::/16 6to4 */
        {{0xfc}, 7},                                       /* fc00::/7 unique local */
        {{0xfe, 0x80}, 10},                                /* fe80::/10 link local */
        {{0xfe, 0xc0}, 10},                                /* fec0::/10 site local */
        {{0xff}, 8},                                       /* ff00::/8 multicast */
    };
    for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++)
        if (v6_in(b, ranges[i].net, ranges[i].bits))
            return true;
    return false;
}

bool notify_address_private(const char *ip)
{
    struct sockaddr_in6 s6 = {.sin6_family = AF_INET6};
    struct sockaddr_in s4 = {.sin_family = AF_INET};
    if (inet_pton(AF_INET, ip, &s4.sin_addr) == 1)
        return private_addr((struct sockaddr *)&s4);
    if (inet_pton(AF_INET6, ip, &s6.sin6_addr) == 1)
        return private_addr((struct sockaddr *)&s6);
    return true; /* not an address: never allowed */
}

/* A host name as the pin and curl's own lookup both see it: ASCII letters, digits, hyphens,
 * underscores and dots (an internationalised name must be given in its xn-- form), or an IP
 * address literal. */
static bool ascii_host(const char *h)
{
    struct in6_addr a6;
    if (inet_pton(AF_INET6, h, &a6) == 1)
        return true;
    if (!*h)
        return false;
    for (const char *p = h; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '-' || *p == '_' || *p == '.'))
            return false;
    return true;
}

/* Split a URL into scheme, host and port with libcurl's parser. */
static bool url_parts(const char *url, char *host, size_t host_size, long *port, bool *https,
                      struct err *e)
{
    CURLU *u = curl_url();
    char *scheme = NULL, *h = NULL, *p = NULL;
    bool ok = u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
              curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
              curl_url_get(u, CURLUPART_HOST, &h, 0) == CURLUE_OK &&
              curl_url_get(u, CURLUPART_PORT, &p, CURLU_DEFAULT_PORT) == CURLUE_OK;
    if (!ok)
        err_set(e, ERR_INVALID, "bad_url", "not a URL");
    else if (strcmp(scheme, "http") && strcmp(scheme, "https"))
        ok = err_set(e, ERR_INVALID, "bad_url", "a webhook URL is http or https");
    else if (strlen(h) >= host_size)
        ok = err_set(e, ERR_INVALID, "bad_url", "the host name is too long");
    if (ok) {
        /* [::1] -> ::1 */
        size_t n = strlen(h);
        if (h[0] == '[' && h[n - 1] == ']') {
            memcpy(host, h + 1, n - 2);
            host[n - 2] = '\0';
        } else {
            memcpy(host, h, n + 1);
        }
        *port = strtol(p, NULL, 10);
        *https = !strcmp(scheme, "https");
        if (!ascii_host(host))
            ok = err_set(e, ERR_INVALID, "bad_url",
                         "the host of a webhook URL is ASCII: give an internationalised name in "
                         "its punycode (xn--) form");
    }
    curl_free(scheme);
    curl_free(h);
    curl_free(p);
    curl_url_cleanup(u);
    return ok;
}

static bool destination_parse(const char *url, char *out, size_t size, struct err *e)
{
    char host[256];
    long port;
    bool https;
    if (!url_parts(url, host, sizeof host, &port, &https, e))
        return false;
    for (char *p = host; *p; p++)
        if (*p >= 'A' && *p <= 'Z')
            *p = (char)(*p - 'A' + 'a');
    snprintf(out, size, "%s:%ld", host, port);
    return true;
}

/* A destination depends on the URL's scheme and authority alone ("https://host:port"), and
 * every webhook a move writes asks for one: the last few, per thread, are kept by that
 * prefix (a URL parse is a good part of writing a notification). */
#define DEST_MEMO 8
static _Thread_local struct {
    char prefix[160];
    char dest[160];
} dest_memo[DEST_MEMO];
static _Thread_local unsigned dest_memo_next;

bool notify_webhook_destination(const char *url, char *out, size_t size, struct err *e)
{
    const char *auth = strstr(url, "://");
    size_t n = auth ? (size_t)(auth + 3 - url) + strcspn(auth + 3, "/?#") : 0;
    if (!auth || n >= sizeof dest_memo[0].prefix)
        return destination_parse(url, out, size, e);
    for (unsigned i = 0; i < DEST_MEMO; i++)
        if (!strncmp(dest_memo[i].prefix, url, n) && dest_memo[i].prefix[n] == '\0') {
            snprintf(out, size, "%s", dest_memo[i].dest);
            return true;
        }
    if (!destination_parse(url, out, size, e))
        return false;
    unsigned k = dest_memo_next++ % DEST_MEMO;
    if (strlen(out) < sizeof dest_memo[k].dest) {
        memcpy(dest_memo[k].prefix, url, n);
        dest_memo[k].prefix[n] = '\0';
        snprintf(dest_memo[k].dest, sizeof dest_memo[k].dest, "%s", out);
    }
    return true;
}

/* Resolve `host` and pick the first address allowed by the policy, as text. */
static bool resolve_checked(const char *host, const struct notify_policy *policy, char *addr,
                            size_t addr_size, struct err *e)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *ai = NULL;
    int rc = getaddrinfo(host, NULL, &hints, &ai);
    if (rc != 0)
        return err_set(e, ERR_IO, "unresolvable", "cannot resolve %s: %s", host,
                       gai_strerror(rc));
    bool found = false, refused = false;
    for (struct addrinfo *a = ai; a && !found; a = a->ai_next) {
        if (!policy->allow_private && private_addr(a->ai_addr)) {
            refused = true;
            continue;
        }
        const void *in = a->ai_family == AF_INET
                             ? (const void *)&((struct sockaddr_in *)a->ai_addr)->sin_addr
                             : (const void *)&((struct sockaddr_in6 *)a->ai_addr)->sin6_addr;
        found = inet_ntop(a->ai_family, in, addr, (socklen_t)addr_size) != NULL;
    }
    freeaddrinfo(ai);
    if (!found)
        return err_set(e, ERR_INVALID, "private_address",
                       refused ? "%s resolves to a private or loopback address, which the "
                                 "operator does not allow for webhooks"
                               : "%s has no usable address",
                       host);
    return true;
}

bool notify_webhook_url_ok(const char *url, const struct notify_policy *policy, bool resolve,
                           struct err *e)
{
    char host[256], addr[INET6_ADDRSTRLEN];
    long port;
    bool https;
    if (!url_parts(url, host, sizeof host, &port, &https, e))
        return false;
    if (!resolve) {
        /* Without resolving, at least refuse literal private addresses. */
        struct in6_addr a6;
        struct in_addr a4;
        bool literal = inet_pton(AF_INET, host, &a4) == 1 || inet_pton(AF_INET6, host, &a6) == 1;
        bool priv = literal && notify_address_private(host);
        if (!policy->allow_private && (priv || !strcasecmp(host, "localhost")))
            return err_set(e, ERR_INVALID, "private_address",
                           "webhooks to private or loopback addresses are not allowed");
        return true;
    }
    return resolve_checked(host, policy, addr, sizeof addr, e);
}

/* ---- Addresses of email -------------------------------------------------------------------- */

static bool atext(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c && strchr("!#$%&'*+-/=?^_`{|}~", c));
}

bool notify_mailbox_ok(const char *addr, struct err *e)
{
    size_t n = strlen(addr);
    const char *at = strrchr(addr, '@');
    if (n > 254)
        return err_set(e, ERR_INVALID, "invalid_email", "an email address has at most 254 bytes");
    for (const unsigned char *p = (const unsigned char *)addr; *p; p++)
        if (*p < 0x21 || *p >= 0x7f || *p == '<' || *p == '>')
            return err_set(e, ERR_INVALID, "invalid_email",
                           "an email address holds no spaces, control characters, <>, or "
                           "characters outside ASCII");
    if (!at || at == addr)
        return err_set(e, ERR_INVALID, "invalid_email", "an email address is local@domain");
    size_t local = (size_t)(at - addr);
    if (local > 64)
        return err_set(e, ERR_INVALID, "invalid_email",
                       "the local part (before @) has at most 64 bytes");
    for (size_t i = 0; i < local; i++) {
        bool dot_ok = addr[i] == '.' && i > 0 && i + 1 < local && addr[i + 1] != '.';
        if (!atext((unsigned char)addr[i]) && !dot_ok)
            return err_set(e, ERR_INVALID, "invalid_email",
                           "the local part is letters, digits, !#$%%&'*+-/=?^_`{|}~ and single "
                           "inner dots");
    }
    const char *d = at + 1;
    int labels = 0;
    bool numeric = true;
    while (*d) {
        size_t k = 0;
        numeric = true;
        while (d[k] && d[k] != '.') {
            unsigned char c = (unsigned char)d[k];
            bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
            if (!alnum && !(c == '-' && k > 0 && d[k + 1] && d[k + 1] != '.'))
                return err_set(e, ERR_INVALID, "invalid_email",
                               "the domain is labels of letters, digits and inner hyphens, "
                               "separated by dots");
            numeric = numeric && c >= '0' && c <= '9';
            k++;
        }
        if (k == 0 || k > 63)
            return err_set(e, ERR_INVALID, "invalid_email",
                           "each label of the domain has 1 to 63 characters");
        labels++;
        d += k;
        if (*d == '.' && !*++d)
            return err_set(e, ERR_INVALID, "invalid_email", "the domain ends with a dot");
    }
    if (labels < 2 || numeric)
        return err_set(e, ERR_INVALID, "invalid_email",
                       "the domain is a name with at least one dot (like example.org)");
    return true;
}

bool notify_msgid_ok(const char *s, size_t n)
{
    if (n < 5 || n > 250 || s[0] != '<' || s[n - 1] != '>')
        return false;
    int ats = 0;
    for (size_t i = 1; i + 1 < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x21 || c >= 0x7f || c == '<' || c == '>' || c == '"' || c == '\\' ||
            c == '(' || c == ')' || c == ',' || c == ';' || c == ':')
            return false;
        if (c == '@' && (++ats > 1 || i == 1 || i + 2 == n))
            return false;
    }
    return ats == 1;
}

/* No control character (C0 or DEL) and, for an envelope address, no space or <>. */
static bool header_safe(const char *s, bool address)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7f || (address && (*p == ' ' || *p == '<' || *p == '>')))
            return false;
    return true;
}

/* ---- HTTP and SMTP ------------------------------------------------------------------------- */

static size_t discard(char *p, size_t size, size_t n, void *ctx)
{
    (void)p, (void)ctx;
    return size * n;
}

/* What the connection check is given: the checked address and the policy. */
struct pinned {
    const char *addr;
    const struct notify_policy *policy;
    char connected[INET6_ADDRSTRLEN];
};

static bool same_address(const char *a, const char *b)
{
    uint8_t x[16], y[16];
    if (inet_pton(AF_INET, a, x) == 1)
        return inet_pton(AF_INET, b, y) == 1 && !memcmp(x, y, 4);
    return inet_pton(AF_INET6, a, x) == 1 && inet_pton(AF_INET6, b, y) == 1 &&
           !memcmp(x, y, 16);
}

/* Called by libcurl once connected, before the request is sent: the peer must be the
 * address that was checked (the pin held), and an allowed one. */
static int check_connection(void *ctx, char *primary_ip, char *local_ip, int primary_port,
                            int local_port)
{
    (void)local_ip, (void)primary_port, (void)local_port;
    struct pinned *pin = ctx;
    snprintf(pin->connected, sizeof pin->connected, "%s", primary_ip ? primary_ip : "");
    bool ok = primary_ip && same_address(primary_ip, pin->addr) &&
              (pin->policy->allow_private || !notify_address_private(primary_ip));
    return ok ? CURL_PREREQFUNC_OK : CURL_PREREQFUNC_ABORT;
}

struct notify_conn {
    CURL *curl;
};

struct notify_conn *notify_conn_new(void)
{
    return calloc(1, sizeof(struct notify_conn));
}

void notify_conn_free(struct notify_conn *conn)
{
    if (!conn)
        return;
    if (conn->curl)
        curl_easy_cleanup(conn->curl); /* (closes the kept connections) */
    free(conn);
}

/* The curl handle for one delivery: `conn`'s, its options cleared (curl_easy_reset keeps
 * its open connections for libcurl to reuse), or a new one; NULL with a retryable failure
 * in `out`. */
static CURL *curl_start(struct notify_conn *conn, struct notify_outcome *out)
{
    CURL *c = conn && conn->curl ? conn->curl : curl_easy_init();
    if (!c) {
        out->retry = true;
        snprintf(out->error, sizeof out->error, "cannot start libcurl");
        return NULL;
    }
    if (conn && conn->curl)
        curl_easy_reset(c);
    else if (conn)
        conn->curl = c;
    return c;
}

/* The end of a delivery's use of `c`: closed unless `conn` keeps it. */
static void curl_end(struct notify_conn *conn, CURL *c)
{
    if (!conn)
        curl_easy_cleanup(c);
}

void notify_webhook_post(struct notify_conn *conn, const char *url, const char *secret,
                         const char *id, int64_t timestamp, const char *body,
                         const struct notify_policy *policy, struct notify_outcome *out)
{
    memset(out, 0, sizeof *out);
    struct err e;
    char host[256], addr[INET6_ADDRSTRLEN], sig[128];
    long port;
    bool https;
    if (!url_parts(url, host, sizeof host, &port, &https, &e) ||
        !resolve_checked(host, policy, addr, sizeof addr, &e) ||
        !notify_sign(secret, id, timestamp, body, strlen(body), sig, &e)) {
        out->retry = e.code != ERR_INVALID || !strcmp(e.tag, "private_address");
        snprintf(out->error, sizeof out->error, "%s", e.msg);
        return;
    }
    CURL *c = curl_start(conn, out);
    if (!c)
        return;
    char pin[512], h_id[200], h_ts[64], h_sig[160];
    snprintf(pin, sizeof pin, "%s:%ld:%s%s%s", host, port, strchr(addr, ':') ? "[" : "", addr,
             strchr(addr, ':') ? "]" : "");
    snprintf(h_id, sizeof h_id, "webhook-id: %s", id);
    snprintf(h_ts, sizeof h_ts, "webhook-timestamp: %lld", (long long)timestamp);
    snprintf(h_sig, sizeof h_sig, "webhook-signature: %s", sig);
    struct curl_slist *resolve = curl_slist_append(NULL, pin);
    struct curl_slist *headers = curl_slist_append(NULL, "Content-Type: application/json");
    headers = curl_slist_append(headers, h_id);
    headers = curl_slist_append(headers, h_ts);
    headers = curl_slist_append(headers, h_sig);
    headers = curl_slist_append(headers, "User-Agent: cardpost-webhooks/1");
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_RESOLVE, resolve);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, policy->connect_timeout_ms ? policy->connect_timeout_ms : 5000L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, policy->total_timeout_ms ? policy->total_timeout_ms : 10000L);
    struct pinned pinned = {.addr = addr, .policy = policy};
    curl_easy_setopt(c, CURLOPT_PREREQFUNCTION, check_connection);
    curl_easy_setopt(c, CURLOPT_PREREQDATA, &pinned);
    CURLcode rc = curl_easy_perform(c);
    long connects = 0;
    if (rc == CURLE_ABORTED_BY_CALLBACK && conn &&
        curl_easy_getinfo(c, CURLINFO_NUM_CONNECTS, &connects) == CURLE_OK && connects == 0) {
        /* A kept connection to the host's address as it was (its name now resolves to
         * another): a new one to the checked address, checked again. */
        curl_easy_setopt(c, CURLOPT_FRESH_CONNECT, 1L);
        rc = curl_easy_perform(c);
    }
    if (rc == CURLE_ABORTED_BY_CALLBACK) {
        out->retry = true;
        snprintf(out->error, sizeof out->error,
                 "connected to %s, not the checked address %s: nothing was sent",
                 pinned.connected, addr);
    } else if (rc == CURLE_OK) {
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &out->status);
        if (out->status >= 200 && out->status < 300) {
            out->ok = true;
        } else if (out->status == 410) {
            out->disable = true;
            snprintf(out->error, sizeof out->error, "HTTP 410 Gone: endpoint disabled");
        } else {
            out->retry = true;
            snprintf(out->error, sizeof out->error, "HTTP %ld", out->status);
        }
    } else {
        out->retry = true;
        out->unreachable = rc == CURLE_COULDNT_CONNECT;
        snprintf(out->error, sizeof out->error, "%s", curl_easy_strerror(rc));
    }
    curl_slist_free_all(headers);
    curl_slist_free_all(resolve);
    curl_end(conn, c);
}

struct reader {
    const char *data;
    size_t len, off;
};

static size_t read_message(char *buf, size_t size, size_t n, void *ctx)
{
    struct reader *r = ctx;
    size_t want = size * n, left = r->len - r->off;
    size_t k = want < left ? want : left;
    memcpy(buf, r->data + r->off, k);
    r->off += k;
    return k;
}

void notify_smtp_send(struct notify_conn *conn, const struct notify_smtp *smtp, const char *to,
                      const char *message, struct notify_outcome *out)
{
    memset(out, 0, sizeof *out);
    if (!smtp->url[0]) {
        snprintf(out->error, sizeof out->error, "no SMTP relay is configured");
        out->retry = true;
        return;
    }
    struct err e;
    if (!notify_mailbox_ok(to, &e) || !header_safe(smtp->from, true)) {
        snprintf(out->error, sizeof out->error, "refused to send: %s",
                 header_safe(smtp->from, true) ? e.msg : "the sender address is not a mailbox");
        return;
    }
    CURL *c = curl_start(conn, out);
    if (!c)
        return;
    char from[300], rcpt_text[300];
    snprintf(from, sizeof from, "<%s>", smtp->from);
    snprintf(rcpt_text, sizeof rcpt_text, "<%s>", to);
    struct curl_slist *rcpt = curl_slist_append(NULL, rcpt_text);
    struct reader r = {message, strlen(message), 0};
    curl_easy_setopt(c, CURLOPT_URL, smtp->url);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "smtp,smtps");
    curl_easy_setopt(c, CURLOPT_MAIL_FROM, from);
    curl_easy_setopt(c, CURLOPT_MAIL_RCPT, rcpt);
    curl_easy_setopt(c, CURLOPT_READFUNCTION, read_message);
    curl_easy_setopt(c, CURLOPT_READDATA, &r);
    curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, smtp->timeout_ms ? smtp->timeout_ms : 30000L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
    if (smtp->starttls)
        curl_easy_setopt(c, CURLOPT_USE_SSL, (long)CURLUSESSL_ALL);
    if (smtp->ca_file[0])
        curl_easy_setopt(c, CURLOPT_CAINFO, smtp->ca_file);
    if (smtp->user[0]) {
        curl_easy_setopt(c, CURLOPT_USERNAME, smtp->user);
        curl_easy_setopt(c, CURLOPT_PASSWORD, smtp->password);
    }
    CURLcode rc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &out->status);
    if (rc == CURLE_OK) {
        out->ok = true;
    } else {
        /* A permanent refusal of the message (5xx) is not retried; anything else is,
         * including a refused login, which is the relay's configuration to fix. */
        out->retry = rc == CURLE_LOGIN_DENIED || !(out->status >= 500 && out->status < 600);
        out->unreachable = rc == CURLE_COULDNT_CONNECT;
        snprintf(out->error, sizeof out->error, "%s (SMTP %ld)", curl_easy_strerror(rc),
                 out->status);
    }
    curl_slist_free_all(rcpt);
    curl_end(conn, c);
}

/* ---- Messages ------------------------------------------------------------------------------ */

/* The message is written into a growing buffer (base/buf.h). */
static void put(struct buf *t, const char *s, size_t n)
{
    buf_put(t, s, n);
}

static void puts_(struct buf *t, const char *s)
{
    buf_puts(t, s);
}

static void header(struct buf *t, const char *name, const char *value)
{
    puts_(t, name);
    puts_(t, ": ");
    puts_(t, value);
    puts_(t, "\r\n");
}

/* A header whose value is a list of words (References): folded between words so that no
 * line passes 78 characters (RFC 5322 §2.1.1: at most 998), and any line break or tab in
 * the value (it may come from a player's message) becomes a plain fold. */
static void folded_header(struct buf *t, const char *name, const char *value)
{
    puts_(t, name);
    puts_(t, ":");
    size_t col = strlen(name) + 1;
    const char *p = value;
    for (;;) {
        p += strspn(p, " \t\r\n");
        size_t n = strcspn(p, " \t\r\n");
        if (n == 0)
            break;
        if (!notify_msgid_ok(p, n)) { /* only msg-ids, never other text of a received header */
            p += n;
            continue;
        }
        if (col > strlen(name) + 1 && col + 1 + n > 78) {
            puts_(t, "\r\n");
            col = 0;
        }
        puts_(t, " ");
        put(t, p, n);
        col += 1 + n;
        p += n;
    }
    puts_(t, "\r\n");
}

static bool ascii(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s >= 0x80 || *s == '\r' || *s == '\n')
            return false;
    return true;
}

/* Subject: control characters (CR, LF, tab, ...) become spaces, so that nothing a player
 * wrote can end the header; then ASCII as is, else RFC 2047 base64 encoded-words of whole
 * UTF-8 characters. */
static void subject_header(struct buf *t, const char *raw)
{
    char *subject = strdup(raw);
    if (!subject) {
        t->failed = true;
        return;
    }
    for (char *p = subject; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = ' ';
    if (ascii(subject)) {
        header(t, "Subject", subject);
        free(subject);
        return;
    }
    puts_(t, "Subject:");
    const unsigned char *s = (const unsigned char *)subject;
    size_t n = strlen(subject);
    while (n > 0) {
        size_t k = utf8_prefix((const char *)s, 45); /* (not splitting a character) */
        unsigned char enc[64];
        EVP_EncodeBlock(enc, s, (int)k);
        puts_(t, " =?UTF-8?B?");
        puts_(t, (const char *)enc);
        puts_(t, "?=\r\n");
        s += k;
        n -= k;
    }
    free(subject);
}

/* The body in quoted-printable (RFC 2045 §6.7), lines ending CRLF, soft breaks at 76. */
static void quoted_printable(struct buf *t, const char *body)
{
    static const char hex[] = "0123456789ABCDEF";
    int col = 0;
    for (const unsigned char *p = (const unsigned char *)body; *p; p++) {
        if (*p == '\r')
            continue;
        if (*p == '\n') {
            puts_(t, "\r\n");
            col = 0;
            continue;
        }
        char enc[4];
        size_t k;
        bool line_end = p[1] == '\n' || p[1] == '\0' || (p[1] == '\r' && p[2] == '\n');
        if ((*p >= 33 && *p <= 126 && *p != '=') || (*p == ' ' && !line_end) ||
            (*p == '\t' && !line_end)) {
            enc[0] = (char)*p;
            k = 1;
        } else {
            enc[0] = '=';
            enc[1] = hex[*p >> 4];
            enc[2] = hex[*p & 15];
            k = 3;
        }
        if (col + (int)k > 75) {
            puts_(t, "=\r\n");
            col = 0;
        }
        put(t, enc, k);
        col += (int)k;
    }
    if (col > 0)
        puts_(t, "\r\n");
}

char *notify_email_build(const char *from, const char *to, const char *reply_to,
                         const char *subject, const char *message_id, const char *in_reply_to,
                         const char *references, int64_t now, const char *body)
{
    if (!header_safe(from, false) || !header_safe(to, true) ||
        (reply_to && !header_safe(reply_to, true)) ||
        !notify_msgid_ok(message_id, strlen(message_id)))
        return NULL;
    if (in_reply_to && !notify_msgid_ok(in_reply_to, strlen(in_reply_to)))
        in_reply_to = NULL, references = NULL;
    struct buf t = BUF_INIT;
    char date[64];
    time_t secs = (time_t)now;
    struct tm tm;
    gmtime_r(&secs, &tm);
    strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S +0000", &tm);
    header(&t, "Date", date);
    header(&t, "From", from);
    header(&t, "To", to);
    if (reply_to)
        header(&t, "Reply-To", reply_to);
    subject_header(&t, subject);
    header(&t, "Message-ID", message_id);
    if (in_reply_to && strcmp(in_reply_to, message_id) != 0) {
        header(&t, "In-Reply-To", in_reply_to);
        folded_header(&t, "References", references && *references ? references : in_reply_to);
    }
    header(&t, "MIME-Version", "1.0");
    header(&t, "Content-Type", "text/plain; charset=UTF-8");
    header(&t, "Content-Transfer-Encoding", "quoted-printable");
    header(&t, "Auto-Submitted", "auto-generated");
    puts_(&t, "\r\n");
    quoted_printable(&t, body);
    return buf_finish(&t, NULL);
}
