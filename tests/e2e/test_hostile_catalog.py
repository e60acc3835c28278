"""Hostile and careless input to the catalog's admin paths (issue 10, item 8):
names that differ only in case, persist of blocks registration would refuse,
and memory after large sorts coming back to the idle level."""
import os
import subprocess
import threading
import time

from conftest import VITRINE, dataset_block, server_block, write_parquet

TOKEN = "s3cret-token"
ADMIN = {"X-Admin-Token": TOKEN}


def body_for(name, location, **extra):
    return {"name": name, "source": {"kind": "parquet", "location": str(location)}, **extra}


# ------------------------------------------------------------ names and case


def test_registration_refuses_a_name_differing_only_in_case(vt, datadir):
    f = write_parquet(datadir / "t.parquet", "SELECT 1 AS a")
    s = vt(server_block(allowed_roots=[datadir]) + dataset_block("trips", f),
           env={"ADMIN_TOKEN": TOKEN})
    for name in ("Trips", "TRIPS", "tRiPs"):
        r = s.post("/api/v1/datasets", body_for(name, f), headers=ADMIN)
        assert r.status_code == 400, r.text
        assert r.json()["code"] == "dataset_exists"
        assert '"trips"' in r.json()["error"] and "ignoring case" in r.json()["error"]
    # The exact name keeps its old message; other names are fine.
    r = s.post("/api/v1/datasets", body_for("trips", f), headers=ADMIN)
    assert r.status_code == 400 and r.json()["code"] == "dataset_exists"
    assert s.post("/api/v1/datasets", body_for("trips2", f), headers=ADMIN).status_code == 200
    # Lookups stay exact: the other spelling is not an alias.
    assert s.get("/api/v1/datasets/TRIPS/status").status_code == 404
    names = [d["name"] for d in s.get("/api/v1/datasets").json()]
    assert sorted(names) == ["trips", "trips2"]


def test_config_file_with_names_differing_only_in_case_fails_naming_both(vt, datadir, tmp_path):
    f = write_parquet(datadir / "t.parquet", "SELECT 1 AS a")
    cfg = tmp_path / "bad.toml"
    cfg.write_text(server_block() + dataset_block("sales", f) + dataset_block("Sales", f))
    r = subprocess.run([str(VITRINE), "check-config", str(cfg)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 1
    assert '"Sales"' in r.stderr and '"sales"' in r.stderr and "ignoring case" in r.stderr
    assert "bad.toml:9" in r.stderr  # the line of the second block's name
    r = subprocess.run([str(VITRINE), "--config", str(cfg)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode != 0 and '"Sales"' in r.stderr and '"sales"' in r.stderr


def test_config_reload_reports_a_case_collision_as_an_error(vt, datadir):
    f = write_parquet(datadir / "t.parquet", "SELECT 1 AS a")
    s = vt(server_block(allowed_roots=[datadir]) + dataset_block("a", f), env={"ADMIN_TOKEN": TOKEN})
    assert s.post("/api/v1/datasets", body_for("runtime", f), headers=ADMIN).status_code == 200
    s.config_path.write_text(s.config_path.read_text() + dataset_block("Runtime", f)
                             + dataset_block("fresh", f))
    r = s.post("/api/v1/config/reload", headers=ADMIN)
    assert r.status_code == 200
    body = r.json()
    assert body["registered"] == ["fresh"] and body["skipped"] == ["a"]
    assert [e["dataset"] for e in body["errors"]] == ["Runtime"]
    assert "runtime" in body["errors"][0]["error"]
    assert s.get("/api/v1/datasets/Runtime/status").status_code == 404


# ------------------------------------------------------------ persist


def test_persist_validates_like_registration(vt, datadir):
    f = write_parquet(datadir / "t.parquet", "SELECT range AS a FROM range(3)")
    s = vt(server_block(allowed_roots=[datadir]) + dataset_block("base", f),
           env={"ADMIN_TOKEN": TOKEN})
    original = s.config_path.read_text()
    cases = [
        (body_for("bad name", f), "invalid_name"),
        (body_for("reload-all", f), "invalid_name"),
        (body_for("Base", f), "dataset_exists"),                      # in the file, other case
        (body_for("x", datadir / "missing.parquet"), "source_empty"),  # nothing to open
        (body_for("x", datadir / "nothing-*.parquet"), "source_empty"),
        ({**body_for("x", f), "lazzy": True}, "unknown_field"),
        ({"name": "x", "source": {"kind": "parquet"}}, "invalid_config"),
        ({"name": "q", "sql": "SELECT 1", "depends_on": ["not_in_file"]}, "invalid_config"),
    ]
    for body, code in cases:
        r = s.post("/api/v1/datasets/persist", body, headers=ADMIN)
        assert r.status_code == 400, (body, r.text)
        assert r.json()["code"] == code, (body, r.text)
        assert s.config_path.read_text() == original, body
    # A runtime dataset under another spelling blocks the name, too.
    assert s.post("/api/v1/datasets", body_for("live", f), headers=ADMIN).status_code == 200
    r = s.post("/api/v1/datasets/persist", body_for("LIVE", f), headers=ADMIN)
    assert r.status_code == 400 and r.json()["code"] == "dataset_exists"
    # Register then persist under the same name: the usual way to keep it.
    r = s.post("/api/v1/datasets/persist", body_for("live", f), headers=ADMIN)
    assert r.status_code == 200, r.text
    assert r.json() == {"persisted": True, "path": str(s.config_path)}
    # A query dataset over datasets of the file is fine.
    r = s.post("/api/v1/datasets/persist",
               {"name": "q", "sql": "SELECT count(*) AS n FROM base", "depends_on": ["base"]},
               headers=ADMIN)
    assert r.status_code == 200, r.text
    r = subprocess.run([str(VITRINE), "check-config", str(s.config_path)], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    text = s.config_path.read_text()
    assert text.startswith(original) and 'name = "live"' in text and 'name = "q"' in text
    # Persisting the same name again is refused (it is in the file now).
    r = s.post("/api/v1/datasets/persist", body_for("live", f), headers=ADMIN)
    assert r.status_code == 400 and r.json()["code"] == "dataset_exists"


# ------------------------------------------------------------ memory


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


# The bound this test holds the service to: within SETTLE_SECS of the last
# large query, RSS is back within MARGIN_MIB of its idle value before them.
# Measured on the 2-core machine: peaks of 0.6-0.9 GB during the sorts, back
# to idle + ~6 MiB within 3 s (DuckDB's jemalloc purges from its background
# threads, allocator_background_threads = true). Without them RSS stays
# 200+ MiB above idle.
MARGIN_MIB = 100
SETTLE_SECS = 20


def test_memory_returns_after_large_sorts(vt, datadir):
    f = write_parquet(datadir / "big.parquet",
                      "SELECT range AS id, md5(range::VARCHAR) AS token, "
                      "hash(range) % 1000003 AS score, range % 1000 AS qty FROM range(2000000)")
    # Under ASan, freed memory waits in a quarantine (256 MiB by default)
    # that reads as memory not returned; a small one keeps RSS honest.
    env = {"ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") + ":quarantine_size_mb=16"}
    s = vt(server_block() + dataset_block("big", f), env=env)
    pid = s.proc.pid
    # Idle: after the build and the index fast path, once RSS stops moving.
    assert s.post("/api/v1/datasets/big/count", {}).json()["count"] == 2000000
    idle = rss_mib(pid)
    for _ in range(50):
        time.sleep(0.2)
        now = rss_mib(pid)
        if abs(now - idle) < 2:
            break
        idle = now
    peak = idle

    def sort(col, direction):
        r = s.post("/api/v1/datasets/big/query",
                   {"order_by": [{"col": col, "dir": direction}], "page_size": 100000},
                   timeout=120)
        assert r.status_code == 200, r.text
        assert len(r.json()["data"]) == 100000

    for col, direction in (("token", "desc"), ("score", "asc")):
        sort(col, direction)
        peak = max(peak, rss_mib(pid))
    # And two at once, as two clients would.
    ts = [threading.Thread(target=sort, args=a) for a in (("token", "asc"), ("score", "desc"))]
    for t in ts:
        t.start()
    while any(t.is_alive() for t in ts):
        peak = max(peak, rss_mib(pid))
        time.sleep(0.02)
    for t in ts:
        t.join()
    deadline = time.time() + SETTLE_SECS
    now = rss_mib(pid)
    while time.time() < deadline and now > idle + MARGIN_MIB:
        time.sleep(0.25)
        now = rss_mib(pid)
    print(f"idle {idle:.0f} MiB, peak {peak:.0f} MiB, after {now:.0f} MiB")
    assert now <= idle + MARGIN_MIB, (idle, peak, now)
    # The server still answers normally.
    assert s.post("/api/v1/datasets/big/count", {}).json()["count"] == 2000000
