"""Deletion vectors past the dataset itself (issue 25 item 1): rows a Delta
deletion vector deletes are never served through anything built over the
table either: saved queries over resident and lazy upstreams (materialized in
memory and as lazy storage generations), /sql, filtered counts answered from
the lazy statistics, and a time-travel pin to the version before the delete
(which serves them again). One server for the module.

table-with-dv-small (the shared corpus): version 0 wrote values 0..9, version
1 deleted 0 and 9 with a deletion vector; its add.stats still say 10 records
with min 0 and max 9.
"""
import pytest

from conftest import delta_corpus, server_block

ADMIN = {"X-Admin-Token": "t0k"}
WANT = list(range(1, 9))


def delta_block(name, location, extra=""):
    return (f'[[dataset]]\nname = "{name}"\nsource.kind = "delta"\n'
            f'source.location = "{location}"\n{extra}\n')


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    from conftest import Server
    corpus = delta_corpus()
    if not corpus:
        pytest.fail("Delta corpus not found (expected ../shared/delta-tables)")
    t = corpus / "table-with-dv-small"
    d = tmp_path_factory.mktemp("dvup")
    cfg = (server_block() + "[sql]\nenabled = true\n" + delta_block("dv_r", t)
           + delta_block("dv_l", t, "lazy = true")
           + delta_block("dv_v0", t, "lazy = true\nsource.version = 0"))
    s = Server(d, cfg, env={"ADMIN_TOKEN": "t0k"})
    s.start()
    try:
        s.wait_ready(timeout=60)
        yield s
    finally:
        s.stop()


def values(s, name, **body):
    r = s.post(f"/api/v1/datasets/{name}/query", {"order_by": [{"col": "value"}], **body})
    assert r.status_code == 200, r.text
    return [x["value"] for x in r.json()["data"]]


def count(s, name, **body):
    r = s.post(f"/api/v1/datasets/{name}/count", body)
    assert r.status_code == 200, r.text
    return r.json()["count"]


@pytest.mark.parametrize("up", ["dv_r", "dv_l"])
def test_datasets_and_counts_honour_the_vector(srv, up):
    assert values(srv, up) == WANT
    assert count(srv, up) == 8
    # Filters the statistics decide on (min 0, max 9, 10 records) still
    # count only the rows left.
    assert count(srv, up, predicates=[{"col": "value", "op": "gte", "val": 0}]) == 8
    assert count(srv, up, predicates=[{"col": "value", "op": "lte", "val": 9}]) == 8
    assert count(srv, up, predicates=[{"col": "value", "op": "eq", "val": 9}]) == 0
    assert values(srv, up, predicates=[{"col": "value", "op": "in", "val": [0, 1, 9]}]) == [1]


@pytest.mark.parametrize("up", ["dv_r", "dv_l"])
@pytest.mark.parametrize("residency", [None, "lazy"])
def test_saved_queries_over_the_table(srv, up, residency):
    name = f"q_{up}_{residency or 'mem'}"
    body = {"name": name, "sql": f"SELECT value, value * 10 AS ten FROM {up}"}
    if residency:
        body["materialize"] = {"residency": residency}
    r = srv.post("/api/v1/queries", body, headers=ADMIN)
    assert r.status_code == 200, r.text
    assert r.json()["rows"] == 8
    assert values(srv, name) == WANT
    assert count(srv, name) == 8
    agg = srv.post("/api/v1/queries", {"name": name + "_agg", "sql": (
        f"SELECT count(*) AS n, min(value) AS lo, max(value) AS hi FROM {up}")}, headers=ADMIN)
    assert agg.status_code == 200, agg.text
    r = srv.post(f"/api/v1/datasets/{name}_agg/query", {})
    assert r.json()["data"] == [{"n": 8, "lo": 1, "hi": 8}]


@pytest.mark.parametrize("up", ["dv_r", "dv_l"])
def test_sql_sees_only_the_rows_left(srv, up):
    r = srv.post("/api/v1/sql", {"sql": f"SELECT count(*) AS n, sum(value) AS s FROM {up}"})
    assert r.status_code == 200, r.text
    assert r.json()["data"] == [{"n": 8, "s": 36}]


def test_version_before_the_delete_serves_every_row(srv):
    assert values(srv, "dv_v0") == list(range(10))
    assert count(srv, "dv_v0") == 10
    assert srv.get("/api/v1/datasets/dv_v0/status").json()["delta_version"] == 0
    assert srv.get("/api/v1/datasets/dv_r/status").json()["delta_version"] == 1
