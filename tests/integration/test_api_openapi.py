"""docs/openapi.yaml matches the service: every endpoint is walked against
a real daemon, and each answer's status, content type and body must be the
ones the description documents."""
import http.client
import json
import pathlib
import os
import re
import shutil
import subprocess

import jsonschema
import pytest
import yaml

from test_api_support import Daemon, local_config, sh

SPEC_PATH = pathlib.Path(__file__).resolve().parents[2] / "docs" / \
    "openapi.yaml"
REPO = SPEC_PATH.parents[1]
TOOLS = pathlib.Path(os.environ.get("AIRLOCK_TOOLS_DIR") or REPO / "tools")
HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch",
                "trace")


@pytest.fixture(scope="module")
def spec():
    return yaml.safe_load(SPEC_PATH.read_text())


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    d = Daemon(tmp_path_factory.mktemp("openapi"), local_config()).start()
    yield d
    d.stop()


def template_of(spec, path):
    """The spec's path template matching a concrete path."""
    path = path.split("?")[0]
    for tpl in spec["paths"]:
        rx = "^" + re.sub(r"\{[^}]+\}", "[^/]+", tpl) + "$"
        if re.match(rx, path):
            return tpl
    return None


def resolve(spec, node):
    while isinstance(node, dict) and "$ref" in node:
        ref = node["$ref"]
        assert ref.startswith("#/")
        node = spec
        for part in ref[2:].split("/"):
            node = node[part]
    return node


class Checker:
    def __init__(self, spec, daemon):
        self.spec, self.d = spec, daemon
        self.seen = set()
        self.resolver = jsonschema.RefResolver.from_schema(spec)

    def call(self, method, path, body=None, **kw):
        st, h, data = self.d.request(method, path, body, **kw)
        tpl = template_of(self.spec, path)
        assert tpl is not None, "undocumented path " + path
        op = self.spec["paths"][tpl].get(method.lower())
        assert op is not None, "undocumented method %s %s" % (method, tpl)
        resp = op["responses"].get(str(st))
        assert resp is not None, "undocumented status %d for %s %s: %r" % (
            st, method, tpl, data)
        resp = resolve(self.spec, resp)
        ctype = h["content-type"].split(";")[0]
        content = resp["content"]
        assert ctype in content, (ctype, method, tpl, st)
        schema = content[ctype]["schema"]
        if ctype == "application/json":
            jsonschema.Draft202012Validator(
                schema, resolver=self.resolver).validate(data)
        self.seen.add((method.lower(), tpl))
        return st, data


def test_every_endpoint_answers_as_documented(spec, daemon):
    c = Checker(spec, daemon)
    c.call("GET", "/v1/health", token=None)
    c.call("GET", "/v1/capabilities")
    c.call("GET", "/v1/capabilities", token="wrong")
    c.call("GET", "/metrics")
    c.call("GET", "/metrics", token=None)
    assert c.call("GET", "/ui/index.html", token=None)[0] == 200
    assert c.call("GET", "/ui/console.js", token=None)[0] == 200
    assert c.call("GET", "/ui/nope", token=None)[0] == 404

    st, res = c.call("POST", "/v1/runs", sh("echo hi"))
    assert st == 200
    done_id = res["run_id"]
    st, _ = c.call("POST", "/v1/runs", sh("printf '\\377'"))
    assert st == 200
    assert c.call("POST", "/v1/runs", sh("exit 4"))[0] == 200
    assert c.call("POST", "/v1/runs", "{bad json")[0] == 400
    assert c.call("POST", "/v1/runs?wait=nope", sh("true"))[0] == 400
    assert c.call("POST", "/v1/runs",
                  {"language": "ruby", "code": "1"})[0] == 403
    req = sh("true")
    req["grant"]["network"] = "none"
    assert c.call("POST", "/v1/runs", req)[0] == 422
    assert c.call("POST", "/v1/runs", sh("true"), token=None)[0] == 401
    req = sh("echo one", idempotency_key="k-1")
    assert c.call("POST", "/v1/runs", req)[0] == 200
    assert c.call("POST", "/v1/runs",
                  sh("echo two", idempotency_key="k-1"))[0] == 409

    st, acc = c.call("POST", "/v1/runs?wait=false",
                     sh("sleep 20", limits={"wall_ms": 30000}))
    assert st == 202
    live_id = acc["run_id"]
    st, body = c.call("GET", "/v1/runs/" + live_id)
    assert st == 200 and body["state"] == "running"
    assert c.call("POST", "/v1/runs/%s/inbox" % live_id,
                  {"id": "e-1", "event": {"k": 1}})[0] == 202
    assert c.call("POST", "/v1/runs/%s/inbox" % live_id,
                  {"id": "e-1", "event": {"k": 1}})[0] == 200
    assert c.call("POST", "/v1/runs/%s/inbox" % live_id,
                  {"id": "bad id", "event": {}})[0] == 400
    assert c.call("POST", "/v1/runs/nope/inbox",
                  {"id": "e", "event": {}})[0] == 404
    assert c.call("POST", "/v1/runs/%s/interrupt" % live_id)[0] == 202
    daemon.wait_finished(live_id)
    assert c.call("POST", "/v1/runs/%s/inbox" % live_id,
                  {"id": "e-2", "event": {}})[0] == 409
    assert c.call("POST", "/v1/runs/%s/interrupt" % live_id)[0] == 409
    assert c.call("POST", "/v1/runs/nope/interrupt")[0] == 404
    assert c.call("POST", "/v1/runs/nope/interrupt", token=None)[0] == 401
    st, stop = c.call("POST", "/v1/runs?wait=false",
                      sh("sleep 20", limits={"wall_ms": 30000}))
    st, res = c.call("POST", "/v1/runs/%s/interrupt?wait=true"
                     % stop["run_id"])
    assert st == 200 and res["outcome"] == "interrupted"

    # artifacts: a run's log and a declared output, octet-stream
    st, out = c.call("POST", "/v1/runs",
                     sh("echo x > o.txt; ln -s /etc/passwd l.txt",
                        outputs=["*.txt"]))
    assert st == 200 and [o.get("refused") for o in out["outputs"]] == [
        "symlink", None]
    assert c.call("GET", "/v1/runs/%s/artifacts/out-1" % out["run_id"])[0] \
        == 200
    assert c.call("GET", "/v1/runs/%s/artifacts/log" % done_id)[0] == 200
    assert c.call("GET", "/v1/runs/%s/artifacts/out-7" % done_id)[0] == 404
    assert c.call("GET", "/v1/runs/%s/artifacts/log" % done_id,
                  token=None)[0] == 401
    assert c.call("GET", "/v1/runs/" + done_id)[0] == 200
    assert c.call("GET", "/v1/runs/unknown")[0] == 404
    assert c.call("GET", "/v1/runs?limit=2")[0] == 200
    assert c.call("GET", "/v1/runs?limit=0")[0] == 400
    assert c.call("GET", "/v1/runs", token=None)[0] == 401
    assert c.call("GET", "/v1/runs?outcome=completed&language=sh")[0] == 200
    assert c.call("GET", "/v1/runs?outcome=nope")[0] == 400
    assert c.call("GET", "/v1/audit?limit=5")[0] == 200
    assert c.call("GET", "/v1/audit?before=0")[0] == 400
    assert c.call("GET", "/v1/audit", token=None)[0] == 401
    assert c.call("GET", "/v1/runs/unknown/events")[0] == 404

    # The event stream: documented as text/event-stream.
    events = daemon.events(done_id)
    assert events[-1][0] == "result"
    jsonschema.Draft202012Validator(
        {"$ref": "#/components/schemas/Result"},
        resolver=c.resolver).validate(events[-1][1])
    c.seen.add(("get", "/v1/runs/{run_id}/events"))

    documented = {(m, p) for p, ops in spec["paths"].items()
                  for m in ops if m in ("get", "post")}
    assert documented == c.seen, documented ^ c.seen


def test_unknown_paths_and_methods_answer_typed_json(spec, daemon):
    c = Checker(spec, daemon)
    st, h, body = daemon.request("GET", "/nope")
    assert st == 404
    jsonschema.Draft202012Validator(
        {"$ref": "#/components/schemas/Error"},
        resolver=c.resolver).validate(body)
    st, h, body = daemon.request("PUT", "/v1/runs")
    assert st == 405
    jsonschema.Draft202012Validator(
        {"$ref": "#/components/schemas/Error"},
        resolver=c.resolver).validate(body)


def test_oversized_body_is_documented(spec, daemon):
    c = Checker(spec, daemon)
    # Chunked, so the bound is found while reading.
    conn = http.client.HTTPConnection("127.0.0.1", daemon.port, timeout=60)
    conn.request("POST", "/v1/runs",
                 body=iter([b"z" * (1 << 20)] * 17), encode_chunked=True,
                 headers={"Authorization": "Bearer " + daemon.token,
                          "Content-Type": "application/json",
                          "Transfer-Encoding": "chunked"})
    resp = conn.getresponse()
    body = json.loads(resp.read())
    conn.close()
    assert resp.status == 413
    op = spec["paths"]["/v1/runs"]["post"]["responses"]["413"]
    schema = resolve(spec, op)["content"]["application/json"]["schema"]
    jsonschema.Draft202012Validator(schema,
                                    resolver=c.resolver).validate(body)


def test_every_operation_has_a_unique_operation_id(spec):
    ids = []
    for path, item in spec["paths"].items():
        for method in HTTP_METHODS:
            if method in item:
                op_id = item[method].get("operationId")
                assert op_id, "%s %s has no operationId" % (method, path)
                ids.append(op_id)
    assert len(ids) == len(set(ids)), ids


# swagger-parser's validate: the document against the OpenAPI 3.1 schema,
# every $ref resolvable (uniqueness of operationIds is checked above).
VALIDATE_JS = """
const SwaggerParser = require(process.argv[1]);
SwaggerParser.validate(process.argv[2]).then(
  () => console.log("valid"),
  (e) => { console.error(e.message); process.exit(1); });
"""


def test_spec_passes_swagger_parser():
    node = shutil.which("node") or shutil.which("nodejs")
    if node is None:
        pytest.fail("node is not installed: run scripts/install-deps.sh "
                    "(Debian's nodejs)")
    module = TOOLS / "node_modules" / "@apidevtools" / "swagger-parser"
    assert module.is_dir(), \
        "%s missing: run scripts/install-tools.sh" % module
    p = subprocess.run([node, "-e", VALIDATE_JS, str(module),
                        str(SPEC_PATH)], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
