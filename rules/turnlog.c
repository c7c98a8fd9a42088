/* turnlog.c - reading, writing and replaying `cardpost-log/1` files (turn-log.md §2-§4),
 * and the JSON shapes built from the engine: result, legal moves, failures, views.
 * jansson stays here, at the edge; the engine only ever sees structs.
 */
#include "turnlog.h"

#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Failures ------------------------------------------------------------------------------ */

static bool fail(struct tlog_failure *f, int exit_code, long index, const char *code,
                 const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static bool fail(struct tlog_failure *f, int exit_code, long index, const char *code,
                 const char *fmt, ...)
{
    f->exit = exit_code;
    f->index = index;
    f->has_seat = false;
    f->seat = 0;
    f->move = NULL;
    f->move_len = 0;
    f->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->message, sizeof f->message, fmt, ap);
    va_end(ap);
    return false;
}

json_t *tlog_failure_json(const struct tlog_failure *f)
{
    json_t *e = json_object();
    json_object_set_new(e, "index", f->index >= 0 ? json_integer(f->index) : json_null());
    json_object_set_new(e, "seat", f->has_seat ? json_integer(f->seat) : json_null());
    json_object_set_new(e, "move", f->move ? json_stringn(f->move, f->move_len) : json_null());
    json_object_set_new(e, "code", json_string(f->code ? f->code : "error"));
    json_object_set_new(e, "message", json_string(f->message));
    json_t *root = json_object();
    json_object_set_new(root, "error", e);
    return root;
}

/* ---- Building ------------------------------------------------------------------------------ */

struct tlog *tlog_create(enum rules_game_id g, const struct rules_options *o, struct err *e)
{
    if (!rules_game_name(g) || !rules_options_check(g, o, e))
        return NULL;
    struct tlog *log = calloc(1, sizeof *log);
    if (!log) {
        err_set(e, ERR_NOMEM, "nomem", "out of memory");
        return NULL;
    }
    log->game = g;
    log->options = *o;
    log->meta = json_object();
    return log;
}

void tlog_destroy(struct tlog *log)
{
    if (!log)
        return;
    for (size_t i = 0; i < log->nevents; i++)
        free(log->events[i].move);
    free(log->events);
    json_decref(log->meta);
    json_decref(log->result);
    free(log);
}

static struct tlog_event *push(struct tlog *log)
{
    if (log->nevents == log->cap) {
        size_t cap = log->cap ? log->cap * 2 : 64;
        struct tlog_event *ev = realloc(log->events, cap * sizeof *ev);
        if (!ev)
            return NULL;
        log->events = ev;
        log->cap = cap;
    }
    struct tlog_event *ev = &log->events[log->nevents++];
    memset(ev, 0, sizeof *ev);
    return ev;
}

bool tlog_append_move(struct tlog *log, int seat, const char *text, bool automatic,
                      struct err *e)
{
    char *copy = strdup(text);
    struct tlog_event *ev = copy ? push(log) : NULL;
    if (!ev) {
        free(copy);
        return err_set(e, ERR_NOMEM, "nomem", "out of memory");
    }
    ev->kind = TLOG_MOVE;
    ev->seat = seat;
    ev->automatic = automatic;
    ev->move = copy;
    ev->move_len = strlen(copy);
    return true;
}

bool tlog_append_chance(struct tlog *log, enum tlog_kind kind, const rules_card *cards, int n,
                        struct err *e)
{
    if (n < 0 || n > RULES_NCARDS)
        return err_set(e, ERR_INVALID, "bad_deal", "a chance event holds 0 to 52 cards");
    struct tlog_event *ev = push(log);
    if (!ev)
        return err_set(e, ERR_NOMEM, "nomem", "out of memory");
    ev->kind = (uint8_t)kind;
    ev->ncards = (uint8_t)n;
    memcpy(ev->cards, cards, (size_t)n);
    return true;
}

void tlog_truncate(struct tlog *log, size_t n)
{
    while (log->nevents > n)
        free(log->events[--log->nevents].move);
}

bool tlog_set_meta(struct tlog *log, const char *key, json_t *value)
{
    return json_object_set(log->meta, key, value) == 0;
}

static json_t *cards_json(const rules_card *cards, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++) {
        char c[3];
        rules_card_format(cards[i], c);
        json_array_append_new(a, json_string(c));
    }
    return a;
}

json_t *tlog_options_json(enum rules_game_id g, const struct rules_options *o)
{
    json_t *j = json_object();
    json_object_set_new(j, "seats", json_integer(o->seats));
    json_object_set_new(j, "target", json_integer(o->target));
    if (rules_option_known(g, "moon"))
        json_object_set_new(j, "moon", json_string(rules_moon_name((enum rules_moon)o->moon)));
    json_object_set_new(j, "first_dealer", json_integer(o->first_dealer));
    return j;
}

void tlog_options_write(struct jw *w, const char *key, enum rules_game_id g,
                        const struct rules_options *o)
{
    jw_object_begin(w, key);
    jw_int(w, "seats", o->seats);
    jw_int(w, "target", o->target);
    if (rules_option_known(g, "moon"))
        jw_string(w, "moon", rules_moon_name((enum rules_moon)o->moon));
    jw_int(w, "first_dealer", o->first_dealer);
    jw_object_end(w);
}

static json_t *options_json(const struct tlog *log)
{
    return tlog_options_json(log->game, &log->options);
}

json_t *tlog_event_json(const struct tlog_event *ev)
{
    json_t *j = json_object();
    switch (ev->kind) {
    case TLOG_DEAL:
        json_object_set_new(j, "deal", cards_json(ev->cards, ev->ncards));
        break;
    case TLOG_SHUFFLE:
        json_object_set_new(j, "shuffle", cards_json(ev->cards, ev->ncards));
        break;
    default:
        json_object_set_new(j, "seat", json_integer(ev->seat));
        json_object_set_new(j, "move", json_stringn(ev->move, ev->move_len));
        if (ev->automatic)
            json_object_set_new(j, "auto", json_true());
        break;
    }
    return j;
}

void tlog_event_members(struct jw *w, const struct tlog_event *ev)
{
    switch (ev->kind) {
    case TLOG_DEAL:
    case TLOG_SHUFFLE:
        jw_array_begin(w, ev->kind == TLOG_DEAL ? "deal" : "shuffle");
        for (int i = 0; i < ev->ncards; i++) {
            char c[3];
            rules_card_format(ev->cards[i], c);
            jw_plain(w, NULL, c, strlen(c));
        }
        jw_array_end(w);
        break;
    default:
        jw_int(w, "seat", ev->seat);
        jw_stringn(w, "move", ev->move, ev->move_len);
        if (ev->automatic)
            jw_bool(w, "auto", true);
        break;
    }
}

json_t *tlog_to_json(const struct tlog *log, json_t *result)
{
    json_t *j = json_object();
    json_object_set_new(j, "format", json_string("cardpost-log/1"));
    json_object_set_new(j, "game", json_string(rules_game_name(log->game)));
    json_object_set_new(j, "options", options_json(log));
    const char *key;
    json_t *value;
    json_object_foreach(log->meta, key, value) json_object_set(j, key, value);
    json_t *events = json_array();
    for (size_t i = 0; i < log->nevents; i++)
        json_array_append_new(events, tlog_event_json(&log->events[i]));
    json_object_set_new(j, "events", events);
    if (result)
        json_object_set(j, "result", result);
    return j;
}

/* ---- Reading ------------------------------------------------------------------------------- */

/* Whether a JSON string is exactly `s` (it may hold a NUL, which never matches). */
static bool str_is(const json_t *v, const char *s)
{
    return json_is_string(v) && json_string_length(v) == strlen(s) &&
           memcmp(json_string_value(v), s, strlen(s)) == 0;
}

bool tlog_options_parse(enum rules_game_id g, const json_t *opts, struct rules_options *o,
                        struct err *e)
{
    rules_options_default(g, o);
    if (!opts || json_is_null(opts))
        return true;
    if (!json_is_object(opts))
        return err_set(e, ERR_INVALID, "bad_option", "options must be an object");
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)opts, key, v) {
        if (!rules_option_known(g, key))
            return err_set(e, ERR_INVALID, "bad_option", "unknown option '%s' for %s", key,
                           rules_game_name(g));
    }
    if ((v = json_object_get(opts, "seats"))) {
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 64)
            return err_set(e, ERR_INVALID, "bad_option", "seats must be a small integer");
        o->seats = (int)json_integer_value(v);
    }
    if ((v = json_object_get(opts, "target"))) {
        if (!json_is_integer(v) || json_integer_value(v) < 1)
            return err_set(e, ERR_INVALID, "bad_option", "target must be an integer >= 1");
        o->target = json_integer_value(v);
    }
    if ((v = json_object_get(opts, "first_dealer"))) {
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 64)
            return err_set(e, ERR_INVALID, "bad_option", "first_dealer must be a seat number");
        o->first_dealer = (int)json_integer_value(v);
    }
    if ((v = json_object_get(opts, "moon"))) {
        if (str_is(v, "add"))
            o->moon = RULES_MOON_ADD;
        else if (str_is(v, "subtract"))
            o->moon = RULES_MOON_SUBTRACT;
        else if (str_is(v, "choose"))
            o->moon = RULES_MOON_CHOOSE;
        else
            return err_set(e, ERR_INVALID, "bad_option", "moon must be add, subtract or choose");
    }
    return rules_options_check(g, o, e);
}

static bool parse_options(struct tlog *log, json_t *opts, struct tlog_failure *f)
{
    struct err e;
    if (!tlog_options_parse(log->game, opts, &log->options, &e))
        return fail(f, 2, -1, "bad_option", "%s", e.msg);
    return true;
}

static bool parse_cards(json_t *arr, struct tlog_event *ev, long index, const char *what,
                        struct tlog_failure *f)
{
    if (!json_is_array(arr))
        return fail(f, 2, index, "bad_deal", "a %s is an array of cards", what);
    size_t n = json_array_size(arr);
    if (n > RULES_NCARDS)
        return fail(f, 2, index, "bad_deal", "a %s holds at most 52 cards", what);
    uint64_t seen = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *c = json_array_get(arr, i);
        rules_card card;
        if (!json_is_string(c) ||
            !rules_card_parse(json_string_value(c), json_string_length(c), &card))
            return fail(f, 2, index, "bad_deal", "%s card %zu is not a card", what, i);
        if (seen & RULES_BIT(card))
            return fail(f, 2, index, "bad_deal", "the %s holds a card twice", what);
        seen |= RULES_BIT(card);
        ev->cards[i] = card;
    }
    ev->ncards = (uint8_t)n;
    if (ev->kind == TLOG_DEAL && n != RULES_NCARDS)
        return fail(f, 2, index, "bad_deal", "a deal is a permutation of the 52 cards, not %zu",
                    n);
    return true;
}

static bool parse_event(json_t *j, struct tlog_event *ev, long index, struct tlog_failure *f)
{
    if (!json_is_object(j))
        return fail(f, 2, index, "malformed_event", "an event is a JSON object");
    json_t *deal = json_object_get(j, "deal");
    json_t *shuffle = json_object_get(j, "shuffle");
    json_t *seat = json_object_get(j, "seat");
    json_t *move = json_object_get(j, "move");
    int kinds = (deal != NULL) + (shuffle != NULL) + (seat != NULL || move != NULL);
    if (kinds != 1)
        return fail(f, 2, index, "malformed_event",
                    "an event is exactly one of a deal, a shuffle, or a seat's move");
    if (deal) {
        ev->kind = TLOG_DEAL;
        return parse_cards(deal, ev, index, "deal", f);
    }
    if (shuffle) {
        ev->kind = TLOG_SHUFFLE;
        return parse_cards(shuffle, ev, index, "shuffle", f);
    }
    ev->kind = TLOG_MOVE;
    if (!seat || !json_is_integer(seat))
        return fail(f, 2, index, "malformed_event", "a move event needs an integer \"seat\"");
    if (!move || !json_is_string(move))
        return fail(f, 2, index, "malformed_event", "a move event needs a string \"move\"");
    json_t *automatic = json_object_get(j, "auto");
    if (automatic && !json_is_boolean(automatic))
        return fail(f, 2, index, "malformed_event", "\"auto\" is true or false");
    ev->seat = json_integer_value(seat);
    ev->automatic = automatic && json_is_true(automatic);
    ev->move_len = json_string_length(move);
    ev->move = malloc(ev->move_len + 1);
    if (!ev->move)
        return fail(f, 2, index, "nomem", "out of memory");
    memcpy(ev->move, json_string_value(move), ev->move_len + 1);
    return true;
}

struct tlog *tlog_parse(const char *buf, size_t len, struct tlog_failure *f)
{
    json_error_t jerr;
    struct tlog *log = NULL;
    json_t *root = json_loadb(buf, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
    if (!root) {
        fail(f, 2, -1, "bad_json", "not valid JSON: %s (line %d, column %d)", jerr.text,
             jerr.line, jerr.column);
        return NULL;
    }
    if (!json_is_object(root)) {
        fail(f, 2, -1, "malformed", "a log is a JSON object");
        goto out;
    }
    if (!str_is(json_object_get(root, "format"), "cardpost-log/1")) {
        fail(f, 2, -1, "bad_format", "\"format\" must be \"cardpost-log/1\"");
        goto out;
    }
    json_t *game = json_object_get(root, "game");
    enum rules_game_id g;
    if (!json_is_string(game) || strlen(json_string_value(game)) != json_string_length(game) ||
        !rules_game_lookup(json_string_value(game), &g)) {
        char list[160];
        fail(f, 2, -1, "unknown_game", "\"game\" must name a game: %s",
             rules_game_list(list, sizeof list));
        goto out;
    }
    json_t *events = json_object_get(root, "events");
    if (!json_is_array(events)) {
        fail(f, 2, -1, "malformed", "\"events\" must be an array");
        goto out;
    }
    json_t *result = json_object_get(root, "result");
    if (result && !json_is_null(result) && !json_is_object(result)) {
        fail(f, 2, -1, "malformed", "\"result\" must be an object");
        goto out;
    }

    log = calloc(1, sizeof *log);
    if (!log) {
        fail(f, 2, -1, "nomem", "out of memory");
        goto out;
    }
    log->game = g;
    log->meta = json_object();
    if (!parse_options(log, json_object_get(root, "options"), f))
        goto bad;
    if (result && json_is_object(result))
        log->result = json_incref(result);

    const char *key;
    json_t *value;
    json_object_foreach(root, key, value) {
        if (strcmp(key, "format") && strcmp(key, "game") && strcmp(key, "options") &&
            strcmp(key, "events") && strcmp(key, "result"))
            json_object_set(log->meta, key, value);
    }

    size_t n = json_array_size(events);
    for (size_t i = 0; i < n; i++) {
        struct tlog_event *ev = push(log);
        if (!ev) {
            fail(f, 2, -1, "nomem", "out of memory");
            goto bad;
        }
        if (!parse_event(json_array_get(events, i), ev, (long)i, f))
            goto bad;
    }
    goto out;
bad:
    tlog_destroy(log);
    log = NULL;
out:
    json_decref(root);
    return log;
}

char *tlog_read_file(const char *path, size_t *len, struct tlog_failure *f)
{
    FILE *fp = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!fp) {
        fail(f, 2, -1, "unreadable", "cannot open %s: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (n + 1 >= cap) {
            char *bigger = realloc(buf, cap * 2);
            if (!bigger) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = bigger;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, fp);
        n += got;
        if (got == 0)
            break;
    }
    bool error = ferror(fp);
    if (fp != stdin)
        fclose(fp);
    if (!buf || error) {
        free(buf);
        fail(f, 2, -1, "unreadable", "cannot read %s", path);
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

/* ---- Replay -------------------------------------------------------------------------------- */

void tlog_replay_finish(struct tlog_replay *r)
{
    if (!r)
        return;
    free(r->hands);
    r->hands = NULL;
    r->nhands = r->cap = 0;
}

bool tlog_replay_copy(struct tlog_replay *to, const struct tlog_replay *from, struct err *e)
{
    *to = *from;
    to->hands = NULL;
    to->cap = from->nhands;
    if (from->nhands) {
        to->hands = malloc(from->nhands * sizeof *to->hands);
        if (!to->hands) {
            to->nhands = to->cap = 0;
            return err_set(e, ERR_NOMEM, "nomem", "out of memory");
        }
        memcpy(to->hands, from->hands, from->nhands * sizeof *to->hands);
    }
    return true;
}

static bool record_hands(struct tlog_replay *r, struct err *e)
{
    while (r->nhands < r->state.hands_done) {
        if (r->nhands == r->cap) {
            size_t cap = r->cap ? r->cap * 2 : 16;
            void *h = realloc(r->hands, cap * sizeof *r->hands);
            if (!h)
                return err_set(e, ERR_NOMEM, "nomem", "out of memory");
            r->hands = h;
            r->cap = cap;
        }
        memcpy(r->hands[r->nhands++], r->state.hand_scores, sizeof r->hands[0]);
    }
    return true;
}

bool tlog_replay_move(struct tlog_replay *r, int seat, const struct rules_move *m, struct err *e)
{
    return rules_apply(&r->state, seat, m, e) && record_hands(r, e);
}

bool tlog_replay_chance(struct tlog_replay *r, enum rules_due kind, const rules_card *cards,
                        int n, struct err *e)
{
    return rules_chance(&r->state, kind, cards, n, e) && record_hands(r, e);
}

static bool check_commitment(const struct tlog *log, uint8_t seed[TLOG_SEED_BYTES],
                             struct tlog_failure *f)
{
    json_t *s = json_object_get(log->meta, "seed");
    json_t *c = json_object_get(log->meta, "seed_commitment");
    if (!json_is_string(s))
        return fail(f, 1, -1, "missing_seed", "the log has no seed to verify");
    if (!json_is_string(c))
        return fail(f, 1, -1, "missing_commitment", "the log has no seed_commitment");
    if (!tlog_unhex32(json_string_value(s), json_string_length(s), seed))
        return fail(f, 1, -1, "bad_seed", "the seed is not 64 hex digits");
    uint8_t claimed[TLOG_SEED_BYTES];
    if (!tlog_unhex32(json_string_value(c), json_string_length(c), claimed))
        return fail(f, 1, -1, "bad_commitment", "the seed_commitment is not 64 hex digits");
    char hex[TLOG_HEX_BYTES], want[TLOG_HEX_BYTES];
    tlog_commitment(seed, hex);
    tlog_hex(claimed, sizeof claimed, want);
    if (strcmp(hex, want) != 0)
        return fail(f, 1, -1, "commitment_mismatch", "sha256(seed) is not the seed_commitment");
    return true;
}

static bool check_result(const struct tlog *log, const struct tlog_replay *r,
                         struct tlog_failure *f)
{
    if (!log->result)
        return true;
    json_t *computed = tlog_result_json(r);
    const char *key;
    json_t *claim;
    bool ok = true;
    json_object_foreach(log->result, key, claim) {
        json_t *actual = json_object_get(computed, key);
        if (!actual || !json_equal(actual, claim)) {
            char *want = actual ? json_dumps(actual, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
            ok = fail(f, 1, -1, "result_mismatch", "result.%s does not match the replay%s%.120s",
                      key, want ? ", which gives " : " (no such key)", want ? want : "");
            free(want);
            break;
        }
    }
    json_decref(computed);
    return ok;
}

bool tlog_replay(const struct tlog *log, bool verify, struct tlog_replay *r,
                 struct tlog_failure *f)
{
    memset(r, 0, sizeof *r);
    struct err e;
    if (!rules_init(&r->state, log->game, &log->options, &e))
        return fail(f, 2, -1, "bad_option", "%s", e.msg);
    uint8_t seed[TLOG_SEED_BYTES];
    if (verify && !check_commitment(log, seed, f))
        return false;

    uint32_t k = 0;
    for (size_t i = 0; i < log->nevents; i++) {
        const struct tlog_event *ev = &log->events[i];
        if (ev->kind != TLOG_MOVE) {
            enum rules_due kind = ev->kind == TLOG_DEAL ? RULES_DUE_DEAL : RULES_DUE_SHUFFLE;
            rules_card want[RULES_NCARDS];
            int n = 0;
            if (verify && rules_due(&r->state) == kind)
                n = tlog_derive(seed, k, &r->state, want);
            /* A chance event where the rules need none is an illegal event (turn-log.md
             * §2: "exactly where the rules need one"), exit 1; wrong cards are a malformed
             * deal, exit 2. */
            if (!tlog_replay_chance(r, kind, ev->cards, ev->ncards, &e))
                return fail(f, strcmp(e.tag, "not_due") ? 2 : 1, (long)i, e.tag, "%s", e.msg);
            if (verify && (n != ev->ncards || memcmp(want, ev->cards, (size_t)n) != 0))
                return fail(f, 1, (long)i, "chance_mismatch",
                            "this %s is not the one the seed derives for chance event %u",
                            kind == RULES_DUE_DEAL ? "deal" : "shuffle", k);
            k++;
            continue;
        }
        struct rules_move m;
        bool ok = ev->seat >= 0 && ev->seat < r->state.nseats;
        if (!ok)
            err_set(&e, ERR_ILLEGAL, "bad_seat", "seat %lld is not a seat of this match (0 to %d)",
                    (long long)ev->seat, r->state.nseats - 1);
        else
            ok = rules_move_parse(ev->move, ev->move_len, &m, &e) &&
                 tlog_replay_move(r, (int)ev->seat, &m, &e);
        if (!ok) {
            fail(f, 1, (long)i, e.tag, "%s", e.msg);
            f->has_seat = true;
            f->seat = ev->seat;
            f->move = ev->move;
            f->move_len = ev->move_len;
            return false;
        }
    }
    return check_result(log, r, f);
}

/* ---- The log as a viewer may see it ------------------------------------------------------ */

json_t *tlog_redacted_json(const struct tlog *log, int viewer)
{
    struct tlog_replay r;
    memset(&r, 0, sizeof r);
    json_t *out = NULL;
    struct rules_secrecy_info *info = calloc(log->nevents + 1, sizeof *info);
    bool *pending = calloc(log->nevents + 1, sizeof *pending);
    size_t *open = calloc(log->nevents + 1, sizeof *open); /* unresolved secret moves */
    size_t nopen = 0;
    struct err e;
    if (!info || !pending || !open || !rules_init(&r.state, log->game, &log->options, &e))
        goto out;

    /* Replay, noting each move's secrecy and whether its phase has resolved since. */
    for (size_t i = 0; i < log->nevents; i++) {
        const struct tlog_event *ev = &log->events[i];
        if (ev->kind == TLOG_MOVE) {
            struct rules_move m;
            if (ev->seat < 0 || ev->seat >= r.state.nseats ||
                !rules_move_parse(ev->move, ev->move_len, &m, &e))
                goto out;
            rules_move_secrecy(&r.state, (int)ev->seat, &m, &info[i]);
            if (!tlog_replay_move(&r, (int)ev->seat, &m, &e))
                goto out;
            if (info[i].kind != RULES_OPEN) {
                pending[i] = true;
                open[nopen++] = i;
            }
        } else if (!tlog_replay_chance(&r, ev->kind == TLOG_DEAL ? RULES_DUE_DEAL
                                                                 : RULES_DUE_SHUFFLE,
                                       ev->cards, ev->ncards, &e)) {
            goto out;
        }
        uint32_t still = rules_secret_pending(&r.state);
        size_t keep = 0;
        for (size_t k = 0; k < nopen; k++) {
            if ((still >> log->events[open[k]].seat) & 1)
                open[keep++] = open[k];
            else
                pending[open[k]] = false;
        }
        nopen = keep;
    }
    if (r.state.over) {
        json_t *result = tlog_result_json(&r);
        out = tlog_to_json(log, result);
        json_decref(result);
        goto out;
    }

    out = json_object();
    json_object_set_new(out, "format", json_string("cardpost-log/1"));
    json_object_set_new(out, "game", json_string(rules_game_name(log->game)));
    json_object_set_new(out, "options", options_json(log));
    const char *key;
    json_t *value;
    json_object_foreach(log->meta, key, value) {
        if (strcmp(key, "seed") != 0)
            json_object_set(out, key, value);
    }
    json_t *events = json_array();
    for (size_t i = 0; i < log->nevents; i++) {
        const struct tlog_event *ev = &log->events[i];
        if (ev->kind != TLOG_MOVE)
            continue;
        json_t *j;
        bool own = ev->seat == viewer;
        if (info[i].kind == RULES_OPEN || own ||
            (!pending[i] && info[i].kind == RULES_SECRET) ||
            (!pending[i] && info[i].receiver >= 0 && info[i].receiver == viewer)) {
            j = tlog_event_json(ev);
        } else if (pending[i]) {
            j = json_object();
            json_object_set_new(j, "seat", json_integer(ev->seat));
            json_object_set_new(j, "move", json_null());
            json_object_set_new(j, "secret", json_true());
        } else {
            struct rules_move m;
            rules_move_parse(ev->move, ev->move_len, &m, NULL);
            j = json_object();
            json_object_set_new(j, "seat", json_integer(ev->seat));
            json_object_set_new(j, "move",
                                json_string(rules_verb_name((enum rules_verb)m.verb)));
            json_object_set_new(j, "cards", json_integer(rules_popcount(m.cards)));
        }
        json_object_set_new(j, "seq", json_integer((json_int_t)i));
        json_array_append_new(events, j);
    }
    json_object_set_new(out, "events", events);
out:
    tlog_replay_finish(&r);
    free(info);
    free(pending);
    free(open);
    return out;
}

/* ---- Results, legal moves and views as JSON ------------------------------------------------ */

json_t *tlog_seats_json(uint32_t mask)
{
    json_t *a = json_array();
    for (int s = 0; s < RULES_MAX_SEATS; s++)
        if (mask & (1u << s))
            json_array_append_new(a, json_integer(s));
    return a;
}

void tlog_seats_write(struct jw *w, const char *key, uint32_t mask)
{
    jw_array_begin(w, key);
    for (int s = 0; s < RULES_MAX_SEATS; s++)
        if (mask & (1u << s))
            jw_int(w, NULL, s);
    jw_array_end(w);
}

json_t *tlog_result_json(const struct tlog_replay *r)
{
    struct rules_result res;
    rules_result(&r->state, &res);
    json_t *j = json_object();
    json_object_set_new(j, "finished", json_boolean(res.finished));
    json_t *totals = json_array();
    for (int s = 0; s < res.nseats; s++)
        json_array_append_new(totals, json_integer(res.totals[s]));
    json_object_set_new(j, "totals", totals);
    json_t *ranking = json_array();
    for (int p = 0, i = 0; p < res.nplaces; p++) {
        json_t *place = json_array();
        for (int k = 0; k < res.place_size[p]; k++)
            json_array_append_new(place, json_integer(res.order[i++]));
        json_array_append_new(ranking, place);
    }
    json_object_set_new(j, "ranking", ranking);
    json_t *hands = json_array();
    for (size_t h = 0; h < r->nhands; h++) {
        json_t *scores = json_array();
        for (int s = 0; s < res.nseats; s++)
            json_array_append_new(scores, json_integer(r->hands[h][s]));
        json_t *hand = json_object();
        json_object_set_new(hand, "scores", scores);
        json_array_append_new(hands, hand);
    }
    json_object_set_new(j, "hands", hands);
    json_object_set_new(j, "resigned", res.resigned >= 0 ? json_integer(res.resigned) : json_null());
    json_object_set_new(j, "to_move", tlog_seats_json(res.to_move));
    return j;
}

json_t *tlog_moves_json(const struct rules_state *st, int seat)
{
    json_t *a = json_array();
    if (seat < 0)
        return a;
    struct rules_move *moves = malloc(RULES_MAX_LEGAL * sizeof *moves);
    int n = moves ? rules_legal(st, seat, moves, RULES_MAX_LEGAL) : 0;
    for (int i = 0; i < n && i < RULES_MAX_LEGAL; i++) {
        char text[RULES_MOVE_TEXT_MAX];
        rules_move_format(&moves[i], text, sizeof text);
        json_array_append_new(a, json_string(text));
    }
    free(moves);
    return a;
}

json_t *tlog_legal_json(const struct rules_state *st)
{
    uint32_t to_move = rules_to_move(st);
    json_t *legal = json_object();
    for (int s = 0; s < st->nseats; s++) {
        if (!(to_move & (1u << s)))
            continue;
        char key[8];
        snprintf(key, sizeof key, "%d", s);
        json_object_set_new(legal, key, tlog_moves_json(st, s));
    }
    json_t *j = json_object();
    json_object_set_new(j, "to_move", tlog_seats_json(to_move));
    json_object_set_new(j, "legal", legal);
    return j;
}

/* The JSON emitter: a stack of open containers. */
struct jemit {
    json_t *stack[16];
    int depth;
};

static void jput(struct jemit *j, const char *key, json_t *v)
{
    json_t *top = j->stack[j->depth - 1];
    if (json_is_array(top))
        json_array_append_new(top, v);
    else
        json_object_set_new(top, key ? key : "?", v);
}

static void jpush(struct jemit *j, const char *key, json_t *container)
{
    jput(j, key, container);
    assert(j->depth < 16);
    j->stack[j->depth++] = container;
}

static void je_object_begin(void *ctx, const char *key)
{
    jpush(ctx, key, json_object());
}

static void je_array_begin(void *ctx, const char *key)
{
    jpush(ctx, key, json_array());
}

static void je_end(void *ctx)
{
    struct jemit *j = ctx;
    assert(j->depth > 1);
    j->depth--;
}

static void je_integer(void *ctx, const char *key, int64_t v)
{
    jput(ctx, key, json_integer(v));
}

static void je_boolean(void *ctx, const char *key, bool v)
{
    jput(ctx, key, json_boolean(v));
}

static void je_string(void *ctx, const char *key, const char *s)
{
    jput(ctx, key, json_string(s));
}

static void je_null(void *ctx, const char *key)
{
    jput(ctx, key, json_null());
}

static void je_card(void *ctx, const char *key, rules_card c)
{
    char text[3];
    rules_card_format(c, text);
    jput(ctx, key, json_string(text));
}

static const struct rules_emit json_emitter = {
    .object_begin = je_object_begin,
    .object_end = je_end,
    .array_begin = je_array_begin,
    .array_end = je_end,
    .integer = je_integer,
    .boolean = je_boolean,
    .string = je_string,
    .null = je_null,
    .card = je_card,
};

json_t *tlog_view_json(const struct rules_state *st, int seat)
{
    struct jemit j = {.depth = 1};
    j.stack[0] = json_object();
    rules_view(st, seat, &json_emitter, &j);
    return j.stack[0];
}

/* The text emitter: straight into a jw. */
static void te_object_begin(void *ctx, const char *key)
{
    jw_object_begin(ctx, key);
}

static void te_object_end(void *ctx)
{
    jw_object_end(ctx);
}

static void te_array_begin(void *ctx, const char *key)
{
    jw_array_begin(ctx, key);
}

static void te_array_end(void *ctx)
{
    jw_array_end(ctx);
}

static void te_integer(void *ctx, const char *key, int64_t v)
{
    jw_int(ctx, key, v);
}

static void te_boolean(void *ctx, const char *key, bool v)
{
    jw_bool(ctx, key, v);
}

static void te_string(void *ctx, const char *key, const char *s)
{
    jw_string(ctx, key, s);
}

static void te_null(void *ctx, const char *key)
{
    jw_null(ctx, key);
}

/* (written in place: two bytes stored and read back as one would wait for the stores) */
static void te_card(void *ctx, const char *key, rules_card c)
{
    char *p = jw_plain_begin(ctx, key, 3); /* (rules_card_format's NUL: the quote's place) */
    if (!p)
        return;
    rules_card_format(c, p);
    jw_plain_end(ctx, p + 2);
}

/* A set of cards in one piece: a hand is written as often as a view is. */
static void te_cards(void *ctx, const char *key, uint64_t mask)
{
    char text[RULES_CARDS_JSON_MAX];
    jw_raw(ctx, key, text, rules_cards_json(mask, text));
}

static const struct rules_emit text_emitter = {
    .object_begin = te_object_begin,
    .object_end = te_object_end,
    .array_begin = te_array_begin,
    .array_end = te_array_end,
    .integer = te_integer,
    .boolean = te_boolean,
    .string = te_string,
    .null = te_null,
    .card = te_card,
    .cards = te_cards,
};

void tlog_view_write(struct jw *w, const char *key, const struct rules_state *st, int seat)
{
    jw_object_begin(w, key);
    rules_view(st, seat, &text_emitter, w);
    jw_object_end(w);
}

int tlog_moves_write_first(struct jw *w, const char *key, const struct rules_state *st, int seat,
                           int all, int few)
{
    jw_array_begin(w, key);
    struct rules_move moves[RULES_MAX_LEGAL];
    int n = seat >= 0 ? rules_legal(st, seat, moves, RULES_MAX_LEGAL) : 0;
    int most = n <= all ? n : few;
    for (int i = 0; i < most && i < RULES_MAX_LEGAL; i++) { /* (each written in place) */
        char *text = jw_plain_begin(w, NULL, RULES_MOVE_TEXT_MAX);
        if (!text)
            break;
        jw_plain_end(w, text + rules_move_format(&moves[i], text, RULES_MOVE_TEXT_MAX));
    }
    jw_array_end(w);
    return n;
}

void tlog_moves_write(struct jw *w, const char *key, const struct rules_state *st, int seat)
{
    (void)tlog_moves_write_first(w, key, st, seat, RULES_MAX_LEGAL, RULES_MAX_LEGAL);
}
