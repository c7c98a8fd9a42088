/* test_buf.c - the growing text buffer (base/buf.h): appends of every size, printf text of
 * any length (render.c once cut lines at 1,024 bytes), an empty buffer, the fwrite-style
 * sink, and numbers in decimal (those of up to 8 digits made in a register).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "buf.h"

static void test_put_and_finish(void **state)
{
    (void)state;
    struct buf b = BUF_INIT;
    buf_puts(&b, "hello");
    buf_put(&b, ", ", 2);
    buf_put(&b, "world!!", 5);
    size_t len = 0;
    char *s = buf_finish(&b, &len);
    assert_string_equal(s, "hello, world");
    assert_int_equal(len, 12);
    assert_null(b.p); /* reset */
    assert_int_equal(b.len, 0);
    free(s);
}

static void test_grows_past_any_size(void **state)
{
    (void)state;
    struct buf b = BUF_INIT;
    for (int i = 0; i < 100000; i++)
        buf_put(&b, "0123456789", 10);
    assert_false(b.failed);
    assert_int_equal(b.len, 1000000);
    assert_int_equal(b.p[b.len], '\0');
    assert_memory_equal(b.p + 999990, "0123456789", 10);
    buf_free(&b);
    assert_null(b.p);
}

static void test_printf_whole(void **state)
{
    (void)state;
    char *big = malloc(5001);
    assert_non_null(big);
    memset(big, 'x', 5000);
    big[5000] = '\0';
    struct buf b = BUF_INIT;
    buf_printf(&b, "%d:", 42);
    buf_printf(&b, "[%s]", big); /* longer than any fixed line buffer */
    buf_printf(&b, "%s", "");
    size_t len = 0;
    char *s = buf_finish(&b, &len);
    assert_int_equal(len, 3 + 5002);
    assert_memory_equal(s, "42:[", 4);
    assert_int_equal(s[len - 1], ']');
    assert_int_equal(strlen(s), len);
    free(s);
    free(big);
}

static void test_empty_and_failed(void **state)
{
    (void)state;
    struct buf b = BUF_INIT;
    size_t len = 7;
    char *s = buf_finish(&b, &len);
    assert_string_equal(s, "");
    assert_int_equal(len, 0);
    free(s);
    buf_puts(&b, "lost");
    b.failed = true; /* as after a failed allocation: nothing more, and finish says so */
    buf_puts(&b, "more");
    assert_int_equal(b.len, 4);
    assert_null(buf_finish(&b, NULL));
    assert_null(b.p);
    assert_false(b.failed);
}

static void test_write_sink(void **state)
{
    (void)state;
    struct buf b = BUF_INIT;
    char data[] = "abcdef";
    assert_int_equal(buf_write(data, 2, 3, &b), 6);
    assert_string_equal(b.p, "abcdef");
    b.failed = true;
    assert_int_equal(buf_write(data, 1, 1, &b), 0);
    buf_free(&b);
}

/* buf_decimal_at writes what printf does, at every length (8 digits and 9: the register's
 * way and the other), negatives, and the ends of int64_t; its bytes end where it says. */
static void test_decimal_at(void **state)
{
    (void)state;
    int64_t vals[200];
    size_t n = 0;
    for (int64_t p = 1; p <= INT64_MAX / 10; p *= 10) { /* (each power of ten, and one less) */
        vals[n++] = p;
        vals[n++] = p - 1;
        vals[n++] = -p;
        vals[n++] = 1 - p;
        vals[n++] = p * 3 + 7;
    }
    vals[n++] = 12345678;
    vals[n++] = 99999999;
    vals[n++] = 100000000;
    vals[n++] = INT64_MAX;
    vals[n++] = INT64_MIN;
    for (size_t i = 0; i < n; i++) {
        char want[32], got[BUF_DECIMAL_MAX + 1];
        snprintf(want, sizeof want, "%lld", (long long)vals[i]);
        memset(got, 'x', sizeof got);
        char *end = buf_decimal_at(got, vals[i]);
        assert_int_equal((size_t)(end - got), strlen(want));
        *end = '\0';
        assert_string_equal(got, want);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_put_and_finish),
        cmocka_unit_test(test_grows_past_any_size),
        cmocka_unit_test(test_printf_whole),
        cmocka_unit_test(test_empty_and_failed),
        cmocka_unit_test(test_write_sink),
        cmocka_unit_test(test_decimal_at),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
