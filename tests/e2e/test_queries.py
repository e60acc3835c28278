"""Saved queries as datasets (issue 11 items 3-5, 7): POST/GET/DELETE
/api/v1/queries against the real binary. Every row of the spec's saved-query
table and state table, each error code, persistence across restarts
(server.saved_queries_dir), ttl expiry, schedule and cascade of saved queries,
storage generations (materialize.residency lazy/auto, sort_by, generation_id,
storage_bytes, files removed with the generation, reuse_on_start), a kill -9
during a storage write, the SQL bad-input catalogue, and the resource cases."""
import json
import re
import signal
import time
from pathlib import Path

import pytest
import requests


from conftest import dataset_block, server_block, sql as duck, write_parquet
from test_arrow_http import RssSampler, asan_env, vm_status
from test_sql import BAD

ADMIN = {"X-Admin-Token": "t0k"}
ENV = {"ADMIN_TOKEN": "t0k"}
Q = "/api/v1/queries"


def data(datadir):
    t = write_parquet(datadir / "trips.parquet", """
        SELECT i AS trip_id, i % 5 AS station, (i % 50) * 1.5 AS fare,
               CASE WHEN i % 3 = 0 THEN 'card' ELSE 'cash' END AS payment
        FROM range(5000) t(i)""")
    s = write_parquet(datadir / "stations.parquet",
                      "SELECT i AS id, 'st' || i AS name FROM range(5) t(i)")
    return t, s


def config(datadir, extra="", **server):
    t, s = data(datadir)
    return server_block(**server) + dataset_block("trips", t) + dataset_block("stations", s) + extra


def start(vt, datadir, extra="", env=ENV, **server):
    # Datasets registered at run time read from datadir: a source root.
    server.setdefault("allowed_roots", [datadir])
    return vt(config(datadir, extra, **server), env=env)


def post(s, body, async_=None, headers=ADMIN, **kw):
    path = Q + ("?async=" + async_ if async_ is not None else "")
    return s.post(path, body, headers=headers, **kw)


def delete(s, name, headers=ADMIN):
    return requests.delete(s.url(f"{Q}/{name}"), headers=headers, timeout=30)


def listing(s):
    r = s.get(Q, headers=ADMIN)
    assert r.status_code == 200, r.text
    return {x["name"]: x for x in r.json()}


def status(s, name):
    return s.get(f"/api/v1/datasets/{name}/status").json()


def rows_of(s, name, **body):
    r = s.post(f"/api/v1/datasets/{name}/query", body)
    assert r.status_code == 200, r.text
    return r.json()["data"]


def wait_for(pred, timeout=30, step=0.05):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(step)
    raise AssertionError("condition not met in time")


def storage_dirs(s, name):
    d = s.workdir / "storage" / name
    return sorted(p.name for p in d.iterdir()) if d.exists() else []


# ------------------------------------------------------------- the table rows

def test_create_sync_is_published_with_rows(vt, datadir):
    s = start(vt, datadir)
    r = post(s, {"name": "by_payment",
                 "sql": "SELECT payment, count(*) AS n, sum(fare) AS total FROM trips "
                        "GROUP BY payment"})
    assert r.status_code == 200, r.text
    assert r.json() == {"name": "by_payment", "kind": "temp", "depends_on": ["trips"],
                        "state": "published", "rows": 2}
    want = duck(f"SELECT payment, count(*), sum(fare) FROM '{datadir}/trips.parquet' "
                "GROUP BY payment ORDER BY payment")
    got = rows_of(s, "by_payment", order_by=[{"col": "payment"}])
    assert [[x["payment"], str(x["n"]), str(x["total"])] for x in got] == want
    st = status(s, "by_payment")
    assert st["kind"] == "query" and st["state"] == "published" and st["depends_on"] == ["trips"]
    assert st["refresh_source"] == "manual" and st["last_refresh_at"]
    assert st["residency"] == "memory" and st["generation_id"] is None
    assert listing(s) == {"by_payment": {"name": "by_payment", "kind": "temp",
                                         "depends_on": ["trips"], "state": "published"}}


def test_async_answers_202_building_then_publishes(vt, datadir):
    s = start(vt, datadir)
    # Slow enough to be seen building (a few hundred ms of work).
    body = {"name": "slow", "sql": "SELECT count(*) AS n FROM range(300000000) t(x) "
                                   "WHERE x % 7 = 3 AND x > (SELECT max(trip_id) FROM trips)"}
    r = post(s, body, async_="true")
    assert r.status_code == 202, r.text
    assert r.json() == {"name": "slow", "kind": "temp", "depends_on": ["trips"],
                        "state": "building"}
    seen = status(s, "slow")["state"]
    assert seen in ("building", "published")
    st = s.wait_state("slow", ("published",))
    assert st["rows"] == 1 and st["last_refresh_at"] and st["last_refresh_duration_ms"] >= 0
    assert listing(s)["slow"]["state"] == "published"
    # ?async=false is the synchronous create.
    r = post(s, {"name": "sync", "sql": "SELECT 1 AS x"}, async_="false")
    assert r.status_code == 200 and r.json()["rows"] == 1


def test_async_failure_stays_failed_with_last_error(vt, datadir):
    s = start(vt, datadir)
    r = post(s, {"name": "boom", "sql": "SELECT CAST(payment AS INTEGER) AS x FROM trips"},
             async_="true")
    assert r.status_code == 202, r.text
    st = s.wait_state("boom", ("failed",))
    assert "Conversion Error" in st["last_error"] and st["rows"] == 0
    assert listing(s)["boom"]["state"] == "failed"
    assert delete(s, "boom").status_code == 200
    # The same failure without async: a 400 and nothing left behind.
    r = post(s, {"name": "boom", "sql": "SELECT CAST(payment AS INTEGER) AS x FROM trips"})
    assert r.status_code == 400 and r.json()["code"] == "query_failed", r.text
    assert "boom" not in listing(s)
    assert s.get("/api/v1/datasets/boom/status").status_code == 404


def test_a_bounded_function_past_its_limit_is_limit_exceeded(vt, datadir):
    """A saved query's build that a bounded SQL function refuses (the
    engine's limits, engine/functions.c) fails as limit_exceeded naming the
    function and the limit, synchronous or not (a caller without the read
    scope gets the code, not the sizes: test_manage_scope_with_bearer_tokens)."""
    s = start(vt, datadir)
    text = "SELECT trip_id, repeat(payment, 20000000 + trip_id) AS r FROM trips"
    r = post(s, {"name": "big", "sql": text})
    assert r.status_code == 400, r.text[:300]
    assert r.json()["code"] == "limit_exceeded", r.text[:300]
    assert r.json()["error"].startswith("repeat: ") and "limit" in r.json()["error"], r.text
    assert "vtlimit" not in r.text and "big" not in listing(s)
    r = post(s, {"name": "big", "sql": text}, async_="true")
    assert r.status_code == 202, r.text
    st = s.wait_state("big", ("failed",))
    assert st["last_error"].startswith("repeat: ") and "limit" in st["last_error"], st
    assert "vtlimit" not in json.dumps(st)
    # the same text that only looks like the engine's: a conversion error
    r = post(s, {"name": "conv", "sql": "SELECT CAST('vtlimit-0123456789abcdef: repeat: x' "
                                        "AS INTEGER) AS x FROM trips"})
    assert r.status_code == 400 and r.json()["code"] == "query_failed", r.text[:300]


def test_kind_query_persists_and_temp_does_not(vt, datadir, tmp_path):
    work = tmp_path / "w"
    cfg = config(datadir)
    s = vt(cfg, env=ENV, workdir=work)
    assert post(s, {"name": "keep", "kind": "query",
                    "sql": "SELECT station, count(*) AS n FROM trips GROUP BY station"}
                ).status_code == 200
    assert post(s, {"name": "keep2", "kind": "query",
                    "sql": "SELECT sum(n) AS total FROM keep"}).status_code == 200
    assert post(s, {"name": "gone", "sql": "SELECT 1 AS x"}).status_code == 200
    f = work / "datasets.d" / "keep.toml"
    assert f.is_file()
    text = f.read_text()
    assert 'name = "keep"' in text and 'depends_on = ["trips"]' in text
    assert not (work / "datasets.d" / "gone.toml").exists()
    assert s.stop() == 0
    s2 = vt(cfg, env=ENV, workdir=work)
    ls = listing(s2)
    assert set(ls) == {"keep", "keep2"}
    assert ls["keep2"]["depends_on"] == ["keep"] and ls["keep2"]["kind"] == "query"
    # Restored in dependency order: keep2 built over keep.
    assert rows_of(s2, "keep2") == [{"total": 5000}]
    assert status(s2, "keep")["refresh_source"] == "startup"
    # Deleting removes the file.
    assert delete(s2, "keep").status_code == 409
    assert delete(s2, "keep2").status_code == 200
    assert delete(s2, "keep").status_code == 200
    assert not f.exists() and not (work / "datasets.d" / "keep2.toml").exists()


def test_saved_queries_dir_setting(vt, datadir, tmp_path):
    target = tmp_path / "elsewhere" / "saved"
    s = start(vt, datadir, saved_queries_dir=str(target))
    assert post(s, {"name": "p", "kind": "query", "sql": "SELECT 1 AS x"}).status_code == 200
    assert (target / "p.toml").is_file()  # created on first write, parents too


def test_name_collision_with_config_is_skipped_naming_both(vt, datadir, tmp_path):
    # One saved-query file never stops the start (issue 22 item 3): the
    # config's dataset wins, the file is skipped with an error naming both.
    work = tmp_path / "w"
    (work / "datasets.d").mkdir(parents=True)
    (work / "datasets.d" / "Trips.toml").write_text(
        '[[dataset]]\nname = "Trips"\nsql = "SELECT 1 AS x"\n')
    s = vt(config(datadir), env=ENV, workdir=work)
    log = s.log()
    assert "saved query skipped" in log and "Trips.toml" in log and "datasets.toml" in log
    assert status(s, "trips")["state"] == "published"


def test_bad_saved_query_files_are_skipped(vt, datadir, tmp_path):
    for i, (fname, text, needle) in enumerate([
        ("a.toml", '[[dataset]]\nname = "b"\nsql = "SELECT 1"\n', "named after it"),
        ("a.toml", '[[dataset]]\nname = "a"\nsource.location = "x.parquet"\n', 'kind "query"'),
        ("a.toml", '[[dataset]]\nname = "a"\nsql = "SELECT 1"\n[[dataset]]\nname = "c"\n'
                   'sql = "SELECT 1"\n', "exactly one"),
        ("a.toml", 'this is not toml', "a.toml"),
    ]):
        work = tmp_path / f"w{i}"
        (work / "datasets.d").mkdir(parents=True)
        (work / "datasets.d" / fname).write_text(text)
        (work / "datasets.d" / "good.toml").write_text(
            '[[dataset]]\nname = "good"\nsql = "SELECT 1 AS x"\n')
        s = vt(config(datadir), env=ENV, workdir=work)
        line = [l for l in s.log().splitlines() if "saved query skipped" in l]
        assert len(line) == 1 and needle in line[0] and fname in line[0], s.log()[-600:]
        assert status(s, "good")["state"] == "published"
        s.stop()


def test_config_datasets_cannot_depend_on_runtime_ones(vt, datadir, tmp_path):
    work = tmp_path / "w"
    (work / "datasets.d").mkdir(parents=True)
    (work / "datasets.d" / "runtime.toml").write_text(
        '[[dataset]]\nname = "runtime"\nsql = "SELECT count(*) AS n FROM trips"\n')
    extra = '[[dataset]]\nname = "cfgq"\nsql = "SELECT n FROM runtime"\n'
    s = vt(config(datadir, extra), env=ENV, workdir=work)
    st = status(s, "cfgq")
    assert st["state"] == "failed"
    assert "cannot depend on runtime datasets" in st["last_error"]
    assert status(s, "runtime")["state"] == "published"


def test_cycle_in_restored_files_is_failed_not_built(vt, datadir, tmp_path):
    work = tmp_path / "w"
    (work / "datasets.d").mkdir(parents=True)
    (work / "datasets.d" / "a.toml").write_text('[[dataset]]\nname = "a"\nsql = "SELECT * FROM b"\n')
    (work / "datasets.d" / "b.toml").write_text('[[dataset]]\nname = "b"\nsql = "SELECT * FROM a"\n')
    s = vt(config(datadir), env=ENV, workdir=work)
    for n in ("a", "b"):
        st = status(s, n)
        assert st["state"] == "failed" and "dependency cycle" in st["last_error"], st
    # The rest of the server is fine.
    assert s.post("/api/v1/datasets/trips/count", {}).json() == {"count": 5000}


def test_ttl_expiry_unregisters_and_waits_for_dependents(vt, datadir):
    s = start(vt, datadir)
    assert post(s, {"name": "short", "sql": "SELECT 1 AS x", "ttl": "1s"}).status_code == 200
    assert post(s, {"name": "lasting", "sql": "SELECT 2 AS x", "ttl": "1h"}).status_code == 200
    wait_for(lambda: "short" not in listing(s), timeout=10)
    assert s.get("/api/v1/datasets/short/status").status_code == 404
    assert "lasting" in listing(s)
    assert "saved query short expired (ttl) and was removed" in s.log()
    # With a dependent: a warning, and it stays until the dependent goes.
    assert post(s, {"name": "up", "sql": "SELECT 1 AS x", "ttl": "1s"}).status_code == 200
    assert post(s, {"name": "down", "sql": "SELECT x + 1 AS y FROM up"}).status_code == 200
    wait_for(lambda: "ttl expired, but down depends on it" in s.log(), timeout=10)
    assert "up" in listing(s) and rows_of(s, "up") == [{"x": 1}]
    assert delete(s, "down").status_code == 200
    wait_for(lambda: "up" not in listing(s), timeout=10)


def test_refresh_interval_on_a_saved_query(vt, datadir):
    s = start(vt, datadir)
    r = post(s, {"name": "ticking", "sql": "SELECT count(*) AS n FROM stations",
                 "refresh": {"interval": "1s", "jitter": False}})
    assert r.status_code == 200, r.text
    # next_refresh_at is null while a scheduled refresh runs (none is pending
    # then) and set again when it ends; with a 1 s interval a slow machine can
    # ask in that window, so poll for the pending one.
    wait_for(lambda: status(s, "ticking")["next_refresh_at"] is not None, timeout=15)
    write_parquet(datadir / "stations.parquet", "SELECT i AS id, 'st' || i AS name FROM range(9) t(i)")
    assert s.post("/api/v1/datasets/stations/reload", headers=ADMIN).status_code == 200
    wait_for(lambda: (lambda x: x["refresh_source"] == "schedule" and x["rows"] == 1
                      and x["next_refresh_at"] is not None
                      and rows_of(s, "ticking") == [{"n": 9}])(status(s, "ticking")),
             timeout=15)


def test_upstream_reload_cascades_to_a_saved_query(vt, datadir):
    s = start(vt, datadir)
    r = post(s, {"name": "follows", "kind": "query", "sql": "SELECT count(*) AS n FROM stations",
                 "refresh": {"on_upstream_reload": True, "debounce": "200ms"}})
    assert r.status_code == 200, r.text
    write_parquet(datadir / "stations.parquet", "SELECT i AS id, 'st' || i AS name FROM range(7) t(i)")
    for _ in range(3):  # a wave of reloads: one dependent build
        assert s.post("/api/v1/datasets/stations/reload", headers=ADMIN).status_code == 200
    wait_for(lambda: rows_of(s, "follows") == [{"n": 7}])
    assert status(s, "follows")["refresh_source"] == "cascade"
    time.sleep(0.8)
    assert s.log().count("dataset follows: cascade refresh started") == 1


def test_reload_and_reload_all_include_saved_queries(vt, datadir):
    s = start(vt, datadir)
    assert post(s, {"name": "a", "sql": "SELECT count(*) AS n FROM stations"}).status_code == 200
    assert post(s, {"name": "b", "sql": "SELECT n * 2 AS m FROM a"}).status_code == 200
    write_parquet(datadir / "stations.parquet", "SELECT i AS id, 'st' || i AS name FROM range(6) t(i)")
    r = s.post("/api/v1/datasets/reload-all", headers=ADMIN)
    assert r.status_code == 202
    order = r.json()["enqueued"]
    assert order.index("stations") < order.index("a") < order.index("b")
    wait_for(lambda: rows_of(s, "b") == [{"m": 12}])
    r = s.post("/api/v1/datasets/b/reload", headers=ADMIN)
    assert r.status_code == 200 and status(s, "b")["refresh_source"] == "manual"


# -------------------------------------------------------------- error codes

def test_error_codes(vt, datadir):
    s = start(vt, datadir)
    assert post(s, {"name": "taken", "sql": "SELECT 1 AS x"}).status_code == 200
    cases = [
        ({"name": "taken", "sql": "SELECT 1"}, 409, "name_taken"),
        ({"name": "TAKEN", "sql": "SELECT 1"}, 409, "name_taken"),
        ({"name": "trips", "sql": "SELECT 1"}, 409, "name_taken"),
        ({"name": "reload-all", "sql": "SELECT 1"}, 400, "invalid_name"),
        ({"name": "a/b", "sql": "SELECT 1"}, 400, "invalid_name"),
        ({"name": "", "sql": "SELECT 1"}, 400, "invalid_name"),
        ({"sql": "SELECT 1"}, 400, "invalid_field"),
        ({"name": "n"}, 400, "invalid_field"),
        ({"name": "n", "sql": ""}, 400, "invalid_field"),
        ({"name": "n", "sql": 5}, 400, "invalid_field"),
        ({"name": "n", "sql": "SELECT 1", "kind": "forever"}, 400, "invalid_field"),
        ({"name": "n", "sql": "SELECT 1", "kind": "query", "ttl": "1h"}, 400, "invalid_field"),
        ({"name": "n", "sql": "SELECT 1", "ttl": "soon"}, 400, "invalid_field"),
        ({"name": "n", "sql": "SELECT 1", "ttl": 60}, 400, "invalid_field"),
        ({"name": "n", "sql": "SELECT 1", "refresh": {"interval": "often"}}, 400, "invalid_field"),
        ({"name": "n", "sql": "SELECT 1", "refresh": "1h"}, 400, "invalid_field"),
        ({"name": "n", "sql": "SELECT 1", "materialize": {"residency": "disk"}}, 400,
         "invalid_field"),
        ({"name": "n", "sql": "SELECT 1", "materialize": {"residency": "lazy"},
          "index": {"mode": "auto"}}, 400, "invalid_field"),
        ({"name": "n", "sql": "SELECT 1", "index": {"mode": "sometimes"}}, 400, "invalid_field"),
        ({"name": "n", "sql": "SELECT 1", "depends_on": ["trips"]}, 400, "unknown_field"),
        ({"name": "n", "sql": "SELECT 1", "colour": "red"}, 400, "unknown_field"),
        ({"name": "n", "sql": "SELECT 1", "refresh": {"every": "1h"}}, 400, "unknown_field"),
        ({"name": "n", "sql": "SELECT nope FROM trips"}, 400, "query_failed"),
        ({"name": "n", "sql": "SELECT * FROM trips", "materialize": {"sort_by": ["nope"]}}, 400,
         "unknown_column"),
        ({"name": "n", "sql": "SELECT * FROM trips",
          "index": {"mode": "list", "columns": ["nope"]}}, 400, "unknown_column"),
        ({"name": "n", "sql": "SELECT * FROM nowhere"}, 400, "sql_unknown_table"),
        ({"name": "n", "sql": "SELECT 1 -- " + "x" * (256 * 1024)}, 400, "limit_exceeded"),
        ({"name": "n", "kind": "query", "sql": "SELECT * FROM taken"}, 400, "invalid_field"),
    ]
    for body, code, name in cases:
        r = post(s, body)
        assert r.status_code == code and r.json()["code"] == name, (body, r.status_code, r.text[:300])
    r = s.post(Q, data="{not json", headers={**ADMIN, "Content-Type": "application/json"})
    assert r.status_code == 400 and r.json()["code"] == "invalid_json"
    r = s.post(Q, data='{"name":"x"}', headers={**ADMIN, "Content-Type": "text/plain"})
    assert r.status_code == 415
    r = s.post(Q + "?async=maybe", {"name": "n", "sql": "SELECT 1"}, headers=ADMIN)
    assert r.status_code == 400 and r.json()["code"] == "invalid_field"
    # DELETE: 404 unknown, 403 config dataset and runtime-registered dataset.
    r = delete(s, "nowhere")
    assert r.status_code == 404 and r.json()["code"] == "dataset_not_found"
    r = delete(s, "trips")
    assert r.status_code == 403 and r.json()["code"] == "not_deletable"
    reg = s.post("/api/v1/datasets", {"name": "reg", "source": {"kind": "parquet",
                 "location": str(datadir / "stations.parquet")}}, headers=ADMIN)
    assert reg.status_code == 200, reg.text
    r = delete(s, "reg")
    assert r.status_code == 403 and r.json()["code"] == "not_deletable"
    assert "reg" not in listing(s)
    # 409 listing the dependents.
    assert post(s, {"name": "d1", "sql": "SELECT x FROM taken"}).status_code == 200
    assert post(s, {"name": "d2", "sql": "SELECT t.x FROM taken t, d1"}).status_code == 200
    r = delete(s, "taken")
    assert r.status_code == 409
    assert r.json()["code"] == "has_dependents" and sorted(r.json()["dependents"]) == ["d1", "d2"]
    assert "taken" in listing(s)
    # Nothing half-made was left by any of the refusals.
    assert set(listing(s)) == {"taken", "d1", "d2"}


def test_sql_bad_input_catalogue_is_refused(vt, datadir):
    s = start(vt, datadir)
    for i, (text, code) in enumerate(BAD):
        r = post(s, {"name": f"bad{i}", "sql": text})
        assert r.status_code == 400, (text, r.status_code, r.text)
        assert r.json()["code"] == code, (text, r.json())
    # More writes and sneaking: a write in a CTE, a comment hiding a second
    # statement, a CTE shadowing a dataset is not a dependency, names in
    # strings are not tables.
    for text, code in [("WITH x AS (DELETE FROM trips RETURNING *) SELECT * FROM x",
                        "sql_not_read_only"),
                       ("SELECT 1 -- \n; DROP TABLE trips", "sql_not_read_only"),
                       ("SELECT * FROM read_parquet('" + str(datadir) + "/trips.parquet')",
                        "sql_forbidden_function")]:
        r = post(s, {"name": "sneak", "sql": text})
        assert r.status_code == 400 and r.json()["code"] == code, (text, r.text)
    r = post(s, {"name": "shadow", "sql": "WITH trips AS (SELECT 1 AS x) "
                                          "SELECT x, 'stations' AS s FROM trips /* stations */"})
    assert r.status_code == 200 and r.json()["depends_on"] == [], r.text
    assert set(listing(s)) == {"shadow"}
    assert s.post("/api/v1/datasets/trips/count", {}).json() == {"count": 5000}


def test_routes_hidden_without_admin_token_and_checked_with_it(vt, datadir):
    s = start(vt, datadir, env={})
    for method, path in [("post", Q), ("get", Q), ("delete", Q + "/x")]:
        r = getattr(requests, method)(s.url(path), json={"name": "x", "sql": "SELECT 1"},
                                      timeout=10)
        assert r.status_code == 404, (method, r.text)
        assert r.json()["code"] == "not_found"
    s2 = start(vt, datadir)
    r = s2.post(Q, {"name": "x", "sql": "SELECT 1"})
    assert r.status_code == 401
    r = s2.post(Q, {"name": "x", "sql": "SELECT 1"}, headers={"X-Admin-Token": "wrong"})
    assert r.status_code == 401
    assert s2.get(Q).status_code == 401
    assert delete(s2, "x", headers={}).status_code == 401


# ---------------------------------------------------------- storage generations

def parquet_row_groups(path, col):
    return [(int(a), int(b)) for a, b in duck(
        f"SELECT stats_min, stats_max FROM parquet_metadata('{path}') "
        f"WHERE path_in_schema = '{col}' ORDER BY row_group_id")]


def test_lazy_storage_generation(vt, datadir):
    big = write_parquet(datadir / "big.parquet",
                        "SELECT (i * 7919) % 400000 AS k, i % 13 AS g FROM range(400000) t(i)")
    s = start(vt, datadir, dataset_block("big", big))
    r = post(s, {"name": "sorted", "kind": "query", "sql": "SELECT k, g, k * 2 AS k2 FROM big",
                 "materialize": {"residency": "lazy", "sort_by": ["k"]}})
    assert r.status_code == 200, r.text
    assert r.json()["rows"] == 400000
    st = status(s, "sorted")
    assert st["residency"] == "lazy" and st["lazy"] is True
    gid = st["generation_id"]
    assert re.fullmatch(r"[0-9A-HJKMNP-TV-Z]{26}", gid)
    gdir = s.workdir / "storage" / "sorted" / gid
    files = sorted(p.name for p in gdir.iterdir())
    assert files == ["data.parquet", "manifest.json"]
    assert st["storage_bytes"] == (gdir / "data.parquet").stat().st_size > 0
    manifest = json.loads((gdir / "manifest.json").read_text())
    assert manifest["rows"] == 400000 and manifest["generation_id"] == gid
    # Sorted by sort_by: row groups hold disjoint, increasing ranges of k.
    groups = parquet_row_groups(gdir / "data.parquet", "k")
    assert len(groups) >= 3
    assert all(groups[i][1] < groups[i + 1][0] for i in range(len(groups) - 1)), groups
    # Served from the files, with the same answers as DuckDB.
    got = rows_of(s, "sorted", predicates=[{"col": "k", "op": "lt", "val": 3}],
                  order_by=[{"col": "k"}])
    assert got == [{"k": 0, "g": 0, "k2": 0}, {"k": 1, "g": int(duck(
        f"SELECT g FROM '{big}' WHERE k = 1")[0][0]), "k2": 2},
        {"k": 2, "g": int(duck(f"SELECT g FROM '{big}' WHERE k = 2")[0][0]), "k2": 4}]
    assert s.post("/api/v1/datasets/sorted/count", {}).json() == {"count": 400000}
    # A reload makes a new generation; the old folder goes with its last reader.
    assert s.post("/api/v1/datasets/sorted/reload", headers=ADMIN).status_code == 200
    gid2 = status(s, "sorted")["generation_id"]
    assert gid2 != gid
    wait_for(lambda: storage_dirs(s, "sorted") == [gid2])
    # DELETE wipes the storage.
    assert delete(s, "sorted").status_code == 200
    wait_for(lambda: not (s.workdir / "storage" / "sorted").exists())


def test_in_flight_reader_keeps_old_storage_generation(vt, datadir):
    s = start(vt, datadir)
    assert post(s, {"name": "lz", "sql": "SELECT trip_id, fare FROM trips",
                    "materialize": {"residency": "lazy", "sort_by": ["trip_id"]}}
                ).status_code == 200
    gid = status(s, "lz")["generation_id"]
    # A stream that has started reading holds its generation.
    r = requests.post(s.url("/api/v1/datasets/lz/query/stream"), json={}, stream=True, timeout=30)
    assert r.status_code == 200
    it = r.iter_content(64)
    next(it)
    assert s.post("/api/v1/datasets/lz/reload", headers=ADMIN).status_code == 200
    gid2 = status(s, "lz")["generation_id"]
    body = b"".join(it)
    assert len(body) > 1000
    r.close()
    wait_for(lambda: storage_dirs(s, "lz") == [gid2])
    assert gid not in storage_dirs(s, "lz")


def test_ttl_expiry_wipes_storage(vt, datadir):
    s = start(vt, datadir)
    assert post(s, {"name": "fleeting", "sql": "SELECT * FROM trips", "ttl": "1s",
                    "materialize": {"residency": "lazy"}}).status_code == 200
    assert len(storage_dirs(s, "fleeting")) == 1
    wait_for(lambda: not (s.workdir / "storage" / "fleeting").exists(), timeout=10)


def test_auto_residency_by_size(vt, datadir):
    s = start(vt, datadir, force_lazy_above_mb=1)
    # A small result stays in memory: no storage generation.
    r = post(s, {"name": "small", "sql": "SELECT station, sum(fare) AS f FROM trips GROUP BY 1",
                 "materialize": {"residency": "auto"}})
    assert r.status_code == 200, r.text
    st = status(s, "small")
    assert st["residency"] == "memory" and st["generation_id"] is None
    assert st["storage_bytes"] is None and not (s.workdir / "storage" / "small").exists()
    # Sums are HUGEINT in DuckDB; the Parquet round trip keeps them exact.
    r = post(s, {"name": "sums", "sql": "SELECT sum(trip_id) AS s FROM trips"})
    assert rows_of(s, "sums") == [{"s": 12497500}]
    schema = s.get("/api/v1/datasets/sums/schema").json()
    assert schema["columns"][0]["type"] == "HUGEINT"
    # Above server.force_lazy_above_mb (1 MiB of Parquet): served from storage.
    r = post(s, {"name": "large", "sql": "SELECT i, random() AS r, md5(i::VARCHAR) AS h "
                                         "FROM range(200000) t(i)"})
    assert r.status_code == 200, r.text
    st = status(s, "large")
    assert st["residency"] == "lazy" and st["storage_bytes"] > 1024 * 1024
    assert "exceed the 1048576-byte threshold" in s.log()


def test_reuse_on_start(vt, datadir, tmp_path):
    work = tmp_path / "w"
    cfg = config(datadir)
    s = vt(cfg, env=ENV, workdir=work)
    body = {"name": "kept", "kind": "query", "sql": "SELECT trip_id, sum(fare) AS f FROM trips "
                                                    "GROUP BY trip_id",
            "materialize": {"residency": "lazy", "sort_by": ["trip_id"], "reuse_on_start": True}}
    assert post(s, body).status_code == 200
    assert post(s, {"name": "rebuilt", "kind": "query", "sql": "SELECT * FROM trips",
                    "materialize": {"residency": "lazy"}}).status_code == 200
    st = status(s, "kept")
    gid, at = st["generation_id"], st["last_refresh_at"]
    old_rebuilt = status(s, "rebuilt")["generation_id"]
    types = [c["type"] for c in s.get("/api/v1/datasets/kept/schema").json()["columns"]]
    assert s.stop() == 0
    # Both stayed on disk at shutdown.
    assert (work / "storage" / "kept" / gid / "data.parquet").is_file()
    s2 = vt(cfg, env=ENV, workdir=work)
    st2 = status(s2, "kept")
    assert st2["generation_id"] == gid and st2["last_refresh_at"] == at
    assert st2["refresh_source"] == "startup" and st2["rows"] == 5000
    assert "serving storage generation " + gid in s2.log()
    assert rows_of(s2, "kept", predicates=[{"col": "trip_id", "op": "eq", "val": 3}]) == \
        [{"trip_id": 3, "f": 4.5}]
    assert [c["type"] for c in s2.get("/api/v1/datasets/kept/schema").json()["columns"]] == types
    # Without reuse_on_start it was rebuilt, and the old files removed.
    new_rebuilt = status(s2, "rebuilt")["generation_id"]
    assert new_rebuilt != old_rebuilt and storage_dirs(s2, "rebuilt") == [new_rebuilt]
    # A changed definition is never served from the old files.
    assert s2.stop() == 0
    f = work / "datasets.d" / "kept.toml"
    f.write_text(f.read_text().replace("sum(fare)", "max(fare)"))
    s3 = vt(cfg, env=ENV, workdir=work)
    st3 = status(s3, "kept")
    assert st3["generation_id"] != gid and "serving storage generation" not in s3.log()
    assert storage_dirs(s3, "kept") == [st3["generation_id"]]


def test_kill_during_storage_write_never_serves_a_partial_generation(vt, datadir, tmp_path):
    work = tmp_path / "w"
    cfg = config(datadir)
    s = vt(cfg, env=ENV, workdir=work)
    body = {"name": "heavy", "kind": "query",
            "sql": "SELECT i, md5(i::VARCHAR) AS h, random() AS r FROM range(30000000) t(i)",
            "materialize": {"residency": "lazy", "sort_by": ["h"], "reuse_on_start": True}}
    assert post(s, {**body, "name": "small", "sql": "SELECT 42 AS answer",
                    "materialize": {"residency": "lazy", "reuse_on_start": True}}
                ).status_code == 200
    r = post(s, body, async_="true")
    assert r.status_code == 202, r.text
    # Kill it while DuckDB writes the Parquet file into the .tmp folder.
    tmp = wait_for(lambda: [p for p in (work / "storage" / "heavy").glob("*.tmp")
                            if (p / "data.parquet").exists()]
                   if (work / "storage" / "heavy").exists() else None, timeout=60, step=0.01)
    s.proc.send_signal(signal.SIGKILL)
    s.proc.wait()
    assert tmp[0].exists()  # the unfinished write is there
    # Restart with a cheap definition so the rebuild is quick.
    f = work / "datasets.d" / "heavy.toml"
    f.write_text(f.read_text().replace("range(30000000)", "range(1000)"))
    s2 = vt(cfg, env=ENV, workdir=work)
    assert not tmp[0].exists()  # removed at startup, never opened
    st = s2.wait_state("heavy", ("published", "failed"))
    assert st["state"] == "published" and st["rows"] == 1000
    assert st["generation_id"] != tmp[0].name[:26]
    assert storage_dirs(s2, "heavy") == [st["generation_id"]]
    assert "removing" in s2.log() and "an unfinished write" in s2.log()
    # The other saved query's complete generation was reused as is.
    assert rows_of(s2, "small") == [{"answer": 42}]


# ------------------------------------------------------------ resource cases

def test_resource_cases_end_in_504_and_leave_nothing(vt, datadir):
    big = write_parquet(datadir / "big.parquet", "SELECT i AS a, i % 97 AS b FROM range(200000) t(i)")
    s = start(vt, datadir, dataset_block("big", big), request_timeout_ms=1500)
    pid = s.proc.pid
    base = vm_status(pid)["VmRSS"]
    limit = (1024 << 20) if not asan_env() else (2048 << 20)
    with RssSampler(pid) as rss:
        for i, text in enumerate([
                "SELECT count(*) AS n FROM range(1000000000000)",
                "SELECT count(*) AS n FROM big x, big y",
                "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) "
                "SELECT count(*) AS c FROM r"]):
            t = time.monotonic()
            r = post(s, {"name": f"heavy{i}", "sql": text})
            took = time.monotonic() - t
            assert r.status_code == 504, (text, r.status_code, r.text[:200])
            assert r.json() == {"error": "request timed out", "code": "timeout"}
            assert took < 6, (text, took)
    assert rss.max - base < limit, (rss.max, base)
    # Nothing was left registered, building or on disk.
    wait_for(lambda: listing(s) == {}, timeout=10)
    for i in range(3):
        assert s.get(f"/api/v1/datasets/heavy{i}/status").status_code == 404
    assert s.post("/api/v1/datasets/big/count", {}).json() == {"count": 200000}


def test_async_build_is_bounded_by_refresh_timeout(vt, datadir):
    s = start(vt, datadir)
    r = post(s, {"name": "endless", "sql": "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL "
                                           "SELECT n + 1 FROM r) SELECT count(*) AS c FROM r",
                 "refresh": {"timeout": "1s"}}, async_="true")
    assert r.status_code == 202
    st = s.wait_state("endless", ("failed",), timeout=20)
    assert "refresh.timeout" in st["last_error"], st
    assert delete(s, "endless").status_code == 200


# ------------------------------------------------------------- confinement

def test_sources_and_duckdb_are_confined_to_the_same_directories(vt, datadir, tmp_path):
    """One rule, two layers (README, "Confinement is one rule"). The source
    policy refuses a registration outside the source roots (server.allowed_roots,
    by default the config's directory and the saved-queries and storage
    directories) before anything is read; DuckDB itself is confined to those
    roots plus the service's own directories (tests/unit/engine/test_confine.c
    checks what it refuses), so everything the policy allows works: lazy
    datasets (pinned links in the runtime directory), storage generations,
    and a Parquet dataset registered from the storage directory."""
    elsewhere = write_parquet(tmp_path / "elsewhere" / "x.parquet", "SELECT 1 AS x")
    lazy = dataset_block("lz", datadir / "trips.parquet", lazy=True)
    s = vt(config(datadir, lazy), env=ENV)  # the default roots
    r = s.post("/api/v1/datasets", {"name": "outside", "source": {"kind": "parquet",
               "location": str(elsewhere)}}, headers=ADMIN)
    assert r.status_code == 400, r.text
    assert r.json()["code"] == "source_not_allowed"
    assert "server.allowed_roots" in r.json()["error"]
    assert s.post("/api/v1/datasets/lz/count", {}).json() == {"count": 5000}
    assert post(s, {"name": "st", "sql": "SELECT * FROM lz",
                    "materialize": {"residency": "lazy"}}).status_code == 200
    assert s.post("/api/v1/datasets/st/count", {}).json() == {"count": 5000}
    # The storage directory is a source root by default, and DuckDB may open
    # it: its Parquet registers as a dataset like any file under the roots.
    stored = sorted((s.workdir / "storage" / "st").rglob("*.parquet"))
    assert stored, list((s.workdir / "storage").rglob("*"))
    r = s.post("/api/v1/datasets", {"name": "from_storage", "source": {"kind": "parquet",
               "location": str(stored[0])}}, headers=ADMIN)
    assert r.status_code == 200, r.text
    assert s.post("/api/v1/datasets/from_storage/count", {}).json() == {"count": 5000}
    # With server.allowed_roots elsewhere: that directory is readable, the
    # storage directory is no source root any more, and DuckDB still writes
    # and reads storage generations there (the service's own directory).
    s2 = vt(config(datadir, lazy).replace(
        "port = 0\n", f'port = 0\nallowed_roots = ["{tmp_path / "elsewhere"}", "{datadir}"]\n'),
        env=ENV)
    r = s2.post("/api/v1/datasets", {"name": "outside", "source": {"kind": "parquet",
                "location": str(elsewhere)}}, headers=ADMIN)
    assert r.status_code == 200, r.text
    assert post(s2, {"name": "st2", "sql": "SELECT * FROM lz", "kind": "query",
                     "materialize": {"residency": "lazy"}}).status_code == 200
    assert s2.post("/api/v1/datasets/st2/count", {}).json() == {"count": 5000}
    assert (s2.workdir / "datasets.d" / "st2.toml").exists()
    stored = sorted((s2.workdir / "storage" / "st2").rglob("*.parquet"))
    assert stored
    r = s2.post("/api/v1/datasets", {"name": "from_storage", "source": {"kind": "parquet",
                "location": str(stored[0])}}, headers=ADMIN)
    assert r.status_code == 400 and r.json()["code"] == "source_not_allowed", r.text


def test_sql_sees_saved_queries_come_and_go(vt, datadir):
    """/sql reads saved queries like any dataset, and the gate's remembered
    answers follow registrations and deletions (the same text is refused,
    accepted, then refused again)."""
    s = start(vt, datadir, "[sql]\nenabled = true\n")
    text = {"sql": "SELECT n FROM counted"}
    for _ in range(3):
        r = s.post("/api/v1/sql", text)
        assert r.status_code == 400 and r.json()["code"] == "sql_unknown_table", r.text
    assert post(s, {"name": "counted", "sql": "SELECT count(*) AS n FROM trips"}).status_code == 200
    for _ in range(6):  # every worker, twice
        r = s.post("/api/v1/sql", text)
        assert r.status_code == 200 and r.json()["data"] == [{"n": 5000}], r.text
    assert delete(s, "counted").status_code == 200
    for _ in range(6):
        r = s.post("/api/v1/sql", text)
        assert r.status_code == 400 and r.json()["code"] == "sql_unknown_table", r.text
    # A saved query over a saved query, read through /sql with a join.
    assert post(s, {"name": "a", "sql": "SELECT station, count(*) AS n FROM trips GROUP BY 1"}
                ).status_code == 200
    assert post(s, {"name": "b", "sql": "SELECT a.station, a.n, s.name FROM a JOIN stations s "
                                        "ON a.station = s.id"}).status_code == 200
    r = s.post("/api/v1/sql", {"sql": "SELECT sum(n) AS total FROM b"})
    assert r.json()["data"] == [{"total": 5000}], r.text


def test_manage_scope_with_bearer_tokens(vt, datadir):
    """With [auth] (and no ADMIN_TOKEN) the routes exist and need the
    datasets:manage scope, which neither the read nor the reload scope gives;
    the admin token is not configured, so it cannot pass."""
    from oidc_issuer import Issuer
    from test_auth_bearer import bearer, start as auth_start

    iss = Issuer()
    try:
        s = auth_start(vt, datadir, iss, env={})
        manager = iss.token(scope="datasets:manage")
        reader = iss.token(scope="datasets:read")
        both = iss.token(scope="datasets:read datasets:reload")
        body = {"name": "m1", "sql": "SELECT count(*) AS n FROM t"}
        r = s.post(Q, body)
        assert r.status_code == 401 and r.json()["code"] == "unauthorized"
        for tok in (reader, both):
            r = s.post(Q, body, headers=bearer(tok))
            assert r.status_code == 403 and r.json()["code"] == "insufficient_scope", r.text
            assert 'scope="datasets:manage"' in r.headers["WWW-Authenticate"]
            assert requests.get(s.url(Q), headers=bearer(tok), timeout=10).status_code == 403
        r = s.post(Q, body, headers=bearer(manager))
        # no row count for a token that cannot read (issue 22 item 5)
        assert r.status_code == 200 and "rows" not in r.json(), r.text
        # a bounded function's refusal keeps its code, not its message: its
        # sizes are the data's (repeat('x', salary) tells the salary)
        r = s.post(Q, {"name": "m2", "sql": "SELECT repeat('ab', 40000000 + id) AS r FROM t"},
                   headers=bearer(manager))
        assert r.status_code == 400 and r.json()["code"] == "limit_exceeded", r.text
        assert "8000000" not in r.text and "read scope" in r.json()["error"], r.text
        r = s.post(Q, {"name": "m2", "sql": "SELECT CAST('v42' || id AS INTEGER) AS r FROM t"},
                   headers=bearer(manager))
        assert r.status_code == 400 and r.json()["code"] == "query_failed", r.text
        assert "v42" not in r.text, r.text
        r = requests.get(s.url(Q), headers=bearer(manager), timeout=10)
        assert [x["name"] for x in r.json()] == ["m1"]
        # Reading the saved query is a read (the read scope), not manage.
        r = s.post("/api/v1/datasets/m1/query", {}, headers=bearer(reader))
        assert r.json()["data"] == [{"n": 100}]
        assert requests.delete(s.url(Q + "/m1"), headers=bearer(reader), timeout=10).status_code == 403
        assert requests.delete(s.url(Q + "/m1"), headers=bearer(manager), timeout=10).status_code == 200
        assert requests.delete(s.url(Q + "/m1"), headers={"X-Admin-Token": "anything"},
                               timeout=10).status_code == 401
    finally:
        iss.close()
