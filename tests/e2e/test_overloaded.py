"""The engine refusing work when its queue is full: 503 `unavailable` through
real HTTP, with Retry-After and X-Request-Id, and the server serving again
once the queue drains. The limit is per job class: a full queue of streams
leaves pages, counts and group bys their own queues. And the engine's
accounting by class: the metrics'
vitrine_engine_jobs_* gauges and vitrine_engine_job_{wait,run}_seconds
histograms (valid for promtool; they move by one per request of their
class).

The state is built, not hoped for: one query worker (so one stream-lane
thread) and server.max_queued_jobs = 1. A first stream whose client never
reads holds the stream worker (a stream is paced by its client: the worker
waits once the socket buffers and the server's few queued batches are full;
the result is far larger than those). A second stream waits in the queue. The
test polls /metrics until it sees exactly that (one busy worker, one queued
job), then asks once more: the queue is full, the answer is 503 at once.
Closing the first client's socket ends its stream (the client is gone), the
queued one runs and is closed too, and the server answers 200 again. No
sleeps: every step polls for the state it needs, so a fast, a loaded and an
ASan machine go through the same states.
"""
import re
import shutil
import socket
import subprocess
import time

import pytest
import requests

from conftest import Server, dataset_block, server_block, write_parquet

STREAM = "/api/v1/datasets/big/query/stream"
ROWS = 1_000_000  # ~15 MB as Arrow, ~40 MB as NDJSON: more than any socket buffers hold


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    d = tmp_path_factory.mktemp("overloaded")
    big = write_parquet(d / "big.parquet",
                        "SELECT i, 'row ' || i AS s, i %% 10 AS g FROM range(%d) t(i)" % ROWS)
    cfg = server_block(workers=1, max_queued_jobs=1, request_timeout_ms=0)
    cfg += "[metrics]\nenabled = true\n" + dataset_block("big", big)
    s = Server(d, cfg)
    s.start()
    s.wait_ready()
    yield s
    assert s.stop() == 0
    log = s.log()
    assert "ERROR: AddressSanitizer" not in log and "runtime error:" not in log, log[-4000:]


def pool_state(s):
    """(busy workers, queued jobs) of the query pool, from /metrics."""
    text = s.get("/metrics", timeout=10).text

    def gauge(name):
        m = re.search(r'^%s\{pool="query"\} (\d+)' % name, text, re.M)
        assert m, f"no {name} for the query pool:\n{text[:3000]}"
        return int(m.group(1))

    return gauge("vitrine_pool_busy_workers"), gauge("vitrine_pool_queued_jobs")


def wait_state(s, want, timeout=60):
    deadline = time.monotonic() + timeout
    got = pool_state(s)
    while got != want and time.monotonic() < deadline:
        time.sleep(0.02)
        got = pool_state(s)
    assert got == want, f"query pool (busy, queued) = {got}, waited for {want}\n{s.log()[-3000:]}"


def held_stream(s):
    """A stream request on a socket that is never read: its job holds a
    worker (or waits for one) until the socket is closed."""
    c = socket.socket()
    # A small receive window, so the server's writes stall sooner.
    c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    c.connect(("127.0.0.1", s.port))
    body = b"{}"
    c.sendall((f"POST {s.prefix}{STREAM} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
               f"Accept: application/x-ndjson\r\nContent-Type: application/json\r\n"
               f"Content-Length: {len(body)}\r\n\r\n").encode() + body)
    return c


def test_a_full_queue_answers_503_unavailable(srv):
    wait_state(srv, (0, 0))
    first = held_stream(srv)
    second = None
    try:
        wait_state(srv, (1, 0))   # the stream worker is held by the first
        second = held_stream(srv)
        wait_state(srv, (1, 1))   # the second waits: the queue is full
        # (streams: always a worker's job, never answered inline)
        for rid in ("overload-check-1", None):
            r = srv.post(STREAM, {}, headers={"X-Request-Id": rid} if rid else {})
            assert r.status_code == 503, (r.status_code, r.text[:300])
            assert r.json()["code"] == "unavailable", r.text
            assert "overloaded" in r.json()["error"], r.text
            assert r.headers.get("Retry-After") == "2", r.headers
            assert r.headers["Content-Type"].startswith("application/json"), r.headers
            if rid:
                assert r.headers.get("X-Request-Id") == rid, r.headers
            else:
                assert re.fullmatch(r"[0-9a-z]+-[0-9a-z]+", r.headers.get("X-Request-Id", "")), \
                    r.headers
        assert pool_state(srv) == (1, 1)  # refused ones never queued
    finally:
        first.close()
        if second is not None:
            second.close()
    # The client gone, its stream ends; the queued one runs and ends too.
    wait_state(srv, (0, 0))
    r = srv.post("/api/v1/datasets/big/count", {})
    assert r.status_code == 200 and r.json() == {"count": ROWS}, r.text
    r = srv.post("/api/v1/datasets/big/query",
                 {"order_by": [{"col": "i", "dir": "desc"}], "page_size": 2})
    assert r.status_code == 200 and [x["i"] for x in r.json()["data"]] == [ROWS - 1, ROWS - 2]
    # The refusal is logged under the client's request id, which it echoed.
    line = [l for l in srv.log().splitlines() if "overload-check-1" in l]
    assert line and "503 unavailable" in line[0], line


# One request of each class (exec_job_class): a count the index does not
# answer (a LIKE) is SHORT, a group by of the 1M rows LONG, a stream STREAM.
COUNT = ("/api/v1/datasets/big/count",
         {"predicates": [{"col": "s", "op": "like", "val": "row 1%"}]}, 111111)
GROUP_BY = ("/api/v1/datasets/big/query",
            {"group_by": ["g"], "aggregations": [{"op": "count"}]})
SMALL_STREAM = (STREAM, {"predicates": [{"col": "i", "op": "lt", "val": 100}]})


def test_a_full_stream_queue_leaves_the_other_classes_their_queues(srv):
    """server.max_queued_jobs is per class: one stream running and one
    queued fill the stream queue, and a count, a page and a group by are
    still answered (before, the queued stream made them 503 while their
    lanes were idle)."""
    wait_state(srv, (0, 0))
    first = held_stream(srv)
    second = None
    try:
        wait_state(srv, (1, 0))
        second = held_stream(srv)
        wait_state(srv, (1, 1))
        jobs = {(fam, cls): v for (fam, cls), v in job_series(srv.get("/metrics").text).items()
                if fam in ("vitrine_engine_jobs_queued", "vitrine_engine_jobs_running")}
        assert jobs == {("vitrine_engine_jobs_queued", "short"): 0,
                        ("vitrine_engine_jobs_running", "short"): 0,
                        ("vitrine_engine_jobs_queued", "long"): 0,
                        ("vitrine_engine_jobs_running", "long"): 0,
                        ("vitrine_engine_jobs_queued", "stream"): 1,
                        ("vitrine_engine_jobs_running", "stream"): 1}, jobs
        r = srv.post(STREAM, {})
        assert r.status_code == 503 and r.json()["code"] == "unavailable", r.text[:300]
        path, body, want = COUNT
        r = srv.post(path, body)
        assert r.status_code == 200 and r.json() == {"count": want}, r.text[:300]
        r = srv.post(*GROUP_BY)
        assert r.status_code == 200 and len(r.json()["data"]) == 10, r.text[:300]
        r = srv.post("/api/v1/datasets/big/query",
                     {"predicates": [{"col": "s", "op": "like", "val": "row 7%"}],
                      "page_size": 2})
        assert r.status_code == 200 and [x["i"] for x in r.json()["data"]] == [7, 70], r.text
        assert pool_state(srv) == (1, 1)
    finally:
        first.close()
        if second is not None:
            second.close()
    wait_state(srv, (0, 0))


def job_series(text):
    """{(family, class): value} of the query pool's job families."""
    out = {}
    for m in re.finditer(r'^(vitrine_engine_job\w*)\{pool="query",class="(\w+)"(?:,le="([^"]+)")?\}'
                         r' (\S+)$', text, re.M):
        name = m.group(1) + ("{le=%s}" % m.group(3) if m.group(3) else "")
        out[(name, m.group(2))] = float(m.group(4))
    return out


def test_job_wait_and_run_by_class(srv):
    """The families exist for every class, pass promtool, the buckets are
    cumulative up to +Inf == _count, and each request moves its own class's
    counts by one (polled: a job counts as ended just after it answered)."""
    promtool = shutil.which("promtool")
    assert promtool, "promtool (Debian package prometheus) is needed: scripts/install-deps.sh"
    wait_state(srv, (0, 0))
    text = srv.get("/metrics").text
    r = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    for fam in ("vitrine_engine_jobs_queued", "vitrine_engine_jobs_running",
                "vitrine_engine_job_wait_seconds", "vitrine_engine_job_run_seconds"):
        kind = "gauge" if "jobs_" in fam else "histogram"
        assert f"# TYPE {fam} {kind}" in text, fam
    before = job_series(text)
    for cls in ("short", "long", "stream"):
        assert before[("vitrine_engine_jobs_queued", cls)] == 0
        assert before[("vitrine_engine_jobs_running", cls)] == 0
        for h in ("wait", "run"):
            fam = f"vitrine_engine_job_{h}_seconds"
            buckets = [v for (n, c), v in before.items()
                       if c == cls and n.startswith(fam + "_bucket")]
            assert len(buckets) == 19 and buckets == sorted(buckets), (cls, h, buckets)
            assert before[(fam + "_bucket{le=+Inf}", cls)] == before[(fam + "_count", cls)]

    def counts():
        s = job_series(srv.get("/metrics").text)
        return {(h, c): s[(f"vitrine_engine_job_{h}_seconds_count", c)]
                for h in ("wait", "run") for c in ("short", "long", "stream")}

    def wait_counts(want):
        deadline = time.monotonic() + 60
        got = counts()
        while got != want and time.monotonic() < deadline:
            time.sleep(0.02)
            got = counts()
        assert got == want, (got, want)

    c = counts()
    steps = [("short", lambda: srv.post(COUNT[0], COUNT[1])),
             ("long", lambda: srv.post(*GROUP_BY)),
             ("stream", lambda: srv.post(*SMALL_STREAM, headers={"Accept": "application/x-ndjson"}))]
    for cls, send in steps:
        r = send()
        assert r.status_code == 200, r.text[:300]
        c[("wait", cls)] += 1
        c[("run", cls)] += 1
        wait_counts(c)
    if cls == "stream":
        assert len(r.text.splitlines()) == 100
    after = job_series(srv.get("/metrics").text)
    for cls in ("short", "long", "stream"):
        assert after[("vitrine_engine_job_run_seconds_sum", cls)] > \
            before[("vitrine_engine_job_run_seconds_sum", cls)], cls


def test_the_queue_cap_is_validated(tmp_path):
    """max_queued_jobs is 1..4096 (the compiled cap, VT_MAX_PENDING_JOBS)."""
    import subprocess

    from conftest import VITRINE
    for bad in ("0", "4097", '"x"'):
        p = tmp_path / f"c{len(bad)}.toml"
        p.write_text(f"[server]\nmax_queued_jobs = {bad}\n")
        out = subprocess.run([str(VITRINE), "check-config", str(p)], capture_output=True,
                             text=True)
        assert out.returncode != 0 and "max_queued_jobs" in out.stdout + out.stderr, out
