/* mime.c - an inbound message read with GMime (mime.h): built as the module cardpost-mime.so
 * that cardpostd loads at its first message, and linked into the tests and fuzz targets.
 * It uses nothing of cardpostd's, so the module needs no symbol of the daemon's.
 */
#include "mime.h"

#include <gmime/gmime.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static pthread_once_t gmime_once = PTHREAD_ONCE_INIT;

static void gmime_start(void)
{
    g_mime_init();
}

/* A copy of `s`, or NULL; false when `s` was there and memory ran out. */
static bool copy(const char *s, char **out)
{
    *out = s ? strdup(s) : NULL;
    return !s || *out;
}

static void find_play_address(InternetAddressList *list, char **out)
{
    if (!list || *out)
        return;
    int n = internet_address_list_length(list);
    for (int i = 0; i < n && !*out; i++) {
        InternetAddress *a = internet_address_list_get_address(list, i);
        if (INTERNET_ADDRESS_IS_MAILBOX(a)) {
            const char *addr = internet_address_mailbox_get_addr(INTERNET_ADDRESS_MAILBOX(a));
            if (addr && !strncasecmp(addr, "play+", 5))
                *out = strdup(addr);
        } else if (INTERNET_ADDRESS_IS_GROUP(a)) {
            find_play_address(internet_address_group_get_members(INTERNET_ADDRESS_GROUP(a)),
                              out);
        }
    }
}

static void find_in_header(GMimeObject *o, const char *name, char **out)
{
    const char *v = g_mime_object_get_header(o, name);
    if (!v || *out)
        return;
    InternetAddressList *list = internet_address_list_parse(NULL, v);
    find_play_address(list, out);
    if (list)
        g_object_unref(list);
}

/* The text of the first text/plain part that is not an attachment, else of the first
 * text/html one (*html set); false when memory ran out. */
static bool body_text(GMimeMessage *msg, char **out, bool *html)
{
    *out = NULL;
    GMimeObject *top = g_mime_message_get_mime_part(msg);
    if (!top)
        return true;
    char *plain = NULL, *markup = NULL;
    GMimePartIter *iter = g_mime_part_iter_new(top);
    bool more = g_mime_part_iter_is_valid(iter);
    GMimeObject *cur = more ? NULL : top;
    for (;;) {
        if (more)
            cur = g_mime_part_iter_get_current(iter);
        if (cur && GMIME_IS_TEXT_PART(cur) && !g_mime_part_is_attachment(GMIME_PART(cur))) {
            GMimeContentType *ct = g_mime_object_get_content_type(cur);
            if (!plain && g_mime_content_type_is_type(ct, "text", "plain"))
                plain = g_mime_text_part_get_text(GMIME_TEXT_PART(cur));
            else if (!markup && g_mime_content_type_is_type(ct, "text", "html"))
                markup = g_mime_text_part_get_text(GMIME_TEXT_PART(cur));
        }
        if (!more || plain || !g_mime_part_iter_next(iter))
            break;
    }
    g_mime_part_iter_free(iter);
    *html = !plain && markup;
    bool ok = copy(plain ? plain : markup, out);
    g_free(plain);
    g_free(markup);
    return ok;
}

bool cardpost_mime_read(const char *raw, size_t len, struct mime_message *out)
{
    memset(out, 0, sizeof *out);
    pthread_once(&gmime_once, gmime_start);
    GMimeStream *stream = g_mime_stream_mem_new_with_buffer(raw, len);
    GMimeParser *parser = g_mime_parser_new_with_stream(stream);
    g_object_unref(stream);
    GMimeMessage *msg = g_mime_parser_construct_message(parser, NULL);
    g_object_unref(parser);
    if (!msg)
        return false;

    GMimeObject *o = GMIME_OBJECT(msg);
    find_in_header(o, "Delivered-To", &out->play_address);
    find_in_header(o, "X-Original-To", &out->play_address);
    find_play_address(g_mime_message_get_addresses(msg, GMIME_ADDRESS_TYPE_TO),
                      &out->play_address);
    find_play_address(g_mime_message_get_addresses(msg, GMIME_ADDRESS_TYPE_CC),
                      &out->play_address);
    const char *from = NULL;
    InternetAddressList *froms = g_mime_message_get_from(msg);
    if (froms && internet_address_list_length(froms) > 0) {
        InternetAddress *a = internet_address_list_get_address(froms, 0);
        if (INTERNET_ADDRESS_IS_MAILBOX(a))
            from = internet_address_mailbox_get_addr(INTERNET_ADDRESS_MAILBOX(a));
    }
    bool ok = copy(from, &out->from) &&
              copy(g_mime_message_get_message_id(msg), &out->message_id) &&
              copy(g_mime_object_get_header(o, "References"), &out->references) &&
              copy(g_mime_message_get_subject(msg), &out->subject) &&
              copy(g_mime_object_get_header(o, "Auto-Submitted"), &out->auto_submitted) &&
              copy(g_mime_object_get_header(o, "Precedence"), &out->precedence) &&
              body_text(msg, &out->text, &out->html);
    g_object_unref(msg);
    if (!ok)
        mime_message_finish(out);
    return ok;
}
