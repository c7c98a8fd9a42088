/* test_err.c - the error value's text (base/err.h): every message valid UTF-8 whatever it
 * echoes (utf8_clean: a byte that starts no character becomes '?', a character cut at the
 * end is dropped), and a prefix that cuts no character (utf8_prefix).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "err.h"

static void clean(const char *in, const char *want)
{
    char s[64];
    strcpy(s, in);
    utf8_clean(s);
    assert_string_equal(s, want);
}

static void test_clean(void **state)
{
    (void)state;
    clean("plain", "plain");
    clean("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x82\xa1", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x82\xa1");
    clean("cut \xc3", "cut ");                 /* a character cut at the end: dropped */
    clean("cut \xf0\x9f\x82", "cut ");
    clean("a\x80" "b", "a?b");                  /* a continuation byte alone */
    clean("a\xc0\xaf" "b", "a??b");             /* overlong forms */
    clean("a\xe0\x80\xaf" "b", "a???b");
    clean("a\xed\xa0\x80" "b", "a???b");        /* a surrogate */
    clean("a\xf4\x90\x80\x80" "b", "a????b");   /* past U+10FFFF */
    clean("a\xff" "b", "a?b");
    clean("a\xc3(b", "a?(b");                   /* a start without its continuation */
}

static void test_prefix(void **state)
{
    (void)state;
    assert_int_equal(utf8_prefix("short", 80), 5);
    assert_int_equal(utf8_prefix("abcdef", 3), 3);
    assert_int_equal(utf8_prefix("ab\xc3\xa9" "c", 3), 2);    /* not inside the é */
    assert_int_equal(utf8_prefix("ab\xc3\xa9" "c", 4), 4);
    assert_int_equal(utf8_prefix("\xf0\x9f\x82\xa1x", 2), 0); /* nothing whole fits */
    /* no character starts within reach (not UTF-8): cut at max all the same, never 0 */
    assert_int_equal(utf8_prefix("\x80\x80\x80\x80\x80", 3), 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_clean),
        cmocka_unit_test(test_prefix),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
