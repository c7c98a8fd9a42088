/* handlers.h - the HTTP edge's handlers: each parses a request, calls the domain core
 * (core.h) and maps what it returns to an answer, errors through api_problem_from_err, the
 * one mapping from an error value to an HTTP status. http.c's route table calls them.
 */
#ifndef CARDPOST_HANDLERS_H
#define CARDPOST_HANDLERS_H

#include <jansson.h>

#include "core.h"

/* An HTTP answer: status, and a JSON body (owned; NULL for none) or the body already
 * written as JSON text (owned; used instead of `body` when set: the hot answers, written
 * without building a tree). Errors carry a problem+json body built by api_problem. */
struct api_reply {
    int status;
    json_t *body;
    char *text;
    size_t text_len;
    bool problem;
    int retry_after;              /* seconds: a Retry-After header (429), 0 none */
};

/* Fill `r` with a problem+json answer: type, title, status, detail. Returns false. */
bool api_problem(struct api_reply *r, int status, const char *type, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The one mapping from an error value to an HTTP problem: ERR_MALFORMED 400,
 * ERR_UNAUTHORIZED 401, ERR_FORBIDDEN 403, ERR_NOT_FOUND 404, ERR_CONFLICT 409,
 * ERR_INVALID, ERR_ILLEGAL and ERR_MISMATCH 422, ERR_LIMITED 429 (Retry-After from
 * e->retry_after), ERR_UNAVAILABLE 503, others 500; the problem's type is e->tag, its detail
 * e->msg. Returns false. */
bool api_problem_from_err(struct api_reply *r, const struct err *e);

/* Whether the caller is a player (else 401 without a token, 403 for the operator), or the
 * operator (else 401 / 403), with the problem in r. */
bool api_need_player(const struct api_caller *c, struct api_reply *r);
bool api_need_operator(const struct api_caller *c, struct api_reply *r);

/* ---- Players and identity (api-players.c) ------------------------------------------------ */

/* POST /v1/players (registration), GET and PATCH /v1/players/me, the caller's deliveries and
 * matches, POST/DELETE /v1/players/me/vacation (`end`). `body` is the parsed request JSON
 * (NULL when there was none). */
void api_player_create(struct api_app *app, json_t *body, struct api_reply *r);
void api_player_me(struct api_app *app, const struct api_caller *c, struct api_reply *r);
void api_player_update(struct api_app *app, const struct api_caller *c, json_t *body,
                       struct api_reply *r);
void api_player_deliveries(struct api_app *app, const struct api_caller *c,
                           struct api_reply *r);
void api_player_matches(struct api_app *app, const struct api_caller *c, struct api_reply *r);
void api_player_vacation(struct api_app *app, const struct api_caller *c, json_t *body,
                         bool end, struct api_reply *r);
/* POST /v1/players/me/email/confirm {"code"}: the player confirms their address. */
void api_email_confirm(struct api_app *app, const struct api_caller *c, json_t *body,
                       struct api_reply *r);
/* POST /v1/players/{id}/email/confirm (operator): confirm a player's address without code. */
void api_email_confirm_by_operator(struct api_app *app, const struct api_caller *c, int64_t id,
                                   struct api_reply *r);
/* POST /v1/players/me/token: a new token for the caller; the old one stops working. */
void api_token_rotate(struct api_app *app, const struct api_caller *c, struct api_reply *r);
/* POST /v1/players/{id}/token (operator): a new token for player `id`, to hand over;
 * DELETE (revoke): the player's token stops working and none replaces it. */
void api_token_issue(struct api_app *app, const struct api_caller *c, int64_t id, bool revoke,
                     struct api_reply *r);

/* POST /v1/deliveries/{id}/redeliver (operator): send a delivery again. */
void api_delivery_redeliver(struct api_app *app, const struct api_caller *c, int64_t id,
                            struct api_reply *r);

/* ---- The operator's (api-admin.c) --------------------------------------------------------- */

/* POST /v1/admin/clock (test mode); GET /v1/admin/stats: group commits so far (batches,
 * writes), the matches in memory, the durability setting. */
void api_admin_clock(struct api_app *app, const struct api_caller *c, json_t *body,
                     struct api_reply *r);
void api_admin_stats(struct api_app *app, const struct api_caller *c, struct api_reply *r);

/* ---- Leagues (api-leagues.c) ---------------------------------------------------------------- */

void api_league_create(struct api_app *app, const struct api_caller *c, json_t *body,
                       struct api_reply *r);
void api_leagues_list(struct api_app *app, struct api_reply *r);
void api_player_leagues(struct api_app *app, const struct api_caller *c, struct api_reply *r);
void api_league_get(struct api_app *app, int64_t id, struct api_reply *r);
void api_league_member_add(struct api_app *app, const struct api_caller *c, int64_t id,
                           json_t *body, struct api_reply *r);
void api_league_member_remove(struct api_app *app, const struct api_caller *c, int64_t id,
                              int64_t player, struct api_reply *r);
void api_league_standings(struct api_app *app, int64_t id, struct api_reply *r);

/* The `n` matches of `rows` as the listings show them (a league's matches, a player's),
 * from their stored summaries: a new JSON array. */
json_t *api_match_summaries_json(const struct store_match *rows, int n);

/* ---- Mail (api-mail.c) ---------------------------------------------------------------------- */

/* POST /v1/mail/inbound: `raw` is one RFC 5322 message; `recipient` the envelope recipient
 * (or NULL); `truncated` the original size when the gateway cut it, else 0. */
void api_mail_inbound(struct api_app *app, const struct api_caller *c, const char *raw,
                      size_t len, const char *recipient, long long truncated,
                      struct api_reply *r);
/* Matches (api-matches.c). `body` is the parsed request JSON (NULL when there was none);
 * `idem_key` (or NULL) the Idempotency-Key header, `request_hash` the sha256 of method, path
 * and body (with a key; zeros without). Each fills `r`. */
void api_match_create(struct api_app *app, const struct api_caller *c, json_t *body,
                      const char *idem_key, const uint8_t request_hash[API_SHA256_BYTES], struct api_reply *r);
void api_match_get(struct api_app *app, const struct api_caller *c, int64_t id,
                   struct api_reply *r);
/* A move answers once it is durable: unless it fails at once, it suspends (async) and
 * resumes when its group commit is done. */
void api_match_move(struct api_app *app, const struct api_caller *c, int64_t id, json_t *body,
                    const char *idem_key, const uint8_t request_hash[API_SHA256_BYTES], struct api_reply *r,
                    const struct api_async *async);
void api_match_log(struct api_app *app, const struct api_caller *c, int64_t id,
                   struct api_reply *r);
/* Every step of a finished match seen by the omniscient viewer (409 while it runs). */
void api_match_replay(struct api_app *app, int64_t id, struct api_reply *r);
/* POST /v1/matches/{id}/accept and /decline: the seat's player agrees to a pending match
 * or declines it. 200 with the caller's view. */
void api_match_consent(struct api_app *app, const struct api_caller *c, int64_t id, bool accept,
                       struct api_reply *r);
/* POST /v1/matches/{id}/events/ticket: 201 {"ticket", "expires_in", "events"}, a seat's
 * single-use ticket for its event stream (core_stream_ticket_issue); with `id` 0
 * (POST /v1/players/me/events/ticket) the player's, for their stream of all their seats. */
void api_match_ticket(struct api_app *app, const struct api_caller *c, int64_t id,
                      struct api_reply *r);
/* False with a 409 problem in r (match_pending, match_cancelled) when `m` has not started
 * (core_match_started). Call with m->lock held. */
bool api_match_started(const struct api_match *m, struct api_reply *r);

/* Read a "clock" request value (absent: the game's default; null: none); false with a
 * problem in r (core_clock_parse's refusal). */
bool api_clock_parse(json_t *v, enum rules_game_id g, struct api_clock *c, struct api_reply *r);

/* POST /v1/leagues/{id}/schedule {"rounds"?} (api-leagues.c): 201 {"matches": [ids]}. */
void api_league_schedule(struct api_app *app, const struct api_caller *c, int64_t id,
                         json_t *body, struct api_reply *r);

/* GET /readyz: 200 {"status": "ready", "checks"}, else 503 problem+json "not_ready" saying
 * what is not (core_ready). */
void api_ready(struct api_app *app, struct api_reply *r);

#endif
