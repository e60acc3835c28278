"""Scale-out (issue 26): one writer, three readers and nginx balancing them, on
loopback, with moto_server as the shared S3 storage.

The writer alone reads the sources (local Parquet); the readers' configs
point their datasets at files that do not exist, so every row they serve
came through the shared storage. Checked from outside: convergence on the
writer's generation after a reload, a registration and a saved query (within
the poll interval); the same rows, generation ids, X-Dataset-Generation and
export bytes/ETag everywhere; admin calls on a reader (409 naming the writer,
or relayed to cluster.writer_url); ?generation= pins (the kept previous
generation, 409 for one not loaded yet, 410 for one collected); readiness
and drain on SIGTERM; kill -9 of a reader, a rolling restart of the readers
and a stopped writer under load through nginx with no failed request;
collection of replaced generations by the writer.
"""
import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
import requests

from conftest import Server, write_parquet
from s3_fixtures import free_port, moto  # noqa: F401  (session fixture)

# Wall-clock bounds (convergence within the poll interval) and load: run alone.
pytestmark = pytest.mark.serial

NGINX = os.environ.get("NGINX", "/usr/sbin/nginx")
POLL_MS = 400
ADMIN = {"X-Admin-Token": "s3cret"}
ENV = {"ADMIN_TOKEN": "s3cret", "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
       "VITRINE_LOG": "info"}


# The module's readers drain for this long after a SIGTERM (ready no more,
# still serving): a window no machine misses, however loaded. Their stops
# end it with a second signal (drain_stop).
READER_DRAIN_SECS = 30


def config(role, port, storage, endpoint, data, extra_cluster="", extra_server="", drain=1):
    return f"""
[server]
listen = "127.0.0.1"
port = {port}
drain_delay_secs = {drain}
shutdown_timeout_secs = 10
{'allowed_roots = ["' + data + '"]' if role == "writer" else ""}
{extra_server}
[sql]
enabled = true
[cluster]
role = "{role}"
storage = "{storage}"
poll_interval_ms = {POLL_MS}
pin_secs = 30
gc_grace_secs = 60
{extra_cluster}
[cluster.s3]
endpoint = "{endpoint}"
allow_http = true
addressing_style = "path"

[[dataset]]
name = "trips"
source.location = "{data}/trips.parquet"

[[dataset]]
name = "events"
source.location = "{data}/events"
lazy = true

[[dataset]]
name = "by_city"
sql = "SELECT city, count(*) AS n, sum(fare) AS total FROM trips GROUP BY city"
"""


class Nginx:
    """nginx (a master and one worker) balancing the readers. Every vitrine
    here binds port 0, so a reader that restarts comes back on another port:
    set_upstreams rewrites the upstream list and reloads nginx (SIGHUP, the
    listener and in-flight requests stay), as an operator's balancer follows
    its replicas."""

    def __init__(self, work, upstreams):
        self.work = Path(work)
        self.work.mkdir(parents=True, exist_ok=True)
        self.upstreams = list(upstreams)
        # nginx cannot bind port 0 and report it: a port probed free may be
        # taken before nginx binds it (a neighbour test's server binding port
        # 0, a client's local port): nginx then logs 'Address already in use'
        # and it starts again on another one; 'up' means nginx itself
        # answered, not whoever holds the port.
        log = self.work / "error.log"
        for attempt in range(5):
            self.port = free_port()
            log.write_text("")
            self._write_conf()
            self.proc = subprocess.Popen([NGINX, "-p", str(self.work), "-c", str(self.work / "nginx.conf"),
                                          "-e", str(log)],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            deadline, taken = time.time() + 10, False
            while self.proc.poll() is None and time.time() < deadline:
                taken = "Address already in use" in log.read_text()
                if taken or self._up(self.port):
                    break
                time.sleep(0.05)
            if not taken:
                break
            self.proc.kill()
            self.proc.wait()
        if not self._up(self.port):
            raise RuntimeError("nginx did not start:\n" + log.read_text())

    @staticmethod
    def _up(port):
        try:
            r = requests.get(f"http://127.0.0.1:{port}/healthz", timeout=1)
            return r.headers.get("Server", "").startswith("nginx")
        except requests.RequestException:  # refused, or a holder that never answers
            return False

    def set_upstreams(self, ports):
        """Reloads nginx with these reader ports; the caller waits for the
        new configuration to route (wait_routed_again)."""
        self.upstreams = list(ports)
        self._write_conf()
        self.proc.send_signal(signal.SIGHUP)

    def log(self):
        return (self.work / "error.log").read_text(errors="replace")

    def _write_conf(self):
        w = self.work
        ups = "\n".join(f"server 127.0.0.1:{p} max_fails=1 fail_timeout=1s;" for p in self.upstreams)
        # As root the workers would run as nobody, who cannot enter pytest's
        # 0700 temporary directories (proxy_temp_path).
        user = "user root root;" if os.geteuid() == 0 else ""
        (w / "nginx.conf").write_text(f"""
daemon off;
master_process on;
{user}
worker_processes 1;
pid {w}/nginx.pid;
error_log {w}/error.log warn;
events {{ worker_connections 512; }}
http {{
    access_log off;
    client_body_temp_path {w}/t1; proxy_temp_path {w}/t2;
    fastcgi_temp_path {w}/t3; uwsgi_temp_path {w}/t4; scgi_temp_path {w}/t5;
    # No keep-alive towards the clients: a reload closes the old worker's
    # idle client connections, and a client that sent its next request on
    # one at that instant would see it dropped (nginx's, not a reader's).
    keepalive_timeout 0;
    upstream readers {{
        {ups}
        keepalive 16;
    }}
    server {{
        listen 127.0.0.1:{self.port};
        location / {{
            proxy_pass http://readers;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $host;
            proxy_connect_timeout 1s;
            proxy_read_timeout 20s;
            # Queries are POSTs that only read: safe to retry elsewhere.
            proxy_next_upstream error timeout http_502 http_503 non_idempotent;
            proxy_next_upstream_tries 4;
        }}
    }}
}}
""")

    def url(self, path):
        return f"http://127.0.0.1:{self.port}{path}"

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)


class Cluster:
    def __init__(self, root, moto):
        self.root = Path(root)
        self.moto = moto
        self.bucket = "shared"
        self.moto.create_bucket(self.bucket)
        self.storage = f"s3://{self.bucket}/prod"
        data = self.root / "data"
        write_parquet(data / "trips.parquet",
                      "SELECT i AS id, ['paris','lyon','nice'][i % 3 + 1] AS city, "
                      "(i * 7 % 100)::DOUBLE AS fare FROM range(3000) t(i)")
        write_parquet(data / "events" / "part-0.parquet",
                      "SELECT i AS id, i % 5 AS kind FROM range(2000) t(i)")
        self.data = data
        # Every server binds port 0 and reports its port (Server reads it
        # from the log): the writer first, as reader2 names it (writer_url).
        self.writer = self._server("writer", "writer", str(data))
        self.writer.start()
        self.writer.wait_ready(60)
        self.readers = []
        for i in range(3):
            extra = f'writer_url = "http://127.0.0.1:{self.wport}"' if i == 2 else ""
            self.readers.append(self._server(f"reader{i}", "reader",
                                             str(self.root / "nowhere"), extra))
        for r in self.readers:
            r.start()
        for r in self.readers:
            r.wait_ready(60)
        self.nginx = Nginx(self.root / "nginx", self.rports)

    @property
    def wport(self):
        """The writer's port now (another after a restart; reader2's
        writer_url keeps the first: no relay is asked of it after that)."""
        return self.writer.port

    @property
    def rports(self):
        return [r.port for r in self.readers]

    def _server(self, name, role, data, extra=""):
        d = self.root / name
        d.mkdir(parents=True, exist_ok=True)
        return Server(d, config(role, 0, self.storage, self.moto.endpoint, data, extra,
                                drain=READER_DRAIN_SECS if role == "reader" else 1),
                      env=ENV)

    def restart(self, r):
        """Starts reader r again (on a new port), puts it behind nginx and
        waits until nginx routes to it."""
        r.start()
        r.wait_ready(30)
        self.nginx.set_upstreams(self.rports)
        wait_routed_again(self.nginx, r)
        return r

    def status(self, s, name):
        r = s.get(f"/api/v1/datasets/{name}/status", timeout=5)
        return r.json() if r.status_code == 200 else None

    def wait_converged(self, name, gid, timeout):
        """Seconds until every reader serves generation gid of `name`."""
        t0 = time.monotonic()
        pending = set(range(len(self.readers)))
        while pending and time.monotonic() - t0 < timeout:
            for i in list(pending):
                st = self.status(self.readers[i], name)
                if st and st["generation_id"] == gid and st["state"] == "published":
                    pending.discard(i)
            time.sleep(0.02)
        assert not pending, f"readers {pending} did not converge on {name} {gid}"
        return time.monotonic() - t0

    def stop(self):
        self.nginx.stop()
        problems = []
        for s in [self.writer] + self.readers:
            rc = s.stop() if s is self.writer else drain_stop(s)
            if rc not in (0, None, -9):
                problems.append(f"exit {rc}: {s.log()[-3000:]}")
            if "AddressSanitizer" in s.log() or "runtime error:" in s.log():
                problems.append(s.log()[-6000:])
        assert not problems, "\n".join(problems)


def wait_draining(s, timeout=20):
    """Polls /readyz until the server says it is shutting down (SIGTERM is
    handled asynchronously); the last answer."""
    deadline = time.monotonic() + timeout
    rz = s.get("/readyz", timeout=5)
    while rz.status_code == 200 and time.monotonic() < deadline:
        time.sleep(0.02)
        rz = s.get("/readyz", timeout=5)
    return rz


def drain_stop(s):
    """Stops a reader of the module (READER_DRAIN_SECS): SIGTERM, then once it
    drains a second SIGTERM ends the delay (two signals sent at once could
    merge into one)."""
    if s.proc is None or s.proc.poll() is not None:
        return s.stop()
    s.proc.send_signal(signal.SIGTERM)
    try:
        wait_draining(s)
    except requests.ConnectionError:
        pass  # gone already
    return s.stop()


@pytest.fixture(scope="module")
def cl(tmp_path_factory, moto):  # noqa: F811
    c = Cluster(tmp_path_factory.mktemp("cluster"), moto)
    yield c
    c.stop()


class Load:
    """Clients through nginx until stopped: counts and failures."""

    def __init__(self, url, threads=4):
        self.url = url
        self.stop_flag = threading.Event()
        self.ok = 0
        self.failures = []
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.run, args=(i,)) for i in range(threads)]
        for t in self.threads:
            t.start()

    def run(self, i):
        s = requests.Session()
        while not self.stop_flag.is_set():
            try:
                if i % 2:
                    r = s.post(self.url("/api/v1/datasets/trips/count"),
                               json={"predicates": [{"col": "city", "op": "eq", "val": "lyon"}]},
                               timeout=20)
                    good = r.status_code == 200 and r.json()["count"] == 1000
                else:
                    r = s.post(self.url("/api/v1/datasets/by_city/query"), json={}, timeout=20)
                    good = r.status_code == 200 and len(r.json()["data"]) == 3
                with self.lock:
                    if good:
                        self.ok += 1
                    else:
                        self.failures.append((r.status_code, r.text[:200]))
            except requests.RequestException as e:
                with self.lock:
                    self.failures.append(("exception", str(e)[:200]))

    def finish(self):
        self.stop_flag.set()
        for t in self.threads:
            t.join(30)
        return self.ok, self.failures


def test_readers_serve_the_writers_generations(cl):
    w = cl.writer
    for name in ("trips", "events", "by_city"):
        ws = cl.status(w, name)
        assert ws["state"] == "published" and ws["generation_id"], ws
        cl.wait_converged(name, ws["generation_id"], 10)
        for r in cl.readers:
            rs = cl.status(r, name)
            for k in ("generation_id", "rows", "columns", "last_refresh_at", "residency",
                      "last_refresh_duration_ms", "kind"):
                assert rs[k] == ws[k], (name, k, rs[k], ws[k])
    # Same rows (the readers' own sources do not exist), same header.
    body = {"order_by": [{"col": "id"}], "page_size": 50}
    want = w.post("/api/v1/datasets/trips/query", body)
    for r in cl.readers:
        got = r.post("/api/v1/datasets/trips/query", body)
        assert got.status_code == 200
        assert got.json() == want.json()
        assert got.headers["X-Dataset-Generation"] == want.headers["X-Dataset-Generation"]
    lz = {"predicates": [{"col": "kind", "op": "eq", "val": 3}]}
    assert cl.readers[0].post("/api/v1/datasets/events/count", lz).json() == {"count": 400}
    # The export: the writer's bytes under the generation's ETag everywhere.
    we = w.get("/api/v1/datasets/trips/parquet")
    for r in cl.readers:
        re_ = r.get("/api/v1/datasets/trips/parquet")
        assert re_.status_code == 200 and re_.content == we.content
        assert re_.headers["ETag"] == we.headers["ETag"]
        assert re_.headers["X-Dataset-Generation"] == cl.status(w, "trips")["generation_id"]
    le = w.get("/api/v1/datasets/events/parquet")
    assert cl.readers[1].get("/api/v1/datasets/events/parquet").content == le.content
    # The readers never opened a source (theirs do not exist).
    for r in cl.readers:
        assert "build failed" not in r.log() and "nowhere" not in r.log()


def test_reload_converges_within_the_poll_interval(cl):
    w = cl.writer
    r = w.post("/api/v1/datasets/trips/reload", headers=ADMIN)
    assert r.status_code == 200, r.text
    gid = cl.status(w, "trips")["generation_id"]
    took = cl.wait_converged("trips", gid, 10)
    # One poll (±10%) plus the import of a small generation.
    assert took < POLL_MS / 1000 * 1.1 + 1.5, took


def test_registration_and_saved_query_reach_the_readers(cl):
    w = cl.writer
    write_parquet(cl.data / "extra.parquet", "SELECT i AS n FROM range(10) t(i)")
    r = w.post("/api/v1/datasets", {"name": "extra", "source": {"location": str(cl.data / "extra.parquet")}},
               headers=ADMIN)
    assert r.status_code == 200, r.text
    took = cl.wait_converged("extra", cl.status(w, "extra")["generation_id"], 10)
    assert took < POLL_MS / 1000 * 1.1 + 1.5, took
    r = w.post("/api/v1/queries", {"name": "cheap", "kind": "temp",
                                   "sql": "SELECT * FROM trips WHERE fare < 10"}, headers=ADMIN)
    assert r.status_code == 200, r.text
    took = cl.wait_converged("cheap", cl.status(w, "cheap")["generation_id"], 10)
    assert took < POLL_MS / 1000 * 1.1 + 1.5, took
    rows = cl.readers[1].post("/api/v1/datasets/cheap/count", {}).json()["count"]
    assert rows == w.post("/api/v1/datasets/cheap/count", {}).json()["count"] > 0
    lst = cl.readers[0].get("/api/v1/queries", headers=ADMIN).json()
    assert [q["name"] for q in lst] == ["cheap"]
    d = requests.delete(w.url("/api/v1/queries/cheap"), headers=ADMIN, timeout=30)
    assert d.status_code == 200, d.text
    deadline = time.time() + 5
    while time.time() < deadline:
        if all(r.get("/api/v1/datasets/cheap/status").status_code == 404 for r in cl.readers):
            break
        time.sleep(0.05)
    assert all(r.get("/api/v1/datasets/cheap/status").status_code == 404 for r in cl.readers)


def test_admin_calls_on_a_reader(cl):
    r0 = cl.readers[0]
    r = r0.post("/api/v1/datasets/trips/reload", headers=ADMIN)
    assert r.status_code == 409 and r.json()["code"] == "not_writer"
    assert f"127.0.0.1:{cl.wport}" in r.json()["error"] or "http://" in r.json()["error"]
    r = r0.post("/api/v1/queries", {"name": "x", "sql": "SELECT 1 AS a"}, headers=ADMIN)
    assert r.status_code == 409 and r.json()["code"] == "not_writer"
    # Without the token the writer-only answer is not given: 403 first.
    assert r0.post("/api/v1/datasets/trips/reload").status_code in (401, 403)
    # The third reader relays to cluster.writer_url; the writer authenticates.
    before = cl.status(cl.writer, "by_city")["generation_id"]
    r = cl.readers[2].post("/api/v1/datasets/by_city/reload", headers=ADMIN)
    assert r.status_code == 200, r.text
    assert r.headers.get("X-Forwarded-To-Writer") == "true"
    assert cl.status(cl.writer, "by_city")["generation_id"] != before
    r = cl.readers[2].post("/api/v1/datasets/by_city/reload", headers={"X-Admin-Token": "wrong"})
    assert r.status_code in (401, 403)


def test_generation_pins(cl):
    w, r0 = cl.writer, cl.readers[0]
    old = cl.status(w, "trips")["generation_id"]
    cl.wait_converged("trips", old, 10)
    assert w.post("/api/v1/datasets/trips/reload", headers=ADMIN).status_code == 200
    new = cl.status(w, "trips")["generation_id"]
    cl.wait_converged("trips", new, 10)
    for s in (w, r0):
        # The replaced generation stays readable (pin_secs) for paging.
        r = s.post(f"/api/v1/datasets/trips/query?generation={old}", {"page": 2, "page_size": 10})
        assert r.status_code == 200 and r.headers["X-Dataset-Generation"] == old
        r = s.post(f"/api/v1/datasets/trips/count?generation={new}", {})
        assert r.status_code == 200 and r.headers["X-Dataset-Generation"] == new
        assert s.get(f"/api/v1/datasets/trips/schema?generation={old}").status_code == 200
        # Newer than what this replica has: 409; collected (older): 410.
        r = s.post("/api/v1/datasets/trips/count?generation=7ZZZZZZZZZZZZZZZZZZZZZZZZZ", {})
        assert r.status_code == 409 and r.json()["code"] == "generation_not_available"
        r = s.post("/api/v1/datasets/trips/count?generation=00000000000000000000000000", {})
        assert r.status_code == 410 and r.json()["code"] == "generation_gone"
        r = s.post("/api/v1/datasets/trips/count?generation=nope", {})
        assert r.status_code == 400


def test_kill9_of_a_reader_under_load(cl):
    load = Load(cl.nginx.url)
    time.sleep(1.0)
    victim = cl.readers[1]
    victim.proc.kill()
    victim.proc.wait()
    time.sleep(1.0)
    cl.restart(victim)
    time.sleep(1.0)
    ok, failures = load.finish()
    assert ok > 50 and failures == [], (ok, failures[:5])


def wait_routed_again(nginx, r, timeout=30):
    """Polls nginx until a response comes from reader r's process (request ids
    start with a random prefix per process)."""
    mine = r.get("/readyz", timeout=5).headers["X-Request-Id"].rsplit("-", 1)[0]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = requests.get(nginx.url("/readyz"), timeout=5).headers.get("X-Request-Id", "")
        if got.startswith(mine + "-"):
            return
        time.sleep(0.02)
    raise AssertionError(f"nginx does not route to {r.base} again:\n{nginx.log()}")


def test_rolling_restart_of_the_readers_under_load(cl):
    load = Load(cl.nginx.url)
    time.sleep(0.5)
    for r in cl.readers:
        r.proc.send_signal(signal.SIGTERM)
        # Not ready at once (the balancer takes it out), still serving during
        # the drain delay: a request answered while /readyz still says
        # shutting_down after it was served inside the window (its listener
        # closes when the delay ends).
        rz = wait_draining(r)
        assert rz.status_code == 503 and rz.json()["status"] == "not_ready", rz.text
        assert rz.json()["reason"] == "shutting_down"
        q = r.post("/api/v1/datasets/trips/count", {})
        assert q.status_code == 200, q.text
        rz = r.get("/readyz", timeout=5)
        assert rz.status_code == 503 and rz.json()["reason"] == "shutting_down", rz.text
        assert r.proc.poll() is None
        # A second signal ends the delay; the reader exits cleanly.
        assert r.stop(timeout=20) == 0
        # Back on a new port, behind nginx again; the next one goes down only
        # once nginx routes to this one (cl.restart waits for it): what an
        # operator's rolling restart waits for too, else all three could be
        # out at once.
        cl.restart(r)
    time.sleep(0.5)
    ok, failures = load.finish()
    assert ok > 50 and failures == [], (ok, failures[:5])


def test_readers_keep_serving_while_the_writer_is_gone(cl):
    w = cl.writer
    gid = cl.status(w, "trips")["generation_id"]
    load = Load(cl.nginx.url)
    assert w.stop() == 0
    time.sleep(POLL_MS / 1000 * 4)
    for r in cl.readers:
        assert r.get("/readyz").status_code == 200
        assert cl.status(r, "trips")["generation_id"] == gid
    # A reader that starts meanwhile hydrates from the storage alone.
    r1 = cl.readers[1]
    assert drain_stop(r1) == 0
    cl.restart(r1)
    assert cl.status(r1, "trips")["generation_id"] == gid
    ok, failures = load.finish()
    assert ok > 20 and failures == [], (ok, failures[:5])
    # The writer comes back: it publishes new generations, readers follow.
    w.start()
    w.wait_ready(60)
    new = cl.status(w, "trips")["generation_id"]
    assert new != gid
    cl.wait_converged("trips", new, 10)


def test_collection_keeps_current_and_previous(tmp_path, moto):  # noqa: F811
    data = tmp_path / "data"
    write_parquet(data / "trips.parquet", "SELECT i AS id, 'x' AS city, 1.0 AS fare FROM range(10) t(i)")
    write_parquet(data / "events" / "p.parquet", "SELECT 1 AS id, 1 AS kind")
    moto.create_bucket("gcbucket")
    cfg = config("writer", 0, "s3://gcbucket/p", moto.endpoint, str(data)).replace(
        "pin_secs = 30\ngc_grace_secs = 60", "pin_secs = 1\ngc_grace_secs = 2\ngc_interval_secs = 1")
    (tmp_path / "w").mkdir()
    w = Server(tmp_path / "w", cfg, env=ENV).start()
    try:
        w.wait_ready(60)
        ids = [w.get("/api/v1/datasets/trips/status").json()["generation_id"]]
        for _ in range(3):
            assert w.post("/api/v1/datasets/trips/reload", headers=ADMIN).status_code == 200
            ids.append(w.get("/api/v1/datasets/trips/status").json()["generation_id"])

        def folders():
            keys = moto.list_keys("gcbucket", "p/trips/")
            return {k.split("/")[2] for k in keys if k.count("/") >= 3}

        deadline = time.time() + 15
        while time.time() < deadline and folders() != set(ids[-2:]):
            time.sleep(0.2)
        assert folders() == set(ids[-2:]), (folders(), ids)
        cur = json.loads(moto.get("gcbucket", "p/trips/CURRENT"))
        assert cur["generation_id"] == ids[-1] and cur["previous"] == ids[-2]
        # A collected generation is gone for pinned reads too.
        r = w.post(f"/api/v1/datasets/trips/count?generation={ids[0]}", {})
        assert r.status_code == 410
    finally:
        assert w.stop() == 0


def test_a_reader_before_any_catalog_answers_503_not_404(tmp_path, moto):  # noqa: F811
    """Until it has read the shared catalog a reader cannot know which names
    exist: 503 (a balancer retries elsewhere), never a 404 it would pass on."""
    moto.create_bucket("empty-shared")
    cfg = config("reader", 0, "s3://empty-shared/none", moto.endpoint,
                 str(tmp_path / "nowhere"))
    (tmp_path / "r").mkdir()
    r = Server(tmp_path / "r", cfg, env=ENV).start()
    try:
        assert r.get("/readyz").status_code == 503
        q = r.post("/api/v1/datasets/trips/count", {})
        assert q.status_code == 503 and q.json()["code"] == "dataset_not_ready", q.text
        assert r.get("/api/v1/datasets/trips/status").status_code == 503
    finally:
        assert r.stop() == 0


def duckdb_memory(server):
    """vitrine_duckdb_memory_bytes once the sampler (every second) has run."""
    time.sleep(1.2)
    for line in server.get("/metrics").text.splitlines():
        if line.startswith("vitrine_duckdb_memory_bytes "):
            return float(line.split()[1])
    raise AssertionError("no vitrine_duckdb_memory_bytes")


def test_a_reader_keeps_no_memory_of_replaced_generations(tmp_path, moto):  # noqa: F811
    """Each generation a reader imports is a new file: DuckDB's external file
    cache kept what it read of every one (keyed by path, evicted only at
    memory_limit): ~20 KiB of DuckDB memory per replaced generation of this
    file, forever. DuckDB's memory after eight more generations is what it
    was (tests/soak/rss_per_generation.py measures the RSS)."""
    data = tmp_path / "data"
    write_parquet(data / "trips.parquet",
                  "SELECT i AS id, md5(i::VARCHAR) AS city, i * 1.5 AS fare FROM range(60000) t(i)")
    write_parquet(data / "events" / "p.parquet", "SELECT 1 AS id, 1 AS kind")
    moto.create_bucket("memshared")
    (tmp_path / "w").mkdir()
    (tmp_path / "r").mkdir()
    w = Server(tmp_path / "w", config("writer", 0, "s3://memshared/p", moto.endpoint,
                                      str(data)), env=ENV).start()
    r = None
    try:
        w.wait_ready(60)
        r = Server(tmp_path / "r", config("reader", 0, "s3://memshared/p", moto.endpoint,
                                          str(tmp_path / "nowhere"),
                                          extra_server="[metrics]\nenabled = true"),
                   env=ENV).start()
        r.wait_ready(60)

        def generations(n):
            for _ in range(n):
                assert w.post("/api/v1/datasets/trips/reload", headers=ADMIN).status_code == 200
                gid = w.get("/api/v1/datasets/trips/status").json()["generation_id"]
                deadline = time.time() + 15
                while (time.time() < deadline and
                       r.get("/api/v1/datasets/trips/status").json()["generation_id"] != gid):
                    time.sleep(0.05)
                assert r.get("/api/v1/datasets/trips/status").json()["generation_id"] == gid

        generations(2)  # a current and a kept previous generation from now on
        before = duckdb_memory(r)
        generations(8)
        after = duckdb_memory(r)
        assert after - before < 48 * 1024, (before, after)
    finally:
        if r:
            assert r.stop() == 0
        assert w.stop() == 0
