/* testlib.c - shared helpers of the rules tests (see testlib.h). */
#include "testlib.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

uint64_t tl_rand(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

uint32_t tl_below(uint64_t *state, uint32_t n)
{
    return (uint32_t)(tl_rand(state) % n);
}

void tl_random_deck(uint64_t *rng, rules_card deck[RULES_NCARDS])
{
    for (int i = 0; i < RULES_NCARDS; i++)
        deck[i] = (rules_card)i;
    for (int i = RULES_NCARDS - 1; i > 0; i--) {
        int j = (int)tl_below(rng, (uint32_t)i + 1);
        rules_card t = deck[i];
        deck[i] = deck[j];
        deck[j] = t;
    }
}

bool tl_apply(struct rules_state *st, int seat, const char *text, struct err *e)
{
    struct rules_move m;
    return rules_move_parse(text, strlen(text), &m, e) && rules_apply(st, seat, &m, e);
}

struct rules_move tl_move(const char *text)
{
    struct rules_move m;
    struct err e;
    if (!rules_move_parse(text, strlen(text), &m, &e))
        fail_msg("'%s' does not parse: %s", text, e.msg);
    return m;
}

static bool same_move(const struct rules_move *a, const struct rules_move *b)
{
    if (a->verb != b->verb)
        return false;
    switch (a->verb) {
    case RULES_PLAY:
    case RULES_LEAD:
    case RULES_TAKE:
    case RULES_MOVE:
        return a->card == b->card;
    case RULES_PASS:
    case RULES_DISCARD:
        return a->cards == b->cards && a->ncards == b->ncards;
    case RULES_MOON:
    case RULES_FLIP:
        return a->arg == b->arg;
    default:
        return true;
    }
}

bool tl_listed(const struct rules_state *st, int seat, const struct rules_move *m)
{
    static struct rules_move legal[RULES_MAX_LEGAL];
    int n = rules_legal(st, seat, legal, RULES_MAX_LEGAL);
    for (int i = 0; i < n; i++)
        if (same_move(&legal[i], m))
            return true;
    return false;
}

static uint64_t random_subset(uint64_t *rng, uint64_t from, int k)
{
    uint64_t out = 0;
    for (int i = 0; i < k && from; i++) {
        int n = rules_popcount(from);
        int pick = (int)tl_below(rng, (uint32_t)n);
        uint64_t s = from;
        while (pick--)
            s &= s - 1;
        uint64_t bit = s & -s;
        out |= bit;
        from &= ~bit;
    }
    return out;
}

int tl_candidates(uint64_t *rng, uint64_t hand, int extra, struct rules_move *out, int max)
{
    int n = 0;
#define ADD(m)                                                                                 \
    do {                                                                                       \
        if (n < max)                                                                           \
            out[n++] = (m);                                                                    \
    } while (0)
    static const uint8_t single[] = {RULES_PLAY, RULES_LEAD, RULES_TAKE, RULES_MOVE};
    for (size_t v = 0; v < sizeof single; v++)
        for (int c = 0; c < RULES_NCARDS; c++)
            ADD(((struct rules_move){.verb = single[v], .card = (uint8_t)c}));
    static const uint8_t bare[] = {RULES_STAY, RULES_DROP, RULES_READY, RULES_DISCARD};
    for (size_t v = 0; v < sizeof bare; v++)
        ADD(((struct rules_move){.verb = bare[v], .card = RULES_NO_CARD}));
    for (uint8_t a = 0; a < 2; a++)
        ADD(((struct rules_move){.verb = RULES_MOON, .card = RULES_NO_CARD, .arg = a}));
    for (uint8_t col = 1; col <= 5; col++)
        ADD(((struct rules_move){.verb = RULES_FLIP, .card = RULES_NO_CARD, .arg = col}));
    for (int i = 0; i < extra; i++) {
        int k = (int)tl_below(rng, 5);
        uint64_t from = (hand && tl_below(rng, 4) != 0) ? hand : RULES_ALL_CARDS;
        uint64_t set = random_subset(rng, from, k);
        uint8_t verb = tl_below(rng, 2) ? RULES_PASS : RULES_DISCARD;
        /* Now and then the text named one of the cards twice. */
        int named = rules_popcount(set) + (set && tl_below(rng, 6) == 0);
        ADD(((struct rules_move){.verb = verb, .card = RULES_NO_CARD, .ncards = (uint8_t)named,
                                 .cards = set}));
    }
#undef ADD
    return n;
}

const char *tl_check_legality(const struct rules_state *st, uint64_t *rng)
{
    static char msg[RULES_MOVE_TEXT_MAX + sizeof ((struct err *)0)->msg + 100];
    static struct rules_move legal[RULES_MAX_LEGAL];
    static struct rules_move cand[2048];
    uint32_t to_move = rules_to_move(st);
    for (int seat = 0; seat < st->nseats; seat++) {
        int nl = rules_legal(st, seat, legal, RULES_MAX_LEGAL);
        if (nl > RULES_MAX_LEGAL)
            return "more legal moves than RULES_MAX_LEGAL";
        if ((nl > 0) != ((to_move >> seat) & 1)) {
            snprintf(msg, sizeof msg, "seat %d: %d legal moves but to_move bit is %u", seat, nl,
                     (to_move >> seat) & 1);
            return msg;
        }
        for (int i = 0; i < nl; i++) {
            struct rules_state copy = *st;
            struct err e;
            char text[RULES_MOVE_TEXT_MAX];
            rules_move_format(&legal[i], text, sizeof text);
            if (!rules_apply(&copy, seat, &legal[i], &e)) {
                snprintf(msg, sizeof msg, "seat %d: listed move '%s' refused: %s", seat, text,
                         e.msg);
                return msg;
            }
            /* Round trip through the notation: the canonical text means the same move. */
            struct rules_move back;
            if (!rules_move_parse(text, strlen(text), &back, &e) || !tl_listed(st, seat, &back)) {
                snprintf(msg, sizeof msg, "seat %d: '%s' does not round-trip", seat, text);
                return msg;
            }
        }
        /* Random pass/discard sets are drawn mostly from the cards the listed moves use,
         * so that near misses (one card wrong, a card twice, one too many) get tried. */
        uint64_t used = 0;
        for (int i = 0; i < nl; i++)
            used |= legal[i].cards | (legal[i].card < RULES_NCARDS ? RULES_BIT(legal[i].card) : 0);
        int nc = tl_candidates(rng, used, 48, cand, 2048);
        for (int i = 0; i < nc; i++) {
            struct rules_state copy = *st;
            struct err e;
            bool ok = rules_apply(&copy, seat, &cand[i], &e);
            bool listed = tl_listed(st, seat, &cand[i]);
            if (ok != listed) {
                char text[RULES_MOVE_TEXT_MAX];
                rules_move_format(&cand[i], text, sizeof text);
                snprintf(msg, sizeof msg, "seat %d: '%s' %s but %s listed", seat, text,
                         ok ? "accepted" : "refused", listed ? "is" : "is not");
                return msg;
            }
            if (!ok && memcmp(&copy, st, sizeof copy) != 0) {
                char text[RULES_MOVE_TEXT_MAX];
                rules_move_format(&cand[i], text, sizeof text);
                snprintf(msg, sizeof msg, "seat %d: refused '%s' changed the state", seat, text);
                return msg;
            }
            if (!ok && (e.code != ERR_ILLEGAL || !e.tag || !e.tag[0] || !e.msg[0]))
                return "a refusal without ERR_ILLEGAL, a tag and a reason";
        }
    }
    return NULL;
}

/* The card-collecting emitter. */
struct collect {
    uint64_t cards;
    int depth;
    bool ok;
};

static void c_open(void *ctx, const char *key)
{
    (void)key;
    ((struct collect *)ctx)->depth++;
}

static void c_close(void *ctx)
{
    struct collect *c = ctx;
    if (--c->depth < 0)
        c->ok = false;
}

static void c_int(void *ctx, const char *key, int64_t v)
{
    (void)ctx, (void)key, (void)v;
}

static void c_bool(void *ctx, const char *key, bool v)
{
    (void)ctx, (void)key, (void)v;
}

static void c_str(void *ctx, const char *key, const char *s)
{
    if (!s)
        ((struct collect *)ctx)->ok = false;
    (void)key;
}

static void c_null(void *ctx, const char *key)
{
    (void)ctx, (void)key;
}

static void c_card(void *ctx, const char *key, rules_card card)
{
    struct collect *c = ctx;
    (void)key;
    if (card >= RULES_NCARDS)
        c->ok = false;
    else
        c->cards |= RULES_BIT(card);
}

uint64_t tl_view_cards(const struct rules_state *st, int seat, bool *well_formed)
{
    static const struct rules_emit em = {
        .object_begin = c_open, .object_end = c_close, .array_begin = c_open,
        .array_end = c_close,   .integer = c_int,      .boolean = c_bool,
        .string = c_str,        .null = c_null,        .card = c_card,
    };
    struct collect c = {.ok = true};
    rules_view(st, seat, &em, &c);
    if (well_formed)
        *well_formed = c.ok && c.depth == 0;
    return c.cards;
}

/* ---- Cards and decks from text ------------------------------------------------------------ */

rules_card tl_card(const char *text)
{
    rules_card c;
    if (!rules_card_parse(text, strlen(text), &c))
        fail_msg("'%s' is not a card", text);
    return c;
}

int tl_card_list(const char *text, rules_card *out)
{
    int n = 0;
    const char *p = text;
    while (p && *p) {
        while (*p == ' ')
            p++;
        size_t len = strcspn(p, " ");
        if (!len)
            break;
        if (n == RULES_NCARDS)
            fail_msg("more than %d cards in '%s'", RULES_NCARDS, text);
        if (!rules_card_parse(p, len, &out[n]))
            fail_msg("'%.*s' in '%s' is not a card", (int)len, p, text);
        n++;
        p += len;
    }
    return n;
}

uint64_t tl_cards(const char *text)
{
    rules_card c[RULES_NCARDS];
    int n = tl_card_list(text, c);
    uint64_t set = 0;
    for (int i = 0; i < n; i++) {
        if (set & RULES_BIT(c[i]))
            fail_msg("a card named twice in '%s'", text);
        set |= RULES_BIT(c[i]);
    }
    return set;
}

int tl_stack(const char *top, rules_card deck[RULES_NCARDS])
{
    int named = tl_card_list(top, deck), n = named;
    uint64_t used = 0;
    for (int i = 0; i < named; i++) {
        if (used & RULES_BIT(deck[i]))
            fail_msg("a card named twice in stack '%s'", top);
        used |= RULES_BIT(deck[i]);
    }
    for (int c = 0; c < RULES_NCARDS; c++)
        if (!(used & RULES_BIT(c)))
            deck[n++] = (rules_card)c;
    assert_int_equal(n, RULES_NCARDS);
    return named;
}

void tl_script(struct rules_state *st, const char *script)
{
    const char *p = script;
    while (p && *p) {
        while (*p == ' ' || *p == ';')
            p++;
        if (!*p)
            break;
        size_t len = strcspn(p, ";");
        char line[128];
        if (len >= sizeof line || len < 3 || p[0] < '0' || p[0] > '9')
            fail_msg("not a scripted move: '%.*s'", (int)len, p);
        snprintf(line, sizeof line, "%.*s", (int)len, p);
        for (size_t end = len; end > 2 && line[end - 1] == ' '; end--)
            line[end - 1] = '\0';
        struct err e;
        if (!tl_apply(st, line[0] - '0', line + 2, &e))
            fail_msg("scripted move '%s' refused: %s", line, e.msg);
        p += len;
    }
}

const char *tl_legal_text(const struct rules_state *st, int seat, const char *sep)
{
    static char out[4096];
    static struct rules_move moves[RULES_MAX_LEGAL];
    int n = rules_legal(st, seat, moves, RULES_MAX_LEGAL);
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        char t[RULES_MOVE_TEXT_MAX];
        rules_move_format(&moves[i], t, sizeof t);
        snprintf(out + strlen(out), sizeof out - strlen(out), "%s%s", i ? sep : "", t);
    }
    return out;
}
