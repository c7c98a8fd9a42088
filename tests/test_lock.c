/* test_lock.c - the lock order's checker (base/lock.h) in a debug build: locks taken in
 * rank order pass, lock_held tells the locks of the calling thread only, and a lock taken
 * against the order (a lower rank, or a second lock of one rank) aborts the process, which
 * a child process shows (fork, then the parent reads its stderr and its end). A release
 * build (NDEBUG) keeps no account: the test is then skipped.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lock.h"

#ifndef NDEBUG

static struct lock outer, inner, other_outer;

static int setup(void **state)
{
    (void)state;
    lock_init(&outer, 1, "outer");
    lock_init(&other_outer, 1, "other outer");
    lock_init(&inner, 2, "inner");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    lock_finish(&outer);
    lock_finish(&other_outer);
    lock_finish(&inner);
    lock_finish(NULL); /* accepts NULL */
    return 0;
}

static void test_in_order(void **state)
{
    (void)state;
    assert_true(lock_none_held());
    assert_false(lock_held(&outer));
    lock_take(&outer);
    assert_true(lock_held(&outer));
    assert_false(lock_held(&inner));
    lock_take(&inner);
    assert_true(lock_held(&outer));
    assert_true(lock_held(&inner));
    assert_false(lock_none_held());
    /* Let go in any order. */
    lock_drop(&outer);
    assert_false(lock_held(&outer));
    assert_true(lock_held(&inner));
    lock_drop(&inner);
    assert_true(lock_none_held());
    /* Once let go, a lower rank may be taken again, and one lock of a rank after another. */
    lock_take(&inner);
    lock_drop(&inner);
    lock_take(&outer);
    lock_drop(&outer);
    lock_take(&other_outer);
    lock_drop(&other_outer);
    assert_true(lock_none_held());
}

static void *held_elsewhere(void *arg)
{
    (void)arg;
    return (void *)(intptr_t)(lock_held(&outer) || !lock_none_held());
}

static void test_held_is_per_thread(void **state)
{
    (void)state;
    lock_take(&outer);
    pthread_t t;
    void *seen;
    assert_int_equal(pthread_create(&t, NULL, held_elsewhere, NULL), 0);
    assert_int_equal(pthread_join(t, &seen), 0);
    assert_null(seen); /* the other thread holds nothing */
    assert_true(lock_held(&outer));
    lock_drop(&outer);
}

static void test_wait_keeps_it_held(void **state)
{
    (void)state;
    pthread_cond_t c = PTHREAD_COND_INITIALIZER;
    lock_take(&outer);
    lock_take(&inner);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += 1000000;
    if (until.tv_nsec >= 1000000000) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000;
    }
    while (lock_timedwait(&c, &inner, &until) == 0)
        ; /* (a spurious wake-up: wait on) */
    assert_true(lock_held(&inner));
    assert_true(lock_held(&outer));
    lock_drop(&inner);
    lock_drop(&outer);
    pthread_cond_destroy(&c);
}

/* Run take_first then take_second in a child; the child must die of SIGABRT having said
 * which two locks broke the order. */
static void expect_abort(struct lock *take_first, struct lock *take_second, const char *said)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        lock_take(take_first);
        lock_take(take_second);
        _exit(0); /* the checker let it through */
    }
    close(fds[1]);
    char text[512] = {0};
    size_t n = 0;
    ssize_t got;
    while (n < sizeof text - 1 && (got = read(fds[0], text + n, sizeof text - 1 - n)) > 0)
        n += (size_t)got;
    close(fds[0]);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGABRT);
    assert_non_null(strstr(text, said));
}

static void test_lower_rank_aborts(void **state)
{
    (void)state;
    expect_abort(&inner, &outer,
                 "lock order broken: taking outer (rank 1) while holding inner (rank 2)");
}

static void test_same_rank_aborts(void **state)
{
    (void)state; /* e.g. two matches' locks */
    expect_abort(&outer, &other_outer,
                 "lock order broken: taking other outer (rank 1) while holding outer (rank 1)");
}

static void test_same_lock_twice_aborts(void **state)
{
    (void)state; /* not a recursive mutex: this would hang forever without the check */
    expect_abort(&outer, &outer, "taking outer (rank 1) while holding outer (rank 1)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_in_order),
        cmocka_unit_test(test_held_is_per_thread),
        cmocka_unit_test(test_wait_keeps_it_held),
        cmocka_unit_test(test_lower_rank_aborts),
        cmocka_unit_test(test_same_rank_aborts),
        cmocka_unit_test(test_same_lock_twice_aborts),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

#else

int main(void)
{
    puts("test_lock: a release build (NDEBUG) keeps no account of locks: skipped");
    return 77;
}

#endif
