"""GET/HEAD /api/v1/datasets/{name}/parquet and /all.parquet with real clients
(curl and Python requests), read back with DuckDB, compared with nginx.

Covers: identical bytes and headers on both paths and on HEAD; a built export
answered without a query-pool job; the file reads back (DuckDB read_parquet)
as the dataset's source rows; single, suffix and open-ended ranges, a file
reassembled from ranges, 416, multi-range answered with the full 200, a small
range in one TCP segment; If-None-Match (304), If-Match (412), If-Range across
an admin reload (so a resumed download never mixes generations); the ETag
changes on reload; concurrent first requests share one build; clients leaving
mid-body keep no file open; the cached file is deleted when its generation is
no longer current and nothing holds it; lazy datasets export too; and Range
answers side by side with nginx serving the same file.

Run with /usr/bin/python3 -m pytest; VITRINE_BUILD names the build directory.
"""
import glob
import os
import re
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest
import requests

from conftest import dataset_block, server_block, sql, write_parquet

TOKEN = "export-test-token"
ADMIN = {"X-Admin-Token": TOKEN}
PARQUET = "application/vnd.apache.parquet"
PATHS = ("/api/v1/datasets/t/parquet", "/api/v1/datasets/t/all.parquet")
P = PATHS[0]
NGINX = os.environ.get("NGINX", "/usr/sbin/nginx")


def source_select(rows, gen=1):
    """Many types with NULLs; `gen` changes every value (a new generation)."""
    return f"""
    SELECT i AS id, (i * {gen})::INTEGER AS n,
           CASE WHEN i % 7 = 0 THEN NULL ELSE 'g{gen}-' || i END AS s,
           CASE WHEN i % 5 = 0 THEN NULL ELSE i / {gen + 3}.0 END::DOUBLE AS d,
           CASE WHEN i % 3 = 0 THEN NULL ELSE (i * 1.25)::DECIMAL(12, 2) END AS dec,
           DATE '2020-01-01' + (i % 1000)::INTEGER AS day,
           CASE WHEN i % 11 = 0 THEN NULL
                ELSE TIMESTAMPTZ '2021-01-01 00:00:00+00' + to_seconds(i * {gen}) END AS ts,
           CASE WHEN i % 4 = 0 THEN NULL ELSE [i, {gen}] END AS l,
           {{'a': i % 10, 'b': CASE WHEN i % 6 = 0 THEN NULL ELSE 'x' END}} AS st,
           ('\\x00' || i)::BLOB AS bl, i % 2 = 0 AS even,
           hash(i + {gen}) AS noise
    FROM range({rows}) t(i)"""


def put_source(path, rows, gen):
    """Replaces the source file atomically (write a temp file, rename)."""
    tmp = path.with_name(path.name + ".tmp")
    write_parquet(tmp, source_select(rows, gen))
    os.replace(tmp, path)
    return path


def start(vt, datadir, rows=20000, ds=None, metrics=False, **server):
    src = put_source(datadir / "t.parquet", rows, 1)
    extra = "[metrics]\nenabled = true\n" if metrics else ""
    s = vt(server_block(**server) + extra + dataset_block("t", src, **(ds or {})),
           env={"ADMIN_TOKEN": TOKEN})
    s.src = src
    return s


def same_rows(file_a, file_b):
    """Both Parquet files hold the same columns (names, types) and the same
    multiset of rows, by DuckDB; returns the row count."""
    da = sql(f"DESCRIBE SELECT * FROM read_parquet('{file_a}')")
    db = sql(f"DESCRIBE SELECT * FROM read_parquet('{file_b}')")
    assert [r[:2] for r in da] == [r[:2] for r in db]
    diff = sql(f"""SELECT count(*) FROM (
        (SELECT * FROM read_parquet('{file_a}') EXCEPT ALL SELECT * FROM read_parquet('{file_b}'))
        UNION ALL
        (SELECT * FROM read_parquet('{file_b}') EXCEPT ALL SELECT * FROM read_parquet('{file_a}')))""")
    assert diff == [["0"]], diff
    na = sql(f"SELECT count(*) FROM read_parquet('{file_a}')")[0][0]
    assert na == sql(f"SELECT count(*) FROM read_parquet('{file_b}')")[0][0]
    return int(na)


def curl(*args, check=True):
    exe = shutil.which("curl")
    assert exe, "curl is not installed"
    r = subprocess.run([exe, "-sS", *args], capture_output=True, timeout=60)
    if check:
        assert r.returncode == 0, r.stderr
    return r


def curl_headers(text):
    """Status and headers (lower-case names) of the last response curl -D wrote."""
    blocks = [b for b in text.replace("\r\n", "\n").split("\n\n") if b.startswith("HTTP/")]
    lines = blocks[-1].split("\n")
    status = int(lines[0].split()[1])
    return status, {k.lower(): v for k, v in (l.split(": ", 1) for l in lines[1:] if ": " in l)}


def exports_dir(s):
    base = os.environ.get("TMPDIR") or "/tmp"
    found = glob.glob(f"{base}/vitrine-{s.proc.pid}-*/exports")
    assert len(found) == 1, found
    return Path(found[0])


def etag_id(etag):
    assert re.fullmatch(r'"[0-9A-Z]{26}"', etag), etag  # strong, quoted
    return etag.strip('"')


def wait_for(pred, timeout=10, what="condition"):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def reload(s):
    r = s.post("/api/v1/datasets/t/reload", headers=ADMIN)
    assert r.status_code == 200, r.text
    return r.json()


IGNORED = {"date", "x-request-id"}


def header_view(r):
    return {k.lower(): v for k, v in r.headers.items() if k.lower() not in IGNORED}


def query_jobs(s):
    """{class: jobs run} on the query pool, and whether any is queued or
    running, from /metrics."""
    text = s.get("/metrics").text
    ran = {m.group(1): int(m.group(2)) for m in re.finditer(
        r'^vitrine_engine_job_run_seconds_count\{pool="query",class="(\w+)"\} (\d+)$', text, re.M)}
    busy = sum(int(m.group(1)) for m in re.finditer(
        r'^vitrine_engine_jobs_(?:queued|running)\{pool="query",class="\w+"\} (\d+)$', text,
        re.M))
    return ran, busy


# ------------------------------------------------------------------ tests

def test_get_and_head_same_bytes_headers_and_rows(vt, datadir, tmp_path):
    s = start(vt, datadir, metrics=True)
    assert query_jobs(s) == ({"short": 0, "long": 0, "stream": 0}, 0)
    gets = [s.get(p) for p in PATHS]
    # The first request built the export on a worker (one SHORT job, counted
    # just after it answered); every later one, GET or HEAD, whole or range,
    # 304 or 404, is answered on the HTTP thread without a job.
    wait_for(lambda: query_jobs(s) == ({"short": 1, "long": 0, "stream": 0}, 0),
             what="the export's build job to be counted")
    heads = [s.head(p) for p in PATHS]
    body = gets[0].content
    assert body[:4] == b"PAR1" and body[-4:] == b"PAR1"
    for r in gets + heads:
        assert r.status_code == 200
        assert r.headers["Content-Type"] == PARQUET
        assert r.headers["Accept-Ranges"] == "bytes"
        assert r.headers["Content-Length"] == str(len(body))
        assert "Content-Encoding" not in r.headers
        etag_id(r.headers["ETag"])
    assert gets[1].content == body
    assert all(h.content == b"" for h in heads)
    views = [header_view(r) for r in gets + heads]
    assert all(v == views[0] for v in views), views
    # curl, with compression offered: the same bytes, never compressed
    out = tmp_path / "curl.parquet"
    r = curl("-D", "-", "-o", str(out), "-H", "Accept-Encoding: gzip, br, zstd", s.url(PATHS[1]))
    status, h = curl_headers(r.stdout.decode())
    assert status == 200 and h["content-type"] == PARQUET and h["etag"] == gets[0].headers["ETag"]
    assert "content-encoding" not in h
    assert out.read_bytes() == body
    r = curl("-I", s.url(PATHS[0]))
    status, h = curl_headers(r.stdout.decode())
    assert status == 200 and h["content-length"] == str(len(body)) and h["accept-ranges"] == "bytes"
    # the file reads back with DuckDB as the source's rows
    assert same_rows(out, s.src) == 20000
    # unknown dataset: the JSON 404; other methods: 405 naming GET and HEAD
    for r in (s.get("/api/v1/datasets/nope/parquet"), s.get("/api/v1/datasets/nope/all.parquet")):
        assert r.status_code == 404 and r.json()["code"] == "dataset_not_found"
    assert s.head("/api/v1/datasets/nope/parquet").status_code == 404
    r = s.post(P, {})
    assert r.status_code == 405 and set(r.headers["Allow"].split(", ")) == {"GET", "HEAD"}
    r = s.get(P, headers={"Range": "bytes=-8"})
    assert r.status_code == 206 and r.content == body[-8:]
    assert s.get(P, headers={"If-None-Match": gets[0].headers["ETag"]}).status_code == 304
    assert query_jobs(s) == ({"short": 1, "long": 0, "stream": 0}, 0)


def test_ranges(vt, datadir, tmp_path):
    s = start(vt, datadir)
    full = s.get(P).content
    total = len(full)
    etag = s.head(P).headers["ETag"]

    def rng(value, path=P):
        return s.get(path, headers={"Range": value})

    cases = [("bytes=0-0", 0, 0), ("bytes=0-99", 0, 99), ("bytes=100-4195", 100, 4195),
             (f"bytes={total - 1}-{total - 1}", total - 1, total - 1),
             (f"bytes=1000-{total + 5000}", 1000, total - 1),          # end clamped
             ("bytes=-8", total - 8, total - 1),                        # suffix
             (f"bytes=-{total + 10}", 0, total - 1),                    # suffix > size
             (f"bytes={total - 300}-", total - 300, total - 1),         # open-ended
             ("bytes=0-", 0, total - 1)]
    for value, a, b in cases:
        for path in PATHS:
            r = rng(value, path)
            assert r.status_code == 206, (value, r.status_code)
            assert r.headers["Content-Range"] == f"bytes {a}-{b}/{total}", value
            assert r.headers["Content-Length"] == str(b - a + 1)
            assert r.headers["ETag"] == etag and r.headers["Content-Type"] == PARQUET
            assert r.content == full[a:b + 1], value
    # the footer: 4-byte metadata length + magic
    footer = rng("bytes=-8").content
    assert footer[4:] == b"PAR1"
    assert 0 < int.from_bytes(footer[:4], "little") < total
    # unsatisfiable: 416 with the total
    for value in (f"bytes={total}-", f"bytes={total + 10}-{total + 20}", "bytes=-0"):
        r = rng(value)
        assert r.status_code == 416, (value, r.status_code)
        assert r.headers["Content-Range"] == f"bytes */{total}"
    # several ranges: the whole file with 200 (intentional, see the nginx test)
    for value in ("bytes=0-1,5-9", "bytes=0-10, 20-30, -5"):
        r = rng(value)
        assert r.status_code == 200 and r.content == full and "Content-Range" not in r.headers
    # not a bytes range or malformed: ignored, 200
    for value in ("items=0-5", "bytes=5-2", "bytes=abc", "bytes="):
        r = rng(value)
        assert r.status_code == 200 and r.content == full, value
    # HEAD ignores Range (RFC 9110 14.2)
    r = s.head(P, headers={"Range": "bytes=0-5"})
    assert r.status_code == 200 and r.headers["Content-Length"] == str(total)
    # a file reassembled from several ranges fetched by curl equals the download
    cuts = [0, 1, 4096, 5000, total // 2, total - 8, total]
    parts = []
    for k, (a, b) in enumerate(zip(cuts, cuts[1:])):
        part = tmp_path / f"part{k}"
        r = curl("-D", "-", "-r", f"{a}-{b - 1}", "-o", str(part), s.url(PATHS[k % 2]))
        status, h = curl_headers(r.stdout.decode())
        assert status == 206 and h["content-range"] == f"bytes {a}-{b - 1}/{total}"
        parts.append(part.read_bytes())
    joined = tmp_path / "joined.parquet"
    joined.write_bytes(b"".join(parts))
    assert joined.read_bytes() == full
    assert same_rows(joined, s.src) == 20000
    # A small range (how Parquet readers start: the footer) comes in one TCP
    # segment, head and bytes together, as from nginx with tcp_nopush (before:
    # the head was pushed alone, then the bytes: always two).
    segs = [data_segments(s, P, "bytes=-8", full[-8:]) for _ in range(5)]
    # (min: a loop thread descheduled for 200 ms between its two calls would
    # let the kernel send the held head alone)
    assert min(segs) == 1 and max(segs) <= 2, segs


def data_segments(s, path, rng, want):
    """Data segments the client's socket received for one GET with this
    Range (TCP_INFO tcpi_data_segs_in, Linux >= 4.6), on a fresh connection."""
    with socket.create_connection(("127.0.0.1", s.port), timeout=30) as c:
        def segs_in():
            info = c.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
            assert len(info) >= 156, "TCP_INFO without tcpi_data_segs_in"
            return int.from_bytes(info[152:156], "little")

        before = segs_in()
        c.sendall(f"GET {s.prefix}{path} HTTP/1.1\r\nHost: 127.0.0.1\r\nRange: {rng}\r\n"
                  f"Connection: close\r\n\r\n".encode())
        data = b""
        while True:
            b = c.recv(65536)
            if not b:
                break
            data += b
        head, body = data.split(b"\r\n\r\n", 1)
        assert head.startswith(b"HTTP/1.1 206 ") and body == want, head
        return segs_in() - before


def test_conditional_requests_and_resume_across_reload(vt, datadir, tmp_path):
    s = start(vt, datadir)
    old = s.get(P)
    etag1, total1 = old.headers["ETag"], len(old.content)
    # If-None-Match
    for value in (etag1, f'"nope", {etag1}', f"W/{etag1}", "*"):
        r = s.get(P, headers={"If-None-Match": value})
        assert r.status_code == 304 and r.content == b"", value
        assert r.headers["ETag"] == etag1
        r = s.head(P, headers={"If-None-Match": value})
        assert r.status_code == 304
    r = s.get(P, headers={"If-None-Match": '"01ARZ3NDEKTSV4RRFFQ69G5FAV"'})
    assert r.status_code == 200 and r.content == old.content
    # If-Match: 412 unless it matches (strongly)
    assert s.get(P, headers={"If-Match": '"other"'}).status_code == 412
    assert s.get(P, headers={"If-Match": f"W/{etag1}"}).status_code == 412
    assert s.get(P, headers={"If-Match": etag1}).status_code == 200
    # If-Range with the current ETag: the range
    r = s.get(P, headers={"Range": "bytes=0-9", "If-Range": etag1})
    assert r.status_code == 206 and r.content == old.content[:10]
    # ... with a weak one or a date (we send no Last-Modified): the whole file
    for value in (f"W/{etag1}", "Sun, 06 Nov 1994 08:49:37 GMT"):
        r = s.get(P, headers={"Range": "bytes=0-9", "If-Range": value})
        assert r.status_code == 200 and r.content == old.content, value

    # A client downloads the first half, then the dataset is reloaded with new data.
    half = total1 // 2
    first = s.get(P, headers={"Range": f"bytes=0-{half - 1}"}).content
    assert first == old.content[:half]
    put_source(s.src, 15000, 2)
    reload(s)
    new_head = s.head(P)
    etag2 = new_head.headers["ETag"]
    assert etag_id(etag2) != etag_id(etag1)          # the ETag changed on reload
    assert s.get(P, headers={"If-None-Match": etag1}).status_code == 200
    # Resuming with If-Range = the old ETag gives the whole new file, not a splice.
    r = s.get(P, headers={"Range": f"bytes={half}-", "If-Range": etag1})
    assert r.status_code == 200 and "Content-Range" not in r.headers
    assert r.headers["ETag"] == etag2
    assert r.headers["Content-Length"] == new_head.headers["Content-Length"] == str(len(r.content))
    new_file = tmp_path / "new.parquet"
    new_file.write_bytes(r.content)
    assert same_rows(new_file, s.src) == 15000
    assert sql(f"SELECT min(s) FROM read_parquet('{new_file}')")[0][0].startswith("g2-")
    # curl resuming a partial file the same way (-C - sends the Range)
    part = tmp_path / "resume.parquet"
    part.write_bytes(first)
    r = curl("-D", "-", "-C", "-", "-H", f"If-Range: {etag1}", "-o", str(part), s.url(P),
             check=False)
    status, h = curl_headers(r.stdout.decode())
    assert status == 200 and h["etag"] == etag2
    # curl sees the 200 and refuses to resume (exit 33): the old half is not
    # spliced onto the new file
    assert r.returncode == 33 and part.read_bytes() == first
    # With the new ETag, If-Range gives the range of the new file.
    r = s.get(P, headers={"Range": "bytes=-8", "If-Range": etag2})
    assert r.status_code == 206 and r.content[4:] == b"PAR1"
    assert r.headers["Content-Range"].endswith(f"/{new_head.headers['Content-Length']}")
    # ?generation= pins a generation, as on queries: the current one's file,
    # a replaced one (not kept without a cluster) 410, a newer one 409.
    r = s.get(P + f"?generation={etag_id(etag2)}")
    assert r.status_code == 200 and r.headers["ETag"] == etag2
    assert r.headers["X-Dataset-Generation"] == etag_id(etag2)
    assert r.content == s.get(P).content
    r = s.get(P + f"?generation={etag_id(etag1)}")
    assert r.status_code == 410 and r.json()["code"] == "generation_gone", r.text
    r = s.get(P + "?generation=7ZZZZZZZZZZZZZZZZZZZZZZZZZ")
    assert r.status_code == 409 and r.json()["code"] == "generation_not_available", r.text
    r = s.get(P + "?generation=nope")
    assert r.status_code == 400 and r.json()["code"] == "invalid_query", r.text


def test_concurrent_first_requests_build_once(vt, datadir):
    s = start(vt, datadir, rows=200000, ds={"index.mode": "none"})

    def burst():
        barrier = threading.Barrier(8)
        results = [None] * 8

        def one(k):
            barrier.wait()
            if k % 4 == 3:
                r = requests.head(s.url(PATHS[k % 2]), timeout=60)
            elif k % 4 == 2:
                r = requests.get(s.url(PATHS[k % 2]), headers={"Range": "bytes=-8"}, timeout=60)
            else:
                r = requests.get(s.url(PATHS[k % 2]), timeout=60)
            results[k] = r

        threads = [threading.Thread(target=one, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        return results

    ids = []
    for gen in (1, 2):
        if gen == 2:
            put_source(s.src, 200000, 2)
            reload(s)
        res = burst()
        assert all(r is not None and r.status_code in (200, 206) for r in res), res
        etags = {r.headers["ETag"] for r in res}
        assert len(etags) == 1
        bodies = {r.content for r in res if r.status_code == 200 and r.request.method == "GET"}
        assert len(bodies) == 1
        full = bodies.pop()
        for r in res:
            if r.status_code == 206:
                assert r.content == full[-8:]
            if r.request.method == "HEAD":
                assert r.headers["Content-Length"] == str(len(full))
        ids.append(etag_id(etags.pop()))
    assert ids[0] != ids[1]
    log = s.log()
    built = re.findall(r"export of generation (\S+): \d+ bytes", log)
    assert built == ids, built   # one build per generation, in order
    assert log.count("export of generation") == 2  # and no failed attempt either


def test_cached_file_removed_when_generation_released(vt, datadir, tmp_path):
    # 700,000 rows: the stream below (~20 MB) and the export (~9 MB) are
    # bigger than what the loopback socket buffers absorb, so both are really
    # in flight when the reload happens.
    s = start(vt, datadir, rows=700_000, ds={"index.mode": "none"}, workers=2)
    exports = exports_dir(s)
    assert list(exports.iterdir()) == []
    first = s.get(P)
    g1 = etag_id(first.headers["ETag"])
    f1 = exports / f"{g1}.parquet"
    assert [p.name for p in exports.iterdir()] == [f1.name]
    assert f1.stat().st_size == len(first.content)

    # Clients that leave mid-body: each download's open export goes with its
    # connection (no descriptor kept), and the file still downloads whole.
    def export_fds():
        n = 0
        for fd in os.listdir(f"/proc/{s.proc.pid}/fd"):
            try:
                n += "/exports/" in os.readlink(f"/proc/{s.proc.pid}/fd/{fd}")
            except OSError:
                pass
        return n

    left = []
    for k in range(4):
        c = socket.create_connection(("127.0.0.1", s.port), timeout=30)
        c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        c.sendall(f"GET {s.prefix}{PATHS[k % 2]} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
        assert c.recv(1024).startswith(b"HTTP/1.1 200 ")
        left.append(c)
    wait_for(lambda: export_fds() == 4, what="four downloads in flight")
    for c in left:
        c.close()
    wait_for(lambda: export_fds() == 0, what="the abandoned downloads' files to be closed")
    assert s.get(P).content == first.content

    # A stream on generation 1 that the client reads slowly holds generation 1.
    stream = requests.post(s.url("/api/v1/datasets/t/query/stream"),
                           json={"columns": ["id", "s", "noise"]},
                           stream=True, timeout=60)
    assert stream.status_code == 200
    head = stream.raw.read(64 * 1024)
    # And a download of generation 1's export that is only partly read.
    download = requests.get(s.url(P), stream=True, timeout=60)
    got = download.raw.read(64 * 1024)

    put_source(s.src, 1000, 2)
    reload(s)
    r2 = s.get(P)
    g2 = etag_id(r2.headers["ETag"])
    assert g2 != g1
    f2 = exports / f"{g2}.parquet"
    assert f2.exists()
    time.sleep(0.3)
    assert f1.exists(), "generation 1 is still held by the stream: its export must stay"

    # The stream finishes on generation 1 (all its rows, not the 1000 new ones).
    rest = stream.raw.read()
    data = head + rest
    assert data[-8:] == b"\xff\xff\xff\xff\x00\x00\x00\x00" and len(data) > 700_000 * 24
    # Once nothing holds generation 1, its file goes.
    wait_for(lambda: not f1.exists(), what=f"{f1} to be deleted")
    assert f2.exists()
    # The partly read download still gets generation 1's bytes in full
    # (the open file outlives the unlink).
    got += download.raw.read()
    assert got == first.content
    # A generation that nobody holds loses its file at the reload itself.
    put_source(s.src, 1000, 3)
    reload(s)
    wait_for(lambda: not f2.exists(), what=f"{f2} to be deleted")
    assert list(exports.iterdir()) == []          # the new generation exports lazily
    r3 = s.get(P)
    assert [p.name for p in exports.iterdir()] == [f"{etag_id(r3.headers['ETag'])}.parquet"]


def test_lazy_dataset_exports(vt, datadir, tmp_path):
    parts = datadir / "parts"
    parts.mkdir()
    for k in range(3):
        write_parquet(parts / f"p{k}.parquet",
                      f"SELECT * FROM ({source_select(30000)}) WHERE id % 3 = {k}")
    s = vt(server_block() + dataset_block("lz", f"{parts}/*.parquet", lazy=True),
           env={"ADMIN_TOKEN": TOKEN})
    st = s.wait_state("lz", ("published",))
    assert st["lazy"] is True and st["residency"] == "lazy"
    r = s.get("/api/v1/datasets/lz/all.parquet")
    assert r.status_code == 200 and r.headers["Content-Type"] == PARQUET
    h = s.head("/api/v1/datasets/lz/parquet")
    assert h.headers["ETag"] == r.headers["ETag"]
    assert h.headers["Content-Length"] == str(len(r.content))
    out = tmp_path / "lz.parquet"
    out.write_bytes(r.content)
    whole = tmp_path / "whole.parquet"
    write_parquet(whole, source_select(30000))
    assert same_rows(out, whole) == 30000
    r = s.get("/api/v1/datasets/lz/parquet", headers={"Range": "bytes=-8"})
    assert r.status_code == 206 and r.content == out.read_bytes()[-8:]
    assert "export of generation" in s.log()


# ------------------------------------------------------ nginx comparison

def free_port():
    with socket.socket() as so:
        so.bind(("127.0.0.1", 0))
        return so.getsockname()[1]


@pytest.fixture
def nginx(tmp_path):
    """nginx serving tmp_path/www on a loopback port; yields (base_url, www)."""
    assert os.access(NGINX, os.X_OK), f"nginx is not installed at {NGINX}"
    work = tmp_path / "nginx"
    www = work / "www"
    www.mkdir(parents=True)
    # A port probed free may be taken before nginx binds it (a neighbour
    # test's server binding port 0, a client's local port): then nginx exits
    # saying so, and it starts again on another one.
    log = work / "error.log"
    for attempt in range(5):
        port = free_port()
        log.write_text("")
        (work / "nginx.conf").write_text(f"""
    daemon off;
    master_process off;
    worker_processes 1;
    pid {work}/nginx.pid;
    error_log {work}/error.log;
    events {{ worker_connections 64; }}
    http {{
        access_log off;
        types {{ {PARQUET} parquet; }}
        client_body_temp_path {work}/t1; proxy_temp_path {work}/t2; fastcgi_temp_path {work}/t3;
        uwsgi_temp_path {work}/t4; scgi_temp_path {work}/t5;
        server {{ listen 127.0.0.1:{port}; root {www}; }}
    }}
    """)
        proc = subprocess.Popen([NGINX, "-p", str(work), "-c", str(work / "nginx.conf"), "-e",
                                 str(work / "error.log")], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        base = f"http://127.0.0.1:{port}"
        deadline, taken = time.time() + 10, False
        while proc.poll() is None and time.time() < deadline:
            # (nginx logs a refused bind at once, then tries again for 2 s)
            taken = "Address already in use" in log.read_text()
            if taken or _up(base):
                break
            time.sleep(0.05)
        if not taken:
            break
        proc.kill()
        proc.wait()
    try:
        wait_for(lambda: _up(base), what="nginx")
        yield base, www
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _up(base):
    try:
        # nginx itself, not whoever else may hold the port
        return requests.get(base + "/", timeout=1).headers.get("Server", "").startswith("nginx")
    except requests.RequestException:
        return False


# Range values that are not valid byte-range syntax (also in the unit-test
# table behind range_vs_nginx.sh, marked as intentional differences).
INVALID_SYNTAX = ("bytes=5-2", "bytes=abc")


def test_ranges_match_nginx(vt, datadir, nginx):
    """The same file from nginx and from us: the same status, Content-Range,
    Content-Length and bytes for every Range, except multi-range, where nginx
    answers a multipart/byteranges 206 and we answer the whole file with 200
    (the spec: several ranges give the full 200), and invalid Range syntax,
    which nginx answers 416 and we ignore (200), as RFC 9110 asks."""
    base, www = nginx
    s = start(vt, datadir)
    full = s.get(P).content
    (www / "t.parquet").write_bytes(full)
    total = len(full)
    ranges = ["bytes=0-0", "bytes=0-99", "bytes=100-", "bytes=-8", "bytes=-1",
              f"bytes=-{total}", f"bytes=-{total + 7}", f"bytes={total - 1}-",
              f"bytes=10-{total * 2}", f"bytes={total}-", f"bytes={total + 1}-{total + 9}",
              "bytes=-0", "bytes=5-2", "bytes=abc", "items=0-4", "bytes=0-1,5-9",
              "bytes=0-10, 20-30", None]
    rows = []
    for value in ranges:
        headers = {"Range": value} if value else {}
        ours = requests.get(s.url(P), headers=headers, timeout=30)
        theirs = requests.get(base + "/t.parquet", headers=headers, timeout=30)
        row = (value, ours.status_code, theirs.status_code, ours.headers.get("Content-Range"),
               theirs.headers.get("Content-Range"))
        rows.append(row)
        if value and "," in value:
            # intentional: several ranges give the whole file (nginx: multipart)
            assert ours.status_code == 200 and ours.content == full
            assert theirs.status_code == 206
            assert theirs.headers["Content-Type"].startswith("multipart/byteranges")
            continue
        if value in INVALID_SYNTAX:
            # intentional: an invalid Range is ignored (RFC 9110 14.2); nginx 416
            assert ours.status_code == 200 and ours.content == full
            assert theirs.status_code == 416
            continue
        assert ours.status_code == theirs.status_code, row
        assert ours.headers.get("Content-Range") == theirs.headers.get("Content-Range"), row
        if ours.status_code in (200, 206):
            assert ours.headers["Content-Length"] == theirs.headers["Content-Length"], row
            assert ours.content == theirs.content, row
            assert ours.headers["Accept-Ranges"] == "bytes"
            if ours.status_code == 200:  # (nginx sends it on 200 only)
                assert theirs.headers["Accept-Ranges"] == "bytes"
    # HEAD with a Range, intentional: RFC 9110 14.2 defines ranges for GET
    # only, so we answer the full 200 headers; nginx answers as for GET (206)
    ours = requests.head(s.url(P), headers={"Range": "bytes=0-5"}, timeout=30)
    theirs = requests.head(base + "/t.parquet", headers={"Range": "bytes=0-5"}, timeout=30)
    assert (ours.status_code, ours.headers["Content-Length"]) == (200, str(total))
    assert "Content-Range" not in ours.headers
    assert (theirs.status_code, theirs.headers["Content-Range"]) == (206, f"bytes 0-5/{total}")
    # and without a Range, HEAD agrees
    ours = requests.head(s.url(P), timeout=30)
    theirs = requests.head(base + "/t.parquet", timeout=30)
    assert (ours.status_code, ours.headers["Content-Length"], ours.headers["Content-Type"]) == \
        (theirs.status_code, theirs.headers["Content-Length"], theirs.headers["Content-Type"])
    print("\n".join(map(str, rows)))
