"""Atomic reload under load (spec: hot reload is atomic for readers; rule 9:
every row set is delivered against a snapshot).

Two versions of a dataset whose rows carry a version marker column `v`
(v = 1 in every row of version 1, v = 2 in version 2) and have different row
counts. A resident dataset and a lazy one are served while several threads
query them (paged JSON, paged Arrow, Arrow streams, /count, the Parquet
export) and reloaders rewrite the source file (vt-sql to a temp name, then a
rename into place) and reload it many times, alternating versions; another
thread fires overlapping reloads (409 busy is fine for reloaders only).

Checks: every query response is 200; it holds rows of exactly one version and
exactly that version's row count (or page size); counts equal one version's
count; every Parquet export reads back (DuckDB) as exactly one version. Each
response names its generation (X-Dataset-Refreshed-At); a status poller maps
generations to the version they were built from (status rows), and every
response must come from the version of the generation it names. Afterwards:
no error in the server log, every generation but the current ones dropped
(the janitor's log lines, the export directory, the lazy generation_id), and
RSS stays flat across many more reloads.
"""
import collections
import json
import os
import random
import re
import shutil
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest
import requests

from conftest import dataset_block, server_block, sql

HERE = Path(__file__).resolve().parent
SUMMARY = HERE / "arrow" / "column_summary.mjs"
TOKEN = "atomicity-token"
ADMIN = {"X-Admin-Token": TOKEN}
ROWS = {1: 50_000, 2: 80_000}
BY_ROWS = {n: v for v, n in ROWS.items()}
LOAD_SECONDS = float(os.environ.get("VT_ATOMICITY_SECONDS", "5"))
LOAD_THREADS = 5
MIN_RELOADS = 10
MEMORY_RELOADS = int(os.environ.get("VT_ATOMICITY_RELOADS", "30"))


def version_select(v):
    return (f"SELECT range AS id, {v} AS v, 'c' || (range % 5) AS cat, range * 0.5 AS x, "
            f"'pad-' || range AS pad FROM range({ROWS[v]})")


def write_version(path, v):
    """vt-sql writes the version to a temp name beside `path`; a rename puts
    it in place (a reader never sees a half-written file)."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    sql(f"COPY ({version_select(v)}) TO '{tmp}' (FORMAT parquet)")
    os.replace(tmp, path)


def copy_version(src, path):
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    shutil.copyfile(src, tmp)
    os.replace(tmp, path)


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


class Load:
    """Shared state of one load run."""

    def __init__(self, s, datasets, workdir):
        self.s = s
        self.datasets = datasets
        self.workdir = workdir
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.errors = []          # anything that must not happen
        self.results = []         # (dataset, kind, refreshed_at, version or None, detail)
        self.arrow = []           # (dataset, kind, refreshed_at, path, expectation)
        self.exports = []         # (dataset, refreshed_at, path)
        self.generations = {}     # (dataset, refreshed_at) -> rows seen in status
        self.reloads = collections.Counter()
        self.conflicts = 0

    def error(self, msg):
        with self.lock:
            self.errors.append(msg)

    def result(self, *rec):
        with self.lock:
            self.results.append(rec)


QUERIES = [
    # (name, body, check(data) -> version)
    ("page", lambda rng: {"columns": ["v", "id"], "page": rng.randint(1, 50), "page_size": 1000}),
    ("index_eq", lambda rng: {"predicates": [{"col": "cat", "op": "eq", "val": "c%d" % rng.randint(0, 4)}],
                              "columns": ["v"], "page_size": 100000}),
    ("group", lambda rng: {"group_by": ["v"]}),
    ("desc", lambda rng: {"columns": ["v", "id"], "order_by": [{"col": "id", "dir": "desc"}],
                          "page_size": 100000, "limit": 60000}),
]


def one_version(vs, what):
    vs = set(vs)
    assert len(vs) == 1, f"{what}: rows of versions {sorted(vs)}"
    v = vs.pop()
    assert v in ROWS, f"{what}: unknown version {v}"
    return v


def check_json(name, body, data):
    """The version of a JSON page, after checking it is whole."""
    if name == "group":
        assert len(data) == 1, data
        v = data[0]["v"]
        assert data[0] == {"v": v, "count": ROWS[v]}, data
        return v
    v = one_version((r["v"] for r in data), name)
    n = len(data)
    if name == "page":
        assert n == 1000, (name, body, n)
    elif name == "index_eq":
        assert n == ROWS[v] // 5, (name, v, n)
    elif name == "desc":
        assert n == min(60000, ROWS[v]), (name, v, n)
        assert data[0]["id"] == ROWS[v] - 1, (name, v, data[0])
    return v


def query_worker(load, seed):
    rng = random.Random(seed)
    session = requests.Session()
    s = load.s
    k = 0
    while not load.stop.is_set():
        ds = rng.choice(load.datasets)
        base = s.url(f"/api/v1/datasets/{ds}")
        kind = rng.choice(["json", "json", "json", "arrow", "stream", "count", "count"])
        k += 1
        try:
            if kind == "json":
                name, make = rng.choice(QUERIES)
                body = make(rng)
                r = session.post(base + "/query", json=body, timeout=60)
                if r.status_code != 200:
                    load.error(f"{ds} query {body}: {r.status_code} {r.text[:300]}")
                    continue
                v = check_json(name, body, r.json()["data"])
                load.result(ds, "json:" + name, r.headers.get("X-Dataset-Refreshed-At"), v, body)
            elif kind == "count":
                pred = rng.random() < 0.5
                body = {"predicates": [{"col": "cat", "op": "in", "val": ["c1", "c2"]}]} if pred else {}
                r = session.post(base + "/count", json=body, timeout=60)
                if r.status_code != 200:
                    load.error(f"{ds} count {body}: {r.status_code} {r.text[:300]}")
                    continue
                n = r.json()["count"]
                v = next((v for v, rows in ROWS.items() if n == (2 * rows // 5 if pred else rows)), None)
                assert v is not None, f"{ds} count {body} = {n}: no version has that many rows"
                load.result(ds, "count", r.headers.get("X-Dataset-Refreshed-At"), v, body)
            else:
                if kind == "arrow":
                    body = {"columns": ["v", "id"], "page": rng.randint(1, 10), "page_size": 5000}
                    r = session.post(base + "/query?format=arrow", json=body, timeout=60)
                elif rng.random() < 0.5:
                    body = {"columns": ["v"]}
                    r = session.post(base + "/query/stream", json=body, timeout=60)
                else:
                    body = {"columns": ["v", "id"], "limit": 25000,
                            "predicates": [{"col": "cat", "op": "in", "val": ["c1", "c2"]}]}
                    r = session.post(base + "/query/stream", json=body, timeout=60)
                if r.status_code != 200:
                    load.error(f"{ds} {kind} {body}: {r.status_code} {r.text[:300]}")
                    continue
                path = load.workdir / f"{seed}-{k}.arrow"
                path.write_bytes(r.content)
                with load.lock:
                    load.arrow.append((ds, kind, r.headers.get("X-Dataset-Refreshed-At"), path, body))
        except requests.RequestException as e:
            load.error(f"{ds} {kind}: request failed: {e!r}")
        except Exception as e:  # noqa: BLE001 - any failure is an error of the run
            load.error(f"{ds} {kind}: {e!r}")


def export_worker(load, seed):
    """Downloads the Parquet export whole, or in two ranges the way a client
    resumes (If-Range with the first part's ETag: a reload in between gives
    the whole new file, 200, never a splice of two generations)."""
    rng = random.Random(seed)
    session = requests.Session()
    k = 0
    while not load.stop.is_set():
        ds = rng.choice(load.datasets)
        url = load.s.url(f"/api/v1/datasets/{ds}/parquet")
        k += 1
        try:
            if rng.random() < 0.5:
                r = session.get(url, timeout=60)
                if r.status_code != 200:
                    load.error(f"{ds} parquet: {r.status_code} {r.text[:300]}")
                    continue
                kind, etag, content = "parquet", r.headers["ETag"], r.content
            else:
                r1 = session.get(url, headers={"Range": "bytes=0-65535"}, timeout=60)
                if r1.status_code != 206:
                    load.error(f"{ds} parquet range: {r1.status_code} {r1.text[:300]}")
                    continue
                etag = r1.headers["ETag"]
                time.sleep(rng.uniform(0, 0.2))
                r2 = session.get(url, headers={"Range": "bytes=65536-", "If-Range": etag}, timeout=60)
                if r2.status_code == 206:
                    if r2.headers["ETag"] != etag:
                        load.error(f"{ds} parquet resume: 206 with ETag {r2.headers['ETag']} for If-Range {etag}")
                        continue
                    kind, content = "parquet-resumed", r1.content + r2.content
                elif r2.status_code == 200:
                    if r2.headers["ETag"] == etag:
                        load.error(f"{ds} parquet resume: 200 for a matching If-Range {etag}")
                        continue
                    kind, etag, content = "parquet-restarted", r2.headers["ETag"], r2.content
                else:
                    load.error(f"{ds} parquet resume: {r2.status_code} {r2.text[:300]}")
                    continue
        except requests.RequestException as e:
            load.error(f"{ds} parquet: request failed: {e!r}")
            continue
        path = load.workdir / f"export-{seed}-{k}.parquet"
        path.write_bytes(content)
        with load.lock:
            load.exports.append((ds, kind, etag.strip('"'), path))
        time.sleep(0.02)


def reloader(load, ds, source, writer):
    """Rewrites the source with the other version and reloads; the reload
    must report that version's row count."""
    session = requests.Session()
    v = 1
    while not load.stop.is_set():
        v = 3 - v
        writer(source, v)
        while True:
            r = session.post(load.s.url(f"/api/v1/datasets/{ds}/reload"), headers=ADMIN, timeout=120)
            if r.status_code == 409 and r.json().get("code") == "busy":
                with load.lock:
                    load.conflicts += 1
                time.sleep(0.01)
                continue
            break
        if r.status_code != 200:
            load.error(f"reload {ds}: {r.status_code} {r.text[:300]}")
            return
        if r.json()["rows"] != ROWS[v]:
            load.error(f"reload {ds} after writing version {v}: {r.json()}")
        with load.lock:
            load.reloads[ds] += 1


def overlapping_reloader(load):
    """Reloads without changing the source, at random moments: overlaps with
    the reloaders (409 busy is fine here)."""
    rng = random.Random(99)
    session = requests.Session()
    while not load.stop.is_set():
        ds = rng.choice(load.datasets)
        r = session.post(load.s.url(f"/api/v1/datasets/{ds}/reload"), headers=ADMIN, timeout=120)
        if r.status_code == 409:
            with load.lock:
                load.conflicts += 1
        elif r.status_code == 200:
            with load.lock:
                load.reloads[ds + " (overlap)"] += 1
        else:
            load.error(f"overlapping reload {ds}: {r.status_code} {r.text[:300]}")
        time.sleep(rng.uniform(0.05, 0.3))


def status_poller(load):
    """Maps each generation (its publish time, as X-Dataset-Refreshed-At
    shows it) to the row count it was built with (one status snapshot holds
    both under the dataset's lock)."""
    session = requests.Session()
    while not load.stop.is_set():
        for ds in load.datasets:
            try:
                st = session.get(load.s.url(f"/api/v1/datasets/{ds}/status"), timeout=30).json()
            except (requests.RequestException, ValueError) as e:
                load.error(f"{ds} status: {e!r}")
                return
            key = (ds, st["last_refresh_at"])
            with load.lock:
                if st["generation_id"]:
                    load.generations.setdefault((ds, ("id", st["generation_id"])), st["rows"])
                prev = load.generations.setdefault(key, st["rows"])
            if prev != st["rows"]:
                load.error(f"{ds}: generation {key[1]} seen with {prev} and {st['rows']} rows")
        time.sleep(0.005)


def run_load(s, datasets, sources, workdir, seconds, writer):
    load = Load(s, datasets, workdir)
    threads = [threading.Thread(target=query_worker, args=(load, 1000 + i)) for i in range(LOAD_THREADS)]
    threads.append(threading.Thread(target=export_worker, args=(load, 7)))
    threads += [threading.Thread(target=reloader, args=(load, ds, sources[ds], writer)) for ds in datasets]
    threads.append(threading.Thread(target=overlapping_reloader, args=(load,)))
    threads.append(threading.Thread(target=status_poller, args=(load,)))
    for t in threads:
        t.start()
    time.sleep(seconds)
    # At least MIN_RELOADS reloads of each dataset under load, however slow
    # the machine (ASan, a busy CI runner).
    deadline = time.time() + 60
    while time.time() < deadline and not load.errors and \
            min(load.reloads[ds] for ds in datasets) < MIN_RELOADS:
        time.sleep(0.1)
    load.stop.set()
    for t in threads:
        t.join(180)
        assert not t.is_alive(), "a load thread did not stop"
    return load


def summarise_arrow(paths):
    out = []
    for i in range(0, len(paths), 200):
        p = subprocess.run(["node", str(SUMMARY), "v"] + [str(x) for x in paths[i:i + 200]],
                           capture_output=True, text=True, check=True)
        out += [json.loads(line) for line in p.stdout.splitlines()]
    assert len(out) == len(paths)
    return out


def check_load(load):
    """Turns the recorded responses into versions; returns stats."""
    assert not load.errors, "%d errors under load; first ones:\n%s" % (
        len(load.errors), "\n".join(load.errors[:15]))
    for (ds, kind, stamp, path, body), summ in zip(load.arrow, summarise_arrow([a[3] for a in load.arrow])):
        assert "error" not in summ, (ds, kind, body, summ)
        v = one_version(summ["values"], f"{ds} {kind} {body}")
        assert summ["nulls"] == 0, summ
        if kind == "arrow":
            expect = 5000
        elif "limit" in body:
            expect = min(25000, 2 * ROWS[v] // 5)
        else:
            expect = ROWS[v]
        assert summ["rows"] == expect, (ds, kind, body, v, summ)
        load.results.append((ds, kind, stamp, v, body))
        path.unlink()
    for ds, kind, gen_id, path in load.exports:
        rows = sql(f"SELECT count(*), min(v), max(v), count(DISTINCT id) FROM '{path}'")
        n, lo, hi, ids = (int(x) for x in rows[0])
        assert lo == hi and n == ROWS[lo] and ids == n, f"{ds} {kind} {path.name}: {rows}"
        # The ETag is the generation id; status shows it for lazy datasets.
        load.results.append((ds, kind, ("id", gen_id), lo, None))
        path.unlink()

    # Every response comes from the version its generation was built from:
    # queries name it by X-Dataset-Refreshed-At, exports by their ETag (the
    # generation id, which status shows for lazy datasets only).
    stats = collections.Counter()
    wrong = []
    for ds, kind, gen, v, body in load.results:
        kind = kind.split(":")[0]
        stats[(ds, kind)] += 1
        stats[(ds, "version %d" % v)] += 1
        rows = load.generations.get((ds, gen))
        if kind.startswith("parquet") and ds == "r":
            continue  # a resident generation's id is not shown anywhere else
        stats[(ds, "attributable")] += 1
        if rows is None:
            stats[(ds, "generation not seen by the poller")] += 1
        elif BY_ROWS[rows] == v:
            stats[(ds, "checked against its generation")] += 1
        else:
            wrong.append(f"{ds} {kind} {body}: version {v} rows from generation {gen}, "
                         f"built from version {BY_ROWS[rows]}")
    assert not wrong, "%d responses served rows of another version than their generation's:\n%s" % (
        len(wrong), "\n".join(wrong[:10]))
    return stats


def generations_alive(log):
    published = len(re.findall(r" INFO  dataset \S+ published:", log))
    dropped = len(re.findall(r" DEBUG generation \S+ \(\S+\) dropped", log))
    return published - dropped


def test_reload_is_atomic_under_load(vt, datadir, tmp_path, capsys):
    t0 = time.time()
    sources = {"r": datadir / "r.parquet", "lz": datadir / "lz.parquet"}
    for f in sources.values():
        write_version(f, 1)
    prebuilt = {v: datadir / f"v{v}.parquet" for v in ROWS}
    for v, f in prebuilt.items():
        write_version(f, v)
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    env = {"ADMIN_TOKEN": TOKEN, "TMPDIR": str(runtime),
           # Under ASan, freed memory waits in a quarantine (256 MiB by
           # default) that would read as growth; a small one keeps RSS honest.
           "ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") + ":quarantine_size_mb=16"}
    s = vt(server_block() + dataset_block("r", sources["r"]) + dataset_block("lz", sources["lz"], lazy=True),
           env=env)
    deadline = time.time() + 30
    while "cat" not in s.get("/api/v1/datasets/r/schema").json()["indexed"]:
        assert time.time() < deadline, "index on r.cat not built"
        time.sleep(0.05)
    assert s.get("/api/v1/datasets/lz/status").json()["lazy"] is True

    work = tmp_path / "responses"
    work.mkdir()
    load = run_load(s, ["r", "lz"], sources, work, LOAD_SECONDS, write_version)
    stats = check_load(load)
    for ds in ("r", "lz"):
        assert load.reloads[ds] >= MIN_RELOADS, load.reloads
        assert stats[(ds, "checked against its generation")] >= 0.8 * stats[(ds, "attributable")], stats
        for kind in ("json", "arrow", "stream", "count", "parquet"):
            assert stats[(ds, kind)] > 0, (ds, kind, stats)
        assert stats[(ds, "parquet-resumed")] + stats[(ds, "parquet-restarted")] > 0, stats
        assert stats[(ds, "version 1")] > 0 and stats[(ds, "version 2")] > 0, stats

    # Many more reloads (file copies: faster than vt-sql), light load: RSS
    # must level off, because every old generation is dropped.
    samples = []
    session = requests.Session()
    for k in range(MEMORY_RELOADS):
        v = 1 + k % 2
        for ds in ("r", "lz"):
            copy_version(prebuilt[v], sources[ds])
            r = session.post(s.url(f"/api/v1/datasets/{ds}/reload"), headers=ADMIN, timeout=120)
            assert r.status_code == 200 and r.json()["rows"] == ROWS[v], r.text
            q = session.post(s.url(f"/api/v1/datasets/{ds}/query"), json={"group_by": ["v"]}, timeout=60)
            assert q.json()["data"] == [{"v": v, "count": ROWS[v]}], q.text
            assert session.get(s.url(f"/api/v1/datasets/{ds}/parquet"), timeout=60).status_code == 200
        samples.append(rss_kb(s.proc.pid))

    # Old generations are dropped: the janitor logs each drop; only the
    # current generation of each dataset stays (with its export file).
    lz = s.get("/api/v1/datasets/lz/status").json()
    exports_dirs = list(runtime.glob("vitrine-*/exports"))
    assert len(exports_dirs) == 1, exports_dirs
    downloads = exports_dirs[0].parent / "downloads"

    def leftovers():
        """What old generations left, once the janitor is done (it logs a
        drop, then removes the generation's export and pinned files)."""
        exports = sorted(p.name for p in exports_dirs[0].iterdir())
        pins = sorted(p.name for p in downloads.glob("lazy-*"))
        return generations_alive(s.log()), len(exports), f"{lz['generation_id']}.parquet" in exports, pins

    want = (2, 2, True, [f"lazy-{lz['generation_id']}"])
    deadline = time.time() + 20
    while leftovers() != want and time.time() < deadline:
        time.sleep(0.1)
    assert leftovers() == want, "(generations published - dropped, exports, lazy export, pins) = %r, " \
        "expected %r" % (leftovers(), want)
    log = s.log()
    errors = [line for line in log.splitlines() if " ERROR " in line]
    assert not errors, "errors in the server log:\n" + "\n".join(errors[:10])

    first = sorted(samples[4:9])[2]
    last = sorted(samples[-5:])[2]
    with capsys.disabled():
        print("\natomicity: %d responses under %.0fs of load (%s); reloads %s, %d busy (409); "
              "RSS after %d reloads %d MiB, after %d reloads %d MiB; %.1fs" % (
                  len(load.results), LOAD_SECONDS,
                  ", ".join("%s %s=%d" % (k[0], k[1], n) for k, n in sorted(stats.items())),
                  dict(load.reloads), load.conflicts, 6, first // 1024, MEMORY_RELOADS,
                  last // 1024, time.time() - t0))
    if os.environ.get("VT_ATOMICITY_SHOW_RSS"):
        with capsys.disabled():
            print("RSS samples (MiB):", [x // 1024 for x in samples])
    assert last <= first * 1.25 + 32 * 1024, "RSS grew from %d to %d KiB over %d reloads: %s" % (
        first, last, MEMORY_RELOADS, samples)


def test_reload_while_the_source_is_replaced(vt, datadir, tmp_path):
    """A source replaced the safe way (a temp name, then a rename) while a
    reload reads it: the reload builds one version or the other, whole. A
    writer swaps the two versions in a tight loop while reloads run one
    after the other; every reload must answer 200 with one version's row
    count. (DuckDB opens a file more than once in one build: a resident
    build that read the source in place saw the rename halfway and failed,
    422 "TProtocolException: Invalid data", in 1 of 13 to 20
    reloads; the overlapping reloads of test_reload_is_atomic_under_load met
    it now and then.)"""
    sources = {"r": datadir / "r.parquet", "lz": datadir / "lz.parquet"}
    prebuilt = {v: datadir / f"v{v}.parquet" for v in ROWS}
    for v, f in prebuilt.items():
        write_version(f, v)
    for f in sources.values():
        copy_version(prebuilt[1], f)
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    s = vt(server_block() + dataset_block("r", sources["r"], **{"index.mode": "none"})
           + dataset_block("lz", sources["lz"], lazy=True),
           env={"ADMIN_TOKEN": TOKEN, "TMPDIR": str(runtime)})
    stop = threading.Event()
    swaps = collections.Counter()
    current = {"ds": "r"}

    def writer():
        v = 1
        while not stop.is_set():
            v = 3 - v
            ds = current["ds"]
            copy_version(prebuilt[v], sources[ds])
            swaps[ds] += 1

    thread = threading.Thread(target=writer)
    thread.start()
    session = requests.Session()
    failures = []
    plan = ["r"] * 60 + ["lz"] * 6
    try:
        for ds in plan:
            current["ds"] = ds
            # The writer has swapped this source since the last reload (a
            # starved writer thread on a busy machine would race nothing).
            seen, deadline = swaps[ds], time.time() + 30
            while swaps[ds] < seen + 2 and time.time() < deadline and thread.is_alive():
                time.sleep(0.001)
            r = session.post(s.url(f"/api/v1/datasets/{ds}/reload"), headers=ADMIN, timeout=120)
            if r.status_code != 200 or r.json()["rows"] not in BY_ROWS:
                failures.append(f"reload {ds}: {r.status_code} {r.text[:200]}")
    finally:
        stop.set()
        thread.join(30)
    assert swaps["r"] >= 2 * 60 and swaps["lz"] >= 2 * 6, swaps  # the writer raced the reloads
    assert not failures, "%d of %d reloads failed:\n%s" % (
        len(failures), len(plan), "\n".join(failures[:10]))
    for ds in sources:
        # The writer swapped the lazy source after its last reload, so its
        # first query may find the files changed: 503 source_changed while
        # it is rebuilt, then the rebuilt generation answers.
        deadline = time.time() + 60
        while True:
            r = s.post(f"/api/v1/datasets/{ds}/query", {"group_by": ["v"]})
            if r.status_code != 503 or time.time() > deadline:
                break
            assert ds == "lz" and r.json()["code"] == "source_changed", r.text
            time.sleep(0.05)
        assert r.status_code == 200, (ds, r.status_code, r.text)
        got = r.json()["data"]
        assert len(got) == 1 and got[0]["count"] == ROWS[got[0]["v"]], got
    # A broken file fails the build naming the source's file, not its link.
    tmp = sources["r"].with_name(".broken.tmp")
    tmp.write_bytes(b"not parquet at all" * 10)
    os.replace(tmp, sources["r"])
    r = session.post(s.url("/api/v1/datasets/r/reload"), headers=ADMIN, timeout=120)
    assert r.status_code == 422 and r.json()["code"] == "build_failed", r.text
    assert str(sources["r"]) in r.json()["error"] and "lazy-" not in r.json()["error"], r.text
    # A build's links go with it: only the lazy generation keeps its pins.
    gid = s.get("/api/v1/datasets/lz/status").json()["generation_id"]
    deadline = time.time() + 20
    while True:
        pins = [p.name for p in runtime.glob("vitrine-*/downloads/lazy-*")]
        if pins == [f"lazy-{gid}"] or time.time() > deadline:
            break
        time.sleep(0.05)
    assert pins == [f"lazy-{gid}"], (pins, gid)


@pytest.mark.parametrize("runtime_fs", ["same", "other"])
def test_lazy_generation_keeps_the_files_it_was_built_from(vt, datadir, tmp_path, runtime_fs):
    """A lazy generation reads its files at query time; replacing the source
    files (temp name + rename) or deleting them must not change the rows of the
    generation in use: only a reload publishes new files (rule 9, snapshots).
    A hive layout keeps its partition column. With the runtime directory on
    the data's file system the generation hard-links its files; on another
    one (/dev/shm, tmpfs) it keeps them open."""
    runtime = tmp_path / "runtime" if runtime_fs == "same" else Path("/dev/shm") / f"vt-{uuid.uuid4().hex}"
    runtime.mkdir()
    same_fs = os.stat(runtime).st_dev == os.stat(datadir).st_dev
    assert same_fs == (runtime_fs == "same"), (runtime, datadir)
    parts = {p: datadir / "lz" / f"part={p}" / "data.parquet" for p in (0, 1)}

    def write_all(v):
        for p, f in parts.items():
            f.parent.mkdir(parents=True, exist_ok=True)
            tmp = f.with_name(f".{uuid.uuid4().hex}.tmp")
            sql(f"COPY (SELECT * FROM ({version_select(v)}) WHERE id % 2 = {p}) TO '{tmp}' (FORMAT parquet)")
            os.replace(tmp, f)

    try:
        write_all(1)
        s = vt(server_block() + dataset_block("lz", datadir / "lz", lazy=True),
               env={"ADMIN_TOKEN": TOKEN, "TMPDIR": str(runtime)})

        def versions():
            return s.post("/api/v1/datasets/lz/query", {"group_by": ["v"]}).json()["data"]

        by_part = {"group_by": ["part"], "order_by": [{"col": "part"}]}
        half = ROWS[1] // 2
        assert s.post("/api/v1/datasets/lz/query", by_part).json()["data"] == [
            {"part": 0, "count": half}, {"part": 1, "count": half}]
        assert versions() == [{"v": 1, "count": ROWS[1]}]
        pinned = [p for p in runtime.glob("vitrine-*/downloads/lazy-*/**/*.parquet")]
        assert len(pinned) == 2, list(runtime.rglob("*"))
        if same_fs:
            assert all(not p.is_symlink() and p.stat().st_nlink == 2 for p in pinned), pinned
        else:
            assert all(os.readlink(p).startswith("/proc/self/fd/") for p in pinned), pinned
        write_all(2)
        assert versions() == [{"v": 1, "count": ROWS[1]}]
        assert s.post("/api/v1/datasets/lz/count", {}).json() == {"count": ROWS[1]}
        export = s.get("/api/v1/datasets/lz/parquet")
        assert export.status_code == 200
        (datadir / "export.parquet").write_bytes(export.content)
        assert sql(f"SELECT count(*), min(v), max(v) FROM '{datadir / 'export.parquet'}'") == [
            [str(ROWS[1]), "1", "1"]]
        for f in parts.values():
            f.unlink()  # even deleted sources keep serving the generation
        assert versions() == [{"v": 1, "count": ROWS[1]}]
        write_all(2)
        assert s.post("/api/v1/datasets/lz/reload", headers=ADMIN).json()["rows"] == ROWS[2]
        assert versions() == [{"v": 2, "count": ROWS[2]}]
        assert s.post("/api/v1/datasets/lz/query", by_part).json()["data"] == [
            {"part": 0, "count": ROWS[2] // 2}, {"part": 1, "count": ROWS[2] // 2}]
        assert "cannot pin" not in s.log()
        assert s.stop() == 0
        assert not list(runtime.iterdir()), "runtime directory left behind"
    finally:
        if runtime_fs == "other":
            shutil.rmtree(runtime, ignore_errors=True)
