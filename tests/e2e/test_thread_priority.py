"""CPU priority by thread (server.worker_nice, README "Fair latency under
mixed load (12)"): by default the HTTP loops, which answer point lookups and
counts from the index, keep the process's nice, while every query worker (each
lane's) and DuckDB's task threads run 5 nice levels lower, so a loop that
wakes for a lookup gets a busy core first. lane_nice adds to it for the long
and stream lanes; worker_nice = 0 runs them all at the process's priority.

Read from the kernel (/proc/PID/task/TID/stat, field 19) on a running
server: the mechanism, not a timing.
"""
import os
import time

import pytest

from conftest import dataset_block, server_block, write_parquet


def threads(pid):
    """(comm, nice, scheduling policy) of every thread of process pid: stat's
    fields 19 and 41."""
    out = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = f.read().strip()
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # a thread that just ended
        out.append((name, int(fields[16]), int(fields[38])))
    return out


def threads_by_name(pid):
    """{comm: [nice, ...]} for every thread of process pid."""
    out = {}
    for name, nice, _ in threads(pid):
        out.setdefault(name, []).append(nice)
    return out


def settled(pid, want_names, timeout=10):
    """threads_by_name once every name in want_names has a thread (a worker
    sets its nice as it starts; the pools start with the server)."""
    deadline = time.monotonic() + timeout
    while True:
        th = threads_by_name(pid)
        if all(any(n.startswith(w) for n in th) for w in want_names) or \
                time.monotonic() > deadline:
            return th
        time.sleep(0.05)


def nices(by_name, prefix):
    return sorted(n for name, ns in by_name.items() if name.startswith(prefix) for n in ns)


@pytest.fixture
def data(datadir):
    return write_parquet(datadir / "t.parquet",
                         "SELECT i AS id, i % 7 AS g FROM range(1000) t(i)")


def lowered(base, more):
    return min(19, base + more)


def test_workers_run_below_the_http_loops_by_default(vt, data):
    s = vt(server_block(workers=2) + dataset_block("t", data))
    th = settled(s.proc.pid, ("http-loop", "query-0", "query-1", "query-l", "query-s"))
    base = os.getpriority(os.PRIO_PROCESS, 0)  # the server inherits the test's nice
    loops = nices(th, "http-loop")
    assert loops and all(n == base for n in loops), th
    short = [n for name, ns in th.items() if name in ("query-0", "query-1") for n in ns]
    assert len(short) == 2 and all(n == lowered(base, 5) for n in short), th
    for lane in ("query-l", "query-s"):
        got = nices(th, lane)
        assert got and all(n == lowered(base, 5) for n in got), (lane, th)
    # DuckDB's task threads (threads - 1 of them; none on one CPU)
    assert all(n == lowered(base, 5) for n in nices(th, "duckdb-task")), th
    # Threads of no pool keep the process's priority.
    assert all(n == base for n in nices(th, "http-accept")), th


def test_lane_nice_adds_to_worker_nice_and_zero_turns_it_off(vt, data):
    s = vt(server_block(workers=2, worker_nice=2, lane_nice=3) + dataset_block("t", data))
    th = settled(s.proc.pid, ("http-loop", "query-0", "query-1", "query-l", "query-s"))
    base = os.getpriority(os.PRIO_PROCESS, 0)
    assert all(n == lowered(base, 2) for n in nices(th, "query-0") + nices(th, "query-1")), th
    assert all(n == lowered(base, 5) for n in nices(th, "query-l") + nices(th, "query-s")), th
    assert nices(th, "query-l") and nices(th, "query-s"), th
    assert all(n == base for n in nices(th, "http-loop")), th

    s0 = vt(server_block(workers=2, worker_nice=0) + dataset_block("t", data))
    th0 = settled(s0.proc.pid, ("query-0", "query-l", "query-s"))
    pool = nices(th0, "query-") + nices(th0, "duckdb-task")
    assert pool and all(n == base for n in pool), th0


def policies(pid, prefix):
    """The scheduling policy of every thread whose name starts with prefix."""
    return [policy for name, _, policy in threads(pid) if name.startswith(prefix)]


def test_worker_idle_puts_every_worker_under_sched_idle_and_no_loop(vt, data):
    s = vt(server_block(workers=2, worker_idle=True) + dataset_block("t", data))
    settled(s.proc.pid, ("http-loop", "query-0", "query-1", "query-l", "query-s"))
    pid = s.proc.pid
    for prefix in ("query-0", "query-1", "query-l", "query-s", "duckdb-task"):
        got = policies(pid, prefix)
        assert all(p == os.SCHED_IDLE for p in got), (prefix, got)
        if prefix != "duckdb-task":  # none on a one-CPU machine
            assert got, prefix
    for prefix in ("http-loop", "http-accept"):
        got = policies(pid, prefix)
        assert got and all(p == os.SCHED_OTHER for p in got), (prefix, got)
    # The nice still applies on top (it orders the workers among themselves).
    th = threads_by_name(pid)
    base = os.getpriority(os.PRIO_PROCESS, 0)
    assert all(n == lowered(base, 5) for n in nices(th, "query-0")), th
    # Queries still run.
    r = s.post("/api/v1/datasets/t/query", {"group_by": ["g"], "aggregations": [{"op": "count"}]})
    assert r.status_code == 200 and len(r.json()["data"]) == 7, r.text


def test_workers_stay_sched_other_by_default(vt, data):
    s = vt(server_block(workers=2) + dataset_block("t", data))
    settled(s.proc.pid, ("query-0", "query-l", "query-s"))
    got = policies(s.proc.pid, "query-") + policies(s.proc.pid, "duckdb-task")
    assert got and all(p == os.SCHED_OTHER for p in got), got
