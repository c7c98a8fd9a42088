/* corpus_main.c - runs a fuzz target without libFuzzer: every file named on the command
 * line (directories: every file in them) goes through LLVMFuzzerTestOneInput once. The
 * ordinary test suite uses it to replay the committed corpus, sanitizer build included.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        return 1;
    }
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            uint8_t *bigger = realloc(buf, cap * 2);
            if (!bigger) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = bigger;
            cap *= 2;
        }
    }
    fclose(f);
    if (!buf) {
        fprintf(stderr, "out of memory reading %s\n", path);
        return 1;
    }
    /* An exact-size copy, so AddressSanitizer sees a read past the input. */
    uint8_t *input = malloc(n ? n : 1);
    if (!input) {
        free(buf);
        return 1;
    }
    memcpy(input, buf, n);
    free(buf);
    LLVMFuzzerTestOneInput(input, n);
    free(input);
    return 0;
}

int main(int argc, char **argv)
{
    int failures = 0, inputs = 0;
    for (int i = 1; i < argc; i++) {
        struct stat sb;
        if (stat(argv[i], &sb) != 0) {
            fprintf(stderr, "cannot stat %s\n", argv[i]);
            return 1;
        }
        if (!S_ISDIR(sb.st_mode)) {
            failures += run_file(argv[i]);
            inputs++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        struct dirent *ent;
        while (d && (ent = readdir(d))) {
            if (ent->d_name[0] == '.')
                continue;
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[i], ent->d_name);
            failures += run_file(path);
            inputs++;
        }
        if (d)
            closedir(d);
    }
    printf("%d inputs\n", inputs);
    return failures || inputs == 0 ? 1 : 0;
}
