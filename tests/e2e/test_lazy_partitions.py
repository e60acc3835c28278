"""Partition values of hive-partitioned files: each row gets its own file's
value, lazy and resident, whatever the order of the files and however many a
query reads (src/sources/scan.c picks the value by DuckDB's file_index, the
position of the row's file in the list it was given)."""
import pytest

from conftest import Server, dataset_block, server_block, sql

DAYS = 12  # more than 10: the files' names 0..11 sort differently as text


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    d = tmp_path_factory.mktemp("hive")
    # Every row carries its partition's day as an ordinary column too (copy),
    # so a row with the wrong file's value shows.
    sql(f"""COPY (SELECT i AS id, DATE '2024-03-01' + (i % {DAYS})::INTEGER AS day,
                   strftime(DATE '2024-03-01' + (i % {DAYS})::INTEGER, '%Y-%m-%d') AS copy,
                   i % 7 AS k
            FROM range(1200) t(i)) TO '{d}/h' (FORMAT parquet, PARTITION_BY (day))""")
    loc = f"{d}/h/*/*.parquet"
    (d / "srv").mkdir()
    s = Server(d / "srv", server_block()
               + dataset_block("lz", loc, lazy=True, **{"s3.partitioning": "hive"})
               + dataset_block("res", loc, **{"s3.partitioning": "hive"}))
    s.start()
    s.wait_ready()
    yield s
    assert s.stop() == 0


def all_rows(s, ds, body):
    r = s.post(f"/api/v1/datasets/{ds}/query", dict(body, page_size=5000))
    assert r.status_code == 200, r.text
    return r.json()["data"]


@pytest.mark.parametrize("ds", ["lz", "res"])
def test_every_row_has_its_own_files_value(srv, ds):
    rows = all_rows(srv, ds, {})
    assert len(rows) == 1200
    assert all(r["day"] == r["copy"] for r in rows), [r for r in rows if r["day"] != r["copy"]][:3]
    assert len({r["day"] for r in rows}) == DAYS


@pytest.mark.parametrize("ds", ["lz", "res"])
def test_a_range_of_partitions(srv, ds):
    # Pruning leaves some files (lazy); values still match rows.
    body = {"predicates": [{"col": "day", "op": "between", "val": ["2024-03-03", "2024-03-11"]}]}
    rows = all_rows(srv, ds, body)
    assert len(rows) == 900
    assert all(r["day"] == r["copy"] for r in rows)
    assert {r["day"] for r in rows} == {f"2024-03-{d:02d}" for d in range(3, 12)}
    r = srv.post(f"/api/v1/datasets/{ds}/count", body)
    assert r.json()["count"] == 900
    # A filter on another column too: the files that can match, every row
    # still tagged with its own day.
    body["predicates"].append({"col": "k", "op": "eq", "val": 3})
    rows = all_rows(srv, ds, body)
    assert rows and all(r["day"] == r["copy"] and r["k"] == 3 for r in rows)
    assert len(rows) == sum(1 for i in range(1200) if i % 7 == 3 and 2 <= i % DAYS <= 10)


@pytest.mark.parametrize("ds", ["lz", "res"])
def test_group_by_the_partition_over_a_range(srv, ds):
    body = {"predicates": [{"col": "day", "op": "between", "val": ["2024-03-09", "2024-03-12"]}],
            "group_by": ["day"], "aggregations": [{"op": "count"}]}
    r = srv.post(f"/api/v1/datasets/{ds}/query", body)
    assert r.status_code == 200, r.text
    got = {x["day"]: x["count"] for x in r.json()["data"]}
    assert got == {f"2024-03-{d:02d}": 100 for d in range(9, 13)}


OPS = [  # (predicate on the partition column, the days it keeps)
    ({"op": "eq", "val": "2024-03-05"}, {5}),
    ({"op": "neq", "val": "2024-03-05"}, set(range(1, 13)) - {5}),
    ({"op": "gte", "val": "2024-03-10"}, {10, 11, 12}),
    ({"op": "lt", "val": "2024-03-03"}, {1, 2}),
    ({"op": "in", "val": ["2024-03-02", "2024-03-07", "2024-03-12"]}, {2, 7, 12}),
    ({"op": "is_not_null"}, set(range(1, 13))),
    ({"op": "is_null"}, set()),
]


@pytest.mark.parametrize("pred,days", OPS)
def test_predicates_the_files_decide(srv, pred, days):
    """The lazy plan leaves a partition predicate every file read matches as a
    whole out of the statement: the rows must be exactly the resident's."""
    body = {"predicates": [dict(pred, col="day")], "order_by": [{"col": "id"}]}
    lz, res = all_rows(srv, "lz", body), all_rows(srv, "res", body)
    assert lz == res
    assert {int(r["day"][-2:]) for r in lz} == days
    assert len(lz) == 100 * len(days)
    both = {"predicates": [dict(pred, col="day"), {"col": "k", "op": "lt", "val": 2}],
            "group_by": ["day"], "aggregations": [{"op": "count"}], "order_by": [{"col": "day"}]}
    r1 = srv.post("/api/v1/datasets/lz/query", both).json()["data"]
    r2 = srv.post("/api/v1/datasets/res/query", both).json()["data"]
    assert r1 == r2 and len(r1) == len(days)
