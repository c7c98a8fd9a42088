/* api-mail.c - the HTTP edge of moves by email: POST /v1/mail/inbound hands the message
 * `cardpost mail-in` posted to core_mail_inbound (core.h) and answers with what became of
 * it, or the problem (a message to bounce).
 */
#include "core.h"
#include "handlers.h"

void api_mail_inbound(struct api_app *app, const struct api_caller *c, const char *raw,
                      size_t len, const char *recipient, long long truncated,
                      struct api_reply *r)
{
    struct core_mail_outcome out;
    struct err e;
    if (!core_mail_inbound(app, c, raw, len, recipient, truncated, &out, &e)) {
        api_problem_from_err(r, &e);
        return;
    }
    r->status = 200;
    if (!out.match) /* (ignored: an automatic message names no match) */
        r->body = json_pack("{s:s, s:s}", "outcome", out.what, "detail", out.detail);
    else
        r->body = json_pack("{s:s, s:I, s:i, s:s}", "outcome", out.what, "match",
                            (json_int_t)out.match, "seat", out.seat, "detail", out.detail);
    if (!r->body) /* never an empty 200 */
        api_problem(r, 500, "internal", "the answer could not be encoded");
}
