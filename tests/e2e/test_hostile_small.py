"""The server-side small ones of issue 22 item 6: /sql?format=arrow with a
TIME_NS column answered 500 internal; an MCP call that timed out got HTTP
504 with the REST body instead of a JSON-RPC result; duplicate column names
gave JSON rows with duplicate keys; the 504 warning was logged twice. And
DuckDB's excerpt of the SQL ("LINE n: ..." and a caret) in error messages:
a client sees its own SQL with its own line numbers, never the SQL written
around it or for it (CSV's wrapping said "LINE 2", a saved query's build
"LINE 2", and pgwire quoted its dialect's rewriting of the statement)."""
import json

import psycopg
import pytest
import requests

from conftest import dataset_block, server_block, write_parquet
from pgwire_util import pg_port

SLOW = ("SELECT sum(levenshtein(repeat('a', 200) || (i % 10), repeat('b', 210))) "
        "FROM range(1000000) t(i)")


@pytest.fixture
def srv(vt, datadir):
    f = write_parquet(datadir / "t.parquet", "SELECT 1 AS id")
    return vt(server_block(request_timeout_ms=800) +
              "[sql]\nenabled = true\n[mcp]\nenabled = true\nexpose_sql = true\n" +
              dataset_block("t", f))


def mcp(s, sql):
    rpc = {"jsonrpc": "2.0", "id": 9, "method": "tools/call",
           "params": {"name": "sql", "arguments": {"sql": sql}}}
    return requests.post(s.url("/mcp"), data=json.dumps(rpc), timeout=60,
                         headers={"Content-Type": "application/json",
                                  "Accept": "application/json, text/event-stream"})


def test_time_ns_is_a_clear_400_not_a_500(srv):
    q = {"sql": "SELECT CAST('10:00:00' AS TIME_NS) AS t"}
    for path in ("/api/v1/sql?format=arrow", "/api/v1/sql"):
        r = requests.post(srv.url(path), json=q, timeout=30)
        assert r.status_code == 400, (path, r.status_code, r.text)
        assert r.json()["code"] == "query_failed"
        assert "CAST" in r.json()["error"], r.text
    # cast, it answers
    r = requests.post(srv.url("/api/v1/sql?format=arrow"), timeout=30,
                      json={"sql": "SELECT CAST(CAST('10:00:00' AS TIME_NS) AS VARCHAR) AS t"})
    assert r.status_code == 200, r.text


def test_duplicate_column_names_give_unique_keys(srv):
    r = srv.post("/api/v1/sql", {"sql": "SELECT 1 AS a, 2 AS a, 3 AS a_1, 4 AS a"})
    assert r.status_code == 200, r.text
    text = r.text
    row = json.loads(text, object_pairs_hook=lambda kv: kv)[0][1][0]
    keys = [k for k, _ in row]
    assert len(keys) == len(set(keys)) == 4, keys
    assert dict(row) == {"a": 1, "a_2": 2, "a_1": 3, "a_3": 4}
    res = mcp(srv, "SELECT 1 AS x, 2 AS x").json()["result"]
    assert res["structuredContent"]["rows"] == [{"x": 1, "x_1": 2}], res


def test_an_mcp_timeout_is_a_json_rpc_result(srv):
    r = mcp(srv, SLOW)
    assert r.status_code == 200, (r.status_code, r.text)
    body = r.json()
    assert body["jsonrpc"] == "2.0" and body["id"] == 9, body
    assert body["result"]["isError"] is True and "timeout" in json.dumps(body), body


def test_a_504_is_logged_once(srv):
    r = requests.post(srv.url("/api/v1/sql"), json={"sql": SLOW},
                      headers={"X-Request-Id": "slow-one-1"}, timeout=60)
    assert r.status_code == 504, r.text
    srv.post("/api/v1/sql", {"sql": "SELECT 1"})  # the access line of the 504 is out by now
    lines = [l for l in srv.log().splitlines()
             if "slow-one-1" in l and "WARN" in l and "504" in l]
    assert len(lines) == 1, lines


def excerpt(msg):
    """The "LINE n: text" line of DuckDB's excerpt and the caret's column
    within it, or None."""
    lines = msg.split("\n")
    for i, line in enumerate(lines[:-1]):
        if line.startswith("LINE ") and lines[i + 1].lstrip().startswith("^"):
            return line, lines[i + 1].index("^")
    return None


def test_errors_quote_the_clients_own_sql_only(vt, datadir):
    f = write_parquet(datadir / "t.parquet", "SELECT i AS id, 'x' || i AS s FROM range(10) t(i)")
    s = vt(server_block() + "[sql]\nenabled = true\n[mcp]\nenabled = true\nexpose_sql = true\n"
           "[server.pgwire]\nenabled = true\nport = 0\n" + dataset_block("t", f),
           env={"ADMIN_TOKEN": "t0k"})
    text = "SELECT id,\n  s\nFROM t\nWHERE s = 3"
    want = "LINE 4: WHERE s = 3"
    for path in ("/api/v1/sql", "/api/v1/sql?format=csv", "/api/v1/sql?format=arrow"):
        r = requests.post(s.url(path), json={"sql": text}, timeout=30)
        assert r.status_code == 400 and r.json()["code"] == "query_failed", (path, r.text)
        line, col = excerpt(r.json()["error"])
        assert line == want and line[col] == "s", (path, r.json()["error"])
    res = mcp(s, text).json()["result"]
    assert res["isError"] and excerpt(res["content"][0]["text"])[0] == want, res
    # a saved query: its build wraps the text; the excerpt is still the client's line 1
    r = requests.post(s.url("/api/v1/queries"), headers={"X-Admin-Token": "t0k"}, timeout=30,
                      json={"name": "bad", "sql": "SELECT CAST(s AS INTEGER) AS n FROM t"})
    assert r.status_code == 400, r.text
    line, col = excerpt(r.json()["error"])
    assert line == "LINE 1: SELECT CAST(s AS INTEGER) AS n FROM t" and line[col:].startswith("CAST")
    # pgwire runs its dialect's rewriting of these: DuckDB's text of it is not shown
    with psycopg.connect(host="127.0.0.1", port=pg_port(s), user="vitrine", dbname="vitrine",
                         autocommit=True) as c:
        for sql in ("SELECT s::int4 FROM t", "SELECT relname, nope FROM pg_catalog.pg_class"):
            with pytest.raises(psycopg.Error) as e:
                c.execute(sql).fetchall()
            msg = str(e.value)
            assert "LINE" not in msg and "CAST(" not in msg and "AS pg_class" not in msg, msg
