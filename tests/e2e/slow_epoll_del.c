/* slow_epoll_del.c - an LD_PRELOAD for test_lifecycle.py's test_sigterm_race: every
 * EPOLL_CTL_DEL waits 3 ms before it is made, which widens the window of any race between
 * threads over a descriptor's place in an epoll set from nanoseconds to milliseconds. */
#define _GNU_SOURCE /* RTLD_NEXT */
#include <dlfcn.h>
#include <sys/epoll.h>
#include <time.h>

int epoll_ctl(int epfd, int op, int fd, struct epoll_event *event)
{
    static int (*real)(int, int, int, struct epoll_event *);
    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "epoll_ctl");
    if (op == EPOLL_CTL_DEL) {
        struct timespec nap = {.tv_nsec = 3 * 1000000};
        nanosleep(&nap, NULL);
    }
    return real(epfd, op, fd, event);
}
