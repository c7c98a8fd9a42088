/* rules-games.h - the flat state of each game, members of the union in struct rules_state.
 *
 * Included by rules.h only. Plain value structs with no pointers: tests and the service
 * may read them, only the engine writes them. Each game's file documents its fields.
 */
#ifndef CARDPOST_RULES_GAMES_H
#define CARDPOST_RULES_GAMES_H

#include <stdint.h>

/* Hearts (rules.md §1). */
enum rules_hearts_phase {
    RULES_HEARTS_DEAL,   /* a deal is due */
    RULES_HEARTS_PASS,   /* secret, simultaneous passes */
    RULES_HEARTS_PLAY,   /* tricks */
    RULES_HEARTS_MOON,   /* moon=choose: the shooter picks add or subtract */
    RULES_HEARTS_OVER,
};

enum rules_hearts_pass { RULES_PASS_LEFT, RULES_PASS_RIGHT, RULES_PASS_ACROSS, RULES_PASS_HOLD };

struct rules_hearts {
    uint8_t phase;        /* enum rules_hearts_phase */
    uint8_t dealer;
    uint8_t hand_size;    /* cards dealt to each seat: floor(52 / n) */
    uint8_t pass_dir;     /* enum rules_hearts_pass of this hand */
    uint8_t passed;       /* bit mask of seats whose pass has arrived */
    uint8_t leader;       /* seat leading the current trick */
    uint8_t ntrick;       /* cards in the current trick */
    uint8_t trick_no;     /* tricks completed this hand */
    uint8_t broken;       /* a heart was played to an earlier trick of this hand */
    uint8_t hole_owner;   /* seat that took the hole, or RULES_NO_CARD */
    uint8_t shooter;      /* the seat that took all 26 (moon phases), or RULES_NO_CARD */
    uint8_t first_lead;   /* the card that must lead the first trick */
    uint8_t leaders[18];  /* leader of each trick of this hand */
    uint8_t played[52];   /* cards played this hand, trick after trick, in play order */
    uint64_t hands[6];
    uint64_t taken[6];    /* cards each seat took in tricks, the hole included once taken */
    uint64_t passes[6];   /* the pass each seat submitted this hand */
    uint64_t received[6]; /* the cards each seat received in the exchange */
    uint64_t hole;
};

/* The other games add their structs here (issue 3). */

/* Snag (rules.md §3). */
enum rules_snag_phase {
    RULES_SNAG_DEAL,   /* a deal is due */
    RULES_SNAG_LEAD,   /* the leader moves a bar card to the table */
    RULES_SNAG_PLAY,   /* the other seat, then the leader, play a hand card */
    RULES_SNAG_TAKE,   /* the winner, then the loser, take a card of the trick */
    RULES_SNAG_OVER,
};

#define RULES_SNAG_BAR 5

struct rules_snag {
    uint8_t phase;        /* enum rules_snag_phase */
    uint8_t dealer;
    uint8_t leader;       /* seat leading the current trick */
    uint8_t trick_no;     /* tricks completed this hand (0..5) */
    uint8_t ntrick;       /* cards on the table in the current trick (0..3) */
    uint8_t ntaken;       /* takes made from the current trick (0..2) */
    uint8_t winner;       /* winner of the current trick, once it has three cards */
    uint8_t bar[RULES_SNAG_BAR];  /* card in slot i+1, RULES_NO_CARD once led */
    uint8_t trick[3];     /* bar card, second card (other seat), third card (leader) */
    uint8_t takes[2];     /* the cards taken from the current trick, in take order */
    uint64_t hands[2];
    uint64_t taken[2];    /* cards each seat took this hand (the last hand's, until a deal) */
    uint64_t unused;      /* deck positions 15-51: never seen until the match is over */
};
/* Horseshoe (rules.md §2). Two seats; a column is `column[seat][c][0]` (dealt face down)
 * under `column[seat][c][1]` (dealt face up), of which the lowest `height[seat][c]` remain:
 * the top remaining card is always face up, so a card is face down exactly when it is
 * `column[s][c][0]` with height 2. */
enum rules_horseshoe_phase {
    RULES_HORSESHOE_DEAL,  /* a deal is due */
    RULES_HORSESHOE_PLAY,  /* tricks */
    RULES_HORSESHOE_OVER,
};

struct rules_horseshoe {
    uint8_t phase;          /* enum rules_horseshoe_phase */
    uint8_t dealer;
    uint8_t leader;         /* L of the current trick; RULES_NO_CARD before the first deal */
    uint8_t ntrick;         /* cards in the current trick, 0..3 */
    uint8_t trick_no;       /* tricks completed this hand, 0..7 */
    uint8_t won[2];         /* tricks each seat won this hand */
    uint8_t leaders[7];     /* leader of each trick of this hand */
    uint8_t winners[7];     /* winner of each completed trick of this hand */
    uint8_t played[28];     /* cards played this hand, trick after trick, in play order */
    uint8_t column[2][4][2];
    uint8_t height[2][4];   /* cards left in each column: 2, 1 or 0 */
    uint64_t hands[2];
    uint64_t unused;        /* the 24 cards of the deal that are not used (deck positions 28-51) */
};
/* Horse Thief (rules.md §4). Seat sets are 16-bit masks (up to 10 seats). */
enum rules_horse_thief_phase {
    RULES_HT_DEAL,     /* a deal is due */
    RULES_HT_STAY,     /* secret, simultaneous stay or drop (trump is not spades) */
    RULES_HT_DISCARD,  /* secret, simultaneous discards of the staying seats (d > 0) */
    RULES_HT_PLAY,     /* five tricks among the staying seats */
    RULES_HT_OVER,
};

#define RULES_HT_TRICKS 5
#define RULES_HT_STOCK_MAX 36 /* 52 - 3 * 5 - 1: the stock with three seats */

struct rules_horse_thief {
    uint8_t phase;            /* enum rules_horse_thief_phase */
    uint8_t dealer;
    uint8_t draw_limit;       /* d = min(3, floor(52 / n) - 5) */
    uint8_t turn_up;          /* deck position 5n, or RULES_NO_CARD before the first deal */
    uint8_t trump;            /* the turn-up's suit */
    uint8_t turn_up_taken;    /* the dealer took the turn-up in the draw */
    uint8_t stay_resolved;    /* who stays is known (the stay phase resolved, or spades) */
    uint8_t discard_resolved; /* the discard phase of this hand resolved */
    uint8_t leader;           /* seat leading the current trick */
    uint8_t ntrick;           /* cards in the current trick */
    uint8_t trick_no;         /* tricks completed this hand */
    uint8_t stock_len;        /* cards in stock[] */
    uint8_t stock_next;       /* index in stock[] of the stock's top card */
    uint16_t submitted;       /* seats whose move of the current secret phase arrived */
    uint16_t stays;           /* seats that submitted `stay` (secret until resolved) */
    uint16_t staying;         /* seats in the hand, once stay_resolved */
    uint8_t tricks[10];       /* tricks each seat took this hand */
    uint8_t leaders[RULES_HT_TRICKS];      /* leader of each trick of this hand */
    uint8_t played[RULES_HT_TRICKS][10];   /* each trick's cards in play order */
    uint8_t stock[RULES_HT_STOCK_MAX];     /* deck positions 5n+1 ..., top first */
    uint64_t hands[10];
    uint64_t discards[10];    /* each seat's discard: pending in the phase, then out of play */
};

/* Speed (rules.md §5). Two seats; both act freely during play. */
enum rules_speed_phase {
    RULES_SPEED_DEAL,     /* a deal is due (before every game) */
    RULES_SPEED_PLAY,     /* the seats play, move, flip and declare ready */
    RULES_SPEED_SHUFFLE,  /* a draw found the deck empty: the pile's shuffle is due */
    RULES_SPEED_OVER,     /* the last game is decided: the match is over */
};

#define RULES_SPEED_COLUMNS 5
/* A column only ever shrinks, except that `move` puts one card into an empty column:
 * so no column holds more than the five cards column 5 is dealt. */
#define RULES_SPEED_COLUMN_MAX 5

struct rules_speed_column {
    uint8_t count;
    uint8_t up;        /* the top card is face up; every card under it is face down */
    uint8_t cards[RULES_SPEED_COLUMN_MAX];  /* bottom first: cards[count - 1] is the top */
};

struct rules_speed {
    uint8_t phase;     /* enum rules_speed_phase */
    uint8_t dealer;    /* dealer of the current (or, in the deal phase, the next) game */
    uint8_t drawer;    /* seat that makes the next draw */
    uint8_t ready;     /* bit mask of the seats that are ready */
    uint8_t played;    /* a triangle card went onto the pile since the deal or last reshuffle */
    uint8_t shuffles;  /* reshuffles in the current game */
    uint8_t npile;
    uint8_t ndeck;
    uint8_t pile[52];  /* bottom first: pile[npile - 1] is the top, face up */
    uint8_t deck[52];  /* top first, face down */
    struct rules_speed_column columns[2][RULES_SPEED_COLUMNS];  /* [seat][column 1..5 - 1] */
};

#endif
