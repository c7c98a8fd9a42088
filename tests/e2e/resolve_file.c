/* resolve_file.c - an LD_PRELOAD for test_notify.py's test_kept_connection_moved: getaddrinfo
 * of a name ending in ".rebind.test" answers the address written in the file named by
 * CARDPOST_TEST_RESOLVE_FILE, read again at every call, so that a test can move a webhook's
 * host to another address while the daemon runs (as DNS does). Every other name is libc's. */
#define _GNU_SOURCE /* RTLD_NEXT */
#include <dlfcn.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SUFFIX ".rebind.test"

int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints,
                struct addrinfo **res)
{
    static int (*real)(const char *, const char *, const struct addrinfo *, struct addrinfo **);
    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "getaddrinfo");
    const char *file = getenv("CARDPOST_TEST_RESOLVE_FILE");
    size_t n = node ? strlen(node) : 0, k = strlen(SUFFIX);
    if (!file || n <= k || strcmp(node + n - k, SUFFIX) != 0)
        return real(node, service, hints, res);
    char addr[64] = "";
    FILE *f = fopen(file, "r");
    if (!f)
        return EAI_NONAME;
    if (!fgets(addr, sizeof addr, f))
        addr[0] = '\0';
    fclose(f);
    addr[strcspn(addr, " \n")] = '\0';
    struct addrinfo numeric = hints ? *hints : (struct addrinfo){0};
    numeric.ai_flags |= AI_NUMERICHOST;
    return real(addr, service, &numeric, res);
}
