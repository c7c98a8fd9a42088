/* notes.c - what a committed change tells whom: the outbox rows of a change (a match
 * started, a turn, a reminder, a timeout, an invitation, the match over), for each seat by
 * each channel its player wants, written in the change's own transaction so that a crash
 * loses none (or prepared before it, for the move path: api_notes). Their delivery is
 * outbox.c's.
 */
#include "core.h"
#include "mail.h"
#include "notify.h"
#include "render.h"

#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* What each type of notification says: its email's subject (a format of the game's name
 * and the match's id) and its first line. The last is the default ("match_over"). */
static const struct {
    const char *type, *subject, *intro;
} texts[] = {
    {"match_started", "%s match %lld has started",
     "A new match has started, and you have a seat in it."},
    {"turn", "Your turn in %s match %lld", "It is your turn."},
    {"reminder", "Reminder: your move in %s match %lld is due soon",
     "Your move is due soon: please play before the deadline below."},
    {"timeout", "Your time ran out in %s match %lld",
     "Your time for this move ran out, and the match's timeout policy was applied."},
    {"invitation", "You are invited to %s match %lld",
     "You are invited to take a seat in the match below. It starts when every seat has "
     "accepted."},
    {"match_over", "%s match %lld is over", "The match is over."},
};

static int text_of(const char *type)
{
    int n = (int)(sizeof texts / sizeof texts[0]);
    for (int i = 0; i < n - 1; i++)
        if (!strcmp(type, texts[i].type))
            return i;
    return n - 1;
}

/* Insert one row, or (into) keep it for api_outbox_write. Takes `body`. */
static bool add_row(struct api_app *app, int64_t player, int channel, const char *type,
                    int64_t match, int64_t seq, char *body, int64_t now_ms,
                    struct api_notes *into, struct err *e)
{
    if (into) {
        if (!body || into->n == API_NOTES_MAX) {
            free(body);
            return err_set(e, ERR_NOMEM, "nomem", "out of memory");
        }
        struct api_note *n = &into->note[into->n++];
        *n = (struct api_note){.player = player, .channel = channel, .match = match,
                               .seq = seq, .body = body};
        snprintf(n->type, sizeof n->type, "%s", type);
        return true;
    }
    uint8_t raw[12];
    struct store_outbox o = {
        .player = player,
        .channel = channel,
        .match = match,
        .seq = seq,
        .body = body,
        .next_attempt = now_ms,
        .created_at = now_ms,
    };
    snprintf(o.type, sizeof o.type, "%s", type);
    if (RAND_bytes(raw, sizeof raw) != 1) {
        free(body);
        return err_set(e, ERR_IO, "random", "the random source failed");
    }
    memcpy(o.webhook_id, "msg_", 4);
    tlog_hex(raw, sizeof raw, o.webhook_id + 4);
    bool ok = body && store_outbox_add(app->store, &o, e);
    if (!body)
        err_set(e, ERR_NOMEM, "nomem", "out of memory");
    free(body);
    return ok;
}

bool api_outbox_add_email(struct api_app *app, const struct api_match *m, int seat,
                          const char *type, json_t *mail, int64_t now_ms, struct err *e)
{
    assert(lock_held(&app->db_lock));
    if (!api_config(app)->smtp.url[0])
        return true;
    return add_row(app, m->players[seat], STORE_EMAIL, type, m->id, m->seq,
                   json_dumps(mail, JSON_COMPACT), now_ms, NULL, e);
}

bool api_outbox_add_player_email(struct api_app *app, int64_t player, const char *type,
                                 json_t *mail, int64_t now_ms, struct err *e)
{
    assert(lock_held(&app->db_lock));
    return add_row(app, player, STORE_EMAIL, type, 0, 0, json_dumps(mail, JSON_COMPACT), now_ms,
                   NULL, e);
}

bool api_outbox_notify(struct api_app *app, const struct api_match *m, int64_t seq,
                       const struct tlog_replay *rp, int seat, const char *type,
                       int64_t now_ms, struct api_notes *into, struct err *e)
{
    struct store_player p = {0};
    bool found;
    if (into) { /* before the transaction: through the reading connection */
        lock_take(&app->read_lock);
        found = store_player_get(app->reader, m->players[seat], &p, e);
        lock_drop(&app->read_lock);
    } else {
        found = store_player_get(app->store, m->players[seat], &p, e);
    }
    if (!found)
        return false;
    bool ok = true;
    /* (no email to an address its owner has not confirmed) */
    bool email = api_config(app)->smtp.url[0] && p.email && p.email_confirmed &&
                 api_prefs_want(p.prefs, STORE_EMAIL, type) &&
                 (m->watching[seat] == 0 || api_prefs_email_when_watching(p.prefs));
    bool webhook = p.webhook_url && !p.webhook_disabled &&
                   api_prefs_want(p.prefs, STORE_WEBHOOK, type);
    if (!email && !webhook) { /* nothing to tell: no view to build */
        store_player_finish(&p);
        return true;
    }
    json_t *view = api_match_view_of(m, rp, seq, seat);
    const char *game = rules_game_name((enum rules_game_id)rp->state.game);
    if (webhook) {
        char stamp[32];
        time_t t = (time_t)(now_ms / 1000);
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
        json_t *payload = json_pack("{s:s, s:s, s:O}", "type", type, "timestamp", stamp, "data",
                                    view);
        ok = add_row(app, p.id, STORE_WEBHOOK, type, m->id, seq,
                     json_dumps(payload, JSON_COMPACT), now_ms, into, e);
        json_decref(payload);
    }
    if (ok && email) {
        char subject[160], help[1400];
        snprintf(subject, sizeof subject, texts[text_of(type)].subject, game, (long long)m->id);
        char *table = render_match_text(view, api_config(app)->public_url);
        const char *example = json_string_value(json_array_get(json_object_get(view, "legal"), 0));
        snprintf(help, sizeof help,
                 "\nHow to answer: reply to this email with your move alone on the first line, "
                 "for example \"%s\" (other commands: show, help, resign). Or send it as "
                 "POST %s/v1/matches/%lld/moves with the body {\"move\": \"...\"} and your "
                 "token.\n",
                 example ? example : "resign",
                 api_config(app)->public_url[0] ? api_config(app)->public_url : "", (long long)m->id);
        bool to_move = (rules_to_move(&rp->state) >> seat) & 1;
        if (!strcmp(type, "invitation")) { /* how to answer an invitation instead */
            const char *url = api_config(app)->public_url[0] ? api_config(app)->public_url : "";
            snprintf(help, sizeof help,
                     "\nHow to answer: POST %s/v1/matches/%lld/accept (or /decline) with your "
                     "token, or open %s/matches/%lld and sign in.\n",
                     url, (long long)m->id, url, (long long)m->id);
            to_move = true;
        }
        size_t n = strlen(p.name) + strlen(texts[text_of(type)].intro) + (table ? strlen(table) : 0) +
                   strlen(help) + 64;
        char *text = malloc(n);
        if (text)
            snprintf(text, n, "Hello %s,\n\n%s\n\n%s%s", p.name, texts[text_of(type)].intro,
                     table ? table : "", to_move ? help : "");
        char reply_to[160];
        mail_address(app->mail_key, app->mail_domain, m->id, seat, seq, reply_to);
        json_t *mail = json_pack("{s:s, s:s, s:s?, s:s}", "to", p.email, "subject", subject,
                                 "text", text, "reply_to", reply_to);
        ok = add_row(app, p.id, STORE_EMAIL, type, m->id, seq,
                     mail ? json_dumps(mail, JSON_COMPACT) : NULL, now_ms, into, e);
        json_decref(mail);
        free(text);
        free(table);
    }
    json_decref(view);
    store_player_finish(&p);
    return ok;
}

bool api_outbox_write(struct api_app *app, struct api_notes *notes, int64_t now_ms,
                      struct err *e)
{
    bool ok = true;
    for (int i = 0; i < notes->n; i++) {
        struct api_note *n = &notes->note[i];
        char *body = n->body; /* add_row takes it */
        n->body = NULL;
        if (ok)
            ok = add_row(app, n->player, n->channel, n->type, n->match, n->seq, body, now_ms,
                         NULL, e);
        else
            free(body);
    }
    notes->n = 0;
    return ok;
}

void api_notes_free(struct api_notes *notes)
{
    for (int i = 0; i < notes->n; i++)
        free(notes->note[i].body);
    notes->n = 0;
}

bool api_outbox_changed(struct api_app *app, const struct api_match *m, int64_t seq,
                        const struct tlog_replay *before, const struct tlog_replay *after,
                        int mover, int timed_out, int64_t now_ms, struct api_notes *into,
                        struct err *e)
{
    int n = after->state.nseats;
    const char *type[RULES_MAX_SEATS] = {0};
    if (!before) {
        for (int s = 0; s < n; s++)
            type[s] = "match_started";
    } else if (after->state.over && !before->state.over) {
        for (int s = 0; s < n; s++)
            type[s] = "match_over";
    } else if (!rules_game_realtime((enum rules_game_id)after->state.game)) {
        /* A seat that has something to do now and had not before, other than the mover
         * (who has the answer to its move in hand). */
        uint32_t fresh = rules_to_move(&after->state) & ~rules_to_move(&before->state);
        for (int s = 0; s < n; s++)
            if (((fresh >> s) & 1) && s != mover)
                type[s] = "turn";
    }
    /* The seat whose time ran out is told so: instead of its turn (its view holds its legal
     * moves), or before the match_over when the timeout ended the match (a forfeit). */
    if (timed_out >= 0 && timed_out < n) {
        if (after->state.over &&
            !api_outbox_notify(app, m, seq, after, timed_out, "timeout", now_ms, into, e))
            return false;
        if (!after->state.over)
            type[timed_out] = "timeout";
    }
    for (int s = 0; s < n; s++)
        if (type[s] && !api_outbox_notify(app, m, seq, after, s, type[s], now_ms, into, e))
            return false;
    return true;
}

