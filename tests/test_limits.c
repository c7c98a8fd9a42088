/* test_limits.c - service/http/limits.c alone: trusted_proxies values (good and bad), who a
 * client is (IPv4, IPv6 cut to its /64, the X-Forwarded-For of a trusted proxy, from the
 * right), the counts per client, and the token buckets (burst, refill, Retry-After, a
 * full table). tests/e2e/test_limits.py floods the same limits through the daemon.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cmocka.h>

#include "limits.h"

static struct limits_proxies proxies_of(const char *text)
{
    struct limits_proxies p;
    struct err e;
    if (!limits_proxies_parse(text, &p, &e))
        fail_msg("'%s' did not parse: %s", text, e.msg);
    return p;
}

static struct sockaddr_storage addr_of(const char *text)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    struct sockaddr_in *in = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, text, &in->sin_addr) == 1)
        in->sin_family = AF_INET;
    else if (inet_pton(AF_INET6, text, &in6->sin6_addr) == 1)
        in6->sin6_family = AF_INET6;
    else
        fail_msg("not an address: %s", text);
    return ss;
}

static void key_text(const struct limits_key *k, char *out, size_t size)
{
    limits_key_text(k, out, size);
}

static void test_proxies_parse(void **state)
{
    (void)state;
    struct limits_proxies p = proxies_of("");
    assert_int_equal(p.n, 0);
    p = proxies_of(" 127.0.0.1, ::1 10.0.0.0/8,fd00::/8 ");
    assert_int_equal(p.n, 4);
    static const char *const bad[] = {"localhost", "127.0.0.1/33", "::1/129", "10.0.0.0/x",
                                      "10.0.0.0/", "1.2.3", "10.0.0.0/-1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct err e;
        assert_false(limits_proxies_parse(bad[i], &p, &e));
        assert_non_null(strstr(e.msg, "trusted_proxies"));
    }
}

static void test_keys(void **state)
{
    (void)state;
    struct limits_key a, b;
    char t[64];
    struct sockaddr_storage s = addr_of("203.0.113.9");
    assert_true(limits_key_of_sockaddr((struct sockaddr *)&s, &a));
    key_text(&a, t, sizeof t);
    assert_string_equal(t, "203.0.113.9");
    /* Every width of an octet, and a room too small for the text: none of it. */
    static const char *const quads[] = {"0.0.0.0", "1.22.255.100", "255.255.255.255",
                                        "10.0.99.7"};
    for (size_t i = 0; i < sizeof quads / sizeof quads[0]; i++) {
        s = addr_of(quads[i]);
        assert_true(limits_key_of_sockaddr((struct sockaddr *)&s, &a));
        key_text(&a, t, sizeof t);
        assert_string_equal(t, quads[i]);
        key_text(&a, t, strlen(quads[i]));
        assert_string_equal(t, "");
        key_text(&a, t, strlen(quads[i]) + 1);
        assert_string_equal(t, quads[i]);
    }
    /* Two addresses of one /64 are one client; the next /64 is another. */
    s = addr_of("2001:db8:1:2::1");
    assert_true(limits_key_of_sockaddr((struct sockaddr *)&s, &a));
    s = addr_of("2001:db8:1:2:ffff:1:2:3");
    assert_true(limits_key_of_sockaddr((struct sockaddr *)&s, &b));
    assert_memory_equal(a.b, b.b, 16);
    key_text(&a, t, sizeof t);
    assert_string_equal(t, "2001:db8:1:2::/64");
    s = addr_of("2001:db8:1:3::1");
    assert_true(limits_key_of_sockaddr((struct sockaddr *)&s, &b));
    assert_memory_not_equal(a.b, b.b, 16);
}

static void test_forwarded(void **state)
{
    (void)state;
    struct limits_proxies p = proxies_of("127.0.0.1, 10.0.0.0/8");
    struct sockaddr_storage s = addr_of("127.0.0.1");
    assert_true(limits_proxy_trusted(&p, (struct sockaddr *)&s));
    s = addr_of("10.200.3.4");
    assert_true(limits_proxy_trusted(&p, (struct sockaddr *)&s));
    s = addr_of("11.0.0.1");
    assert_false(limits_proxy_trusted(&p, (struct sockaddr *)&s));
    struct limits_proxies none = proxies_of("");
    s = addr_of("127.0.0.1");
    assert_false(limits_proxy_trusted(&none, (struct sockaddr *)&s));

    struct limits_key k;
    char t[64];
    /* The right-most address that is not a trusted proxy: what the client claimed on the
     * left is not believed. */
    assert_true(limits_key_of_forwarded(&p, "1.1.1.1, 198.51.100.7, 10.0.0.2", &k));
    key_text(&k, t, sizeof t);
    assert_string_equal(t, "198.51.100.7");
    assert_true(limits_key_of_forwarded(&p, " 2001:db8::5 ", &k));
    key_text(&k, t, sizeof t);
    assert_string_equal(t, "2001:db8::/64");
    static const char *const bad[] = {"", "10.0.0.1", "10.0.0.1, 127.0.0.1", "nobody",
                                      "1.2.3.4, , 10.0.0.1", "1.2.3.4,"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_false(limits_key_of_forwarded(&p, bad[i], &k));
    assert_false(limits_key_of_forwarded(&p, NULL, &k));
}

static void test_counts(void **state)
{
    (void)state;
    struct limits *l = limits_create((struct limits_rate_setting){0, 0},
                                     (struct limits_rate_setting){0, 0});
    assert_non_null(l);
    struct limits_key a = {{1}}, b = {{2}};
    for (int i = 0; i < 3; i++)
        assert_true(limits_count_take(l, LIMITS_STREAMS, &a, 3));
    assert_false(limits_count_take(l, LIMITS_STREAMS, &a, 3));
    assert_true(limits_count_take(l, LIMITS_STREAMS, &b, 3));
    assert_true(limits_count_take(l, LIMITS_CONNECTIONS, &a, 0)); /* 0: no limit */
    assert_int_equal(limits_count_get(l, LIMITS_STREAMS, &a), 3);
    limits_count_put(l, LIMITS_STREAMS, &a);
    assert_true(limits_count_take(l, LIMITS_STREAMS, &a, 3));
    for (int i = 0; i < 3; i++)
        limits_count_put(l, LIMITS_STREAMS, &a);
    limits_count_put(l, LIMITS_STREAMS, &a); /* one too many: nothing */
    assert_int_equal(limits_count_get(l, LIMITS_STREAMS, &a), 0);
    assert_int_equal(limits_count_get(l, LIMITS_CONNECTIONS, &a), 1);
    limits_count_put(l, LIMITS_CONNECTIONS, &a);
    limits_count_put(l, LIMITS_STREAMS, &b);
    limits_destroy(l);
    limits_destroy(NULL);
}

/* Shared by N processes, a bucket holds 1/N of the burst and refills at 1/N of the rate
 * (its burst at least 1), and back to the whole once alone. */
static void test_shared_buckets(void **state)
{
    (void)state;
    struct limits *l = limits_create((struct limits_rate_setting){20, 60},
                                     (struct limits_rate_setting){0, 0});
    assert_non_null(l);
    uint8_t a[16] = {1}, b[16] = {2}, c[16] = {3};
    int retry = 0;
    int64_t t = 1000000;
    limits_rate_share(l, 3);
    for (int i = 0; i < 20; i++)
        assert_true(limits_rate_take(l, LIMITS_RATE_ADDRESS, a, t, &retry));
    assert_false(limits_rate_take(l, LIMITS_RATE_ADDRESS, a, t, &retry));
    /* 20/3 a second: one more after 150 ms, not after 100 */
    assert_false(limits_rate_take(l, LIMITS_RATE_ADDRESS, a, t + 100, &retry));
    assert_true(limits_rate_take(l, LIMITS_RATE_ADDRESS, a, t + 160, &retry));
    limits_rate_share(l, 1000); /* (a burst of at least one) */
    assert_true(limits_rate_take(l, LIMITS_RATE_ADDRESS, b, t, &retry));
    assert_false(limits_rate_take(l, LIMITS_RATE_ADDRESS, b, t, &retry));
    limits_rate_share(l, 1);
    for (int i = 0; i < 60; i++)
        assert_true(limits_rate_take(l, LIMITS_RATE_ADDRESS, c, t, &retry));
    assert_false(limits_rate_take(l, LIMITS_RATE_ADDRESS, c, t, &retry));
    limits_destroy(l);
}

static void test_buckets(void **state)
{
    (void)state;
    struct limits *l = limits_create((struct limits_rate_setting){2, 5},
                                     (struct limits_rate_setting){0, 0});
    assert_non_null(l);
    uint8_t a[16] = {7}, b[16] = {8};
    int retry = 0;
    int64_t t = 1000000;
    for (int i = 0; i < 5; i++)
        assert_true(limits_rate_take(l, LIMITS_RATE_ADDRESS, a, t, &retry));
    assert_false(limits_rate_take(l, LIMITS_RATE_ADDRESS, a, t, &retry));
    assert_int_equal(retry, 1); /* 2 a second: the next one in half a second, said as 1 */
    assert_true(limits_rate_take(l, LIMITS_RATE_ADDRESS, b, t, &retry));
    assert_false(limits_rate_take(l, LIMITS_RATE_ADDRESS, a, t + 400, &retry));
    assert_true(limits_rate_take(l, LIMITS_RATE_ADDRESS, a, t + 500, &retry));
    /* The bucket refills up to its burst, no more. */
    for (int i = 0; i < 5; i++)
        assert_true(limits_rate_take(l, LIMITS_RATE_ADDRESS, a, t + 60000, &retry));
    assert_false(limits_rate_take(l, LIMITS_RATE_ADDRESS, a, t + 60000, &retry));
    /* A rate that is off lets everything through. */
    for (int i = 0; i < 100; i++)
        assert_true(limits_rate_take(l, LIMITS_RATE_TOKEN, a, t, &retry));
    /* Many more clients than slots: each still gets its burst (a new one takes the slot of
     * the longest idle), and a client just refused stays refused. */
    uint8_t k[16] = {0};
    for (uint32_t i = 0; i < 100000; i++) {
        memcpy(k + 4, &i, sizeof i);
        assert_true(limits_rate_take(l, LIMITS_RATE_ADDRESS, k, t + 70000 + i / 1000, &retry));
    }
    uint8_t c[16] = {9, 9};
    for (int i = 0; i < 5; i++)
        assert_true(limits_rate_take(l, LIMITS_RATE_ADDRESS, c, t + 200000, &retry));
    assert_false(limits_rate_take(l, LIMITS_RATE_ADDRESS, c, t + 200000, &retry));
    limits_destroy(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_proxies_parse), cmocka_unit_test(test_keys),
        cmocka_unit_test(test_forwarded),     cmocka_unit_test(test_counts),
        cmocka_unit_test(test_buckets),       cmocka_unit_test(test_shared_buckets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
