# apidoc.py - every answer the end-to-end tests receive, checked against the API's description
# (docs/openapi.json, OpenAPI 3.1): its path and method must be there, its status among the
# operation's responses, its Content-Type among that response's, and its JSON body valid
# against the response's schema (JSON Schema draft 2020-12, Debian's python3-jsonschema; the
# schemas close their objects, so an undocumented member fails). A path the description does
# not have must be answered 404, a method a path does not have 405, both problem+json, as
# routes.c answers them. harness.py calls check() from its requests; a mismatch raises
# Undocumented and is remembered, so that a test that swallows exceptions still fails.
import json
import os
import re

import warnings

import jsonschema

HERE = os.path.dirname(os.path.abspath(__file__))
DOC_PATH = os.path.join(os.environ.get("CARDPOST_SOURCE_ROOT", os.path.join(HERE, "..", "..")),
                        "docs", "openapi.json")
PROBLEM = "application/problem+json"
# What any request may be refused with before its path and method are looked at: a token
# that is not valid or a body without one (401), a body too large (413), a query too long
# (414), a limit (429, 503).
REFUSED_FIRST = (401, 413, 414, 429, 503)

FAILURES = []   # every mismatch seen by this process (harness.run() fails on any)


class Undocumented(Exception):
    pass


class Description:
    def __init__(self, path=DOC_PATH):
        with open(path) as f:
            self.doc = json.load(f)
        # The document is the root: "#/components/schemas/..." resolve inside it. (RefResolver:
        # Debian 12's jsonschema 4.10 has no `referencing`; newer ones only warn.)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            self.resolver = jsonschema.RefResolver("urn:cardpost:openapi", self.doc)
        # Literal paths first, then templated ones (OpenAPI: a concrete path wins).
        self.paths = []
        for p in sorted(self.doc["paths"], key=lambda p: ("{" in p, p)):
            params = self._path_params(self.doc["paths"][p])
            rx = "".join(self._segment(part, params) for part in re.split(r"(\{[a-z_]+\})", p))
            self.paths.append((re.compile(rx + r"\Z"), p))

    def _path_params(self, item):
        out = {}
        for op in item.values():
            if isinstance(op, dict):
                for prm in op.get("parameters", []):
                    prm = self.deref(prm)
                    if prm.get("in") == "path":
                        out[prm["name"]] = prm.get("schema", {})
        return out

    @staticmethod
    def _segment(part, params):
        m = re.fullmatch(r"\{([a-z_]+)\}", part)
        if not m:
            return re.escape(part)
        # An {id} is a positive integer without leading zeros (routes.h).
        return r"[1-9][0-9]*" if params.get(m.group(1), {}).get("type") == "integer" else r"[^/]+"

    def deref(self, node):
        while isinstance(node, dict) and "$ref" in node:
            node = self.pointer(node["$ref"])
        return node

    def pointer(self, ref):
        node = self.doc
        for key in ref.lstrip("#/").split("/"):
            node = node[key.replace("~1", "/").replace("~0", "~")]
        return node

    def find(self, path):
        for rx, template in self.paths:
            if rx.match(path):
                return template
        return None

    def validate(self, pointer, body, what):
        """Validate body against the schema at `pointer` ("#/paths/..."), inside the document
        so that its $refs to the components resolve."""
        v = jsonschema.Draft202012Validator({"$ref": pointer}, resolver=self.resolver)
        errors = sorted(v.iter_errors(body), key=lambda e: list(e.absolute_path))
        if errors:
            e = errors[0]
            raise Undocumented("%s: %s at %s" % (what, e.message[:400],
                                                 "/".join(map(str, e.absolute_path)) or "the body"))

    def check(self, method, path, status, headers, body):
        what = "%s %s -> %d" % (method, path, status)
        path = path.split("?", 1)[0]
        ctype = (headers.get("content-type") or "").split(";")[0].strip()
        template = self.find(path)
        if template is None:
            if not path.startswith("/v1/") and ctype not in ("application/json", PROBLEM):
                return  # the browser pages (docs/web.md), not the API
            if status != 404 and status not in REFUSED_FIRST:
                raise Undocumented("%s: the path is not in docs/openapi.json" % what)
            return self.check_problem(body, what, ctype)
        item = self.doc["paths"][template]
        # A GET route answers HEAD too (routes.c).
        op = item.get("get" if method == "HEAD" else method.lower())
        if op is None:
            if status in REFUSED_FIRST:
                return self.check_problem(body, what, ctype)
            if status != 405 or "allow" not in headers and template != "/healthz":
                raise Undocumented("%s: %s is not a method of %s in docs/openapi.json"
                                   % (what, method, template))
            return self.check_problem(body, what, ctype)
        responses = op["responses"]
        resp = responses.get(str(status)) or responses.get("%dXX" % (status // 100))
        if resp is None:
            raise Undocumented("%s: status %d is not documented for %s %s"
                               % (what, status, method, template))
        pointer = "#/paths/%s/%s/responses/%s" % (
            esc(template), "get" if method == "HEAD" else method.lower(),
            str(status) if str(status) in responses else "%dXX" % (status // 100))
        if "$ref" in resp:
            pointer = resp["$ref"]
        resp = self.deref(resp)
        content = resp.get("content", {})
        if not content:
            # (libmicrohttpd's own answers, such as 431, carry a small page without a type.)
            if body not in (None, "") and ctype:
                raise Undocumented("%s: an answer documented without a body has one" % what)
            return
        if ctype not in content:
            raise Undocumented("%s: Content-Type %r is not documented (%s)"
                               % (what, ctype, ", ".join(content)))
        if method == "HEAD" or ctype not in ("application/json", PROBLEM):
            return
        if "schema" in content[ctype]:
            self.validate("%s/content/%s/schema" % (pointer, esc(ctype)), body, what)

    def check_message(self, path, msg, what):
        """An event stream's message: its kind among the stream's x-cardpost-messages (the
        schema of each kind's data, an extension: OpenAPI 3.1 has no word for it), an id,
        and data valid against that kind's schema."""
        template = self.find(path)
        media = self.doc["paths"][template]["get"]["responses"]["200"]["content"]
        kinds = media["text/event-stream"]["x-cardpost-messages"]
        if msg.get("event") not in kinds or not isinstance(msg.get("id"), int):
            raise Undocumented("%s: not a message kind of the stream, or no id" % what)
        self.validate(kinds[msg["event"]]["$ref"], msg["data"], what)

    def check_problem(self, body, what, ctype):
        if ctype != PROBLEM:
            raise Undocumented("%s: a refusal is %s (got %r)" % (what, PROBLEM, ctype))
        self.validate("#/components/schemas/Problem", body, what)


def esc(key):
    """A key as a JSON pointer's token (RFC 6901)."""
    return key.replace("~", "~0").replace("/", "~1")


_DESCRIPTION = None


def check(method, path, status, headers, body):
    """Check one answer (headers a lower-case dict, body the parsed JSON or the text)."""
    global _DESCRIPTION
    record = os.environ.get("CARDPOST_OPENAPI_RECORD")
    if record:
        with open(record, "a") as f:
            f.write(json.dumps({"method": method, "path": path, "status": status,
                                "ctype": headers.get("content-type"), "body": body}) + "\n")
        return  # recording what the service answers (to write the description), not checking
    if _DESCRIPTION is None:
        _DESCRIPTION = Description()
    try:
        _DESCRIPTION.check(method, path, status, headers, body)
    except Undocumented as e:
        FAILURES.append(str(e))
        raise


def check_message(path, msg):
    """Check one message of an event stream ({"id", "event", "data"}, data parsed): a kind
    the description names, with an id, and data valid against that kind's schema."""
    global _DESCRIPTION
    if os.environ.get("CARDPOST_OPENAPI_RECORD"):
        return
    if _DESCRIPTION is None:
        _DESCRIPTION = Description()
    what = "GET %s: a message %r" % (path, msg.get("event"))
    try:
        _DESCRIPTION.check_message(path, msg, what)
    except Undocumented as e:
        FAILURES.append(str(e))
        raise
