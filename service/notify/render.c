/* render.c - match views as plain text for emails. Keys become labels ("hand_number" ->
 * "hand number"), arrays of cards become one line of cards, small objects one line each,
 * larger ones an indented block; long legal-move lists are summarised.
 */
#include "render.h"

#include "buf.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void label(struct buf *o, const char *key)
{
    for (const char *k = key; *k; k++) {
        char c[2] = {*k == '_' ? ' ' : *k, 0};
        buf_puts(o, c);
    }
}

static bool scalar(const json_t *v)
{
    return !json_is_object(v) && !json_is_array(v);
}

static bool flat_array(const json_t *v)
{
    size_t i;
    json_t *x;
    json_array_foreach((json_t *)v, i, x) {
        if (!scalar(x))
            return false;
    }
    return true;
}

static void scalar_text(struct buf *o, const json_t *v)
{
    if (json_is_string(v))
        buf_puts(o, json_string_value(v));
    else if (json_is_integer(v))
        buf_printf(o, "%lld", (long long)json_integer_value(v));
    else if (json_is_true(v))
        buf_puts(o, "yes");
    else if (json_is_false(v))
        buf_puts(o, "no");
    else if (json_is_null(v))
        buf_puts(o, "-");
    else if (json_is_real(v))
        buf_printf(o, "%g", json_real_value(v));
}

static void flat_text(struct buf *o, const json_t *arr)
{
    size_t i;
    json_t *x;
    if (json_array_size(arr) == 0)
        buf_puts(o, "(none)");
    json_array_foreach((json_t *)arr, i, x) {
        if (i)
            buf_puts(o, " ");
        scalar_text(o, x);
    }
}

/* An object whose members are all scalars or flat arrays fits on one line. */
static bool one_line(const json_t *obj)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)obj, k, v) {
        if (!scalar(v) && !(json_is_array(v) && flat_array(v)))
            return false;
    }
    return true;
}

static void inline_object(struct buf *o, const json_t *obj)
{
    const char *k;
    json_t *v;
    bool first = true;
    json_object_foreach((json_t *)obj, k, v) {
        buf_puts(o, first ? "" : ", ");
        first = false;
        label(o, k);
        buf_puts(o, ": ");
        if (json_is_array(v))
            flat_text(o, v);
        else
            scalar_text(o, v);
    }
}

static void indent(struct buf *o, int depth)
{
    for (int i = 0; i < depth; i++)
        buf_puts(o, "  ");
}

static void block(struct buf *o, const json_t *obj, int depth);

static void member(struct buf *o, const char *key, const json_t *v, int depth)
{
    indent(o, depth);
    if (key) {
        label(o, key);
        buf_puts(o, ":");
    }
    if (scalar(v) || (json_is_array(v) && flat_array(v))) {
        buf_puts(o, key ? " " : "- ");
        if (json_is_array(v))
            flat_text(o, v);
        else
            scalar_text(o, v);
        buf_puts(o, "\n");
    } else if (json_is_object(v) && one_line(v)) {
        buf_puts(o, key ? " " : "- ");
        inline_object(o, v);
        buf_puts(o, "\n");
    } else if (json_is_object(v)) {
        buf_puts(o, "\n");
        block(o, v, depth + 1);
    } else {
        buf_puts(o, "\n");
        size_t i;
        json_t *x;
        json_array_foreach((json_t *)v, i, x) member(o, NULL, x, depth + 1);
    }
}

static void block(struct buf *o, const json_t *obj, int depth)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)obj, k, v) member(o, k, v, depth);
}

char *render_match_text(const json_t *m, const char *public_url)
{
    struct buf o = BUF_INIT;
    const char *game = json_string_value(json_object_get(m, "game"));
    json_int_t id = json_integer_value(json_object_get(m, "id"));
    json_t *you = json_object_get(m, "you");
    json_t *players = json_object_get(m, "players");
    json_t *totals = json_object_get(m, "totals");

    buf_printf(&o, "%s, match %lld", game ? game : "?", (long long)id);
    if (json_is_integer(you))
        buf_printf(&o, ", you are seat %lld", (long long)json_integer_value(you));
    buf_printf(&o, " (%s)\n\n", json_string_value(json_object_get(m, "status")));

    buf_printf(&o, "Scores (target %lld):\n", (long long)json_integer_value(json_object_get(m, "target")));
    size_t i;
    json_t *p;
    json_array_foreach(players, i, p) {
        const char *name = json_string_value(json_object_get(p, "name"));
        buf_printf(&o, "  seat %zu %-16s %lld%s\n", i, name ? name : "",
             (long long)json_integer_value(json_array_get(totals, i)),
             json_is_integer(you) && (size_t)json_integer_value(you) == i ? "  (you)" : "");
    }
    json_t *to_move = json_object_get(m, "to_move");
    buf_puts(&o, "To move: ");
    flat_text(&o, to_move);
    buf_puts(&o, "\n\nThe table as you see it:\n");
    block(&o, json_object_get(m, "view"), 1);

    json_t *legal = json_object_get(m, "legal");
    json_t *count = json_object_get(m, "legal_count");
    size_t listed = json_array_size(legal);
    size_t n = json_is_integer(count) && json_integer_value(count) > (json_int_t)listed
                   ? (size_t)json_integer_value(count)
                   : listed;
    if (n > 0) {
        buf_printf(&o, "\nYour legal moves (%zu):\n", n);
        size_t shown = n > RENDER_LEGAL_ALL ? RENDER_LEGAL_FEW : n;
        if (shown > listed)
            shown = listed;
        for (i = 0; i < shown; i++)
            buf_printf(&o, "  %s\n", json_string_value(json_array_get(legal, i)));
        if (shown < n)
            buf_printf(&o, "  ... and %zu more (the same verb with other cards)\n", n - shown);
    }
    json_t *deadline = json_object_get(m, "deadline");
    if (json_is_integer(deadline)) {
        char when[64];
        time_t t = (time_t)json_integer_value(deadline);
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", &tm);
        buf_printf(&o, "\nDeadline for your move: %s\n", when);
    }
    if (public_url && public_url[0])
        buf_printf(&o, "\nWatch the match: %s/matches/%lld\n", public_url, (long long)id);
    return buf_finish(&o, NULL);
}
