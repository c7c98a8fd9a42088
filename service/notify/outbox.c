/* outbox.c - the delivery of notifications. What a committed change tells each seat is
 * written to the outbox in the change's own transaction (notes.c); a worker delivers due
 * emails one at a time, and a dispatcher hands due webhooks to a pool of delivery threads
 * bounded per destination; none holds a lock while it talks to the network, and failures are
 * retried with exponential backoff and jitter before giving up.
 */
#include "core.h"
#include "metrics.h"
#include "log.h"
#include "notify.h"

#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* How many of the rows due a claim looks at: the first few dozen in due order, sorted (a
 * claim that looked at all of them would sort the whole backlog, at every pass). */
#define CLAIM_WINDOW 64

/* The window of a claim of `want` rows, by destination (webhooks: each destination's rows
 * past its room are passed over) or not (emails). A process alone on its database (SQLite)
 * claiming emails looks at the rows it wants and no more: rows claimed already (in flight)
 * are passed over before the window is counted, so the first `want` it finds are the ones
 * it takes (reading 64 rows to claim one cost a delivery about 100 µs). Webhooks look
 * further, as the rows of a destination without room may come first; so do processes
 * sharing a database: the first rows may be another process's, being claimed at this
 * instant (skipped, not waited for). A window reads only the rows due: without a backlog,
 * a few. */
static int claim_window(struct api_app *app, int want, bool by_destination)
{
    return by_destination || store_shared(app->store) ? CLAIM_WINDOW : want;
}

/* How far below the rest of the daemon the delivery threads run (thread_lower_priority):
 * on a busy core a move, which its player waits for, goes before a notification, which can
 * wait; a delivery still gets about a tenth of the core that a move thread gets
 * (docs/decisions.md "Deliveries give way to moves"). */
#define DELIVERY_NICE 10

/* Retry delays after the 1st, 2nd, ... failure; after the last the delivery is dead. */
static const int64_t retry_seconds[] = {5, 300, 1800, 7200, 18000, 36000, 86400};
#define MAX_ATTEMPTS ((int)(sizeof retry_seconds / sizeof retry_seconds[0]) + 1)

/* ---- Delivery ----------------------------------------------------------------------------- */

/* "<cardpost-....PART@domain>" with the domain of the sender address, PART the database's
 * random part (so that ids are globally unique, RFC 5322 §3.6.4, not the same in every new
 * database). */
static void message_id(char *out, size_t size, const struct api_app *app, const char *fmt,
                       long long a, long long b)
{
    const char *at = strchr(api_config(app)->smtp.from, '@');
    char local[96];
    snprintf(local, sizeof local, fmt, a, b);
    snprintf(out, size, "<%s.%s@%s>", local, app->message_id_part, at ? at + 1 : "localhost");
}


static int64_t backoff_ms(int failures)
{
    int64_t base = retry_seconds[failures - 1] * 1000;
    uint32_t r = 0;
    RAND_bytes((unsigned char *)&r, sizeof r);
    /* jitter: -10% .. +10% */
    return base - base / 10 + (int64_t)(r % (uint32_t)(base / 5 + 1));
}

/* A delivery attempt's log line (log.h): which row, to whom, how it went and what comes
 * next. Never its body, the webhook's secret or the email's text. */
static void log_attempt(const struct store_outbox *o, const struct store_attempt *a,
                        int attempts, int status, int64_t next)
{
    struct log_line l;
    if (!log_begin(&l, a->ok ? LOG_LEVEL_INFO : LOG_LEVEL_WARN, "delivery"))
        return;
    log_str(&l, "channel", o->channel == STORE_WEBHOOK ? "webhook" : "email");
    log_int(&l, "outbox", o->id);
    log_int(&l, "player", o->player);
    if (o->match)
        log_int(&l, "match", o->match);
    log_str(&l, "type", o->type);
    log_int(&l, "attempt", attempts);
    log_str(&l, "outcome", status == STORE_DELIVERED ? "delivered"
                           : status == STORE_DEAD    ? "dead"
                                                     : "retry");
    if (a->status)
        log_int(&l, "status", a->status);
    log_ms(&l, "duration_ms", (double)a->duration_ms);
    if (next)
        log_time(&l, "next_attempt", next);
    if (!a->ok)
        log_str(&l, "error", a->error);
    log_end_soon(&l);
}

/* An email's parts, as deliver_email reads them (a reply's in_reply_to and references, or
 * NULL). */
struct email {
    const char *to, *subject, *text, *reply_to, *in_reply_to, *references;
};

/* One email attempt of row `o` (`mail`) to player `p`. */
static void deliver_email(struct api_app *app, struct notify_conn *conn,
                          const struct store_outbox *o, const struct email *mail,
                          const struct store_player *p, int64_t start, struct notify_outcome *out)
{
    struct err e;
    const char *to = mail->to, *subject = mail->subject, *text = mail->text;
    const char *in_reply_to = mail->in_reply_to;
    char id[160], root[160], from[400];
    /* A confirmation email goes to the player's pending address; every other email only
     * to the address they confirmed (the one it was written for: not to an old one). */
    bool confirm = !strcmp(o->type, "email_confirm");
    if (confirm)
        message_id(id, sizeof id, app, "cardpost-confirm-%lld-%lld", (long long)o->player,
                   (long long)o->id);
    else
        message_id(id, sizeof id, app, "cardpost-%lld-%lld", (long long)o->match,
                   (long long)o->id);
    message_id(root, sizeof root, app, "cardpost-match-%lld-player-%lld", (long long)o->match,
               (long long)o->player);
    snprintf(from, sizeof from, "cardpost <%s>", api_config(app)->smtp.from);
    /* The first message of a match's thread is its root; a reply to the player's own
     * message threads under it. An email of no match (a confirmation, a league's invitation)
     * is a thread of its own. */
    bool first = !strcmp(o->type, "match_started");
    bool alone = confirm || o->match == 0;
    bool owner = to && p->email && !strcmp(p->email, to) && p->email_confirmed != confirm;
    char *message = to && subject && text && owner
                        ? notify_email_build(from, to, mail->reply_to, subject,
                                             first ? root : id,
                                             alone         ? NULL
                                             : in_reply_to ? in_reply_to
                                                           : root,
                                             in_reply_to ? mail->references : NULL,
                                             start / 1000, text)
                        : NULL;
    if (to && !owner)
        snprintf(out->error, sizeof out->error,
                 confirm ? "not sent: the address was confirmed or changed meanwhile"
                         : "not sent: the player has not confirmed this address");
    else if (to && !notify_mailbox_ok(to, &e))
        snprintf(out->error, sizeof out->error, "refused to send: %s", e.msg);
    else if (!message)
        snprintf(out->error, sizeof out->error, "the queued email is malformed");
    else
        notify_smtp_send(conn, &api_config(app)->smtp, to, message, out);
    free(message);
}

/* One email attempt of a row rendered when it was written: its parts read from its body
 * ({"to", "subject", "text", "reply_to", and a reply's "in_reply_to", "references"}). */
static void deliver_stored_email(struct api_app *app, struct notify_conn *conn,
                                 const struct store_outbox *o, const struct store_player *p,
                                 int64_t start, struct notify_outcome *out)
{
    json_t *j = json_loads(o->body, 0, NULL);
#define FIELD(name) json_string_value(json_object_get(j, name))
    struct email mail = {FIELD("to"),       FIELD("subject"),     FIELD("text"),
                         FIELD("reply_to"), FIELD("in_reply_to"), FIELD("references")};
#undef FIELD
    deliver_email(app, conn, o, &mail, p, start, out);
    json_decref(j);
}

/* One attempt of row `o` to player `p` (read), into `out`. A row rendered at delivery
 * (o->seat >= 0) is rendered now, from the log: the same bytes at every attempt. */
static void attempt(struct api_app *app, struct notify_conn *conn, const struct store_outbox *o,
                    const struct store_player *p, int64_t start, struct notify_outcome *out)
{
    struct err e;
    char *rendered = NULL;
    struct api_mail mail = {0};
    if (o->channel == STORE_WEBHOOK && (!p->webhook_url || p->webhook_disabled)) {
        snprintf(out->error, sizeof out->error, "the player has no enabled webhook endpoint");
        return;
    }
    if (o->seat >= 0 && !api_outbox_render(app, o, p, &rendered, &mail, &e)) {
        snprintf(out->error, sizeof out->error, "cannot render the notification: %s", e.msg);
        out->retry = true;
        return;
    }
    if (o->channel == STORE_WEBHOOK)
        notify_webhook_post(conn, p->webhook_url, p->webhook_secret ? p->webhook_secret : "",
                            o->webhook_id, start / 1000, rendered ? rendered : o->body,
                            &api_config(app)->webhooks, out);
    else if (o->seat >= 0)
        deliver_email(app, conn, o,
                      &(struct email){mail.to, mail.subject, mail.text, mail.reply_to, NULL, NULL},
                      p, start, out);
    else
        deliver_stored_email(app, conn, o, p, start, out);
    free(rendered);
    api_mail_free(&mail);
}

/* ---- Claims and records, through the group commit ------------------------------------------
 * A claim and an attempt's record are writes: they go through the committer like the moves
 * (api_write_wait), so that they share the moves' transactions and waits for the disk
 * instead of each committing (and, durable to power, syncing) on its own while holding the
 * connection the committer needs. */

struct claim {
    int channel;
    int64_t now, until;
    const char *skip_ids, *rooms;
    int room, window;
    struct store_outbox *out;
    int max, n;
};

static bool claim_run(struct api_app *app, void *ctx, struct err *e)
{
    struct claim *c = ctx;
    for (int i = 0; i < c->n; i++) /* (run again: the rows of a claim rolled back) */
        store_outbox_finish(&c->out[i]);
    c->n = store_outbox_claim(app->store, c->channel, c->now, c->until, c->skip_ids,
                              c->rooms, c->room, c->window, c->out, c->max, e);
    return c->n >= 0;
}


struct record {
    int64_t id;
    const struct store_attempt *a;
    int status, attempts;
    int64_t next;
    int64_t player;                /* whose webhook said 410 Gone at `gone`, or 0 */
    const char *gone;
};

/* After its record: the webhook that said 410 Gone turned off. */
static bool record_gone(struct api_app *app, const struct record *r, struct err *e)
{
    if (r->gone && (!store_player_webhook_gone(app->store, r->player, r->gone, e) ||
                    !api_player_announce(app, r->player, e))) {
        log_msg(LOG_LEVEL_ERROR, "delivery", "cannot disable a webhook: %s", e->msg);
        return false;
    }
    return true;
}

/* An attempt made, its record not yet written: the player read for it (a disabled webhook's
 * address, r.gone, points into it) and the record. */
struct done {
    struct store_player p;
    struct store_attempt a;
    struct record r;
};

/* Make one attempt of row `o`: its record into `d`, to be written (record_done). */
static void attempt_row(struct api_app *app, struct notify_conn *conn,
                        const struct store_outbox *o, struct done *d)
{
    struct notify_outcome out = {0};
    struct err e;
    int64_t start = api_now_ms(app);
    lock_take(&app->read_lock); /* (reads: the reading connection, never waiting for a commit) */
    bool have = store_player_get(app->reader, o->player, &d->p, &e);
    lock_drop(&app->read_lock);
    if (!have) {
        snprintf(out.error, sizeof out.error, "the player cannot be read: %s", e.msg);
        out.retry = true;
    } else {
        attempt(app, conn, o, &d->p, start, &out);
    }
    int64_t end = api_now_ms(app);
    d->a = (struct store_attempt){.at = start, .ok = out.ok, .status = out.status,
                                  .duration_ms = end - start, .unreachable = out.unreachable};
    snprintf(d->a.error, sizeof d->a.error, "%s", out.error);
    int attempts = o->attempts + 1;
    int status = STORE_PENDING;
    int64_t next = 0;
    if (out.ok)
        status = STORE_DELIVERED;
    else if (!out.retry || out.disable || attempts >= MAX_ATTEMPTS)
        status = STORE_DEAD;
    else
        next = end + backoff_ms(attempts);
    metrics_delivery(o->channel,
                     status == STORE_DELIVERED ? METRICS_DELIVERED
                     : status == STORE_DEAD    ? METRICS_DEAD
                                               : METRICS_RETRY,
                     (double)(end - start) / 1000, (double)(end - o->created_at) / 1000);
    log_attempt(o, &d->a, attempts, status, next);
    /* (only the flag, and only for the address that said so: the record read before the
     * attempt may be stale by now, a new webhook_url or preferences set meanwhile) */
    d->r = (struct record){o->id, &d->a, status, attempts, next, o->player,
                           out.disable && have ? d->p.webhook_url : NULL};
}

/* One write of a worker: the records of `n` attempts made (`d`), the claims given back
 * on `nrelease` rows claimed but not taken (`release`), then a claim (`c`, or NULL), in one
 * transaction: one group commit, not one for each record, each release and the claim. */
struct pass {
    struct done **d;
    int n;
    const int64_t *release;
    int nrelease;
    struct claim *c;
};

/* The records and releases in one store_outbox_settle (which takes their rows in one
 * order), then the webhooks gone, then the claim. */
static bool pass_run(struct api_app *app, void *ctx, struct err *e)
{
    struct pass *w = ctx;
    int n = w->n + w->nrelease;
    struct store_settle *rows = n ? calloc((size_t)n, sizeof *rows) : NULL;
    if (n && !rows)
        return err_set(e, ERR_NOMEM, "nomem", "out of memory");
    for (int i = 0; i < w->n; i++) {
        const struct record *r = &w->d[i]->r;
        rows[i] = (struct store_settle){r->id, r->a, r->status, r->attempts, r->next};
    }
    for (int i = 0; i < w->nrelease; i++)
        rows[w->n + i] = (struct store_settle){.id = w->release[i]};
    bool ok = !n || store_outbox_settle(app->store, rows, n, e);
    free(rows);
    for (int i = 0; ok && i < w->n; i++)
        ok = record_gone(app, &w->d[i]->r, e);
    return ok && (!w->c || claim_run(app, w->c, e));
}

/* Write pass `w`, then let go of its records: the claim's count, 0 without a claim, or -1
 * when the write failed (logged: the records' rows go again once their claims run out). */
static int pass_write(struct api_app *app, struct pass *w)
{
    if (w->n == 0 && w->nrelease == 0 && !w->c)
        return 0;
    struct err e;
    bool written = api_write_wait(app, pass_run, w, &e);
    /* A write the server undid as one side of a deadlock is written again, not left to be
     * delivered a second time once its claim ran out. (Two passes at once no longer wait for
     * each other's rows: each takes its rows first, in one order, store_outbox_settle, and
     * the other rows a record updates only where nobody holds them; a row locked by
     * something else, a claim whose lease ran out while its delivery went on, still may.) */
    for (int again = 0; !written && api_stale(&e) && again < 3; again++) {
        if (w->c) {
            for (int i = 0; i < w->c->n; i++) /* (claimed, then undone) */
                store_outbox_finish(&w->c->out[i]);
            w->c->n = 0;
        }
        written = api_write_wait(app, pass_run, w, &e);
    }
    for (int i = 0; i < w->n; i++) {
        if (!written)
            log_msg(LOG_LEVEL_ERROR, "delivery", "cannot record delivery %lld: %s",
                    (long long)w->d[i]->r.id, e.msg);
        if (w->d[i]->r.gone) /* (the next notification knows the endpoint is off) */
            api_facts_forget(app, w->d[i]->r.player);
        store_player_finish(&w->d[i]->p);
    }
    for (int i = 0; !written && i < w->nrelease; i++) /* (claimed until their lease ends) */
        log_msg(LOG_LEVEL_ERROR, "delivery", "cannot release delivery %lld: %s",
                (long long)w->release[i], e.msg);
    if (!w->c)
        return written ? 0 : -1;
    if (written)
        return w->c->n;
    for (int i = 0; i < w->c->n; i++) /* (claimed, then the commit failed) */
        store_outbox_finish(&w->c->out[i]);
    log_msg(LOG_LEVEL_ERROR, "delivery", "cannot claim deliveries: %s", e.msg);
    return -1;
}

/* Write pass `w` (its records and releases; NULL: none), and claim up to `max` due rows of
 * `channel` until `until` among the first `window` due, within each destination's room
 * (`rooms`, `room`: store_outbox_claim) in the same write: the count, or -1 (logged). */
static int claim(struct api_app *app, const struct pass *w, int channel, int64_t now,
                 int64_t until, const char *skip_ids, const char *rooms, int room, int window,
                 struct store_outbox *out, int max)
{
    struct claim c = {channel, now, until, skip_ids, rooms, room, window, out, max, 0};
    struct pass with = w ? *w : (struct pass){0};
    with.c = &c;
    return pass_write(app, &with);
}

/* When the next row of `channel` falls due (store_outbox_next, a read), at most a second
 * from `now`. */
static int64_t due_at(struct api_app *app, int channel, int64_t now)
{
    int64_t when;
    struct err e;
    lock_take(&app->read_lock);
    bool found = store_outbox_next(app->reader, channel, &when, &e);
    lock_drop(&app->read_lock);
    return found && when < now + 1000 ? when : now + 1000;
}

/* How long a claim of `n` rows of `channel` lasts: longer than their deliveries can take
 * (each is bounded by its timeouts), so that a row is never delivered by two processes at
 * once unless the one that claimed it died (or hung past every timeout). */
static int64_t lease_ms(const struct api_app *app, int channel, int n)
{
    const struct config *cf = api_config(app);
    int64_t each = channel == STORE_WEBHOOK
                       ? (cf->webhooks.total_timeout_ms ? cf->webhooks.total_timeout_ms : 10000)
                       : (cf->smtp.timeout_ms ? cf->smtp.timeout_ms : 30000);
    return (int64_t)n * (each + 1000) + 30000;
}

/* Sleep until `until_ms` of the service's time or a wake-up, at most one second. */
static void nap(struct api_app *app, int64_t until_ms)
{
    int64_t wait = until_ms - api_now_ms(app);
    if (wait > 1000)
        wait = 1000;
    if (wait <= 0)
        return;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += wait / 1000;
    ts.tv_nsec += (wait % 1000) * 1000000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    lock_take(&app->wake_lock);
    if (!api_stopping(app))
        lock_timedwait(&app->wake, &app->wake_lock, &ts);
    lock_drop(&app->wake_lock);
}

/* ---- Webhooks: a pool of concurrent deliveries --------------------------------------------
 * The webhook worker is a dispatcher: it hands due rows to a pool of delivery threads (at
 * most webhook_concurrency at once, at most webhook_per_host to one destination), so that a
 * slow or dead endpoint holds only its own slots. A row in flight stays pending in the
 * database until its attempt is recorded (a crash delivers it again after the restart: at
 * least once) and is left out of the dispatcher's queries meanwhile (never twice at once);
 * a player whose destination is full is left out until a slot frees. A slot's attempt is
 * recorded by the dispatcher, in its next claim's write: one write a pass, not two a
 * delivery (a claim, a record). */

enum slot_state {
    SLOT_FREE,
    SLOT_ASSIGNED, /* its thread delivers the row */
    SLOT_MADE,     /* the attempt is made, its record (done) waits for the dispatcher */
};

struct slot {
    struct pool *pool;
    enum slot_state state;
    struct store_outbox row;     /* owned while assigned or made */
    struct done done;            /* made: the attempt's record */
    char dest[300];              /* host:port of the row's endpoint */
    pthread_cond_t go;           /* (pool's lock) signalled when a row is assigned to it, or
                                  * the pool stops: its thread alone wakes, not every slot's */
    pthread_t thread;
};

struct pool {
    struct api_app *app;
    struct lock lock;
    bool stop;
    unsigned long completions;   /* deliveries finished so far: the dispatcher's wake-ups */
    int64_t looked_far;          /* when a claim last looked past the window (service ms) */
    bool backlog;                /* the last claim took all it asked for: more may be due,
                                  * and the next pass claims without asking (due_at, a read
                                  * on a connection the commits left behind: a fifth of the
                                  * deliveries' time behind a backlog) */
    int size;
    struct slot *slot;
    struct done **made;          /* the dispatcher's, for a pass: the made slots' records */
    struct slot **made_slot;     /* and their slots (size of each) */
    int64_t *held;               /* rows claimed but not taken (their destination full):
                                  * given back in the next pass's write */
    int nheld, held_cap;
};

static void *slot_main(void *arg)
{
    thread_name("delivery");
    thread_lower_priority(DELIVERY_NICE);
    struct slot *sl = arg;
    struct pool *pl = sl->pool;
    struct notify_conn *conn = notify_conn_new(); /* (NULL: a connection per delivery) */
    lock_take(&pl->lock);
    for (;;) {
        while (sl->state != SLOT_ASSIGNED && !pl->stop)
            lock_wait(&sl->go, &pl->lock);
        if (sl->state != SLOT_ASSIGNED)
            break;
        lock_drop(&pl->lock);
        sl->done = (struct done){0};
        attempt_row(pl->app, conn, &sl->row, &sl->done);
        lock_take(&pl->lock);
        sl->state = SLOT_MADE; /* (the dispatcher records it, then frees the slot) */
        pl->completions++;
        lock_drop(&pl->lock);
        api_wake(pl->app);
        lock_take(&pl->lock);
    }
    lock_drop(&pl->lock);
    notify_conn_free(conn);
    return NULL;
}

/* A JSON array of integers, grown as needed. */
struct ints {
    char *text;
    size_t len, cap;
};

static bool ints_add(struct ints *a, int64_t v)
{
    if (a->len + 24 > a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 256;
        char *t = realloc(a->text, cap);
        if (!t)
            return false;
        a->text = t;
        a->cap = cap;
    }
    if (a->len == 0)
        a->text[a->len++] = '[';
    else
        a->text[a->len - 1] = ','; /* over the closing bracket */
    a->len += (size_t)snprintf(a->text + a->len, a->cap - a->len, "%lld]", (long long)v);
    return true;
}

static const char *ints_text(const struct ints *a)
{
    return a->len ? a->text : "[]";
}

/* The destination of a player's webhook ("" when it has none or it is not a URL). */
static void destination_of(struct api_app *app, int64_t player, char *dest, size_t size)
{
    struct store_player p = {0};
    struct err e;
    dest[0] = '\0';
    lock_take(&app->read_lock);
    bool have = store_player_get(app->reader, player, &p, &e);
    lock_drop(&app->read_lock);
    if (have && p.webhook_url && !notify_webhook_destination(p.webhook_url, dest, size, &e))
        dest[0] = '\0';
    store_player_finish(&p);
}

/* Give row `o` to a free slot of the pool, unless its destination has all the slots it
 * may have (or none is free). True when the slot took it (and its strings). */
static bool assign(struct pool *pl, struct store_outbox *o, const char *dest)
{
    struct api_app *app = pl->app;
    lock_take(&pl->lock);
    int same = 0;
    struct slot *to = NULL;
    for (int k = 0; k < pl->size; k++) {
        struct slot *sl = &pl->slot[k];
        if (sl->state == SLOT_FREE)
            to = to ? to : sl;
        else if (sl->state == SLOT_ASSIGNED && dest[0] && !strcmp(sl->dest, dest))
            same++; /* (a made slot is done with its destination) */
    }
    if (dest[0] && same >= api_config(app)->webhooks.per_destination)
        to = NULL; /* its destination is full: leave the player out for now */
    if (to) {
        to->row = *o; /* the slot owns the row's strings now */
        snprintf(to->dest, sizeof to->dest, "%s", dest);
        to->state = SLOT_ASSIGNED;
        pthread_cond_signal(&to->go);
    }
    lock_drop(&pl->lock);
    return to != NULL;
}

/* The room of each destination the pool's slots deliver to now (a JSON object of
 * destination to how many more rows it may take, 0 for a full one), for the claims to take
 * no more of its rows than that (store_outbox_claim); NULL without memory. *some_full:
 * whether one of them has no room. */
static char *destination_rooms(struct pool *pl, bool *some_full)
{
    json_t *rooms = json_object();
    int per = api_config(pl->app)->webhooks.per_destination;
    *some_full = false;
    lock_take(&pl->lock);
    for (int i = 0; rooms && i < pl->size; i++) {
        struct slot *sl = &pl->slot[i];
        if (sl->state != SLOT_ASSIGNED || !sl->dest[0] || json_object_get(rooms, sl->dest))
            continue;
        int same = 0;
        for (int k = 0; k < pl->size; k++)
            same += pl->slot[k].state == SLOT_ASSIGNED && !strcmp(pl->slot[k].dest, sl->dest);
        int room = same >= per ? 0 : per - same;
        *some_full = *some_full || room == 0;
        json_object_set_new(rooms, sl->dest, json_integer(room));
    }
    lock_drop(&pl->lock);
    char *text = rooms ? json_dumps(rooms, JSON_COMPACT) : NULL;
    json_decref(rooms);
    return text;
}

/* Give back a row claimed but not taken, on its own (hold_back had no memory). */
static bool release_run(struct api_app *app, void *ctx, struct err *e)
{
    return store_outbox_release(app->store, *(int64_t *)ctx, e);
}

/* Hold back row `id`, claimed but not taken, to give it back in the next write (false
 * without memory). */
static bool hold_back(struct pool *pl, int64_t id)
{
    if (pl->nheld == pl->held_cap) {
        int cap = pl->held_cap ? pl->held_cap * 2 : 16;
        int64_t *v = realloc(pl->held, (size_t)cap * sizeof *v);
        if (!v)
            return false;
        pl->held = v;
        pl->held_cap = cap;
    }
    pl->held[pl->nheld++] = id;
    return true;
}

/* The first `n` slots of pl->made_slot, their records written (or not: logged), are free
 * again, and their rows let go of. */
static void made_free(struct pool *pl, int n)
{
    if (n == 0)
        return;
    lock_take(&pl->lock);
    for (int i = 0; i < n; i++) {
        store_outbox_finish(&pl->made_slot[i]->row);
        pl->made_slot[i]->state = SLOT_FREE;
    }
    lock_drop(&pl->lock);
}

/* The pass's write without a claim (nothing to claim, or stopping): the records of the
 * first `n` made slots and the rows held back; the slots are free after it. */
static void made_record(struct pool *pl, int n)
{
    pass_write(pl->app, &(struct pass){pl->made, n, pl->held, pl->nheld, NULL});
    pl->nheld = 0;
    made_free(pl, n);
}

/* One pass: claim due rows (store_outbox_claim: no other process delivers them meanwhile),
 * no more of a destination's than its free slots (its room: none for a full one), and hand
 * each to a free slot; a row whose destination turns out full (its player's endpoint
 * changed since it was written) goes back unclaimed and is left out of this pass. The
 * attempts made since the last pass are recorded in the claim's write, and their slots are
 * free after it. Returns when the next row falls due (or now + 1 s): a row due now but not
 * taken waits for a slot, whose end wakes the pass. */
static int64_t dispatch_once(struct pool *pl, int64_t now)
{
    struct api_app *app = pl->app;
    struct ints skip_ids = {0};
    int free_slots = 0, made = 0;
    lock_take(&pl->lock);
    for (int i = 0; i < pl->size; i++) {
        struct slot *sl = &pl->slot[i];
        if (sl->state == SLOT_MADE) { /* (free once recorded, below) */
            pl->made_slot[made] = sl;
            pl->made[made++] = &sl->done;
        }
        if (sl->state != SLOT_ASSIGNED)
            free_slots++;
        /* (a made row is recorded in the claim's own write, before it: skipped all the same) */
        if (sl->state != SLOT_FREE && !ints_add(&skip_ids, sl->row.id))
            free_slots = -1000000; /* out of memory: try again later */
    }
    lock_drop(&pl->lock);
    int64_t next = pl->backlog ? now : due_at(app, STORE_WEBHOOK, now);
    if (next > now) { /* (a claim is a write: none while nothing is due) */
        made_record(pl, made);
        free(skip_ids.text);
        return next;
    }
    next = now + 1000;
    bool more = free_slots > 0;
    while (more && !api_stopping(app)) {
        struct store_outbox rows[16];
        struct err e;
        int want = free_slots < 16 ? free_slots : 16;
        bool some_full;
        char *rooms = destination_rooms(pl, &some_full);
        /* Among the first rows due, so that a busy destination's backlog is not read at
         * every pass; past them at most once a second (no destination waits behind another's
         * backlog for longer). Always more than the rows wanted: a destination's rows past
         * its room are passed over, and the others' may come after them. */
        bool far = some_full && now - pl->looked_far >= 1000;
        int window = far ? 0 : claim_window(app, want, true);
        int n = rooms ? claim(app, &(struct pass){pl->made, made, pl->held, pl->nheld, NULL},
                              STORE_WEBHOOK, now, now + lease_ms(app, STORE_WEBHOOK, 1),
                              ints_text(&skip_ids), rooms,
                              api_config(app)->webhooks.per_destination, window, rows, want)
                      : -1;
        if (rooms) {
            made_free(pl, made); /* (recorded: their slots take the rows claimed) */
            made = 0;
            pl->nheld = 0;
        }
        if (far)
            pl->looked_far = now;
        free(rooms);
        more = n == want;
        pl->backlog = more;
        for (int i = 0; i < n; i++) {
            struct store_outbox *o = &rows[i];
            char dest[300];
            destination_of(app, o->player, dest, sizeof dest);
            int64_t id = o->id;
            if (assign(pl, o, dest)) {
                free_slots--;
            } else {
                /* (given back in the next write: a pass's or the next one's) */
                if (!hold_back(pl, id) && !api_write_wait(app, release_run, &id, &e))
                    log_msg(LOG_LEVEL_ERROR, "delivery", "cannot release delivery %lld: %s",
                            (long long)id, e.msg);
                store_outbox_finish(o);
            }
            if (!ints_add(&skip_ids, id))
                more = false; /* out of memory: the next pass goes on */
        }
        more = more && free_slots > 0;
    }
    made_record(pl, made); /* (stopping, or out of memory: not written with a claim) */
    /* (behind a backlog every slot is busy, and the next to finish wakes the dispatcher) */
    int64_t when = pl->backlog ? next : due_at(app, STORE_WEBHOOK, now);
    if (when > now && when < next)
        next = when;
    free(skip_ids.text);
    return next;
}

static void dispatch_webhooks(struct api_app *app)
{
    struct pool pl = {.app = app, .size = api_config(app)->webhooks.concurrency};
    if (pl.size < 1)
        pl.size = 1;
    pl.slot = calloc((size_t)pl.size, sizeof *pl.slot);
    pl.made = calloc((size_t)pl.size, sizeof *pl.made);
    pl.made_slot = calloc((size_t)pl.size, sizeof *pl.made_slot);
    lock_init(&pl.lock, API_LOCK_POOL, "webhook pool");
    int started = 0, size = pl.slot ? pl.size : 0;
    for (int i = 0; i < size; i++)
        pthread_cond_init(&pl.slot[i].go, NULL);
    for (int i = 0; pl.slot && pl.made && pl.made_slot && i < pl.size; i++) {
        pl.slot[i].pool = &pl;
        if (pthread_create(&pl.slot[i].thread, NULL, slot_main, &pl.slot[i]) != 0)
            break;
        started++;
    }
    if (started < pl.size) {
        log_msg(LOG_LEVEL_WARN, "delivery", "%d of %d webhook delivery threads started", started,
                pl.size);
        pl.size = started; /* the dispatcher never assigns a slot without its thread */
    }
    while (!api_stopping(app) && pl.size > 0) {
        lock_take(&pl.lock);
        unsigned long seen = pl.completions;
        lock_drop(&pl.lock);
        int64_t next = dispatch_once(&pl, api_now_ms(app));
        lock_take(&pl.lock);
        bool finished_meanwhile = pl.completions != seen;
        lock_drop(&pl.lock);
        if (!finished_meanwhile)
            nap(app, next);
    }
    lock_take(&pl.lock);
    pl.stop = true;
    for (int i = 0; i < started; i++)
        pthread_cond_signal(&pl.slot[i].go);
    lock_drop(&pl.lock);
    for (int i = 0; i < started; i++)
        pthread_join(pl.slot[i].thread, NULL);
    /* The attempts made since the last pass (every slot's last, once its thread ended). */
    int made = 0;
    for (int i = 0; i < started; i++)
        if (pl.slot[i].state == SLOT_MADE) {
            pl.made_slot[made] = &pl.slot[i];
            pl.made[made++] = &pl.slot[i].done;
        }
    made_record(&pl, made);
    for (int i = 0; i < size; i++)
        pthread_cond_destroy(&pl.slot[i].go);
    lock_finish(&pl.lock);
    free(pl.held);
    free(pl.made_slot);
    free(pl.made);
    free(pl.slot);
}

/* The most rows the email worker claims at once: it sends them one after another and
 * records them together. */
#define EMAIL_CLAIM 8

void *api_outbox_worker(void *arg)
{
    thread_name("outbox");
    thread_lower_priority(DELIVERY_NICE);
    struct api_worker *w = arg;
    struct api_app *app = w->app;
    int channel = w->channel;
    if (channel == STORE_WEBHOOK) {
        dispatch_webhooks(app);
        return NULL;
    }
    struct notify_conn *conn = notify_conn_new(); /* (NULL: a connection per email) */
    bool backlog = false; /* the last claim took all it asked for: claim again, not ask */
    while (!api_stopping(app)) {
        atomic_store(&app->beat_worker[channel], api_beat_now());
        struct store_outbox due[EMAIL_CLAIM];
        int64_t now = api_now_ms(app), next = backlog ? now : due_at(app, channel, now);
        /* (a claim is a write: none while nothing is due) */
        int n = next <= now ? claim(app, NULL, channel, now,
                                    now + lease_ms(app, channel, EMAIL_CLAIM), "[]", "{}", 0,
                                    claim_window(app, EMAIL_CLAIM, false), due, EMAIL_CLAIM)
                            : 0;
        if (n == 0 && next <= now)
            next = now + 1000; /* (due but claimed: being delivered, here or elsewhere) */
        backlog = n == EMAIL_CLAIM;
        /* Each row sent, then their records written together. */
        struct done done[EMAIL_CLAIM] = {0}, *made[EMAIL_CLAIM];
        int k = 0;
        for (int i = 0; i < n; i++) {
            atomic_store(&app->beat_worker[channel], api_beat_now());
            if (!api_stopping(app)) {
                made[k] = &done[k];
                attempt_row(app, conn, &due[i], made[k++]);
            }
        }
        pass_write(app, &(struct pass){.d = made, .n = k});
        for (int i = 0; i < n; i++)
            store_outbox_finish(&due[i]);
        if (n <= 0)
            nap(app, next);
    }
    notify_conn_free(conn);
    return NULL;
}
