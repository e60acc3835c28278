"""POST /api/v1/sql (issue 11 item 2): read-only SQL through the one gate,
JSON and Arrow, max_rows, every statement reading one snapshot (a reload
between requests is seen, none inside), the bad-input catalogue as HTTP 400s
with stable codes, and the resource cases ending in 504 by the deadline."""
import json
import threading
import time

from conftest import dataset_block, server_block, sql as duck, write_parquet
from test_arrow_http import decode

ADMIN = {"X-Admin-Token": "t0k"}
SQL = "/api/v1/sql"


def data(datadir):
    t = write_parquet(datadir / "trips.parquet", """
        SELECT i AS trip_id, i % 5 AS station, (i % 50) * 1.5 AS fare,
               CASE WHEN i % 3 = 0 THEN 'card' ELSE 'cash' END AS payment
        FROM range(5000) t(i)""")
    s = write_parquet(datadir / "stations.parquet",
                      "SELECT i AS id, 'st' || i AS name FROM range(5) t(i)")
    return t, s


def start(vt, datadir, enabled=True, **server):
    t, s = data(datadir)
    cfg = server_block(**server)
    if enabled:
        cfg += "[sql]\nenabled = true\nmax_rows = 2000\n"
    cfg += dataset_block("trips", t) + dataset_block("stations", s)
    return vt(cfg, env={"ADMIN_TOKEN": "t0k"})


def q(s, text, **extra):
    body = {"sql": text}
    body.update(extra)
    return s.post(SQL, body)


def test_disabled_is_404(vt, datadir):
    s = start(vt, datadir, enabled=False)
    r = q(s, "SELECT 1")
    assert r.status_code == 404


def test_answers_like_duckdb(vt, datadir):
    s = start(vt, datadir)
    t = datadir / "trips.parquet"
    st = datadir / "stations.parquet"
    cases = [
        ("SELECT payment, count(*) AS n, sum(fare) AS total FROM trips GROUP BY payment "
         "ORDER BY payment", "SELECT payment, count(*) AS n, sum(fare) AS total FROM '{t}' "
         "GROUP BY payment ORDER BY payment"),
        ("SELECT s.name, avg(t.fare) AS a FROM trips t JOIN stations s ON t.station = s.id "
         "GROUP BY ALL ORDER BY 1", "SELECT s.name, avg(t.fare) AS a FROM '{t}' t JOIN '{st}' s "
         "ON t.station = s.id GROUP BY ALL ORDER BY 1"),
        ("WITH c AS (SELECT station, max(fare) AS m FROM trips GROUP BY station) "
         "SELECT * FROM c WHERE m > 10 ORDER BY station",
         "WITH c AS (SELECT station, max(fare) AS m FROM '{t}' GROUP BY station) "
         "SELECT * FROM c WHERE m > 10 ORDER BY station"),
    ]
    for ours, ref in cases:
        r = q(s, ours)
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["max_rows"] == 2000 and body["truncated"] is False
        want = duck(f"SELECT to_json(x) FROM ({ref.format(t=t, st=st)}) x")
        assert [json.dumps(row, sort_keys=True) for row in body["data"]] == \
               [json.dumps(json.loads(w[0]), sort_keys=True) for w in want]


def test_max_rows_and_arrow(vt, datadir, tmp_path):
    s = start(vt, datadir)
    r = q(s, "SELECT trip_id FROM trips ORDER BY trip_id", max_rows=7)
    b = r.json()
    assert [x["trip_id"] for x in b["data"]] == list(range(7))
    assert b["max_rows"] == 7 and b["truncated"] is True
    # The server's cap wins over a larger request.
    b = q(s, "SELECT trip_id FROM trips", max_rows=10 ** 9).json()
    assert len(b["data"]) == 2000 and b["max_rows"] == 2000 and b["truncated"] is True
    # Comments and a trailing semicolon do not break the cap's wrapper.
    b = q(s, "SELECT 1 AS one; -- trailing").json()
    assert b["data"] == [{"one": 1}]
    r = s.post(SQL + "?format=arrow", {"sql": "SELECT trip_id, payment FROM trips ORDER BY 1",
                                       "max_rows": 10})
    assert r.status_code == 200
    assert r.headers["Content-Type"] == "application/vnd.apache.arrow.stream"
    doc = decode(tmp_path, r.content)
    assert [f["name"] for f in doc["schema"]] == ["trip_id", "payment"]
    assert len(doc["rows"]) == 10


BAD = [
    ("SELECT 1; SELECT 2", "sql_not_read_only"),
    ("SELECT 1 /* ; */; DELETE FROM trips", "sql_not_read_only"),
    ("COPY trips TO '/tmp/x.csv'", "sql_not_read_only"),
    ("ATTACH '/tmp/x.db' AS x", "sql_not_read_only"),
    ("INSTALL httpfs", "sql_not_read_only"),
    ("LOAD httpfs", "sql_not_read_only"),
    ("SET threads = 1", "sql_not_read_only"),
    ("PRAGMA version", "sql_not_read_only"),
    ("CALL pragma_version()", "sql_not_read_only"),
    ("EXPORT DATABASE '/tmp/x'", "sql_not_read_only"),
    ("CREATE SECRET s (TYPE s3, KEY_ID 'x', SECRET 'y')", "sql_not_read_only"),
    ("SELECT * FROM '/etc/passwd'", "sql_unknown_table"),
    ("SELECT * FROM read_text('/etc/passwd')", "sql_forbidden_function"),
    ("SELECT * FROM read_csv('/etc/passwd')", "sql_forbidden_function"),
    ("SELECT * FROM glob('/*')", "sql_forbidden_function"),
    ("SELECT * FROM parquet_metadata('x.parquet')", "sql_forbidden_function"),
    ("SELECT * FROM sniff_csv('x.csv')", "sql_forbidden_function"),
    ("SELECT * FROM duckdb_secrets()", "sql_forbidden_function"),
    ("SELECT * FROM duckdb_settings()", "sql_forbidden_function"),
    ("SELECT getenv('HOME')", "sql_forbidden_function"),
    ("SELECT current_setting('threads')", "sql_forbidden_function"),
    ("SELECT * FROM query('SELECT 1')", "sql_forbidden_function"),
    ("SELECT * FROM query_table('trips')", "sql_forbidden_function"),
    ('SELECT "current_setting"(\'threads\')', "sql_forbidden_function"),
    ("SELECT system.main.lower('A')", "sql_forbidden_function"),
    ("SELECT * FROM main.trips", "sql_unknown_table"),
    ("SELECT * FROM nope", "sql_unknown_table"),
    ("SELEC 1", "sql_syntax"),
]


def test_bad_input_catalogue(vt, datadir):
    s = start(vt, datadir)
    for text, code in BAD:
        r = q(s, text)
        assert r.status_code == 400, (text, r.status_code, r.text)
        assert r.json()["code"] == code, (text, r.json())
    for body, code in [({}, "invalid_query"), ({"sql": 5}, "invalid_query"),
                       ({"sql": "SELECT 1", "x": 1}, "unknown_field"),
                       ({"sql": "SELECT 1", "max_rows": -1}, "invalid_query")]:
        r = s.post(SQL, body)
        assert r.status_code == 400 and r.json()["code"] == code, (body, r.text)
    # Still healthy, and nothing was written anywhere.
    assert q(s, "SELECT count(*) AS n FROM trips").json()["data"] == [{"n": 5000}]


def test_a_reload_is_seen_by_the_next_statement(vt, datadir):
    s = start(vt, datadir)
    assert q(s, "SELECT count(*) AS n FROM stations").json()["data"] == [{"n": 5}]
    write_parquet(datadir / "stations.parquet", "SELECT i AS id, 'st' || i AS name FROM range(8) t(i)")
    r = s.post("/api/v1/datasets/stations/reload", headers=ADMIN)
    assert r.status_code == 200, r.text
    # Every worker connection sees the new generation (its temp view follows).
    for _ in range(6):
        assert q(s, "SELECT count(*) AS n FROM stations").json()["data"] == [{"n": 8}]


def test_one_snapshot_per_statement_under_reloads(vt, datadir):
    s = start(vt, datadir)
    stop = threading.Event()
    errors = []

    def reloader():
        k = 5
        while not stop.is_set():
            k = 13 - k  # 5 <-> 8 rows
            write_parquet(datadir / "stations.parquet",
                          f"SELECT i AS id, 'st' || i AS name FROM range({k}) t(i)")
            r = s.post("/api/v1/datasets/stations/reload", headers=ADMIN)
            if r.status_code not in (200, 409):
                errors.append(r.text)

    th = threading.Thread(target=reloader)
    th.start()
    try:
        for _ in range(60):
            # The dataset read twice in one statement: both reads agree.
            r = q(s, "SELECT (SELECT count(*) FROM stations) AS a, (SELECT count(*) FROM "
                     "stations s2 WHERE s2.id >= 0) AS b")
            assert r.status_code == 200, r.text
            row = r.json()["data"][0]
            assert row["a"] == row["b"] and row["a"] in (5, 8), row
    finally:
        stop.set()
        th.join()
    assert not errors, errors[:3]


def test_resource_cases_end_by_the_deadline(vt, datadir):
    s = start(vt, datadir, request_timeout_ms=800)
    for text in ["SELECT count(*) FROM range(1000000000000)",
                 "SELECT count(*) FROM trips a, trips b, trips c",
                 "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) "
                 "SELECT count(*) FROM r"]:
        t = time.monotonic()
        r = q(s, text)
        took = time.monotonic() - t
        assert r.status_code == 504, (text, r.status_code, r.text[:200])
        assert r.json() == {"error": "request timed out", "code": "timeout"}
        assert took < 3.0, (text, took)
    assert q(s, "SELECT 1 AS x").json()["data"] == [{"x": 1}]
