"""Pre-rendered pages (index.json_pages_mb; issue 24, bench line 6): a JSON
page of a query with no predicate, no column list and no sort is sent from
the index fast path's file of page-body JSON with sendfile. Every such page
must be byte for byte the page DuckDB's rows and the encoder give: the same
file served with index.json_pages_mb = 0 is the reference, over types with
escapes, NULLs, nested values and the JSON type, on every page size and
offset that matters (first, middle, last, past the end, cut by `limit`), and
on a dataset whose pages hold only its first rows."""
import gzip
import json
import os
import socket
import time

import pytest
import requests

from conftest import Server, dataset_block, read_reply, server_block, write_parquet

ROWS = 6_000

SELECT = f"""
    SELECT i AS id,
           CASE WHEN i % 7 = 0 THEN NULL ELSE 'name ' || i || ' "q" \\ é ✓ ' || chr(10) || chr(9) END AS label,
           CASE WHEN i % 5 = 0 THEN NULL ELSE i * 1.25 - 3000.5 END AS amount,
           (i % 1000)::DECIMAL(9, 3) / 7 AS dec,
           i % 3 = 0 AS flag,
           DATE '2024-01-01' + (i % 400)::INTEGER AS day,
           TIMESTAMP '2024-01-01' + to_microseconds(i::BIGINT * 1234567) AS ts,
           TIMESTAMPTZ '2024-01-01 00:00:00+00' + to_seconds(i::BIGINT * 61) AS tstz,
           CASE WHEN i % 4 = 0 THEN NULL ELSE [i, i + 1, NULL] END AS list,
           {{'a': i, 'b': 'x' || (i % 9)}} AS st,
           ('{{"k": ' || i || ', "v": [1, 2]}}')::JSON AS doc,
           (i::HUGEINT * 100000000000000000) AS big,
           md5(i::VARCHAR)::UUID AS u,
           to_seconds(i::BIGINT) + to_days((i % 40)::INTEGER) AS span,
           TIME '00:00:00' + to_milliseconds(i::BIGINT * 997) AS tod,
           ('\\x00\\xff' || i)::BLOB AS bin,
           (i / 7.0)::FLOAT AS f32,
           MAP {{'k' || (i % 3): i}} AS m,
           (['red', 'green', 'blue'])[1 + i % 3]::ENUM('red', 'green', 'blue') AS color,
           (i * 2654435761)::UBIGINT AS ub,
           i // 10 AS grp
    FROM range({ROWS}) t(i)
"""


def wait_indexed(s, names):
    deadline = time.time() + 120
    for name in names:
        while s.get(f"/api/v1/datasets/{name}/status").json()["index"]["state"] not in (
                "ready", "failed", "none"):
            assert time.time() < deadline, s.log()[-4000:]
            time.sleep(0.02)


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    d = tmp_path_factory.mktemp("pages")
    path = write_parquet(d / "p.parquet", SELECT)
    cfg = (server_block() + "[metrics]\nenabled = true\n"
           + dataset_block("t", path)
           + dataset_block("plain", path, **{"index.json_pages_mb": 0})
           # 1 MiB holds about the first third of the rows
           + dataset_block("capped", path, **{"index.json_pages_mb": 1})
           + dataset_block("none", path, **{"index.mode": "none"})
           + dataset_block("nogz", path, **{"index.json_pages_gzip": False}))
    s = Server(d, cfg)
    s.start()
    s.wait_ready(timeout=120)
    wait_indexed(s, ["t", "plain", "capped", "nogz"])
    yield s
    s.stop()


def page(s, ds, body, **kw):
    # requests asks for gzip by default; a compressed reply is encoded as
    # usual (a file range is sent as it is), so ask for none
    kw.setdefault("headers", {"Accept-Encoding": "identity"})
    r = s.post(f"/api/v1/datasets/{ds}/query", body, **kw)
    assert r.status_code == 200, (ds, body, r.text[:300])
    return r


def test_status_and_metrics_report_the_pages(srv):
    t = srv.get("/api/v1/datasets/t/status").json()["index"]
    plain = srv.get("/api/v1/datasets/plain/status").json()["index"]
    capped = srv.get("/api/v1/datasets/capped/status").json()["index"]
    none = srv.get("/api/v1/datasets/none/status").json()["index"]
    body = page(srv, "plain", {"page_size": ROWS}).content
    # every row, the ends of the rows (8 bytes each) after them, and the
    # rows gzip-compressed in blocks (a file of their own)
    text = len(body) - len('{"data":[],"page":1,"page_size":6000}') + 8 * ROWS
    assert text < t["json_pages_bytes"] < text * 1.5, t
    assert t["disk_bytes"] >= t["row_store_bytes"] + t["json_pages_bytes"]
    assert plain["json_pages_bytes"] == 0 and none["json_pages_bytes"] == 0
    assert 0 < capped["json_pages_bytes"] <= ((1 << 20) + 8 * ROWS) * 1.5
    assert "pre-rendered pages" in srv.log()
    m = srv.get("/metrics").text
    line = [x for x in m.splitlines()
            if x.startswith('vitrine_dataset_json_pages_bytes{dataset="t"}')]
    assert line and int(line[0].split()[-1]) == t["json_pages_bytes"], line


CASES = [
    {},
    {"page_size": 1},
    {"page": 2, "page_size": 1},
    {"page": 7, "page_size": 333},
    {"page_size": ROWS},
    {"page_size": 100000},
    {"page": 2, "page_size": 2500},   # the last page, cut at the table's end
    {"page": 3, "page_size": 2500},   # past the end: no rows
    {"page": 6000, "page_size": 1},   # the last row
    {"limit": 5},
    {"limit": 2500, "page_size": 1000, "page": 3},
    {"page": 2, "page_size": 1900},   # crosses the capped dataset's end of pages
    {"page": 3, "page_size": 1900},
    # not plain: the usual path, the same bytes
    {"columns": ["id", "label"]},
    {"predicates": [{"col": "flag", "op": "eq", "val": True}], "page_size": 50},
    {"order_by": [{"col": "id", "dir": "desc"}], "page_size": 10},
    {"page_size": 10, "include_total": True},
    # keyset pagination by the id (its values never decrease in table
    # order): consecutive rows of the pages
    {"predicates": [{"col": "id", "op": "gt", "val": 4321}], "page_size": 100},
    {"predicates": [{"col": "id", "op": "gte", "val": 0}], "page_size": 2500, "page": 2},
    {"predicates": [{"col": "id", "op": "gt", "val": 1999}], "page_size": 1900},
    {"predicates": [{"col": "id", "op": "lt", "val": 17}], "page_size": 50},
    {"predicates": [{"col": "id", "op": "lte", "val": 17}], "page": 2, "page_size": 10},
    {"predicates": [{"col": "id", "op": "between", "val": [100, 5000]}], "page": 3,
     "page_size": 1000},
    {"predicates": [{"col": "id", "op": "eq", "val": 77}]},
    {"predicates": [{"col": "id", "op": "eq", "val": 77.5}]},
    {"predicates": [{"col": "id", "op": "gt", "val": 10}, {"col": "id", "op": "lt", "val": 5}]},
    {"predicates": [{"col": "id", "op": "gt", "val": 5990}], "page": 2, "page_size": 5},
    {"predicates": [{"col": "id", "op": "gte", "val": -50}, {"col": "id", "op": "lt", "val": 900}],
     "limit": 700, "page": 2, "page_size": 500},
    {"predicates": [{"col": "id", "op": "gt", "val": 100}], "order_by": [{"col": "id", "dir": "asc"}],
     "page_size": 30},
    # not in table order, or not this column: the usual path
    {"predicates": [{"col": "id", "op": "gt", "val": 100}], "order_by": [{"col": "id", "dir": "desc"}],
     "page_size": 30},
    {"predicates": [{"col": "id", "op": "gt", "val": 100}], "columns": ["id", "label"],
     "page_size": 30},
    {"predicates": [{"col": "id", "op": "gt", "val": 100}, {"col": "flag", "op": "eq", "val": True}],
     "page_size": 30},
    {"predicates": [{"col": "grp", "op": "gte", "val": 42}], "page_size": 30},
    {"predicates": [{"col": "grp", "op": "gte", "val": 42}], "order_by": [{"col": "grp", "dir": "asc"}],
     "page_size": 30},
    {"predicates": [{"col": "ub", "op": "gt", "val": 1000}], "page_size": 30},
]


@pytest.mark.parametrize("body", CASES, ids=[json.dumps(c) for c in CASES])
def test_pages_equal_duckdb_and_the_encoder(srv, body):
    want = page(srv, "plain", body)
    for ds in ("t", "capped", "none"):
        got = page(srv, ds, body)
        assert got.content == want.content, (ds, body, got.content[:300], want.content[:300])
        assert got.headers["Content-Type"] == want.headers["Content-Type"]
        assert got.headers["X-Dataset-Generation"]


def test_a_large_plain_page_comes_from_the_file(srv):
    # The usual path streams a body past 256 KiB (chunked); a range of the
    # pre-rendered pages is one file: Content-Length, and next to nothing
    # executed (Server-Timing, milliseconds).
    r = page(srv, "t", {"page_size": ROWS})
    assert int(r.headers["Content-Length"]) == len(r.content) > 256 * 1024
    execute = float(r.headers["Server-Timing"].split("execute;dur=")[1].split(",")[0])
    assert execute < 5, r.headers["Server-Timing"]
    plain = page(srv, "plain", {"page_size": ROWS})
    assert "Content-Length" not in plain.headers
    assert plain.headers.get("Transfer-Encoding") == "chunked"
    # beyond the capped dataset's pages: the usual path
    c = page(srv, "capped", {"page_size": ROWS})
    assert "Content-Length" not in c.headers and c.content == plain.content
    assert json.loads(r.content)["data"][123] == json.loads(plain.content)["data"][123]


def test_keyset_pages_by_id_come_from_the_file(srv):
    # id > last, page after page: each page is a range of the pre-rendered
    # pages (one file: a Content-Length), the same bytes as DuckDB's, and
    # the pages together are every row once, in order.
    last, seen = -1, 0
    while True:
        body = {"predicates": [{"col": "id", "op": "gt", "val": last}], "page_size": 2000}
        got = page(srv, "t", body)
        want = page(srv, "plain", body)
        assert got.content == want.content, last
        rows = json.loads(got.content)["data"]
        if not rows:
            break
        assert "Content-Length" in got.headers and "Transfer-Encoding" not in got.headers
        assert [r["id"] for r in rows] == list(range(last + 1, last + 1 + len(rows)))
        seen += len(rows)
        last = rows[-1]["id"]
    assert seen == ROWS
    # a large page of the usual path is chunked: rows chosen by a column
    # that does not rise with the table are not consecutive
    body = {"predicates": [{"col": "dec", "op": "gte", "val": 0}], "page_size": 2000}
    r = page(srv, "t", body)
    assert r.headers.get("Transfer-Encoding") == "chunked"
    assert r.content == page(srv, "plain", body).content
    # ub rises with the id (i * 2654435761): its ranges are runs of rows too
    body = {"predicates": [{"col": "ub", "op": "gte", "val": 10**12}], "page_size": 2000}
    r = page(srv, "t", body)
    assert "Content-Length" in r.headers and r.content == page(srv, "plain", body).content


GZIP_CASES = [{"page_size": ROWS}, {"page": 2, "page_size": 2999}, {"page_size": 4321},
              {"page": 3, "page_size": 1900}, {"page": 2, "page_size": 200}]


@pytest.mark.parametrize("body", GZIP_CASES, ids=[json.dumps(c) for c in GZIP_CASES])
def test_gzip_pages_are_the_blocks_between_compressed_edges(srv, body):
    # A client that takes gzip gets one gzip member made of the range's
    # pre-compressed blocks (a Content-Length: no per-request compression of
    # the whole body), whatever coding it prefers; it inflates (CRC and size
    # checked) to exactly the page. Ranges that span no whole block, and
    # rows past the capped pages, are compressed the usual way (streamed).
    want = page(srv, "plain", body).content
    for ae in ("gzip", "*", "zstd, br, gzip, deflate"):
        r = page(srv, "t", body, headers={"Accept-Encoding": ae}, stream=True)
        raw = r.raw.read()
        if len(want) < 2 * 64 * 1024:  # no whole block inside: the usual pick
            assert r.headers["Content-Encoding"] in ("gzip", "zstd"), ae
            continue
        assert r.headers["Content-Encoding"] == "gzip", (ae, r.headers)
        assert gzip.decompress(raw) == want, ae
        assert int(r.headers["Content-Length"]) == len(raw), r.headers
        assert "Accept-Encoding" in r.headers["Vary"]
    # a client that prefers another coding gets it, compressed per request
    r = page(srv, "t", body, headers={"Accept-Encoding": "gzip;q=0.5, zstd;q=0.9"},
             stream=True)
    assert r.headers["Content-Encoding"] == "zstd" or len(want) < 1024
    r.close()
    # requests (gzip, deflate) inflates either; past the capped dataset's
    # pages the reply is compressed per request as before
    for ds in ("t", "capped"):
        r = requests.post(srv.url(f"/api/v1/datasets/{ds}/query"), json=body, timeout=30)
        assert r.status_code == 200 and r.content == want, ds
        assert r.headers["Content-Encoding"] == "gzip"


def short_jobs_run(s):
    # jobs the query pool's workers ran (the short class: pages)
    n = 0
    for x in s.get("/metrics").text.splitlines():
        if x.startswith("vitrine_engine_job_run_seconds_count{") and 'class="short"' in x:
            n += int(float(x.split()[-1]))
    return n


def test_identity_pages_stay_on_the_loop_gzip_pages_go_to_a_worker(srv):
    # An identity page is a sendfile on the HTTP loop: no worker job. A gzip
    # page reads and compresses its two edges (up to two 64 KiB blocks of
    # text): a worker frames it, so the loop's other connections do not wait
    # for that compression.
    body = {"page_size": ROWS}
    page(srv, "t", body)
    before = short_jobs_run(srv)
    for _ in range(3):
        page(srv, "t", body)
    assert short_jobs_run(srv) == before
    for _ in range(3):
        r = page(srv, "t", body, headers={"Accept-Encoding": "gzip"}, stream=True)
        raw = r.raw.read()
        assert r.headers["Content-Encoding"] == "gzip" and "Content-Length" in r.headers
        assert json.loads(gzip.decompress(raw))["page_size"] == ROWS
    assert short_jobs_run(srv) == before + 3


def test_compressed_and_other_formats_go_the_usual_way(srv):
    body = {"page_size": 3000}
    page(srv, "plain", body)
    # a client that takes brotli but not gzip: compressed per request
    r = page(srv, "t", body, headers={"Accept-Encoding": "br"}, stream=True)
    assert r.headers.get("Content-Encoding") == "br"
    assert r.headers.get("Transfer-Encoding") == "chunked" and "Content-Length" not in r.headers
    r.close()
    for fmt in ("ndjson", "csv"):
        a = srv.post(f"/api/v1/datasets/t/query?format={fmt}", body)
        b = srv.post(f"/api/v1/datasets/plain/query?format={fmt}", body)
        assert a.status_code == b.status_code == 200
        assert a.content == b.content, fmt


def test_get_query_url_and_etag(srv):
    q = json.dumps({"page_size": 2000, "page": 2})
    ident = {"Accept-Encoding": "identity"}
    a = srv.get("/api/v1/datasets/t/query", params={"q": q}, headers=ident)
    b = srv.get("/api/v1/datasets/plain/query", params={"q": q}, headers=ident)
    assert a.status_code == b.status_code == 200
    assert a.content == b.content
    etag = a.headers["ETag"]
    again = srv.get("/api/v1/datasets/t/query", params={"q": q},
                    headers={"If-None-Match": etag, **ident})
    assert again.status_code == 304 and again.content == b""
    h = requests.head(srv.url("/api/v1/datasets/t/query"), params={"q": q}, headers=ident,
                      timeout=30)
    assert h.status_code in (200, 405)
    if h.status_code == 200:
        assert h.content == b"" and int(h.headers["Content-Length"]) == len(a.content)


def test_a_client_that_reads_slowly_gets_every_byte(srv):
    want = page(srv, "plain", {"page_size": ROWS}).content
    with requests.post(srv.url("/api/v1/datasets/t/query"), json={"page_size": ROWS},
                       headers={"Accept-Encoding": "identity"}, stream=True, timeout=60) as r:
        assert "Content-Length" in r.headers
        got = bytearray()
        for piece in r.iter_content(chunk_size=4096):
            got += piece
            if len(got) < 64 * 1024:
                time.sleep(0.002)
    assert bytes(got) == want


def test_pipelined_requests_after_a_file_reply(srv):
    # Two plain pages and a lookup in one write: each reply whole and in
    # order, the file's tail before the next reply's head.
    bodies = [{"page_size": 4000}, {"page": 2, "page_size": 2500},
              {"predicates": [{"col": "id", "op": "eq", "val": 17}]}]
    wire = b""
    for b in bodies:
        req = json.dumps(b).encode()
        wire += (b"POST /api/v1/datasets/t/query HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                 b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                 % (len(req), req))
    with socket.create_connection(("127.0.0.1", srv.port), timeout=30) as sock:
        sock.sendall(wire)
        rest = b""
        for b in bodies:
            head, got, rest = read_reply(sock, rest)
            assert head.startswith(b"HTTP/1.1 200"), head
            assert got == page(srv, "plain", b).content, b


def fd_count(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def test_clients_that_leave_mid_file_cost_nothing(srv):
    # A client that reads a little of a pre-rendered page and closes: the
    # server goes on serving, and the file descriptors (the reply's dup of
    # the pages' file) are all given back.
    req = json.dumps({"page_size": ROWS}).encode()
    page(srv, "t", {"page_size": ROWS})
    before = fd_count(srv.proc.pid)
    for _ in range(20):
        with socket.create_connection(("127.0.0.1", srv.port), timeout=30) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.sendall(b"POST /api/v1/datasets/t/query HTTP/1.1\r\nHost: x\r\n"
                         b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                         % (len(req), req))
            sock.recv(1000)
    deadline = time.time() + 10
    while fd_count(srv.proc.pid) > before and time.time() < deadline:
        time.sleep(0.05)
    assert fd_count(srv.proc.pid) <= before
    assert page(srv, "t", {"page_size": ROWS}).content == page(srv, "plain",
                                                                  {"page_size": ROWS}).content


def test_without_gzip_blocks_gzip_is_compressed_per_request(srv):
    t = srv.get("/api/v1/datasets/t/status").json()["index"]
    nogz = srv.get("/api/v1/datasets/nogz/status").json()["index"]
    assert 0 < nogz["json_pages_bytes"] < t["json_pages_bytes"]
    body = {"page_size": ROWS}
    want = page(srv, "plain", body).content
    r = page(srv, "nogz", body, headers={"Accept-Encoding": "gzip"}, stream=True)
    assert r.headers["Content-Encoding"] == "gzip" and "Content-Length" not in r.headers
    assert gzip.decompress(r.raw.read()) == want
    r = page(srv, "nogz", body)  # identity: still the pages
    assert int(r.headers["Content-Length"]) == len(want) and r.content == want
