#!/usr/bin/python3
"""The soak (`make soak`; SOAK_SECS=1800 for the 30-minute run): a writer and a
reader on loopback sharing generations through moto_server, with an S3 fault
proxy in front of moto for both the sources and the shared storage.

1. Load: HTTP queries and counts, PostgreSQL (psycopg) statements and MCP
   tool calls against the reader, a reload on the writer every 3 s, and one
   S3 fault every 15 s in turn (500, 503 SlowDown, connection reset, half a
   body, a 10 s stall) on the writer's and the reader's requests. RSS, open
   files and threads of both processes are sampled every 5 s; the slopes over
   the second half of the run are reported. Every client request must
   succeed (the reader keeps its last good generation), every CURRENT must
   name a complete generation (a manifest and a data file of its size).
2. Storage full: the writer's runtime directory on a 12 MiB tmpfs and a
   dataset whose Parquet does not fit: the publish fails cleanly, the
   previous generation keeps serving everywhere.
3. kill -9 in every write path (the data upload, the CURRENT swap, persist
   of the config file, a saved query's file): after each, the writer starts
   again, the config and the saved queries load, and CURRENT names a
   complete generation.

Prints one report; exits 1 when a check failed. Loopback only, bounded.
"""
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import requests

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "e2e"))
from conftest import Server, write_parquet  # noqa: E402
from pgwire_util import pg_port  # noqa: E402
from s3_fixtures import Fault, FaultProxy, Moto, find_moto  # noqa: E402

SOAK_SECS = int(os.environ.get("SOAK_SECS", "300"))
ADMIN = {"X-Admin-Token": "soak"}
ENV = {"ADMIN_TOKEN": "soak", "AWS_ACCESS_KEY_ID": "soak", "AWS_SECRET_ACCESS_KEY": "soak",
       "VITRINE_LOG": "info"}
problems = []
report = []


def check(cond, what):
    if not cond:
        problems.append(what)
        print("PROBLEM:", what, flush=True)


def config(role, port, endpoint, data, pgwire=False, extra=""):
    return f"""
[server]
listen = "127.0.0.1"
port = {port}
allowed_roots = ["{data}"]
drain_delay_secs = 0
[server.pgwire]
enabled = {"true" if pgwire else "false"}
port = 0
[mcp]
enabled = true
[sql]
enabled = true
[cluster]
role = "{role}"
storage = "s3://shared/soak"
poll_interval_ms = 500
pin_secs = 5
gc_grace_secs = 10
gc_interval_secs = 5
[cluster.s3]
endpoint = "{endpoint}"
allow_http = true
addressing_style = "path"
{extra}
[[dataset]]
name = "trips"
source.location = "s3://src/trips/"
[dataset.s3]
endpoint = "{endpoint}"
allow_http = true
addressing_style = "path"

[[dataset]]
name = "local"
source.location = "{data}/local.parquet"

[[dataset]]
name = "by_city"
sql = "SELECT city, count(*) AS n, avg(fare) AS fare FROM trips GROUP BY city"
"""


def proc_stats(pid):
    st = Path(f"/proc/{pid}/status").read_text()
    rss = int(next(l for l in st.splitlines() if l.startswith("VmRSS")).split()[1]) / 1024
    threads = int(next(l for l in st.splitlines() if l.startswith("Threads")).split()[1])
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    return rss, fds, threads


def slope(points):
    """Least-squares slope of (t, v) per hour."""
    n = len(points)
    if n < 3:
        return 0.0
    mt = sum(t for t, _ in points) / n
    mv = sum(v for _, v in points) / n
    den = sum((t - mt) ** 2 for t, _ in points)
    return 3600 * sum((t - mt) * (v - mv) for t, v in points) / den if den else 0.0


def shared_state_ok(moto, where):
    """Every CURRENT names a generation with a manifest and a data file of its size."""
    keys = moto.list_keys("shared", "soak/")
    for k in [k for k in keys if k.endswith("/CURRENT")]:
        cur = json.loads(moto.get("shared", k))
        base = k[: -len("CURRENT")] + cur["generation_id"] + "/"
        ok = base + "manifest.json" in keys
        if ok:
            m = json.loads(moto.get("shared", base + "manifest.json"))
            f = m["files"][0]
            data = moto.get("shared", base + f["name"])
            ok = len(data) == f["size"]
        check(ok, f"{where}: {k} names an incomplete generation {cur['generation_id']}")


class LoadRunner:
    """Client threads against the reader; `kinds` names one thread each
    (http, pg, mcp)."""

    def __init__(self, reader, pgport, kinds=("http", "http", "pg", "mcp")):
        self.reader, self.pgport = reader, pgport
        self.stop = threading.Event()
        self.counts = {"http": 0, "pgwire": 0, "mcp": 0}
        self.failures = []
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=f, daemon=True)
                        for f in (getattr(self, k) for k in kinds)]
        for t in self.threads:
            t.start()

    def record(self, kind, ok, what=""):
        with self.lock:
            if ok:
                self.counts[kind] += 1
            else:
                self.failures.append((kind, what[:200]))

    def http(self):
        s = requests.Session()
        while not self.stop.is_set():
            try:
                r = s.post(self.reader.url("/api/v1/datasets/trips/count"),
                           json={"predicates": [{"col": "city", "op": "eq", "val": "lyon"}]},
                           timeout=30)
                self.record("http", r.status_code == 200 and r.json()["count"] == 4000,
                            f"{r.status_code} {r.text}")
                r = s.post(self.reader.url("/api/v1/datasets/by_city/query"), json={}, timeout=30)
                self.record("http", r.status_code == 200 and len(r.json()["data"]) == 3,
                            f"{r.status_code} {r.text}")
            except requests.RequestException as e:
                self.record("http", False, str(e))

    def pg(self):
        import psycopg
        while not self.stop.is_set():
            try:
                with psycopg.connect(host="127.0.0.1", port=self.pgport, user="vitrine",
                                     dbname="vitrine", connect_timeout=10) as con:
                    for _ in range(50):
                        if self.stop.is_set():
                            break
                        n = con.execute("SELECT count(*) FROM trips WHERE city = 'nice'").fetchone()[0]
                        self.record("pgwire", n == 4000, f"count {n}")
            except Exception as e:  # noqa: BLE001 - any failure is a finding
                self.record("pgwire", False, str(e))

    def mcp(self):
        s = requests.Session()
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "count_rows", "arguments": {"name": "local"}}}
        while not self.stop.is_set():
            try:
                r = s.post(self.reader.url("/mcp"), json=body, timeout=30,
                           headers={"Accept": "application/json, text/event-stream"})
                ok = r.status_code == 200 and not r.json()["result"].get("isError")
                self.record("mcp", ok, r.text)
            except (requests.RequestException, KeyError, ValueError) as e:
                self.record("mcp", False, str(e))

    def finish(self):
        self.stop.set()
        for t in self.threads:
            t.join(60)


def wait_ready(s, timeout=120):
    s.wait_ready(timeout)


def phase_load(root, moto, proxy):
    data = root / "data"
    # Every listener binds port 0; Server and pg_port read the ports back
    # from the log (a port probed free could be taken before it is bound).
    (root / "w").mkdir()
    (root / "r").mkdir()
    w = Server(root / "w", config("writer", 0, proxy.endpoint, data), env=ENV).start()
    wait_ready(w)
    r = Server(root / "r", config("reader", 0, proxy.endpoint, root / "nowhere", pgwire=True),
               env=ENV).start()
    wait_ready(r)
    load = LoadRunner(r, pg_port(r))
    kinds = [Fault("status", status=500, code="InternalError", times=3),
             Fault("status", status=503, code="SlowDown", times=3),
             Fault("drop", times=2), Fault("truncate", method="GET", times=2),
             Fault("stall", times=1, stall_secs=10)]
    samples = {"writer": [], "reader": []}
    t0 = time.monotonic()
    next_reload = next_fault = next_sample = 0.0
    reloads = reload_failures = 0
    k = 0
    while time.monotonic() - t0 < SOAK_SECS:
        now = time.monotonic() - t0
        if now >= next_sample:
            next_sample = now + 5
            for name, s in (("writer", w), ("reader", r)):
                samples[name].append((now, proc_stats(s.proc.pid)))
        if now >= next_reload:
            next_reload = now + 3
            ds = random.choice(["trips", "local"])
            try:
                rr = w.post(f"/api/v1/datasets/{ds}/reload", headers=ADMIN, timeout=60)
                reloads += 1
                reload_failures += rr.status_code != 200
            except requests.RequestException:
                reload_failures += 1
        if now >= next_fault:
            next_fault = now + 15
            f = kinds[k % len(kinds)]
            k += 1
            proxy.add(Fault(f.action, method=f.method, status=f.status, code=f.code,
                            times=f.times, stall_secs=f.stall_secs))
        time.sleep(0.2)
    load.finish()
    proxy.reset()
    # Settle: the writer publishes once more without faults; the reader follows.
    time.sleep(2)
    assert w.post("/api/v1/datasets/trips/reload", headers=ADMIN, timeout=60).status_code == 200
    gid = w.get("/api/v1/datasets/trips/status").json()["generation_id"]
    deadline = time.time() + 10
    while time.time() < deadline and r.get("/api/v1/datasets/trips/status").json()["generation_id"] != gid:
        time.sleep(0.1)
    check(r.get("/api/v1/datasets/trips/status").json()["generation_id"] == gid,
          "the reader did not converge after the faults")
    shared_state_ok(moto, "after the load")
    report.append(f"load: {SOAK_SECS} s, HTTP {load.counts['http']}, pgwire {load.counts['pgwire']}, "
                  f"MCP {load.counts['mcp']} requests, {reloads} reloads ({reload_failures} "
                  f"failed under injected faults), {k} faults injected, "
                  f"{len(load.failures)} failed client requests")
    check(not load.failures, f"client requests failed: {load.failures[:5]}")
    for name in ("writer", "reader"):
        pts = samples[name]
        half = [p for p in pts if p[0] >= SOAK_SECS / 2]
        rs = slope([(t, v[0]) for t, v in half])
        fs = slope([(t, v[1]) for t, v in half])
        ts = slope([(t, v[2]) for t, v in half])
        first, last = pts[0][1], pts[-1][1]
        report.append(f"{name}: RSS {first[0]:.0f} -> {last[0]:.0f} MiB (slope over the 2nd half "
                      f"{rs:+.1f} MiB/h), fds {first[1]} -> {last[1]} ({fs:+.1f}/h), threads "
                      f"{first[2]} -> {last[2]} ({ts:+.1f}/h)")
        if SOAK_SECS >= 600:
            check(abs(rs) < 50 and abs(fs) < 20 and abs(ts) < 10,
                  f"{name}: resources grow (RSS {rs:+.1f} MiB/h, fds {fs:+.1f}/h, threads {ts:+.1f}/h)")
    return w, r


def phase_storage_full(root, moto, proxy, r):
    """The writer's runtime directory on a small tmpfs: the Parquet of a big
    generation does not fit; the publish fails, the last good one serves."""
    mnt = root / "full"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=12m", "tmpfs", str(mnt)], check=True)
    try:
        data = root / "data"
        (root / "wf").mkdir()
        env = dict(ENV, TMPDIR=str(mnt))
        w = Server(root / "wf", config("writer", 0, proxy.endpoint, data), env=env).start()
        wait_ready(w)
        before = w.get("/api/v1/datasets/local/status").json()["generation_id"]
        write_parquet(data / "local.parquet",
                      "SELECT i AS id, md5(i::VARCHAR) || md5((i * 7)::VARCHAR) AS s FROM range(400000) t(i)")
        rr = w.post("/api/v1/datasets/local/reload", headers=ADMIN, timeout=120)
        check(rr.status_code != 200, "a generation larger than the disk was published")
        st = w.get("/api/v1/datasets/local/status").json()
        check(st["generation_id"] == before and st["state"] == "published",
              f"the writer does not serve its previous generation: {st}")
        time.sleep(1.5)
        check(r.get("/api/v1/datasets/local/status").json()["generation_id"] == before,
              "the reader moved off the last good generation")
        shared_state_ok(moto, "after storage full")
        report.append(f"storage full: reload answered {rr.status_code} "
                      f"({rr.json().get('code')}), generation {before} kept on writer and reader")
        w.stop()
        write_parquet(data / "local.parquet", "SELECT i AS id, 'x' AS s FROM range(1000) t(i)")
    finally:
        subprocess.run(["umount", "-l", str(mnt)])


def phase_kill9(root, moto, proxy):
    data = root / "data"
    saved = root / "wk" / "datasets.d"
    (root / "wk").mkdir()
    cfg = config("writer", 0, proxy.endpoint, data)
    results = []
    for path, fault in (("upload", Fault("stall", method="PUT", path="/data.parquet", stall_secs=5)),
                        ("CURRENT swap", Fault("stall", method="PUT", path="/CURRENT", stall_secs=5)),
                        ("persist", None), ("saved-query file", None)):
        w = Server(root / "wk", cfg, env=ENV).start()
        wait_ready(w)
        if fault:
            proxy.add(fault)
            threading.Thread(target=lambda: w.post("/api/v1/datasets/local/reload", headers=ADMIN,
                                                   timeout=60), daemon=True).start()
            deadline = time.time() + 10
            while time.time() < deadline and fault.hits == 0:
                time.sleep(0.05)
            time.sleep(0.5)
        elif path == "persist":
            def persist():
                for i in range(200):
                    try:
                        w.post("/api/v1/datasets/persist",
                               {"name": f"p{i}", "source": {"location": str(data / "local.parquet")}},
                               headers=ADMIN, timeout=30)
                    except requests.RequestException:
                        return
            threading.Thread(target=persist, daemon=True).start()
            time.sleep(random.uniform(0.5, 1.5))
        else:
            def save():
                for i in range(200):
                    try:
                        w.post("/api/v1/queries", {"name": f"s{i}", "kind": "query",
                                                   "sql": "SELECT count(*) AS n FROM local"},
                               headers=ADMIN, timeout=30)
                    except requests.RequestException:
                        return
            threading.Thread(target=save, daemon=True).start()
            time.sleep(random.uniform(0.5, 1.5))
        w.proc.kill()
        w.proc.wait()
        proxy.reset()
        ok = subprocess.run([str(Path(os.environ["VITRINE_BUILD"]) / "vitrine"), "check-config",
                             str(w.config_path)], capture_output=True).returncode == 0
        check(ok, f"kill -9 during {path}: the config file no longer loads")
        w2 = Server(root / "wk", w.config_path.read_text(), env=ENV).start()
        try:
            wait_ready(w2)
            n = len(list(saved.glob("*.toml"))) if saved.exists() else 0
            results.append(f"{path}: restart ready ({n} saved queries)")
        except AssertionError as e:
            check(False, f"kill -9 during {path}: no clean restart: {str(e)[-500:]}")
        shared_state_ok(moto, f"kill -9 during {path}")
        w2.stop()
        w.config_path.write_text(cfg)  # the next round starts from the same file
    report.append("kill -9: " + "; ".join(results))


def make_sources(root, moto):
    """The buckets and the source files every soak run serves: `trips` on S3
    (bucket src), `local` on disk. Returns the local data directory."""
    moto.create_bucket("src")
    moto.create_bucket("shared")
    data = root / "data"
    src = write_parquet(data / "trips" / "part-0.parquet",
                        "SELECT i AS id, ['paris','lyon','nice'][i % 3 + 1] AS city, "
                        "(i % 97)::DOUBLE AS fare FROM range(12000) t(i)")
    moto.upload_file("src", "trips/part-0.parquet", src)
    write_parquet(data / "local.parquet", "SELECT i AS id, 'x' AS s FROM range(1000) t(i)")
    return data


def main():
    exe = find_moto()
    if not exe:
        sys.exit("moto_server not found")
    root = Path(tempfile.mkdtemp(prefix="vitrine-soak-"))
    moto = Moto(exe, root).start()
    proxy = FaultProxy(moto.port)
    try:
        data = make_sources(root, moto)
        t0 = time.time()
        w, r = phase_load(root, moto, proxy)
        w.stop()
        phase_storage_full(root, moto, proxy, r)
        phase_kill9(root, moto, proxy)
        r.stop()
        report.append(f"total {time.time() - t0:.0f} s")
    finally:
        proxy.close()
        moto.stop()
    print("\n".join(["soak report:"] + report))
    if problems:
        print(f"0 passed, {len(problems)} failed")
        sys.exit(1)
    print("1 passed, 0 failed")


if __name__ == "__main__":
    main()
