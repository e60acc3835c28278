"""The PostgreSQL listener's benchmark, beside `make bench` (bench/README.md,
"pgwire"): the same dataset, server and helpers as bench/bench.py.

  P1  point lookups per second over pgwire, simple protocol (pgbench -M
      simple, one `SELECT * FROM main WHERE id = <random>` per transaction),
      beside the same lookup over HTTP (wrk POST /query, eq on id); and the
      same over pgwire with prepared statements (-M prepared), for reference.
  P2  rows per second of a 1M-row `SELECT * FROM main` read by a client that
      counts DataRow messages (build/vt-pgread, text and binary formats),
      beside DuckDB in-process streaming the same SELECT from the same table
      loaded as vitrine loads it (vt-pgread duck). One read is ~0.1-0.5 s on
      a shared 2-core machine, so the wall times move with whatever else
      runs: P2 takes BENCH_P2_ROUNDS (7) rounds, each text, binary and the
      floor back to back, the best of each; and beside it the CPU each side
      spent (the server's threads from /proc schedstat, the floor's and the
      client's own from getrusage), whose ratio (floor CPU / server CPU, the
      best of each) hardly moves with the load. The client's CPU (it counts
      messages, ~30 ms per 1M rows) is in the details.

Usage: bench/pgwire.py [BUILD_DIR]   (knobs: BENCH_ROWS, BENCH_ROUNDS,
BENCH_SECONDS, BENCH_THREADS, BENCH_CONNECTIONS as in bench/bench.py;
BENCH_ONLY=P1 or P2 runs one of them; BENCH_P2_ROUNDS)
"""
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench as b  # noqa: E402  (the shared helpers; its main() does not run)

PGBENCH = shutil.which("pgbench") or "/usr/lib/postgresql/15/bin/pgbench"
PGREAD = os.path.join(b.BUILD, "vt-pgread")


def with_pgwire(original):
    def config(name, port, datasets, *extra):
        path = original(name, port, datasets, *extra)
        with open(path) as f:
            text = f.read()
        text = text.replace("\n\n", '\n[server.pgwire]\nenabled = true\nport = 0\n\n', 1)
        with open(path, "w") as f:
            f.write(text)
        return path
    return config


def pg_port(v):
    def found():
        with open(v.log_path) as f:
            m = re.search(r"pgwire listening on [^ ]+:(\d+)", f.read())
        return int(m.group(1)) if m else None
    b.wait_until(found, 30, what="pgwire listener")
    return found()


def pgbench(port, script, mode, seconds, cpu_pids):
    args = [PGBENCH, "-n", "-h", "127.0.0.1", "-p", str(port), "-U", "vitrine", "-f", script,
            "-c", str(b.CONNS), "-j", str(b.THREADS), "-T", str(max(1, round(seconds))),
            "-M", mode, "vitrine"]
    c0 = b.cpu_seconds(cpu_pids)
    out = subprocess.run(args, capture_output=True, text=True, timeout=seconds + 120)
    c1 = b.cpu_seconds(cpu_pids)
    m = re.search(r"^tps = ([0-9.]+)", out.stdout, re.M)
    n = re.search(r"^number of transactions actually processed: (\d+)", out.stdout, re.M)
    f = re.search(r"^number of failed transactions: (\d+)", out.stdout, re.M)
    if not m or not n or (f and int(f.group(1))):
        raise RuntimeError("pgbench failed:\n" + out.stdout + out.stderr)
    tps, count = float(m.group(1)), int(n.group(1))
    r = {"rps": tps, "cpu_us_per_req": (c1 - c0) * 1e6 / max(1, count)}
    b.detail("  pgbench -M %s -c%d -j%d -> %.0f tps, server CPU %.1f us/tx" % (
        mode, b.CONNS, b.THREADS, tps, r["cpu_us_per_req"]))
    return r


P2_ROUNDS = max(1, int(os.environ.get("BENCH_P2_ROUNDS", "7")))


def want(name):
    """BENCH_ONLY's P names (P1, P2) pick; numbers are bench.py's."""
    picked = set(x for x in b.ONLY if x.startswith("P"))
    return not picked or name in picked


def pgread_runs(args, server_pids=()):
    """Runs vt-pgread; one dict per line it prints: rows, ms, cpu_ms (its
    own), server_cpu_ms (the given processes', over the whole call)."""
    c0 = b.cpu_seconds_exact(server_pids)
    out = subprocess.run([PGREAD] + args, capture_output=True, text=True, timeout=600)
    c1 = b.cpu_seconds_exact(server_pids)
    runs = [dict(rows=int(m.group(1)), ms=float(m.group(2)), cpu_ms=float(m.group(3)),
                 server_cpu_ms=(c1 - c0) * 1e3)
            for m in re.finditer(r"rows=(\d+) bytes=\d+ ms=([0-9.]+) cpu_ms=([0-9.]+)",
                                 out.stdout)]
    if out.returncode != 0 or not runs:
        raise RuntimeError("vt-pgread failed: " + out.stdout + out.stderr)
    for r in runs:
        b.detail("  vt-pgread %s -> %d rows in %.1f ms, its CPU %.1f ms%s" % (
            " ".join(args[:1] + args[-1:]), r["rows"], r["ms"], r["cpu_ms"],
            ", server CPU %.1f ms" % r["server_cpu_ms"] if server_pids else ""))
    return runs


def pgread(args):
    r = pgread_runs(args)[0]
    return r["rows"], r["ms"]


def main():
    t0 = time.monotonic()
    os.makedirs(b.OUT, exist_ok=True)
    b.log_file = open(os.path.join(b.OUT, "detail.log"), "w")
    for tool in (PGBENCH, PGREAD, b.VITRINE, b.FLOOR):
        if not os.access(tool, os.X_OK) and not shutil.which(tool):
            sys.exit("bench: %s is missing (make; ./scripts/install-deps.sh)" % tool)
    if not shutil.which("wrk"):
        sys.exit("bench: wrk is missing; run ./scripts/install-deps.sh")
    os.makedirs(b.DATA_DIR, exist_ok=True)
    if not os.path.exists(b.DATA):
        b.log("generating %s" % b.DATA)
        subprocess.run([b.FLOOR, "gen", b.DATA + ".tmp", str(b.ROWS)], check=True)
        os.rename(b.DATA + ".tmp", b.DATA)
    b.vitrine_config = with_pgwire(b.vitrine_config)
    v = b.Vitrine("pgwire", [("main", "")])
    try:
        v.wait_published("main")
        v.wait_fastpath("main")
        port = pg_port(v)
        b.log("pgwire bench: %d rows, %d rounds, %gs per run, -c%d -j%d; details in %s"
              % (b.ROWS, b.ROUNDS, b.SECONDS, b.CONNS, b.THREADS, os.path.relpath(b.OUT, b.TOP)))

        if want("P1"):
            p1(v, port)
        if want("P2"):
            p2(v, port)
    finally:
        v.stop()
        for proc in list(b.started):
            b.stop(proc)
        if b.results:
            b.print_table()
        b.log("pgwire bench took %.0f s" % (time.monotonic() - t0))


def p1(v, port):
    # P1: point lookups
    b.log("== P1. point lookup by id: pgwire simple protocol vs HTTP /query")
    path = "/api/v1/datasets/main/query"
    st, _, body = v.post(path, {"predicates": [{"col": "id", "op": "eq", "val": 7}]})
    assert st == 200 and b'"id":7' in body, body[:200]
    rows, _ = pgread(["pg", "127.0.0.1", str(port), "vitrine",
                      "SELECT * FROM main WHERE id = 7"])
    assert rows == 1
    script = os.path.join(b.OUT, "lookup.sql")
    with open(script, "w") as f:
        f.write("\\set id random(1, %d)\nSELECT * FROM main WHERE id = :id;\n" % b.ROWS)
    lua = b.write_lua("lookup", b.lua_post(
        path, body_expr='\'{"predicates":[{"col":"id","op":"eq","val":\' .. '
        'math.random(1, %d) .. \'}]}\'' % b.ROWS))
    simple, prepared, http = [], [], []
    for _ in range(b.ROUNDS):
        simple.append(pgbench(port, script, "simple", b.SECONDS, [v.pid]))
        prepared.append(pgbench(port, script, "prepared", b.SECONDS, [v.pid]))
        http.append(b.wrk(v.port, path, lua, b.THREADS, b.CONNS, b.SECONDS, [v.pid]))
    best = lambda xs: max(xs, key=lambda r: r["rps"])  # noqa: E731
    s, p, h = best(simple), best(prepared), best(http)
    b.add_result("P1 pgwire point lookup, simple", s["rps"], h["rps"], "req/s",
                 s["rps"] / h["rps"], None,
                 h["cpu_us_per_req"] / s["cpu_us_per_req"], "floor: the same over HTTP")
    b.add_result("P1 pgwire point lookup, prepared", p["rps"], h["rps"], "req/s",
                 p["rps"] / h["rps"], 0.5,
                 h["cpu_us_per_req"] / p["cpu_us_per_req"], "floor: the same over HTTP")


def p2(v, port):
    b.log("== P2. SELECT * of %d rows: pgwire (text, binary) vs DuckDB in-process, %d rounds"
          % (b.ROWS, P2_ROUNDS))
    sql = "SELECT * FROM main"
    text, binary, duck = [], [], []
    # The floor streams twice per round (its own process, the table loaded
    # once per round), the second run warm as the server's table is.
    for _ in range(P2_ROUNDS):
        text += pgread_runs(["pg", "127.0.0.1", str(port), "vitrine", sql, "text"], [v.pid])
        binary += pgread_runs(["pg", "127.0.0.1", str(port), "vitrine", sql, "binary"],
                              [v.pid])
        duck += pgread_runs(["duck", b.DATA, "SELECT * FROM t", "2"])
    for r in text + binary + duck:
        assert r["rows"] == b.ROWS, r
    floor_ms = min(r["ms"] for r in duck)
    floor_cpu = min(r["cpu_ms"] for r in duck)
    floor_rps = b.ROWS / (floor_ms / 1e3)
    for name, xs in (("text", text), ("binary", binary)):
        ms = min(r["ms"] for r in xs)
        cpu = min(r["server_cpu_ms"] for r in xs)
        client = statistics.median(r["cpu_ms"] for r in xs)
        rps = b.ROWS / (ms / 1e3)
        b.log("  %s: best %.0f ms (median %.0f), server CPU best %.0f ms (median %.0f), "
              "client CPU median %.0f ms; floor best %.0f ms (median %.0f), CPU %.0f ms"
              % (name, ms, statistics.median(r["ms"] for r in xs), cpu,
                 statistics.median(r["server_cpu_ms"] for r in xs), client, floor_ms,
                 statistics.median(r["ms"] for r in duck), floor_cpu))
        b.add_result("P2 SELECT * %d rows, %s" % (b.ROWS, name), rps, floor_rps, "rows/s",
                     rps / floor_rps, 0.5 if name == "binary" else None, floor_cpu / cpu,
                     "floor: DuckDB streaming the same SELECT in-process")


if __name__ == "__main__":
    main()
