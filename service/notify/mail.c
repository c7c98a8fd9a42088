/* mail.c - reading inbound mail (GMime's reading of it, through mime.h: structure, transfer
 * encodings, charsets), finding the player's command above the quoted text, and the
 * HMAC-signed play+ reply addresses.
 */
#include "mail.h"
#include "mime.h"
#include "notify.h"

#include <dlfcn.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void mail_parsed_finish(struct mail_parsed *p)
{
    if (!p)
        return;
    free(p->play_address);
    free(p->from);
    free(p->message_id);
    free(p->references);
    free(p->subject);
    free(p->command);
    memset(p, 0, sizeof *p);
}

/* ---- Signed addresses --------------------------------------------------------------------- */

static void tag_of(const uint8_t key[MAIL_KEY_BYTES], int64_t match, int seat, int64_t seq,
                   char out[25])
{
    char msg[80];
    int n = snprintf(msg, sizeof msg, "%lld.%d.%lld", (long long)match, seat, (long long)seq);
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int mac_len = 0;
    HMAC(EVP_sha256(), key, MAIL_KEY_BYTES, (const unsigned char *)msg, (size_t)n, mac,
         &mac_len);
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 12; i++) {
        out[2 * i] = hex[mac[i] >> 4];
        out[2 * i + 1] = hex[mac[i] & 15];
    }
    out[24] = '\0';
}

void mail_address(const uint8_t key[MAIL_KEY_BYTES], const char *domain, int64_t match,
                  int seat, int64_t seq, char out[160])
{
    char tag[25];
    tag_of(key, match, seat, seq, tag);
    snprintf(out, 160, "play+%lld.%d.%lld.%s@%s", (long long)match, seat, (long long)seq, tag,
             domain);
}

static bool number(const char **p, int64_t *out)
{
    const char *s = *p;
    int64_t v = 0;
    if (*s < '0' || *s > '9')
        return false;
    while (*s >= '0' && *s <= '9') {
        if (v > (INT64_MAX - 9) / 10)
            return false;
        v = v * 10 + (*s++ - '0');
    }
    *p = s;
    *out = v;
    return true;
}

bool mail_address_check(const uint8_t key[MAIL_KEY_BYTES], const char *address, int64_t *match,
                        int *seat, int64_t *seq)
{
    if (strncasecmp(address, "play+", 5) != 0)
        return false;
    const char *p = address + 5;
    int64_t m, s, q;
    if (!number(&p, &m) || *p++ != '.' || !number(&p, &s) || *p++ != '.' || !number(&p, &q) ||
        *p++ != '.' || s > 64)
        return false;
    char got[25];
    size_t n = 0;
    while (p[n] && p[n] != '@' && n < 24) {
        char c = p[n];
        got[n++] = (char)(c >= 'A' && c <= 'F' ? c - 'A' + 'a' : c);
    }
    if (n != 24 || (p[n] && p[n] != '@'))
        return false;
    got[24] = '\0';
    char want[25];
    tag_of(key, m, (int)s, q, want);
    if (CRYPTO_memcmp(got, want, 24) != 0)
        return false;
    *match = m;
    *seat = (int)s;
    *seq = q;
    return true;
}

/* ---- The command line --------------------------------------------------------------------- */

static bool starts(const char *s, size_t len, const char *prefix)
{
    size_t n = strlen(prefix);
    return len >= n && strncasecmp(s, prefix, n) == 0;
}

static bool ends(const char *s, size_t len, const char *suffix)
{
    size_t n = strlen(suffix);
    return len >= n && strncasecmp(s + len - n, suffix, n) == 0;
}

char *mail_first_line(const char *text)
{
    const char *p = text;
    if (!strncmp(p, "\xEF\xBB\xBF", 3))
        p += 3; /* a byte order mark */
    while (*p) {
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *s = p;
        size_t n = len;
        while (n > 0 && (*s == ' ' || *s == '\t' || *s == '\r' || (unsigned char)*s == 0xA0)) {
            s++;
            n--;
        }
        while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
            n--;
        /* A no-break space (U+00A0, UTF-8 C2 A0) alone on a line counts as empty. */
        bool blank = n == 0 || (n == 2 && (unsigned char)s[0] == 0xC2 &&
                                (unsigned char)s[1] == 0xA0);
        if (!blank) {
            if (s[0] == '>' || starts(s, n, "--") || starts(s, n, "____") ||
                starts(s, n, "-----Original Message") || ends(s, n, "wrote:") ||
                ends(s, n, "a écrit :") || ends(s, n, "schrieb:") ||
                starts(s, n, "Sent from my "))
                return NULL;
            char *line = malloc(n + 1);
            if (line) {
                memcpy(line, s, n);
                line[n] = '\0';
            }
            return line;
        }
        if (!end)
            break;
        p = end + 1;
    }
    return NULL;
}

/* The first case-insensitive occurrence of `needle` in `hay`, or NULL. */
static const char *find_ci(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; *hay; hay++)
        if (!strncasecmp(hay, needle, n))
            return hay;
    return NULL;
}

/* HTML to text, enough to find a first line: tags dropped, block ends as new lines, the
 * common entities decoded. */
static char *html_text(const char *html)
{
    size_t n = strlen(html);
    char *out = malloc(n + 1), *o = out;
    if (!out)
        return NULL;
    const char *p = html;
    while (*p) {
        if (*p == '<') {
            const char *close = strchr(p, '>');
            if (!close)
                break;
            if (!strncasecmp(p, "<br", 3) || !strncasecmp(p, "</p", 3) ||
                !strncasecmp(p, "</div", 5) || !strncasecmp(p, "<blockquote", 11))
                *o++ = '\n';
            if (!strncasecmp(p, "<blockquote", 11)) {
                /* quoted text: mark it as such */
                *o++ = '>';
            }
            if (!strncasecmp(p, "<style", 6) || !strncasecmp(p, "<script", 7)) {
                const char *stop = find_ci(close, !strncasecmp(p, "<style", 6) ? "</style"
                                                                                   : "</script");
                close = stop ? strchr(stop, '>') : NULL;
                if (!close)
                    break;
            }
            p = close + 1;
            continue;
        }
        if (*p == '&') {
            static const struct {
                const char *name;
                char c;
            } ent[] = {{"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'},
                       {"&nbsp;", ' '}, {"&#39;", '\''}};
            bool done = false;
            for (size_t i = 0; i < sizeof ent / sizeof ent[0] && !done; i++)
                if (!strncasecmp(p, ent[i].name, strlen(ent[i].name))) {
                    *o++ = ent[i].c;
                    p += strlen(ent[i].name);
                    done = true;
                }
            if (done)
                continue;
        }
        *o++ = *p++;
    }
    *o = '\0';
    return out;
}

/* ---- Messages ----------------------------------------------------------------------------- */

/* The reader of messages: cardpost_mime_read itself where this program links mime.c (the
 * tests, the fuzz targets), else the module's, loaded at the first message (mime.h). */
extern mime_read_fn cardpost_mime_read __attribute__((weak));

static char mime_module[4096];
static pthread_once_t mime_once = PTHREAD_ONCE_INIT;
static mime_read_fn *mime_read;
static char mime_failed[128]; /* why the module did not load */

void mail_mime_module(const char *path)
{
    snprintf(mime_module, sizeof mime_module, "%s", path);
}

static void mime_load(void)
{
    if (cardpost_mime_read) {
        mime_read = cardpost_mime_read;
        return;
    }
    if (!mime_module[0]) {
        snprintf(mime_failed, sizeof mime_failed, "no module was named");
        return;
    }
    /* (never closed: GLib's types, once registered, cannot be unloaded) */
    void *h = dlopen(mime_module, RTLD_NOW | RTLD_LOCAL);
    void *fn = h ? dlsym(h, MIME_READ_SYMBOL) : NULL;
    if (!fn) {
        const char *why = dlerror();
        snprintf(mime_failed, sizeof mime_failed, "%s", why ? why : MIME_READ_SYMBOL " is missing");
        return;
    }
    memcpy(&mime_read, &fn, sizeof fn); /* (POSIX: a dlsym'd function's address) */
}

bool mail_mime_ready(struct err *e)
{
    pthread_once(&mime_once, mime_load);
    if (!mime_read)
        return err_set(e, ERR_UNAVAILABLE, "mail_reader_missing",
                       "inbound mail cannot be read: the module %s did not load (%s)",
                       mime_module, mime_failed);
    return true;
}

bool mail_parse(const char *raw, size_t len, const char *recipient, struct mail_parsed *out,
                struct err *e)
{
    memset(out, 0, sizeof *out);
    if (!mail_mime_ready(e))
        return false;
    if (len == 0)
        return err_set(e, ERR_INVALID, "malformed_mail", "the message is empty");
    struct mime_message m;
    if (!mime_read(raw, len, &m))
        return err_set(e, ERR_INVALID, "malformed_mail", "this is not an email message");

    if (recipient && !strncasecmp(recipient, "play+", 5))
        out->play_address = strdup(recipient);
    if (!out->play_address) {
        out->play_address = m.play_address;
        m.play_address = NULL;
    }
    out->from = m.from;
    m.from = NULL;
    /* GMime decodes RFC 2047 words, so a Message-ID can arrive holding CR/LF: keep only an
     * id of msg-id syntax (notify_msgid_ok), and only the msg-ids of References. */
    const char *id = m.message_id;
    if (id && *id && strlen(id) < 900) {
        out->message_id = malloc(strlen(id) + 3);
        if (out->message_id)
            sprintf(out->message_id, "<%s>", id);
        if (out->message_id && !notify_msgid_ok(out->message_id, strlen(out->message_id))) {
            free(out->message_id);
            out->message_id = NULL;
        }
    }
    const char *refs = m.references;
    if (refs && strlen(refs) < 4000 && (out->references = malloc(strlen(refs) + 1))) {
        size_t kept = 0;
        for (const char *p = refs;;) {
            p += strspn(p, " \t\r\n");
            size_t n = strcspn(p, " \t\r\n");
            if (n == 0)
                break;
            if (notify_msgid_ok(p, n)) {
                if (kept)
                    out->references[kept++] = ' ';
                memcpy(out->references + kept, p, n);
                kept += n;
            }
            p += n;
        }
        out->references[kept] = '\0';
        if (!kept) {
            free(out->references);
            out->references = NULL;
        }
    }
    out->subject = m.subject;
    m.subject = NULL;
    const char *auto_submitted = m.auto_submitted;
    const char *precedence = m.precedence;
    out->automatic = (auto_submitted && strncasecmp(auto_submitted, "no", 2) != 0) ||
                     (precedence && (!strncasecmp(precedence, "bulk", 4) ||
                                     !strncasecmp(precedence, "junk", 4) ||
                                     !strncasecmp(precedence, "list", 4))) ||
                     (out->from && (!strncasecmp(out->from, "mailer-daemon@", 14) ||
                                    !strncasecmp(out->from, "postmaster@", 11)));

    char *text = m.html && m.text ? html_text(m.text) : m.text;
    if (text) {
        out->command = mail_first_line(text);
        if (text != m.text)
            free(text);
    }
    mime_message_finish(&m);
    return true;
}
