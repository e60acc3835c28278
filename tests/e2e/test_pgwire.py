"""The PostgreSQL listener (issue 14) with real clients: psql (catalog
backslash commands, \\copy, errors, TLS with sslmode=require and
verify-full against a CA made here with openssl), psycopg 3 (server-side
binding, binary results, prepared statements, transactions), psycopg2,
node pg (extended protocol, named statements, binary, a cursor), and the
same rows as DuckDB for the same SQL in text and binary."""
import datetime
import decimal
import json
import os
import socket
import subprocess
import threading
import time
from pathlib import Path

import psycopg
import psycopg2
import pytest
from psycopg.rows import dict_row

from conftest import REPO, sql as duck
from pgwire_util import Raw, error_fields, pg_port, start

NODE_DIR = REPO / "tests" / "e2e" / "pgwire"


def connect(srv, **kw):
    kw.setdefault("host", "127.0.0.1")
    kw.setdefault("user", "vitrine")
    kw.setdefault("dbname", "vitrine")
    kw.setdefault("connect_timeout", 10)
    return psycopg.connect(port=srv.pg, **kw)


def psql(srv, *args, host="127.0.0.1", user="vitrine", env=None, check=True, sslmode=None,
         dbname="vitrine", password=None):
    e = dict(os.environ, PGCONNECT_TIMEOUT="10")
    e.pop("PGPASSWORD", None)
    if password is not None:
        e["PGPASSWORD"] = password
    if env:
        e.update(env)
    conninfo = f"host={host} port={srv.pg} user={user} dbname={dbname}"
    if sslmode:
        conninfo += f" sslmode={sslmode}"
    r = subprocess.run(["psql", "-X", "--no-psqlrc", "-v", "ON_ERROR_STOP=1", "-d", conninfo,
                        *args], capture_output=True, text=True, env=e, timeout=60)
    if check:
        assert r.returncode == 0, r.stderr + r.stdout
    return r


# ------------------------------------------------------------------- psql

def test_psql_catalog_commands(vt, datadir):
    srv = start(vt, datadir)
    assert "served by the DuckDB engine" in srv.log()
    out = psql(srv, "-c", r"\dt").stdout
    assert "public | stations | table | vitrine" in out
    assert "public | trips    | table | vitrine" in out
    out = psql(srv, "-c", r"\d trips").stdout
    assert 'Table "public.trips"' in out
    for line in ["trip_id   | integer", "fare      | numeric(10,2)",
                 "pickup_at | timestamp without time zone", "day       | date",
                 "even      | boolean", "ratio     | double precision", "payment   | text",
                 "tags      | bigint[]", "info      | json"]:
        assert line in out, out
    out = psql(srv, "-c", r"\l").stdout
    assert "vitrine | vitrine | UTF8" in out
    out = psql(srv, "-c", r"\dn").stdout
    assert "public | vitrine" in out and "pg_catalog" not in out
    # \d of something that is not a dataset
    r = psql(srv, "-c", r"\d nope", check=False)
    assert 'Did not find any relation named "nope"' in r.stderr
    # psql's own version check and the identity line
    out = psql(srv, "-At", "-c", "SELECT version()", "-c", "SHOW server_version").stdout
    assert out.startswith("PostgreSQL 15.0") and "vitrine" in out and "DuckDB" in out
    assert out.strip().endswith("15.0")


def test_psql_queries_copy_and_errors(vt, datadir):
    srv = start(vt, datadir)
    out = psql(srv, "-At", "-c",
               "SELECT payment, count(*), sum(fare) FROM trips GROUP BY payment ORDER BY 1").stdout
    want = duck(f"SELECT payment, count(*), sum(fare) FROM '{datadir}/trips.parquet' "
                "GROUP BY payment ORDER BY 1")
    assert out.splitlines() == ["|".join(r) for r in want]
    # several statements in one query string, answered in order
    out = psql(srv, "-At", "-c", "SELECT 1; SELECT 'two'; SELECT count(*) FROM stations").stdout
    assert out.splitlines() == ["1", "two", "5"]
    # \copy (select ...) to stdout, text and CSV with a header
    out = psql(srv, "-c", r"\copy (SELECT trip_id, note, tags FROM trips WHERE trip_id < 3 "
                          r"ORDER BY 1) to stdout").stdout
    assert out.splitlines() == ["0\t\\N\t{0,1}", "1\tnote 1\t{1,2}", "2\tnote 2\t{2,3}"]
    out = psql(srv, "-c", r"\copy (SELECT id, name FROM stations ORDER BY id) to stdout "
                          r"with (format csv, header)").stdout
    assert out.splitlines() == ["id,name", "0,st0", "1,st1", "2,st2", "3,st3", "4,st4"]
    out = psql(srv, "-c", r"\copy stations to stdout csv").stdout
    assert sorted(out.splitlines()) == ["0,st0", "1,st1", "2,st2", "3,st3", "4,st4"]
    # errors carry their SQLSTATE (psql shows it with VERBOSITY verbose)
    cases = [("SELECT * FROM nope", "42P01"), ("SELEC 1", "42601"),
             ("DELETE FROM trips", "25006"), ("CREATE TABLE x (a int)", "25006"),
             ("SET work_mem = '1GB'", "25006"), ("SELECT read_csv('/etc/passwd')", "42501"),
             ("SHOW nothing_like_this", "42704"), ("COPY trips FROM STDIN", "25006"),
             ("COPY trips TO '/tmp/x.csv'", "25006"), ("SELECT nope FROM trips", "42703")]
    for q, state in cases:
        r = psql(srv, "-v", "VERBOSITY=verbose", "-c", q, check=False)
        assert r.returncode != 0 and f"ERROR:  {state}" in r.stderr, (q, r.stderr)
    # a SET vitrine does not take says so, not "only one read-only SELECT
    # ... is allowed" as if the SET had been read as another statement
    r = psql(srv, "-c", "SET work_mem = '1GB'", check=False)
    assert 'parameter "work_mem" cannot be set: vitrine is read-only' in r.stderr, r.stderr


def test_session_statements_pools_send(vt, datadir):
    srv = start(vt, datadir)
    out = psql(srv, "-At", "-c", "BEGIN", "-c", "SELECT 1", "-c", "COMMIT",
               "-c", "BEGIN; SAVEPOINT a; RELEASE a; ROLLBACK",
               "-c", "DISCARD ALL", "-c", "DEALLOCATE ALL", "-c", "RESET ALL",
               "-c", "UNLISTEN *",
               "-c", "SET application_name = 'etl'", "-c", "SHOW application_name",
               "-c", "SET extra_float_digits = 3", "-c", "SET DateStyle = 'ISO, DMY'",
               "-c", "SET client_encoding = 'UTF8'", "-c", "SET search_path = public",
               "-c", "SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY",
               "-c", "SHOW DateStyle", "-c", "SELECT current_setting('application_name')",
               "-c", "SHOW transaction isolation level").stdout
    lines = out.splitlines()
    assert "etl" in lines and "ISO, DMY" in lines and "repeatable read" in lines
    assert lines.count("etl") == 2
    # the command tags themselves, from the raw protocol
    r = Raw(srv.pg)
    r.login()
    tags = []
    for q in ["BEGIN", "SAVEPOINT s1", "ROLLBACK TO SAVEPOINT s1", "COMMIT", "DISCARD ALL",
              "DEALLOCATE ALL", "RESET ALL", "UNLISTEN *", "SET application_name TO 'x'",
              "START TRANSACTION READ ONLY", "END", "SHOW server_version",
              "SELECT 1 UNION ALL SELECT 2"]:
        r.send(__import__("pgwire_util").query(q))
        msgs = r.read_until()
        tags += [b.rstrip(b"\0").decode() for t, b in msgs if t == b"C"]
    assert tags == ["BEGIN", "SAVEPOINT", "ROLLBACK", "COMMIT", "DISCARD ALL", "DEALLOCATE ALL",
                    "RESET", "UNLISTEN", "SET", "BEGIN", "COMMIT", "SHOW", "SELECT 2"]
    r.close()


def tls_files(tmp):
    """A CA, and a server certificate for localhost/127.0.0.1 signed by it;
    the key in PKCS#8 PEM."""
    def run(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=tmp)
    run("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "ca.key")
    run("req", "-x509", "-new", "-key", "ca.key", "-days", "2", "-subj", "/CN=vitrine test CA",
        "-out", "ca.pem")
    run("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out",
        "server.key")
    run("req", "-new", "-key", "server.key", "-subj", "/CN=localhost", "-out", "server.csr")
    (Path(tmp) / "ext.cnf").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    run("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-days", "2", "-extfile", "ext.cnf", "-out", "server.pem")
    run("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out",
        "other.key")
    run("req", "-x509", "-new", "-key", "other.key", "-days", "2", "-subj", "/CN=other CA",
        "-out", "other.pem")
    assert (Path(tmp) / "server.key").read_text().startswith("-----BEGIN PRIVATE KEY-----")
    return Path(tmp)


def test_tls_require_and_verify_full(vt, datadir, tmp_path):
    d = tls_files(tmp_path)
    srv = start(vt, datadir, pgwire=f'tls_cert = "{d}/server.pem"\ntls_key = "{d}/server.key"\n'
                                    'password = "s3cret"\n')
    assert "TLS, served by" in srv.log()
    out = psql(srv, "-c", r"\conninfo", "-c", "SELECT count(*) FROM trips", sslmode="require",
               password="s3cret").stdout
    assert "SSL connection (protocol: TLSv1." in out and "5000" in out
    e = {"PGSSLROOTCERT": str(d / "ca.pem")}
    out = psql(srv, "-At", "-c", "SELECT count(*) FROM stations", host="localhost",
               sslmode="verify-full", password="s3cret", env=e).stdout
    assert out.strip() == "5"
    # verify-full against another CA fails; so does a name not in the certificate
    r = psql(srv, "-c", "SELECT 1", host="localhost", sslmode="verify-full", password="s3cret",
             env={"PGSSLROOTCERT": str(d / "other.pem")}, check=False)
    assert r.returncode != 0 and "certificate verify failed" in r.stderr
    # without TLS on a loopback listener: still served (loopback may be plain)
    out = psql(srv, "-At", "-c", "SELECT 1", sslmode="disable", password="s3cret").stdout
    assert out.strip() == "1"
    # psycopg over TLS, binary
    with connect(srv, sslmode="require", password="s3cret") as c:
        cur = c.cursor(binary=True)
        cur.execute("SELECT trip_id, fare FROM trips WHERE trip_id = %s", [7])
        assert cur.fetchone() == (7, decimal.Decimal("10.50"))
        assert c.info.pgconn.ssl_in_use


def local_address():
    """A non-loopback address of this machine (the route's source)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.connect(("192.0.2.1", 9))
        return s.getsockname()[0]
    finally:
        s.close()


def test_non_loopback_listener_never_takes_a_password_in_clear(vt, datadir, tmp_path):
    addr = local_address()
    assert not addr.startswith("127.")
    d = tls_files(tmp_path)
    srv = start(vt, datadir, pgwire=f'listen = "{addr}"\npassword = "pw"\n'
                                    f'tls_cert = "{d}/server.pem"\ntls_key = "{d}/server.key"\n')
    # a plain client from a non-loopback address is refused before any
    # password is asked for
    r = Raw(srv.pg, host=addr)
    msgs = r.login(password="pw")
    kinds = [t for t, _ in msgs]
    assert b"R" not in kinds and kinds[-1] == b"E"
    f = error_fields(msgs[-1][1])
    assert f["C"] == "28000" and "SSL" in f["M"]
    r.close()
    with connect(srv, host=addr, sslmode="require", password="pw") as c:
        assert c.execute("SELECT count(*) FROM stations").fetchone() == (5,)


def test_config_refusals(vt, datadir, tmp_path):
    """A non-loopback bind without a password or without TLS, or half a TLS
    configuration, stops startup naming the key."""
    cases = [
        ('listen = "0.0.0.0"\n', "password"),
        ('listen = "0.0.0.0"\npassword = "x"\n', "tls_cert"),
        ('tls_cert = "a.pem"\n', "tls_key"),
        ('tls_key = "a.key"\n', "tls_cert"),
    ]
    from conftest import VITRINE
    for pg, key in cases:
        p = tmp_path / "c.toml"
        p.write_text("[server.pgwire]\nenabled = true\n" + pg)
        r = subprocess.run([str(VITRINE), "check-config", str(p)], capture_output=True,
                           text=True)
        assert r.returncode == 1 and f"server.pgwire.{key}" in r.stderr, (pg, r.stderr)
    # a certificate that cannot be read stops startup too
    (tmp_path / "bad.pem").write_text("not a certificate")
    (tmp_path / "bad.key").write_text("not a key")
    p = tmp_path / "c.toml"
    p.write_text('[server]\nport = 0\n[server.pgwire]\nenabled = true\nport = 0\n'
                 f'tls_cert = "{tmp_path}/bad.pem"\ntls_key = "{tmp_path}/bad.key"\n')
    r = subprocess.run([str(VITRINE), "--config", str(p)], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 1 and "server.pgwire.tls_cert" in r.stderr, r.stderr


def test_authentication(vt, datadir):
    srv = start(vt, datadir, pgwire='password = "s3cret"\nusername = "analyst"\n')
    for user, pw in [("analyst", "wrong"), ("other", "s3cret"), ("analyst", "")]:
        r = Raw(srv.pg)
        msgs = r.login(user=user, password=pw)
        # the password is asked for in clear (AuthenticationCleartextPassword)
        assert msgs[0][0] == b"R" and msgs[0][1] == b"\0\0\0\3"
        f = error_fields(msgs[-1][1])
        assert f["S"] == "FATAL" and f["C"] == "28P01"
        assert f'password authentication failed for user "{user}"' == f["M"]
        assert r.closed()
    with connect(srv, user="analyst", password="s3cret") as c:
        assert c.execute("SELECT current_user").fetchone() == ("analyst",)
    # no password configured (loopback): the user name is still checked
    srv2 = start(vt, datadir / "b" if (datadir / "b").mkdir() is None else datadir)
    r = Raw(srv2.pg)
    msgs = r.login(user="mallory")
    f = error_fields(msgs[-1][1])
    assert f["C"] == "28000" and 'role "mallory" does not exist' in f["M"]


# --------------------------------------------------------------- psycopg

def test_psycopg3_binding_binary_and_transactions(vt, datadir):
    srv = start(vt, datadir)
    with connect(srv, row_factory=dict_row) as c:
        assert c.info.parameter_status("server_version") == "15.0"
        assert c.info.parameter_status("client_encoding") == "UTF8"
        assert c.info.parameter_status("integer_datetimes") == "on"
        assert c.info.parameter_status("standard_conforming_strings") == "on"
        assert c.info.parameter_status("DateStyle") == "ISO, MDY"
        row = c.execute("SELECT * FROM trips WHERE trip_id = %s", [10]).fetchone()
        assert row == {"trip_id": 10, "station": 0, "fare": decimal.Decimal("15.00"),
                       "payment": "cash",
                       "pickup_at": datetime.datetime(2024, 1, 1, 0, 10),
                       "day": datetime.date(2024, 1, 11), "even": True, "ratio": 10 / 7,
                       "note": None, "tags": [10, 11], "info": {"k": 10, "s": "x10"}}
        # every parameter type psycopg sends, server-side binding
        row = c.execute("SELECT %s::BIGINT + 1 AS i, %s::DOUBLE AS f, %s AS t, %s::BOOLEAN AS b,"
                        " %s::DATE AS d, %s::TIMESTAMP AS ts, %s::DECIMAL(10,3) AS n, "
                        "%s::BLOB AS blob",
                        [41, 2.5, "héllo", True, datetime.date(2020, 2, 29),
                         datetime.datetime(2021, 3, 4, 5, 6, 7, 890000),
                         decimal.Decimal("1.234"), b"\x00\xffab"]).fetchone()
        assert row == {"i": 42, "f": 2.5, "t": "héllo", "b": True,
                       "d": datetime.date(2020, 2, 29),
                       "ts": datetime.datetime(2021, 3, 4, 5, 6, 7, 890000),
                       "n": decimal.Decimal("1.234"), "blob": b"\x00\xffab"}
        # binary results
        cur = c.cursor(binary=True)
        cur.execute("SELECT trip_id, fare, pickup_at, day, even, ratio, note, tags, info "
                    "FROM trips WHERE trip_id IN (%s, %s) ORDER BY trip_id", [0, 1])
        rows = cur.fetchall()
        assert rows[0]["fare"] == decimal.Decimal("0.00") and rows[0]["note"] is None
        assert rows[1] == {"trip_id": 1, "fare": decimal.Decimal("1.50"),
                           "pickup_at": datetime.datetime(2024, 1, 1, 0, 1),
                           "day": datetime.date(2024, 1, 2), "even": False, "ratio": 1 / 7,
                           "note": "note 1", "tags": [1, 2], "info": {"k": 1, "s": "x1"}}
        assert [d.type_code for d in cur.description] == [23, 1700, 1114, 1082, 16, 701, 25,
                                                         1016, 114]
        # prepared statements (psycopg prepares after repeated use, and on request)
        for i in range(8):
            assert c.execute("SELECT payment FROM trips WHERE trip_id = %s", [i]).fetchone()
        assert c.execute("SELECT trip_id FROM trips WHERE trip_id = %s", [99],
                         prepare=True).fetchone() == {"trip_id": 99}
        # non-autocommit: BEGIN was sent; an error fails the transaction
        assert c.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
        with pytest.raises(psycopg.errors.UndefinedTable):
            c.execute("SELECT * FROM nope")
        assert c.info.transaction_status == psycopg.pq.TransactionStatus.INERROR
        with pytest.raises(psycopg.errors.InFailedSqlTransaction):
            c.execute("SELECT 1")
        c.rollback()
        assert c.execute("SELECT 1 AS one").fetchone() == {"one": 1}
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            c.execute("INSERT INTO trips VALUES (1)")
        c.rollback()
    # autocommit, executemany, and a pipeline
    with connect(srv, autocommit=True) as c:
        cur = c.cursor()
        cur.executemany("SELECT %s", [(1,), (2,)])
        with c.pipeline():
            a = c.execute("SELECT count(*) FROM trips WHERE station = %s", [1])
            b = c.execute("SELECT count(*) FROM stations")
        assert a.fetchone() == (1000,) and b.fetchone() == (5,)
        # psycopg's type lookup runs against the catalog
        from psycopg.types import TypeInfo
        info = TypeInfo.fetch(c, "int4")
        assert (info.name, info.oid, info.array_oid) == ("int4", 23, 1007)


def test_psycopg2(vt, datadir):
    srv = start(vt, datadir)
    c = psycopg2.connect(host="127.0.0.1", port=srv.pg, user="vitrine", dbname="vitrine",
                         connect_timeout=10)
    cur = c.cursor()
    cur.execute("SELECT trip_id, fare, pickup_at, tags FROM trips WHERE payment = %s "
                "ORDER BY trip_id LIMIT 2", ("card",))
    assert cur.fetchall() == [(0, decimal.Decimal("0.00"), datetime.datetime(2024, 1, 1), [0, 1]),
                              (3, decimal.Decimal("4.50"), datetime.datetime(2024, 1, 1, 0, 3),
                               [3, 4])]
    assert [d.name for d in cur.description] == ["trip_id", "fare", "pickup_at", "tags"]
    cur.execute("SELECT count(*) FROM trips")
    assert cur.fetchone() == (5000,)
    c.rollback()
    try:
        cur.execute("UPDATE trips SET fare = 0")
        raise AssertionError("update ran")
    except psycopg2.Error as e:
        assert e.pgcode == "25006"
    c.rollback()
    # a named (server-side) cursor is DECLARE ... CURSOR, read in batches
    named = c.cursor(name="big")
    named.itersize = 700
    named.execute("SELECT trip_id FROM trips WHERE trip_id < %s ORDER BY trip_id", (2000,))
    assert [r[0] for r in named] == list(range(2000))
    named.close()
    c.rollback()
    c.close()


# ------------------------------------------------------------------ node pg

def test_node_pg(vt, datadir):
    srv = start(vt, datadir)
    r = subprocess.run(["node", str(NODE_DIR / "node_client.mjs"), str(srv.pg)],
                       capture_output=True, text=True, timeout=60, cwd=NODE_DIR)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["param"]["rows"] == [{"trip_id": 3, "payment": "card", "fare": "4.50",
                                     "pickup_at": "2024-01-01T00:03:00.000Z",
                                     "tags": ["3", "4"], "info": {"k": 3, "s": "x3"}}]
    assert out["param"]["command"] == "SELECT" and out["param"]["rowCount"] == 1
    assert out["param"]["types"] == [23, 25, 1700, 1114, 1016, 114]
    assert out["named"] == [{"trip_id": 4, "payment": "cash"}, {"trip_id": 5, "payment": "cash"},
                            {"trip_id": 6, "payment": "card"}]
    assert out["binary"]["formats"] == ["binary"] * 3
    assert out["binary"]["types"] == [23, 16, 25]
    assert out["binary"]["rows"] == [{"trip_id": 0, "even": True, "payment": "card"},
                                     {"trip_id": 1, "even": False, "payment": "cash"},
                                     {"trip_id": 2, "even": True, "payment": "cash"}]
    assert out["cursor"] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9], []]
    assert out["error"]["code"] == "42P01"
    assert out["write"]["code"] == "25006"
    assert out["after"] == [{"n": "5000"}]
    assert out["pool"] == [1000, 1000, 1000, 1000, 1000, 1000]


# ------------------------------------------------------------ differential

def pyval(v):
    """A value as JSON would hold it, for comparing with DuckDB's to_json."""
    if isinstance(v, decimal.Decimal):
        return float(v)
    if isinstance(v, (datetime.datetime, datetime.date)):
        return v.isoformat(sep=" ") if isinstance(v, datetime.datetime) else v.isoformat()
    if isinstance(v, list):
        return [pyval(x) for x in v]
    if isinstance(v, dict):
        return {k: pyval(x) for k, x in v.items()}
    return v


def duck_rows(select):
    rows = duck(f"SELECT to_json(x) FROM ({select}) x")
    out = []
    for (j,) in rows:
        obj = json.loads(j)
        out.append({k: (v.replace("T", " ") if isinstance(v, str) and len(v) >= 19 and
                        v[4] == "-" and v[10] == "T" else v) for k, v in obj.items()})
    return out


def test_same_rows_as_duckdb(vt, datadir):
    srv = start(vt, datadir)
    t, s = datadir / "trips.parquet", datadir / "stations.parquet"
    cases = [
        "SELECT * FROM {trips} ORDER BY trip_id LIMIT 50",
        "SELECT payment, count(*) AS n, sum(fare) AS total, avg(ratio) AS a FROM {trips} "
        "GROUP BY payment ORDER BY payment",
        "SELECT s.name, max(t.fare) AS m FROM {trips} t JOIN {stations} s ON t.station = s.id "
        "GROUP BY ALL ORDER BY 1",
        "WITH c AS (SELECT station, max(pickup_at) AS last FROM {trips} GROUP BY station) "
        "SELECT * FROM c ORDER BY station",
        "SELECT trip_id, note, tags, info FROM {trips} WHERE note IS NULL ORDER BY trip_id "
        "LIMIT 20",
        "SELECT day, count(*) AS n FROM {trips} WHERE even GROUP BY day ORDER BY day",
    ]
    with connect(srv, autocommit=True, row_factory=dict_row) as c:
        for q in cases:
            ours_t = [{k: pyval(v) for k, v in r.items()}
                      for r in c.execute(q.format(trips="trips", stations="stations"))]
            cur = c.cursor(binary=True)
            cur.execute(q.format(trips="trips", stations="stations"))
            ours_b = [{k: pyval(v) for k, v in r.items()} for r in cur]
            want = duck_rows(q.format(trips=f"'{t}'", stations=f"'{s}'"))
            assert ours_t == want, q
            assert ours_b == want, q


def test_pgbench_load(vt, datadir, tmp_path):
    """pgbench -n with a custom point-lookup script, in the three query
    modes, several clients at once: every transaction succeeds."""
    import shutil
    pgbench = shutil.which("pgbench") or "/usr/lib/postgresql/15/bin/pgbench"
    srv = start(vt, datadir)
    script = tmp_path / "lookup.sql"
    script.write_text("\\set id random(0, 4999)\n"
                      "SELECT trip_id, payment, fare FROM trips WHERE trip_id = :id;\n"
                      "SELECT count(*) FROM stations;\n")
    for mode in ("simple", "extended", "prepared"):
        r = subprocess.run([pgbench, "-n", "-h", "127.0.0.1", "-p", str(srv.pg), "-U", "vitrine",
                            "-f", str(script), "-c", "4", "-j", "2", "-t", "50", "-M", mode,
                            "vitrine"], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "number of transactions actually processed: 200/200" in r.stdout, r.stdout
        assert "number of failed transactions: 0" in r.stdout, r.stdout


# ------------------------------------------------- cancel, timeout, limits

def test_cancel_request_interrupts_the_query(vt, datadir):
    srv = start(vt, datadir)
    with connect(srv, autocommit=True) as c:
        t0 = time.time()
        threading.Timer(0.5, c.cancel).start()
        with pytest.raises(psycopg.errors.QueryCanceled) as ei:
            c.execute("SELECT count(*) FROM range(100000000000) a(x) WHERE x % 7 = 3")
        assert time.time() - t0 < 10
        assert "canceling statement due to user request" in str(ei.value)
        # the session goes on
        assert c.execute("SELECT count(*) FROM stations").fetchone() == (5,)
        # a CancelRequest with a wrong key changes nothing
        r = Raw(srv.pg)
        import struct
        r.send(struct.pack("!iiii", 16, 80877102, 12345, 678))
        assert r.closed()
        assert c.execute("SELECT 2").fetchone() == (2,)


def test_request_timeout_per_statement(vt, datadir):
    # 2 s against the session's 200 ms: the answer tells which applied with
    # 1.8 s to spare (700 ms left 0.49 s for the cancel, the round trip and
    # a loaded or ASan machine's scheduling).
    srv = start(vt, datadir, server={"request_timeout_ms": 2000})
    with connect(srv, autocommit=True) as c:
        t0 = time.time()
        with pytest.raises(psycopg.errors.QueryCanceled) as ei:
            c.execute("SELECT count(*) FROM range(100000000000) a(x) WHERE x % 7 = 3")
        assert 1.9 < time.time() - t0 < 20
        assert "statement timeout" in str(ei.value)
        assert c.execute("SELECT 1").fetchone() == (1,)
        # the session's statement_timeout applies when it is lower
        c.execute("SET statement_timeout = '200ms'")
        t0 = time.time()
        with pytest.raises(psycopg.errors.QueryCanceled):
            c.execute("SELECT count(*) FROM range(100000000000) a(x) WHERE x % 7 = 3")
        assert 0.15 < time.time() - t0 < 1.9


def test_idle_timeout_and_connection_cap(vt, datadir):
    srv = start(vt, datadir, pgwire="idle_timeout_secs = 1\nmax_connections = 3\n")
    r = Raw(srv.pg)
    msgs = r.login()
    assert msgs[-1][0] == b"Z"
    t, body = r.read()  # nothing sent: the idle timeout ends the session
    f = error_fields(body)
    assert t == b"E" and f["S"] == "FATAL" and f["C"] == "57P05"
    assert r.closed()
    # a startup that never completes is dropped too
    r = Raw(srv.pg)
    r.send(b"\0\0")
    assert r.closed(timeout=5)
    # three sessions at once, the fourth is refused with 53300
    held = [Raw(srv.pg) for _ in range(3)]
    for h in held:
        assert h.login()[-1][0] == b"Z"
    extra = Raw(srv.pg)
    msgs = extra.login()
    f = error_fields(msgs[-1][1])
    assert f["C"] == "53300" and "too many clients" in f["M"]
    held[0].close()
    time.sleep(0.3)
    again = Raw(srv.pg)
    assert again.login()[-1][0] == b"Z"
    for h in held[1:] + [again]:
        h.close()


def test_shared_worker_pool_and_snapshot(vt, datadir):
    """pgwire and HTTP share the workers; a reload between statements is
    seen, one statement reads one generation."""
    srv = start(vt, datadir, env={"ADMIN_TOKEN": "t0k"}, server={"workers": 2})
    with connect(srv, autocommit=True) as c:
        before = c.execute("SELECT count(*) FROM trips").fetchone()[0]
        assert before == 5000
        from conftest import write_parquet
        write_parquet(datadir / "trips.parquet", "SELECT i::INTEGER AS trip_id FROM range(10) t(i)")
        rr = srv.post("/api/v1/datasets/trips/reload", headers={"X-Admin-Token": "t0k"})
        assert rr.status_code == 200, rr.text
        assert c.execute("SELECT count(*) FROM trips").fetchone()[0] == 10
        out = psql(srv, "-c", r"\d trips").stdout
        assert "trip_id | integer" in out and "fare" not in out
