#!/usr/bin/python3
"""`BENCH_SIZING=1 make bench`: the sizing table of docs/operations.md.

For each dataset size (bench.py's generated 10-column table, `vt-floor gen`),
one after the other on an otherwise idle server:
- DuckDB alone (`vt-floor load`: the table loaded as the service loads it,
  then idle): its RSS and what DuckDB counts (`duckdb_memory()`);
- vitrine with the dataset resident, `index.mode = "none"` and the default
  index (auto): idle RSS once published (and once the fast path is built),
  peak RSS, the index's memory and file bytes from /status;
- vitrine with the dataset `lazy = true`: idle RSS, and what a request costs
  (sequential latency of a point lookup by id, a filtered count and a
  1000-row page; the RSS growth over those requests).
Prints a Markdown table (also written to bench/out/<time>/sizing.md).

Knobs (environment, defaults in brackets):
  BENCH_SIZING_ROWS [250000,1000000,3000000]  sizes (rows), comma-separated
  BENCH_SIZING_RUNS [30]                      requests per lazy cost line
"""
import json
import os
import re
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench as b  # noqa: E402  (helpers: server control, RSS, data generator)

SIZES = [int(x) for x in os.environ.get("BENCH_SIZING_ROWS",
                                        "250000,1000000,3000000").split(",") if x.strip()]
RUNS = int(os.environ.get("BENCH_SIZING_RUNS", "30"))


def data_for(rows):
    path = os.path.join(b.DATA_DIR, "bench-v1-%d.parquet" % rows)
    if not os.path.exists(path):
        b.log("generating %s" % path)
        subprocess.run([b.FLOOR, "gen", path + ".tmp", str(rows)], check=True,
                       stdout=subprocess.DEVNULL)
        os.rename(path + ".tmp", path)
    return path


def floor_rss(path):
    p = b.spawn([b.FLOOR, "load", path, str(int(b.IDLE_SECONDS * 1000))],
                stdout=subprocess.PIPE, text=True)
    p.stdout.readline()
    m = re.search(r"rss_kb=(\d+) hwm_kb=(\d+) duckdb_bytes=(-?\d+)", p.stdout.readline())
    p.wait()
    b.started.remove(p)
    return int(m.group(1)) / 1024, int(m.group(2)) / 1024, int(m.group(3)) / 1048576


def mib(x):
    return x / 1048576


def expect(ok, answer):
    if not ok:
        raise AssertionError("unexpected answer: " + json.dumps(answer)[:300])


def timed(v, path, body, check):
    t0 = time.monotonic()
    st, _, data = v.post(path, body)
    ms = (time.monotonic() - t0) * 1000
    assert st == 200, data[:300]
    check(json.loads(data))
    return ms


def lazy_costs(v, rows):
    """Median sequential latency (ms) of three request kinds on a lazy dataset."""
    path = "/api/v1/datasets/main/query"
    ids = [1 + (i * 7919 * 127) % rows for i in range(RUNS)]
    out = {}
    out["lookup"] = statistics.median(
        timed(v, path, {"predicates": [{"col": "id", "op": "eq", "val": n}]},
              lambda d, n=n: expect(d["data"][0]["id"] == n, d))
        for n in ids)
    out["count"] = statistics.median(
        timed(v, path, {"predicates": [{"col": "category", "op": "eq",
                                        "val": b.CATEGORIES[i % len(b.CATEGORIES)]}],
                        "page_size": 1, "include_total": True},
              lambda d: expect(d.get("total", 0) > 0, d))
        for i in range(RUNS))
    out["page"] = statistics.median(
        timed(v, path, {"predicates": [{"col": "qty", "op": "gte", "val": 10 + i}],
                        "page_size": 1000},
              lambda d: expect(len(d["data"]) == 1000, d))
        for i in range(RUNS))
    return out


def measure(rows):
    path = data_for(rows)
    b.DATA = path
    file_mib = os.path.getsize(path) / 1048576
    f_rss, f_peak, f_db = floor_rss(path)
    b.detail("rows %d: floor idle RSS %.1f MiB, peak %.1f MiB, duckdb_memory %.1f MiB"
             % (rows, f_rss, f_peak, f_db))
    row = dict(rows=rows, file=file_mib, floor=f_rss, floor_db=f_db)
    for mode in ("none", "auto", "lazy"):
        extra = {"none": 'index.mode = "none"\n', "auto": "", "lazy": "lazy = true\n"}[mode]
        v = b.Vitrine("sizing-%d-%s" % (rows, mode), [("main", extra)])
        try:
            v.wait_published("main")
            if mode == "auto":
                v.wait_fastpath("main")
            time.sleep(b.IDLE_SECONDS)
            st = b.proc_status(v.pid)
            ix = (v.status("main") or {}).get("index") or {}
            row[mode] = st["VmRSS"] / 1024
            row[mode + "_peak"] = st["VmHWM"] / 1024
            if mode == "auto":
                row["ix_mem"] = mib(ix.get("memory_bytes", 0))
                row["ix_disk"] = mib(ix.get("disk_bytes", 0))
            if mode == "lazy":
                b.reset_hwm(v.pid)
                row["lazy_cost"] = lazy_costs(v, rows)
                st2 = b.proc_status(v.pid)
                row["lazy_grow"] = st2["VmHWM"] / 1024 - row["lazy"]
            b.detail("  %s: idle RSS %.1f MiB, peak %.1f MiB, index %s"
                     % (mode, row[mode], row[mode + "_peak"], json.dumps(ix)))
        finally:
            v.stop()
    return row


def table(rows):
    lines = [
        "| rows | Parquet | DuckDB alone | `index.mode = \"none\"` | default index (auto) "
        "| index memory / file | lazy (idle) | lazy request: lookup / count / 1000-row page "
        "| lazy peak growth |",
        "|---:|---:|---:|---:|---:|---:|---:|---|---:|"]
    for r in rows:
        c = r["lazy_cost"]
        lines.append(
            "| %s | %.0f MiB | %.0f MiB | %.0f MiB (%.2fx) | %.0f MiB (%.2fx), peak %.0f | "
            "%.1f / %.0f MiB | %.0f MiB | %.0f / %.0f / %.0f ms | %.0f MiB |"
            % ("{:,}".format(r["rows"]), r["file"], r["floor"], r["none"], r["none"] / r["floor"],
               r["auto"], r["auto"] / r["floor"], r["auto_peak"], r["ix_mem"], r["ix_disk"],
               r["lazy"], c["lookup"], c["count"], c["page"], r["lazy_grow"]))
    return "\n".join(lines)


def main():
    os.makedirs(b.OUT, exist_ok=True)
    b.log_file = open(os.path.join(b.OUT, "detail.log"), "w")
    os.makedirs(b.DATA_DIR, exist_ok=True)
    t0 = time.monotonic()
    try:
        out = []
        for rows in SIZES:
            b.log("== sizing: %d rows" % rows)
            out.append(measure(rows))
        text = table(out)
        print(text)
        with open(os.path.join(b.OUT, "sizing.md"), "w") as f:
            f.write(text + "\n")
    finally:
        for p in list(b.started):
            b.stop(p)
        b.log("sizing took %.0f s; details in %s" % (time.monotonic() - t0,
                                                      os.path.relpath(b.OUT, b.TOP)))


if __name__ == "__main__":
    main()
