/* notation.c - cards and moves as text (turn-log.md §1): lenient input, canonical output.
 * Input is one line: a verb, then arguments separated by single spaces.
 */
#include "rules-int.h"

#include <stdio.h>
#include <string.h>

static const char rank_chars[] = "23456789TJQKA";
static const char suit_chars[] = "CDHS";

static const char *const verb_names[RULES_NVERBS] = {
    [RULES_RESIGN] = "resign", [RULES_PASS] = "pass",       [RULES_PLAY] = "play",
    [RULES_MOON] = "moon",     [RULES_LEAD] = "lead",       [RULES_TAKE] = "take",
    [RULES_STAY] = "stay",     [RULES_DROP] = "drop",       [RULES_DISCARD] = "discard",
    [RULES_MOVE] = "move",     [RULES_FLIP] = "flip",       [RULES_READY] = "ready",
};

const char *rules_verb_name(enum rules_verb v)
{
    if ((unsigned)v >= RULES_NVERBS)
        return "?";
    return verb_names[v];
}

static char upper(char c)
{
    return (c >= 'a' && c <= 'z') ? (char)(c - 'a' + 'A') : c;
}

static bool word_is(const char *s, size_t len, const char *word)
{
    if (len == 0 || upper(s[0]) != upper(word[0]) || strlen(word) != len)
        return false;
    for (size_t i = 0; i < len; i++)
        if (upper(s[i]) != upper(word[i]))
            return false;
    return true;
}

bool rules_card_parse(const char *s, size_t len, rules_card *out)
{
    int rank;
    size_t i;
    if (len >= 2 && s[0] == '1' && s[1] == '0') {
        rank = 8; /* T */
        i = 2;
    } else if (len >= 1) {
        const char *p = memchr(rank_chars, upper(s[0]), sizeof rank_chars - 1);
        if (!p || s[0] == '\0')
            return false;
        rank = (int)(p - rank_chars);
        i = 1;
    } else {
        return false;
    }
    int suit = -1;
    if (len - i == 1) {
        const char *p = memchr(suit_chars, upper(s[i]), sizeof suit_chars - 1);
        if (p && s[i] != '\0')
            suit = (int)(p - suit_chars);
    } else if (len - i == 3 && (unsigned char)s[i] == 0xE2 && (unsigned char)s[i + 1] == 0x99) {
        /* U+2660 ♠, U+2663 ♣, U+2665 ♥, U+2666 ♦ */
        switch ((unsigned char)s[i + 2]) {
        case 0xA3: suit = RULES_CLUBS; break;
        case 0xA6: suit = RULES_DIAMONDS; break;
        case 0xA5: suit = RULES_HEARTS_SUIT; break;
        case 0xA0: suit = RULES_SPADES; break;
        default: break;
        }
    }
    if (suit < 0)
        return false;
    *out = RULES_CARD(rank, suit);
    return true;
}

void rules_card_format(rules_card c, char out[3])
{
    if (c >= RULES_NCARDS) {
        out[0] = '?';
        out[1] = '?';
    } else {
        out[0] = rank_chars[RULES_RANK(c)];
        out[1] = suit_chars[RULES_SUIT(c)];
    }
    out[2] = '\0';
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

/* Split `text` into words at single spaces. Returns the count, or -1 when two spaces
 * follow each other or a word holds other white space. */
#define MAX_WORDS 64
static int split(const char *s, size_t len, const char **w, size_t *wl)
{
    int n = 0;
    size_t i = 0;
    while (i <= len) {
        size_t j = i;
        while (j < len && s[j] != ' ')
            j++;
        if (j == i || n == MAX_WORDS)
            return -1;
        for (size_t k = i; k < j; k++)
            if (is_space(s[k]) || s[k] == '\0')
                return -1;
        w[n] = s + i;
        wl[n] = j - i;
        n++;
        i = j + 1;
    }
    return n;
}

static bool bad(struct err *e, const char *fmt, const char *arg)
{
    return err_set(e, ERR_ILLEGAL, "bad_notation", fmt, arg);
}

bool rules_move_parse(const char *text, size_t len, struct rules_move *out, struct err *e)
{
    while (len > 0 && is_space(text[0])) {
        text++;
        len--;
    }
    while (len > 0 && is_space(text[len - 1]))
        len--;
    if (len == 0)
        return bad(e, "%s", "empty move");

    const char *w[MAX_WORDS];
    size_t wl[MAX_WORDS];
    int n = split(text, len, w, wl);
    if (n < 0)
        return bad(e, "%s", "words of a move are separated by single spaces");

    int verb = -1;
    for (int v = 0; v < RULES_NVERBS && verb < 0; v++)
        if (word_is(w[0], wl[0], verb_names[v]))
            verb = v;
    if (verb < 0)
        return bad(e, "%s", "unknown verb");

    memset(out, 0, sizeof *out);
    out->verb = (uint8_t)verb;
    out->card = RULES_NO_CARD;
    int args = n - 1;
    switch (verb) {
    case RULES_RESIGN:
    case RULES_STAY:
    case RULES_DROP:
    case RULES_READY:
        if (args != 0)
            return bad(e, "'%s' takes no argument", verb_names[verb]);
        return true;
    case RULES_PLAY:
    case RULES_LEAD:
    case RULES_TAKE:
    case RULES_MOVE:
        if (args != 1)
            return bad(e, "'%s' takes exactly one card", verb_names[verb]);
        if (!rules_card_parse(w[1], wl[1], &out->card))
            return bad(e, "%s", "not a card");
        return true;
    case RULES_PASS:
    case RULES_DISCARD:
        for (int i = 1; i < n; i++) {
            rules_card c;
            if (!rules_card_parse(w[i], wl[i], &c))
                return bad(e, "%s", "not a card");
            out->cards |= RULES_BIT(c);
        }
        out->ncards = (uint8_t)args;
        return true;
    case RULES_MOON:
        if (args != 1)
            return bad(e, "%s", "'moon' takes add or subtract");
        if (word_is(w[1], wl[1], "add"))
            out->arg = RULES_MOON_ADD_ARG;
        else if (word_is(w[1], wl[1], "subtract"))
            out->arg = RULES_MOON_SUBTRACT_ARG;
        else
            return bad(e, "%s", "'moon' takes add or subtract");
        return true;
    case RULES_FLIP:
        if (args != 1 || wl[1] != 1 || w[1][0] < '1' || w[1][0] > '5')
            return bad(e, "%s", "'flip' takes a column number, 1 to 5");
        out->arg = (uint8_t)(w[1][0] - '0');
        return true;
    default:
        break;
    }
    return bad(e, "%s", "unknown verb");
}

/* Append `s` to the move text being built (n counts every byte, written or not, as
 * snprintf would; the text holds what fits). */
static size_t put(char *tmp, size_t n, const char *s)
{
    for (; *s; s++, n++)
        if (n < RULES_MOVE_TEXT_MAX - 1)
            tmp[n] = *s;
    return n;
}

/* Append " " and card `c` (the longest move, a verb and 52 cards, fits the text). */
_Static_assert(sizeof "discard" - 1 + 3 * RULES_NCARDS < RULES_MOVE_TEXT_MAX,
               "a move of every card fits RULES_MOVE_TEXT_MAX");
static size_t put_card(char *tmp, size_t n, rules_card c)
{
    tmp[n] = ' ';
    tmp[n + 1] = c < RULES_NCARDS ? rank_chars[RULES_RANK(c)] : '?';
    tmp[n + 2] = c < RULES_NCARDS ? suit_chars[RULES_SUIT(c)] : '?';
    return n + 3;
}

/* Without snprintf, and each card written in place: a legal-move list formats up to 286
 * moves an answer (Hearts' passes), each state message of a seat about to pass. */
size_t rules_move_format(const struct rules_move *m, char *buf, size_t size)
{
    char tmp[RULES_MOVE_TEXT_MAX];
    size_t n = put(tmp, 0, rules_verb_name((enum rules_verb)m->verb));
    switch (m->verb) {
    case RULES_PLAY:
    case RULES_LEAD:
    case RULES_TAKE:
    case RULES_MOVE:
        n = put_card(tmp, n, m->card);
        break;
    case RULES_PASS:
    case RULES_DISCARD:
        for (uint64_t s = m->cards; s; s &= s - 1)
            n = put_card(tmp, n, (rules_card)rules_lowest(s));
        break;
    case RULES_MOON:
        n = put(tmp, n, m->arg == RULES_MOON_SUBTRACT_ARG ? " subtract" : " add");
        break;
    case RULES_FLIP: {
        char d[8], *p = d + sizeof d;
        unsigned v = m->arg;
        *--p = '\0';
        do
            *--p = (char)('0' + v % 10);
        while (v /= 10);
        *--p = ' ';
        n = put(tmp, n, p);
        break;
    }
    default:
        break;
    }
    if (size > 0) {
        size_t k = n < size - 1 ? n : size - 1;
        if (k > RULES_MOVE_TEXT_MAX - 1)
            k = RULES_MOVE_TEXT_MAX - 1;
        memcpy(buf, tmp, k);
        buf[k] = '\0';
    }
    return n;
}
