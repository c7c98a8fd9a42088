/* async.c - a request whose answer comes later (async.h): the suspend and resume the core
 * calls (core.h, struct api_async), from any thread and in either order, and what the
 * request does next when its handler returns and when MHD calls it again.
 */
#include "async.h"

#include <stdlib.h>

void http_async_init(struct http_async *a, struct MHD_Connection *conn)
{
    *a = (struct http_async){.conn = conn};
    lock_init(&a->lock, API_LOCK_REQUEST, "request");
}

void http_async_finish(struct http_async *a)
{
    if (!a)
        return;
    json_decref(a->reply.body);
    free(a->reply.text);
    lock_finish(&a->lock);
}

static void async_suspend(void *cls)
{
    struct http_async *a = cls;
    lock_take(&a->lock);
    if (!a->resumed) {
        a->suspended = a->parked = true;
        MHD_suspend_connection(a->conn);
    }
    lock_drop(&a->lock);
}

static void resume_connection(void *conn)
{
    MHD_resume_connection(conn);
}

/* (The connection stays suspended, and so is not closed, until its resume: the committer
 * gives it after the rest of its batch's answers, api_wake_soon.) */
static void async_resume(void *cls, bool retry)
{
    struct http_async *a = cls;
    lock_take(&a->lock);
    if (retry)
        a->retry = true;
    else
        a->reply_ready = true;
    if (a->suspended) {
        a->suspended = false;
        api_wake_soon(resume_connection, a->conn);
    } else {
        a->resumed = true;
    }
    lock_drop(&a->lock);
}

/* What the handler's call left: suspended by it (even if resumed since: the answer goes
 * out when MHD calls the request again), else the answer, or a retry asked at once. */
static enum http_async_next async_returned(struct http_async *a)
{
    lock_take(&a->lock);
    bool parked = a->parked, retry = false;
    a->parked = a->resumed = false;
    if (!parked) {
        retry = a->retry;
        a->retry = a->reply_ready = false;
    }
    lock_drop(&a->lock);
    return parked ? HTTP_ASYNC_NOTHING : retry ? HTTP_ASYNC_AGAIN : HTTP_ASYNC_ANSWER;
}

enum http_async_next http_async_call(struct http_async *a, route_async_fn *handler,
                                     const struct route_call *k)
{
    struct api_async hooks = {async_suspend, async_resume, a};
    enum http_async_next next;
    do {
        a->reply = (struct api_reply){0};
        handler(k, &a->reply, &hooks);
    } while ((next = async_returned(a)) == HTTP_ASYNC_AGAIN);
    return next;
}

enum http_async_next http_async_resumed(struct http_async *a)
{
    lock_take(&a->lock);
    bool ready = a->reply_ready, retry = a->retry;
    a->reply_ready = a->retry = false;
    lock_drop(&a->lock);
    return ready ? HTTP_ASYNC_ANSWER : retry ? HTTP_ASYNC_AGAIN : HTTP_ASYNC_NOTHING;
}
