"""Issue 28's API against DuckDB as the oracle: the query-language additions
(count_distinct, median, quantile, stddev; bucketed and equal-width
group_by; include_total), GET /query?q= (the POST's answer, an ETag per
generation, 304), GET /summary and POST /facets. Every expected value is
computed by DuckDB itself (build/vt-sql) over the same Parquet file, with
the SQL a person would write; the server runs one module-wide instance with
the data resident and the same file as a lazy dataset.
"""
import json
import math
import re
import urllib.parse
from decimal import Decimal

import pytest
import requests

from conftest import Server, dataset_block, server_block, sql, write_parquet

ROWS = 3000
SELECT = f"""
    SELECT i AS id,
           TIMESTAMP '2024-01-01 00:00:00' + INTERVAL (i * 37) MINUTE AS ts,
           TIMESTAMPTZ '2024-03-30 22:00:00+00' + INTERVAL (i * 13) MINUTE AS tz,
           DATE '2023-12-20' + (i % 90)::INT AS day,
           ['card', 'cash', 'app', 'voucher'][1 + i % 4] AS payment,
           CASE WHEN i % 7 = 0 THEN NULL ELSE ['north', 'south', 'east'][1 + i % 3] END AS region,
           CAST(2.5 + (i * 7919 % 10000) / 100.0 AS DECIMAL(10, 2)) AS fare,
           CASE WHEN i % 11 = 0 THEN NULL ELSE (i * 31 % 997) / 8.0 END AS km,
           (i * 17 % 101) - 50 AS delta,
           i % 5 = 0 AS flag
    FROM range({ROWS}) t(i)"""


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    d = tmp_path_factory.mktemp("explore-api")
    pq = write_parquet(d / "trips.parquet", SELECT)
    s = Server(d, server_block() + dataset_block("trips", pq)
               + dataset_block("lazy_trips", pq, lazy=True))
    s.start()
    s.wait_ready()
    yield s, pq
    assert s.stop() == 0


def duck(pq, query):
    """Rows of `query` over the file (as table t) from DuckDB, as text."""
    return sql(f"CREATE VIEW t AS SELECT * FROM read_parquet('{pq}')", query)


def num(v):
    return None if v is None else Decimal(str(v))


def close(a, b, rel=1e-9):
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(float(a), float(b), rel_tol=rel, abs_tol=1e-9)


def ts(v):
    """DuckDB's text of a timestamp as the API writes it."""
    if v is None:
        return None
    v = v.replace(" ", "T")
    return v[:-3] + "Z" if v.endswith("+00") else v


def post(s, name, body, path="query"):
    r = s.post(f"/api/v1/datasets/{name}/{path}", body)
    assert r.status_code == 200, (body, r.text)
    return r.json()


@pytest.mark.parametrize("name", ["trips", "lazy_trips"])
def test_new_aggregations_match_duckdb(env, name):
    s, pq = env
    body = {"group_by": ["payment"],
            "aggregations": [{"op": "count_distinct", "col": "region"},
                             {"op": "median", "col": "fare"},
                             {"op": "quantile", "col": "fare", "q": 0.95, "alias": "p95"},
                             {"op": "quantile", "col": "km", "q": 0.1, "alias": "p10_km"},
                             {"op": "stddev", "col": "km"},
                             {"op": "median", "col": "ts"},
                             {"op": "median", "col": "delta"}],
            "order_by": [{"col": "payment"}]}
    got = post(s, name, body)["data"]
    want = duck(pq, "SELECT payment, count(DISTINCT region), median(fare), "
                    "quantile_cont(fare, 0.95), quantile_cont(km, 0.1), stddev_samp(km), "
                    "median(ts), median(delta) FROM t GROUP BY payment ORDER BY payment")
    assert [r["payment"] for r in got] == [w[0] for w in want]
    for g, w in zip(got, want):
        assert g["count_distinct_region"] == int(w[1])
        assert num(g["median_fare"]) == num(w[2])      # DECIMAL: exact, scale kept
        assert num(g["p95"]) == num(w[3])
        assert close(g["p10_km"], w[4]) and close(g["stddev_km"], w[5])
        assert g["median_ts"] == ts(w[6])
        assert close(g["median_delta"], w[7])
    # having on the new aggregations; the old rules stand
    body["having"] = [{"col": "p95", "op": "gt", "val": 97}]
    got = post(s, name, body)["data"]
    want = duck(pq, "SELECT payment FROM t GROUP BY payment "
                    "HAVING quantile_cont(fare, 0.95) > 97 ORDER BY payment")
    assert [r["payment"] for r in got] == [w[0] for w in want]
    r = s.post(f"/api/v1/datasets/{name}/query", {"aggregations": [{"op": "median", "col": "fare"}]})
    assert r.status_code == 400 and r.json()["code"] == "invalid_combination"
    r = s.post(f"/api/v1/datasets/{name}/query",
               {"group_by": ["payment"], "aggregations": [{"op": "quantile", "col": "fare"}]})
    assert r.status_code == 400 and r.json()["code"] == "invalid_aggregation"


BUCKETS = [
    ("ts", "minute", "date_trunc('minute', ts)"),
    ("ts", "hour", "date_trunc('hour', ts)"),
    ("ts", "day", "CAST(date_trunc('day', ts) AS TIMESTAMP)"),
    ("ts", "week", "CAST(date_trunc('week', ts) AS TIMESTAMP)"),
    ("ts", "month", "CAST(date_trunc('month', ts) AS TIMESTAMP)"),
    ("ts", "year", "CAST(date_trunc('year', ts) AS TIMESTAMP)"),
    ("tz", "day", "CAST(date_trunc('day', tz) AS VARCHAR)"),
    ("day", "week", "CAST(date_trunc('week', day) AS DATE)"),
    ("day", "month", "CAST(date_trunc('month', day) AS DATE)"),
]


@pytest.mark.parametrize("name", ["trips", "lazy_trips"])
@pytest.mark.parametrize("col,bucket,expr", BUCKETS, ids=[f"{c}-{b}" for c, b, _ in BUCKETS])
def test_time_buckets_match_date_trunc(env, name, col, bucket, expr):
    s, pq = env
    body = {"group_by": [{"col": col, "bucket": bucket}],
            "aggregations": [{"op": "count"}, {"op": "sum", "col": "delta"}],
            "order_by": [{"col": col}], "page_size": 5000, "include_total": True}
    page = post(s, name, body)
    want = duck(pq, f"SET TimeZone = 'UTC'; SELECT {expr} AS b, count(*), sum(delta) FROM t "
                    f"GROUP BY b ORDER BY b")
    got = [[r[col], r["count"], r["sum_delta"]] for r in page["data"]]
    assert got == [[ts(w[0]), int(w[1]), int(w[2])] for w in want]
    assert page["total"] == len(want)


WIDTHS = [("delta", 10, "delta - ((delta % 10) + 10) % 10"),
          ("fare", 5, "floor(CAST(fare AS DOUBLE) / 5) * 5"),
          ("km", 2.5, "floor(km / 2.5) * 2.5"),
          ("id", 250, "id - ((id % 250) + 250) % 250")]


@pytest.mark.parametrize("col,width,expr", WIDTHS, ids=[w[0] for w in WIDTHS])
def test_width_buckets_match_floor(env, col, width, expr):
    s, pq = env
    body = {"group_by": [{"col": col, "width": width, "alias": "bin"}],
            "aggregations": [{"op": "count"}, {"op": "avg", "col": "id"}],
            "order_by": [{"col": "bin"}], "page_size": 5000}
    got = post(s, "trips", body)["data"]
    want = duck(pq, f"SELECT {expr} AS b, count(*), avg(id) FROM t GROUP BY b "
                    f"ORDER BY b NULLS LAST")
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert (g["bin"] is None) == (w[0] is None)
        if w[0] is not None:
            assert close(g["bin"], w[0])
            if col in ("delta", "id"):
                assert isinstance(g["bin"], int)  # exact integers for integer columns
        assert g["count"] == int(w[1]) and close(g["avg_id"], w[2])


@pytest.mark.parametrize("width", ["0.1", "0.05", "0.3", "2.5"])
def test_width_buckets_put_values_on_their_bound(env, width):
    """A value that is a multiple of the width opens its bucket: fare 10.30
    with width 0.1 is in [10.3, 10.4), though the doubles of 10.3 and 0.1
    divide to 102.99999999999999 (a plain floor put it in 10.2, and
    buckets such as 0.3 had no rows at all). The oracle is decimal
    arithmetic over DuckDB's text of each fare."""
    s, pq = env
    w = Decimal(width)
    want = {}
    for (fare,) in duck(pq, "SELECT CAST(fare AS VARCHAR) FROM t"):
        b = (Decimal(fare) / w).to_integral_value(rounding="ROUND_FLOOR") * w
        want[b] = want.get(b, 0) + 1
    body = {"group_by": [{"col": "fare", "width": float(width), "alias": "bin"}],
            "order_by": [{"col": "bin"}], "page_size": 5000}
    got = {Decimal(str(r["bin"])).normalize(): r["count"]
           for r in post(s, "trips", body)["data"]}
    assert got == {b.normalize(): n for b, n in want.items()}


@pytest.mark.parametrize("name", ["trips", "lazy_trips"])
def test_include_total_counts_every_page(env, name):
    s, pq = env
    cases = [
        ({}, "SELECT count(*) FROM t"),
        ({"predicates": [{"col": "payment", "op": "eq", "val": "card"}]},
         "SELECT count(*) FROM t WHERE payment = 'card'"),
        ({"predicates": [{"col": "fare", "op": "gt", "val": 50}], "limit": 100},
         "SELECT least(count(*), 100) FROM t WHERE fare > 50"),
        ({"columns": ["payment", "region"], "distinct": True},
         "SELECT count(*) FROM (SELECT DISTINCT payment, region FROM t)"),
        ({"group_by": ["region", {"col": "day", "bucket": "week"}],
          "having": [{"col": "count", "op": "gt", "val": 30}]},
         "SELECT count(*) FROM (SELECT region, date_trunc('week', day) FROM t GROUP BY ALL "
         "HAVING count(*) > 30)"),
    ]
    for body, ref in cases:
        want = int(duck(pq, ref)[0][0])
        for page in (1, 2, 50):
            got = post(s, name, dict(body, include_total=True, page_size=7, page=page))
            assert got["total"] == want, (body, page)
        r = s.post(f"/api/v1/datasets/{name}/query?format=arrow", dict(body, include_total=True))
        assert r.status_code == 200 and int(r.headers["X-Total-Count"]) == want
        assert "total" not in post(s, name, dict(body, page_size=7))  # only when asked


def test_get_query_is_the_post_with_an_etag(env):
    s, _ = env
    body = {"columns": ["id", "fare", "ts"], "predicates": [{"col": "payment", "op": "in",
                                                            "val": ["card", "app"]}],
            "order_by": [{"col": "fare", "dir": "desc"}, {"col": "id"}], "page_size": 25,
            "page": 3, "include_total": True}
    q = urllib.parse.quote(json.dumps(body))
    post_r = s.post("/api/v1/datasets/trips/query", body)
    get_r = s.get(f"/api/v1/datasets/trips/query?q={q}")
    assert get_r.status_code == 200
    assert get_r.content == post_r.content  # byte for byte
    assert get_r.headers["Content-Type"] == "application/json"
    etag = get_r.headers["ETag"]
    assert etag.startswith('W/"') and get_r.headers["Cache-Control"] == "no-cache"
    # a form-encoded q (spaces as +) is the same request
    plus = urllib.parse.quote_plus(json.dumps(body))
    assert "+" in plus
    again = s.get(f"/api/v1/datasets/trips/query?q={plus}")
    assert again.content == post_r.content and again.headers["ETag"] == etag
    # revalidation: 304 while the generation stands, a new ETag after a reload
    nm = s.get(f"/api/v1/datasets/trips/query?q={q}", headers={"If-None-Match": etag})
    assert nm.status_code == 304 and nm.content == b"" and nm.headers["ETag"] == etag
    # another query, another format: another ETag
    other = s.get(f"/api/v1/datasets/trips/query?q={q}&format=arrow")
    assert other.status_code == 200 and other.headers["ETag"] != etag
    assert other.headers["Content-Type"] == "application/vnd.apache.arrow.stream"
    assert s.get("/api/v1/datasets/trips/query").json()["page_size"] == 1000  # no q: {}
    # errors as the POST gives them
    for bad, code in ((urllib.parse.quote('{"columns":["nope"]}'), "unknown_column"),
                      ("%7Bnot", "invalid_json"), ("%5B%5D", "invalid_json"),
                      ("%7B%7D%00", "invalid_json")):
        r = s.get(f"/api/v1/datasets/trips/query?q={bad}")
        assert r.status_code == 400 and r.json()["code"] == code, (bad, r.text)


def test_get_query_etag_changes_with_the_generation(vt, datadir):
    pq = write_parquet(datadir / "t.parquet", "SELECT range AS id FROM range(10)")
    s = vt(server_block() + dataset_block("t", pq), env={"ADMIN_TOKEN": "tok"})
    url = "/api/v1/datasets/t/query?q=" + urllib.parse.quote('{"page_size":2}')
    first = s.get(url)
    assert s.get(url, headers={"If-None-Match": first.headers["ETag"]}).status_code == 304
    sm = s.get("/api/v1/datasets/t/summary")
    assert s.get("/api/v1/datasets/t/summary",
                 headers={"If-None-Match": sm.headers["ETag"]}).status_code == 304
    write_parquet(pq, "SELECT range + 100 AS id FROM range(10)")
    assert s.post("/api/v1/datasets/t/reload", headers={"X-Admin-Token": "tok"}).status_code == 200
    after = s.get(url, headers={"If-None-Match": first.headers["ETag"]})
    assert after.status_code == 200 and after.headers["ETag"] != first.headers["ETag"]
    assert after.json()["data"] == [{"id": 100}, {"id": 101}]
    sm2 = s.get("/api/v1/datasets/t/summary", headers={"If-None-Match": sm.headers["ETag"]})
    assert sm2.status_code == 200 and sm2.json()["columns"][0]["min"] == 100
    # one computation per generation
    assert len(re.findall(r"summary of generation \S+ computed", s.log())) == 2


def bucket_holds(lo, hi, v):
    return lo <= v < hi


@pytest.mark.parametrize("name", ["trips", "lazy_trips"])
def test_summary_matches_duckdb(env, name):
    s, pq = env
    r = s.get(f"/api/v1/datasets/{name}/summary")
    assert r.status_code == 200
    summ = r.json()
    assert summ["rows"] == ROWS and summ["name"] == name
    cols = {c["name"]: c for c in summ["columns"]}
    assert list(cols) == ["id", "ts", "tz", "day", "payment", "region", "fare", "km", "delta",
                          "flag"]
    for c in cols.values():
        n, nulls, mn, mx = duck(pq, f'SELECT count("{c["name"]}"), count(*) - count("{c["name"]}"), '
                                    f'min("{c["name"]}")::VARCHAR, max("{c["name"]}")::VARCHAR FROM t')[0]
        assert c["count"] == int(n) and c["null_count"] == int(nulls), c["name"]
        exact = int(duck(pq, f'SELECT count(DISTINCT "{c["name"]}") FROM t')[0][0])
        assert abs(c["approx_distinct"] - exact) <= max(2, exact * 0.05), (c["name"], exact)
        if c["name"] in ("ts", "tz", "day"):
            assert (c["min"], c["max"]) == (ts(mn), ts(mx))
        elif c["name"] in ("payment", "region"):
            assert (c["min"], c["max"]) == (mn, mx)
        elif c["name"] == "flag":
            assert (c["min"], c["max"]) == (False, True)
        else:
            assert num(c["min"]) == num(mn) and num(c["max"]) == num(mx), c["name"]
    # decimals keep their scale: the text of the JSON, not a float
    assert re.search(r'"name":"fare".*?"min":2\.\d\d,', r.text)
    for col in ("id", "fare", "km", "delta"):
        mean, sd = duck(pq, f"SELECT avg({col}), stddev_samp({col}) FROM t")[0]
        assert close(cols[col]["mean"], mean, 1e-12) and close(cols[col]["stddev"], sd, 1e-12)
    for col in ("payment", "ts", "flag"):
        assert cols[col]["mean"] is None and cols[col]["stddev"] is None
    # most frequent values, exactly, for low-cardinality columns only
    for col in ("payment", "region", "flag", "day"):
        want = duck(pq, f"SELECT {col}, count(*) AS n FROM t WHERE {col} IS NOT NULL "
                        f"GROUP BY {col} ORDER BY n DESC, {col}::VARCHAR LIMIT 10")
        got = cols[col]["top_values"]
        assert [g["count"] for g in got] == [int(w[1]) for w in want], col
        assert sorted(str(g["value"]).lower() for g in got) == \
            sorted(ts(w[0]).lower() if col == "day" else w[0].lower() for w in want)
        assert cols[col]["approx_distinct"] == int(duck(pq, f"SELECT count(DISTINCT {col}) FROM t")[0][0])
    assert cols["id"]["top_values"] is None and cols["fare"]["top_values"] is None
    # histograms: equal widths, every finite value in exactly one bucket, the
    # counts DuckDB finds between the same edges
    for col, conv in (("id", int), ("fare", Decimal), ("km", Decimal), ("delta", int)):
        b = cols[col]["histogram"]["buckets"]
        widths = {num(x["hi"]) - num(x["lo"]) for x in b}
        assert len(widths) == 1, (col, widths)
        assert 3 <= len(b) <= 22
        assert num(b[0]["lo"]) <= num(cols[col]["min"]) and num(b[-1]["hi"]) > num(cols[col]["max"])
        want = duck(pq, "SELECT " + ", ".join(
            f"count(*) FILTER (WHERE {col} >= {x['lo']} AND {col} < {x['hi']})" for x in b)
            + " FROM t")[0]
        assert [x["count"] for x in b] == [int(w) for w in want], col
        assert sum(x["count"] for x in b) == cols[col]["count"]
    for col in ("ts", "tz", "day"):
        b = cols[col]["histogram"]["buckets"]
        cast = {"ts": "TIMESTAMP", "tz": "TIMESTAMPTZ", "day": "DATE"}[col]
        want = duck(pq, "SET TimeZone = 'UTC'; SELECT " + ", ".join(
            f"count(*) FILTER (WHERE {col} >= '{x['lo']}'::{cast} AND {col} < '{x['hi']}'::{cast})"
            for x in b) + ", " + ", ".join(
            f"'{x['hi']}'::{cast} - '{x['lo']}'::{cast}" for x in b) + " FROM t")[0]
        assert [x["count"] for x in b] == [int(w) for w in want[:len(b)]], col
        assert len(set(want[len(b):])) == 1, (col, want[len(b):])  # equal widths
        assert sum(x["count"] for x in b) == ROWS
    for col in ("payment", "region", "flag"):
        assert cols[col]["histogram"] is None
    # ?columns= selects, in the dataset's order; unknown names are 400
    sel = s.get(f"/api/v1/datasets/{name}/summary?columns=region,id").json()
    assert [c["name"] for c in sel["columns"]] == ["id", "region"]
    assert sel["columns"][1] == cols["region"]
    arr = s.get(f"/api/v1/datasets/{name}/summary?columns=" + urllib.parse.quote('["km"]')).json()
    assert [c["name"] for c in arr["columns"]] == ["km"]
    bad = s.get(f"/api/v1/datasets/{name}/summary?columns=id,nope")
    assert bad.status_code == 400 and bad.json()["code"] == "unknown_column"
    assert s.get("/api/v1/datasets/nope/summary").status_code == 404


def test_summary_of_odd_columns(vt, datadir):
    pq = write_parquet(datadir / "odd.parquet", """
        SELECT id, s, l, st, d, allnull::INTEGER AS allnull, h::DECIMAL(38, 0) AS h, u::UTINYINT AS u,
               tm::TIME AS tm, bl::BLOB AS bl, iv FROM (VALUES
          (1, 'x', [1, 2], {'a': 1}, 'nan'::DOUBLE, NULL, '99999999999999999999999999999999999999', 7, '10:30:00', 'ab', INTERVAL 1 DAY),
          (2, 'y', [], {'a': 2}, 1.5, NULL, '-5', 9, '23:59:59', NULL, NULL),
          (3, 'y', NULL, NULL, 'inf'::DOUBLE, NULL, '0', 9, NULL, 'cd', INTERVAL 2 HOUR))
          v(id, s, l, st, d, allnull, h, u, tm, bl, iv)""")
    s = vt(server_block() + dataset_block("odd", pq))
    r = s.get("/api/v1/datasets/odd/summary")
    assert r.status_code == 200, r.text
    cols = {c["name"]: c for c in r.json()["columns"]}
    assert cols["allnull"]["count"] == 0 and cols["allnull"]["null_count"] == 3
    assert cols["allnull"]["min"] is None and cols["allnull"]["histogram"] is None
    assert '"max":99999999999999999999999999999999999999,' in r.text  # exact, 38 digits
    assert cols["l"]["min"] is None and cols["l"]["histogram"] is None and cols["l"]["count"] == 2
    assert cols["s"]["top_values"] == [{"value": "y", "count": 2}, {"value": "x", "count": 1}]
    # NaN and infinity are values, but not in a histogram
    assert sum(b["count"] for b in cols["d"]["histogram"]["buckets"]) == 1
    assert [b["count"] for b in cols["u"]["histogram"]["buckets"]] == [1, 0, 2]
    tm = cols["tm"]["histogram"]["buckets"]
    assert sum(b["count"] for b in tm) == 2 and tm[-1]["hi"] == "24:00:00"
    assert cols["d"]["top_values"] == [{"value": 1.5, "count": 1}]
    assert cols["d"]["approx_distinct"] == 3 and cols["d"]["mean"] == 1.5
    assert cols["h"]["mean"] is not None and cols["h"]["top_values"][0] == {"value": -5, "count": 1}
    assert cols["bl"]["count"] == 2 and cols["iv"]["histogram"] is None


def test_summary_of_a_wide_dataset(vt, datadir):
    """A 150-column dataset of 50 rows is summarised under a 1 GB memory
    limit, every column right. It was one statement whose allocations grow
    with the square of its columns (DuckDB gives every filtered aggregate a
    chunk of all the statement's inputs): 60 columns passed the 1.2 GB
    allocation budget, 150 passed a 15 GB one, and the answer was 500
    internal, in the Explorer's statistics too."""
    cols = [f"i * {k} - {k} AS c{k}" if k % 3 else f"'v' || (i % {k + 2}) AS c{k}"
            for k in range(150)]
    pq = write_parquet(datadir / "wide.parquet", f"SELECT {', '.join(cols)} FROM range(50) t(i)")
    s = vt(server_block(memory_limit="1GB") + dataset_block("wide", pq))
    r = s.get("/api/v1/datasets/wide/summary")
    assert r.status_code == 200, r.text[:500]
    got = r.json()
    assert got["rows"] == 50 and [c["name"] for c in got["columns"]] == [f"c{k}" for k in range(150)]
    want = duck(pq, "SELECT " + ", ".join(f"min(c{k}), max(c{k}), count(DISTINCT c{k})"
                                          for k in range(150)) + " FROM t")[0]
    for k, c in enumerate(got["columns"]):
        lo, hi, d = want[3 * k: 3 * k + 3]
        assert c["count"] == 50 and c["null_count"] == 0, c
        assert str(c["min"]) == lo and str(c["max"]) == hi, (c, lo, hi)
        assert c["approx_distinct"] == int(d), (c, d)
        if k % 3:
            assert sum(b["count"] for b in c["histogram"]["buckets"]) == 50, c
        else:
            assert len(c["top_values"]) == min(10, int(d)), c


def test_summary_top_values_break_ties_by_value_as_facets_do(vt, datadir):
    """Fifteen integers seen once each: the ten top_values shown are the ten
    smallest in ascending order, the ones /facets shows (ties by value).
    They were ordered by their JSON text: -1 before -5, 10 before 2."""
    pq = write_parquet(datadir / "ties.parquet",
                       "SELECT i - 5 AS k, i * 1.5 AS x FROM range(15) t(i)")
    s = vt(server_block() + dataset_block("ties", pq))
    cols = {c["name"]: c for c in s.get("/api/v1/datasets/ties/summary").json()["columns"]}
    facets = post(s, "ties", {"columns": ["k", "x"], "limit": 10}, "facets")["facets"]
    assert [v["value"] for v in cols["k"]["top_values"]] == list(range(-5, 5))
    for f in facets:
        assert cols[f["column"]]["top_values"] == f["values"], f["column"]


def test_facets_of_nested_columns_break_ties_by_their_text(vt, datadir):
    """Lists and structs seen once each: the values shown are the first by
    their text, in that order, the same on every call (the tie order was
    left to the hash table: another set of values from one run to the
    next, and not the "ties by value" the page promises)."""
    pq = write_parquet(datadir / "nested.parquet",
                       "SELECT [i, i + 1] AS l, {'a': i, 'b': 'z'} AS st FROM range(40) t(i)")
    s = vt(server_block() + dataset_block("nested", pq))
    want = {c: [r[0] for r in duck(pq, f"SELECT CAST({c} AS VARCHAR) AS k FROM t ORDER BY k LIMIT 4")]
            for c in ("l", "st")}
    for _ in range(3):
        got = post(s, "nested", {"columns": ["l", "st"], "limit": 4}, "facets")["facets"]
        assert [len(f["values"]) for f in got] == [4, 4]
        assert [v["value"] for v in got[0]["values"]] == [[0, 1], [1, 2], [10, 11], [11, 12]], got
        assert [v["value"]["a"] for v in got[1]["values"]] == [0, 1, 10, 11], got
    # which is DuckDB's own order of their text
    assert want["l"] == ["[0, 1]", "[1, 2]", "[10, 11]", "[11, 12]"], want
    assert [t.split(",")[0] for t in want["st"]] == ["{'a': 0", "{'a': 1", "{'a': 10", "{'a': 11"], want


def test_facets_match_duckdb(env):
    s, pq = env
    body = {"columns": ["payment", "region", "delta", "flag"],
            "predicates": [{"col": "fare", "op": "gt", "val": 40},
                           {"col": "ts", "op": "lt", "val": "2024-02-15T00:00:00"}],
            "limit": 3}
    got = post(s, "trips", body, "facets")
    where = "fare > 40 AND ts < TIMESTAMP '2024-02-15 00:00:00'"
    total = int(duck(pq, f"SELECT count(*) FROM t WHERE {where}")[0][0])
    assert got["rows"] == total and [f["column"] for f in got["facets"]] == body["columns"]
    for f in got["facets"]:
        c = f["column"]
        want = duck(pq, f"SELECT {c}, count(*) AS n FROM t WHERE {where} GROUP BY {c} "
                        f"ORDER BY n DESC, {c} NULLS LAST")
        top = want[:3]
        assert [v["count"] for v in f["values"]] == [int(w[1]) for w in top], c
        norm = (lambda x: None if x is None else str(x).lower())
        assert [norm(v["value"]) for v in f["values"]] == [norm(w[0]) for w in top], c
        assert f["distinct"] == len(want)
        assert f["other_values"] == len(want) - len(top)
        assert f["other_rows"] == total - sum(int(w[1]) for w in top)
    # the region facet counts NULL as a value
    all_regions = post(s, "trips", {"columns": ["region"], "limit": 10}, "facets")["facets"][0]
    assert {v["value"] for v in all_regions["values"]} == {"north", "south", "east", None}
    assert all_regions["values"][-1] == {"value": None, "count": ROWS // 7 + 1}
    # lazy datasets answer the same
    assert post(s, "lazy_trips", body, "facets")["facets"] == got["facets"]
    # errors name the slot, as /query does
    for bad, code, needle in (
            ({"columns": []}, "invalid_query", "columns"),
            ({"columns": ["paymnt"]}, "unknown_column", 'did you mean "payment"'),
            ({"columns": ["payment"], "predicates": [{"col": "fare", "op": "gt", "val": "x"}]},
             "invalid_value", "predicates[0].val"),
            ({"columns": ["payment"], "limit": 0}, "invalid_query", "limit"),
            ({"columns": ["payment"], "order_by": []}, "unknown_field", "order_by"),
            ({"columns": ["payment", "payment"]}, "invalid_query", "listed twice"),
            ({"columns": [f"c{i}" for i in range(40)]}, "limit_exceeded", "columns")):
        r = s.post("/api/v1/datasets/trips/facets", bad)
        assert r.status_code == 400 and r.json()["code"] == code, (bad, r.text)
        assert needle in r.json()["error"], r.text
