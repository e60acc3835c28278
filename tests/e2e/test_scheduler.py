"""The refresh scheduler (issue 11 item 6): refresh.interval rebuilds with
refresh_source "schedule" and reports next_refresh_at; a failing scheduled
refresh keeps the last good generation serving and counts
consecutive_failures; refresh.on_upstream_reload rebuilds a query dataset
after its upstream publishes (refresh_source "cascade"), debounced so several
upstream reloads give one dependent build; a dependent rebuilt after its
upstream anyway (reload-all's topological wave) absorbs the cascade."""
import os
import time

from conftest import dataset_block, server_block, write_parquet

ADMIN = {"X-Admin-Token": "t0k"}


def status(s, name):
    return s.get(f"/api/v1/datasets/{name}/status").json()


def wait_for(pred, timeout=20, step=0.05):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(step)
    raise AssertionError("condition not met in time")


def replace_parquet(path, select):
    tmp = path.with_suffix(".tmp.parquet")
    write_parquet(tmp, select)
    os.replace(tmp, path)


def test_interval_refreshes_and_reports_next(vt, datadir):
    p = write_parquet(datadir / "t.parquet", "SELECT 1 AS v")
    s = vt(server_block() + dataset_block("t", p) +
           'refresh = { interval = "1s", jitter = false }\n')
    # next_refresh_at is null while a scheduled refresh runs and set again
    # just after it publishes: with a 1 s interval a slow machine can ask in
    # either window, so each check polls for the pending refresh.
    st = wait_for(lambda: (lambda x: x if x["next_refresh_at"] is not None else None)(status(s, "t")),
                  timeout=10)
    assert st["refresh_source"] in ("startup", "schedule")
    replace_parquet(p, "SELECT 2 AS v UNION ALL SELECT 3")
    st = wait_for(lambda: (lambda x: x if x["rows"] == 2 and x["next_refresh_at"] is not None
                           else None)(status(s, "t")), timeout=10)
    assert st["refresh_source"] == "schedule"
    assert s.post("/api/v1/datasets/t/count", {}).json() == {"count": 2}


def test_failing_refresh_keeps_serving_and_backs_off(vt, datadir):
    p = write_parquet(datadir / "t.parquet", "SELECT 1 AS v")
    s = vt(server_block() + dataset_block("t", p) +
           'refresh = { interval = "1s", jitter = false }\n')
    p.write_bytes(b"not a parquet file")
    st = wait_for(lambda: (lambda x: x if x["consecutive_failures"] >= 1 else None)(status(s, "t")),
                  timeout=10)
    assert st["state"] in ("published", "building")
    assert st["last_error"]
    # The last good generation still answers.
    assert s.post("/api/v1/datasets/t/count", {}).json() == {"count": 1}
    replace_parquet(p, "SELECT 5 AS v UNION ALL SELECT 6 UNION ALL SELECT 7")
    st = wait_for(lambda: (lambda x: x if x["rows"] == 3 else None)(status(s, "t")), timeout=20)
    assert st["consecutive_failures"] == 0 and st["last_error"] is None


def cascade_config(datadir, debounce="400ms"):
    p = write_parquet(datadir / "u.parquet", "SELECT range AS x FROM range(10)")
    return p, (server_block() + dataset_block("u", p) +
               "[[dataset]]\nname = \"q\"\nsql = \"SELECT count(*) AS n, sum(x) AS total FROM u\"\n"
               "depends_on = [\"u\"]\n"
               f"refresh = {{ on_upstream_reload = true, debounce = \"{debounce}\" }}\n")


def test_upstream_reload_cascades_once(vt, datadir):
    p, cfg = cascade_config(datadir)
    s = vt(cfg, env={"ADMIN_TOKEN": "t0k"})
    first = status(s, "q")["last_refresh_at"]
    replace_parquet(p, "SELECT range AS x FROM range(20)")
    # Three reloads inside the debounce window: one dependent build.
    for _ in range(3):
        r = s.post("/api/v1/datasets/u/reload", headers=ADMIN)
        assert r.status_code == 200, r.text
        time.sleep(0.1)
    st = wait_for(lambda: (lambda x: x if x["refresh_source"] == "cascade" else None)(status(s, "q")))
    assert st["last_refresh_at"] != first
    rows = s.post("/api/v1/datasets/q/query", {}).json()["data"]
    assert rows == [{"n": 20, "total": 190}]
    time.sleep(1.0)
    assert s.log().count("dataset q: cascade refresh started") == 1


def test_reload_all_absorbs_the_cascade(vt, datadir):
    p, cfg = cascade_config(datadir, debounce="300ms")
    s = vt(cfg, env={"ADMIN_TOKEN": "t0k"})
    replace_parquet(p, "SELECT range AS x FROM range(30)")
    r = s.post("/api/v1/datasets/reload-all", headers=ADMIN)
    assert r.status_code == 202
    wait_for(lambda: s.post("/api/v1/datasets/q/query", {}).json()["data"] == [{"n": 30, "total": 435}])
    time.sleep(1.0)
    # u rebuilt, then q in the same wave: the cascade from u finds q newer.
    assert "dataset q: cascade refresh started" not in s.log()
    assert "cascade absorbed" in s.log()
