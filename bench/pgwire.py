"""The PostgreSQL listener's benchmark, beside `make bench` (bench/README.md,
"pgwire"): the same dataset, server and helpers as bench/bench.py.

  P1  point lookups per second over pgwire, simple protocol (pgbench -M
      simple, one `SELECT * FROM main WHERE id = <random>` per transaction),
      beside the same lookup over HTTP (wrk POST /query, eq on id); and the
      same over pgwire with prepared statements (-M prepared), for reference.
  P2  rows per second of a 1M-row `SELECT * FROM main` read by a client that
      counts DataRow messages (build/vt-pgread, text and binary formats),
      beside DuckDB in-process streaming the same SELECT from the same table
      loaded as vitrine loads it (vt-pgread duck).

Usage: bench/pgwire.py [BUILD_DIR]   (knobs: BENCH_ROWS, BENCH_ROUNDS,
BENCH_SECONDS, BENCH_THREADS, BENCH_CONNECTIONS as in bench/bench.py)
"""
import os
import re
import shutil
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


def pgread(args):
    out = subprocess.run([PGREAD] + args, capture_output=True, text=True, timeout=600)
    m = re.search(r"rows=(\d+) bytes=(\d+) ms=([0-9.]+)", out.stdout)
    if out.returncode != 0 or not m:
        raise RuntimeError("vt-pgread failed: " + out.stdout + out.stderr)
    rows, ms = int(m.group(1)), float(m.group(3))
    b.detail("  vt-pgread %s -> %d rows in %.1f ms" % (" ".join(args[:1] + args[-1:]), rows, ms))
    return rows, ms


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

        # P2: a whole table
        b.log("== P2. SELECT * of %d rows: pgwire (text, binary) vs DuckDB in-process" % b.ROWS)
        sql = "SELECT * FROM main"
        text = [pgread(["pg", "127.0.0.1", str(port), "vitrine", sql, "text"])
                for _ in range(b.ROUNDS)]
        binary = [pgread(["pg", "127.0.0.1", str(port), "vitrine", sql, "binary"])
                  for _ in range(b.ROUNDS)]
        duck = [pgread(["duck", b.DATA, "SELECT * FROM t"]) for _ in range(b.ROUNDS)]
        for rows, _ in text + binary + duck:
            assert rows == b.ROWS, rows
        fast = lambda xs: min(ms for _, ms in xs)  # noqa: E731
        floor_rps = b.ROWS / (fast(duck) / 1e3)
        for name, xs in (("text", text), ("binary", binary)):
            rps = b.ROWS / (fast(xs) / 1e3)
            b.add_result("P2 SELECT * %d rows, %s" % (b.ROWS, name), rps, floor_rps, "rows/s",
                         rps / floor_rps, 0.5 if name == "binary" else None, None,
                         "floor: DuckDB streaming the same SELECT in-process")
    finally:
        v.stop()
        for proc in list(b.started):
            b.stop(proc)
        if b.results:
            b.print_table()
        b.log("pgwire bench took %.0f s" % (time.monotonic() - t0))


if __name__ == "__main__":
    main()
