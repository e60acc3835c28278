"""Local Parquet datasets at startup: file, glob, directory, hive columns,
projection, lazy and forced-lazy, non-blocking startup, skips and failures."""
import time

import requests

from conftest import dataset_block, server_block, sql, write_parquet


def rows(s, name):
    return s.get(f"/api/v1/datasets/{name}/status").json()["rows"]


def test_file_glob_and_directory(vt, datadir):
    for i in range(3):
        write_parquet(datadir / "parts" / f"p{i}.parquet", f"SELECT {i} AS k, range AS v FROM range(5)")
    write_parquet(datadir / "parts" / "deeper" / "p9.parquet", "SELECT 9 AS k, range AS v FROM range(5)")
    (datadir / "parts" / "_SUCCESS").write_text("")
    (datadir / "parts" / "notes.txt").write_text("not parquet")
    s = vt(server_block()
           + dataset_block("one", datadir / "parts" / "p0.parquet")
           + dataset_block("glob", f"{datadir}/parts/p*.parquet")
           + dataset_block("deep", f"{datadir}/parts/**/*.parquet")
           + dataset_block("dir", datadir / "parts"))
    assert rows(s, "one") == 5
    assert rows(s, "glob") == 15
    assert rows(s, "deep") == 20
    assert rows(s, "dir") == 20


def test_hive_directories_become_typed_columns(vt, datadir):
    sql(f"""COPY (SELECT i AS id, ['eu','us'][1 + i % 2] AS region, 2020 + i % 3 AS year
               FROM range(12) t(i)) TO '{datadir}/hive' (FORMAT parquet, PARTITION_BY (region, year))""")
    s = vt(server_block() + dataset_block("h", datadir / "hive"))
    sc = s.get("/api/v1/datasets/h/schema").json()
    types = {c["name"]: c["type"] for c in sc["columns"]}
    assert types["region"] == "VARCHAR"
    assert types["year"] == "BIGINT"
    assert sc["rows"] == 12


def test_columns_projection_at_load(vt, datadir):
    write_parquet(datadir / "t.parquet", "SELECT 1 AS a, 2 AS b, 3 AS c")
    s = vt(server_block() + dataset_block("t", datadir / "t.parquet", columns=["c", "a"]))
    sc = s.get("/api/v1/datasets/t/schema").json()
    assert [c["name"] for c in sc["columns"]] == ["c", "a"]


def test_unknown_projection_column_fails_that_dataset(vt, datadir):
    write_parquet(datadir / "t.parquet", "SELECT 1 AS a")
    s = vt(server_block() + dataset_block("bad", datadir / "t.parquet", columns=["zzz"])
           + dataset_block("good", datadir / "t.parquet"), wait="listening")
    st = s.wait_state("bad", ["failed"])
    assert "zzz" in st["last_error"]
    assert s.wait_state("good", ["published"])["rows"] == 1


def test_empty_source_is_skipped_with_warning(vt, datadir):
    write_parquet(datadir / "zero.parquet", "SELECT 1 AS a WHERE false")
    write_parquet(datadir / "ok.parquet", "SELECT 1 AS a")
    s = vt(server_block()
           + dataset_block("nofiles", f"{datadir}/missing/*.parquet")
           + dataset_block("nodir", datadir / "does-not-exist")
           + dataset_block("nofile", datadir / "typo.parquet")
           + dataset_block("zerorows", datadir / "zero.parquet")
           + dataset_block("ok", datadir / "ok.parquet"))
    names = [d["name"] for d in s.get("/api/v1/datasets").json()]
    assert names == ["ok"]
    log = s.log()
    for n in ("nofiles", "nodir", "nofile", "zerorows"):
        assert f"dataset {n} skipped" in log
    # A location that is not there says so, without calling a missing file
    # a directory ("cannot open directory .../typo.parquet" before)
    assert f"dataset nofile skipped: {datadir / 'typo.parquet'} does not exist" in log, log
    assert f"dataset nofiles skipped: {datadir / 'missing'} does not exist" in log, log
    assert "cannot open directory" not in log
    assert s.get("/readyz").json() == {"status": "ready", "datasets": 1}


def test_corrupt_file_fails_alone(vt, datadir):
    (datadir / "bad.parquet").write_bytes(b"PAR1" + b"\x00" * 100 + b"PAR1")
    write_parquet(datadir / "ok.parquet", "SELECT 1 AS a")
    s = vt(server_block() + dataset_block("bad", datadir / "bad.parquet")
           + dataset_block("ok", datadir / "ok.parquet"))
    st = s.wait_state("bad", ["failed"])
    assert st["last_error"] and len(st["last_error"]) <= 500
    assert st["rows"] == 0
    r = s.post("/api/v1/datasets/bad/count", {})
    assert r.status_code == 503
    assert s.get("/api/v1/datasets/ok/status").json()["state"] == "published"


def test_lazy_and_forced_lazy(vt, datadir):
    write_parquet(datadir / "big.parquet", "SELECT range AS id, md5(range::VARCHAR) AS h FROM range(200000)")
    write_parquet(datadir / "small.parquet", "SELECT 1 AS a")
    s = vt(server_block(force_lazy_above_mb=1)
           + dataset_block("big", datadir / "big.parquet")
           + dataset_block("small", datadir / "small.parquet")
           + dataset_block("chosen", datadir / "small.parquet", lazy=True))
    st = {d["name"]: d for d in s.get("/api/v1/datasets").json()}
    assert st["big"]["lazy"] is True and st["big"]["residency"] == "lazy"
    assert st["big"]["rows"] == 200000
    assert st["small"]["lazy"] is False
    assert st["chosen"]["lazy"] is True
    assert "force_lazy_above_mb" in s.log()


# The startup builds these tests watch are held in "building" by the server's
# test-only build gate (conftest.BuildGate) until the test has seen what it
# needs: small tables, and no race with the build on a loaded machine.
SLOW = "SELECT range AS id, md5(range::VARCHAR) AS a, md5((range+1)::VARCHAR) AS b FROM range(4000)"


def test_nonblocking_startup_503_then_ready(vt, datadir, build_gate):
    write_parquet(datadir / "slow.parquet", SLOW)
    build_gate.hold("slow")
    s = vt(server_block(workers=2) + dataset_block("slow", datadir / "slow.parquet"),
           wait="listening", gate=build_gate)
    # The listener is up before the dataset is built.
    assert s.get("/healthz").status_code == 200
    r = s.get("/readyz")
    assert r.status_code == 503 and r.json() == {"status": "not_ready", "datasets": 0}
    r = s.get("/api/v1/datasets/slow/schema")
    assert r.status_code == 503
    assert r.headers["Retry-After"] == "2"
    assert r.json()["code"] == "dataset_not_ready"
    assert s.get("/api/v1/datasets/slow/status").json()["state"] in ("pending", "building")
    build_gate.release("slow")
    s.wait_ready(timeout=120)
    assert s.get("/api/v1/datasets/slow/schema").status_code == 200


def test_on_start_lazy_builds_on_first_request(vt, datadir):
    write_parquet(datadir / "t.parquet", "SELECT range AS id FROM range(1000)")
    s = vt(server_block() + dataset_block("later", datadir / "t.parquet", on_start="lazy")
           + dataset_block("never", datadir / "t.parquet", on_start="skip"))
    assert s.get("/api/v1/datasets/later/status").json()["state"] == "pending"
    sc = s.get("/api/v1/datasets/later/schema")
    assert sc.status_code == 200 and sc.json()["rows"] == 1000
    assert s.get("/api/v1/datasets/later/status").json()["state"] == "published"
    r = s.get("/api/v1/datasets/never/schema")
    assert r.status_code == 503 and r.json()["code"] == "dataset_not_ready"
    assert s.get("/api/v1/datasets/never/status").json()["state"] == "pending"


def test_datafusion_backend_is_a_hint(vt):
    s = vt(server_block(backend="datafusion"))
    warns = [l for l in s.log().splitlines() if "only the DuckDB engine" in l]
    assert len(warns) == 1 and " WARN " in warns[0], warns
    assert s.get("/version").json()["backend"] == "DuckDB"


def test_default_backend_is_said_once_at_info(vt):
    """Issue 21 item 9: a config without server.backend (every default
    config) must not warn on each start: one INFO line names the engine."""
    s = vt(server_block())
    log = s.log().splitlines()
    assert not [l for l in log if " WARN " in l and "backend" in l], log
    info = [l for l in log if "server.backend" in l]
    assert len(info) == 1 and " INFO " in info[0], info
    s2 = vt(server_block(backend="duckdb"))
    assert "server.backend" not in s2.log()


def test_relative_location_resolves_against_config_dir(vt, tmp_path):
    work = tmp_path / "cfgdir"
    write_parquet(work / "data" / "t.parquet", "SELECT 42 AS answer")
    s = vt(server_block() + dataset_block("t", "data/t.parquet"), workdir=work)
    assert rows(s, "t") == 1


def test_readiness_any_is_ready_once_one_dataset_is_published(vt, datadir, build_gate):
    write_parquet(datadir / "slow.parquet", SLOW)
    write_parquet(datadir / "fast.parquet", "SELECT 1 AS a")
    cfg = (server_block() + "[server.startup]\nreadiness = \"any\"\nmax_concurrent = 2\n"
           + dataset_block("slow", datadir / "slow.parquet")
           + dataset_block("fast", datadir / "fast.parquet"))
    build_gate.hold("slow")
    s = vt(cfg, wait="listening", gate=build_gate)
    s.wait_state("fast", ["published"])
    r = s.get("/readyz")
    assert r.status_code == 200 and r.json() == {"status": "ready", "datasets": 2}
    assert s.get("/api/v1/datasets/slow/status").json()["state"] in ("pending", "building")
    build_gate.release("slow")
    s.wait_state("slow", ["published"])


def test_readiness_all_waits_for_every_startup_build(vt, datadir, build_gate):
    write_parquet(datadir / "slow.parquet", SLOW)
    write_parquet(datadir / "fast.parquet", "SELECT 1 AS a")
    cfg = (server_block() + "[server.startup]\nreadiness = \"all\"\nmax_concurrent = 1\n"
           + dataset_block("slow", datadir / "slow.parquet")
           + dataset_block("fast", datadir / "fast.parquet"))
    build_gate.hold("slow")
    s = vt(cfg, wait="listening", gate=build_gate)
    seen_not_ready = 0
    deadline = time.time() + 60
    while time.time() < deadline:
        r = s.get("/readyz")
        states = {d["name"]: d["state"] for d in s.get("/api/v1/datasets").json()}
        if r.status_code == 503:
            seen_not_ready += 1
            assert r.json() == {"status": "not_ready", "datasets": 0}
            if seen_not_ready == 3:
                # Not ready while "slow" builds (held); then let it finish.
                assert states["slow"] in ("pending", "building"), states
                build_gate.release("slow")
        else:
            assert states == {"slow": "published", "fast": "published"}
            break
        time.sleep(0.02)
    assert seen_not_ready >= 3
    # max_concurrent = 1: the two builds did not overlap (building states are exclusive)
    log = s.log()
    assert log.count(" published: ") == 2


def test_stale_runtime_dirs_of_dead_processes_are_removed(vt, tmp_path):
    # A runtime directory holds a lock its process keeps until it dies: a
    # directory whose lock nobody holds is an orphan, whatever its pid says
    # (in a container every process is pid 1, and a restarted container's
    # process has the dead one's pid). Directories without a lock (an older
    # version's) go by the pid and their age.
    import fcntl
    import os
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    old = 1_000_000_000  # 2001: untouched for long

    def make(name, lock=False, age=True):
        d = tmp / name
        (d / "exports").mkdir(parents=True)
        (d / "exports" / "big.parquet").write_bytes(b"x" * 1000)
        if lock:
            (d / ".lock").write_text("")
        if age:
            os.utime(d, (old, old))
        return d
    # no lock, a pid that cannot exist (above pid_max's ceiling), old: removed
    dead = make("vitrine-4194305-abc123")
    # the same but just made (its process may be taking its lock): kept
    fresh = make("vitrine-4194305-fresh1", age=False)
    # no lock, a live pid (ours): kept
    alive = make(f"vitrine-{os.getpid()}-def456")
    # a lock nobody holds, a live pid (a restarted container's pid 1): removed
    orphan = make(f"vitrine-{os.getpid()}-orphan", lock=True)
    # a lock held (a live process of another pid namespace), a dead pid: kept
    held = make("vitrine-4194306-held12", lock=True)
    holder = open(held / ".lock")
    fcntl.flock(holder, fcntl.LOCK_EX | fcntl.LOCK_NB)
    other = tmp / "not-ours"
    other.mkdir()
    try:
        s = vt(server_block(), env={"TMPDIR": str(tmp)})
        assert not dead.exists() and not orphan.exists()
        assert fresh.exists() and alive.exists() and held.exists() and other.exists()
        mine = [p for p in tmp.iterdir() if p.name.startswith(f"vitrine-{s.proc.pid}-")]
        assert len(mine) == 1
        # its own lock is held while it runs: a second start leaves it alone
        s2 = vt(server_block(), env={"TMPDIR": str(tmp)})
        assert mine[0].exists() and (mine[0] / ".lock").exists()
        assert s2.stop() == 0
        assert s.stop() == 0
        assert not mine[0].exists()   # removed at a clean exit
    finally:
        holder.close()
    # killed: its lock is released with it, and the next start removes it
    s3 = vt(server_block(), env={"TMPDIR": str(tmp)})
    killed = [p for p in tmp.iterdir() if p.name.startswith(f"vitrine-{s3.proc.pid}-")]
    s3.proc.kill()
    s3.proc.wait()
    assert len(killed) == 1 and killed[0].exists()
    s4 = vt(server_block(), env={"TMPDIR": str(tmp)})
    assert not killed[0].exists() and not held.exists()
    assert s4.stop() == 0


def test_libcurl_is_not_loaded_without_a_feature_that_needs_it(vt, datadir):
    # libcurl's ~35 libraries cost ~11M instructions at every exec
    # (src/util/curl_load.c): a server of local files, without OIDC or a
    # cluster, never maps them; S3 sources load it at first use
    # (test_sources_s3.py covers that path).
    write_parquet(datadir / "t.parquet", "SELECT 1 AS a")
    s = vt(server_block() + dataset_block("t", datadir / "t.parquet"))
    assert rows(s, "t") == 1
    maps = open(f"/proc/{s.proc.pid}/maps").read()
    assert "libduckdb" in maps
    assert "libcurl" not in maps
    assert "libgnutls" not in maps


def test_a_runtime_directory_on_tmpfs_is_warned_about(vt, tmp_path):
    # The index files, pre-rendered pages and spill files are meant for the
    # page cache and the disk; on tmpfs they are memory the kernel cannot
    # drop, so the start says so (and not on a disk-backed TMPDIR).
    import shutil
    import subprocess
    import tempfile

    def fs_type(path):
        return subprocess.run(["stat", "-f", "-c", "%T", str(path)], capture_output=True,
                              text=True, check=True).stdout.strip()
    assert fs_type("/dev/shm") == "tmpfs", "this machine has no /dev/shm tmpfs to test with"
    shm = tempfile.mkdtemp(prefix="vt-test-", dir="/dev/shm")
    try:
        s = vt(server_block(), env={"TMPDIR": shm})
        assert "is on tmpfs" in s.log() and shm in s.log(), s.log()[-2000:]
        assert s.stop() == 0
    finally:
        shutil.rmtree(shm, ignore_errors=True)
    disk = tmp_path / "disk"
    disk.mkdir()
    s = vt(server_block(), env={"TMPDIR": str(disk)})
    assert ("is on tmpfs" in s.log()) == (fs_type(disk) == "tmpfs")


def test_startup_log_says_where_the_uis_are(vt, tmp_path):
    """The server's root is no page, and a person who ran it was never told
    where the Explorer is: the log says, with server.prefix, and names only
    the UIs that are on."""
    s = vt(server_block(), workdir=tmp_path / "a")
    base = f"http://127.0.0.1:{s.port}"
    assert (f"open the Explorer at {base}/explore/, Swagger UI at {base}/docs/ in a browser"
            in s.log()), s.log()[-2000:]
    assert s.get("/explore/").status_code == 200 and s.get("/docs/").status_code == 200
    s = vt(server_block(prefix="/v") + "[explorer]\nenabled = false\n", workdir=tmp_path / "b")
    assert f"open Swagger UI at http://127.0.0.1:{s.port}/v/docs/ in a browser" in s.log()
    assert "Explorer at" not in s.log()
    s = vt(server_block() + "[explorer]\nenabled = false\n[swagger]\nenabled = false\n",
           workdir=tmp_path / "c")
    assert "in a browser" not in s.log()
