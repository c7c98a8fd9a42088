/* test_notify.c - the pieces of notification delivery that need no peer: webhook
 * signatures against the Standard Webhooks reference vector, the private-address policy,
 * RFC 5322 message building (headers, RFC 2047 subject, quoted-printable body), and the
 * plain-text rendering of a view. The peers (SMTP, HTTP) are exercised in tests/e2e.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "notify.h"
#include "render.h"

static void test_signature_reference_vector(void **state)
{
    (void)state;
    /* The example of the Standard Webhooks specification. */
    const char *body = "{\"test\": 2432232314}";
    char sig[128];
    assert_true(notify_sign("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
                            "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body, strlen(body), sig,
                            NULL));
    assert_string_equal(sig, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    /* Any change of id, time or body changes it. */
    char other[128];
    assert_true(notify_sign("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
                            "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265331, body, strlen(body), other,
                            NULL));
    assert_string_not_equal(sig, other);
}

static void test_new_secret(void **state)
{
    (void)state;
    char a[NOTIFY_SECRET_MAX], b[NOTIFY_SECRET_MAX], sig[128];
    assert_true(notify_secret_new(a, NULL));
    assert_true(notify_secret_new(b, NULL));
    assert_memory_equal(a, "whsec_", 6);
    assert_string_not_equal(a, b);
    assert_true(notify_sign(a, "msg_1", 1, "{}", 2, sig, NULL));
    struct err e;
    assert_false(notify_sign("whsec_not*base64", "msg_1", 1, "{}", 2, sig, &e));
}

/* Webhook ids: "msg_" + the time in 12 hex digits + 12 random ones, never the same twice,
 * across the refills of a thread's pool (64 ids) and between threads. */
#define IDS 300

static void *ids_of_thread(void *arg)
{
    char (*ids)[NOTIFY_WEBHOOK_ID_MAX] = arg;
    for (int i = 0; i < IDS; i++)
        if (!notify_webhook_id(ids[i], NOTIFY_WEBHOOK_ID_MAX, 0x0123456789abLL))
            return NULL;
    return arg;
}

static int cmp_id(const void *a, const void *b)
{
    return strcmp(a, b);
}

static void test_webhook_ids(void **state)
{
    (void)state;
    static char ids[2 * IDS][NOTIFY_WEBHOOK_ID_MAX];
    char small[NOTIFY_WEBHOOK_ID_MAX - 1];
    assert_false(notify_webhook_id(small, sizeof small, 1));
    assert_non_null(ids_of_thread(ids));
    pthread_t t;
    void *got;
    assert_int_equal(pthread_create(&t, NULL, ids_of_thread, ids + IDS), 0);
    assert_int_equal(pthread_join(t, &got), 0);
    assert_non_null(got);
    for (int i = 0; i < 2 * IDS; i++) {
        assert_int_equal(strlen(ids[i]), 28);
        assert_memory_equal(ids[i], "msg_0123456789ab", 16);
        assert_int_equal(strspn(ids[i] + 16, "0123456789abcdef"), 12);
    }
    qsort(ids, 2 * IDS, sizeof ids[0], cmp_id);
    for (int i = 1; i < 2 * IDS; i++)
        assert_string_not_equal(ids[i - 1], ids[i]);
}

static void test_private_addresses(void **state)
{
    (void)state;
    struct notify_policy strict = {0}, loose = {.allow_private = true};
    static const char *const refused[] = {
        "http://127.0.0.1:9/x", "http://localhost/x",     "http://10.1.2.3/",
        "http://172.16.0.1/",   "http://192.168.1.1/",    "http://169.254.169.254/latest",
        "http://[::1]:8080/",   "http://[fe80::1]/",      "http://[fd00::1]/",
        "http://0.0.0.0/",      "http://[::ffff:127.0.0.1]/",
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        struct err e;
        if (notify_webhook_url_ok(refused[i], &strict, true, &e))
            fail_msg("%s was allowed", refused[i]);
        assert_false(notify_webhook_url_ok(refused[i], &strict, false, NULL));
    }
    assert_true(notify_webhook_url_ok("http://127.0.0.1:9/x", &loose, true, NULL));
    assert_true(notify_webhook_url_ok("http://8.8.8.8/hook", &strict, false, NULL));
    assert_true(notify_webhook_url_ok("https://93.184.216.34/hook", &strict, true, NULL));
    struct err e;
    assert_false(notify_webhook_url_ok("ftp://8.8.8.8/x", &strict, false, &e));
    assert_false(notify_webhook_url_ok("not a url", &strict, false, &e));
}

/* Issue 13, defect 10: every range webhooks must not reach, at both its ends, and public
 * addresses just outside. */
static void test_private_ranges(void **state)
{
    (void)state;
    static const char *const refused[] = {
        "0.0.0.0", "0.255.255.255", "10.0.0.1", "10.255.255.255", "100.64.0.0",
        "100.127.255.255", "127.0.0.1", "127.255.255.254", "169.254.0.1", "169.254.169.254",
        "172.16.0.1", "172.31.255.255", "192.0.0.0", "192.0.0.255", "192.0.2.1", "192.0.2.255",
        "192.88.99.1", "192.168.0.1", "192.168.255.255", "198.18.0.0", "198.19.255.255",
        "198.51.100.7", "203.0.113.9", "224.0.0.1", "239.255.255.250", "240.0.0.1",
        "255.255.255.255",
        "::", "::1", "::2", "::127.0.0.1", "::8.8.8.8", /* ::/96, IPv4-compatible */
        "::ffff:127.0.0.1", "::ffff:10.1.2.3", "::ffff:100.64.1.1", "::ffff:0:8.8.8.8",
        "64:ff9b::8.8.8.8", "64:ff9b::7f00:1", "64:ff9b:1::1", "100::1", "2001::1",
        "2001:0:4136:e378:8000:63bf:3fff:fdd2", "2001:db8::1", "2002::1",
        "2002:7f00:1::1", "2002:c0a8:101::1", "fc00::1", "fd12:3456::1", "fe80::1",
        "febf:ffff::1", "fec0::1", "feff::1", "ff00::1", "ff02::1", "ffff:ffff::1",
        "not an address", "",
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        if (!notify_address_private(refused[i]))
            fail_msg("%s counts as public", refused[i]);
    static const char *const allowed[] = {
        "1.1.1.1", "8.8.8.8", "9.255.255.255", "11.0.0.0", "100.63.255.255", "100.128.0.0",
        "172.15.255.255", "172.32.0.0", "192.0.1.0", "192.0.3.0", "192.167.255.255",
        "192.169.0.0", "198.17.255.255", "198.20.0.0", "198.51.99.255", "203.0.112.1",
        "223.255.255.255", "93.184.216.34",
        "::ffff:8.8.8.8", "2606:4700:4700::1111", "2001:4860:4860::8888", "2003::1",
        "2001:db9::1", "64:ff9a::1", "fbff::1", "fe7f::1",
    };
    for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++)
        if (notify_address_private(allowed[i]))
            fail_msg("%s counts as private", allowed[i]);
    /* The same classifier judges URL literals (registration) ... */
    struct notify_policy strict = {0};
    static const char *const urls[] = {
        "http://[64:ff9b::a00:1]/", "http://[2002:a00:1::1]/", "http://[::a00:1]/",
        "http://[fec0::1]/", "http://198.18.0.1/", "http://192.0.0.8/", "http://240.1.2.3/",
        "http://[ff02::1]/", "http://224.0.0.251/", "http://[::ffff:192.168.1.1]/",
    };
    for (size_t i = 0; i < sizeof urls / sizeof urls[0]; i++)
        if (notify_webhook_url_ok(urls[i], &strict, false, NULL))
            fail_msg("%s was allowed", urls[i]);
    /* ... and a resolved name (here /etc/hosts' localhost). */
    assert_false(notify_webhook_url_ok("http://localhost:9/", &strict, true, NULL));
}

/* Issue 13, defect 10: a host must be ASCII, so that the pin's key is the name curl looks
 * up; an internationalised name is given in its punycode form. */
static void test_non_ascii_host_refused(void **state)
{
    (void)state;
    struct notify_policy loose = {.allow_private = true};
    static const char *const refused[] = {
        "http://ex\xc3\xa4mple.org/hook", "https://\xe4\xbe\x8b\xe3\x81\x88.jp/",
        "http://example.org\xe3\x80\x82/", "http://ex%C3%A4mple.org/hook",
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        struct err e;
        if (notify_webhook_url_ok(refused[i], &loose, false, &e))
            fail_msg("%s was allowed", refused[i]);
        assert_string_equal(e.tag, "bad_url");
    }
    assert_true(notify_webhook_url_ok("http://xn--exmple-cua.org/hook", &loose, false, NULL));
    assert_true(notify_webhook_url_ok("http://[2606:4700::1]:8443/x", &loose, false, NULL));
    /* Delivery refuses it too, before any connection. */
    struct notify_outcome out;
    notify_webhook_post(NULL, "http://ex\xc3\xa4mple.org/hook", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
                        "msg_1", 1, "{}", &loose, &out);
    assert_false(out.ok);
    assert_non_null(strstr(out.error, "ASCII"));
}

static void test_refused_webhook_is_recorded_not_sent(void **state)
{
    (void)state;
    struct notify_policy strict = {0};
    struct notify_outcome out;
    notify_webhook_post(NULL, "http://127.0.0.1:9/x", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_1",
                        1, "{}", &strict, &out);
    assert_false(out.ok);
    assert_non_null(strstr(out.error, "private"));
    /* Nothing listens on port 9 of loopback: a network error, to be retried. */
    struct notify_policy loose = {.allow_private = true, .connect_timeout_ms = 2000};
    notify_webhook_post(NULL, "http://127.0.0.1:9/x", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_1",
                        1, "{}", &loose, &out);
    assert_false(out.ok);
    assert_true(out.retry);
    assert_true(out.error[0] != '\0');
}

static void test_email_format(void **state)
{
    (void)state;
    char *m = notify_email_build("cardpost <cp@example.org>", "ann@example.org",
                                 "play+1.0.5.abc@example.org", "Your turn: hearts ♥ match 1",
                                 "<m1.5@example.org>", "<m1@example.org>", NULL, 0,
                                 "play 10♥ = now\nshort\n");
    assert_non_null(m);
    assert_non_null(strstr(m, "Date: Thu, 01 Jan 1970 00:00:00 +0000\r\n"));
    assert_non_null(strstr(m, "\r\nMessage-ID: <m1.5@example.org>\r\n"));
    assert_non_null(strstr(m, "\r\nIn-Reply-To: <m1@example.org>\r\n"));
    assert_non_null(strstr(m, "\r\nReferences: <m1@example.org>\r\n"));
    assert_non_null(strstr(m, "\r\nReply-To: play+1.0.5.abc@example.org\r\n"));
    assert_non_null(strstr(m, "\r\nSubject: =?UTF-8?B?"));
    assert_non_null(strstr(m, "\r\n\r\nplay 10=E2=99=A5 =3D now\r\nshort\r\n"));
    /* Every line ends CRLF and none is longer than 78 characters. */
    for (char *line = m, *end; (end = strstr(line, "\r\n")); line = end + 2) {
        assert_true(end - line <= 78);
        assert_null(memchr(line, '\n', (size_t)(end - line)));
    }
    free(m);
    /* The thread's first message has no In-Reply-To. */
    m = notify_email_build("cp@example.org", "ann@example.org", NULL, "Hi", "<root@x>",
                           "<root@x>", NULL, 0, "x\n");
    assert_null(strstr(m, "In-Reply-To"));
    free(m);
    /* A reply to a player's message: its id, and the whole chain in References. */
    m = notify_email_build("cp@example.org", "ann@example.org", NULL, "Re: x", "<r2@x>",
                           "<player-msg@y>", "<root@x> <player-msg@y>", 0, "x\n");
    assert_non_null(strstr(m, "\r\nIn-Reply-To: <player-msg@y>\r\n"));
    assert_non_null(strstr(m, "\r\nReferences: <root@x> <player-msg@y>\r\n"));
    free(m);
    m = notify_email_build("cp@example.org", "ann@example.org", NULL, "Hi", "<root@x>",
                           "<root@x>", NULL, 0, "x\n");
    assert_null(strstr(m, "In-Reply-To"));
    assert_non_null(strstr(m, "Subject: Hi\r\n"));
    free(m);
}

/* A long thread's References is folded (an SMTP server refuses lines over 998 bytes), keeps
 * every id in order, and a line break inside the player's value cannot start a header. */
static void test_references_folded(void **state)
{
    (void)state;
    char refs[3000] = "";
    for (int i = 0; i < 60; i++)
        snprintf(refs + strlen(refs), sizeof refs - strlen(refs), "%s<%d.reply@players.test>",
                 i ? " " : "", 1795336648 + i);
    char *m = notify_email_build("cp@example.org", "ann@example.org", NULL, "Re: x", "<r@x>",
                                 "<59@y>", refs, 0, "x\n");
    const char *h = strstr(m, "\r\nReferences:");
    assert_non_null(h);
    const char *end = strstr(m, "\r\n\r\n");
    for (const char *line = m; line < end;) {
        const char *eol = strstr(line, "\r\n");
        assert_true(eol - line <= 78);
        line = eol + 2;
    }
    const char *p = h;
    for (int i = 0; i < 60; i++) {
        char id[40];
        snprintf(id, sizeof id, "<%d.reply@players.test>", 1795336648 + i);
        p = strstr(p, id);
        assert_non_null(p);
        assert_true(p < end);
    }
    free(m);
    m = notify_email_build("cp@example.org", "ann@example.org", NULL, "Re: x", "<r@x>",
                           "<a@y>", "<a@y>\r\nBcc: victim@example.org", 0, "x\n");
    assert_null(strstr(m, "\r\nBcc:"));
    /* Only msg-ids are kept: the words that are not one are dropped. */
    assert_non_null(strstr(m, "\r\nReferences: <a@y>\r\n"));
    free(m);
}

/* Issue 13, defect 1: registration's address rules (RFC 5321 mailboxes). */
static void test_mailbox_rules(void **state)
{
    (void)state;
    static const char *const good[] = {
        "ann@example.org", "a.b+c@mail.example.co.uk", "x!#$%&'*+-/=?^_`{|}~@a-b.test",
        "m@x.test", "A1@B2.C3",
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        if (!notify_mailbox_ok(good[i], NULL))
            fail_msg("%s was refused", good[i]);
    char long_local[80], long_total[300], long_label[90];
    memset(long_local, 'a', 65);
    snprintf(long_local + 65, sizeof long_local - 65, "@x.test");
    char b250[251];
    memset(b250, 'b', 250);
    b250[250] = '\0';
    snprintf(long_total, sizeof long_total, "a@%s.test", b250); /* 257 bytes, labels too long too */
    memset(long_label, 'c', 64);
    snprintf(long_label + 64, sizeof long_label - 64, ".test");
    char long_domain[100];
    snprintf(long_domain, sizeof long_domain, "a@%s", long_label);
    const char *const bad[] = {
        "m@x.test>\r\nRSET\r\nMAIL FROM:<a@b>\r\nRCPT TO:<victim@elsewhere>\r\nDATA",
        "m@x.test\r\n", "m@x.test\n", "a b@x.test", "<a@x.test>", "a@x.test>", "a\t@x.test",
        "a\x7f@x.test", "\"a\"@x.test", "a@", "@x.test", "a", "a@x", "a@.x.test", "a@x.test.",
        "a@x..test", "a@-x.test", "a@x-.test", "a@x_y.test", "a@1.2.3.4", "a@[1.2.3.4]",
        ".a@x.test", "a.@x.test", "a..b@x.test", "a@b@x.test", "jos\xc3\xa9@x.test",
        "a@b\xc3\xa9.test", long_local, long_total, long_domain, "",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct err e;
        if (notify_mailbox_ok(bad[i], &e))
            fail_msg("%s was allowed", bad[i]);
        assert_string_equal(e.tag, "invalid_email");
    }
}

/* Issue 13, defect 7: what a received Message-ID must look like to reach our headers. */
static void test_msgid_rules(void **state)
{
    (void)state;
    static const char *const good[] = {"<a@b>", "<1795336648.42.reply@players.test>",
                                       "<CAH+x=y_z@mail.gmail.com>", "<a@[1.2.3.4]>"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        assert_true(notify_msgid_ok(good[i], strlen(good[i])));
    static const char *const bad[] = {
        "<a@b>\r\nBcc: v@x", "<a\r\n@b>", "<a@b\r\nX: y>", "a@b", "<a@b", "<ab>",
        "<a@b@c>", "<@b>", "<a@>", "<a b@c>", "<a@b><c@d>", "<\"a\"@b>", "<a\x01@b>",
        "<a\xc3\xa9@b>", "",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (notify_msgid_ok(bad[i], strlen(bad[i])))
            fail_msg("%s was allowed", bad[i]);
}

/* Issue 13, defects 1 and 7: no header value of a message we build ever holds a line break,
 * whatever the player wrote: a Subject with CR/LF (from a decoded RFC 2047 word), a received
 * Message-ID with CR/LF, an address with CR/LF. */
static void test_headers_never_break(void **state)
{
    (void)state;
    char *m = notify_email_build("cp@example.org", "ann@example.org", NULL,
                                 "Re: hi\r\nBcc: victim@example.org", "<r@x>", "<a@y>", NULL, 0,
                                 "x\n");
    assert_non_null(m);
    assert_null(strstr(m, "\r\nBcc:"));
    assert_non_null(strstr(m, "\r\nSubject: Re: hi  Bcc: victim@example.org\r\n"));
    free(m);
    /* Not ASCII: RFC 2047, the CR/LF gone before encoding. */
    m = notify_email_build("cp@example.org", "ann@example.org", NULL,
                           "Re: h\xc3\xa9\r\nBcc: victim@example.org", "<r@x>", "<a@y>", NULL,
                           0, "x\n");
    assert_non_null(m);
    assert_null(strstr(m, "\r\nBcc:"));
    assert_non_null(strstr(m, "\r\nSubject: =?UTF-8?B?UmU6IGjDqSAgQmNjOiB2aWN0aW1AZXhhbXBsZS5vcmc=?="));
    free(m);
    /* A received id with CR/LF: no In-Reply-To at all, and References keeps only ids. */
    m = notify_email_build("cp@example.org", "ann@example.org", NULL, "Re: x", "<r@x>",
                           "<a@y>\r\nBcc: victim@example.org", "<root@x> <a@y>\r\nBcc: v@x",
                           0, "x\n");
    assert_non_null(m);
    assert_null(strstr(m, "In-Reply-To"));
    assert_null(strstr(m, "\r\nBcc:"));
    free(m);
    /* An address with a line break: nothing is built. */
    assert_null(notify_email_build("cp@example.org", "ann@example.org\r\nBcc: v@x", NULL, "x",
                                   "<r@x>", NULL, NULL, 0, "x\n"));
    assert_null(notify_email_build("cp@example.org", "ann@example.org", "p@x\r\nBcc: v@x", "x",
                                   "<r@x>", NULL, NULL, 0, "x\n"));
    /* Nor is such an address ever given to the relay: refused before connecting. */
    struct notify_smtp smtp = {.url = "smtp://127.0.0.1:9", .from = "cp@example.org"};
    struct notify_outcome out;
    notify_smtp_send(NULL, &smtp, "m@x.test>\r\nRSET\r\nRCPT TO:<victim@elsewhere>", "x", &out);
    assert_false(out.ok);
    assert_false(out.retry);
    assert_non_null(strstr(out.error, "refused"));
}

static void test_long_lines_soft_break(void **state)
{
    (void)state;
    char body[400];
    memset(body, 'a', 300);
    strcpy(body + 300, "\n");
    char *m = notify_email_build("a@x", "b@x", NULL, "s", "<i@x>", NULL, NULL, 0, body);
    char *text = strstr(m, "\r\n\r\n") + 4;
    size_t as = 0;
    for (char *p = text; *p; p++)
        as += *p == 'a';
    assert_int_equal(as, 300);
    assert_non_null(strstr(text, "=\r\n"));
    free(m);
}

static void test_render(void **state)
{
    (void)state;
    json_t *v = json_loads(
        "{\"id\": 7, \"game\": \"hearts\", \"status\": \"active\", \"you\": 1, \"target\": 100,"
        " \"players\": [{\"seat\": 0, \"name\": \"ann\"}, {\"seat\": 1, \"name\": \"bo\"}],"
        " \"totals\": [12, 40], \"to_move\": [1], \"deadline\": 86400,"
        " \"view\": {\"phase\": \"play\", \"hands\": [{\"seat\": 1, \"cards\": [\"2C\", \"QS\"]}],"
        " \"hearts_broken\": true},"
        " \"legal\": [\"play 2C\", \"play QS\"]}",
        0, NULL);
    assert_non_null(v);
    char *t = render_match_text(v, "http://cp.example");
    assert_non_null(strstr(t, "hearts, match 7, you are seat 1"));
    assert_non_null(strstr(t, "Scores (target 100):"));
    assert_non_null(strstr(t, "bo"));
    assert_non_null(strstr(t, "40  (you)"));
    assert_non_null(strstr(t, "cards: 2C QS"));
    assert_non_null(strstr(t, "hearts broken: yes"));
    assert_non_null(strstr(t, "  play QS\n"));
    assert_non_null(strstr(t, "Deadline for your move: 1970-01-02 00:00 UTC"));
    assert_non_null(strstr(t, "http://cp.example/matches/7"));
    free(t);
    json_decref(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_signature_reference_vector),
        cmocka_unit_test(test_references_folded),
        cmocka_unit_test(test_new_secret),
        cmocka_unit_test(test_webhook_ids),
        cmocka_unit_test(test_private_addresses),
        cmocka_unit_test(test_refused_webhook_is_recorded_not_sent),
        cmocka_unit_test(test_email_format),
        cmocka_unit_test(test_long_lines_soft_break),
        cmocka_unit_test(test_render),
        cmocka_unit_test(test_mailbox_rules),
        cmocka_unit_test(test_msgid_rules),
        cmocka_unit_test(test_headers_never_break),
        cmocka_unit_test(test_private_ranges),
        cmocka_unit_test(test_non_ascii_host_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
