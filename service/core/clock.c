/* clock.c - when a seat's time runs out (docs/api.md "Deadlines"). A seat's clock starts
 * with its turn and stands still while its player is on vacation: its deadline is the
 * turn's start, plus move_seconds, plus every second of every vacation of the player that
 * falls inside the turn. One function computes it, for the view, the notifications and the
 * scheduler alike. The players who ever took a vacation are kept in memory with the end
 * of their latest one, so that the deadline of everybody else (nearly every move) is
 * computed without reading the database.
 */
#include "core.h"
#include "log.h"

#include <stdlib.h>
#include <string.h>

/* ---- The players who took a vacation ------------------------------------------------------ */

static size_t slot_of(const struct api_vacation_table *t, int64_t player)
{
    uint64_t h = (uint64_t)player * 0x9E3779B97F4A7C15u;
    size_t i = (size_t)(h >> 20) & (t->cap - 1);
    while (t->player[i] && t->player[i] != player)
        i = (i + 1) & (t->cap - 1);
    return i;
}

/* Room for one more entry (vacation_lock held); false without memory. */
static bool table_reserve(struct api_vacation_table *t)
{
    if (t->cap && (t->count + 1) * 4 <= t->cap * 3)
        return true;
    size_t cap = t->cap ? t->cap * 2 : 64;
    struct api_vacation_table n = {calloc(cap, sizeof *n.player), calloc(cap, sizeof *n.until),
                                   cap, 0};
    if (!n.player || !n.until) {
        free(n.player);
        free(n.until);
        return false;
    }
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->player[i])
            continue;
        size_t j = slot_of(&n, t->player[i]);
        n.player[j] = t->player[i];
        n.until[j] = t->until[i];
        n.count++;
    }
    free(t->player);
    free(t->until);
    *t = n;
    return true;
}

void api_vacation_noted(struct api_app *app, int64_t player, int64_t until)
{
    struct api_vacation_table *t = &app->vacations;
    lock_take(&app->vacation_lock);
    if (table_reserve(t)) {
        size_t i = slot_of(t, player);
        if (!t->player[i]) {
            t->player[i] = player;
            t->count++;
        }
        t->until[i] = until;
    } else {
        /* Without memory nobody is forgotten: every deadline is then read from the
         * database (a player id of -1 stands for "everybody"). */
        t->count = (size_t)-1;
    }
    lock_drop(&app->vacation_lock);
}

static void note_latest(void *cls, int64_t player, int64_t until)
{
    api_vacation_noted(cls, player, until);
}

void api_vacations_free(struct api_app *app)
{
    free(app->vacations.player);
    free(app->vacations.until);
    app->vacations = (struct api_vacation_table){0};
}

bool api_vacations_load(struct api_app *app, struct err *e)
{
    return store_vacations_latest(app->store, note_latest, app, e);
}

/* The end of `player`'s latest vacation (0: none); INT64_MAX when the table lost track. */
static int64_t latest_until(struct api_app *app, int64_t player)
{
    struct api_vacation_table *t = &app->vacations;
    lock_take(&app->vacation_lock);
    int64_t until = 0;
    if (t->count == (size_t)-1) {
        until = INT64_MAX;
    } else if (t->cap) {
        size_t i = slot_of(t, player);
        until = t->player[i] ? t->until[i] : 0;
    }
    lock_drop(&app->vacation_lock);
    return until;
}

/* ---- A seat's deadline -------------------------------------------------------------------- */

/* Call fn(cls, from, until) for each vacation of `player` that ends after `after`, in
 * order, until it returns false. Reads through the reading connection; false on a database
 * error (then what was read so far stands). */
static bool each_vacation(struct api_app *app, int64_t player, int64_t after,
                          bool (*fn)(void *cls, int64_t from, int64_t until), void *cls)
{
    enum { PAGE = 32 };
    struct store_vacation v[PAGE];
    for (;;) {
        struct err e;
        lock_take(&app->read_lock);
        int n = store_vacations_of(app->reader, player, after, v, PAGE, &e);
        lock_drop(&app->read_lock);
        if (n < 0) {
            log_msg(LOG_LEVEL_ERROR, "clock", "vacations of player %lld: %s", (long long)player,
                    e.msg);
            return false;
        }
        for (int i = 0; i < n; i++)
            if (!fn(cls, v[i].from, v[i].until))
                return true;
        if (n < PAGE)
            return true;
        after = v[n - 1].until;
    }
}

struct extend {
    int64_t turn_started, deadline, paused_until;
};

/* One vacation, in order: if it begins before the deadline so far, the part of it after
 * the turn began (and after the pauses counted already) moves the deadline on. */
static bool extend_by(void *cls, int64_t from, int64_t until)
{
    struct extend *x = cls;
    if (from >= x->deadline)
        return false; /* begins after the time ran out: this one and all later ones */
    int64_t start = from;
    if (start < x->turn_started)
        start = x->turn_started;
    if (start < x->paused_until)
        start = x->paused_until;
    if (until > start) {
        x->deadline += until - start;
        x->paused_until = until;
    }
    return true;
}

int64_t api_seat_deadline(struct api_app *app, int64_t player, int64_t turn_started,
                          int64_t move_seconds)
{
    struct extend x = {turn_started, turn_started + move_seconds, turn_started};
    if (latest_until(app, player) <= turn_started)
        return x.deadline; /* no vacation inside this turn: nothing to read */
    each_vacation(app, player, turn_started, extend_by, &x);
    return x.deadline;
}

struct away {
    int64_t now, until;
};

static bool away_at(void *cls, int64_t from, int64_t until)
{
    struct away *a = cls;
    if (from <= a->now && a->now < until)
        a->until = until;
    return from <= a->now;
}

int64_t api_player_away_until(struct api_app *app, int64_t player, int64_t now)
{
    struct away a = {now, 0};
    if (latest_until(app, player) <= now)
        return 0;
    each_vacation(app, player, now, away_at, &a);
    return a.until;
}

/* ---- The clock of a match ----------------------------------------------------------------- */

void api_clock_plan(struct api_app *app, const struct api_match *m, const struct rules_state *st,
                    struct api_clock *c, int64_t now_s)
{
    c->deadline = c->wake_at = 0;
    if (!c->move_seconds || st->over)
        return;
    uint32_t to_move = rules_to_move(st);
    for (int s = 0; s < st->nseats; s++) {
        if (!((to_move >> s) & 1))
            continue;
        int64_t d = api_seat_deadline(app, m->players[s], c->turn_started, c->move_seconds);
        if (!c->deadline || d < c->deadline)
            c->deadline = d;
        int64_t wake = d;
        if (c->reminder_seconds && !((c->reminded >> s) & 1)) {
            /* Its reminder: reminder_seconds before its deadline, and if the player is away
             * then, once they are back (with the time that is left). */
            int64_t remind = d - c->reminder_seconds;
            int64_t back = api_player_away_until(app, m->players[s], remind > now_s ? remind : now_s);
            if (back > remind)
                remind = back;
            if (remind < wake)
                wake = remind;
        }
        if (!c->wake_at || wake < c->wake_at)
            c->wake_at = wake;
    }
}

struct api_clock api_clock_after(struct api_app *app, const struct api_match *m,
                                 const struct rules_state *before, const struct rules_state *after,
                                 int mover, int64_t now_s)
{
    struct api_clock n = m->clock;
    if (!n.move_seconds || after->over) {
        n.deadline = n.wake_at = 0;
        return n;
    }
    uint32_t tb = before ? rules_to_move(before) : 0, ta = rules_to_move(after);
    bool restart = !before || (ta & ~tb) || (mover >= 0 && ((ta >> mover) & 1));
    if (restart) {
        n.turn_started = now_s;
        n.reminded = 0;
    }
    api_clock_plan(app, m, after, &n, now_s);
    return n;
}
