/* notation.c - cards and moves as text (turn-log.md §1): lenient input, canonical output.
 * Input is one line: a verb, then arguments separated by single spaces.
 */
#include "rules-int.h"

#include <stdio.h>
#include <string.h>

static const char rank_chars[] = "23456789TJQKA";
static const char suit_chars[] = "CDHS";

/* The verbs' texts (NUL-padded to 8 bytes: a move's text copies one in one piece) and
 * lengths. */
#define VERB_TEXT(v, text) [v] = {text, sizeof text - 1}
static const struct verb_text {
    char text[8];
    unsigned char len;
} verb_texts[RULES_NVERBS] = {
    VERB_TEXT(RULES_RESIGN, "resign"), VERB_TEXT(RULES_PASS, "pass"),
    VERB_TEXT(RULES_PLAY, "play"),     VERB_TEXT(RULES_MOON, "moon"),
    VERB_TEXT(RULES_LEAD, "lead"),     VERB_TEXT(RULES_TAKE, "take"),
    VERB_TEXT(RULES_STAY, "stay"),     VERB_TEXT(RULES_DROP, "drop"),
    VERB_TEXT(RULES_DISCARD, "discard"), VERB_TEXT(RULES_MOVE, "move"),
    VERB_TEXT(RULES_FLIP, "flip"),     VERB_TEXT(RULES_READY, "ready"),
};

const char *rules_verb_name(enum rules_verb v)
{
    if ((unsigned)v >= RULES_NVERBS)
        return "?";
    return verb_texts[v].text;
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

size_t rules_cards_json(uint64_t mask, char *out)
{
    char *p = out;
    *p++ = '[';
    for (; mask; mask &= mask - 1) {
        p[0] = '"';
        rules_card_format((rules_card)rules_lowest(mask), p + 1); /* (its NUL: the quote's place) */
        p[3] = '"';
        p[4] = ',';
        p += 5;
    }
    if (p[-1] == ',')
        p--;
    *p++ = ']';
    return (size_t)(p - out);
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
        if (word_is(w[0], wl[0], verb_texts[v].text))
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
            return bad(e, "'%s' takes no argument", verb_texts[verb].text);
        return true;
    case RULES_PLAY:
    case RULES_LEAD:
    case RULES_TAKE:
    case RULES_MOVE:
        if (args != 1)
            return bad(e, "'%s' takes exactly one card", verb_texts[verb].text);
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

/* The longest text: a verb, 64 cards (every bit of a set, the 12 past the deck as '?') or
 * " subtract" or a number; it always fits, and is written in place. */
_Static_assert(7 + 3 * 64 < RULES_MOVE_TEXT_MAX, "a move of every card fits RULES_MOVE_TEXT_MAX");

/* " " and card `c` at p: past it. */
static char *put_card(char *p, rules_card c)
{
    p[0] = ' ';
    p[1] = c < RULES_NCARDS ? rank_chars[RULES_RANK(c)] : '?';
    p[2] = c < RULES_NCARDS ? suit_chars[RULES_SUIT(c)] : '?';
    return p + 3;
}

/* Without snprintf, each piece written in place (straight into `buf` when it has room for
 * any move): a legal-move list formats up to 286 moves an answer (Hearts' passes), each
 * state message of a seat about to pass. */
size_t rules_move_format(const struct rules_move *m, char *buf, size_t size)
{
    char tmp[RULES_MOVE_TEXT_MAX];
    char *out = size >= RULES_MOVE_TEXT_MAX ? buf : tmp, *p = out;
    if ((unsigned)m->verb < RULES_NVERBS) {
        memcpy(p, verb_texts[m->verb].text, sizeof verb_texts[m->verb].text);
        p += verb_texts[m->verb].len;
    } else {
        *p++ = '?';
    }
    switch (m->verb) {
    case RULES_PLAY:
    case RULES_LEAD:
    case RULES_TAKE:
    case RULES_MOVE:
        p = put_card(p, m->card);
        break;
    case RULES_PASS:
    case RULES_DISCARD:
        for (uint64_t s = m->cards; s; s &= s - 1)
            p = put_card(p, (rules_card)rules_lowest(s));
        break;
    case RULES_MOON:
        if (m->arg == RULES_MOON_SUBTRACT_ARG) {
            memcpy(p, " subtract", 9);
            p += 9;
        } else {
            memcpy(p, " add", 4);
            p += 4;
        }
        break;
    case RULES_FLIP: {
        char d[10], *q = d + sizeof d;
        unsigned v = m->arg;
        do
            *--q = (char)('0' + v % 10);
        while (v /= 10);
        *p++ = ' ';
        memcpy(p, q, (size_t)(d + sizeof d - q));
        p += d + sizeof d - q;
        break;
    }
    default:
        break;
    }
    size_t n = (size_t)(p - out);
    if (out == buf) {
        buf[n] = '\0';
    } else if (size > 0) {
        size_t k = n < size - 1 ? n : size - 1;
        memcpy(buf, tmp, k);
        buf[k] = '\0';
    }
    return n;
}
