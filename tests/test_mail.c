/* test_mail.c - reading replies as mail clients write them (plain, quoted-printable,
 * multipart/alternative, HTML only, base64, other charsets, quoted originals, signatures),
 * and the signed play+ addresses: genuine ones pass, altered ones do not.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "mail.h"

static const uint8_t key[MAIL_KEY_BYTES] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};

static char *command_of(const char *raw, const char *recipient, struct mail_parsed *p)
{
    struct err e;
    if (!mail_parse(raw, strlen(raw), recipient, p, &e))
        fail_msg("did not parse: %s", e.msg);
    return p->command;
}

static void test_plain_reply(void **state)
{
    (void)state;
    struct mail_parsed p;
    const char *raw = "From: Ann <ann@example.org>\r\n"
                      "To: \"cardpost\" <play+12.1.40.0123456789abcdef01234567@cp.example>\r\n"
                      "Subject: Re: Your turn in hearts match 12\r\n"
                      "Message-ID: <reply-1@example.org>\r\n"
                      "In-Reply-To: <cardpost-12-7@cp.example>\r\n"
                      "References: <cardpost-match-12-player-3@cp.example> <cardpost-12-7@cp.example>\r\n"
                      "\r\n"
                      "\r\n"
                      "  play qs  \r\n"
                      "\r\n"
                      "-- \r\n"
                      "Ann\r\n"
                      "\r\n"
                      "On Sun, 22 Nov 2026, cardpost wrote:\r\n"
                      "> It is your turn.\r\n";
    assert_string_equal(command_of(raw, NULL, &p), "play qs");
    assert_string_equal(p.play_address, "play+12.1.40.0123456789abcdef01234567@cp.example");
    assert_string_equal(p.message_id, "<reply-1@example.org>");
    assert_non_null(strstr(p.references, "cardpost-12-7"));
    assert_string_equal(p.from, "ann@example.org");
    assert_string_equal(p.subject, "Re: Your turn in hearts match 12");
    mail_parsed_finish(&p);
}

static void test_alternative_quoted_printable(void **state)
{
    (void)state;
    struct mail_parsed p;
    const char *raw =
        "From: bo@example.org\r\n"
        "To: play+3.0.9.aaaaaaaaaaaaaaaaaaaaaaaa@cp.example\r\n"
        "Subject: Re: turn\r\n"
        "MIME-Version: 1.0\r\n"
        "Content-Type: multipart/alternative; boundary=\"b1\"\r\n"
        "\r\n"
        "--b1\r\n"
        "Content-Type: text/plain; charset=UTF-8\r\n"
        "Content-Transfer-Encoding: quoted-printable\r\n"
        "\r\n"
        "play 10=E2=99=A5\r\n"
        "\r\n"
        "On Sun, Nov 22, 2026 at 8:00 AM cardpost <cardpost@cp.example> wrote:\r\n"
        "> It is your turn. A very long quoted line that the client wrapped with a soft=\r\n"
        "> break.\r\n"
        "--b1\r\n"
        "Content-Type: text/html; charset=UTF-8\r\n"
        "\r\n"
        "<div>something else</div>\r\n"
        "--b1--\r\n";
    assert_string_equal(command_of(raw, NULL, &p), "play 10\xE2\x99\xA5");
    mail_parsed_finish(&p);
}

static void test_latin1_and_base64(void **state)
{
    (void)state;
    struct mail_parsed p;
    /* "pass 2C 3C 4C\n\n> quoted" in base64, ISO-8859-1 with a non-ASCII quote line */
    const char *raw = "From: cy@example.org\r\n"
                      "To: play+3.2.9.aaaaaaaaaaaaaaaaaaaaaaaa@cp.example\r\n"
                      "Content-Type: text/plain; charset=ISO-8859-1\r\n"
                      "Content-Transfer-Encoding: base64\r\n"
                      "\r\n"
                      "cGFzcyAyQyAzQyA0QwoKPiBxdW90ZWQg6Q==\r\n";
    assert_string_equal(command_of(raw, NULL, &p), "pass 2C 3C 4C");
    mail_parsed_finish(&p);
}

static void test_html_only(void **state)
{
    (void)state;
    struct mail_parsed p;
    const char *raw = "From: di@example.org\r\n"
                      "To: play+3.3.9.aaaaaaaaaaaaaaaaaaaaaaaa@cp.example\r\n"
                      "Content-Type: text/html; charset=UTF-8\r\n"
                      "\r\n"
                      "<html><head><style>p{}</style></head><body><div>resign</div>"
                      "<blockquote>It is your turn</blockquote></body></html>\r\n";
    assert_string_equal(command_of(raw, NULL, &p), "resign");
    mail_parsed_finish(&p);
}

static void test_nothing_written(void **state)
{
    (void)state;
    struct mail_parsed p;
    const char *raw = "From: di@example.org\r\n"
                      "To: play+3.3.9.aaaaaaaaaaaaaaaaaaaaaaaa@cp.example\r\n"
                      "\r\n"
                      "\r\n"
                      "> It is your turn.\r\n";
    assert_null(command_of(raw, NULL, &p));
    mail_parsed_finish(&p);
    /* an attachment only: no text to read */
    const char *att = "From: di@example.org\r\n"
                      "Content-Type: multipart/mixed; boundary=x\r\n"
                      "\r\n"
                      "--x\r\n"
                      "Content-Type: text/plain\r\n"
                      "Content-Disposition: attachment; filename=move.txt\r\n"
                      "\r\n"
                      "play QS\r\n"
                      "--x--\r\n";
    assert_null(command_of(att, NULL, &p));
    mail_parsed_finish(&p);
}

static void test_envelope_recipient_wins(void **state)
{
    (void)state;
    struct mail_parsed p;
    const char *raw = "From: a@example.org\r\nTo: someone@example.org\r\n"
                      "Delivered-To: play+1.0.1.bbbbbbbbbbbbbbbbbbbbbbbb@cp.example\r\n\r\nshow\r\n";
    command_of(raw, "play+7.1.2.cccccccccccccccccccccccc@cp.example", &p);
    assert_string_equal(p.play_address, "play+7.1.2.cccccccccccccccccccccccc@cp.example");
    assert_string_equal(p.command, "show");
    mail_parsed_finish(&p);
    command_of(raw, NULL, &p);
    assert_string_equal(p.play_address, "play+1.0.1.bbbbbbbbbbbbbbbbbbbbbbbb@cp.example");
    mail_parsed_finish(&p);
}

static void test_automatic_messages(void **state)
{
    (void)state;
    static const char *const heads[] = {
        "Auto-Submitted: auto-replied\r\n",
        "Auto-Submitted: auto-generated\r\n",
        "Precedence: bulk\r\n",
        "Precedence: list\r\n",
    };
    char raw[512];
    struct mail_parsed p;
    for (size_t i = 0; i < sizeof heads / sizeof heads[0]; i++) {
        snprintf(raw, sizeof raw,
                 "From: ann@example.org\r\nTo: play+1.0.1.bbbbbbbbbbbbbbbbbbbbbbbb@x\r\n%s"
                 "\r\nI am out of the office.\r\n",
                 heads[i]);
        command_of(raw, NULL, &p);
        assert_true(p.automatic);
        mail_parsed_finish(&p);
    }
    command_of("From: MAILER-DAEMON@example.org\r\nTo: play+1.0.1.b@x\r\n\r\nbounce\r\n",
               NULL, &p);
    assert_true(p.automatic);
    mail_parsed_finish(&p);
    command_of("From: ann@example.org\r\nAuto-Submitted: no\r\nTo: play+1.0.1.b@x\r\n\r\n"
               "play QS\r\n",
               NULL, &p);
    assert_false(p.automatic);
    mail_parsed_finish(&p);
}

static void test_first_line(void **state)
{
    (void)state;
    static const struct {
        const char *text, *want;
    } rows[] = {
        {"play QS\n", "play QS"},
        {"\n\n   \t\nplay QS\r\nmore\n", "play QS"},
        {"\xEF\xBB\xBFplay QS", "play QS"},
        {"> quoted\nplay QS", NULL},
        {"-- \nsig\nplay QS", NULL},
        {"On Monday, X wrote:\n> y", NULL},
        {"-----Original Message-----\nplay QS", NULL},
        {"Sent from my phone\n", NULL},
        {"", NULL},
        {"\xC2\xA0\nhelp\n", "help"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        char *got = mail_first_line(rows[i].text);
        if (!rows[i].want) {
            if (got)
                fail_msg("row %zu: got '%s'", i, got);
        } else {
            if (!got || strcmp(got, rows[i].want))
                fail_msg("row %zu: got '%s'", i, got ? got : "(null)");
        }
        free(got);
    }
}

static void test_not_a_message(void **state)
{
    (void)state;
    struct mail_parsed p;
    struct err e;
    assert_false(mail_parse("", 0, NULL, &p, &e));
    /* GMime is lenient: junk parses as a message with no usable text, never a crash */
    const char junk[] = "\x01\x02\xff\xfe garbage\r\n\r\n\x80\x81";
    if (mail_parse(junk, sizeof junk - 1, NULL, &p, &e))
        mail_parsed_finish(&p);
}

static void test_signed_addresses(void **state)
{
    (void)state;
    char addr[160];
    mail_address(key, "cp.example", 42, 3, 117, addr);
    assert_memory_equal(addr, "play+42.3.117.", 14);
    assert_non_null(strstr(addr, "@cp.example"));
    int64_t match, seq;
    int seat;
    assert_true(mail_address_check(key, addr, &match, &seat, &seq));
    assert_int_equal(match, 42);
    assert_int_equal(seat, 3);
    assert_int_equal(seq, 117);
    /* upper-case tag and prefix (some servers change case) */
    char upper[160];
    strcpy(upper, addr);
    for (char *p = upper; *p && *p != '@'; p++)
        if (*p >= 'a' && *p <= 'z')
            *p = (char)(*p - 'a' + 'A');
    assert_true(mail_address_check(key, upper, &match, &seat, &seq));
    /* every altered piece fails */
    char bad[160];
    strcpy(bad, addr);
    bad[strlen("play+42.3.117.")] ^= 1;
    assert_false(mail_address_check(key, bad, &match, &seat, &seq));
    mail_address(key, "cp.example", 42, 3, 118, bad);
    memcpy(bad + strlen("play+42.3.118."), addr + strlen("play+42.3.117."), 24);
    assert_false(mail_address_check(key, bad, &match, &seat, &seq));
    uint8_t other[MAIL_KEY_BYTES] = {9};
    assert_false(mail_address_check(other, addr, &match, &seat, &seq));
    assert_false(mail_address_check(key, "play+42.3.117@cp.example", &match, &seat, &seq));
    assert_false(mail_address_check(key, "someone@cp.example", &match, &seat, &seq));
    assert_false(mail_address_check(key, "play+42.3.117.zz@x", &match, &seat, &seq));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_reply),
        cmocka_unit_test(test_alternative_quoted_printable),
        cmocka_unit_test(test_latin1_and_base64),
        cmocka_unit_test(test_html_only),
        cmocka_unit_test(test_nothing_written),
        cmocka_unit_test(test_envelope_recipient_wins),
        cmocka_unit_test(test_automatic_messages),
        cmocka_unit_test(test_first_line),
        cmocka_unit_test(test_not_a_message),
        cmocka_unit_test(test_signed_addresses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
