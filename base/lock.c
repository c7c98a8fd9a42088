/* lock.c - the lock order's bookkeeping (lock.h): in debug builds each thread's locks held,
 * checked at every take. Apart from libbase because it calls pthreads (the pure rules
 * engine links only libbase, tests/purity.sh); release builds keep only init and finish.
 */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "lock.h"

#include <assert.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

void thread_name(const char *name)
{
    prctl(PR_SET_NAME, name, 0, 0, 0); /* (a name is a help: a refusal changes nothing) */
}

void thread_lower_priority(int nice)
{
    /* On Linux PRIO_PROCESS names a thread: 0 the calling one, the process id its main
     * thread, whose priority is the process's (a thread started by a lowered one starts
     * lowered: the step is from the process's, not from the caller's). -1 is a nice value
     * too, hence errno. */
    errno = 0;
    int process = getpriority(PRIO_PROCESS, (id_t)getpid());
    if (errno != 0)
        return;
    int want = process + nice > 19 ? 19 : process + nice;
    setpriority(PRIO_PROCESS, 0, want);
}

unsigned thread_processors(void)
{
    cpu_set_t set;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned n = online > 1 ? (unsigned)online : 1;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        n = (unsigned)CPU_COUNT(&set);
    return n;
}

void lock_init(struct lock *l, int rank, const char *name)
{
    pthread_mutex_init(&l->m, NULL);
    l->rank = rank;
    l->name = name;
}

void lock_finish(struct lock *l)
{
    if (l)
        pthread_mutex_destroy(&l->m);
}

#ifndef NDEBUG

/* The locks this thread holds, in the order taken. The order allows no more than one lock
 * of each rank at a time, so a handful is the most a thread ever holds. */
#define LOCK_MAX_HELD 16
static _Thread_local const struct lock *held[LOCK_MAX_HELD];
static _Thread_local int nheld;

bool lock_held(const struct lock *l)
{
    for (int i = 0; i < nheld; i++)
        if (held[i] == l)
            return true;
    return false;
}

bool lock_none_held(void)
{
    return nheld == 0;
}

static void order_broken(const struct lock *l, const struct lock *h)
{
    fprintf(stderr, "lock order broken: taking %s (rank %d) while holding %s (rank %d)\n", l->name,
            l->rank, h->name, h->rank);
    abort();
}

void lock_take(struct lock *l)
{
    for (int i = 0; i < nheld; i++)
        if (held[i]->rank >= l->rank)
            order_broken(l, held[i]);
    assert(nheld < LOCK_MAX_HELD);
    pthread_mutex_lock(&l->m);
    held[nheld++] = l;
}

void lock_drop(struct lock *l)
{
    int i = 0;
    while (i < nheld && held[i] != l)
        i++;
    assert(i < nheld); /* dropping a lock this thread does not hold */
    for (; i + 1 < nheld; i++)
        held[i] = held[i + 1];
    nheld--;
    pthread_mutex_unlock(&l->m);
}

void lock_wait(pthread_cond_t *c, struct lock *l)
{
    assert(lock_held(l));
    pthread_cond_wait(c, &l->m);
}

int lock_timedwait(pthread_cond_t *c, struct lock *l, const struct timespec *until)
{
    assert(lock_held(l));
    return pthread_cond_timedwait(c, &l->m, until);
}

#endif
