/* fuzz_mail.c - libFuzzer target: arbitrary bytes as an inbound email (mail_parse, GMime),
 * as a plain-text body (mail_first_line) and as a play+ address (mail_address_check).
 * Whatever parses must hold what mail.h promises; a signed address must check as itself.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mail.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint8_t key[MAIL_KEY_BYTES] = "fuzz-key-fuzz-key-fuzz-key-fuzz";

/* A command line is trimmed, non-empty, one line, and not quoted text. */
static void check_command(const char *c)
{
    if (!c)
        return;
    size_t n = strlen(c);
    if (n == 0 || strchr(c, '\n') || c[0] == '>' || c[0] == ' ' || c[0] == '\t' ||
        c[n - 1] == ' ' || c[n - 1] == '\t' || c[n - 1] == '\r') {
        fprintf(stderr, "bad command line \"%s\"\n", c);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > MAIL_MAX_MESSAGE)
        return 0;
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';

    struct mail_parsed p;
    struct err e;
    if (mail_parse((const char *)data, size, NULL, &p, &e)) {
        check_command(p.command);
        if (p.play_address && strncasecmp(p.play_address, "play+", 5) != 0)
            abort();
        if (p.message_id && (p.message_id[0] != '<' ||
                             p.message_id[strlen(p.message_id) - 1] != '>'))
            abort();
        int64_t m, q;
        int s;
        if (p.play_address)
            mail_address_check(key, p.play_address, &m, &s, &q);
        mail_parsed_finish(&p);
    } else if (strcmp(e.tag, "malformed_mail") != 0) {
        abort();
    }
    /* The same bytes with an envelope recipient, which wins over the headers. */
    if (mail_parse((const char *)data, size, "play+1.0.1.000000000000000000000000@x.test", &p,
                   &e)) {
        if (!p.play_address || strcmp(p.play_address, "play+1.0.1.000000000000000000000000@x.test"))
            abort();
        mail_parsed_finish(&p);
    }

    char *line = mail_first_line(text);
    check_command(line);
    free(line);

    int64_t m, q;
    int s;
    if (mail_address_check(key, text, &m, &s, &q)) {
        /* Genuine: it must be the address we would sign for what it names. */
        char again[160];
        mail_address(key, "x.test", m, s, q, again);
        if (strncasecmp(again, text, strcspn(again, "@")) != 0)
            abort();
    }
    /* Any match, seat and seq the input names: signed, it checks as itself; one tag digit
     * changed, it does not. */
    if (size >= 12) {
        int64_t mm, qq;
        memcpy(&mm, data, 8);
        memcpy(&qq, data + 4, 8);
        mm &= ((int64_t)1 << 62) - 1; /* numbers as large as a database id can be */
        qq &= ((int64_t)1 << 62) - 1;
        int ss = data[11] % 65;
        char addr[160];
        mail_address(key, "x.test", mm, ss, qq, addr);
        if (!mail_address_check(key, addr, &m, &s, &q) || m != mm || s != ss || q != qq)
            abort();
        char *at = strchr(addr, '@');
        at[-1] = at[-1] == '0' ? '1' : '0';
        if (mail_address_check(key, addr, &m, &s, &q))
            abort();
    }
    free(text);
    return 0;
}
