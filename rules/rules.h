/* rules.h - the pure rules engine of cardpost: cards, move notation, games, matches.
 *
 * Everything here is a pure function of its arguments: no I/O, no allocation, no clock,
 * no random source. Decks come in as chance events (deal, shuffle); the seed-to-deck
 * derivation lives in turnlog.h. A match state is a flat struct with no pointers, so
 * copying it is a preview and replaying a log is a loop. Rules: spec/rules.md.
 */
#ifndef CARDPOST_RULES_H
#define CARDPOST_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* ---- Cards ------------------------------------------------------------------------------ */

/* A card is suit * 13 + rank: rank 0 is '2' ... 12 is 'A'; suits C D H S are 0..3.
 * So the card number is its index in the canonical deck order 2C 3C ... AC 2D ... AS. */
typedef uint8_t rules_card;

#define RULES_NCARDS 52
#define RULES_NO_CARD 0xff
#define RULES_MAX_SEATS 10

enum rules_suit { RULES_CLUBS, RULES_DIAMONDS, RULES_HEARTS_SUIT, RULES_SPADES };

#define RULES_CARD(rank, suit) ((rules_card)((suit) * 13 + (rank)))
#define RULES_RANK(card) ((card) % 13)
#define RULES_SUIT(card) ((card) / 13)
#define RULES_BIT(card) (UINT64_C(1) << (card))
#define RULES_SUIT_MASK(suit) (UINT64_C(0x1fff) << ((suit) * 13))
#define RULES_ALL_CARDS ((UINT64_C(1) << 52) - 1)

/* Parse one card, leniently (turn-log.md §1): rank 2-9 T J Q K A or "10", then suit
 * C D H S or one of the symbols ♣ ♦ ♥ ♠ (UTF-8); letters in either case. The whole of
 * `s[0..len)` must be the card. Returns false if it is not a card. */
bool rules_card_parse(const char *s, size_t len, rules_card *out);

/* Canonical text of a card ("QS", "TH") into `out`, which receives 3 bytes with the NUL. */
void rules_card_format(rules_card c, char out[3]);

/* The room rules_cards_json needs: every card of a set of 64 bits ('?' past the deck). */
#define RULES_CARDS_JSON_MAX (2 + 5 * 64)

/* The cards of `mask` as a JSON array's text, lowest first: ["2C","AS"] (out has
 * RULES_CARDS_JSON_MAX bytes; no NUL). Its length. */
size_t rules_cards_json(uint64_t mask, char *out);

/* Number of cards in a set. */
static inline int rules_popcount(uint64_t mask)
{
    return __builtin_popcountll(mask);
}

/* ---- Moves and their notation -------------------------------------------------------------- */

enum rules_verb {
    RULES_RESIGN,
    RULES_PASS,     /* hearts: pass C C C */
    RULES_PLAY,     /* play C */
    RULES_MOON,     /* hearts: moon add | moon subtract (arg 0 | 1) */
    RULES_LEAD,     /* snag: lead C */
    RULES_TAKE,     /* snag: take C */
    RULES_STAY,     /* horse-thief */
    RULES_DROP,     /* horse-thief */
    RULES_DISCARD,  /* horse-thief: discard + 0..3 cards */
    RULES_MOVE,     /* speed: move C */
    RULES_FLIP,     /* speed: flip N (arg = column 1..5) */
    RULES_READY,    /* speed */
    RULES_NVERBS
};

/* The verb's canonical word ("pass"). Never NULL. */
const char *rules_verb_name(enum rules_verb v);

/* A parsed move. `cards` is the set named by pass/discard and `ncards` how many cards the
 * text named (more than popcount(cards) when a card was named twice). `card` is the card of
 * play/lead/take/move. `arg` is the column of flip, or 0 add / 1 subtract for moon. */
struct rules_move {
    uint8_t verb;
    uint8_t card;
    uint8_t arg;
    uint8_t ncards;
    uint64_t cards;
};

enum { RULES_MOON_ADD_ARG = 0, RULES_MOON_SUBTRACT_ARG = 1 };

/* Parse one line of move text (turn-log.md §1): case-insensitive, surrounding white space
 * ignored, arguments separated by single spaces, `10` for T, suit symbols for letters.
 * Parsing knows no game: whether the verb belongs to a game is the game's to say.
 * Returns false with ERR_ILLEGAL/"bad_notation" and the reason when the text is not a move. */
bool rules_move_parse(const char *text, size_t len, struct rules_move *out, struct err *e);

/* Write the canonical text of `m` ("pass 2C 7D TH") into buf (NUL-terminated, truncated to
 * `size`). Returns the length the full text has, as snprintf does. 200 bytes always suffice. */
size_t rules_move_format(const struct rules_move *m, char *buf, size_t size);

#define RULES_MOVE_TEXT_MAX 200

/* ---- Games and options --------------------------------------------------------------------- */

enum rules_game_id {
    RULES_GAME_HEARTS,
    RULES_GAME_HORSESHOE,
    RULES_GAME_SNAG,
    RULES_GAME_HORSE_THIEF,
    RULES_GAME_SPEED,
    RULES_NGAMES
};

/* The game's name as the log spells it ("horse-thief"); NULL if `g` is out of range. */
const char *rules_game_name(enum rules_game_id g);

/* Every game's name as the list of a sentence, "hearts, horseshoe, snag, horse-thief or
 * speed", for the errors that say which games there are: written to out[size] (cut to fit,
 * size > 0) and returned. */
const char *rules_game_list(char *out, size_t size);

/* Find a game by its exact log name. Returns false for an unknown name, or for a game
 * this build does not implement. */
bool rules_game_lookup(const char *name, enum rules_game_id *out);

/* Whether every seat of the game may act at any time, moves applied in arrival order
 * (Speed), rather than in turns or simultaneous phases. */
bool rules_game_realtime(enum rules_game_id g);

/* Whether the lowest total ranks first (Hearts). */
bool rules_game_low_wins(enum rules_game_id g);

enum rules_moon { RULES_MOON_ADD, RULES_MOON_SUBTRACT, RULES_MOON_CHOOSE };

/* The moon option's word ("add"); NULL if out of range. */
const char *rules_moon_name(enum rules_moon m);

struct rules_options {
    int seats;
    int64_t target;
    int moon;          /* enum rules_moon; Hearts only */
    int first_dealer;
};

/* The game's defaults for every option (rules.md). */
void rules_options_default(enum rules_game_id g, struct rules_options *o);

/* Whether `key` is an option of game `g` ("seats", "target", "first_dealer", and "moon"
 * for Hearts; two-seat games know "seats" too and accept only 2). */
bool rules_option_known(enum rules_game_id g, const char *key);

/* Check option values against the game. Returns false with ERR_INVALID/"bad_option". */
bool rules_options_check(enum rules_game_id g, const struct rules_options *o, struct err *e);

/* ---- Game states ----------------------------------------------------------------------------- */

#include "rules-games.h"

struct rules_state {
    uint8_t game;          /* enum rules_game_id */
    uint8_t nseats;
    uint8_t moon;          /* enum rules_moon */
    uint8_t first_dealer;
    int8_t resigned;       /* the seat that resigned, or -1 */
    bool over;             /* the match is over: every further event is illegal */
    uint16_t reserved;
    int64_t target;
    uint32_t hands_done;   /* completed hands (Speed: completed games, drawn ones included) */
    uint32_t reserved2;
    int32_t totals[RULES_MAX_SEATS];       /* match points (Speed: games won) */
    int32_t hand_scores[RULES_MAX_SEATS];  /* what each seat scored in the last completed hand */
    union {
        struct rules_hearts hearts;
        struct rules_horseshoe horseshoe;
        struct rules_snag snag;
        struct rules_horse_thief horse_thief;
        struct rules_speed speed;
    } g;
};

enum rules_due { RULES_DUE_NONE, RULES_DUE_DEAL, RULES_DUE_SHUFFLE };

/* Start a match: no deal has happened yet, so a deal is due. Options must have passed
 * rules_options_check. */
bool rules_init(struct rules_state *st, enum rules_game_id g, const struct rules_options *o,
                struct err *e);

/* Which chance event the match waits for, if any. */
enum rules_due rules_due(const struct rules_state *st);

/* The cards a due chance event shuffles, in the order §5 of turn-log.md shuffles them:
 * the canonical deck for a deal, the pile bottom to top for a Speed shuffle. Writes them
 * into `out` and returns how many (0 when nothing is due). */
int rules_chance_source(const struct rules_state *st, rules_card out[RULES_NCARDS]);

/* Apply a deal or shuffle of `n` cards, top of the deck first. Fails with ERR_INVALID when
 * no chance event is due ("not_due"), when it is of the wrong kind, or when the cards are
 * not those of rules_chance_source ("bad_deal"). The state is unchanged on failure. */
bool rules_chance(struct rules_state *st, enum rules_due kind, const rules_card *cards, int n,
                  struct err *e);

/* Apply `seat`'s move. Fails with ERR_ILLEGAL, a stable tag and a precise reason when the
 * move is not legal now; the state is then unchanged. `resign` is legal for any seat until
 * the match is over. */
bool rules_apply(struct rules_state *st, int seat, const struct rules_move *m, struct err *e);

#define RULES_MAX_LEGAL 1024

/* Every legal move of `seat` now, `resign` left out, in canonical order (by verb, then by
 * cards in deck order). Writes at most `max` moves and returns how many there are. */
int rules_legal(const struct rules_state *st, int seat, struct rules_move *out, int max);

/* The seats that have a legal move other than resign now, as a bit mask (bit s = seat s).
 * Empty when the match is over and while a chance event is due. */
uint32_t rules_to_move(const struct rules_state *st);

/* The match result (turn-log.md §3) without the hand history, which the caller collects
 * from hands_done and hand_scores as it applies events. */
struct rules_result {
    bool finished;
    int nseats;
    int resigned;                      /* seat, or -1 */
    int32_t totals[RULES_MAX_SEATS];
    int nplaces;
    uint8_t place_size[RULES_MAX_SEATS];  /* seats sharing each place, first place first */
    uint8_t order[RULES_MAX_SEATS];       /* seats place by place, ascending within a place */
    uint32_t to_move;
};

void rules_result(const struct rules_state *st, struct rules_result *r);

/* Ranking helper shared by the games: places by totals (ascending when `low_wins`), equal
 * totals sharing a place, the resigned seat (if any, else -1) last on its own. */
void rules_rank(const int32_t *totals, int n, bool low_wins, int resigned, struct rules_result *r);

/* ---- What a seat may see ----------------------------------------------------------------- */

/* A view is emitted, not returned: the game walks what `seat` may see and calls these
 * (turn-log.md §6). Inside an array `key` is NULL. Every card goes through `card`, so a
 * checker can collect them. The JSON edge implements this with jansson. */
struct rules_emit {
    void (*object_begin)(void *ctx, const char *key);
    void (*object_end)(void *ctx);
    void (*array_begin)(void *ctx, const char *key);
    void (*array_end)(void *ctx);
    void (*integer)(void *ctx, const char *key, int64_t v);
    void (*boolean)(void *ctx, const char *key, bool v);
    void (*string)(void *ctx, const char *key, const char *s);
    void (*null)(void *ctx, const char *key);
    void (*card)(void *ctx, const char *key, rules_card c);
    /* A set of cards as an array, lowest first (optional: else array_begin, a card each,
     * array_end, as rules_emit_cards does). */
    void (*cards)(void *ctx, const char *key, uint64_t mask);
};

/* The viewer that sees everything: for replaying a finished match, whose whole log is
 * public. Never use it for a running match. */
#define RULES_SEAT_ALL (-2)

/* Emit the members of the view object of `seat` (0..n-1, -1 for a spectator, or
 * RULES_SEAT_ALL): what the rules let that seat see now. Once the match is over
 * everything is public. */
void rules_view(const struct rules_state *st, int seat, const struct rules_emit *em, void *ctx);

/* ---- How visible a move is (turn-log.md §6) --------------------------------------------------- */

/* A log served during a match is redacted per viewer. Most moves are open. A secret move
 * (§0 "Secret moves") is seen only by its mover until its phase resolves; after that a
 * RULES_SECRET move is open, while a RULES_SECRET_CARDS move shows its cards only to the
 * mover and to `receiver` (a Hearts pass) and to the others only their count (a Horse
 * Thief discard has no receiver). Once the match is over everything is public. */
enum rules_secrecy { RULES_OPEN, RULES_SECRET, RULES_SECRET_CARDS };

struct rules_secrecy_info {
    uint8_t kind;     /* enum rules_secrecy */
    int8_t receiver;  /* RULES_SECRET_CARDS: the seat that receives the cards, or -1 */
};

/* How visible `seat`'s move `m` is, judged on the state before it is applied (the move
 * should be legal there; anything else is reported open). */
void rules_move_secrecy(const struct rules_state *before, int seat, const struct rules_move *m,
                        struct rules_secrecy_info *out);

/* The seats whose secret submission in the current phase is still hidden from the others
 * because the phase has not resolved, as a bit mask. A secret move is resolved from the
 * first state after it in which its seat's bit is clear. */
uint32_t rules_secret_pending(const struct rules_state *st);

#endif
