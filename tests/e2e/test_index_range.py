"""Range counts from the index (issue 24, bench line 7): /count with
comparisons on one integer (HUGEINT too, when its values fit 64 bits), DOUBLE,
FLOAT, DECIMAL, DATE, TIMESTAMP (any
unit) or TIMESTAMPTZ column is answered from the column's sorted values, and
must equal DuckDB's count for every input: the same file served with
index.mode = "none" (DuckDB answers) and /sql count(*) are the references.
NULLs, NaN, -0, infinities, equal bounds, empty ranges, bounds outside the
data or the type's range and time-zone offsets are in. (A Parquet file's
millisecond timestamps read as TIMESTAMP; nanosecond ones, what pandas
writes, as TIMESTAMP_NS.)"""
import datetime
import math
import random
import time

import pytest

from conftest import Server, dataset_block, server_block, stop_checked, write_parquet

ROWS = 20_000
T0 = 1704067200  # 2024-01-01T00:00:00Z


def start_with_index(d, cfg):
    """A server on cfg, ready, with dataset t's index built (or given up)."""
    s = Server(d, cfg)
    s.start()
    s.wait_ready(timeout=120)
    deadline = time.time() + 120
    while s.get("/api/v1/datasets/t/status").json()["index"]["state"] not in (
            "ready", "failed", "none"):
        assert time.time() < deadline
        time.sleep(0.02)
    return s



def start_query_pair(d, path, sql):
    """A server with `src` (the Parquet file at path) and two query datasets
    of the same `sql` over it: `t` with the default index, `plain` with
    none (DuckDB's own answers), ready and indexed."""
    cfg = (server_block() + "[sql]\nenabled = true\n" + dataset_block("src", path)
           + f'[[dataset]]\nname = "t"\nsql = "{sql}"\ndepends_on = ["src"]\n'
           + f'[[dataset]]\nname = "plain"\nsql = "{sql}"\ndepends_on = ["src"]\n'
             'index.mode = "none"\n')
    return start_with_index(d, cfg)

@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    d = tmp_path_factory.mktemp("range")
    path = write_parquet(d / "r.parquet", f"""
        SELECT i AS id,
               CASE WHEN i % 13 = 0 THEN NULL
                    ELSE TIMESTAMP '2024-01-01' + to_microseconds((hash(i) % 31536000000)::BIGINT * 1000 + i % 7)
               END AS ts,
               CASE WHEN i % 11 = 0 THEN NULL
                    ELSE TIMESTAMPTZ '2024-01-01 00:00:00+00' + to_seconds((hash(i * 3) % 86400 * 30)::BIGINT)
               END AS tstz,
               CASE WHEN i % 17 = 0 THEN NULL ELSE DATE '2024-01-01' + (hash(i) % 400)::INTEGER END AS day,
               CASE i % 10 WHEN 0 THEN 'NaN'::DOUBLE WHEN 1 THEN -0.0::DOUBLE WHEN 2 THEN 0.0::DOUBLE
                           WHEN 3 THEN 'inf'::DOUBLE WHEN 4 THEN '-inf'::DOUBLE WHEN 5 THEN NULL
                           ELSE ((hash(i) % 20001)::BIGINT - 10000) / 8.0 END AS d,
               CASE WHEN i % 19 = 0 THEN NULL ELSE (hash(i * 5) % 2001)::BIGINT - 1000 END AS n,
               (hash(i * 7) % 60000)::USMALLINT AS u,
               i % 2 = 0 AS flag,
               CASE WHEN i % 23 = 0 THEN NULL
                    ELSE make_timestamp_ns({T0}000000000 + (hash(i * 11) % 31536000000)::BIGINT
                                           * 1000000 + i % 1000 * 1001)
               END AS ts_ns,
               CAST(CAST((hash(i * 13) % 200001)::BIGINT - 100000 AS DECIMAL(18,0)) * 0.01
                    AS DECIMAL(18,2)) AS dec18,
               CASE WHEN i % 29 = 0 THEN NULL
                    ELSE CAST(CAST((hash(i * 17) >> (hash(i) % 50))::HUGEINT - 1000000
                                   AS DECIMAL(38,0)) * 0.0000000001 AS DECIMAL(38,10))
               END AS dec38,
               CASE i % 12 WHEN 0 THEN 'NaN'::FLOAT WHEN 1 THEN -0.0::FLOAT
                           WHEN 2 THEN 'inf'::FLOAT WHEN 3 THEN '-inf'::FLOAT WHEN 4 THEN NULL
                           WHEN 5 THEN (hash(i) % 1000 / 10.0)::FLOAT
                           WHEN 6 THEN (16777216 + i % 3)::FLOAT
                           ELSE (((hash(i * 19) % 2001)::BIGINT - 1000) / 8.0)::FLOAT END AS flt
        FROM range({ROWS}) t(i)""")
    # max_cardinality below ROWS: id, unique and never decreasing, gets
    # frames (as a 1M-row table's id does by default)
    cfg = (server_block() + "[sql]\nenabled = true\n"
           + dataset_block("t", path, **{"index.max_cardinality": 5000})
           + dataset_block("plain", path, **{"index.mode": "none"}))
    s = start_with_index(d, cfg)
    yield s
    stop_checked(s)


def count(s, ds, preds):
    r = s.post(f"/api/v1/datasets/{ds}/count", {"predicates": preds})
    return r


def same(s, preds):
    a = count(s, "t", preds)
    b = count(s, "plain", preds)
    assert a.status_code == b.status_code, (preds, a.text, b.text)
    if a.status_code == 200:
        assert a.json()["count"] == b.json()["count"], (preds, a.json(), b.json())
    else:
        assert a.json()["code"] == b.json()["code"], (preds, a.text, b.text)
    return a


def from_index(r):
    # answered on the HTTP thread, without a DuckDB job
    return r.headers["Server-Timing"].startswith("queue;dur=0.000,")


def iso(us, offset_min=0):
    t = datetime.datetime(1970, 1, 1) + datetime.timedelta(microseconds=us)
    t += datetime.timedelta(minutes=offset_min)
    text = t.strftime("%Y-%m-%dT%H:%M:%S") + (".%06d" % t.microsecond if t.microsecond else "")
    if offset_min:
        sign = "+" if offset_min > 0 else "-"
        m = abs(offset_min)
        text += "%s%02d:%02d" % (sign, m // 60, m % 60)
    return text


OPS1 = ["gt", "gte", "lt", "lte", "eq"]


def preds_for(rng, col, value):
    """One or two comparisons on col (value() gives a JSON value)."""
    k = rng.random()
    if k < 0.4:
        a, b = value(), value()
        if rng.random() < 0.7:
            a, b = min(a, b), max(a, b)
        return [{"col": col, "op": "between", "val": [a, b]}]
    if k < 0.8:
        return [{"col": col, "op": rng.choice(OPS1), "val": value()}]
    return [{"col": col, "op": rng.choice(OPS1), "val": value()},
            {"col": col, "op": rng.choice(OPS1), "val": value()}]


def test_timestamp_ranges_equal_duckdb(srv):
    rng = random.Random(7)
    span = 365 * 86400 * 1000000

    def value():
        k = rng.random()
        us = T0 * 1000000 + rng.randrange(-span // 10, span + span // 10)
        if k < 0.1:
            return iso(us - us % 86400000000)[:10]  # a date alone: midnight
        if k < 0.2:
            return iso(us, rng.choice([-300, 60, 330]))  # an offset: moved to UTC
        if k < 0.25:
            return rng.choice(["0001-01-01", "9999-12-31T23:59:59.999999", "1970-01-01"])
        return iso(us)
    answered = 0
    for _ in range(150):
        r = same(srv, preds_for(rng, "ts", value))
        answered += from_index(r)
    assert answered > 100
    # the bench's shape, and against /sql
    a, b = "2024-03-01T00:00:00", "2024-06-30T23:59:59"
    r = same(srv, [{"col": "ts", "op": "between", "val": [a, b]}])
    assert from_index(r)
    q = srv.post("/api/v1/sql", {"sql": "SELECT count(*) AS c FROM t WHERE ts BETWEEN "
                                 "TIMESTAMP '2024-03-01 00:00:00' AND TIMESTAMP '2024-06-30 23:59:59'"})
    assert q.status_code == 200, q.text
    assert q.json()["data"][0]["c"] == r.json()["count"]
    # equal bounds on an existing value (microseconds), an empty range
    row = srv.post("/api/v1/datasets/t/query", {"predicates": [{"col": "id", "op": "eq",
                                                                "val": 5}]}).json()["data"][0]
    v = row["ts"]
    r = same(srv, [{"col": "ts", "op": "between", "val": [v, v]}])
    assert r.json()["count"] >= 1 and from_index(r)
    r = same(srv, [{"col": "ts", "op": "between", "val": [b, a]}])
    assert r.json()["count"] == 0
    # a malformed bound is the same 400 as before
    r = same(srv, [{"col": "ts", "op": "gt", "val": "2024-13-01"}])
    assert r.status_code == 400


def test_timestamptz_and_date_ranges_equal_duckdb(srv):
    rng = random.Random(8)

    def tz_value():
        us = T0 * 1000000 + rng.randrange(-86400 * 10**6, 31 * 86400 * 10**6)
        return iso(us - us % 1000000, rng.choice([0, 0, -480, 120]))

    def day_value():
        us = T0 * 1000000 + rng.randrange(-30, 430) * 86400 * 10**6
        if rng.random() < 0.15:  # a date-time against a DATE: DuckDB answers
            return iso(us + rng.randrange(86400) * 10**6)
        return iso(us)[:10]
    for _ in range(80):
        same(srv, preds_for(rng, "tstz", tz_value))
        same(srv, preds_for(rng, "day", day_value))
    r = same(srv, [{"col": "day", "op": "gte", "val": "2024-02-01"}])
    assert from_index(r)


def test_number_ranges_equal_duckdb(srv):
    rng = random.Random(9)

    def d_value():
        k = rng.random()
        if k < 0.2:
            return rng.choice([0, -0.0, 0.0, 1e308, -1e308, 1250, -1250, 2**53 + 1])
        if k < 0.5:
            return rng.randrange(-1300, 1300)
        return rng.randrange(-11000, 11000) / 8.0

    def n_value():
        k = rng.random()
        if k < 0.1:
            return rng.choice([2**63 - 1, -2**63, 0])
        if k < 0.2:
            return rng.randrange(-1200, 1200) + 0.5  # a fraction: DuckDB answers
        return rng.randrange(-1200, 1200)

    def u_value():
        if rng.random() < 0.15:
            return rng.choice([-1, -70000, 0, 65535, 70000, 2**63 - 1])
        return rng.randrange(-100, 66000)
    for _ in range(100):
        same(srv, preds_for(rng, "d", d_value))
        same(srv, preds_for(rng, "n", n_value))
        same(srv, preds_for(rng, "u", u_value))
    # NaN is above every number (DuckDB's order): gt counts it, lte does not
    total = srv.post("/api/v1/sql", {"sql": "SELECT count(*) AS c FROM t WHERE isnan(d)"})
    nans = total.json()["data"][0]["c"]
    assert nans > 0
    r = same(srv, [{"col": "d", "op": "gt", "val": 1e308}])
    assert r.json()["count"] >= nans and from_index(r)
    r = same(srv, [{"col": "id", "op": "lt", "val": 100}])
    assert r.json()["count"] == 100 and from_index(r)
    # id is monotone: its frames answer
    for _ in range(40):
        r = same(srv, preds_for(rng, "id", lambda: rng.randrange(-100, ROWS + 100)))
        assert from_index(r)


def test_other_shapes_still_answer(srv):
    # two columns, other ops, or a column without sorted values: DuckDB, same answers
    for preds in (
        [{"col": "n", "op": "gt", "val": 0}, {"col": "d", "op": "lt", "val": 0}],
        [{"col": "n", "op": "neq", "val": 3}],
        [{"col": "n", "op": "in", "val": [1, 2, 3]}],
        [{"col": "n", "op": "is_null"}],
        [{"col": "flag", "op": "eq", "val": True}],
        [{"col": "ts", "op": "is_not_null"}],
    ):
        same(srv, preds)


def test_status_reports_the_sorted_values(srv):
    st = srv.get("/api/v1/datasets/t/status").json()
    ix = st["index"]
    assert ix["state"] == "ready", st
    # ts, tstz, day, d, n, u, ts_ns, dec18, dec38, flt: 8 bytes a non-NULL
    # value; not id: its frames (a monotone column) answer its ranges
    nulls = (sum((ROWS + m - 1) // m for m in (13, 11, 17, 19, 23, 29)) + ROWS // 10
             + (ROWS + 7) // 12)
    assert ix["sorted_bytes"] == 8 * (10 * ROWS - nulls), ix
    assert ix["disk_bytes"] >= ix["row_store_bytes"] + ix["sorted_bytes"], ix
    log = srv.log()
    assert "id (%d keys, monotone frames" % ROWS in log, log[-3000:]
    assert "ts (%d values, sorted values for ranges" % (ROWS - (ROWS + 12) // 13) in log, log[-3000:]


def iso_ns(ns, offset_min=0, trim=False):
    """ns since the epoch as ISO text: nine fraction digits (fewer: trim)."""
    text = iso(ns // 1000 - ns // 1000 % 1000000, offset_min)
    frac = ns % 1000000000
    if frac:
        digits = "%09d" % frac
        text = text[:19] + "." + (digits.rstrip("0") if trim else digits) + text[19:]
    return text


def test_timestamp_ns_ranges_equal_duckdb(srv):
    """A pandas-written timestamp[ns]: bounds to the nanosecond, offsets,
    dates alone, and years past TIMESTAMP_NS's range (DuckDB's 400)."""
    rng = random.Random(10)
    span = 365 * 86400 * 10**9

    def value():
        k = rng.random()
        trim = rng.random() < 0.5
        ns = T0 * 10**9 + rng.randrange(-span // 10, span + span // 10)
        if k < 0.1:
            return iso_ns(ns - ns % (86400 * 10**9))[:10]
        if k < 0.2:
            return iso_ns(ns, rng.choice([-300, 60, 330]), trim)
        if k < 0.25:
            return rng.choice(["1600-01-01", "2300-01-01", "1677-09-22", "2262-04-11T23:47:16",
                               "1970-01-01", "2024-05-05T05:05:05.000000001"])
        if k < 0.35:
            return iso_ns(ns - ns % 1000, trim=trim)  # microseconds
        return iso_ns(ns, trim=trim)
    answered = 0
    for _ in range(120):
        r = same(srv, preds_for(rng, "ts_ns", value))
        answered += from_index(r)
    assert answered > 70
    # a value of the column to the nanosecond, and one nanosecond either side
    row = srv.post("/api/v1/datasets/t/query", {"predicates": [{"col": "id", "op": "eq",
                                                                "val": 6}]}).json()["data"][0]
    v = row["ts_ns"]
    assert len(v) == 29, v  # 2024-..T..:..:..fffffffff
    for op in OPS1:
        r = same(srv, [{"col": "ts_ns", "op": op, "val": v}])
        assert from_index(r)
    assert same(srv, [{"col": "ts_ns", "op": "eq", "val": v}]).json()["count"] >= 1
    r = same(srv, [{"col": "ts_ns", "op": "gt", "val": "2300-01-01"}])
    assert r.status_code == 400
    q = srv.post("/api/v1/sql", {"sql": "SELECT count(*) AS c FROM t WHERE ts_ns BETWEEN "
                                 "TIMESTAMP_NS '2024-03-01 00:00:00.000000001' AND "
                                 "TIMESTAMP_NS '2024-06-30 23:59:59.999999999'"})
    r = same(srv, [{"col": "ts_ns", "op": "between",
                    "val": ["2024-03-01T00:00:00.000000001", "2024-06-30T23:59:59.999999999"]}])
    assert from_index(r) and q.json()["data"][0]["c"] == r.json()["count"]


def test_decimal_and_float_ranges_equal_duckdb(srv):
    """DECIMAL money columns (Spark's DECIMAL(18,2), DECIMAL(38,10)) and FLOAT:
    bounds on the values (ties), between them, integers, and past FLOAT's
    range (DuckDB's 400)."""
    rng = random.Random(11)

    def dec18_value():
        k = rng.random()
        if k < 0.1:
            return rng.choice([0, -0.0, 1e19, -1e19, 1e300, 999.99, -1000, 0.005])
        if k < 0.4:
            return rng.randrange(-1100, 1100)
        if k < 0.8:
            return rng.randrange(-110000, 110000) / 100  # a value of the column's grid
        return rng.randrange(-1100000, 1100000) / 1000

    def dec38_value():
        k = rng.random()
        if k < 0.1:
            return rng.choice([0, 1e300, -1e-4, 1e9, 1e15])
        if k < 0.6:
            return rng.randrange(-10**7, 10**7) / 10**10 * rng.choice([1, 1000, 10**6])
        return rng.randrange(-10**6, 10**6) / 10**4

    def flt_value():
        k = rng.random()
        if k < 0.15:
            return rng.choice([0.1, -0.0, 0, 16777217, 16777216.5, 3.4e38, -3.4e38, 3.5e38, 1e-50])
        if k < 0.45:
            return rng.randrange(0, 1000) / 10  # 0.1-steps: rounded to FLOAT like the column
        if k < 0.7:
            return rng.randrange(-1100, 1100)
        return rng.randrange(-10000, 10000) / 64
    answered = 0
    for _ in range(70):
        for col, value in (("dec18", dec18_value), ("dec38", dec38_value), ("flt", flt_value)):
            r = same(srv, preds_for(rng, col, value))
            answered += from_index(r)
    assert answered > 150
    r = same(srv, [{"col": "flt", "op": "eq", "val": 0.1}])
    assert from_index(r)
    total = srv.post("/api/v1/sql", {"sql": "SELECT count(*) AS c FROM t "
                                     "WHERE flt = CAST(0.1 AS FLOAT)"}).json()["data"][0]["c"]
    assert total > 0 and r.json()["count"] == total
    r = same(srv, [{"col": "flt", "op": "gt", "val": 3.5e38}])
    assert r.status_code == 400
    r = same(srv, [{"col": "dec18", "op": "between", "val": [-12.5, 250.75]}])
    assert from_index(r)
    q = srv.post("/api/v1/sql", {"sql": "SELECT count(*) AS c FROM t "
                                 "WHERE dec18 BETWEEN -12.5 AND 250.75"})
    assert q.json()["data"][0]["c"] == r.json()["count"]


@pytest.fixture(scope="module")
def hsrv(tmp_path_factory):
    # Parquet has no 128-bit integer (DuckDB writes HUGEINT as DOUBLE): the
    # HUGEINT columns come from a query dataset's casts.
    d = tmp_path_factory.mktemp("range_huge")
    path = write_parquet(d / "h.parquet", """
        SELECT i AS id,
               CASE WHEN i % 13 = 0 THEN NULL
                    WHEN i = 1 THEN -9223372036854775808
                    WHEN i = 2 THEN 9223372036854775807
                    WHEN i = 3 THEN 9223372036854775806
                    WHEN i = 4 THEN -9223372036854775807
                    WHEN i % 5 = 0 THEN (hash(i) % 2001)::BIGINT - 1000
                    ELSE (hash(i * 3) >> 1)::BIGINT * CASE WHEN i % 2 = 0 THEN 1 ELSE -1 END
               END::BIGINT AS h,
               (hash(i) % 2001)::BIGINT - 1000 AS hb
        FROM range(5000) t(i)""")
    sql = ("SELECT id, h::HUGEINT AS h, CASE WHEN id = 7 THEN 9223372036854775808::HUGEINT "
           "ELSE hb::HUGEINT END AS hbig FROM src")
    s = start_query_pair(d, path, sql)
    yield s
    stop_checked(s)


def test_hugeint_ranges_equal_duckdb(hsrv):
    """A HUGEINT column whose values fit 64 bits is answered from its sorted
    values, equal to DuckDB's count (and /sql's) at the int64 edges; a bound
    past them (a HUGEINT cast) or a column holding a larger value go to
    DuckDB, with the same answers."""
    rng = random.Random(24)
    edges = [-2**63, -2**63 + 1, -1, 0, 1, 2**63 - 2, 2**63 - 1]

    def h_value():
        k = rng.random()
        if k < 0.3:
            return rng.choice(edges)
        if k < 0.5:
            return rng.randrange(-1100, 1100)
        return rng.randrange(-2**63, 2**63)
    answered = 0
    for _ in range(120):
        r = same(hsrv, preds_for(rng, "h", h_value))
        answered += from_index(r)
    assert answered == 120
    for preds in ([{"col": "h", "op": "lte", "val": 2**63 - 1}],
                  [{"col": "h", "op": "eq", "val": -2**63}],
                  [{"col": "h", "op": "gt", "val": 2**63 - 2}],
                  [{"col": "h", "op": "between", "val": [-2**63, -2**63 + 1]}]):
        r = same(hsrv, preds)
        op = {"lte": "<=", "eq": "=", "gt": ">"}.get(preds[0]["op"])
        where = (f"h {op} {preds[0]['val']}" if op else
                 f"h BETWEEN {preds[0]['val'][0]} AND {preds[0]['val'][1]}")
        sql = hsrv.post("/api/v1/sql", {"sql": f"SELECT count(*) AS c FROM t WHERE {where}"})
        assert r.json()["count"] == sql.json()["data"][0]["c"], (preds, r.text, sql.text)
        assert from_index(r), (preds, r.headers)
    sql = hsrv.post("/api/v1/sql", {"sql": "SELECT count(*) AS c FROM t WHERE h >= 0"})
    r = same(hsrv, [{"col": "h", "op": "gte", "val": 0}])
    assert r.json()["count"] == sql.json()["data"][0]["c"] and from_index(r)
    # a fraction: the same count, whoever answers
    same(hsrv, [{"col": "h", "op": "gte", "val": 10.5}])
    # past int64 (a HUGEINT bound): DuckDB's
    for preds in ([{"col": "h", "op": "lt", "val": 2**63}],
                  [{"col": "h", "op": "gt", "val": -2**63 - 1}]):
        r = same(hsrv, preds)  # (a refusal is the same refusal)
        assert r.status_code != 200 or not from_index(r), (preds, r.headers)
    # a value past 64 bits: the column keeps no sorted values, DuckDB answers
    for _ in range(10):
        r = same(hsrv, preds_for(rng, "hbig", lambda: rng.randrange(-1100, 1100)))
    log = hsrv.log()
    assert "h (%d values, sorted values for ranges" % (5000 - (5000 + 12) // 13) in log, log[-3000:]
    assert "hbig (" not in log, log[-3000:]
    r = same(hsrv, [{"col": "hbig", "op": "gt", "val": 2**62}])
    assert r.json()["count"] == 1


@pytest.fixture(scope="module")
def usrv(tmp_path_factory):
    # UHUGEINT from a query dataset's casts (Parquet has none, and a query
    # dataset keeps it as DECIMAL(38,0): values below 10^38): edges written
    # as text casts, products of two UBIGINT hashes for values past 2^64.
    d = tmp_path_factory.mktemp("range_uhuge")
    path = write_parquet(d / "u.parquet", """
        SELECT i AS id, hash(i) AS hu, hash(i * 7 + 1) AS hv,
               (hash(i) % 2001)::BIGINT AS hb
        FROM range(5000) t(i)""")
    edges = {1: "0", 2: "99999999999999999999999999999999999999",
             3: "18446744073709551615", 4: "18446744073709551616",
             5: "9007199254740993", 6: "85070591730234615865843651857942052864",
             8: "18446744073709549568", 9: "1"}
    cases = " ".join(f"WHEN id = {k} THEN '{v}'::UHUGEINT" for k, v in edges.items())
    sql = ("SELECT id, CASE WHEN id % 13 = 0 THEN NULL " + cases +
           " WHEN id % 5 = 0 THEN hb::UHUGEINT WHEN id % 3 = 0 THEN hu::UHUGEINT"
           " ELSE hu::UHUGEINT * (hv >> 2)::UHUGEINT END AS u FROM src")
    s = start_query_pair(d, path, sql)
    yield s
    stop_checked(s)


def test_uhugeint_ranges_equal_duckdb(usrv):
    """A UHUGEINT column (compared with DOUBLE values, as DuckDB casts it) is
    answered from its sorted values, equal to DuckDB's count and /sql's at
    the edges of the double's precision, of 2^64 and of 10^38."""
    rng = random.Random(128)
    # each value both correctly rounded and as DuckDB's own cast rounds it
    # (its low word plus its high word times 2^64), where they differ
    q = usrv.post("/api/v1/sql", {"sql": "SELECT u::VARCHAR AS u, u::DOUBLE AS d FROM t "
                                  "WHERE u IS NOT NULL AND id % 25 = 1"})
    assert q.status_code == 200, q.text
    rows = q.json()["data"]
    stored = [float(int(r["u"])) for r in rows] + [r["d"] for r in rows]
    assert any(float(int(r["u"])) != r["d"] for r in rows)
    edges = [0.0, 1.0, -1.0, 0.5, 2.0**53, 2.0**53 + 2, 2.0**64, 2.0**127, 2.0**128, 1e38,
             math.nextafter(2.0**64, 0), math.nextafter(2.0**64, math.inf),
             math.nextafter(2.0**128, 0), math.nextafter(2.0**126, math.inf), 2.0**126,
             math.nextafter(1e38, 0), math.nextafter(1e38, math.inf), -1e300, 1e300]

    def value():
        k = rng.random()
        if k < 0.3:
            return rng.choice(edges)
        if k < 0.6:
            return rng.choice(stored)
        if k < 0.75:
            return rng.randrange(-10, 2100)
        return float(rng.randrange(0, 10**38))
    answered = 0
    for _ in range(150):
        r = same(usrv, preds_for(rng, "u", value))
        answered += from_index(r)
    assert answered == 150
    for op, sym in (("eq", "="), ("lte", "<="), ("gt", ">"), ("lt", "<"), ("gte", ">=")):
        for v in (2.0**64, 1e38, 2.0**126, math.nextafter(2.0**64, 0), 2.0**53,
                  rng.choice(stored)):
            r = same(usrv, [{"col": "u", "op": op, "val": v}])
            sql = usrv.post("/api/v1/sql", {"sql": f"SELECT count(*) AS c FROM t WHERE u {sym} "
                                             f"CAST({v!r} AS DOUBLE)"})
            assert r.json()["count"] == sql.json()["data"][0]["c"], (op, v, r.text, sql.text)
            assert from_index(r), (op, v, r.headers)
    log = usrv.log()
    assert "u (%d values, sorted values for ranges" % (5000 - (5000 + 12) // 13) in log, log[-3000:]
