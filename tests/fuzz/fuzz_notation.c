/* fuzz_notation.c - libFuzzer target: arbitrary bytes as move text and as a card
 * (turn-log.md §1). Whatever parses must format to canonical text that parses back to a
 * move with the same canonical text. Parsing knows no game, so this covers every game.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    rules_card c;
    if (rules_card_parse(text, size, &c)) {
        char out[3];
        rules_card_format(c, out);
        rules_card back;
        if (c >= RULES_NCARDS || !rules_card_parse(out, 2, &back) || back != c)
            abort();
    }

    struct rules_move m;
    struct err e;
    if (!rules_move_parse(text, size, &m, &e)) {
        if (e.code != ERR_ILLEGAL || strcmp(e.tag, "bad_notation") != 0)
            abort();
        return 0;
    }
    char canon[RULES_MOVE_TEXT_MAX];
    size_t n = rules_move_format(&m, canon, sizeof canon);
    if (n >= sizeof canon || strlen(canon) != n)
        abort();
    struct rules_move again;
    if (!rules_move_parse(canon, n, &again, &e)) {
        fprintf(stderr, "canonical '%s' does not parse: %s\n", canon, e.msg);
        abort();
    }
    char canon2[RULES_MOVE_TEXT_MAX];
    rules_move_format(&again, canon2, sizeof canon2);
    if (strcmp(canon, canon2) != 0 || again.verb != m.verb) {
        fprintf(stderr, "'%s' reformats as '%s'\n", canon, canon2);
        abort();
    }
    return 0;
}
