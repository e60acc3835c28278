"""Forged aggregate states (issue 21 item 0): `finalize(cast_to_type(<bytes>,
<state>))` crashed the server with SIGSEGV, a forged `first(BLOB)` state read
process memory, and `EXPORT_STATE ... ::BLOB` showed heap pointers. Every SQL
entry point (POST /api/v1/sql, the MCP sql tool, saved queries, the PostgreSQL
listener) refuses aggregate-state export and import with
sql_forbidden_function, and the server keeps answering."""
import json

import psycopg
import pytest
import requests

import pgwire_util
from conftest import dataset_block, server_block, write_parquet

ADMIN = {"X-Admin-Token": "t0k"}

FORGED = ("\\x40\\x00\\x00\\x00AAAA\\x41\\x41\\x41\\x41\\x41\\x41\\x41\\x41"
          "\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x00")
STATEMENTS = [
    # the crash, as reported
    f"SELECT finalize(cast_to_type('{FORGED}'::BLOB, (SELECT first(x::VARCHAR) EXPORT_STATE "
    "FROM range(1, 3) t(x)))) AS v",
    # the memory read
    f"SELECT finalize(cast_to_type('{FORGED}'::BLOB, (SELECT first(x::BLOB) EXPORT_STATE "
    "FROM range(1, 3) t(x)))) AS v",
    # the pointer leak
    "SELECT (first(x::VARCHAR) EXPORT_STATE)::BLOB FROM range(1, 3) t(x)",
    "SELECT first(x::VARCHAR) EXPORT_STATE FROM range(1, 3) t(x)",
    "SELECT sum(x) EXPORT_STATE FROM range(3) t(x)",
    # each piece alone
    "SELECT finalize(NULL)",
    "SELECT combine(NULL, NULL)",
    "SELECT cast_to_type(1, 'x')",
    "SELECT * FROM (SELECT count(*) EXPORT_STATE AS s FROM range(3)) WHERE s IS NOT NULL",
]


def datasets(datadir):
    return write_parquet(datadir / "t.parquet", "SELECT i AS id FROM range(10) t(i)")


def alive(s):
    r = s.get("/healthz")
    assert r.status_code == 200 and r.json()["status"] == "ok"


def test_sql_and_mcp_refuse_aggregate_states(vt, datadir):
    t = datasets(datadir)
    cfg = server_block() + "[sql]\nenabled = true\n[mcp]\nenabled = true\nexpose_sql = true\n"
    s = vt(cfg + dataset_block("t", t), env={"ADMIN_TOKEN": "t0k"})
    for text in STATEMENTS:
        r = s.post("/api/v1/sql", {"sql": text})
        assert r.status_code == 400, (text, r.status_code, r.text)
        assert r.json()["code"] == "sql_forbidden_function", (text, r.text)
        alive(s)
        rpc = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": "sql", "arguments": {"sql": text}}}
        r = requests.post(s.url("/mcp"), data=json.dumps(rpc), timeout=30,
                          headers={"Content-Type": "application/json",
                                   "Accept": "application/json, text/event-stream"})
        assert r.status_code == 200, r.text
        res = r.json()["result"]
        assert res["isError"] is True, (text, res)
        assert "sql_forbidden_function" in json.dumps(res), (text, res)
        alive(s)
        r = s.post("/api/v1/queries", {"name": "forged", "sql": text}, headers=ADMIN)
        assert r.status_code == 400, (text, r.status_code, r.text)
        alive(s)
    # Everyday aggregates and casts still pass.
    r = s.post("/api/v1/sql", {"sql": "SELECT first(id ORDER BY id), sum(id)::VARCHAR AS b FROM t"})
    assert r.status_code == 200, r.text
    assert list(r.json()["data"][0].values()) == [0, "45"], r.text


@pytest.mark.parametrize("text", STATEMENTS[:3])
def test_pgwire_refuses_aggregate_states(vt, datadir, text):
    s = pgwire_util.start(vt, datadir)
    with psycopg.connect(host="127.0.0.1", port=s.pg, user="vitrine", dbname="vitrine",
                         autocommit=True) as c:
        with pytest.raises(psycopg.Error) as e:
            c.execute(text).fetchall()
        assert e.value.sqlstate == "42501", e.value
        assert c.execute("SELECT count(*) FROM trips").fetchone() == (5000,)
    alive(s)
