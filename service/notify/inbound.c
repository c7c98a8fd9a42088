/* inbound.c - moves by email. A reply to a turn email reaches POST /v1/mail/inbound (from
 * `cardpost mail-in`, which the mail server pipes each message to). The signed play+ address
 * says which match, seat and state the email showed; the first line the player wrote is the
 * command (a move, resign, show, help). The answer goes back by email through the outbox,
 * threaded under the player's message: a confirmation with the new state, or the refusal
 * with its reason and the legal moves. A message whose address is not genuine changes
 * nothing and gets no email from us: the HTTP answer tells mail-in to bounce it.
 * core_mail_inbound (core.h) is the operation: read the message, find its match and seat,
 * judge the command and play it through api_match_play; http/api-mail.c answers with it.
 */
#include "core.h"
#include "log.h"
#include "mail.h"
#include "render.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char help_text[] =
    "Reply to a turn email with your move alone on the first line, above the quoted text,\n"
    "in the notation of the game, for example:\n"
    "  play QS      pass 2C 7D TH      lead 9D      take JC\n"
    "  stay   drop   discard 3H KD      move 5S   flip 3   ready   moon add\n"
    "Case does not matter, 10 may stand for T, and the suit symbols work too (play 10♥).\n"
    "Other commands: show (send me the current state), help (this text), resign.\n"
    "Each reply answers the email it replies to: if the match has moved on since, your move\n"
    "is refused and you get the current state to answer instead.\n";

#define CUT(s) (int)utf8_prefix((s), 80), (s)

/* The state after the first `seq` events of m's log (read from the database). Call with
 * m->lock held. */
static bool state_at(struct api_app *app, const struct api_match *m, int64_t seq,
                     struct rules_state *st)
{
    assert(lock_held(&m->lock));
    struct err e;
    struct tlog *log = seq >= 0 && seq <= m->seq ? api_match_log_read(app, m, seq, &e) : NULL;
    bool ok = log && rules_init(st, log->game, &log->options, NULL);
    for (size_t i = 0; ok && i < log->nevents; i++) {
        const struct tlog_event *ev = &log->events[i];
        struct rules_move mv;
        ok = ev->kind == TLOG_MOVE
                 ? rules_move_parse(ev->move, ev->move_len, &mv, NULL) &&
                       rules_apply(st, (int)ev->seat, &mv, NULL)
                 : rules_chance(st, ev->kind == TLOG_DEAL ? RULES_DUE_DEAL : RULES_DUE_SHUFFLE,
                                ev->cards, ev->ncards, NULL);
    }
    tlog_destroy(log);
    return ok;
}

/* Queue the answer to the player, threaded under their message. Call with m->lock held;
 * takes db_lock. */
static bool queue_answer(struct api_app *app, struct api_match *m, int seat,
                         const struct mail_parsed *in, const char *status_line, bool with_help,
                         struct err *e)
{
    assert(lock_held(&m->lock));
    struct store_player p = {0};
    lock_take(&app->db_lock);
    bool ok = store_player_get(app->store, m->players[seat], &p, e);
    lock_drop(&app->db_lock);
    if (!ok || !p.email || !p.email_confirmed) { /* (only a confirmed address gets mail) */
        bool none = !p.email;
        store_player_finish(&p);
        if (ok && none)
            return err_set(e, ERR_NOT_FOUND, "no_email", "the player has no email");
        if (ok)
            return err_set(e, ERR_NOT_FOUND, "unconfirmed_email",
                           "the player has not confirmed their email address");
        return false;
    }
    /* (the view of the legal moves the text lists, as a turn's email reads it) */
    json_t *view = api_match_view_of(m, &m->replay, m->seq, seat, RENDER_LEGAL_ALL,
                                     RENDER_LEGAL_FEW);
    char *table = render_match_text(view, api_config(app)->public_url);
    json_decref(view);
    size_t n = strlen(p.name) + strlen(status_line) + (table ? strlen(table) : 0) +
               sizeof help_text + 64;
    char *text = malloc(n);
    if (text)
        snprintf(text, n, "Hello %s,\n\n%s\n\n%s\n%s", p.name, status_line, table ? table : "",
                 with_help ? help_text : "Answer this email with your next move, or: show, "
                                         "help, resign.\n");
    free(table);
    char subject[300], reply_to[160], refs[5000];
    snprintf(subject, sizeof subject, "%s%s", in->subject && strncasecmp(in->subject, "re:", 3)
                                                  ? "Re: "
                                                  : "",
             in->subject ? in->subject : "your move");
    utf8_clean(subject);
    mail_address(app->mail_key, app->mail_domain, m->id, seat, m->seq, reply_to);
    snprintf(refs, sizeof refs, "%s%s%s", in->references ? in->references : "",
             in->references && in->message_id ? " " : "", in->message_id ? in->message_id : "");
    json_t *mail = json_pack("{s:s, s:s, s:s?, s:s, s:s?, s:s?}", "to", p.email, "subject",
                             subject, "text", text, "reply_to", reply_to, "in_reply_to",
                             in->message_id, "references", refs[0] ? refs : NULL);
    free(text);
    store_player_finish(&p);
    if (!mail)
        return err_set(e, ERR_NOMEM, "nomem", "the answer could not be built");
    int64_t now = api_now_ms(app);
    lock_take(&app->db_lock);
    ok = store_begin(app->store, e);
    if (ok) {
        ok = api_outbox_add_email(app, m, seat, "mail_reply", mail, now, e) &&
             store_commit(app->store, e);
        if (!ok)
            store_rollback(app->store);
    }
    lock_drop(&app->db_lock);
    json_decref(mail);
    if (ok)
        api_wake(app);
    return ok;
}

/* Read one message (`len` bytes of `raw`, envelope recipient or NULL) into `in`: parsed,
 * its command and subject made valid UTF-8 (they go back into the answer). */
static bool mail_read(const char *raw, size_t len, const char *recipient,
                      struct mail_parsed *in, struct err *e)
{
    struct err why;
    if (!mail_parse(raw, len, recipient, in, &why))
        return err_set(e, why.code, why.tag, "%s", why.msg);
    if (in->command)
        utf8_clean(in->command);
    if (in->subject)
        utf8_clean(in->subject);
    return true;
}

/* The match, seat and state (seq) that the signed play+ address of `in` names; the match
 * referenced and locked (api_match_release after unlocking). */
static struct api_match *mail_match(struct api_app *app, const struct mail_parsed *in,
                                    int *seat, int64_t *seq, struct err *e)
{
    int64_t match;
    if (!in->play_address) {
        err_set(e, ERR_INVALID, "no_play_address",
                "the message was not sent to a play+ address of a turn email");
        return NULL;
    }
    if (!mail_address_check(app->mail_key, in->play_address, &match, seat, seq)) {
        err_set(e, ERR_INVALID, "forged_address",
                "the play+ address is not one this service signed (altered or forged)");
        return NULL;
    }
    struct api_match *m = api_match_find(app, match, e);
    if (!m)
        return NULL;
    lock_take(&m->lock);
    if (*seat >= m->replay.state.nseats) {
        lock_drop(&m->lock);
        api_match_release(app, m);
        err_set(e, ERR_INVALID, "forged_address", "no such seat");
        return NULL;
    }
    return m;
}

/* Whether the seat's situation in `m` is no longer what the email answered showed (at step
 * `seq`: the same legal moves), so that `mv` would be judged on a state the player did not
 * see. Call with m->lock held. */
static bool stale(struct api_app *app, const struct api_match *m, int seat, int64_t seq,
                  const struct rules_move *mv)
{
    if (seq == m->seq)
        return false;
    struct rules_state then;
    json_t *before = state_at(app, m, seq, &then) ? tlog_moves_json(&then, seat) : NULL;
    json_t *now = tlog_moves_json(&m->replay.state, seat);
    bool moved = !before || !json_equal(before, now) || mv->verb == RULES_RESIGN;
    json_decref(before);
    json_decref(now);
    return moved;
}

/* Play the command of a move of `seat`, unless stale or not the seat's turn; out->detail
 * says what became of it. False only when the move could not be written (e). Call with
 * m->lock held. */
static bool judge_move(struct api_app *app, struct api_match *m, int seat, int64_t seq,
                       const char *command, const struct rules_move *mv,
                       struct core_mail_outcome *out, struct err *e)
{
    char *status = out->detail;
    size_t size = sizeof out->detail;
    struct err why;
    if (stale(app, m, seat, seq, mv)) {
        snprintf(status, size,
                 "The match has moved on since the email you answered (it showed the match "
                 "at step %lld; it is now at step %lld), so \"%.*s\" was not played. Here "
                 "is the match as it stands: answer this email instead.",
                 (long long)seq, (long long)m->seq, CUT(command));
    } else if (mv->verb != RULES_RESIGN && !((rules_to_move(&m->replay.state) >> seat) & 1)) {
        snprintf(status, size, "It is not your turn: \"%.*s\" was not played.", CUT(command));
    } else if (api_match_play(app, m, seat, mv, &why)) {
        char text[RULES_MOVE_TEXT_MAX];
        rules_move_format(mv, text, sizeof text);
        snprintf(status, size, "Played: %s.", text);
        out->what = "played";
    } else if (why.code == ERR_ILLEGAL) {
        snprintf(status, size, "\"%.*s\" is not legal now: %s. Nothing was done.", CUT(command),
                 why.msg);
    } else {
        *e = why;
        return false;
    }
    return true;
}

/* What the first line `command` of a message asks of `seat` in `m` (a move, help, show),
 * done: out->what and out->detail say what became of it, *help whether the answer carries
 * the help text. False only when a move could not be written (e). Call with m->lock held. */
static bool judge(struct api_app *app, struct api_match *m, int seat, int64_t seq,
                  const char *command, long long truncated, struct core_mail_outcome *out,
                  bool *help, struct err *e)
{
    char *status = out->detail;
    size_t size = sizeof out->detail;
    struct rules_move mv;
    struct err why;
    out->what = "refused";
    *help = false;
    if (truncated > 0) {
        snprintf(status, size,
                 "Your message was %lld bytes, over the limit of %d: nothing was done. Please "
                 "answer with a short plain message.",
                 truncated, MAIL_MAX_MESSAGE);
    } else if (!command) {
        snprintf(status, size,
                 "I could not find a move in your message: write it alone on the first line, "
                 "above the quoted text. Nothing was done.");
        *help = true;
    } else if (!strcasecmp(command, "help")) {
        snprintf(status, size, "How to play by email.");
        out->what = "help";
        *help = true;
    } else if (!strcasecmp(command, "show")) {
        snprintf(status, size, "The match as it stands.");
        out->what = "shown";
    } else if (!rules_move_parse(command, strlen(command), &mv, &why)) {
        snprintf(status, size, "I could not read \"%.*s\" as a move (%s). Nothing was done.",
                 CUT(command), why.msg);
        *help = true;
    } else if (m->replay.state.over) {
        snprintf(status, size, "The match is over: \"%.*s\" was not played.", CUT(command));
    } else if (!judge_move(app, m, seat, seq, command, &mv, out, e)) {
        return false;
    }
    utf8_clean(status); /* a reason may end in a character cut by its buffer */
    return true;
}

bool core_mail_inbound(struct api_app *app, const struct api_caller *c, const char *raw,
                       size_t len, const char *recipient, long long truncated,
                       struct core_mail_outcome *out, struct err *e)
{
    if (!c->authenticated)
        return err_set(e, ERR_UNAUTHORIZED, "unauthorized",
                       "inbound mail needs the operator's token");
    if (!c->operator)
        return err_set(e, ERR_FORBIDDEN, "forbidden",
                       "only the mail gateway (operator token) posts mail");
    struct mail_parsed in;
    if (!mail_read(raw, len, recipient, &in, e))
        return false;
    *out = (struct core_mail_outcome){.what = "ignored", .match = 0, .seat = -1};
    bool ok = true, help;
    struct api_match *m = NULL;
    int64_t seq;
    if (in.automatic) {
        /* RFC 3834: an out-of-office note or a bounce is never answered, and never played. */
        snprintf(out->detail, sizeof out->detail,
                 "an automatic message (Auto-Submitted, Precedence or a bounce) is not answered");
        goto out;
    }
    m = mail_match(app, &in, &out->seat, &seq, e);
    ok = m && judge(app, m, out->seat, seq, in.command, truncated, out, &help, e);
    if (ok) {
        struct err qe;
        out->match = m->id;
        if (!queue_answer(app, m, out->seat, &in, out->detail, help, &qe))
            log_msg(LOG_LEVEL_ERROR, "mail", "cannot answer a mail for match %lld: %s",
                    (long long)m->id, qe.msg);
    }
    if (m)
        lock_drop(&m->lock);
out:
    api_match_release(app, m);
    mail_parsed_finish(&in);
    return ok;
}
