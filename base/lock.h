/* lock.h - a mutex that knows its place in a lock order (the daemon's order: core.h
 * "Locks"). Each lock has a rank. In debug builds (NDEBUG not defined) every thread keeps
 * the locks it holds: lock_take asserts that the lock it takes ranks above each of them, so
 * no two threads can ever wait for each other in a circle and two locks of one rank are
 * never held together; lock_held says whether the calling thread holds a lock, for the
 * asserts at the top of functions that need one (as SQLite's sqlite3_mutex_held). Release
 * builds (-Db_ndebug=true) are the bare pthread calls, inline, with no bookkeeping.
 */
#ifndef CARDPOST_LOCK_H
#define CARDPOST_LOCK_H

#include <pthread.h>
#include <stdbool.h>
#include <time.h>

struct lock {
    pthread_mutex_t m;
    int rank;         /* taken only above every lock the thread holds */
    const char *name; /* for the report of a broken order */
};

/* Name the calling thread (at most 15 bytes shown), as `top -H`, perf and gdb list it. */
void thread_name(const char *name);

/* Lower the calling thread's CPU priority by `nice` steps below the process's (capped at
 * the lowest, 19): a thread whose work can wait (a delivery) then gives way to the others on
 * a busy core, and still gets its share of it (a weight about a tenth of theirs at 10).
 * Linux: the nice value is the thread's own. A refusal changes nothing. */
void thread_lower_priority(int nice);

/* How many processors the process may run on: those of its CPU affinity (`taskset`,
 * systemd's CPUAffinity=, a cpuset), else the machine's online ones; at least 1. A pool
 * sized by the machine's processors runs two threads on a process pinned to one core,
 * which then take turns on it (docs/benchmarks.md "One HTTP thread a processor the daemon
 * may run on"). A CPU quota (systemd's CPUQuota=, `docker --cpus`) is not counted: it
 * limits time, not processors. */
unsigned thread_processors(void);

/* Set up `l` (caller memory) with its rank and name (a string that outlives it); finish
 * accepts NULL. */
void lock_init(struct lock *l, int rank, const char *name);
void lock_finish(struct lock *l);

#ifdef NDEBUG
static inline void lock_take(struct lock *l)
{
    pthread_mutex_lock(&l->m);
}
static inline void lock_drop(struct lock *l)
{
    pthread_mutex_unlock(&l->m);
}
static inline void lock_wait(pthread_cond_t *c, struct lock *l)
{
    pthread_cond_wait(c, &l->m);
}
static inline int lock_timedwait(pthread_cond_t *c, struct lock *l, const struct timespec *until)
{
    return pthread_cond_timedwait(c, &l->m, until);
}
/* Release builds keep no account: only asserts ask, and they are gone. */
static inline bool lock_held(const struct lock *l)
{
    (void)l;
    return true;
}
static inline bool lock_none_held(void)
{
    return true;
}
#else
/* Take `l`. Debug builds print both locks and abort when the thread holds one of the same
 * or a higher rank (or `l` itself). */
void lock_take(struct lock *l);
/* Let go of `l`, which the thread holds (in any order). */
void lock_drop(struct lock *l);
/* pthread_cond_wait and pthread_cond_timedwait on `l`, which the thread holds (and holds
 * again when they return). */
void lock_wait(pthread_cond_t *c, struct lock *l);
int lock_timedwait(pthread_cond_t *c, struct lock *l, const struct timespec *until);
/* Whether the calling thread holds `l`; whether it holds no lock at all. */
bool lock_held(const struct lock *l);
bool lock_none_held(void);
#endif

#endif
