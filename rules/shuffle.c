/* shuffle.c - verifiable shuffles (turn-log.md §5): the seed, its commitment, and the
 * SHA-256 byte stream that drives Fisher-Yates for chance event k. Uses OpenSSL.
 */
#include "turnlog.h"

#include <openssl/rand.h>
#include <openssl/sha.h>
#include <string.h>

bool tlog_seed_random(uint8_t seed[TLOG_SEED_BYTES], struct err *e)
{
    if (RAND_bytes(seed, TLOG_SEED_BYTES) != 1)
        return err_set(e, ERR_IO, "random", "the random source failed");
    return true;
}

void tlog_hex(const uint8_t *bytes, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[bytes[i] >> 4];
        out[2 * i + 1] = digits[bytes[i] & 15];
    }
    out[2 * n] = '\0';
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

bool tlog_unhex32(const char *hex, size_t len, uint8_t out[TLOG_SEED_BYTES])
{
    if (len != 2 * TLOG_SEED_BYTES)
        return false;
    for (size_t i = 0; i < TLOG_SEED_BYTES; i++) {
        int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return false;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return true;
}

void tlog_commitment(const uint8_t seed[TLOG_SEED_BYTES], char out[TLOG_HEX_BYTES])
{
    uint8_t digest[SHA256_DIGEST_LENGTH];
    SHA256(seed, TLOG_SEED_BYTES, digest);
    tlog_hex(digest, sizeof digest, out);
}

/* The byte stream of one chance event: sha256(seed || "cardpost" || u32be(k) || u32be(b)). */
struct stream {
    uint8_t input[TLOG_SEED_BYTES + 8 + 4 + 4];
    uint8_t block[SHA256_DIGEST_LENGTH];
    uint32_t b;   /* next block number */
    size_t pos;   /* bytes of `block` used */
};

static void put_u32be(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static void stream_init(struct stream *s, const uint8_t seed[TLOG_SEED_BYTES], uint32_t k)
{
    memcpy(s->input, seed, TLOG_SEED_BYTES);
    memcpy(s->input + TLOG_SEED_BYTES, "cardpost", 8);
    put_u32be(s->input + TLOG_SEED_BYTES + 8, k);
    s->b = 0;
    s->pos = sizeof s->block;
}

static uint32_t stream_u32(struct stream *s)
{
    uint8_t bytes[4];
    for (int i = 0; i < 4; i++) {
        if (s->pos == sizeof s->block) {
            put_u32be(s->input + TLOG_SEED_BYTES + 12, s->b++);
            SHA256(s->input, sizeof s->input, s->block);
            s->pos = 0;
        }
        bytes[i] = s->block[s->pos++];
    }
    return (uint32_t)bytes[0] << 24 | (uint32_t)bytes[1] << 16 | (uint32_t)bytes[2] << 8 |
           bytes[3];
}

/* Uniform integer in [0, m) by rejection: x >= m * floor(2^32 / m) is drawn again. */
static uint32_t stream_uniform(struct stream *s, uint32_t m)
{
    uint64_t limit = (uint64_t)m * ((UINT64_C(1) << 32) / m);
    for (;;) {
        uint32_t x = stream_u32(s);
        if (x < limit)
            return x % m;
    }
}

void tlog_shuffle(const uint8_t seed[TLOG_SEED_BYTES], uint32_t k, rules_card *a, int n)
{
    struct stream s;
    stream_init(&s, seed, k);
    for (int i = n - 1; i >= 1; i--) {
        uint32_t j = stream_uniform(&s, (uint32_t)i + 1);
        rules_card t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

int tlog_derive(const uint8_t seed[TLOG_SEED_BYTES], uint32_t k, const struct rules_state *st,
                rules_card out[RULES_NCARDS])
{
    int n = rules_chance_source(st, out);
    tlog_shuffle(seed, k, out, n);
    return n;
}
