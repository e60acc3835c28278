#!/usr/bin/python3
"""Runs vitrine under the system call filter of deploy/systemd/vitrine.service
and checks that it starts, answers the requests an operator's clients send
and stops cleanly (make deploy-check).

systemd-analyze verify reads the unit's syntax, not whether the service can
live in its sandbox: a SystemCallFilter= that leaves out a call vitrine makes
(setpriority for the workers' nice, sched_setattr for the HTTP loops' slice)
kills it with SIGSYS at startup, and nothing but running it shows that. This
machine has no systemd as pid 1, so the filter is built the way systemd
builds it from the unit's own lines (the groups expanded by
`systemd-analyze syscall-filter`) and loaded with libseccomp
(python3-seccomp) before exec; MemoryDenyWriteExecute= (systemd's own
filter on mmap/mprotect) and LimitNOFILE= are applied too.

usage: systemd_sandbox.py UNIT VITRINE (vt-sql beside it writes the data)
"""
import mmap
import os
import re
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request


def expand(name, seen=None):
    """The system calls of a name: a call, or a @group (recursively)."""
    seen = set() if seen is None else seen
    if not name.startswith("@"):
        return {name}
    if name in seen:
        return set()
    seen.add(name)
    out = subprocess.run(["systemd-analyze", "syscall-filter", name], capture_output=True,
                         text=True, check=True).stdout
    calls = set()
    for line in out.splitlines()[1:]:
        t = line.strip()
        if t and not t.startswith("#"):
            calls |= expand(t, seen)
    return calls


def unit_filter(unit_text):
    """(allowed calls or None for no allow list, denied calls, errno or None)."""
    allow, deny, errno = None, set(), None
    for line in unit_text.splitlines():
        m = re.match(r"\s*SystemCallFilter=(.*)$", line)
        if m:
            v = m.group(1).strip()
            if v.startswith("~"):
                for n in v[1:].split():
                    calls = expand(n)
                    deny |= calls
                    if allow is not None:
                        allow -= calls
            else:
                calls = set()
                for n in v.split():
                    calls |= expand(n)
                allow = calls if allow is None else allow | calls
                deny -= calls
        m = re.match(r"\s*SystemCallErrorNumber=(\S+)", line)
        if m:
            errno = m.group(1)
    return allow, deny, errno


def nofile(unit_text):
    m = re.search(r"^LimitNOFILE=(\d+)", unit_text, re.M)
    return int(m.group(1)) if m else None


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def main():
    unit_path, vitrine = sys.argv[1], os.path.abspath(sys.argv[2])
    unit = open(unit_path).read()
    allow, deny, _errno = unit_filter(unit)
    import seccomp
    # Stricter than the unit: a call it would refuse with an error
    # (SystemCallErrorNumber=) kills here, so every refused call shows.
    action = seccomp.KILL_PROCESS
    work = tempfile.mkdtemp(prefix="vt-sandbox-")
    data = work
    vt_sql = os.path.join(os.path.dirname(vitrine), "vt-sql")
    subprocess.run([vt_sql, f"COPY (SELECT i AS id, i % 250 AS pickup_station, i * 0.5 AS fare, "
                            f"TIMESTAMP '2024-01-01' + to_seconds(i * 37) AS pickup_at "
                            f"FROM range(20000) t(i)) TO '{work}/trips.parquet' (FORMAT parquet)",
                    f"COPY (SELECT i AS station, 'station ' || i AS name FROM range(250) t(i)) "
                    f"TO '{work}/stations.parquet' (FORMAT parquet)"], check=True,
                   capture_output=True)
    port, pg_port = free_port(), free_port()
    cfg = os.path.join(work, "datasets.toml")
    with open(cfg, "w") as f:
        f.write(f'''[server]
listen = "127.0.0.1"
port = {port}
[sql]
enabled = true
[metrics]
enabled = true
[server.pgwire]
enabled = true
port = {pg_port}
username = "vitrine"
[[dataset]]
name = "trips"
source.kind = "parquet"
source.location = "{data}/trips.parquet"
[[dataset]]
name = "stations"
source.kind = "parquet"
source.location = "{data}/stations.parquet"
''')
    limit = nofile(unit)
    mdwe = re.search(r"^MemoryDenyWriteExecute=(yes|true|1)\s*$", unit, re.M) is not None

    def sandbox():
        if limit:
            # (raising the hard limit needs privilege; the unit's service
            # would have it, so without it the soft limit goes as high as it can)
            hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
            try:
                resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))
            except (ValueError, OSError):
                resource.setrlimit(resource.RLIMIT_NOFILE, (min(limit, hard), hard))
        if mdwe:
            # MemoryDenyWriteExecute=, as systemd filters it: no mapping both
            # writable and executable, no page made executable later, no
            # executable shared memory (a filter of its own, loaded first: the
            # unit's list may not allow seccomp itself; the kernel applies the
            # stricter answer of the two)
            w = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
            wx = mmap.PROT_WRITE | mmap.PROT_EXEC
            w.add_rule(action, "mmap", seccomp.Arg(2, seccomp.MASKED_EQ, wx, wx))
            for call in ("mprotect", "pkey_mprotect"):
                w.add_rule(action, call, seccomp.Arg(2, seccomp.MASKED_EQ, mmap.PROT_EXEC,
                                                     mmap.PROT_EXEC))
            w.add_rule(action, "shmat", seccomp.Arg(2, seccomp.MASKED_EQ, 0o100000, 0o100000))
            w.load()
        f = seccomp.SyscallFilter(defaction=action if allow is not None else seccomp.ALLOW)
        for call in sorted(allow if allow is not None else deny):
            try:
                f.add_rule(seccomp.ALLOW if allow is not None else action, call)
            except (RuntimeError, ValueError, OSError):
                pass  # not a call of this architecture
        f.load()

    env = dict(os.environ, TMPDIR=work, ADMIN_TOKEN="sandbox-token")
    # A sanitizer build (make SAN=1 check): LeakSanitizer stops the process
    # with ptrace at exit, a call of the test tool, not of the service.
    env["ASAN_OPTIONS"] = (env.get("ASAN_OPTIONS", "") + ":detect_leaks=0").lstrip(":")
    log = open(os.path.join(work, "log"), "w+")
    p = subprocess.Popen([vitrine, "--config", cfg], preexec_fn=sandbox, stdout=log,
                         stderr=subprocess.STDOUT, env=env)
    base = f"http://127.0.0.1:{port}"
    failures = []

    def get(path, body=None, headers=None):
        req = urllib.request.Request(base + path, data=body, headers=headers or {})
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read()

    try:
        deadline = time.time() + 60
        while True:
            if p.poll() is not None:
                log.seek(0)
                raise SystemExit(log.read()[-3000:] +
                                 f"\nvitrine died at startup in the sandbox (exit {p.returncode}"
                                 f"{', SIGSYS: a call the filter denies' if p.returncode == -signal.SIGSYS else ''})")
            try:
                if get("/readyz")[0] == 200:
                    break
            except OSError:
                pass
            if time.time() > deadline:
                raise SystemExit("vitrine did not become ready in the sandbox")
            time.sleep(0.1)
        checks = [
            ("query", lambda: get("/api/v1/datasets/trips/query", b'{"page_size": 5}',
                                  {"Content-Type": "application/json"})),
            ("count", lambda: get("/api/v1/datasets/trips/count", b"{}",
                                  {"Content-Type": "application/json"})),
            ("group by", lambda: get("/api/v1/datasets/trips/query",
                                     b'{"group_by": ["pickup_station"], "aggregations": [{"op": "count"}]}',
                                     {"Content-Type": "application/json"})),
            ("sql", lambda: get("/api/v1/sql", b'{"sql": "SELECT count(*) AS n FROM trips"}',
                                {"Content-Type": "application/json"})),
            ("parquet", lambda: get("/api/v1/datasets/trips/parquet")),
            ("stream", lambda: get("/api/v1/datasets/trips/query/stream", b"{}",
                                   {"Content-Type": "application/json",
                                    "Accept": "application/vnd.apache.arrow.stream"})),
            ("metrics", lambda: get("/metrics")),
            ("reload", lambda: get("/api/v1/datasets/trips/reload", b"",
                                   {"X-Admin-Token": "sandbox-token"})),
        ]
        for name, call in checks:
            try:
                st, body = call()
                if st != 200 and not (name == "reload" and st == 202):
                    failures.append(f"{name}: HTTP {st} {body[:200]!r}")
            except Exception as e:  # an HTTP error or the process gone
                failures.append(f"{name}: {e}")
            if p.poll() is not None:
                failures.append(f"vitrine died after {name} (exit {p.returncode})")
                break
        # the workers' nice (server.worker_nice, 5 above the process's) took effect
        nices = {}
        for tid in os.listdir(f"/proc/{p.pid}/task"):
            try:
                stat = open(f"/proc/{p.pid}/task/{tid}/stat").read()
                nices[int(tid)] = int(stat.rsplit(")", 1)[1].split()[16])
            except (OSError, ValueError, IndexError):
                pass
        want = min(19, nices.get(p.pid, 0) + 5)
        if want not in set(nices.values()) - {nices.get(p.pid)}:
            failures.append(f"no thread runs at the workers' nice {want}: {sorted(set(nices.values()))}")
        if p.poll() is None:
            try:
                out = subprocess.run(["psql", "-h", "127.0.0.1", "-p", str(pg_port), "-U", "vitrine",
                                      "-d", "vitrine", "-Atc", "SELECT count(*) FROM trips"],
                                     capture_output=True, text=True, timeout=30)
                if out.returncode != 0 or not out.stdout.strip().isdigit():
                    failures.append(f"psql: {out.stdout} {out.stderr}")
            except FileNotFoundError:
                failures.append("psql is missing (scripts/install-deps.sh)")
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                rc = p.wait(60)
            except subprocess.TimeoutExpired:
                p.kill()
                rc = "hung"
            if rc != 0:
                failures.append(f"stop: exit {rc}")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        log.seek(0)
        text = log.read()
        subprocess.run(["rm", "-rf", work])
    if failures:
        print("vitrine in the systemd unit's sandbox:\n  " + "\n  ".join(failures))
        print(text[-3000:])
        sys.exit(1)
    print("vitrine runs in the systemd unit's sandbox (SystemCallFilter, "
          f"{'MemoryDenyWriteExecute, ' if mdwe else ''}LimitNOFILE): "
          f"{len(checks)} HTTP calls, psql, a clean stop")


if __name__ == "__main__":
    main()
