/* notes.c - what a committed change tells whom: the outbox rows of a change (a match
 * started, a turn, a reminder, a timeout, an invitation, the match over), for each seat by
 * each channel its player wants, written in the change's own transaction so that a crash
 * loses none (or prepared before it, for the move path: api_notes). Their delivery is
 * outbox.c's.
 */
#include "core.h"
#include "buf.h"
#include "mail.h"
#include "notify.h"
#include "render.h"

#include <pthread.h>
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

/* ---- Recent states ---------------------------------------------------------------------
 * A row rendered at delivery needs the match's state at its seq. The live match has it when
 * nothing moved since; otherwise the log would be replayed. So the state each notification
 * was written for is kept here (a direct-mapped table of the last few thousand, by match and
 * seq): a cache, never the truth; a miss (a restart, another process, an eviction) replays. */

#define STATES_SLOTS 2048

/* And where the last replays got to (256 of them, in sets of CURSOR_WAYS by match, the
 * least recently kept replaced): deliveries go oldest first, so a backlog's rows of one match
 * come about in the order of their seq (their retries' jitter swaps neighbours), and each
 * replay goes on from the furthest kept at or before its seq instead of from the match's
 * start. */
#define CURSOR_SLOTS 256
#define CURSOR_WAYS 4

struct api_states {
    pthread_mutex_t lock;         /* a leaf: nothing is taken under it */
    struct state_slot {
        int64_t match, seq;       /* match 0: empty */
        struct rules_state state;
    } slot[STATES_SLOTS];
    struct cursor_slot {
        int64_t match, seq;       /* match 0: empty */
        struct tlog_replay replay; /* the state after `seq` events, its hands' history too */
        uint64_t kept;            /* when it was kept (cursor_clock) */
    } cursor[CURSOR_SLOTS];
    uint64_t cursor_clock;
};

struct api_states *api_states_create(struct err *e)
{
    struct api_states *s = calloc(1, sizeof *s);
    if (!s) {
        err_set(e, ERR_NOMEM, "nomem", "out of memory");
        return NULL;
    }
    pthread_mutex_init(&s->lock, NULL);
    return s;
}

void api_states_destroy(struct api_states *s)
{
    if (!s)
        return;
    for (int i = 0; i < CURSOR_SLOTS; i++)
        tlog_replay_finish(&s->cursor[i].replay);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

static struct state_slot *state_slot(struct api_states *s, int64_t match, int64_t seq)
{
    uint64_t h = (uint64_t)match * 0x9E3779B97F4A7C15u ^ (uint64_t)seq * 0xC2B2AE3D27D4EB4Fu;
    return &s->slot[(h >> 32) % STATES_SLOTS];
}

/* Keep the state of (match, seq); a finished match's is not kept (its result needs the hand
 * history, which the live match has: nothing follows the end). */
static void states_put(struct api_states *s, int64_t match, int64_t seq,
                       const struct rules_state *st)
{
    if (st->over)
        return;
    pthread_mutex_lock(&s->lock);
    struct state_slot *sl = state_slot(s, match, seq);
    sl->match = match;
    sl->seq = seq;
    sl->state = *st;
    pthread_mutex_unlock(&s->lock);
}

static bool states_get(struct api_states *s, int64_t match, int64_t seq, struct rules_state *st)
{
    pthread_mutex_lock(&s->lock);
    struct state_slot *sl = state_slot(s, match, seq);
    bool found = sl->match == match && sl->seq == seq;
    if (found)
        *st = sl->state;
    pthread_mutex_unlock(&s->lock);
    return found;
}

/* The set of kept replays `match` may be in. */
static struct cursor_slot *cursor_set(struct api_states *s, int64_t match)
{
    return &s->cursor[(uint64_t)match % (CURSOR_SLOTS / CURSOR_WAYS) * CURSOR_WAYS];
}

/* Where a replay of `match` up to `seq` may start: a copy of the furthest replay kept at
 * `seq` or before, into `rp` (finish it), and its seq; 0 (rp untouched) when none is kept. */
static int64_t cursor_get(struct api_states *s, int64_t match, int64_t seq,
                          struct tlog_replay *rp)
{
    pthread_mutex_lock(&s->lock);
    struct cursor_slot *set = cursor_set(s, match), *best = NULL;
    for (int i = 0; i < CURSOR_WAYS; i++)
        if (set[i].match == match && set[i].seq <= seq && (!best || set[i].seq > best->seq))
            best = &set[i];
    struct err e;
    int64_t from = 0;
    if (best) {
        if (tlog_replay_copy(rp, &best->replay, &e))
            from = best->seq;
        else /* (no memory: a copy in part is no start) */
            tlog_replay_finish(rp);
    }
    pthread_mutex_unlock(&s->lock);
    return from;
}

/* Keep `rp`, the replay of `match` up to `seq`, for the next deliveries of that match: in
 * place of the same replay, else of the least recently kept of its set. Takes it (`rp` is
 * left empty: finishing it is a no-op). */
static void cursor_put(struct api_states *s, int64_t match, int64_t seq, struct tlog_replay *rp)
{
    struct tlog_replay copy = *rp;
    *rp = (struct tlog_replay){0};
    pthread_mutex_lock(&s->lock);
    struct cursor_slot *set = cursor_set(s, match), *c = &set[0];
    for (int i = 0; i < CURSOR_WAYS; i++) {
        if (set[i].match == match && set[i].seq == seq) {
            c = &set[i];
            break;
        }
        if (set[i].kept < c->kept)
            c = &set[i];
    }
    struct tlog_replay old = c->replay;
    c->match = match;
    c->seq = seq;
    c->replay = copy;
    c->kept = ++s->cursor_clock;
    pthread_mutex_unlock(&s->lock);
    tlog_replay_finish(&old);
}

/* ---- Rows ------------------------------------------------------------------------------ */

/* Insert row `n` (its body, NULL for a row rendered at delivery, n->seat >= 0, is not
 * taken). */
static bool write_row(struct api_app *app, const struct api_note *n, int64_t now_ms,
                      struct err *e)
{
    if (!n->body && n->seat < 0)
        return err_set(e, ERR_NOMEM, "nomem", "out of memory");
    struct store_outbox o = {
        .player = n->player,
        .channels = n->channels,
        .match = n->match,
        .seq = n->seq,
        .body = n->body ? n->body : "",
        .seat = n->seat,
        .deadline = n->deadline,
        .next_attempt = now_ms,
        .created_at = now_ms,
    };
    snprintf(o.type, sizeof o.type, "%.*s", (int)sizeof o.type - 1, n->type);
    snprintf(o.destination, sizeof o.destination, "%s", n->destination);
    if (!notify_webhook_id(o.webhook_id, sizeof o.webhook_id, now_ms))
        return err_set(e, ERR_IO, "random", "the random source failed");
    return store_outbox_add(app->store, &o, e);
}

/* Insert one row, or (into) keep it for api_outbox_write. Takes `n->body` (NULL for a row
 * rendered at delivery, n->seat >= 0). */
static bool add_row(struct api_app *app, struct api_note *n, int64_t now_ms,
                    struct api_notes *into, struct err *e)
{
    if (!n->body && n->seat < 0)
        return err_set(e, ERR_NOMEM, "nomem", "out of memory");
    if (into) {
        if (!into->note)
            into->note = malloc(API_NOTES_MAX * sizeof *into->note);
        if (!into->note || into->n == API_NOTES_MAX) {
            free(n->body);
            return err_set(e, ERR_NOMEM, "nomem", "out of memory");
        }
        into->note[into->n++] = *n;
        return true;
    }
    bool ok = write_row(app, n, now_ms, e);
    free(n->body);
    return ok;
}

/* A row of an email rendered when it is written (a reply, a confirmation). */
static bool add_email(struct api_app *app, int64_t player, const char *type, int64_t match,
                      int64_t seq, json_t *mail, int64_t now_ms, struct err *e)
{
    struct api_note n = {.player = player, .channels = STORE_CHANNEL_BIT(STORE_EMAIL),
                         .match = match, .seq = seq,
                         .seat = -1, .body = json_dumps(mail, JSON_COMPACT)};
    snprintf(n.type, sizeof n.type, "%s", type);
    return add_row(app, &n, now_ms, NULL, e);
}

bool api_outbox_add_email(struct api_app *app, const struct api_match *m, int seat,
                          const char *type, json_t *mail, int64_t now_ms, struct err *e)
{
    assert(lock_held(&app->db_lock));
    if (!api_config(app)->smtp.url[0])
        return true;
    return add_email(app, m->players[seat], type, m->id, m->seq, mail, now_ms, e);
}

bool api_outbox_add_player_email(struct api_app *app, int64_t player, const char *type,
                                 json_t *mail, int64_t now_ms, struct err *e)
{
    assert(lock_held(&app->db_lock));
    return add_email(app, player, type, 0, 0, mail, now_ms, e);
}

/* The webhook's body: {"type", "timestamp" (when the row was written), "data": the view,
 * its text as the view's one writer wrote it: no parse and print again}. */
static char *webhook_body(const char *type, const char *view, size_t len, int64_t created_ms)
{
    char stamp[32];
    time_t t = (time_t)(created_ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
    json_t *head = json_pack("{s:s, s:s}", "type", type, "timestamp", stamp);
    char *open = head ? json_dumps(head, JSON_COMPACT) : NULL; /* {"type":..,"timestamp":..} */
    json_decref(head);
    size_t n = open ? strlen(open) : 0;
    char *body = open ? malloc(n + len + 16) : NULL;
    if (body) {
        memcpy(body, open, n - 1);
        memcpy(body + n - 1, ",\"data\":", 8);
        memcpy(body + n + 7, view, len);
        memcpy(body + n + 7 + len, "}", 2);
    }
    free(open);
    return body;
}

/* The email to player `p` in `seat` (its strings new: api_mail_free; NULL ones without
 * memory). */
static void email_parts(struct api_app *app, const struct api_match *m,
                        const struct tlog_replay *rp, int64_t seq, int seat, const char *type,
                        json_t *view, const struct store_player *p, struct api_mail *mail)
{
    const char *game = rules_game_name((enum rules_game_id)rp->state.game);
    const char *url = api_config(app)->public_url;
    char subject[160], help[1400];
    snprintf(subject, sizeof subject, texts[text_of(type)].subject, game, (long long)m->id);
    char *table = render_match_text(view, url);
    const char *example = json_string_value(json_array_get(json_object_get(view, "legal"), 0));
    snprintf(help, sizeof help,
             "\nHow to answer: reply to this email with your move alone on the first line, "
             "for example \"%s\" (other commands: show, help, resign). Or send it as "
             "POST %s/v1/matches/%lld/moves with the body {\"move\": \"...\"} and your "
             "token.\n",
             example ? example : "resign", url[0] ? url : "", (long long)m->id);
    bool to_move = (rules_to_move(&rp->state) >> seat) & 1;
    if (!strcmp(type, "invitation")) { /* how to answer an invitation instead */
        snprintf(help, sizeof help,
                 "\nHow to answer: POST %s/v1/matches/%lld/accept (or /decline) with your "
                 "token, or open %s/matches/%lld and sign in.\n",
                 url, (long long)m->id, url, (long long)m->id);
        to_move = true;
    }
    size_t n = strlen(p->name) + strlen(texts[text_of(type)].intro) +
               (table ? strlen(table) : 0) + strlen(help) + 64;
    char *text = malloc(n);
    if (text)
        snprintf(text, n, "Hello %s,\n\n%s\n\n%s%s", p->name, texts[text_of(type)].intro,
                 table ? table : "", to_move ? help : "");
    char reply_to[160];
    mail_address(app->mail_key, app->mail_domain, m->id, seat, seq, reply_to);
    *mail = (struct api_mail){.to = strdup(p->email ? p->email : ""),
                              .subject = strdup(subject),
                              .text = text,
                              .reply_to = strdup(reply_to)};
    free(table);
}

void api_mail_free(struct api_mail *mail)
{
    free(mail->to);
    free(mail->subject);
    free(mail->text);
    free(mail->reply_to);
    *mail = (struct api_mail){0};
}

/* The email's parts from seat's view (of the legal moves it lists: a fraction of a pass's to
 * read back), into *mail; false without memory. */
static bool render_mail(struct api_app *app, const struct api_match *m,
                        const struct tlog_replay *rp, int64_t seq, int seat, const char *type,
                        const struct store_player *p, struct api_mail *mail)
{
    json_t *view = api_match_view_of(m, rp, seq, seat, RENDER_LEGAL_ALL, RENDER_LEGAL_FEW);
    *mail = (struct api_mail){0};
    if (view)
        email_parts(app, m, rp, seq, seat, type, view, p, mail);
    json_decref(view);
    if (mail->to && mail->subject && mail->text && mail->reply_to)
        return true;
    api_mail_free(mail);
    return false;
}

/* Seat's view of `m` after `seq` events (`rp` the state then) rendered for `channel`, to
 * player `p`, written at `created_ms`: the webhook's body into *body, or the email's parts
 * into *mail; false without memory. The same arguments make the same bytes: a row rendered
 * at delivery comes here at every attempt. */
static bool render_view(struct api_app *app, const struct api_match *m,
                        const struct tlog_replay *rp, int64_t seq, int seat, const char *type,
                        int channel, int64_t created_ms, const struct store_player *p,
                        char **body, struct api_mail *mail)
{
    if (channel != STORE_WEBHOOK)
        return render_mail(app, m, rp, seq, seat, type, p, mail);
    size_t len;
    char *text = api_match_view_text(m, rp, seq, seat, &len);
    bool ok = text && (*body = webhook_body(type, text, len, created_ms)) != NULL;
    free(text);
    return ok;
}

/* The body of a row rendered when it is written (render_view's): the webhook's JSON, or the
 * email's {"to", "subject", "text", "reply_to"}. A new string, or NULL without memory. */
static char *render_body(struct api_app *app, const struct api_match *m,
                         const struct tlog_replay *rp, int64_t seq, int seat, const char *type,
                         int channel, int64_t created_ms, const struct store_player *p)
{
    char *body = NULL;
    struct api_mail mail = {0};
    if (!render_view(app, m, rp, seq, seat, type, channel, created_ms, p, &body, &mail))
        return NULL;
    if (channel != STORE_WEBHOOK) {
        json_t *j = json_pack("{s:s, s:s, s:s, s:s}", "to", mail.to, "subject", mail.subject,
                              "text", mail.text, "reply_to", mail.reply_to);
        body = j ? json_dumps(j, JSON_COMPACT) : NULL;
        json_decref(j);
        api_mail_free(&mail);
    }
    return body;
}

/* Player `player`'s record, for a row rendered now (an invitation's email names them and
 * goes to their address): through the reading connection before the transaction (`into`),
 * else the transaction's. */
static bool player_read(struct api_app *app, int64_t player, bool into, struct store_player *p,
                        struct err *e)
{
    if (!into)
        return store_player_get(app->store, player, p, e);
    lock_take(&app->read_lock);
    bool found = store_player_get(app->reader, player, p, e);
    lock_drop(&app->read_lock);
    return found;
}

bool api_outbox_notify(struct api_app *app, const struct api_match *m, int64_t seq,
                       const struct tlog_replay *rp, int seat, const char *type,
                       int64_t now_ms, struct api_notes *into, struct err *e)
{
    /* Rendered at delivery from what the row holds, except an invitation: its view (who
     * accepted) changes while the match is pending, and invitations are few. */
    bool later = strcmp(type, "invitation") != 0;
    /* What the player wants: their facts (facts.c; a move whose players are known reads no
     * row), or, for a row rendered now, their record (the body names them). */
    struct store_player p = {0};
    struct api_facts f;
    bool found = later ? api_player_facts(app, m->players[seat], into != NULL, &f, e)
                       : player_read(app, m->players[seat], into != NULL, &p, e);
    if (!found)
        return false;
    if (!later)
        api_facts_of(&p, &f);
    /* (no email to an address its owner has not confirmed) */
    bool email = api_config(app)->smtp.url[0] && f.email &&
                 api_facts_want(&f, STORE_EMAIL, type) &&
                 (m->watching[seat] == 0 || f.email_when_watching);
    bool webhook = f.webhook && api_facts_want(&f, STORE_WEBHOOK, type);
    /* (before the change commits; were it to fail, a row later written for that seq comes
     * here first with the state it was written for: changes to a match are one at a time) */
    if (later && (email || webhook))
        states_put(app->states, m->id, seq, &rp->state);
    /* Rendered at delivery: one row, whatever its channels (one notification, one row:
     * docs/service.md); rendered now: one row a channel, each with its channel's body. */
    int channels = (email ? STORE_CHANNEL_BIT(STORE_EMAIL) : 0) |
                   (webhook ? STORE_CHANNEL_BIT(STORE_WEBHOOK) : 0);
    bool ok = true;
    for (int channel = STORE_EMAIL; ok && channel <= STORE_WEBHOOK; channel++) {
        int these = later ? channels : channels & STORE_CHANNEL_BIT(channel);
        if (!these)
            continue;
        struct api_note n = {.player = f.player, .channels = these, .match = m->id, .seq = seq,
                             .seat = later ? seat : -1,
                             .deadline = later ? m->clock.deadline : 0};
        snprintf(n.type, sizeof n.type, "%s", type);
        if (these & STORE_CHANNEL_BIT(STORE_WEBHOOK))
            snprintf(n.destination, sizeof n.destination, "%s", f.destination);
        if (!later)
            n.body = render_body(app, m, rp, seq, seat, type, channel, now_ms, &p);
        ok = add_row(app, &n, now_ms, into, e);
        if (later)
            break; /* (the one row) */
    }
    store_player_finish(&p);
    return ok;
}

bool api_outbox_league_invitation(struct api_app *app, const struct store_league *l,
                                  const struct store_player *p, int64_t now_ms, struct err *e)
{
    assert(lock_held(&app->db_lock));
    const char *type = "league_invitation";
    struct api_facts f;
    api_facts_of(p, &f);
    bool email = api_config(app)->smtp.url[0] && f.email && api_facts_want(&f, STORE_EMAIL, type);
    bool webhook = f.webhook && api_facts_want(&f, STORE_WEBHOOK, type);
    if (!email && !webhook)
        return true;
    struct store_player org = {0};
    struct err none;
    bool named = l->organizer && store_player_get(app->store, l->organizer, &org, &none);
    json_t *league = json_pack("{s:I, s:s, s:s, s:I, s:s?}", "id", (json_int_t)l->id, "name",
                               l->name, "game", l->game, "organizer", (json_int_t)l->organizer,
                               "organizer_name", named ? org.name : NULL);
    bool ok = league != NULL || err_set(e, ERR_NOMEM, "nomem", "out of memory");
    if (ok && webhook) {
        json_t *data = json_pack("{s:O, s:I, s:I}", "league", league, "player", (json_int_t)p->id,
                                 "invited_at", (json_int_t)(now_ms / 1000));
        char *text = data ? json_dumps(data, JSON_COMPACT) : NULL;
        struct api_note n = {.player = p->id, .channels = STORE_CHANNEL_BIT(STORE_WEBHOOK),
                             .seat = -1,
                             .body = text ? webhook_body(type, text, strlen(text), now_ms) : NULL};
        snprintf(n.type, sizeof n.type, "%s", type);
        snprintf(n.destination, sizeof n.destination, "%s", f.destination);
        free(text);
        json_decref(data);
        ok = add_row(app, &n, now_ms, NULL, e);
    }
    if (ok && email) {
        const char *url = api_config(app)->public_url;
        char subject[300];
        snprintf(subject, sizeof subject, "You are invited to the league %s", l->name);
        struct buf b = BUF_INIT;
        buf_printf(&b, "Hello %s,\n\n%s invites you to play %s in the league \"%s\".\n\n", p->name,
                   named ? org.name : "Its organiser", l->game, l->name);
        /* How to answer: the league's page when the service has a public address, else the
         * API (docs/api.md "Leagues"). */
        if (url[0])
            buf_printf(&b, "To accept or decline, open %s/leagues/%lld\n", url, (long long)l->id);
        else
            buf_printf(&b, "To accept, POST /v1/leagues/%lld/members with your token; to decline, "
                           "DELETE /v1/leagues/%lld/members/%lld.\n",
                       (long long)l->id, (long long)l->id, (long long)p->id);
        char *text = buf_finish(&b, NULL);
        json_t *mail = text ? json_pack("{s:s, s:s, s:s}", "to", p->email, "subject", subject,
                                          "text", text)
                              : NULL;
        ok = mail ? add_email(app, p->id, type, 0, 0, mail, now_ms, e)
                  : err_set(e, ERR_NOMEM, "nomem", "out of memory");
        json_decref(mail);
        free(text);
    }
    json_decref(league);
    store_player_finish(&org);
    return ok;
}

/* Render row `o` for player `p` from `at`, its state, under m's lock: its webhook's body
 * into *body, or its email into *mail. */
static bool render_row(struct api_app *app, const struct api_match *m,
                       const struct tlog_replay *at, const struct store_outbox *o,
                       const struct store_player *p, char **body, struct api_mail *mail,
                       struct err *e)
{
    assert(lock_held(&m->lock));
    /* The match as the row was written: what never changes is m's; the deadline (which moves
     * with every turn) the row's; the state the seq's. A copy of m's fields, read under its
     * lock, never written. */
    struct api_match then = *m;
    then.clock.deadline = o->deadline;
    then.invitation = STORE_MATCH_STARTED; /* (only a started match's rows render later; a
                                            * cache behind the database may not know yet) */
    return render_view(app, &then, at, o->seq, o->seat, o->type, o->channel, o->created_at, p,
                       body, mail) ||
           err_set(e, ERR_NOMEM, "nomem", "out of memory");
}

bool api_outbox_render(struct api_app *app, const struct store_outbox *o,
                       const struct store_player *p, char **body, struct api_mail *mail,
                       struct err *e)
{
    *body = NULL;
    *mail = (struct api_mail){0};
    struct api_match *m = api_match_find(app, o->match, e);
    if (!m)
        return false;
    /* The state at the row's seq: m's own while nothing moved since, else the cache's, else
     * a replay of the stored log, made without m's lock (a delivery gives way to moves on a
     * busy core: it must not hold up the match's next move meanwhile). */
    struct tlog_replay rp = {0};
    bool ok;
    lock_take(&m->lock);
    if (o->seq == m->seq || states_get(app->states, o->match, o->seq, &rp.state)) {
        ok = render_row(app, m, o->seq == m->seq ? &m->replay : &rp, o, p, body, mail, e);
        lock_drop(&m->lock);
    } else {
        struct api_match fields = *m; /* (its id, game and options, for the replay) */
        lock_drop(&m->lock);
        /* (from where the last delivery of this match left it, if it was not further) */
        int64_t from = cursor_get(app->states, o->match, o->seq, &rp);
        ok = from ? api_match_replay_from(app, &fields, from, o->seq, &rp, e)
                  : api_match_replay_at(app, &fields, o->seq, &rp, e);
        if (ok) {
            lock_take(&m->lock);
            ok = render_row(app, m, &rp, o, p, body, mail, e);
            lock_drop(&m->lock);
        }
        if (ok) /* (it takes rp: the render is done with it) */
            cursor_put(app->states, o->match, o->seq, &rp);
    }
    tlog_replay_finish(&rp);
    api_match_release(app, m);
    return ok;
}

bool api_outbox_write(struct api_app *app, struct api_notes *notes, int64_t now_ms,
                      struct err *e)
{
    for (int i = 0; i < notes->n; i++)
        if (!write_row(app, &notes->note[i], now_ms, e))
            return false;
    return true;
}

void api_notes_free(struct api_notes *notes)
{
    for (int i = 0; i < notes->n; i++)
        free(notes->note[i].body);
    notes->n = 0;
    free(notes->note);
    notes->note = NULL;
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

