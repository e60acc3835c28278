"""Hostile requests against the query path (issue 10): each of these held a
worker for minutes, answered wrongly, or was silently misread before.

- LIKE/ILIKE patterns that made DuckDB's matcher backtrack (minutes per
  query) are answered in linear time, or refused as too complex (400), and
  the server still answers /count within a second afterwards, even with
  several of them at once;
- a request's deadline interrupts it close to request_timeout_ms;
- a key given twice in a JSON object is a 400 (it was "last one wins", so
  {"limit":1,"limit":null} was unlimited);
- the JSON depth limit counts containers, 16 allowed and 17 refused;
- a compressed request body (Content-Encoding) is a 415;
- sum over an integer column is a 64-bit integer in JSON and in Arrow, and
  its overflow is a clear 400, not a wrong number.
"""
import concurrent.futures
import pytest
import json
import socket
import time

from conftest import dataset_block, server_block, write_parquet
from test_arrow_http import decode

COUNT = "/api/v1/datasets/{}/count"
QUERY = "/api/v1/datasets/{}/query"


def start(vt, datadir, **server):
    write_parquet(datadir / "big.parquet",
                  "SELECT i AS id, repeat('a', 1000000) AS s FROM range(4) t(i)")
    write_parquet(datadir / "mid.parquet",
                  "SELECT i AS id, repeat('ab', 100) || i AS s, i % 7 AS k, "
                  "9223372036854700000 + i AS huge FROM range(50000) t(i)")
    cfg = server_block(**server)
    cfg += dataset_block("big", datadir / "big.parquet", **{"index.mode": "none"})
    cfg += dataset_block("mid", datadir / "mid.parquet", **{"index.mode": "none"})
    return vt(cfg)


def pred(op, val, col="s"):
    return {"predicates": [{"col": col, "op": op, "val": val}]}


WEDGES = [
    ("big", pred("ilike", "%a%a%b")),
    ("big", pred("like", "%a%a%b")),
    ("mid", pred("ilike", "%x%x%x%y")),
    ("big", pred("like", "%_%_%_y")),
    ("mid", pred("like", "%" + "_%" * 15 + "y")),
]


@pytest.mark.serial
def test_backtracking_patterns_answer_at_once(vt, datadir):
    s = start(vt, datadir, request_timeout_ms=30000)
    for ds, body in WEDGES:
        t = time.monotonic()
        r = s.post(COUNT.format(ds), body)
        took = time.monotonic() - t
        assert r.status_code == 200, (body, r.text)
        assert r.json() == {"count": 0}, (body, r.text)
        assert took < 2.0, f"{body} took {took:.1f}s"
    # Several at once on every worker, then the server is still responsive.
    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        futs = [ex.submit(s.post, COUNT.format(ds), body) for ds, body in WEDGES * 3]
        for f in futs:
            assert f.result().status_code == 200
    t = time.monotonic()
    assert s.post(COUNT.format("mid"), {}).json() == {"count": 50000}
    assert time.monotonic() - t < 1.0


def test_too_complex_patterns_are_400(vt, datadir):
    s = start(vt, datadir)
    for pattern in ["%" + "_%" * 300 + "y", "%a" * 17, "%" + "_" * 65 + "%"]:
        r = s.post(COUNT.format("mid"), pred("like", pattern))
        assert r.status_code == 400, r.text
        assert r.json()["code"] == "pattern_too_complex", r.text
        r = s.post(QUERY.format("mid"), pred("ilike", pattern))
        assert r.json()["code"] == "pattern_too_complex", r.text
    # The limits themselves pass.
    assert s.post(COUNT.format("mid"), pred("like", "%a" * 16)).status_code == 200
    assert s.post(COUNT.format("mid"), pred("like", "%" + "_" * 64 + "%")).status_code == 200


def test_like_matches_like_duckdb(vt, datadir):
    s = start(vt, datadir)
    cases = [("ab%", 50000), ("%99", 500), ("%ab_b%", 50000), ("AB%", 0),
             ("%9_9%", None), ("abab%ab1", None)]
    for pattern, want in cases:
        n = s.post(COUNT.format("mid"), pred("like", pattern)).json()["count"]
        from conftest import sql
        ref = int(sql(f"SELECT count(*) FROM '{datadir / 'mid.parquet'}' "
                      f"WHERE s LIKE '{pattern}'")[0][0])
        assert n == ref, (pattern, n, ref)
        if want is not None:
            assert n == want, (pattern, n)
    assert s.post(COUNT.format("mid"), pred("ilike", "AB%")).json()["count"] == 50000


def test_deadline_interrupts_quickly(vt, datadir):
    s = start(vt, datadir, request_timeout_ms=300)
    # A sort of 50,000 rows of 200-byte strings, 50 times over, in one
    # request (distinct on a projection with an ilike that matches all).
    body = {"columns": ["s", "id"], "distinct": True, "order_by": [{"col": "s", "dir": "desc"}],
            "predicates": [{"col": "s", "op": "ilike", "val": "%a%b%"}], "page_size": 100000}
    worst = 0
    for _ in range(5):
        t = time.monotonic()
        r = s.post(QUERY.format("big"), {"columns": ["s"], "distinct": True,
                                         "order_by": [{"col": "s"}]})
        took = time.monotonic() - t
        assert r.status_code in (200, 504), r.text
        if r.status_code == 504:
            assert r.json() == {"error": "request timed out", "code": "timeout"}
            worst = max(worst, took)
        r = s.post(QUERY.format("mid"), body)
        assert r.status_code in (200, 504)
    # 300 ms plus scheduling on a busy two-core machine; it was 6.9 s.
    assert worst < 1.5, worst


def raw_post(s, path, body, headers=()):
    data = body.encode() if isinstance(body, str) else body
    lines = [f"POST {s.prefix}{path} HTTP/1.1", "Host: localhost", "Content-Type: application/json",
             f"Content-Length: {len(data)}", "Connection: close", *headers, "", ""]
    with socket.create_connection(("127.0.0.1", s.port), timeout=10) as c:
        c.sendall("\r\n".join(lines).encode() + data)
        out = b""
        while True:
            chunk = c.recv(65536)
            if not chunk:
                break
            out += chunk
    head, _, payload = out.partition(b"\r\n\r\n")
    return int(head.split()[1]), payload


def test_duplicate_keys_are_refused(vt, datadir):
    s = start(vt, datadir)
    status, body = raw_post(s, QUERY.format("mid"), '{"limit":1,"limit":null}')
    assert status == 400, body
    assert json.loads(body)["code"] == "duplicate_key"
    status, body = raw_post(
        s, QUERY.format("mid"),
        '{"predicates":[{"col":"k","op":"eq","val":1,"val":2}]}')
    assert status == 400 and json.loads(body)["code"] == "duplicate_key", body
    # The same keys in different objects are fine.
    status, body = raw_post(s, QUERY.format("mid"),
                            '{"limit":1,"predicates":[{"col":"k","op":"eq","val":1}]}')
    assert status == 200, body
    assert len(json.loads(body)["data"]) == 1


def test_depth_counts_containers(vt, datadir):
    s = start(vt, datadir)

    def nested(levels):  # an object with `levels` containers in all
        inner = "1"
        for _ in range(levels - 1):
            inner = f"[{inner}]"
        return '{"x":' + inner + "}"

    status, body = raw_post(s, QUERY.format("mid"), nested(16))
    assert status == 400 and json.loads(body)["code"] == "unknown_field", body
    status, body = raw_post(s, QUERY.format("mid"), nested(17))
    assert status == 400 and json.loads(body)["code"] == "limit_exceeded", body


def test_compressed_bodies_are_415(vt, datadir):
    s = start(vt, datadir)
    status, body = raw_post(s, QUERY.format("mid"), "{}", headers=["Content-Encoding: gzip"])
    assert status == 415, body
    assert json.loads(body)["code"] == "unsupported_content_encoding"
    status, body = raw_post(s, QUERY.format("mid"), "{}", headers=["Content-Encoding: identity"])
    assert status == 200, body


def test_integer_sums_are_int64(vt, datadir, tmp_path):
    s = start(vt, datadir)
    body = {"group_by": ["k"], "aggregations": [{"op": "sum", "col": "id"}],
            "order_by": [{"col": "k"}]}
    rows = s.post(QUERY.format("mid"), body).json()["data"]
    assert rows[0] == {"k": 0, "sum_id": sum(range(0, 50000, 7))}
    assert isinstance(rows[0]["sum_id"], int)
    r = s.post(QUERY.format("mid") + "?format=arrow", body)
    assert r.status_code == 200
    doc = decode(tmp_path, r.content)
    field = [f for f in doc["schema"] if f["name"] == "sum_id"][0]
    assert field["type"] == "Int64", field
    # Past int64: a clear error, never a wrapped value.
    r = s.post(QUERY.format("mid"), {"group_by": ["k"], "aggregations": [{"op": "sum", "col": "huge"}]})
    assert r.status_code == 400, r.text
    assert "overflows a 64-bit integer" in r.json()["error"]
