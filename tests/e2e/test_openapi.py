# test_openapi.py - end to end: the API's description (docs/openapi.json, OpenAPI 3.1).
# cardpostd serves it at GET /v1/openapi.json, byte for byte the file it was built from,
# without a token; and the check that every other end-to-end test runs on every answer it
# receives (apidoc.py, through harness.py) refuses what the document does not say: a path,
# a method, a status, a Content-Type, a member, a type, an event stream's message.
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import apidoc  # noqa: E402
from harness import PROBLEM, Daemon, check, check_problem, run  # noqa: E402


def test_served():
    with open(apidoc.DOC_PATH, "rb") as f:
        text = f.read()
    with Daemon() as d:
        c = d.conn()
        c.request("GET", "/v1/openapi.json")
        r = c.getresponse()
        body = r.read()
        check(r.status == 200, "GET /v1/openapi.json -> 200 (got %d)" % r.status)
        check(r.getheader("Content-Type") == "application/json", "it is application/json")
        check(body == text, "it is docs/openapi.json as built, byte for byte")
        c.close()
        doc = json.loads(body)
        check(doc["openapi"].startswith("3.1"), "an OpenAPI 3.1 document")
        check("/v1/openapi.json" in doc["paths"], "it describes itself")
        st, _, served = d.request("GET", "/v1/openapi.json")  # (checked against itself)
        check(st == 200 and served == doc, "the same through the harness")
        st, _, _ = d.request("HEAD", "/v1/openapi.json")
        check(st == 200, "HEAD /v1/openapi.json -> 200")
        check_problem(d.request("POST", "/v1/openapi.json"), 405, "method_not_allowed",
                      "POST /v1/openapi.json")
        check_problem(d.request("GET", "/v1/openapi.json", token="not-a-token"), 401,
                      "unauthorized", "a token that is not valid, even here")


def refused(what, method, path, status, headers, body):
    """Whether the description refuses this answer (a fresh Description: the check's own
    list of failures stays empty)."""
    try:
        apidoc.Description().check(method, path, status, headers, body)
    except apidoc.Undocumented as e:
        return str(e)
    raise apidoc.Undocumented("the description takes %s" % what)


def test_check_refuses_what_is_not_described():
    desc = apidoc.Description()
    json_h = {"content-type": "application/json"}
    problem_h = {"content-type": PROBLEM}
    ok = {"status": "ok"}
    desc.check("GET", "/healthz", 200, json_h, ok)
    desc.check("HEAD", "/healthz", 200, json_h, None)
    desc.check("GET", "/v1/nowhere", 404, problem_h,
               {"type": "/problems/not_found", "title": "Not Found", "status": 404,
                "detail": "no such resource", "code": "not_found"})
    p = {"type": "/problems/forbidden", "title": "Forbidden", "status": 403,
         "detail": "x", "code": "forbidden"}
    desc.check("GET", "/v1/admin/stats", 403, problem_h, p)
    desc.check("GET", "/v1/admin/stats", 403, problem_h, {**p, "request_id": "r-1"})
    refused("an undocumented member", "GET", "/healthz", 200, json_h, {**ok, "extra": 1})
    refused("a member of the wrong type", "GET", "/healthz", 200, json_h, {"status": 1})
    refused("a missing member", "GET", "/readyz", 200, json_h, {"status": "ready"})
    refused("an undocumented status", "GET", "/healthz", 418, json_h, ok)
    refused("an undocumented Content-Type", "GET", "/healthz", 200,
            {"content-type": "text/plain"}, "ok")
    refused("an undocumented method", "PUT", "/healthz", 200, json_h, ok)
    refused("an undocumented path answered", "GET", "/v1/nowhere", 200, json_h, ok)
    refused("a problem with a member too many", "GET", "/v1/admin/stats", 403, problem_h,
            {**p, "extra": True})
    refused("a problem without a code", "GET", "/v1/admin/stats", 403, problem_h,
            {k: v for k, v in p.items() if k != "code"})
    refused("an undocumented member deep in a match", "GET", "/v1/matches/1", 200, json_h,
            {"id": 1, "game": "hearts", "options": {}, "players": [
                {"seat": 0, "id": 1, "name": "a", "secret": "x"}],
             "status": "active", "seq": 1, "to_move": [0], "you": None, "totals": [0],
             "target": 100, "view": {}, "legal": [], "deadline": None, "clock": None,
             "seed_commitment": "0" * 64})
    events = "/v1/matches/1/events"
    desc.check_message(events, {"id": 3, "event": "event",
                                "data": {"seat": 0, "move": "play 2C", "seq": 3}}, "a move")
    desc.check_message(events, {"id": 3, "event": "event",
                                "data": {"seat": 1, "move": None, "secret": True, "seq": 3}},
                       "a secret move")
    for what, msg in (("a kind the stream does not send", {"id": 1, "event": "chat", "data": {}}),
                      ("a message without an id", {"event": "event", "data": {"deal": []}}),
                      ("an event with a member too many",
                       {"id": 1, "event": "event", "data": {"seat": 0, "move": "x", "who": 1}}),
                      ("an event that is neither move, deal nor shuffle",
                       {"id": 1, "event": "event", "data": {"seq": 1}}),
                      ("a state that is not a view", {"id": 1, "event": "state", "data": {}})):
        try:
            apidoc.Description().check_message(events, msg, what)
        except apidoc.Undocumented:
            continue
        raise apidoc.Undocumented("the description takes %s" % what)
    check(not apidoc.FAILURES, "(a fresh description's refusals are not the run's failures)")


if __name__ == "__main__":
    run([test_served, test_check_refuses_what_is_not_described])
