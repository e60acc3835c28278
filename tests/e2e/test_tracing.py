"""Tracing one request: request ids (the client's X-Request-Id when it is a
sane token, else ours), echoed in the response, the access line and every
log line written for the request (error replies, the builds a reload
starts); Server-Timing on the data endpoints; VITRINE_LOG_FORMAT=json (one
JSON object per line); secrets never reach the log."""
import json
import re
import time

import requests

from conftest import dataset_block, server_block, write_parquet

OUR_ID = re.compile(r"^[0-9a-f]{12}-[0-9a-f]+$")


def start_server(vt, datadir, env=None, extra=""):
    write_parquet(datadir / "t.parquet",
                  "SELECT range AS id, 'c' || (range % 7) AS cat, range * 1.5 AS x "
                  "FROM range(20000)")
    e = {"ADMIN_TOKEN": "adm1n-Secret-Value"}
    e.update(env or {})
    return vt(server_block() + "[sql]\nenabled = true\n" + extra
              + dataset_block("t", datadir / "t.parquet"), env=e)


def wait_log(s, pattern, timeout=10):
    deadline = time.time() + timeout
    while time.time() < deadline:
        m = re.search(pattern, s.log(), re.M)
        if m:
            return m
        time.sleep(0.05)
    raise AssertionError(f"{pattern!r} not in log:\n{s.log()[-4000:]}")


def test_first_request_after_start_has_an_id(vt):
    """Issue 21 item 6: the process tag our ids are made of was set up after
    the first id was made, so the first request of a process had an empty
    id (no X-Request-Id, "id=" in its access line)."""
    s = vt(server_block(), wait="listening")
    r = s.get("/healthz")
    rid = r.headers.get("X-Request-Id", "")
    assert OUR_ID.match(rid), repr(rid)
    m = wait_log(s, r"GET /healthz 200 .* id=(\S*)")
    assert m.group(1) == rid
    assert OUR_ID.match(s.get("/healthz").headers["X-Request-Id"])


def test_client_id_echoed_when_sane_else_ours(vt, datadir):
    s = start_server(vt, datadir)
    for good in ["abc-123", "0f8e2a4c-9b1d-4e5f-8a7b-1c2d3e4f5a6b", "trace:span/1+2=3@x_y.z",
                 "a" * 64]:
        r = s.get("/healthz", headers={"X-Request-Id": good})
        assert r.headers["X-Request-Id"] == good
    seen = set()
    for bad in ["", "has space", 'quo"te', "a" * 65, "semi;colon", "tab\there",
                "caf\u00e9".encode().decode("latin-1"), "{json}", "<script>"]:
        r = s.get("/healthz", headers={"X-Request-Id": bad})
        rid = r.headers["X-Request-Id"]
        assert OUR_ID.match(rid), (bad, rid)
        seen.add(rid)
    r = s.get("/healthz")
    assert OUR_ID.match(r.headers["X-Request-Id"])
    seen.add(r.headers["X-Request-Id"])
    assert len(seen) == 10  # every one new
    # on every kind of reply, errors included
    assert s.get("/nope", headers={"X-Request-Id": "e404"}).headers["X-Request-Id"] == "e404"
    r = s.post("/api/v1/datasets/t/query", {"columns": ["zz"]}, headers={"X-Request-Id": "e400"})
    assert r.status_code == 400 and r.headers["X-Request-Id"] == "e400"
    r = requests.delete(s.url("/healthz"), headers={"X-Request-Id": "e405"}, timeout=10)
    assert r.status_code == 405 and r.headers["X-Request-Id"] == "e405"
    r = requests.post(s.url("/api/v1/datasets/t/query"), data=b"x" * (2 << 20),
                      headers={"Content-Type": "application/json", "X-Request-Id": "e413"},
                      timeout=10)
    assert r.status_code == 413 and r.headers["X-Request-Id"] == "e413"


def test_id_in_access_line_and_request_log_lines(vt, datadir):
    s = start_server(vt, datadir)  # VITRINE_LOG=debug (conftest)
    r = s.post("/api/v1/datasets/t/query", {"columns": ["nope"]},
               headers={"X-Request-Id": "trace-bad-column"})
    assert r.status_code == 400
    # the error line and the access line both name it
    wait_log(s, r"DEBUG POST /api/v1/datasets/\{name\}/query: 400 unknown_column: .*nope.* "
                r"request_id=trace-bad-column$")
    wait_log(s, r"INFO  POST /api/v1/datasets/\{name\}/query 400 \d+B \d+ms id=trace-bad-column$")
    # a reload: the build it starts logs on another thread, under the same id
    r = s.post("/api/v1/datasets/t/reload", headers={"X-Admin-Token": "adm1n-Secret-Value",
                                                      "X-Request-Id": "reload-42"})
    assert r.status_code == 200, r.text
    wait_log(s, r"dataset t published: 20000 rows.* request_id=reload-42$")
    wait_log(s, r"POST /api/v1/datasets/\{name\}/reload 200 .* id=reload-42$")
    # our own ids work the same way
    r = s.get("/api/v1/datasets/none/status")
    rid = r.headers["X-Request-Id"]
    wait_log(s, r"404 dataset_not_found: .* request_id=" + re.escape(rid) + "$")
    wait_log(s, r"GET /api/v1/datasets/\{name\}/status 404 .* id=" + re.escape(rid) + "$")


def timing(r):
    h = r.headers.get("Server-Timing")
    assert h, dict(r.headers)
    out = {}
    for part in h.split(","):
        name, dur = part.strip().split(";")
        assert dur.startswith("dur=")
        out[name] = float(dur[4:])
    assert list(out) == ["queue", "plan", "execute", "encode"], h
    assert all(v >= 0 for v in out.values())
    return out


def test_server_timing_on_data_endpoints(vt, datadir):
    s = start_server(vt, datadir)
    assert "Server-Timing" not in s.get("/healthz").headers
    # SQL path (page of 1000 rows, sorted: DuckDB does the work)
    r = s.post("/api/v1/datasets/t/query",
               {"order_by": [{"col": "x", "dir": "desc"}], "page_size": 1000})
    assert r.status_code == 200
    t = timing(r)
    assert t["plan"] > 0 and t["execute"] > 0 and t["encode"] > 0
    # index fast path (on the HTTP thread: no queue)
    r = s.post("/api/v1/datasets/t/query", {"predicates": [{"col": "id", "op": "eq", "val": 5}]})
    assert r.status_code == 200 and r.json()["data"] == [{"id": 5, "cat": "c5", "x": 7.5}]
    timing(r)
    # count, Arrow page, stream, SQL, and an error
    timing(s.post("/api/v1/datasets/t/count", {"predicates": [{"col": "x", "op": "gt", "val": 3}]}))
    r = s.post("/api/v1/datasets/t/query?format=arrow", {"page_size": 10})
    assert r.headers["Content-Type"] == "application/vnd.apache.arrow.stream"
    timing(r)
    r = s.post("/api/v1/datasets/t/query/stream", {})
    assert r.status_code == 200 and len(r.content) > 100000
    timing(r)  # sent with the first bytes: what was known then
    r = s.post("/api/v1/sql", {"sql": "SELECT cat, count(*) AS n FROM t GROUP BY cat"})
    assert r.status_code == 200, r.text
    t = timing(r)
    assert t["queue"] >= 0 and t["plan"] > 0 and t["execute"] > 0
    # a request refused before it ran has nothing to time
    assert "Server-Timing" not in s.post("/api/v1/datasets/t/query", {"columns": ["x"],
                                                                      "page": "x"}).headers
    # the access line's duration covers the timed phases
    r = s.post("/api/v1/datasets/t/query", {"order_by": [{"col": "x"}], "page_size": 5000},
               headers={"X-Request-Id": "slow-one"})
    t = timing(r)
    m = wait_log(s, r"POST /api/v1/datasets/\{name\}/query 200 \d+B (\d+)ms id=slow-one$")
    assert sum(t.values()) <= int(m.group(1)) + 2


def test_json_log_lines(vt, datadir):
    s = start_server(vt, datadir, env={"VITRINE_LOG_FORMAT": "json"})
    s.get("/healthz", headers={"X-Request-Id": "j-1"})
    s.post("/api/v1/datasets/t/query", {"columns": ['we"ird\\col\n']},
           headers={"X-Request-Id": "j-2"})
    s.post("/api/v1/datasets/t/reload", headers={"X-Admin-Token": "adm1n-Secret-Value",
                                                  "X-Request-Id": "j-3"})
    s.get("/nope")
    wait_log(s, r'"request_id":"j-3"')
    s.stop()
    lines = [l for l in s.log().splitlines() if l.strip()]
    objs = []
    for line in lines:
        o = json.loads(line)  # every line is one JSON object
        assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$", o["time"])
        assert o["level"] in ("error", "warn", "info", "debug")
        assert isinstance(o["msg"], str)
        objs.append(o)
    access = [o for o in objs if o["msg"] == "access"]
    by_id = {o["request_id"]: o for o in access}
    assert by_id["j-1"]["route"] == "/healthz" and by_id["j-1"]["status"] == 200
    assert by_id["j-1"]["method"] == "GET" and by_id["j-1"]["bytes"] == 15
    assert isinstance(by_id["j-1"]["duration_ms"], float)
    assert by_id["j-2"]["status"] == 400
    assert by_id["j-3"]["route"] == "/api/v1/datasets/{name}/reload"
    assert any(o["route"] == "unmatched" and o["status"] == 404 for o in access)
    err = [o for o in objs if o.get("request_id") == "j-2" and o["msg"] != "access"]
    assert err and 'we\\"ird' in err[0]["msg"] or 'we"ird' in err[0]["msg"]
    built = [o for o in objs if o.get("request_id") == "j-3" and "published" in o["msg"]]
    assert built, objs


def test_secrets_never_logged(vt, datadir):
    s = start_server(vt, datadir)  # debug level: the most that is ever logged
    bearer = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJib2JieSJ9.c2lnbmF0dXJlLXNlY3JldA"
    for tok in ["adm1n-Secret-Value", "wrong-Admin-Guess"]:
        s.post("/api/v1/datasets/t/reload", headers={"X-Admin-Token": tok})
    s.get("/api/v1/datasets", headers={"Authorization": "Bearer " + bearer})
    s.get("/api/v1/datasets/t/status?token=query-Secret-Param&sig=Sig-Secret")
    s.get("/nope/path-Secret-Segment?password=pw-Secret")
    s.post("/api/v1/sql", {"sql": "SELECT 'literal-Secret-In-Sql' AS x FROM t LIMIT 1"})
    s.get("/healthz", headers={"X-Request-Id": "fine", "Cookie": "session=cookie-Secret"})
    time.sleep(0.3)
    s.stop()
    log = s.log()
    assert "id=fine" in log
    for secret in ["adm1n-Secret-Value", "wrong-Admin-Guess", bearer, "c2lnbmF0dXJl",
                   "query-Secret-Param", "Sig-Secret", "path-Secret-Segment", "pw-Secret",
                   "cookie-Secret"]:
        assert secret not in log, secret
