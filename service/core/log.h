/* log.h - the daemon's log: one JSON object per line (JSON Lines), each written with a
 * single write(2) so that lines from many threads never mix (a line is shorter than
 * PIPE_BUF, and the file is opened O_APPEND). With log_buffer_start (cardpostd), the lines
 * of the many (a request's, a delivery's: log_end_soon) are gathered and written several at
 * a time, whole, at most PIPE_BUF bytes a write, at most LOG_FLUSH_MS (log.c) after they
 * came; any other line, and any warning or error, is written at once, after them. To
 * stderr, or to the `log_file` setting, which log_reopen opens again (SIGHUP: after
 * logrotate moved it). Every line has "time"
 * (UTC, RFC 3339 with milliseconds), "level" and "event"; the rest are the event's fields.
 * docs/operations.md "Logs" lists them; docs/decisions.md "Logs (issue 16)" says why.
 *
 * Values are escaped: a quote, a backslash, a control character or any byte outside ASCII
 * is written as a JSON escape, so no value can end a line, break its JSON or reach a
 * terminal as anything but text. A value that would make the line too long is cut and the
 * line says "truncated": true.
 */
#ifndef CARDPOST_LOG_H
#define CARDPOST_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

enum log_level { LOG_LEVEL_ERROR, LOG_LEVEL_WARN, LOG_LEVEL_INFO, LOG_LEVEL_DEBUG };

/* "error", "warn", "info", "debug". */
const char *log_level_name(enum log_level level);
/* The level named `name` (as log_level_name writes it); false for anything else. */
bool log_level_parse(const char *name, enum log_level *level);

/* Log lines of `level` and more severe from now on (the default: info). */
void log_set_level(enum log_level level);
/* Whether lines of `level` are written. */
bool log_enabled(enum log_level level);

/* Write the log to the file at `path` (created 0640 if missing, appended to), or to stderr
 * when `path` is empty (the default). False with ERR_IO when the file cannot be opened (the
 * log stays where it was). Not thread-safe against itself: call it at start-up. */
bool log_open(const char *path, struct err *e);
/* Open the log file again at its path (a rotation moved the old one away): the lines that
 * follow go to the new file. Safe while other threads log (the file descriptor they write
 * to is replaced in one dup2). Nothing to do when the log is stderr. False with ERR_IO (the
 * log stays on the old file). */
bool log_reopen(struct err *e);
/* Back to stderr, the file closed (log_buffer_stop first). */
void log_close(void);

/* Gather the info and debug lines ended with log_end_soon from now on, written by the thread
 * that fills the buffer or, at most 100 ms after they came, by a thread of its own (started
 * here: false with ERR_IO when it cannot be). A line a request would otherwise be a write a
 * request (docs/operations.md "Logs"). The lines gathered when the process is killed are
 * lost. */
bool log_buffer_start(struct err *e);
/* Write the lines gathered, and write each line alone from now on; the thread ends. */
void log_buffer_stop(void);
/* Write the lines gathered so far (nothing when none are). */
void log_flush(void);

/* The longest line, its newline included: under PIPE_BUF (4096), so one write is atomic
 * even on a pipe. */
#define LOG_LINE_MAX 2048

/* A line being built, in caller memory (on the stack): no allocation. */
struct log_line {
    bool on;                  /* its level is logged: else every call below does nothing */
    bool urgent;              /* a warning or an error: never left gathered (log_end_soon) */
    bool truncated;           /* a field was cut or left out for room */
    size_t len;
    char text[LOG_LINE_MAX];
};

/* Begin a line of `level` for `event` (a fixed name: "request", "delivery", "clock", ...),
 * with its time and level; false when that level is not logged (then the calls below are
 * no-ops and nothing is written). */
bool log_begin(struct log_line *l, enum log_level level, const char *event);
/* Add a field: a string (NULL: null), a whole number, a number of milliseconds (three
 * decimals), a boolean, a time (Unix milliseconds, as RFC 3339 UTC). Keys are fixed names. */
void log_str(struct log_line *l, const char *key, const char *value);
void log_int(struct log_line *l, const char *key, long long value);
void log_ms(struct log_line *l, const char *key, double ms);
void log_bool(struct log_line *l, const char *key, bool value);
void log_time(struct log_line *l, const char *key, int64_t unix_ms);
/* End the line and write it with one write(2) (with the lines gathered before it). */
void log_end(struct log_line *l);
/* End the line, to be written soon: gathered with others when log_buffer_start was called
 * and the line is info or debug, else as log_end. For the lines that come one a request. */
void log_end_soon(struct log_line *l);
/* End the line into l->text (NUL-terminated, newline included) without writing it: for
 * the tests. Returns its length. */
size_t log_finish_text(struct log_line *l);

/* A line with a message: {"time", "level", "event", "msg"}, msg from printf's format. */
void log_msg(enum log_level level, const char *event, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
