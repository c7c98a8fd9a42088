/* log.c - the daemon's log (log.h): JSON lines built in caller memory, each written with
 * one write(2) to stderr or to the log file, or with log_buffer_start gathered into one
 * buffer that a write of its own empties (whole lines, at most PIPE_BUF bytes); log_reopen
 * swaps the file under the writers with dup2, so a rotation needs no lock on the path of
 * every line.
 */
#include "log.h"
#include "buf.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Where lines go (stderr, or the file's descriptor: the same number for the whole life of
 * the file, reopened or not) and the most verbose level written. */
static atomic_int log_fd = STDERR_FILENO;
static atomic_int log_max = LOG_LEVEL_INFO;
static char log_path[1024];

/* ---- Lines gathered (log_buffer_start) --------------------------------------------------
 *
 * The info and debug lines ended with log_end_soon (a request's, a delivery's: one each,
 * many a second) are appended to one buffer, which is written when the next line would not
 * fit, when any other line comes (after the lines before it, with it), and by the flusher
 * thread LOG_FLUSH_MS after the oldest line in it came. A flush copies the buffer
 * out under `lock` and takes `writing` before letting `lock` go, so flushes reach the file in
 * the order their lines came, while other threads append to the emptied buffer. The flusher
 * is woken only when a line comes to an empty buffer while it sleeps without a deadline:
 * under load, buffers fill and are written by the threads that fill them. */

/* A flush is at most PIPE_BUF bytes: one atomic write even on a pipe (journald's stream). */
#define LOG_BUFFER_SIZE 4096 /* (PIPE_BUF on Linux) */
_Static_assert(LOG_LINE_MAX <= LOG_BUFFER_SIZE, "a line fits in the buffer");

static struct {
    pthread_mutex_t lock;         /* guards what follows, but `writing` */
    pthread_mutex_t writing;      /* held while a flush writes (taken under `lock`) */
    pthread_cond_t wake;          /* the flusher's */
    bool on;                      /* lines are gathered (the flusher runs) */
    bool stop;                    /* the flusher is to end */
    bool idle;                    /* the flusher sleeps until a line comes */
    int64_t first_ms;             /* monotonic, when the oldest line in `text` came */
    size_t len;
    char text[LOG_BUFFER_SIZE];
    pthread_t thread;
} gather = {.lock = PTHREAD_MUTEX_INITIALIZER, .writing = PTHREAD_MUTEX_INITIALIZER};

static atomic_bool gathering;     /* gather.on, read without the lock on every line */

/* How long a gathered line waits at most for its write. */
#define LOG_FLUSH_MS 100

static void write_all(const char *text, size_t n)
{
    while (n > 0) {
        ssize_t w = write(atomic_load(&log_fd), text, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return; /* (a log that cannot be written has nowhere to say so) */
        text += w;
        n -= (size_t)w;
    }
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Write the gathered lines; called with gather.lock held, returns with it released. */
static void drain(void)
{
    char out[LOG_BUFFER_SIZE];
    size_t n = gather.len;
    memcpy(out, gather.text, n);
    gather.len = 0;
    pthread_mutex_lock(&gather.writing);
    pthread_mutex_unlock(&gather.lock);
    write_all(out, n);
    pthread_mutex_unlock(&gather.writing);
}

/* Write what is gathered, and wait for the flushes begun before (they hold `writing`). */
static void flush(void)
{
    pthread_mutex_lock(&gather.lock);
    drain();
}

/* Append a line (at most LOG_LINE_MAX bytes): written at once with what came before it when
 * `now`, else gathered. */
static void gather_line(const char *text, size_t n, bool now)
{
    pthread_mutex_lock(&gather.lock);
    while (gather.len + n > sizeof gather.text) {
        drain();
        pthread_mutex_lock(&gather.lock);
    }
    memcpy(gather.text + gather.len, text, n);
    gather.len += n;
    if (now) {
        drain();
        return;
    }
    if (gather.len == n) {
        gather.first_ms = mono_ms();
        if (gather.idle)
            pthread_cond_signal(&gather.wake);
    }
    pthread_mutex_unlock(&gather.lock);
}

static void *flusher_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&gather.lock);
    while (!gather.stop) {
        if (gather.len == 0) {
            gather.idle = true;
            pthread_cond_wait(&gather.wake, &gather.lock);
            gather.idle = false;
            continue;
        }
        int64_t due = gather.first_ms + LOG_FLUSH_MS;
        if (mono_ms() >= due) {
            drain();
            pthread_mutex_lock(&gather.lock);
            continue;
        }
        struct timespec until = {(time_t)(due / 1000), (long)(due % 1000) * 1000000};
        pthread_cond_timedwait(&gather.wake, &gather.lock, &until);
    }
    pthread_mutex_unlock(&gather.lock);
    return NULL;
}

bool log_buffer_start(struct err *e)
{
    pthread_mutex_lock(&gather.lock);
    if (gather.on) {
        pthread_mutex_unlock(&gather.lock);
        return true;
    }
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&gather.wake, &ca);
    pthread_condattr_destroy(&ca);
    gather.stop = gather.idle = false;
    gather.len = 0;
    if (pthread_create(&gather.thread, NULL, flusher_main, NULL) != 0) {
        pthread_cond_destroy(&gather.wake);
        pthread_mutex_unlock(&gather.lock);
        return err_set(e, ERR_IO, "threads", "cannot start the log's flusher");
    }
    gather.on = true;
    atomic_store(&gathering, true);
    pthread_mutex_unlock(&gather.lock);
    return true;
}

void log_buffer_stop(void)
{
    pthread_mutex_lock(&gather.lock);
    if (!gather.on) {
        pthread_mutex_unlock(&gather.lock);
        return;
    }
    /* Lines from now on are written alone; those gathered are written, then the flusher
     * ends. */
    atomic_store(&gathering, false);
    gather.on = false;
    gather.stop = true;
    pthread_cond_signal(&gather.wake);
    drain();
    pthread_join(gather.thread, NULL);
    pthread_cond_destroy(&gather.wake);
    flush(); /* (a line that came while it stopped) */
}

void log_flush(void)
{
    if (atomic_load(&gathering))
        flush();
}

/* Room kept at the end of every line for `,"truncated":true}` and the newline. */
#define LOG_TAIL 24

static const char *const level_names[] = {"error", "warn", "info", "debug"};

const char *log_level_name(enum log_level level)
{
    return (unsigned)level < 4 ? level_names[level] : "?";
}

bool log_level_parse(const char *name, enum log_level *level)
{
    for (int i = 0; i < 4; i++)
        if (!strcmp(name, level_names[i])) {
            *level = (enum log_level)i;
            return true;
        }
    return false;
}

void log_set_level(enum log_level level)
{
    atomic_store(&log_max, (int)level);
}

bool log_enabled(enum log_level level)
{
    return (int)level <= atomic_load(&log_max);
}

static int open_file(const char *path)
{
    return open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
}

bool log_open(const char *path, struct err *e)
{
    if (!*path) {
        log_close();
        return true;
    }
    if (strlen(path) >= sizeof log_path)
        return err_set(e, ERR_IO, "log_file", "log_file: the path is too long");
    int fd = open_file(path);
    if (fd < 0)
        return err_set(e, ERR_IO, "log_file", "log_file: cannot open %s: %s", path,
                       strerror(errno));
    log_close();
    memcpy(log_path, path, strlen(path) + 1);
    atomic_store(&log_fd, fd);
    return true;
}

bool log_reopen(struct err *e)
{
    int old = atomic_load(&log_fd);
    if (old == STDERR_FILENO || !log_path[0])
        return true;
    int fd = open_file(log_path);
    if (fd < 0)
        return err_set(e, ERR_IO, "log_file", "log_file: cannot open %s again: %s", log_path,
                       strerror(errno));
    /* The lines gathered so far came before the rotation: to the old file. dup2 replaces
     * the descriptor in one step: a writer writes to the old file or the new one, never to
     * a closed descriptor. */
    log_flush();
    bool ok = dup2(fd, old) >= 0;
    int saved = errno;
    close(fd);
    if (ok)
        fcntl(old, F_SETFD, FD_CLOEXEC); /* (dup2 clears it: no child inherits the log) */
    if (!ok)
        return err_set(e, ERR_IO, "log_file", "log_file: cannot switch to %s: %s", log_path,
                       strerror(saved));
    return true;
}

void log_close(void)
{
    log_buffer_stop();
    int fd = atomic_exchange(&log_fd, STDERR_FILENO);
    if (fd != STDERR_FILENO)
        close(fd);
    log_path[0] = '\0';
}

/* ---- Building a line ------------------------------------------------------------------------ */

/* Append n bytes if they fit before the tail's room; false (nothing appended) if not. */
static bool put(struct log_line *l, const char *s, size_t n)
{
    if (l->len + n > LOG_LINE_MAX - LOG_TAIL)
        return false;
    memcpy(l->text + l->len, s, n);
    l->len += n;
    return true;
}

/* One byte as JSON string text: itself, or an escape (a quote, a backslash, a control
 * character, DEL and every byte outside ASCII: a line is always printable ASCII). */
static size_t escape(unsigned char c, char out[8])
{
    if (c == '"' || c == '\\') {
        out[0] = '\\';
        out[1] = (char)c;
        return 2;
    }
    if (c == '\n' || c == '\r' || c == '\t') {
        out[0] = '\\';
        out[1] = c == '\n' ? 'n' : c == '\r' ? 'r' : 't';
        return 2;
    }
    if (c < 0x20 || c >= 0x7f)
        return (size_t)snprintf(out, 8, "\\u%04x", c);
    out[0] = (char)c;
    return 1;
}

/* A JSON string, cut (still closed) when the line runs out of room. Runs of bytes that
 * need no escape are copied whole (a line is a few hundred such bytes, a request each). */
static bool put_string(struct log_line *l, const char *s)
{
    if (!put(l, "\"", 1))
        return false;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        const unsigned char *run = p;
        while (*p >= 0x20 && *p < 0x7f && *p != '"' && *p != '\\')
            p++;
        if (p > run) {
            size_t k = (size_t)(p - run);
            if (l->len + k + 1 > LOG_LINE_MAX - LOG_TAIL) { /* (cut within the run) */
                p = run;
            } else {
                put(l, (const char *)run, k);
                if (!*p)
                    break;
            }
        }
        char esc[8];
        size_t n = escape(*p, esc);
        /* (one byte kept for the closing quote) */
        if (l->len + n + 1 > LOG_LINE_MAX - LOG_TAIL) {
            l->truncated = true;
            break;
        }
        put(l, esc, n);
    }
    return put(l, "\"", 1);
}

/* `,"key":` then the value's text: the whole field, or none of it (and the line says it
 * was truncated). */
static void field(struct log_line *l, const char *key, const char *raw, const char *string)
{
    if (!l->on)
        return;
    size_t start = l->len;
    bool ok = put(l, ",", 1) && put_string(l, key) && put(l, ":", 1) &&
              (raw ? put(l, raw, strlen(raw)) : put_string(l, string));
    if (!ok) {
        l->len = start;
        l->truncated = true;
    }
}

static void format_time(char *out, size_t size, int64_t unix_ms)
{
    /* (the second's text is kept per thread: a line a request, the same second's text) */
    static _Thread_local time_t last = -1;
    static _Thread_local char day[32];
    time_t secs = (time_t)(unix_ms / 1000);
    if (secs != last) {
        struct tm tm;
        gmtime_r(&secs, &tm);
        strftime(day, sizeof day, "%Y-%m-%dT%H:%M:%S", &tm);
        last = secs;
    }
    int ms = (int)(unix_ms % 1000);
    size_t n = strlen(day);
    if (size < n + 6)
        return;
    memcpy(out, day, n);
    out[n] = '.';
    out[n + 1] = (char)('0' + ms / 100);
    out[n + 2] = (char)('0' + ms / 10 % 10);
    out[n + 3] = (char)('0' + ms % 10);
    out[n + 4] = 'Z';
    out[n + 5] = '\0';
}

bool log_begin(struct log_line *l, enum log_level level, const char *event)
{
    l->on = log_enabled(level);
    l->urgent = level <= LOG_LEVEL_WARN;
    l->truncated = false;
    l->len = 0;
    if (!l->on)
        return false;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    char now[48];
    format_time(now, sizeof now, (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
    put(l, "{\"time\":", 8);
    put_string(l, now);
    log_str(l, "level", log_level_name(level));
    log_str(l, "event", event);
    return true;
}

void log_str(struct log_line *l, const char *key, const char *value)
{
    field(l, key, value ? NULL : "null", value);
}

void log_int(struct log_line *l, const char *key, long long value)
{
    char text[BUF_DECIMAL_MAX + 1];
    text[BUF_DECIMAL_MAX] = '\0';
    field(l, key, buf_decimal(text + BUF_DECIMAL_MAX, (int64_t)value), NULL);
}

/* Milliseconds to three decimals, as "%.3f" writes them, without printf (a request's line
 * has one: about 2,000 instructions in snprintf). */
void log_ms(struct log_line *l, const char *key, double ms)
{
    int64_t us = ms >= 0 && ms < 1e15 ? (int64_t)(ms * 1000.0 + 0.5) : 0;
    char text[BUF_DECIMAL_MAX + 8];
    char *end = text + sizeof text - 1;
    *end = '\0';
    char *p = buf_decimal(end, us % 1000 + 1000); /* "1xyz": the three decimals, zeros kept */
    *p = '.';
    p = buf_decimal(p, us / 1000);
    field(l, key, p, NULL);
}

void log_bool(struct log_line *l, const char *key, bool value)
{
    field(l, key, value ? "true" : "false", NULL);
}

void log_time(struct log_line *l, const char *key, int64_t unix_ms)
{
    char text[48];
    format_time(text, sizeof text, unix_ms);
    field(l, key, NULL, text);
}

size_t log_finish_text(struct log_line *l)
{
    if (!l->on)
        return 0;
    /* (the tail's room is kept by put: this always fits) */
    const char *tail = l->truncated ? ",\"truncated\":true}\n" : "}\n";
    size_t n = strlen(tail);
    memcpy(l->text + l->len, tail, n + 1);
    l->len += n;
    l->on = false;
    return l->len;
}

void log_end(struct log_line *l)
{
    size_t n = log_finish_text(l);
    if (n == 0)
        return;
    if (atomic_load(&gathering))
        gather_line(l->text, n, true);
    else
        write_all(l->text, n);
}

void log_end_soon(struct log_line *l)
{
    bool urgent = l->urgent;
    size_t n = log_finish_text(l);
    if (n == 0)
        return;
    if (atomic_load(&gathering))
        gather_line(l->text, n, urgent);
    else
        write_all(l->text, n);
}

void log_msg(enum log_level level, const char *event, const char *fmt, ...)
{
    struct log_line l;
    if (!log_begin(&l, level, event))
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    log_str(&l, "msg", msg);
    log_end(&l);
}
