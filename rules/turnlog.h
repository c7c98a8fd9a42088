/* turnlog.h - the `cardpost-log/1` file and what is done with it (turn-log.md §2-§5):
 * reading and writing logs, replaying and verifying them, the result object, and the
 * verifiable seed-to-deck derivation. This sits beside the pure engine, not in it: it uses
 * jansson (JSON) and OpenSSL's libcrypto (SHA-256, random bytes), and it allocates.
 */
#ifndef CARDPOST_TURNLOG_H
#define CARDPOST_TURNLOG_H

#include <jansson.h>

#include "jw.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "rules.h"

/* ---- Verifiable shuffles (§5) ------------------------------------------------------------ */

#define TLOG_SEED_BYTES 32
#define TLOG_HEX_BYTES 65 /* 64 hex digits and the NUL */

/* Fill `seed` from the operating system's random source. Fails with ERR_IO. */
bool tlog_seed_random(uint8_t seed[TLOG_SEED_BYTES], struct err *e);

/* Lower-case hex of `n` bytes into `out` (2n + 1 bytes). */
void tlog_hex(const uint8_t *bytes, size_t n, char *out);

/* Parse exactly 64 hex digits (either case) into 32 bytes. */
bool tlog_unhex32(const char *hex, size_t len, uint8_t out[TLOG_SEED_BYTES]);

/* The published commitment: hex(sha256(seed)). */
void tlog_commitment(const uint8_t seed[TLOG_SEED_BYTES], char out[TLOG_HEX_BYTES]);

/* Shuffle `a[0..n)` in place as chance event number `k` of a match with this seed does:
 * Fisher-Yates from the top index down, driven by the SHA-256 stream of §5. */
void tlog_shuffle(const uint8_t seed[TLOG_SEED_BYTES], uint32_t k, rules_card *a, int n);

/* The chance event `k` that `st` is waiting for, derived from the seed: its cards, top of
 * the deck first, into `out`. Returns the count (0 when nothing is due). */
int tlog_derive(const uint8_t seed[TLOG_SEED_BYTES], uint32_t k, const struct rules_state *st,
                rules_card out[RULES_NCARDS]);

/* ---- Options ------------------------------------------------------------------------------ */

/* Read a game's options from JSON (turn-log.md §2): a missing or null object means all
 * defaults; an unknown key, a wrong type or a value out of range fails (ERR_INVALID,
 * "bad_option"). The result has passed rules_options_check. */
bool tlog_options_parse(enum rules_game_id g, const json_t *opts, struct rules_options *o,
                        struct err *e);

/* Every option of the game, explicit (new reference). */
json_t *tlog_options_json(enum rules_game_id g, const struct rules_options *o);

/* ---- The log ------------------------------------------------------------------------------- */

enum tlog_kind { TLOG_DEAL, TLOG_SHUFFLE, TLOG_MOVE };

struct tlog_event {
    uint8_t kind;          /* enum tlog_kind */
    bool automatic;        /* "auto": true */
    uint8_t ncards;        /* deal, shuffle */
    int64_t seat;          /* move: as written; range is checked by replay */
    char *move;            /* move: the log's text, owned, NUL-terminated */
    size_t move_len;       /* the text may hold a NUL; this is its real length */
    rules_card cards[RULES_NCARDS];
};

struct tlog {
    enum rules_game_id game;
    struct rules_options options;
    json_t *meta;          /* players, seed, seed_commitment and other keys, as read (owned) */
    json_t *result;        /* the "result" claim, or NULL (owned) */
    size_t nevents, cap;
    struct tlog_event *events;
};

/* An empty log of a new match, for writing. NULL on bad options (e) or no memory. */
struct tlog *tlog_create(enum rules_game_id g, const struct rules_options *o, struct err *e);

void tlog_destroy(struct tlog *log);

/* Append a seat's move (text copied as given) or a chance event. No legality check:
 * that is replay's job. Fails only without memory. */
bool tlog_append_move(struct tlog *log, int seat, const char *text, bool automatic,
                      struct err *e);
bool tlog_append_chance(struct tlog *log, enum tlog_kind kind, const rules_card *cards, int n,
                        struct err *e);

/* Drop the events from `n` on (undoing appends that could not be stored). */
void tlog_truncate(struct tlog *log, size_t n);

/* Set a metadata key (players, seed, seed_commitment, ...); takes a reference to `value`. */
bool tlog_set_meta(struct tlog *log, const char *key, json_t *value);

/* One event as the log writes it (new reference). */
json_t *tlog_event_json(const struct tlog_event *ev);

/* The log as a `cardpost-log/1` JSON object (new reference), with `result` if given. */
json_t *tlog_to_json(const struct tlog *log, json_t *result);

/* The log as `viewer` (a seat, or -1 for a spectator) may see it (turn-log.md §6), as a
 * JSON object (new reference). While the match runs: no seed, no deals or shuffles, and
 * secret moves redacted — an unresolved one (seen by others) becomes
 * {"seat": s, "move": null, "secret": true}, a resolved pass or discard seen by a seat
 * that may not see its cards becomes {"seat": s, "move": "pass", "cards": 3}. Every event
 * carries "seq", its index in the full log. Once the match is over: the whole log. NULL
 * when the log does not replay. */
json_t *tlog_redacted_json(const struct tlog *log, int viewer);

/* ---- Failures, as the command-line contract prints them (§4) ------------------------------- */

struct tlog_failure {
    int exit;              /* 1: an illegal event or a false claim; 2: not a valid log */
    long index;            /* event index, or -1 for null */
    bool has_seat;
    int64_t seat;
    const char *move;      /* borrowed from the log, or NULL */
    size_t move_len;
    const char *code;      /* static, stable: "must_follow_suit", "malformed", ... */
    char message[200];
};

/* {"error": {"index", "seat", "move", "code", "message"}} (new reference). */
json_t *tlog_failure_json(const struct tlog_failure *f);

/* Parse a log from `len` bytes of JSON. NULL with f->exit = 2 when it is not a valid log. */
struct tlog *tlog_parse(const char *buf, size_t len, struct tlog_failure *f);

/* Read a whole file ("-" for standard input) into a new NUL-terminated buffer. NULL with
 * f->exit = 2 when it cannot be read. The caller frees. */
char *tlog_read_file(const char *path, size_t *len, struct tlog_failure *f);

/* ---- Replay and verification ------------------------------------------------------------- */

struct tlog_replay {
    struct rules_state state;
    size_t nhands;                           /* completed hands (Speed: games) */
    int32_t (*hands)[RULES_MAX_SEATS];       /* each one's scores (owned) */
    size_t cap;
};

void tlog_replay_finish(struct tlog_replay *r);

/* Make `to` an independent copy of `from` (hand history included). */
bool tlog_replay_copy(struct tlog_replay *to, const struct tlog_replay *from, struct err *e);

/* Replay every event of `log` into `r` (which need not be initialised; finish it after,
 * whatever the outcome). With `verify`, first check sha256(seed) == seed_commitment and
 * then that every chance event is the one the seed derives. A present `result` claim is
 * checked against the computed result. Returns false with `f` filled on the first failure;
 * `r` then holds the state before the failing event. */
bool tlog_replay(const struct tlog *log, bool verify, struct tlog_replay *r,
                 struct tlog_failure *f);

/* Apply one more seat move to a replay, keeping the hand history. */
bool tlog_replay_move(struct tlog_replay *r, int seat, const struct rules_move *m, struct err *e);

/* Apply one more chance event to a replay. */
bool tlog_replay_chance(struct tlog_replay *r, enum rules_due kind, const rules_card *cards,
                        int n, struct err *e);

/* The result object of §3 for the replay's state and hand history (new reference). */
json_t *tlog_result_json(const struct tlog_replay *r);

/* A set of seats (bit s = seat s) as a JSON array in ascending order (new reference). */
json_t *tlog_seats_json(uint32_t mask);

/* The legal moves of `seat` (none for -1) in canonical notation, resign left out, as a JSON
 * array (new reference). Thread-safe: it allocates its own move list. */
json_t *tlog_moves_json(const struct rules_state *st, int seat);

/* {"to_move": [...], "legal": {"SEAT": [...]}} for the replay's state (new reference). */
json_t *tlog_legal_json(const struct rules_state *st);

/* The view of `seat` (-1: spectator) as a JSON object (new reference): what
 * rules_view emits, cards as canonical text. */
json_t *tlog_view_json(const struct rules_state *st, int seat);

/* The same two as text, written as a member `key` (NULL in an array) of `w`: the bytes
 * json_dumps(JSON_COMPACT) makes of tlog_view_json and tlog_moves_json, without the tree. */
void tlog_view_write(struct jw *w, const char *key, const struct rules_state *st, int seat);
void tlog_moves_write(struct jw *w, const char *key, const struct rules_state *st, int seat);
/* All of them when there are at most `all`, else the first `few` (in their order); returns
 * how many there are in all. */
int tlog_moves_write_first(struct jw *w, const char *key, const struct rules_state *st, int seat,
                           int all, int few);
/* And of tlog_options_json and tlog_seats_json. */
void tlog_options_write(struct jw *w, const char *key, enum rules_game_id g,
                        const struct rules_options *o);
void tlog_seats_write(struct jw *w, const char *key, uint32_t mask);
/* The members of tlog_event_json's object, written into w's open object (the caller may add
 * more, as a stream's "seq", before closing it). */
void tlog_event_members(struct jw *w, const struct tlog_event *ev);

#endif
