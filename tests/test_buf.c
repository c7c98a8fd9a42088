/* test_buf.c - the growing text buffer (base/buf.h): appends of every size, printf text of
 * any length (render.c once cut lines at 1,024 bytes), an empty buffer, and the fwrite-style
 * sink.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_put_and_finish),
        cmocka_unit_test(test_grows_past_any_size),
        cmocka_unit_test(test_printf_whole),
        cmocka_unit_test(test_empty_and_failed),
        cmocka_unit_test(test_write_sink),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
