"""Prometheus metrics ([metrics] enabled, metrics.path outside the prefix, no
authentication): the text passes `promtool check metrics`, values match the
traffic sent (counts, histogram counts equal to the counters, error codes by
route), labels stay bounded under 10,000 random 404 paths, dataset, refresh,
export, pool and process families are there, and a scrape of 100 datasets
costs under a millisecond of server time."""
import http.client
import random
import re
import shutil
import subprocess
import time

import pytest
import requests

from conftest import dataset_block, server_block, write_parquet

PROMTOOL = shutil.which("promtool")


def parse(text):
    """{(name, frozenset(labels)): value} and the HELP/TYPE names."""
    samples = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$', line)
        assert m, line
        labels = frozenset(re.findall(r'([a-zA-Z_]+)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
        key = (m.group(1), labels)
        assert key not in samples, f"duplicate series {line}"
        samples[key] = float(m.group(4))
    return samples


def val(samples, name, **labels):
    return samples.get((name, frozenset(labels.items())))


def series(samples, name):
    return {k[1]: v for k, v in samples.items() if k[0] == name}


def promtool_check(text):
    assert PROMTOOL, "promtool (Debian package prometheus) is needed: scripts/install-deps.sh"
    r = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def scrape(s, path="/metrics"):
    r = requests.get(s.base + path, timeout=30)
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
    return r.text


def test_disabled_by_default(vt):
    s = vt(server_block())
    assert requests.get(s.base + "/metrics", timeout=10).status_code == 404


def test_outside_prefix_and_unauthenticated(vt, datadir):
    s = vt(server_block(prefix="/svc") + '[metrics]\nenabled = true\npath = "/ops/metrics"\n',
           env={"ADMIN_TOKEN": "s3cret"})
    text = scrape(s, "/ops/metrics")
    assert "vitrine_build_info" in text
    # not under the prefix, nor at the default path
    assert requests.get(s.base + "/svc/ops/metrics", timeout=10).status_code == 404
    assert requests.get(s.base + "/metrics", timeout=10).status_code == 404
    promtool_check(text)
    v = requests.get(s.url("/version"), timeout=10).json()
    info = series(parse(text), "vitrine_build_info")
    (labels, one), = info.items()
    assert one == 1
    labels = dict(labels)
    assert labels["version"] == v["version"] and labels["backend"] == "duckdb"
    assert labels["git_sha"] == v.get("git_sha", "")
    # gzip when asked (Prometheus asks)
    r = requests.get(s.base + "/ops/metrics", headers={"Accept-Encoding": "gzip"}, timeout=10)
    assert r.headers.get("Content-Encoding") == "gzip" and "vitrine_build_info" in r.text


def test_values_after_known_traffic(vt, datadir):
    write_parquet(datadir / "t.parquet",
                  "SELECT range AS id, 'c' || (range % 7) AS cat FROM range(5000)")
    s = vt(server_block(max_body_bytes=4096) + "[metrics]\nenabled = true\n"
           + dataset_block("t", datadir / "t.parquet"), env={"ADMIN_TOKEN": "tok"})
    before = parse(scrape(s))
    sess = requests.Session()
    for _ in range(37):
        assert sess.get(s.url("/healthz")).status_code == 200
    for i in range(11):
        r = sess.post(s.url("/api/v1/datasets/t/query"),
                      json={"predicates": [{"col": "cat", "op": "eq", "val": f"c{i % 7}"}],
                            "page_size": 3})
        assert r.status_code == 200
    for _ in range(5):
        assert sess.post(s.url("/api/v1/datasets/t/count"), json={}).status_code == 200
    for _ in range(3):
        r = sess.post(s.url("/api/v1/datasets/t/query"), json={"columns": ["nope"]})
        assert r.status_code == 400
    for _ in range(2):
        assert sess.get(s.url("/api/v1/datasets/none/status")).status_code == 404
    big = b'{"columns":["' + b"x" * 8000 + b'"]}'
    r = requests.post(s.url("/api/v1/datasets/t/query"), data=big,
                      headers={"Content-Type": "application/json"}, timeout=10)
    assert r.status_code == 413
    assert requests.get(s.url("/no/such/route"), timeout=10).status_code == 404
    r = requests.get(s.url("/api/v1/datasets/t/parquet"), timeout=30)
    assert r.status_code == 200 and r.content[:4] == b"PAR1"
    r = sess.post(s.url("/api/v1/datasets/t/reload"), headers={"X-Admin-Token": "tok"})
    assert r.status_code == 200, r.text
    text = scrape(s)
    promtool_check(text)
    m = parse(text)

    def delta(name, **labels):
        return (val(m, name, **labels) or 0) - (val(before, name, **labels) or 0)

    q = "/api/v1/datasets/{name}/query"
    assert delta("vitrine_http_requests_total", route="/healthz", method="GET", status="200") == 37
    assert delta("vitrine_http_requests_total", route=q, method="POST", status="200") == 11
    assert delta("vitrine_http_requests_total", route=q, method="POST", status="400") == 3
    assert delta("vitrine_http_requests_total", route=q, method="POST", status="413") == 1
    assert delta("vitrine_http_requests_total", route="/api/v1/datasets/{name}/count",
                 method="POST", status="200") == 5
    assert delta("vitrine_http_requests_total", route="/api/v1/datasets/{name}/status",
                 method="GET", status="404") == 2
    assert delta("vitrine_http_requests_total", route="unmatched", method="GET",
                 status="404") == 1
    assert delta("vitrine_http_errors_total", route=q, code="unknown_column", status="400") == 3
    assert delta("vitrine_http_errors_total", route=q, code="body_too_large", status="413") == 1
    assert delta("vitrine_http_errors_total", route="/api/v1/datasets/{name}/status",
                 code="dataset_not_found", status="404") == 2
    # a histogram's _count equals the requests counted for its route and method
    reqs = series(m, "vitrine_http_requests_total")
    for labels, count in series(m, "vitrine_http_request_duration_seconds_count").items():
        d = dict(labels)
        total = sum(v for ls, v in reqs.items()
                    if dict(ls)["route"] == d["route"] and dict(ls)["method"] == d["method"])
        assert count == total, (d, count, total)
        inf = val(m, "vitrine_http_request_duration_seconds_bucket", le="+Inf", **d)
        assert inf == count
        assert val(m, "vitrine_http_request_duration_seconds_sum", **d) > 0
    assert delta("vitrine_http_response_bytes_total", route="/healthz", method="GET") == \
        37 * len('{"status":"ok"}')
    assert val(m, "vitrine_http_requests_in_flight") >= 1
    # datasets
    assert val(m, "vitrine_datasets") == 1
    assert val(m, "vitrine_dataset_rows", dataset="t") == 5000
    assert val(m, "vitrine_dataset_state", dataset="t", state="published") == 1
    assert val(m, "vitrine_dataset_state", dataset="t", state="failed") == 0
    assert val(m, "vitrine_dataset_refresh_total", dataset="t", trigger="startup",
               outcome="success") == 1
    assert val(m, "vitrine_dataset_refresh_total", dataset="t", trigger="manual",
               outcome="success") == 1
    assert val(m, "vitrine_dataset_refresh_duration_seconds_count", trigger="manual") == 1
    assert 0 <= val(m, "vitrine_dataset_generation_age_seconds", dataset="t") < 60
    assert val(m, "vitrine_dataset_source_bytes", dataset="t", residency="memory") == \
        (datadir / "t.parquet").stat().st_size
    # the reloaded generation's index is built in the background
    deadline = time.time() + 30
    while val(parse(scrape(s)), "vitrine_dataset_index_bytes", dataset="t") == 0:
        assert time.time() < deadline, "index never built"
        time.sleep(0.1)
    assert val(m, "vitrine_parquet_export_builds_total", outcome="success") == 1
    assert val(m, "vitrine_parquet_export_written_bytes_total") > 0
    # engine, DuckDB, process
    assert val(m, "vitrine_pool_workers", pool="query") >= 1
    assert val(m, "vitrine_pool_busy_workers", pool="query") == 0
    assert val(m, "vitrine_pool_queued_jobs", pool="query") == 0
    assert val(m, "vitrine_exec_plan_cache_misses_total") >= 1  # the count ran as SQL
    assert val(m, "vitrine_exec_plan_cache_hits_total") >= 1
    # sampled every second (a query on a connection of its own)
    deadline = time.time() + 10
    while not val(parse(scrape(s)), "vitrine_duckdb_memory_bytes"):
        assert time.time() < deadline, "DuckDB memory never sampled"
        time.sleep(0.1)
    status = open(f"/proc/{s.proc.pid}/status").read()
    rss = int(re.search(r"VmRSS:\s+(\d+)", status).group(1)) * 1024
    assert abs(val(m, "process_resident_memory_bytes") - rss) < 64 * 1024 * 1024
    threads = int(re.search(r"Threads:\s+(\d+)", status).group(1))
    assert abs(val(m, "vitrine_process_threads") - threads) <= 4
    import os
    fds = len(os.listdir(f"/proc/{s.proc.pid}/fd"))
    assert abs(val(m, "process_open_fds") - fds) <= 4
    assert abs(val(m, "process_start_time_seconds") - time.time()) < 300


def test_cardinality_bounded_under_random_404s(vt):
    s = vt(server_block() + "[metrics]\nenabled = true\n")
    conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=30)
    conn.request("GET", "/nothing-here")
    conn.getresponse().read()
    first = parse(scrape(s))
    rnd = random.Random(7)
    for i in range(10000):
        path = "/" + "/".join("".join(rnd.choice("abcdefxyz0123%._-") .replace("%", "%25")
                                      for _ in range(rnd.randint(1, 12)))
                              for _ in range(rnd.randint(1, 4)))
        method = rnd.choice(["GET", "POST", "DELETE", "PUT"])
        conn.request(method, path, body=b"" if method != "GET" else None)
        r = conn.getresponse()
        r.read()
        assert r.status in (404, 405), (path, r.status)
    conn.close()
    text = scrape(s)
    promtool_check(text)
    after = parse(text)
    http_series = {k for k in after if k[0].startswith("vitrine_http")}
    # one "unmatched" row per method at most: the raw paths never become labels
    assert len(http_series) < 200, len(http_series)
    assert not any("nothing" in v or "%" in v for k in after for _, v in k[1])
    total = sum(v for ls, v in series(after, "vitrine_http_requests_total").items()
                if dict(ls)["route"] == "unmatched")
    assert total == 10001
    assert len(text) < 64 * 1024


@pytest.mark.serial
def test_scrape_of_100_datasets_under_a_millisecond(vt, datadir):
    write_parquet(datadir / "x.parquet", "SELECT range AS id FROM range(10)")
    blocks = "".join(dataset_block(f"ds_{i:03d}", datadir / "x.parquet", **{"index.mode": "none"})
                     for i in range(100))
    s = vt(server_block() + '[metrics]\nenabled = true\npath = "/m"\n' + blocks, timeout=120)
    version = requests.get(s.url("/version"), timeout=10).json()
    sess = requests.Session()
    # The scrape's own cost, uncompressed: gzip (level 1) of the ~90 KB text
    # adds about 0.5 ms more here, a cost of the bytes, not of the scrape
    # (measured 0.44-0.51 ms identity, 0.90-0.99 ms gzip on an idle machine).
    sess.headers["Accept-Encoding"] = "identity"
    text = sess.get(s.base + "/m", timeout=30).text
    promtool_check(text)
    m = parse(text)
    assert len(series(m, "vitrine_dataset_rows")) == 100
    assert all(v == 10 for v in series(m, "vitrine_dataset_rows").values())
    n = 20
    key = dict(route="/m", method="GET")

    def batch_ms():
        """The mean server time of one scrape over a batch of n."""
        before = parse(sess.get(s.base + "/m", timeout=30).text)
        for _ in range(n):
            assert sess.get(s.base + "/m", timeout=30).status_code == 200
        after = parse(sess.get(s.base + "/m", timeout=30).text)
        secs = (val(after, "vitrine_http_request_duration_seconds_sum", **key)
                - val(before, "vitrine_http_request_duration_seconds_sum", **key))
        count = (val(after, "vitrine_http_request_duration_seconds_count", **key)
                 - val(before, "vitrine_http_request_duration_seconds_count", **key))
        assert count == n + 1
        return secs / count * 1000

    # The best of eight short batches: one preemption of the server thread
    # by a neighbour (tens of ms) lifts a batch's mean past the bound on a
    # shared machine (at load 10-16 three batches of 50 read 1.3-3 ms); a
    # scrape that is really slow is slow in every batch.
    per_scrape_ms = min(batch_ms() for _ in range(8))
    # The request's whole server time (routing, the scrape, compression
    # choice, queueing the reply). Sanitizer builds run several times slower.
    limit = 1.0 if version["profile"] == "release" else 8.0
    assert per_scrape_ms < limit, per_scrape_ms


def test_plan_cache_binds_new_values_evicts_and_follows_generations(vt, datadir):
    """Issue 18 item 1: on the SQL path (index.mode none) the same request
    shape with new values reuses the worker's prepared statement (one miss,
    then hits); a new shape prepares; past the LRU bound (64 per worker) the
    least recently used plan is evicted and counted; a reload prepares anew
    on the new generation. One worker, so one cache."""
    write_parquet(datadir / "t.parquet",
                  "SELECT range AS id, 'c' || (range % 7) AS cat FROM range(5000)")
    s = vt(server_block(workers=1) + "[metrics]\nenabled = true\n"
           + dataset_block("t", datadir / "t.parquet", **{"index.mode": "none"}),
           env={"ADMIN_TOKEN": "tok"})
    sess = requests.Session()
    q = s.url("/api/v1/datasets/t/query")

    def page(cat, size=3):
        r = sess.post(q, json={"predicates": [{"col": "cat", "op": "eq", "val": cat}],
                               "page_size": size})
        assert r.status_code == 200, r.text
        rows = r.json()["data"]
        assert len(rows) == size and all(x["cat"] == cat for x in rows), rows
        return rows

    def stats():
        m = parse(scrape(s))
        return tuple(val(m, "vitrine_exec_plan_cache_%s_total" % k)
                     for k in ("hits", "misses", "evictions"))

    h0, m0, e0 = stats()
    for i in range(20):
        page(f"c{i % 7}")
    h1, m1, e1 = stats()
    assert (h1 - h0, m1 - m0, e1 - e0) == (19, 1, 0), (h0, m0, e0, h1, m1, e1)
    # 70 other shapes (LIMIT differs): 70 misses, the bound of 64 evicts 7
    for n in range(4, 74):
        page("c1", n)
    h2, m2, e2 = stats()
    assert (h2 - h1, m2 - m1, e2 - e1) == (0, 70, 7), (h1, m1, e1, h2, m2, e2)
    # the first shape was the least recently used: evicted, prepared again
    page("c2")
    page("c3")
    h3, m3, _ = stats()
    assert (h3 - h2, m3 - m2) == (1, 1), (h2, m2, h3, m3)
    # a new generation: its plan is prepared on it (never the old one's), then
    # reused. The old generation is dropped when its last reader lets go,
    # which may come after the first request: that clears the cache once
    # (one more miss), never more.
    r = sess.post(s.url("/api/v1/datasets/t/reload"), headers={"X-Admin-Token": "tok"})
    assert r.status_code == 200, r.text
    page("c4")
    h4, m4, _ = stats()
    assert (h4 - h3, m4 - m3) == (0, 1), (h3, m3, h4, m4)
    for _ in range(20):
        page("c5")
        h5, m5, _ = stats()
        if h5 > h4:
            break
        time.sleep(0.05)
    assert h5 > h4 and m5 - m4 <= 1, (h4, m4, h5, m5)
