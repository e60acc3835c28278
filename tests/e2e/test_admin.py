"""Dataset lifecycle and admin endpoints: reload, reload-all, registration,
persist, config reload, the admin token."""
import os
import random
import signal
import subprocess
import threading
import time

import requests

from conftest import VITRINE, Server, dataset_block, server_block, write_parquet

TOKEN = "s3cret-token"
ADMIN = {"X-Admin-Token": TOKEN}


def status(s, name):
    return s.get(f"/api/v1/datasets/{name}/status").json()


def test_reload_is_403_without_admin_token_env(vt, datadir):
    write_parquet(datadir / "t.parquet", "SELECT 1 AS a")
    s = vt(server_block() + dataset_block("t", datadir / "t.parquet"))
    for headers in ({}, ADMIN, {"X-Admin-Token": ""}):
        r = s.post("/api/v1/datasets/t/reload", headers=headers)
        assert r.status_code == 403 and r.json()["code"] == "admin_disabled"
    for path in ("/api/v1/datasets/reload-all", "/api/v1/config/reload"):
        assert s.post(path, headers=ADMIN).status_code == 403
    r = s.post("/api/v1/datasets", {"name": "x", "source": {"kind": "parquet", "location": "x"}},
               headers=ADMIN)
    assert r.status_code == 403


def test_reload_token_checks(vt, datadir):
    write_parquet(datadir / "t.parquet", "SELECT 1 AS a")
    s = vt(server_block() + dataset_block("t", datadir / "t.parquet"), env={"ADMIN_TOKEN": TOKEN})
    for headers in ({}, {"X-Admin-Token": ""}, {"X-Admin-Token": "wrong"},
                    {"X-Admin-Token": TOKEN + "x"}, {"X-Admin-Token": TOKEN[:-1]}):
        r = s.post("/api/v1/datasets/t/reload", headers=headers)
        assert r.status_code == 401, headers
        assert r.json()["code"] == "unauthorized"
    r = s.post("/api/v1/datasets/t/reload", headers=ADMIN)
    assert r.status_code == 200
    r = s.post("/api/v1/datasets/nope/reload", headers=ADMIN)
    assert r.status_code == 404 and r.json()["code"] == "dataset_not_found"


def test_reload_picks_up_new_data_and_records_status(vt, datadir):
    f = datadir / "t.parquet"
    write_parquet(f, "SELECT range AS a FROM range(10)")
    s = vt(server_block() + dataset_block("t", f) + dataset_block("lz", f, lazy=True),
           env={"ADMIN_TOKEN": TOKEN})
    before = status(s, "t")
    lz_before = status(s, "lz")
    write_parquet(f, "SELECT range AS a FROM range(25)")
    time.sleep(0.01)
    r = s.post("/api/v1/datasets/t/reload", headers=ADMIN)
    assert r.status_code == 200
    body = r.json()
    assert set(body) == {"dataset", "rows", "elapsed_ms"}
    assert body["dataset"] == "t" and body["rows"] == 25 and body["elapsed_ms"] >= 0
    after = status(s, "t")
    assert after["rows"] == 25 and after["state"] == "published"
    assert after["refresh_source"] == "manual"
    assert after["last_refresh_at"] > before["last_refresh_at"]
    r = s.post("/api/v1/datasets/lz/reload", headers=ADMIN)
    assert r.status_code == 200 and r.json()["rows"] == 25
    lz_after = status(s, "lz")
    assert lz_after["generation_id"] != lz_before["generation_id"]
    assert lz_after["generation_id"] > lz_before["generation_id"]  # ULIDs sort by time


def test_failed_reload_keeps_last_good_generation(vt, datadir):
    f = datadir / "t.parquet"
    write_parquet(f, "SELECT range AS a FROM range(10)")
    s = vt(server_block() + dataset_block("t", f), env={"ADMIN_TOKEN": TOKEN})
    # Now empty: the reload is an error and the dataset is not dropped.
    write_parquet(f, "SELECT 1 AS a WHERE false")
    r = s.post("/api/v1/datasets/t/reload", headers=ADMIN)
    assert r.status_code == 400 and r.json()["code"] == "source_empty"
    st = status(s, "t")
    assert st["state"] == "published" and st["rows"] == 10
    assert st["consecutive_failures"] == 1 and "zero rows" in st["last_error"]
    assert s.get("/api/v1/datasets/t/schema").json()["rows"] == 10
    # Corrupt: another failure, still serving.
    f.write_bytes(b"PAR1garbagePAR1")
    r = s.post("/api/v1/datasets/t/reload", headers=ADMIN)
    assert r.status_code in (400, 422)
    st = status(s, "t")
    assert st["consecutive_failures"] == 2 and st["rows"] == 10
    assert len(st["last_error"]) <= 500
    # Fixed: success resets the failure count.
    write_parquet(f, "SELECT range AS a FROM range(3)")
    assert s.post("/api/v1/datasets/t/reload", headers=ADMIN).json()["rows"] == 3
    st = status(s, "t")
    assert st["consecutive_failures"] == 0 and st["last_error"] is None


def test_reload_all(vt, datadir):
    f = datadir / "t.parquet"
    write_parquet(f, "SELECT range AS a FROM range(10)")
    s = vt(server_block() + dataset_block("a", f) + dataset_block("b", f)
           + dataset_block("lazy1", f, on_start="lazy") + dataset_block("skip1", f, on_start="skip"),
           env={"ADMIN_TOKEN": TOKEN})
    write_parquet(f, "SELECT range AS a FROM range(20)")
    r = s.post("/api/v1/datasets/reload-all", headers=ADMIN)
    assert r.status_code == 202
    body = r.json()
    assert sorted(body["enqueued"]) == ["a", "b"]
    assert body["skipped"] == []
    deadline = time.time() + 30
    while time.time() < deadline and not (status(s, "a")["rows"] == 20 and status(s, "b")["rows"] == 20):
        time.sleep(0.05)
    assert status(s, "a")["rows"] == 20 and status(s, "b")["rows"] == 20
    assert status(s, "lazy1")["state"] == "pending"
    assert status(s, "skip1")["state"] == "pending"
    # An explicit reload builds a skip dataset.
    assert s.post("/api/v1/datasets/skip1/reload", headers=ADMIN).json()["rows"] == 20


def test_reload_all_skips_datasets_already_building(vt, datadir, build_gate):
    big = write_parquet(datadir / "big.parquet",
                        "SELECT range AS id, md5(range::VARCHAR) AS h FROM range(3000)")
    small = write_parquet(datadir / "s.parquet", "SELECT 1 AS a")
    s = vt(server_block() + dataset_block("big", big) + dataset_block("small", small),
           env={"ADMIN_TOKEN": TOKEN}, gate=build_gate)
    # The rebuild is held in "building" (the test-only build gate) until the
    # second reload has been refused.
    build_gate.hold("big")
    t = threading.Thread(target=lambda: s.post("/api/v1/datasets/big/reload", headers=ADMIN))
    t.start()
    deadline = time.time() + 10
    while time.time() < deadline and status(s, "big")["state"] != "building" and \
            "big" not in s.post("/api/v1/datasets/reload-all", headers=ADMIN).json()["skipped"]:
        time.sleep(0.01)
    r = s.post("/api/v1/datasets/big/reload", headers=ADMIN)
    assert r.status_code == 409 and r.json()["code"] == "busy"
    build_gate.release("big")
    t.join()


def test_register_dataset(vt, datadir):
    write_parquet(datadir / "t.parquet", "SELECT range AS a, 'x' AS b FROM range(7)")
    # Registrations read only below the allowed roots (the data is not
    # beside the config file here).
    s = vt(server_block(allowed_roots=[datadir]) + dataset_block("existing", datadir / "t.parquet"),
           env={"ADMIN_TOKEN": TOKEN})
    body = {"name": "fresh", "source": {"kind": "parquet", "location": str(datadir / "t.parquet")}}
    r = s.post("/api/v1/datasets", body, headers=ADMIN)
    assert r.status_code == 200, r.text
    assert r.json() == {"name": "fresh", "rows": 7, "columns": 2}
    assert status(s, "fresh")["state"] == "published"
    assert "fresh" not in s.config_path.read_text()          # in memory only
    cases = [
        ({**body, "name": "existing"}, "dataset_exists"),
        ({**body, "name": "fresh"}, "dataset_exists"),
        ({**body, "name": "bad name"}, "invalid_name"),
        ({**body, "name": "reload-all"}, "invalid_name"),
        ({**body, "name": "x/y"}, "invalid_name"),
        ({"name": "nofile", "source": {"kind": "parquet", "location": str(datadir / "missing.parquet")}},
         "source_empty"),
    ]
    for b, code in cases:
        r = s.post("/api/v1/datasets", b, headers=ADMIN)
        assert r.status_code == 400, (b, r.text)
        assert r.json()["code"] == code, (b, r.text)
    names = [d["name"] for d in s.get("/api/v1/datasets").json()]
    assert names == ["existing", "fresh"]
    r = s.post("/api/v1/datasets", data=b"{not json", headers={**ADMIN, "Content-Type": "application/json"})
    assert r.status_code == 400 and r.json()["code"] == "invalid_json"
    r = s.post("/api/v1/datasets", data=b'{"name":"q"}', headers={**ADMIN, "Content-Type": "text/plain"})
    assert r.status_code == 415


def test_persist_appends_block_and_survives_restart(vt, datadir, tmp_path):
    write_parquet(datadir / "t.parquet", "SELECT range AS a FROM range(5)")
    cfg = (server_block(allowed_roots=[datadir]) + "# a comment that must survive\n"
           + dataset_block("one", datadir / "t.parquet"))
    s = vt(cfg, env={"ADMIN_TOKEN": TOKEN})
    original = s.config_path.read_bytes()
    body = {"name": "two", "source": {"kind": "parquet", "location": str(datadir / "t.parquet")},
            "lazy": True}
    r = s.post("/api/v1/datasets/persist", body, headers=ADMIN)
    assert r.status_code == 200, r.text
    assert r.json() == {"persisted": True, "path": str(s.config_path)}
    text = s.config_path.read_bytes()
    assert text.startswith(original)
    assert b'name = "two"' in text[len(original):]
    r = s.post("/api/v1/datasets/persist", body, headers=ADMIN)
    assert r.status_code == 400 and r.json()["code"] == "dataset_exists"
    assert s.config_path.read_bytes() == text
    r = subprocess.run([str(VITRINE), "check-config", str(s.config_path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    # config/reload registers it; a restart serves it too.
    r = s.post("/api/v1/config/reload", headers=ADMIN)
    assert r.status_code == 200
    assert r.json() == {"registered": ["two"], "skipped": ["one"], "errors": []}
    assert status(s, "two")["lazy"] is True
    assert s.stop() == 0
    s2 = vt(s.config_path.read_text(), env={"ADMIN_TOKEN": TOKEN}, workdir=tmp_path / "again")
    assert status(s2, "two")["rows"] == 5


def test_persist_without_config_file_is_400(tmp_path, datadir):
    home = tmp_path / "home"
    home.mkdir()
    s = Server(home, "", args=["--port", "0"], env={"ADMIN_TOKEN": TOKEN, "HOME": str(home)})
    s.config_path.unlink()
    s.env.pop("VITRINE_CONFIG_FILE", None)
    s.start()
    try:
        s.wait_ready()
        body = {"name": "t", "source": {"kind": "parquet", "location": "x.parquet"}}
        r = s.post("/api/v1/datasets/persist", body, headers=ADMIN)
        assert r.status_code == 400 and r.json()["code"] == "no_config_file"
        r = s.post("/api/v1/config/reload", headers=ADMIN)
        assert r.status_code == 400 and r.json()["code"] == "no_config_file"
    finally:
        assert s.stop() == 0


def test_config_reload_reports_errors_per_dataset(vt, datadir):
    write_parquet(datadir / "t.parquet", "SELECT range AS a FROM range(5)")
    s = vt(server_block() + dataset_block("one", datadir / "t.parquet"), env={"ADMIN_TOKEN": TOKEN})
    with open(s.config_path, "a") as f:
        f.write(dataset_block("two", datadir / "t.parquet"))
        f.write(dataset_block("broken", datadir / "nothing-here.parquet"))
    r = s.post("/api/v1/config/reload", headers=ADMIN)
    assert r.status_code == 200
    body = r.json()
    assert body["registered"] == ["two"]
    assert body["skipped"] == ["one"]
    assert [e["dataset"] for e in body["errors"]] == ["broken"]
    assert body["errors"][0]["error"]
    names = [d["name"] for d in s.get("/api/v1/datasets").json()]
    assert names == ["one", "two"]
    # An invalid file is a 400 and changes nothing.
    s.config_path.write_text(s.config_path.read_text() + "\n[server\n")
    r = s.post("/api/v1/config/reload", headers=ADMIN)
    assert r.status_code == 400 and r.json()["code"] == "invalid_config"


def test_kill_during_persist_leaves_parseable_config(vt, datadir, tmp_path):
    write_parquet(datadir / "t.parquet", "SELECT 1 AS a")
    rnd = random.Random(7)
    for round_ in range(6):
        work = tmp_path / f"k{round_}"
        s = vt(server_block() + dataset_block("base", datadir / "t.parquet"),
               env={"ADMIN_TOKEN": TOKEN}, workdir=work)
        stop = threading.Event()

        def hammer():
            i = 0
            while not stop.is_set():
                try:
                    s.post("/api/v1/datasets/persist",
                           {"name": f"p{i}", "source": {"kind": "parquet", "location": "t.parquet"}},
                           headers=ADMIN, timeout=2)
                except requests.RequestException:
                    pass
                i += 1

        t = threading.Thread(target=hammer)
        t.start()
        time.sleep(0.05 + rnd.random() * 0.3)
        s.proc.send_signal(signal.SIGKILL)
        s.proc.wait()
        stop.set()
        t.join()
        r = subprocess.run([str(VITRINE), "check-config", str(s.config_path)], capture_output=True,
                           text=True)
        assert r.returncode == 0, r.stderr
        assert "base" in s.config_path.read_text()


def test_query_datasets_build_in_topological_order(vt, datadir):
    f = datadir / "t.parquet"
    write_parquet(f, "SELECT range AS a, range % 3 AS g FROM range(30)")
    # Declared downstream-first: the startup wave must still build upstreams first.
    cfg = (server_block()
           + '[[dataset]]\nname = "top"\nsql = "SELECT * FROM grouped ORDER BY n DESC, g LIMIT 1"\n'
             'depends_on = ["grouped"]\n'
           + '[[dataset]]\nname = "grouped"\nsql = "SELECT g, count(*) AS n FROM base GROUP BY g"\n'
             'depends_on = ["base"]\n'
           + dataset_block("base", f))
    s = vt(cfg, env={"ADMIN_TOKEN": TOKEN})
    st = status(s, "grouped")
    assert st["kind"] == "query" and st["depends_on"] == ["base"] and st["rows"] == 3
    assert s.post("/api/v1/datasets/top/query", {}).json()["data"] == [{"g": 0, "n": 10}]
    write_parquet(f, "SELECT range AS a, 1 AS g FROM range(40)")
    log_before = s.log().count("published:")
    r = s.post("/api/v1/datasets/reload-all", headers=ADMIN)
    assert r.status_code == 202
    assert r.json()["enqueued"] == ["base", "grouped", "top"]
    deadline = time.time() + 30
    while time.time() < deadline and status(s, "top")["refresh_source"] != "manual":
        time.sleep(0.05)
    time.sleep(0.3)
    assert s.post("/api/v1/datasets/top/query", {}).json()["data"] == [{"g": 1, "n": 40}]
    log = s.log()
    # Each dataset built exactly once in the wave, upstream first.
    published = [line.split("dataset ")[1].split(" published")[0]
                 for line in log.splitlines() if " published: " in line][log_before:]
    assert published == ["base", "grouped", "top"], published
