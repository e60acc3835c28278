"""Output formats (issue 23 item 4): CSV and NDJSON beside JSON and Arrow on
/query (paged), /query/stream (whole result, streamed, compressed per
Accept-Encoding) and /api/v1/sql, chosen by one negotiation (format= or
Accept). Differential: CSV bodies are compared byte for byte with DuckDB's
own COPY ... TO (FORMAT csv, HEADER) of the same rows, NDJSON lines with the
JSON format's rows and with DuckDB's to_json (values compared by type: our
JSON writes RFC 3339 timestamps, base64 blobs and ISO 8601 intervals)."""
import base64
import datetime
import gzip
import json
import struct
from decimal import Decimal

import pytest
import requests

from conftest import Server, dataset_block, server_block, sql, write_parquet
from test_differential import blob_from_text  # DuckDB's text form of a BLOB

J = {"Content-Type": "application/json"}

TYPES = """SELECT i AS id,
  (i * 7 - 50)::INTEGER AS i32, (i * 1000003)::BIGINT AS i64, (i % 2 = 0) AS flag,
  CASE WHEN i % 5 = 0 THEN NULL ELSE i / 7.0 END::DOUBLE AS dbl, (i / 3.0)::FLOAT AS flt,
  (i * 1.25)::DECIMAL(12,2) AS dec2, (i * 12345.678901)::DECIMAL(38,6) AS dec38,
  CASE i % 7 WHEN 0 THEN '' WHEN 1 THEN 'a,b' WHEN 2 THEN 'say "hi"'
              WHEN 3 THEN E'two\\nlines' WHEN 4 THEN '#tag' WHEN 5 THEN E'cr\\rhere'
              ELSE 'café ünï ☃ ' || i END AS txt,
  CASE WHEN i % 3 = 0 THEN NULL ELSE 'plain' || i END AS maybe,
  DATE '2024-02-28' + i::INTEGER AS d,
  TIMESTAMP '2024-01-01 00:00:00' + INTERVAL (i * 3601) SECOND AS ts,
  TIMESTAMPTZ '2024-03-10 12:00:00+00' + INTERVAL (i) MINUTE AS tstz,
  TIME '10:00:00' + INTERVAL (i) SECOND AS tm,
  [i, i + 1, NULL] AS lst, {'a': i, 'b': 'x,' || i} AS st,
  ('\\x00\\x01' || i::VARCHAR)::BLOB AS bl,
  uuid '4ac7a9fe-1d06-4b52-8c4f-9d9c6c4b6b8c' AS u, INTERVAL (i) DAY AS iv,
  ['p,q', NULL, ''] AS slst
FROM range(2500) t(i)"""
ROWS = 2500


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    d = tmp_path_factory.mktemp("formats")
    src = write_parquet(d / "types.parquet", TYPES)
    cfg = (server_block() + "[sql]\nenabled = true\nmax_rows = 100000\n" +
           dataset_block("types", src, **{"index.mode": "list", "index.columns": ["id"]}))
    (d / "srv").mkdir()
    s = Server(d / "srv", cfg)
    s.start()
    s.wait_ready()
    s.src = src
    s.tmp = d
    yield s
    assert s.stop() == 0


def duck_csv(srv, select, name):
    """DuckDB's own CSV of `select` (dataset `types` as a view over the file)."""
    out = srv.tmp / f"{name}.csv"
    sql("SET TimeZone = 'UTC'", f"CREATE VIEW types AS SELECT * FROM '{srv.src}'",
        f"COPY ({select}) TO '{out}' (FORMAT csv, HEADER)")
    return out.read_bytes()


def duck_json(srv, select):
    rows = sql("SET TimeZone = 'UTC'", f"CREATE VIEW types AS SELECT * FROM '{srv.src}'",
               f"SELECT to_json(t) FROM ({select}) t")
    return [json.loads(r[0], parse_float=Decimal) for r in rows]


def ndjson(body):
    text = body.decode("utf-8")
    assert text == "" or text.endswith("\n")
    return [json.loads(line, parse_float=Decimal) for line in text.split("\n")[:-1]]


def post(srv, path, body, fmt=None, headers=None, **kw):
    url = srv.url(path) + (f"?format={fmt}" if fmt else "")
    return requests.post(url, data=json.dumps(body), headers=dict(J, **(headers or {})),
                         timeout=60, **kw)


# ------------------------------------------------------------------- CSV

def test_csv_query_pages_are_duckdbs_csv(srv):
    for page in (1, 2, 3):
        r = post(srv, "/api/v1/datasets/types/query",
                 {"order_by": [{"col": "id"}], "page": page, "page_size": 1000}, "csv")
        assert r.status_code == 200, r.text
        assert r.headers["Content-Type"].startswith("text/csv")
        assert r.headers["X-Page"] == str(page) and r.headers["X-Page-Size"] == "1000"
        want = duck_csv(srv, f"SELECT * FROM types ORDER BY id LIMIT 1000 OFFSET {(page - 1) * 1000}",
                        f"page{page}")
        assert r.content == want
    # columns, predicates, descending order; an empty page is the header alone
    body = {"columns": ["txt", "maybe", "id"], "order_by": [{"col": "id", "dir": "desc"}],
            "predicates": [{"col": "id", "op": "lt", "val": 30}], "page_size": 25}
    r = post(srv, "/api/v1/datasets/types/query", body, "csv")
    assert r.content == duck_csv(srv, "SELECT txt, maybe, id FROM types WHERE id < 30 "
                                      "ORDER BY id DESC LIMIT 25", "cols")
    r = post(srv, "/api/v1/datasets/types/query",
             {"predicates": [{"col": "id", "op": "lt", "val": 0}]}, "csv")
    assert r.content == duck_csv(srv, "SELECT * FROM types WHERE id < 0", "empty")
    assert r.content.count(b"\n") == 1
    # a group-by, and an index lookup (the fast path does not write CSV: DuckDB answers)
    r = post(srv, "/api/v1/datasets/types/query",
             {"group_by": ["flag"], "aggregations": [{"op": "count"}, {"op": "avg", "col": "dbl"}],
              "order_by": [{"col": "flag"}]}, "csv")
    assert r.content == duck_csv(srv, "SELECT flag, count(*) AS count, avg(dbl) AS avg_dbl "
                                      "FROM types GROUP BY flag ORDER BY flag", "grp")
    r = post(srv, "/api/v1/datasets/types/query",
             {"predicates": [{"col": "id", "op": "in", "val": [3, 4, 5]}]}, "csv")
    assert r.content == duck_csv(srv, "SELECT * FROM types WHERE id IN (3, 4, 5) ORDER BY id",
                                 "lookup")


def test_csv_stream_is_duckdbs_csv_compressed(srv):
    want = duck_csv(srv, "SELECT * FROM types ORDER BY id", "all")
    assert len(want) > 256 * 1024  # past the buffer: a streamed (chunked) reply
    # chosen by Accept, compressed per Accept-Encoding
    r = post(srv, "/api/v1/datasets/types/query/stream", {"order_by": [{"col": "id"}]},
             headers={"Accept": "text/csv", "Accept-Encoding": "gzip"}, stream=True)
    assert r.status_code == 200
    assert r.headers["Content-Type"].startswith("text/csv")
    assert r.headers["Content-Encoding"] == "gzip"
    assert r.headers.get("Transfer-Encoding") == "chunked"
    raw = r.raw.read(decode_content=False)
    assert gzip.decompress(raw) == want
    # and without compression
    r = post(srv, "/api/v1/datasets/types/query/stream", {"order_by": [{"col": "id"}]}, "csv",
             headers={"Accept-Encoding": "identity"})
    assert "Content-Encoding" not in r.headers and r.content == want


def test_csv_sql_is_duckdbs_csv(srv):
    stmts = [
        "SELECT * FROM types ORDER BY id",
        "SELECT flag, count(*) AS n, sum(i64) AS s, min(txt) AS first_txt FROM types "
        "GROUP BY flag ORDER BY flag",
        "SELECT a.id, b.txt FROM types a JOIN types b ON a.id = b.id + 1 WHERE a.id < 50 "
        "ORDER BY a.id",
        "SELECT 1 AS a, 2 AS a, NULL AS n, '' AS e, 'x\"y' AS \"q,\"",
        "SELECT id, lst, st FROM types WHERE id < 5 ORDER BY id",
    ]
    for i, stmt in enumerate(stmts):
        r = post(srv, "/api/v1/sql", {"sql": stmt}, "csv")
        assert r.status_code == 200, (stmt, r.text)
        assert r.content == duck_csv(srv, stmt, f"sql{i}"), stmt
    # the statement as a user writes it: a closing ';' and a trailing comment
    r = post(srv, "/api/v1/sql", {"sql": "SELECT id, txt FROM types WHERE id < 9 ORDER BY id; -- done"},
             "csv")
    assert r.status_code == 200, r.text
    assert r.content == duck_csv(srv, "SELECT id, txt FROM types WHERE id < 9 ORDER BY id", "semi")
    r = post(srv, "/api/v1/sql", {"sql": "SELECT ';' AS s, 'a''b;' AS t /* ; */ ;\n  "}, "csv")
    assert r.status_code == 200, r.text
    assert r.content == b"s,t\n;,a'b;\n"
    # max_rows caps it: the header and max_rows rows
    r = post(srv, "/api/v1/sql", {"sql": "SELECT * FROM types ORDER BY id", "max_rows": 10}, "csv")
    assert r.content == duck_csv(srv, "SELECT * FROM types ORDER BY id LIMIT 10", "cap")


# ----------------------------------------------------------------- NDJSON

def days_of_duck(s):
    return 0 if s == "00:00:00" else int(s.split()[0])


def days_of_iso(s):
    return 0 if s == "PT0S" else int(s[1:-1])


def same_as_to_json(ours, duck):
    """One of our rows and DuckDB's to_json of it: equal value by value."""
    assert list(ours) == list(duck)
    for k, a in ours.items():
        b = duck[k]
        if a is None or b is None:
            assert a is None and b is None, k
        elif k == "ts":
            assert a == b.replace(" ", "T"), k
        elif k == "tstz":
            pa = datetime.datetime.fromisoformat(a.replace("Z", "+00:00"))
            pb = datetime.datetime.fromisoformat(b + ":00" if b[-3] in "+-" else b)
            assert pa == pb, k
        elif k == "flt":
            assert struct.pack("<f", float(a)) == struct.pack("<f", float(b)), k
        elif k == "bl":
            assert base64.b64decode(a) == blob_from_text(b), k
        elif k == "iv":
            assert days_of_iso(a) == days_of_duck(b), k
        else:
            assert a == b, (k, a, b)


def test_ndjson_query_pages(srv):
    for page in (1, 3):
        body = {"order_by": [{"col": "id"}], "page": page, "page_size": 1000}
        r = post(srv, "/api/v1/datasets/types/query", body, "ndjson")
        assert r.status_code == 200, r.text
        assert r.headers["Content-Type"] == "application/x-ndjson"
        assert r.headers["X-Page"] == str(page)
        lines = ndjson(r.content)
        # the rows of the JSON format, line by line
        js = json.loads(post(srv, "/api/v1/datasets/types/query", body).content,
                        parse_float=Decimal)
        assert lines == js["data"]
        duck = duck_json(srv, f"SELECT * FROM types ORDER BY id LIMIT 1000 OFFSET {(page - 1) * 1000}")
        assert len(lines) == len(duck) == (1000 if page < 3 else 500)
        for a, b in zip(lines, duck):
            same_as_to_json(a, b)
    # the index fast path writes NDJSON too (its rows are JSON objects)
    r = post(srv, "/api/v1/datasets/types/query",
             {"predicates": [{"col": "id", "op": "in", "val": [7, 8]}]},
             headers={"Accept": "application/x-ndjson"})
    assert r.headers["Content-Type"] == "application/x-ndjson"
    lines = ndjson(r.content)
    for a, b in zip(lines, duck_json(srv, "SELECT * FROM types WHERE id IN (7, 8) ORDER BY id"),
                    strict=True):
        same_as_to_json(a, b)
    # nothing: an empty body
    r = post(srv, "/api/v1/datasets/types/query",
             {"predicates": [{"col": "id", "op": "lt", "val": 0}]}, "ndjson")
    assert r.status_code == 200 and r.content == b""


def test_ndjson_stream_and_sql(srv):
    r = post(srv, "/api/v1/datasets/types/query/stream", {"order_by": [{"col": "id"}]}, "ndjson",
             headers={"Accept-Encoding": "gzip"}, stream=True)
    assert r.headers["Content-Encoding"] == "gzip"
    lines = ndjson(gzip.decompress(r.raw.read(decode_content=False)))
    duck = duck_json(srv, "SELECT * FROM types ORDER BY id")
    assert len(lines) == len(duck) == ROWS
    for a, b in zip(lines, duck):
        same_as_to_json(a, b)
    stmt = "SELECT id, txt, lst, st, dec2 FROM types WHERE id % 100 = 1 ORDER BY id"
    r = post(srv, "/api/v1/sql", {"sql": stmt}, "ndjson")
    assert r.status_code == 200, r.text
    lines = ndjson(r.content)
    assert lines == json.loads(post(srv, "/api/v1/sql", {"sql": stmt}).content,
                               parse_float=Decimal)["data"]
    for a, b in zip(lines, duck_json(srv, stmt), strict=True):
        same_as_to_json(a, b)
    # the cap: max_rows lines
    r = post(srv, "/api/v1/sql", {"sql": "SELECT id FROM types", "max_rows": 7}, "ndjson")
    assert len(ndjson(r.content)) == 7


def test_large_results_are_encoded_by_two_threads(srv):
    """Once a reply streams (past 256 KiB), each chunk of 512 rows or more is
    encoded by two threads (src/api/http_sink.c): the worker writes its first
    half, a helper the second with a forked encoder. Every row must come out
    whole, once and in order, in both formats that fork (JSON, NDJSON),
    plain and compressed, nested types included."""
    stmt = "SELECT t.*, k FROM types t, range(8) r(k) ORDER BY k, id"
    duck = duck_json(srv, stmt)
    assert len(duck) == 8 * ROWS
    r = post(srv, "/api/v1/sql", {"sql": stmt})
    assert r.status_code == 200, r.text
    assert r.headers.get("Transfer-Encoding") == "chunked"  # it streamed
    js = json.loads(r.content, parse_float=Decimal)["data"]
    r = post(srv, "/api/v1/sql", {"sql": stmt}, "ndjson", headers={"Accept-Encoding": "gzip"},
             stream=True)
    assert r.headers["Content-Encoding"] == "gzip"
    nd = ndjson(gzip.decompress(r.raw.read(decode_content=False)))
    assert nd == js
    for a, b in zip(js, duck, strict=True):
        same_as_to_json(a, b)


def test_a_cap_inside_a_streamed_two_thread_result(srv):
    """The caps sink (src/exec/driver.c) cuts the chunk that passes max_rows
    in the middle of a streamed result whose chunks two threads encode (the
    test above): the body is the first max_rows rows, whole and in order,
    and the trailer says truncated; NDJSON cuts at the same row. A cap one
    row past a chunk leaves a 1-row chunk (one thread), a cap one row short
    of the end a 2,047-row one (two)."""
    stmt = "SELECT t.*, k FROM types t, range(8) r(k) ORDER BY k, id"
    duck = duck_json(srv, stmt)
    for cap in (8 * ROWS - 1, 5 * ROWS + 1234, 2049):
        r = post(srv, "/api/v1/sql", {"sql": stmt, "max_rows": cap})
        assert r.status_code == 200, r.text
        assert r.headers.get("Transfer-Encoding") == "chunked"  # it streamed
        doc = json.loads(r.content, parse_float=Decimal)
        assert doc["truncated"] is True and doc["max_rows"] == cap
        assert len(doc["data"]) == cap
        for a, b in zip(doc["data"], duck[:cap], strict=True):
            same_as_to_json(a, b)
        r = post(srv, "/api/v1/sql", {"sql": stmt, "max_rows": cap}, "ndjson")
        assert ndjson(r.content) == doc["data"]


# ------------------------------------------------------------ negotiation

def test_one_negotiation_for_every_route(srv):
    q, st, s = ("/api/v1/datasets/types/query", "/api/v1/datasets/types/query/stream",
                "/api/v1/sql")
    bodies = {q: {"page_size": 2}, st: {"limit": 2}, s: {"sql": "SELECT 1 AS x"}}
    cases = [
        ({}, {q: "application/json", st: "application/vnd.apache.arrow.stream",
              s: "application/json"}),
        ({"Accept": "*/*"}, {q: "application/json", st: "application/vnd.apache.arrow.stream",
                             s: "application/json"}),
        ({"Accept": "text/csv"}, {q: "text/csv", st: "text/csv", s: "text/csv"}),
        ({"Accept": "application/json;q=0.5, application/x-ndjson"},
         {q: "application/x-ndjson", st: "application/x-ndjson", s: "application/x-ndjson"}),
        ({"Accept": "text/csv;q=0.2, application/json"},
         {q: "application/json", st: "application/json", s: "application/json"}),
        ({"Accept": "text/csv;q=0, text/html"},
         {q: "application/json", st: "application/vnd.apache.arrow.stream",
          s: "application/json"}),
    ]
    for headers, want in cases:
        for path, ct in want.items():
            r = post(srv, path, bodies[path], headers=headers)
            assert r.status_code == 200, (path, headers, r.text)
            assert r.headers["Content-Type"].split(";")[0] == ct, (path, headers)
    # format= wins over Accept, any case; an unknown one is a 400 naming the formats
    r = post(srv, q, {}, "CSV", headers={"Accept": "application/json"})
    assert r.headers["Content-Type"].startswith("text/csv")
    for path in (q, st, s):
        r = post(srv, path, bodies[path], "xml")
        assert r.status_code == 400 and r.json()["code"] == "invalid_query"
        for name in ("json", "arrow", "csv", "ndjson"):
            assert f'"{name}"' in r.json()["error"]
    # a count is JSON whatever is asked
    r = post(srv, "/api/v1/datasets/types/count", {}, "csv")
    assert r.status_code == 200 and r.json() == {"count": ROWS}


def test_openapi_lists_the_formats(srv):
    doc = srv.get("/docs/openapi.json").json()
    for path in ("/api/v1/datasets/{name}/query", "/api/v1/datasets/{name}/query/stream",
                 "/api/v1/sql"):
        op = doc["paths"][path]["post"]
        content = op["responses"]["200"]["content"]
        for media in ("application/json", "application/vnd.apache.arrow.stream", "text/csv",
                      "application/x-ndjson"):
            assert media in content, (path, media)
        fmt = [p for p in op.get("parameters", []) if p["name"] == "format"]
        assert fmt and fmt[0]["schema"]["enum"] == ["arrow", "csv", "ndjson", "json"], path
