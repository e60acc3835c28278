"""The OpenAPI document at {swagger.path}/openapi.json: it lints with
`@redocly/cli lint` (no errors), and every response status it documents for
every operation is what the server really answers to a sample request, with
a body that validates against the documented schema (jsonschema, 2020-12)
and the documented content type. An operation or status without a sample
here fails the test: documenting a new status means proving it.
swagger.enabled = false removes both the page and the document."""
import json
import socket
import subprocess
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import jsonschema
import pytest
import requests

from conftest import REPO, dataset_block, server_block, write_parquet

E2E = Path(__file__).resolve().parent
REDOCLY = E2E / "node_modules" / ".bin" / "redocly"
TOKEN = "op3napi-token"


def lint(doc_path):
    r = subprocess.run([str(REDOCLY), "lint", str(doc_path), "--format=json"],
                       capture_output=True, text=True, timeout=300, cwd=E2E)
    out = r.stdout[r.stdout.index("{"):] if "{" in r.stdout else r.stdout
    report = json.loads(out)
    problems = report["problems"]
    errors = [p for p in problems if p["severity"] == "error"]
    assert not errors, json.dumps(errors, indent=1)[:4000]
    # The only warnings allowed: operations that answer no 4xx at all
    # (probes, version, metrics, this document, listings without [auth]),
    # and the UIs' mount points, which only redirect to {base}/ (no 2xx).
    others = [p for p in problems if p["ruleId"] != "operation-4xx-response"
              and not (p["ruleId"] == "operation-2xx-response"
                       and p["location"][0]["pointer"] in ("#/paths/~1docs/get/responses",
                                                          "#/paths/~1explore/get/responses",
                                                          "#/paths/~1mkdocs/get/responses"))]
    assert not others, json.dumps(others, indent=1)[:4000]
    return r.returncode


@pytest.fixture
def servers(vt, datadir, tmp_path):
    write_parquet(datadir / "t.parquet",
                  "SELECT range AS id, 'c' || (range % 7) AS cat, range * 0.5 AS x FROM range(5000)")
    write_parquet(datadir / "big.parquet",
                  "SELECT range AS id, md5(range::VARCHAR) AS s, range % 1000 AS g "
                  "FROM range(1500000)")
    write_parquet(datadir / "fragile.parquet", "SELECT range AS id FROM range(100)")
    write_parquet(datadir / "extra.parquet", "SELECT 1 AS one")
    (datadir / "broken.parquet").write_bytes(b"PAR1 not a parquet file at all PAR1")
    common = ('[metrics]\nenabled = true\n[sql]\nenabled = true\n[mcp]\nenabled = true\n')
    # allowed_roots: the registration samples read datadir at run time.
    s = vt(server_block(prefix="/svc", max_body_bytes=4096, allowed_roots=[datadir]) + common
           + dataset_block("t", datadir / "t.parquet")
           + dataset_block("big", datadir / "big.parquet", **{"index.mode": "none"})
           + dataset_block("fragile", datadir / "fragile.parquet")
           + dataset_block("broken", datadir / "broken.parquet"),
           env={"ADMIN_TOKEN": TOKEN}, wait="listening", timeout=120)
    for name in ("t", "big", "fragile"):
        s.wait_state(name, ["published"], timeout=120)
    s.wait_state("broken", ["failed"])
    slow = vt(server_block(request_timeout_ms=1, allowed_roots=[datadir]) + "[sql]\nenabled = true\n"
              + dataset_block("big", datadir / "big.parquet", **{"index.mode": "none"}),
              env={"ADMIN_TOKEN": TOKEN}, wait="listening", timeout=120)
    slow.wait_state("big", ["published"], timeout=120)
    failed = vt(server_block() + dataset_block("broken", datadir / "broken.parquet"),
                wait="listening")
    failed.wait_state("broken", ["failed"])
    noadmin = vt(server_block() + dataset_block("t", datadir / "t.parquet"))
    return {"s": s, "slow": slow, "failed": failed, "noadmin": noadmin, "data": datadir}


def error_statuses():
    """code -> HTTP status, from the one error table (src/util/errors.h)."""
    import re
    text = (REPO / "src" / "util" / "errors.h").read_text()
    return {m.group(2): int(m.group(1))
            for m in re.finditer(r'X\(\w+, (\d+), "(\w+)"', text)}


def fetch_doc(s):
    r = requests.get(s.url("/docs/openapi.json"), timeout=30)
    assert r.status_code == 200 and r.headers["Content-Type"] == "application/json"
    return r.json()


def validate(doc, schema, value):
    resolver = jsonschema.RefResolver.from_schema(doc)
    jsonschema.Draft202012Validator(schema, resolver=resolver).validate(value)


def test_lint_and_every_documented_status(servers, tmp_path):
    s = servers["s"]
    doc = fetch_doc(s)
    assert doc["servers"][0]["url"] == "/svc"
    (tmp_path / "openapi.json").write_text(json.dumps(doc, indent=1))
    lint(tmp_path / "openapi.json")
    data = servers["data"]
    H = {"X-Admin-Token": TOKEN}
    J = {"Content-Type": "application/json"}

    def url(path, server=s):
        item = doc["paths"].get(path, {})
        root = item.get("servers", [{}])[0].get("url") == "/"
        return server.base + ("" if root else server.prefix) + path

    def post(path, body=None, headers=None, server=s, raw=None):
        h = dict(J)
        h.update(headers or {})
        d = raw if raw is not None else json.dumps(body if body is not None else {}).encode()
        return requests.post(url(path, server), data=d, headers=h, timeout=60)

    def get(path, headers=None, server=s, method="GET"):
        return requests.request(method, url(path, server), headers=headers or {}, timeout=60,
                                allow_redirects=False)

    big_body = b'{"x":"' + b"y" * 8000 + b'"}'

    def no_ct(path, headers=None):
        h = dict(headers or {})
        return requests.post(url(path), data=b"{}", headers=h, timeout=30)

    def reload_busy():
        # two reloads of a dataset that takes a while to build: one is 409
        for _ in range(8):
            first = {}
            t = threading.Thread(target=lambda: first.update(
                r=post("/api/v1/datasets/big/reload", headers=H)))
            t.start()
            time.sleep(0.15)
            r = post("/api/v1/datasets/big/reload", headers=H)
            t.join()
            if r.status_code == 409:
                return r
        return r

    def reload_failing():
        p = data / "fragile.parquet"
        good = p.read_bytes()
        p.write_bytes(b"PAR1 corrupt PAR1")
        try:
            return post("/api/v1/datasets/fragile/reload", headers=H)
        finally:
            p.write_bytes(good)

    def reload_empty():
        p = data / "fragile.parquet"
        good = p.read_bytes()
        write_parquet(p, "SELECT range AS id FROM range(0)")
        try:
            return post("/api/v1/datasets/fragile/reload", headers=H)
        finally:
            p.write_bytes(good)

    def config_broken():
        cfg = s.config_path
        good = cfg.read_text()
        cfg.write_text(good + "\n[[dataset]\nthis is not toml\n")
        try:
            return post("/api/v1/config/reload", headers=H)
        finally:
            cfg.write_text(good)

    def etag(path):
        return get(path).headers["ETag"]

    reg = {"name": "reg1", "source": {"kind": "parquet", "location": str(data / "extra.parquet")}}
    per = {"name": "pers1", "source": {"kind": "parquet", "location": str(data / "extra.parquet")}}
    q400 = {"columns": ["no_such_column"]}
    slow_q = {"order_by": [{"col": "s", "dir": "desc"}], "group_by": ["s"], "page_size": 10}
    rpc = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}

    samples = {
        ("get", "/healthz", 200): lambda: get("/healthz"),
        ("get", "/health", 200): lambda: get("/health"),
        ("get", "/version", 200): lambda: get("/version"),
        ("get", "/readyz", 200): lambda: get("/readyz"),
        ("get", "/readyz", 503): lambda: get("/readyz", server=servers["failed"]),
        ("get", "/api/v1/datasets", 200): lambda: get("/api/v1/datasets"),
        ("post", "/api/v1/datasets", 200): lambda: post("/api/v1/datasets", reg, H),
        ("post", "/api/v1/datasets", 400): lambda: post("/api/v1/datasets", reg, H),
        ("post", "/api/v1/datasets", 401): lambda: post("/api/v1/datasets", reg),
        ("post", "/api/v1/datasets", 413): lambda: post("/api/v1/datasets", headers=H, raw=big_body),
        ("post", "/api/v1/datasets", 415): lambda: no_ct("/api/v1/datasets", H),
        ("post", "/api/v1/datasets", 504): lambda: post(
            "/api/v1/datasets", {"name": "big2", "source": {
                "kind": "parquet", "location": str(data / "big.parquet")}}, H,
            server=servers["slow"]),
        ("post", "/api/v1/datasets/persist", 200): lambda: post("/api/v1/datasets/persist", per, H),
        ("post", "/api/v1/datasets/persist", 400): lambda: post("/api/v1/datasets/persist", per, H),
        ("post", "/api/v1/datasets/persist", 401): lambda: post("/api/v1/datasets/persist", per),
        ("post", "/api/v1/datasets/persist", 413):
            lambda: post("/api/v1/datasets/persist", headers=H, raw=big_body),
        ("post", "/api/v1/datasets/persist", 415): lambda: no_ct("/api/v1/datasets/persist", H),
        ("post", "/api/v1/datasets/reload-all", 202):
            lambda: post("/api/v1/datasets/reload-all", headers=H),
        ("post", "/api/v1/datasets/reload-all", 401): lambda: post("/api/v1/datasets/reload-all"),
        ("post", "/api/v1/config/reload", 200): lambda: post("/api/v1/config/reload", headers=H),
        ("post", "/api/v1/config/reload", 400): config_broken,
        ("post", "/api/v1/config/reload", 401): lambda: post("/api/v1/config/reload"),
        ("post", "/api/v1/datasets/{name}/reload", 200):
            lambda: post("/api/v1/datasets/t/reload", headers=H),
        ("post", "/api/v1/datasets/{name}/reload", 401): lambda: post("/api/v1/datasets/t/reload"),
        ("post", "/api/v1/datasets/{name}/reload", 404):
            lambda: post("/api/v1/datasets/nope/reload", headers=H),
        ("post", "/api/v1/datasets/{name}/reload", 400): reload_empty,
        ("post", "/api/v1/datasets/{name}/reload", 409): reload_busy,
        ("post", "/api/v1/datasets/{name}/reload", 422): reload_failing,
        ("post", "/api/v1/datasets/{name}/reload", 504):
            lambda: post("/api/v1/datasets/big/reload", headers=H, server=servers["slow"]),
        ("get", "/api/v1/datasets/{name}/status", 200): lambda: get("/api/v1/datasets/t/status"),
        ("get", "/api/v1/datasets/{name}/status", 404): lambda: get("/api/v1/datasets/no/status"),
        ("get", "/api/v1/datasets/{name}/schema", 200): lambda: get("/api/v1/datasets/t/schema"),
        ("get", "/api/v1/datasets/{name}/schema", 404): lambda: get("/api/v1/datasets/no/schema"),
        ("get", "/api/v1/datasets/{name}/schema", 503):
            lambda: get("/api/v1/datasets/broken/schema"),
        ("post", "/api/v1/sql", 200): lambda: post("/api/v1/sql", {"sql": "SELECT cat, count(*) AS n FROM t GROUP BY cat"}),
        ("post", "/api/v1/sql", 400): lambda: post("/api/v1/sql", {"sql": "DROP TABLE t"}),
        ("post", "/api/v1/sql", 413): lambda: post("/api/v1/sql", raw=big_body),
        ("post", "/api/v1/sql", 415): lambda: no_ct("/api/v1/sql"),
        ("post", "/api/v1/sql", 503): lambda: post("/api/v1/sql", {"sql": "SELECT * FROM broken"}),
        ("post", "/api/v1/sql", 504): lambda: post(
            "/api/v1/sql", {"sql": "SELECT s, count(*) FROM big GROUP BY s ORDER BY s DESC"},
            server=servers["slow"]),
        ("post", "/api/v1/queries", 200):
            lambda: post("/api/v1/queries", {"name": "oq1", "sql": "SELECT cat, count(*) AS n "
                                                              "FROM t GROUP BY cat"}, H),
        ("post", "/api/v1/queries", 202):
            lambda: post("/api/v1/queries?async=true", {"name": "oq2", "sql": "SELECT 1 AS x"}, H),
        ("post", "/api/v1/queries", 400):
            lambda: post("/api/v1/queries", {"name": "oq3", "sql": "DROP TABLE t"}, H),
        ("post", "/api/v1/queries", 401): lambda: post("/api/v1/queries", {"name": "x", "sql": "SELECT 1"}),
        ("post", "/api/v1/queries", 409):
            lambda: post("/api/v1/queries", {"name": "t", "sql": "SELECT 1"}, H),
        ("post", "/api/v1/queries", 413): lambda: post("/api/v1/queries", headers=H, raw=big_body),
        ("post", "/api/v1/queries", 415): lambda: no_ct("/api/v1/queries", H),
        ("post", "/api/v1/queries", 503):
            lambda: post("/api/v1/queries", {"name": "oq4", "sql": "SELECT * FROM broken"}, H),
        ("post", "/api/v1/queries", 504): lambda: post(
            "/api/v1/queries", {"name": "oq5", "sql": "SELECT s, count(*) AS n FROM big GROUP BY s"},
            H, server=servers["slow"]),
        ("get", "/api/v1/queries", 200): lambda: get("/api/v1/queries", H),
        ("get", "/api/v1/queries", 401): lambda: get("/api/v1/queries"),
        ("delete", "/api/v1/queries/{name}", 200): lambda: (
            post("/api/v1/queries", {"name": "odel", "sql": "SELECT 1 AS x"}, H),
            requests.delete(url("/api/v1/queries/odel"), headers=H, timeout=30))[1],
        ("delete", "/api/v1/queries/{name}", 401):
            lambda: requests.delete(url("/api/v1/queries/odel"), timeout=30),
        ("delete", "/api/v1/queries/{name}", 403):
            lambda: requests.delete(url("/api/v1/queries/t"), headers=H, timeout=30),
        ("delete", "/api/v1/queries/{name}", 404):
            lambda: requests.delete(url("/api/v1/queries/nope"), headers=H, timeout=30),
        ("delete", "/api/v1/queries/{name}", 409): lambda: (
            post("/api/v1/queries", {"name": "oup", "sql": "SELECT 1 AS x"}, H),
            post("/api/v1/queries", {"name": "odown", "sql": "SELECT x FROM oup"}, H),
            requests.delete(url("/api/v1/queries/oup"), headers=H, timeout=30))[2],
        ("post", "/mcp", 200): lambda: post("/mcp", rpc),
        ("post", "/mcp", 202): lambda: post("/mcp", note),
        ("post", "/mcp", 400): lambda: post("/mcp", raw=b"{not json"),
        ("post", "/mcp", 413): lambda: post("/mcp", raw=big_body),
        ("get", "/metrics", 200): lambda: get("/metrics"),
        ("get", "/docs/openapi.json", 200): lambda: get("/docs/openapi.json"),
        ("get", "/explore/config.json", 200): lambda: get("/explore/config.json"),
    }
    for op, body in (("query", {"page_size": 3}), ("query/stream", {"limit": 3}),
                     ("count", {})):
        p = f"/api/v1/datasets/{{name}}/{op}"
        bad = q400 if op != "count" else {"predicates": [{"col": "zz", "op": "eq", "val": 1}]}
        samples.update({
            ("post", p, 200): (lambda o=op, b=body: post(f"/api/v1/datasets/t/{o}", b)),
            ("post", p, 400): (lambda o=op, b=bad: post(f"/api/v1/datasets/t/{o}", b)),
            ("post", p, 404): (lambda o=op: post(f"/api/v1/datasets/nope/{o}", {})),
            ("post", p, 413): (lambda o=op: post(f"/api/v1/datasets/t/{o}", raw=big_body)),
            ("post", p, 415): (lambda o=op: no_ct(f"/api/v1/datasets/t/{o}")),
            ("post", p, 503): (lambda o=op: post(f"/api/v1/datasets/broken/{o}", {})),
            ("post", p, 504): (lambda o=op: post(
                f"/api/v1/datasets/big/{o}",
                slow_q if o != "count" else {"predicates": [{"col": "s", "op": "like", "val": "%a%b%c%"}]},
                server=servers["slow"])),
        })
    qget = "/api/v1/datasets/{name}/query"
    qs = "?q=" + requests.utils.quote(json.dumps({"columns": ["id", "cat"], "page_size": 3,
                                                  "include_total": True}))
    samples.update({
        ("get", qget, 200): lambda: get("/api/v1/datasets/t/query" + qs),
        ("get", qget, 304): lambda: get("/api/v1/datasets/t/query" + qs, {
            "If-None-Match": get("/api/v1/datasets/t/query" + qs).headers["ETag"]}),
        ("get", qget, 400): lambda: get("/api/v1/datasets/t/query?q=%7Bnot-json"),
        ("get", qget, 404): lambda: get("/api/v1/datasets/nope/query"),
        ("get", qget, 503): lambda: get("/api/v1/datasets/broken/query"),
        ("get", qget, 504): lambda: get("/api/v1/datasets/big/query?q=" + requests.utils.quote(
            json.dumps(slow_q)), server=servers["slow"]),
        ("get", "/api/v1/datasets/{name}/summary", 200):
            lambda: get("/api/v1/datasets/t/summary?columns=id,cat"),
        ("get", "/api/v1/datasets/{name}/summary", 304): lambda: get(
            "/api/v1/datasets/t/summary", {"If-None-Match": etag("/api/v1/datasets/t/summary")}),
        ("get", "/api/v1/datasets/{name}/summary", 400):
            lambda: get("/api/v1/datasets/t/summary?columns=nope"),
        ("get", "/api/v1/datasets/{name}/summary", 404): lambda: get("/api/v1/datasets/no/summary"),
        ("get", "/api/v1/datasets/{name}/summary", 503):
            lambda: get("/api/v1/datasets/broken/summary"),
        ("get", "/api/v1/datasets/{name}/summary", 504):
            lambda: get("/api/v1/datasets/big/summary", server=servers["slow"]),
    })
    facets = "/api/v1/datasets/{name}/facets"
    samples.update({
        ("post", facets, 200): lambda: post("/api/v1/datasets/t/facets", {"columns": ["cat"]}),
        ("post", facets, 400): lambda: post("/api/v1/datasets/t/facets", {"columns": ["zz"]}),
        ("post", facets, 404): lambda: post("/api/v1/datasets/nope/facets", {"columns": ["cat"]}),
        ("post", facets, 413): lambda: post("/api/v1/datasets/t/facets", raw=big_body),
        ("post", facets, 415): lambda: no_ct("/api/v1/datasets/t/facets"),
        ("post", facets, 503): lambda: post("/api/v1/datasets/broken/facets", {"columns": ["x"]}),
        ("post", facets, 504): lambda: post("/api/v1/datasets/big/facets", {"columns": ["s", "g"]},
                                            server=servers["slow"]),
    })
    for name in ("parquet", "all.parquet"):
        p = f"/api/v1/datasets/{{name}}/{name}"
        real = f"/api/v1/datasets/t/{name}"
        for m in ("get", "head"):
            M = m.upper()
            samples.update({
                (m, p, 200): (lambda r=real, M=M: get(r, method=M)),
                (m, p, 206): (lambda r=real, M=M: get(r, {"Range": "bytes=0-3"}, method=M)),
                (m, p, 304): (lambda r=real, M=M: get(r, {"If-None-Match": etag(r)}, method=M)),
                (m, p, 404): (lambda n=name, M=M: get(f"/api/v1/datasets/nope/{n}", method=M)),
                (m, p, 412): (lambda r=real, M=M: get(r, {"If-Match": '"nope"'}, method=M)),
                (m, p, 416): (lambda r=real, M=M: get(r, {"Range": "bytes=999999999-"}, method=M)),
                (m, p, 503): (lambda n=name, M=M: get(f"/api/v1/datasets/broken/{n}", method=M)),
            })
    for base, page, sub in (("/docs", "index.html", None), ("/explore", "index.html", "deep/link"),
                            ("/mkdocs", "index.html", "configuration")):
        samples.update({
            ("get", base, 301): (lambda b=base: get(b)),
            ("get", base + "/{path}", 200): (lambda b=base, p=page: get(f"{b}/{p}")),
            ("get", base + "/{path}", 304): (lambda b=base, p=page: get(
                f"{b}/{p}", {"If-None-Match": get(f"{b}/{p}").headers["ETag"]})),
            ("get", base + "/{path}", 404): (lambda b=base: get(f"{b}/no-such-file.js")),
            ("get", base + "/{path}", 412): (lambda b=base, p=page: get(f"{b}/{p}",
                                                                       {"If-Match": '"x"'})),
        })
    samples[("get", "/mkdocs/{path}", 301)] = lambda: get("/mkdocs/configuration")
    samples[("get", "/explore/{path}", 302)] = lambda: get("/explore/deep/link")

    samples[("post", "/mcp", 403)] = lambda: post("/mcp", rpc, {"Origin": "http://evil.example"})
    modern = "2026-07-28"
    samples[("post", "/mcp", 404)] = lambda: post("/mcp", {
        "jsonrpc": "2.0", "id": 7, "method": "nope/nope", "params": {"_meta": {
            "io.modelcontextprotocol/protocolVersion": modern,
            "io.modelcontextprotocol/clientCapabilities": {}}}},
        {"MCP-Protocol-Version": modern, "Mcp-Method": "nope/nope",
         "Accept": "application/json, text/event-stream"})

    def rebound(method, path):
        # 421 is documented on every route: a Host the server is not known by
        target = url(path).replace("{name}", "t").replace("{path}", "index.html")
        return requests.request(method.upper(), target, headers={"Host": "rebound.example"},
                                data=b"{}" if method in ("post", "delete") else None,
                                timeout=30, allow_redirects=False)

    # ?generation=: not an id (400), newer than the current one (409), older
    # and no longer kept (410)
    PINS = {400: "bad", 409: "7ZZZZZZZZZZZZZZZZZZZZZZZZZ", 410: "00000000000000000000000000"}

    def pin(method, path, gen):
        target = url(path).replace("{name}", "t") + "?generation=" + gen
        return requests.request(method.upper(), target, data=b"{}" if method == "post" else None,
                                headers=J if method == "post" else {}, timeout=30)

    # 414 and 431 are documented on every route (answered before routing): a
    # request target over 8 KiB, header fields over 32 KiB together
    def oversized(method, path, status):
        target = url(path).replace("{name}", "t").replace("{path}", "index.html")
        headers = {}
        if status == 414:
            target += "?pad=" + "a" * 9000
        else:
            headers = {f"X-Pad-{i}": "b" * 4000 for i in range(9)}
        return requests.request(method.upper(), target, headers=headers,
                                data=b"{}" if method in ("post", "delete") else None,
                                timeout=30, allow_redirects=False)

    # 503 is documented on every route (src/http/conn.c refuses a client
    # address past VT_MAX_CONNECTIONS_PER_CLIENT before any routing): 256
    # idle connections from 127.0.0.9, then the request from there too.
    # Blocking connects: all are queued before the request, so it is past
    # the cap whatever the server has seen of earlier ones closing.
    capped_from = "127.0.0.9"

    class FromAddress(requests.adapters.HTTPAdapter):
        def init_poolmanager(self, *a, **kw):
            kw["source_address"] = (capped_from, 0)
            super().init_poolmanager(*a, **kw)

    def capped(method, path):
        target = url(path).replace("{name}", "t").replace("{path}", "index.html")
        idle = []
        try:
            for _ in range(256):
                c = socket.socket()
                c.bind((capped_from, 0))
                c.connect((urlsplit(target).hostname, urlsplit(target).port))
                idle.append(c)
            with requests.Session() as sess:
                sess.mount("http://", FromAddress())
                return sess.request(method.upper(), target,
                                    data=b"{}" if method in ("post", "delete") else None,
                                    timeout=30, allow_redirects=False)
        finally:
            for c in idle:
                c.close()

    def resolved(spec):
        # a response may be shared: {"$ref": "#/components/responses/..."}
        while "$ref" in spec:
            at = doc
            for part in spec["$ref"][2:].split("/"):
                at = at[part]
            spec = at
        return spec

    checked, missing = 0, []
    for path, item in doc["paths"].items():
        for method, op in item.items():
            if method == "servers":
                continue
            for status in sorted(op["responses"], key=int):
                key = (method, path, int(status))
                if int(status) == 421:
                    samples.setdefault(key, lambda m=method, p=path: rebound(m, p))
                if int(status) == 503:
                    samples.setdefault(key, lambda m=method, p=path: capped(m, p))
                if int(status) in (414, 431):
                    samples.setdefault(key, lambda m=method, p=path, c=int(status):
                                       oversized(m, p, c))
                pinned = any(x["name"] == "generation" for x in op.get("parameters", []))
                if pinned and int(status) in PINS:
                    samples.setdefault(key, lambda m=method, p=path, g=PINS[int(status)]:
                                       pin(m, p, g))
                if key not in samples:
                    missing.append(key)
                    continue
                r = samples[key]()
                assert r.status_code == int(status), (key, r.status_code, r.text[:300])
                assert r.headers.get("X-Request-Id"), key
                spec = resolved(op["responses"][status])
                content = spec.get("content")
                if method == "head" or not content:
                    checked += 1
                    continue
                ct = r.headers.get("Content-Type", "")
                match = [m for m in content if m == "*/*" or ct.startswith(m.split(";")[0])]
                assert match, (key, ct, list(content))
                if ct.startswith("application/json"):
                    validate(doc, content[match[0]]["schema"], r.json())
                elif ct.startswith("application/vnd.apache.parquet") and status == "200":
                    assert r.content[:4] == b"PAR1"
                checked += 1
    assert not missing, f"documented statuses without a sample request: {missing}"
    # Every error response shows examples of the codes it can carry, each of
    # that status (Swagger UI showed invalid_query under every status).
    statuses = error_statuses()
    shown = 0
    for path, item in doc["paths"].items():
        for method, op in item.items():
            if method == "servers":
                continue
            for status, spec in op["responses"].items():
                spec = resolved(spec)
                if int(status) < 400 or "content" not in spec:
                    continue
                examples = spec["content"].get("application/json", {}).get("examples")
                if "$ref" in spec["content"].get("application/json", {}).get("schema", {}) and \
                        spec["content"]["application/json"]["schema"]["$ref"].endswith("/Error"):
                    assert examples, (method, path, status)
                for ex in (examples or {}).values():
                    assert statuses[ex["value"]["code"]] == int(status), (method, path, status, ex)
                    validate(doc, spec["content"]["application/json"]["schema"], ex["value"])
                    shown += 1
    assert shown > 100
    assert checked >= 100
    # Arrow pages are documented on /query and /sql: one of each
    r = requests.post(url("/api/v1/datasets/{name}/query").replace("{name}", "t") + "?format=arrow",
                      data=b"{}", headers=J, timeout=30)
    assert r.status_code == 200
    assert r.headers["Content-Type"] in doc["paths"]["/api/v1/datasets/{name}/query"]["post"][
        "responses"]["200"]["content"]

    # Without ADMIN_TOKEN every admin operation is documented and answered 403
    n = servers["noadmin"]
    ndoc = fetch_doc(n)
    admin_ops = 0
    for path, item in ndoc["paths"].items():
        for method, op in item.items():
            if method == "servers" or op.get("x-vitrine-permission") != "reload":
                continue
            assert "403" in op["responses"] and "401" not in op["responses"]
            r = requests.request(method.upper(),
                                 n.base + path.replace("{name}", "t"), data=b"{}",
                                 headers=J, timeout=30)
            assert r.status_code == 403 and r.json()["code"] == "admin_disabled"
            admin_ops += 1
    assert admin_ops == 5


def test_swagger_disabled_is_404(vt):
    s = vt(server_block() + "[swagger]\nenabled = false\n")
    for path in ("/docs", "/docs/", "/docs/openapi.json", "/docs/index.html"):
        r = s.get(path)
        assert r.status_code == 404 and r.json()["code"] == "not_found", path


def test_swagger_page_and_assets(vt):
    s = vt(server_block(prefix="/p") + '[swagger]\npath = "/api-docs"\n')
    r = s.get("/api-docs", allow_redirects=False)
    assert r.status_code == 301 and r.headers["Location"] == "/p/api-docs/"
    page = s.get("/api-docs/")
    assert page.status_code == 200 and page.headers["Content-Type"].startswith("text/html")
    csp = page.headers["Content-Security-Policy"]
    assert "default-src 'self'" in csp and "script-src 'self'" in csp
    assert page.headers["Cache-Control"] == "no-cache"
    import re
    bundle = re.search(r'src="\./([0-9.]+/swagger-ui-bundle\.js)"', page.text).group(1)
    js = s.get("/api-docs/" + bundle, headers={"Accept-Encoding": "br"})
    assert js.status_code == 200 and js.headers["Content-Encoding"] == "br"
    assert "immutable" in js.headers["Cache-Control"] and "max-age=31536000" in js.headers["Cache-Control"]
    assert s.get("/api-docs/" + bundle, headers={"If-None-Match": js.headers["ETag"],
                                                 "Accept-Encoding": "br"}).status_code == 304
    gz = s.get("/api-docs/" + bundle, headers={"Accept-Encoding": "gzip"})
    plain = s.get("/api-docs/" + bundle, headers={"Accept-Encoding": "identity"})
    assert "Content-Encoding" not in plain.headers and len(plain.content) > 500000
    assert gz.headers["Content-Encoding"] == "gzip" and gz.content == plain.content
    assert len(js.content) < len(plain.content) / 3
    doc = s.get("/api-docs/openapi.json").json()
    assert doc["servers"][0]["url"] == "/p"
    assert "/api-docs/openapi.json" in doc["paths"]
