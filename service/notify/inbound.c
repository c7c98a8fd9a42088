/* inbound.c - moves by email. A reply to a turn email reaches POST /v1/mail/inbound (from
 * `cardpost mail-in`, which the mail server pipes each message to). The signed play+ address
 * says which match, seat and state the email showed; the first line the player wrote is the
 * command (a move, resign, show, help). The answer goes back by email through the outbox,
 * threaded under the player's message: a confirmation with the new state, or the refusal
 * with its reason and the legal moves. A message whose address is not genuine changes
 * nothing and gets no email from us: the HTTP answer tells mail-in to bounce it.
 */
#include "core.h"
#include "handlers.h"
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

/* Make `s` valid UTF-8 in place: a byte that does not start a well-formed character becomes
 * '?', and a character cut at the end (by a fixed buffer) is dropped. jansson refuses
 * anything else, and an answer it cannot encode would be lost. */
static void utf8_clean(char *s)
{
    unsigned char *p = (unsigned char *)s;
    while (*p) {
        int n = *p < 0x80 ? 1 : (*p & 0xe0) == 0xc0 && *p >= 0xc2 ? 2 : (*p & 0xf0) == 0xe0 ? 3
                : (*p & 0xf8) == 0xf0 && *p <= 0xf4 ? 4 : 0;
        int k = 1;
        while (k < n && (p[k] & 0xc0) == 0x80)
            k++;
        bool overlong = (n == 3 && p[0] == 0xe0 && k > 1 && p[1] < 0xa0) ||
                        (n == 3 && p[0] == 0xed && k > 1 && p[1] >= 0xa0) ||
                        (n == 4 && p[0] == 0xf0 && k > 1 && p[1] < 0x90) ||
                        (n == 4 && p[0] == 0xf4 && k > 1 && p[1] >= 0x90);
        if (n > 1 && k < n && !p[k]) { /* cut at the end */
            *p = '\0';
            return;
        }
        if (n == 0 || k < n || overlong) {
            *p++ = '?';
            continue;
        }
        p += n;
    }
}

/* How many bytes of `s` to show so that at most `max` are shown and no character is cut
 * (for "%.*s"; `s` is valid UTF-8). */
static int utf8_prefix(const char *s, int max)
{
    int n = (int)strnlen(s, (size_t)max + 1);
    if (n <= max)
        return n;
    n = max;
    while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
        n--;
    return n;
}

#define CUT(s) utf8_prefix((s), 80), (s)

/* The state after the first `seq` events of m's log (read from the database). Call with
 * m->lock held. */
static bool state_at(struct api_app *app, const struct api_match *m, int64_t seq,
                     struct rules_state *st)
{
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
    struct store_player p = {0};
    pthread_mutex_lock(&app->db_lock);
    bool ok = store_player_get(app->store, m->players[seat], &p, e);
    pthread_mutex_unlock(&app->db_lock);
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
    json_t *view = api_match_view(app, m, seat);
    char *table = render_match_text(view, app->config.public_url);
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
    pthread_mutex_lock(&app->db_lock);
    ok = store_begin(app->store, e);
    if (ok) {
        ok = api_outbox_add_email(app, m, seat, "mail_reply", mail, now, e) &&
             store_commit(app->store, e);
        if (!ok)
            store_rollback(app->store);
    }
    pthread_mutex_unlock(&app->db_lock);
    json_decref(mail);
    if (ok)
        api_wake(app);
    return ok;
}

static void outcome(struct api_reply *r, const char *what, int64_t match, int seat,
                    const char *detail)
{
    r->status = 200;
    r->body = json_pack("{s:s, s:I, s:i, s:s}", "outcome", what, "match", (json_int_t)match,
                        "seat", seat, "detail", detail);
    if (!r->body) /* never an empty 200 */
        api_problem(r, 500, "internal", "the answer could not be encoded");
}

void api_mail_inbound(struct api_app *app, const struct api_caller *c, const char *raw,
                      size_t len, const char *recipient, long long truncated,
                      struct api_reply *r)
{
    if (!c->authenticated) {
        api_problem(r, 401, "unauthorized", "inbound mail needs the operator's token");
        return;
    }
    if (!c->operator) {
        api_problem(r, 403, "forbidden", "only the mail gateway (operator token) posts mail");
        return;
    }
    struct mail_parsed in;
    struct err e;
    if (!mail_parse(raw, len, recipient, &in, &e)) {
        api_problem(r, 422, "malformed_mail", "%s", e.msg);
        return;
    }
    if (in.command)
        utf8_clean(in.command);
    if (in.subject)
        utf8_clean(in.subject);
    int64_t match, seq;
    int seat;
    struct api_match *m = NULL;
    if (in.automatic) {
        /* RFC 3834: an out-of-office note or a bounce is never answered, and never played. */
        r->status = 200;
        r->body = json_pack("{s:s, s:s}", "outcome", "ignored", "detail",
                            "an automatic message (Auto-Submitted, Precedence or a bounce) is "
                            "not answered");
        goto out;
    }
    if (!in.play_address) {
        api_problem(r, 422, "no_play_address",
                    "the message was not sent to a play+ address of a turn email");
        goto out;
    }
    if (!mail_address_check(app->mail_key, in.play_address, &match, &seat, &seq)) {
        api_problem(r, 422, "forged_address",
                    "the play+ address is not one this service signed (altered or forged)");
        goto out;
    }
    struct err fe;
    m = api_match_find(app, match, &fe);
    if (!m) {
        api_problem_from_err(r, &fe);
        goto out;
    }
    pthread_mutex_lock(&m->lock);
    if (seat >= m->replay.state.nseats) {
        pthread_mutex_unlock(&m->lock);
        api_problem(r, 422, "forged_address", "no such seat");
        goto out;
    }
    char status[600];
    const char *what = "refused";
    bool help = false, played = false;
    struct rules_move mv;
    if (truncated > 0) {
        snprintf(status, sizeof status,
                 "Your message was %lld bytes, over the limit of %d: nothing was done. Please "
                 "answer with a short plain message.",
                 truncated, MAIL_MAX_MESSAGE);
    } else if (!in.command) {
        snprintf(status, sizeof status,
                 "I could not find a move in your message: write it alone on the first line, "
                 "above the quoted text. Nothing was done.");
        help = true;
    } else if (!strcasecmp(in.command, "help")) {
        snprintf(status, sizeof status, "How to play by email.");
        what = "help";
        help = true;
    } else if (!strcasecmp(in.command, "show")) {
        snprintf(status, sizeof status, "The match as it stands.");
        what = "shown";
    } else if (!rules_move_parse(in.command, strlen(in.command), &mv, &e)) {
        snprintf(status, sizeof status,
                 "I could not read \"%.*s\" as a move (%s). Nothing was done.", CUT(in.command),
                 e.msg);
        help = true;
    } else if (m->replay.state.over) {
        snprintf(status, sizeof status, "The match is over: \"%.*s\" was not played.",
                 CUT(in.command));
    } else {
        /* The email pinned a state: a move is judged only if the seat's situation is still
         * what the email showed (the same legal moves), else it is stale. */
        bool stale = false;
        if (seq != m->seq) {
            struct rules_state then;
            json_t *before = state_at(app, m, seq, &then) ? tlog_moves_json(&then, seat) : NULL;
            json_t *now = tlog_moves_json(&m->replay.state, seat);
            stale = !before || !json_equal(before, now) || mv.verb == RULES_RESIGN;
            json_decref(before);
            json_decref(now);
        }
        if (stale) {
            snprintf(status, sizeof status,
                     "The match has moved on since the email you answered (it showed the match "
                     "at step %lld; it is now at step %lld), so \"%.*s\" was not played. Here "
                     "is the match as it stands: answer this email instead.",
                     (long long)seq, (long long)m->seq, CUT(in.command));
        } else if (mv.verb != RULES_RESIGN &&
                   !((rules_to_move(&m->replay.state) >> seat) & 1)) {
            snprintf(status, sizeof status,
                     "It is not your turn: \"%.*s\" was not played.", CUT(in.command));
        } else {
            char text[RULES_MOVE_TEXT_MAX];
            rules_move_format(&mv, text, sizeof text);
            if (api_match_play(app, m, seat, &mv, &e)) {
                snprintf(status, sizeof status, "Played: %s.", text);
                what = "played";
                played = true;
            } else if (e.code == ERR_ILLEGAL) {
                snprintf(status, sizeof status, "\"%.*s\" is not legal now: %s. Nothing was done.",
                         CUT(in.command), e.msg);
            } else {
                pthread_mutex_unlock(&m->lock);
                api_problem_from_err(r, &e);
                goto out;
            }
        }
    }
    utf8_clean(status); /* e.msg may end in a character cut by its buffer */
    struct err qe;
    if (!queue_answer(app, m, seat, &in, status, help, &qe))
        fprintf(stderr, "cardpostd: cannot answer a mail for match %lld: %s\n", (long long)match,
                qe.msg);
    pthread_mutex_unlock(&m->lock);
    (void)played;
    outcome(r, what, match, seat, status);
out:
    api_match_release(app, m);
    mail_parsed_finish(&in);
}
