"""BI tools over the PostgreSQL listener (issue 27), with the real drivers
they use, against one server per module holding a dataset of trips:

- pgJDBC (Debian's libpostgresql-jdbc-java): every DatabaseMetaData method
  DBeaver and Metabase call, the connection settings they make, array
  parameters (setArray: binary 1007/1009/1016), and the statements Metabase
  and DBeaver send, replayed from tests/e2e/pgwire/replay/*.sql - all in one
  JVM run of pgwire/JdbcCheck.java (compiled by `java` in the run);
- SQLAlchemy 1.4 (Debian's python3-sqlalchemy) inspector calls, autoload,
  and Superset's time-series queries (replay/superset.sql);
- psycopg and psycopg2 with array and typed parameters, server-side
  cursors (DECLARE/FETCH/MOVE/CLOSE, psycopg2 named cursors), COPY in
  binary; node `pg` with arrays and a cursor (pgwire/node_bi.mjs);
- the catalog queries of Grafana and pgcli (replay/*.sql) over psycopg
  (extended protocol) and psycopg2 (simple protocol), and psql's \\df \\du
  \\dn \\dv;
- the small statements clients send: now(), txid_current(),
  inet_server_addr(), EXPLAIN, LISTEN/UNLISTEN, string_to_array,
  pg_get_keywords(), and errors that name no internal object."""
import datetime
import decimal
import json
import os
import shutil
import struct
import subprocess
from pathlib import Path

import psycopg
import psycopg2
import pytest
import requests
import sqlalchemy as sa

from conftest import REPO
from pgwire_util import module_server

PGDIR = REPO / "tests" / "e2e" / "pgwire"
REPLAY = PGDIR / "replay"
JDBC_JAR = Path("/usr/share/java/postgresql.jar")


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    yield from module_server(tmp_path_factory, "pgbi", "[sql]\nenabled = true\n")


def dsn(srv):
    return f"host=127.0.0.1 port={srv.pg} user=vitrine dbname=vitrine connect_timeout=10"


def replay(name):
    """The statements of a replay file: (name, sql) pairs."""
    out, cur, buf = [], None, []
    for line in (REPLAY / name).read_text().splitlines():
        if line.startswith("-- name: "):
            if cur:
                out.append((cur, "\n".join(buf).strip()))
            cur, buf = line[9:].strip(), []
        elif cur:
            buf.append(line)
    if cur:
        out.append((cur, "\n".join(buf).strip()))
    return out


# ------------------------------------------------------------------ pgJDBC

def test_pgjdbc_metadata_metabase_and_dbeaver(srv):
    assert JDBC_JAR.exists() and shutil.which("java"), \
        "pgJDBC and a JDK are test dependencies (scripts/install-deps.sh)"
    url = f"jdbc:postgresql://127.0.0.1:{srv.pg}/vitrine"
    r = subprocess.run(["java", "-cp", str(JDBC_JAR), str(PGDIR / "JdbcCheck.java"), url,
                        "vitrine", "", str(REPLAY / "metabase.sql"), str(REPLAY / "dbeaver.sql")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-4000:]
    lines = r.stdout.splitlines()
    fails = [x for x in lines if x.startswith("FAIL")]
    assert not fails, "\n".join(fails)
    ok = {x.split(" ", 2)[1]: x for x in lines if x.startswith("OK")}
    names = {x[3:].rsplit(" rows=", 1)[0].split(" [")[0] for x in lines}
    # every DatabaseMetaData method ran, every replayed statement too
    for m in ["getTables", "getColumns", "getPrimaryKeys", "getIndexInfo", "getImportedKeys",
              "getExportedKeys", "getCrossReference", "getFunctions", "getProcedures",
              "getTypeInfo", "getSQLKeywords", "getTablePrivileges", "getBestRowIdentifier"]:
        assert any(n.startswith(m) for n in names), m
    n_replayed = sum(1 for x in lines if x.startswith("OK replay "))
    assert n_replayed == len(replay("metabase.sql")) + len(replay("dbeaver.sql"))
    # PostgreSQL's answers: the datasets, no keys, no indexes, no functions
    joined = "\n".join(lines)
    assert "OK getTables rows=2" in joined
    assert "OK getPrimaryKeys rows=0" in joined and "OK getImportedKeys rows=0" in joined
    assert "OK getIndexInfo rows=0" in joined and "OK getFunctions rows=0" in joined
    assert "trip_id:int4/4" in ok["getColumns"] and "tags:_int8/2003" in ok["getColumns"]
    assert "OK replay get tables rows=2" in joined and "|trips|TABLE|null|5000}" in joined
    assert "OK replay question: count by payment rows=2" in joined
    # PostgreSQL's set-returning functions, and a bare NULL typed text
    assert 'OK set-returning json/string functions rows=3 [v] {a} {2} {null} ' \
        'rows=2 [value] {1} {{"k":2}} rows=2 [s] {x} {y}' in joined, joined
    assert "OK SELECT NULL type ?column?:text/12 n:text/12 i:int4/4 null" in joined, joined
    # JSON is json (OID 114): pgJDBC gives a PGobject of type json
    assert 'OK json types o:json/1111 l:json/1111 t:text/12 n:int4/4 PGobject {"a":7} [1, 2] v 3' \
        in joined, joined
    # jsonb's operators through pgJDBC (`??` is its spelling of `?`)
    assert "OK jsonb operators e:bool/-7 y:bool/-7 p:text/12 c:bool/-7 n:int8/-5 " \
        "true true six true 2" in joined, joined
    # Metabase's own connection settings and its batched read
    assert "OK setReadOnly true" in joined and "OK autocommit off + fetch size rows=5000" in joined


# -------------------------------------------------------------- SQLAlchemy

def test_sqlalchemy_inspector_and_superset(srv):
    assert sa.__version__.startswith("1.4"), sa.__version__
    e = sa.create_engine(f"postgresql+psycopg2://vitrine@127.0.0.1:{srv.pg}/vitrine")
    insp = sa.inspect(e)
    assert "public" in insp.get_schema_names()
    assert sorted(insp.get_table_names(schema="public")) == ["stations", "trips"]
    assert insp.get_view_names(schema="public") == []
    cols = insp.get_columns("trips", schema="public")
    assert [c["name"] for c in cols][:4] == ["trip_id", "station", "fare", "payment"]
    types = {c["name"]: str(c["type"]) for c in cols}
    assert types["trip_id"] == "INTEGER" and types["fare"] == "NUMERIC(10, 2)"
    assert types["pickup_at"] == "TIMESTAMP" and types["payment"] == "TEXT"
    assert insp.get_pk_constraint("trips", schema="public")["constrained_columns"] == []
    assert insp.get_foreign_keys("trips", schema="public") == []
    assert insp.get_indexes("trips", schema="public") == []
    assert insp.get_unique_constraints("trips", schema="public") == []
    assert insp.get_check_constraints("trips", schema="public") == []
    assert insp.get_table_comment("trips", schema="public") == {"text": None}
    assert insp.has_table("trips", schema="public")
    assert insp.get_sequence_names(schema="public") == []
    t = sa.Table("trips", sa.MetaData(), autoload_with=e, schema="public")
    assert len(t.columns) == 11
    # a Superset-style query built by SQLAlchemy from the reflected table
    with e.connect() as c:
        q = (sa.select(sa.func.date_trunc("day", t.c.pickup_at).label("d"),
                       sa.func.count().label("n"))
             .where(t.c.pickup_at >= sa.func.to_timestamp("2024-01-01 00:00:00.000000",
                                                          "YYYY-MM-DD HH24:MI:SS.US"))
             .group_by(sa.text("1")).order_by(sa.text("1")))
        rows = c.execute(q).fetchall()
        assert [r.n for r in rows] == [1440, 1440, 1440, 680]
        # date_trunc keeps a timestamp a timestamp, as PostgreSQL's does
        assert rows[1].d == datetime.datetime(2024, 1, 2)
        for name, sql in replay("superset.sql"):
            try:
                c.execute(sa.text(sql)).fetchall()
            except Exception as ex:  # noqa: BLE001 - say which one
                raise AssertionError(f"superset replay {name!r}: {ex}") from ex


# --------------------------------------------------- psycopg, psycopg2, node

def test_array_and_typed_parameters(srv):
    with psycopg.connect(dsn(srv), autocommit=True) as c:
        q = lambda sql, p=None: c.execute(sql, p).fetchall()  # noqa: E731
        assert q("SELECT count(*) FROM trips WHERE payment = ANY(%s)", (["card", "x"],)) == [(1667,)]
        assert q("SELECT count(*) FROM trips WHERE payment = ANY(%b)", (["cash"],)) == [(3333,)]
        assert q("SELECT count(*) FROM trips WHERE trip_id = ANY(%s)", ([1, 2, 3, 10 ** 9],)) == [(3,)]
        assert q("SELECT count(*) FROM trips WHERE trip_id = ANY(%s)", ([],)) == [(0,)]
        assert q("SELECT count(*) FROM trips WHERE trip_id <> ALL(%s)", ([0, 1],)) == [(4998,)]
        assert q("SELECT %s::text[]", (["a", 'b "c"', None],)) == [(["a", 'b "c"', None],)]
        assert q("SELECT %b::int[]", ([1, None, 3],)) == [([1, None, 3],)]
        assert q("SELECT count(*) FROM trips WHERE day = ANY(%s)",
                 ([datetime.date(2024, 1, 2), datetime.date(2024, 1, 3)],)) == [(334,)]
        assert q("SELECT count(*) FROM trips WHERE fare = ANY(%s)",
                 ([decimal.Decimal("4.50")],)) == [(100,)]
        assert q("SELECT %s + 1, %s * 2, NOT %s, %s", (41, 1.25, True, "x")) == [(42, 2.5, False, "x")]
        # a malformed array is a clean error, and the session goes on
        with pytest.raises(psycopg.Error) as ei:
            c.execute("SELECT %s::int[]", ("{1,2",))
        assert ei.value.sqlstate == "22P02"
        assert q("SELECT 1") == [(1,)]
    c2 = psycopg2.connect(dsn(srv))
    c2.autocommit = True
    cur = c2.cursor()
    cur.execute("SELECT count(*) FROM trips WHERE payment = ANY(%s)", (["card", "x"],))
    assert cur.fetchall() == [(1667,)]
    cur.execute("SELECT %s::text[]", (["a", "b"],))
    assert cur.fetchall() == [(["a", "b"],)]
    cur.execute("SELECT count(*) FROM trips WHERE station IN %s", ((1, 2),))
    assert cur.fetchall() == [(2000,)]
    cur.execute("SELECT count(*) FROM trips WHERE trip_id = ANY(%s::int[])", ([],))
    assert cur.fetchall() == [(0,)]
    c2.close()


def test_node_pg_arrays_and_cursor(srv):
    r = subprocess.run(["node", str(PGDIR / "node_bi.mjs"), str(srv.pg)], capture_output=True,
                       text=True, timeout=60, cwd=PGDIR)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["any_text"] == [{"n": 1667}]
    assert out["any_int"] == [{"n": 3}]
    assert out["any_empty"] == [{"n": 0}]
    assert out["any_date"] == [{"n": 334}]
    assert out["not_all"] == [{"n": 3333}]
    assert out["cast_text_array"] == [{"a": ["x", 'y "z"', None]}]
    assert out["typed"] == [{"i": 42, "f": 2.5, "b": True, "t": "2024-01-02T03:04:05.000Z"}]
    assert out["catalog"] == [{"relname": "stations"}, {"relname": "trips"}]
    assert out["cursor"] == {"fetched": 1000, "batches": 4}


def test_server_side_cursors(srv):
    # psycopg2 named cursors: DECLARE, then FETCH FORWARD itersize
    c2 = psycopg2.connect(dsn(srv))
    named = c2.cursor(name="big")
    named.itersize = 1500
    named.execute("SELECT trip_id, payment FROM trips WHERE trip_id < %s ORDER BY trip_id", (4000,))
    rows = list(named)
    assert [r[0] for r in rows] == list(range(4000)) and rows[3] == (3, "card")
    named.close()
    c2.commit()
    # a result larger than the 16 MiB held in memory (the rest in a file)
    named = c2.cursor(name="huge")
    named.itersize = 5000
    named.execute("SELECT x, repeat('p', 100) AS pad FROM range(300000) t(x)")
    n = 0
    for x, pad in named:
        assert x == n and len(pad) == 100
        n += 1
    assert n == 300000
    named.close()
    c2.commit()
    # binary cursors of psycopg 3 and the SQL statements themselves
    with psycopg.connect(dsn(srv)) as c:
        with c.cursor(name="cur3", binary=True) as cur:
            cur.itersize = 100
            cur.execute("SELECT trip_id, fare, pickup_at FROM trips WHERE trip_id < %s "
                        "ORDER BY trip_id", (250,))
            first = cur.fetchmany(7)
            rest = cur.fetchall()
        assert first[1] == (1, decimal.Decimal("1.50"), datetime.datetime(2024, 1, 1, 0, 1))
        assert len(first) + len(rest) == 250
        c.commit()
        c.execute("BEGIN")
        c.execute("DECLARE c1 CURSOR FOR SELECT trip_id FROM trips ORDER BY trip_id")
        assert c.execute("FETCH 3 FROM c1").fetchall() == [(0,), (1,), (2,)]
        c.execute("MOVE 10 IN c1")
        assert c.execute("FETCH NEXT FROM c1").fetchall() == [(13,)]
        assert c.execute("FETCH FORWARD 2 c1").fetchall() == [(14,), (15,)]
        rest = c.execute("FETCH ALL FROM c1").fetchall()
        assert len(rest) == 5000 - 16 and c.execute("FETCH c1").fetchall() == []
        c.execute("CLOSE c1")
        with pytest.raises(psycopg.Error) as ei:
            c.execute("FETCH c1")
        assert ei.value.sqlstate == "34000"
        c.rollback()
        # outside a transaction only WITH HOLD is allowed, and it outlives COMMIT
        c.autocommit = True
        with pytest.raises(psycopg.Error) as ei:
            c.execute("DECLARE c2 CURSOR FOR SELECT 1")
        assert ei.value.sqlstate == "25P01"
        c.execute("DECLARE c3 CURSOR WITH HOLD FOR SELECT payment FROM trips WHERE trip_id < 3 "
                  "ORDER BY trip_id")
        assert c.execute("FETCH 2 FROM c3").fetchall() == [("card",), ("cash",)]
        with pytest.raises(psycopg.Error) as ei:
            c.execute("FETCH BACKWARD 1 FROM c3")
        assert ei.value.sqlstate == "0A000"
        with pytest.raises(psycopg.Error) as ei:
            c.execute("DECLARE c3 CURSOR WITH HOLD FOR SELECT 1")
        assert ei.value.sqlstate == "42P03"
        c.execute("CLOSE ALL")
        # the gate checks a cursor's query like any other
        c.autocommit = False
        with pytest.raises(psycopg.Error) as ei:
            c.execute("DECLARE c4 CURSOR FOR SELECT * FROM read_csv('/etc/passwd')")
        assert ei.value.sqlstate == "42501"
        c.rollback()


def test_copy_binary(srv):
    with psycopg.connect(dsn(srv), autocommit=True) as c:
        cur = c.cursor()
        got = []
        with cur.copy("COPY (SELECT trip_id, payment, fare, note FROM trips WHERE trip_id < 11 "
                      "ORDER BY trip_id) TO STDOUT (FORMAT binary)") as cp:
            cp.set_types(["int4", "text", "numeric", "text"])
            for row in cp.rows():
                got.append(row)
        assert len(got) == 11
        assert got[0] == (0, "card", decimal.Decimal("0.00"), None)
        assert got[3] == (3, "card", decimal.Decimal("4.50"), "note 3")
        # the raw stream: the file signature with the first tuple, then one
        # message per tuple, then the trailer (as PostgreSQL sends it)
        with cur.copy("COPY (SELECT 7::int AS a, 'x' AS b) TO STDOUT WITH BINARY") as cp:
            msgs = [bytes(b) for b in cp]
        header = b"PGCOPY\n\xff\r\n\x00" + b"\x00" * 8
        assert msgs == [header + struct.pack("!hi", 2, 4) + struct.pack("!i", 7) +
                        struct.pack("!i", 1) + b"x", struct.pack("!h", -1)]
        with cur.copy("COPY (SELECT 1 WHERE false) TO STDOUT (FORMAT binary)") as cp:
            assert [bytes(b) for b in cp] == [header + struct.pack("!h", -1)]


# ----------------------------------------------------- catalogs, replayed

@pytest.mark.parametrize("file", ["grafana.sql", "pgcli.sql", "superset.sql"])
def test_catalog_replays(srv, file):
    with psycopg.connect(dsn(srv), autocommit=True) as c:
        for name, sql in replay(file):
            try:
                c.execute(sql).fetchall()
            except psycopg.Error as e:
                raise AssertionError(f"{file} {name!r} (extended protocol): {e}") from e
    c2 = psycopg2.connect(dsn(srv))
    c2.autocommit = True
    cur = c2.cursor()
    for name, sql in replay(file):
        try:
            cur.execute(sql.replace("%", "%%"))
            cur.fetchall()
        except psycopg2.Error as e:
            raise AssertionError(f"{file} {name!r} (simple protocol): {e}") from e
    c2.close()


def test_grafana_answers(srv):
    with psycopg.connect(dsn(srv), autocommit=True) as c:
        q = dict(replay("grafana.sql"))
        assert c.execute(q["version"]).fetchall() == [(1500,)]
        assert c.execute(q["tables on the search path"]).fetchall() == [("stations",), ("trips",)]
        cols = dict(c.execute(q["columns of a table"]).fetchall())
        assert cols["pickup_at"] == "timestamp without time zone" and len(cols) == 11
        rows = c.execute(q["panel: $__timeGroupAlias(pickup_at, 5m) with $__timeFilter"]).fetchall()
        assert rows[0] == (1704067200, 5) and len(rows) == 73


def psql(srv, *args):
    e = dict(os.environ, PGCONNECT_TIMEOUT="10")
    e.pop("PGPASSWORD", None)
    r = subprocess.run(["psql", "-X", "--no-psqlrc", "-v", "ON_ERROR_STOP=1", "-d",
                        f"host=127.0.0.1 port={srv.pg} user=vitrine dbname=vitrine", *args],
                       capture_output=True, text=True, env=e, timeout=60)
    assert r.returncode == 0, r.stderr + r.stdout
    return r.stdout + r.stderr


def test_psql_describe_commands(srv):
    out = psql(srv, "-c", r"\df", "-c", r"\du", "-c", r"\dn", "-c", r"\dv", "-c", r"\dx",
               "-c", r"\dT", "-c", r"\di")
    assert "List of functions" in out and "Result data type" in out
    assert "List of roles" in out and " vitrine   |" in out
    assert "List of schemas" in out and "public | vitrine" in out
    assert "Did not find any relations." in out  # \dv and \di: none
    assert "List of installed extensions" in out and "List of data types" in out
    # the rest of psql's describe commands answer too (mostly empty lists)
    more = [r"\d+ trips", r"\dt+", r"\l+", r"\dn+", r"\ds", r"\dm", r"\dp", r"\dg", r"\dE",
            r"\dD", r"\dc", r"\dC", r"\do", r"\dL", r"\db", r"\des", r"\dRp", r"\dy",
            r"\dconfig", r"\drds", r"\dA", r"\dF"]
    out = psql(srv, *[a for c in more for a in ("-c", c)])
    assert "List of languages" in out and "Access privileges" in out
    assert "Table \"public.trips\"" in out and "List of access methods" in out


# ------------------------------------------------------------ psqlODBC

def test_psqlodbc(srv):
    """psqlODBC's connect-time statements, SQLTables (isql's `help`),
    SQLColumns (`help trips`) and queries, through unixODBC's isql."""
    assert shutil.which("isql"), "isql missing: scripts/install-deps.sh installs unixodbc"
    conn = (f"Driver=PostgreSQL Unicode;Server=127.0.0.1;Port={srv.pg};Database=vitrine;"
            "Uid=vitrine;Pwd=;")
    stmts = ["help", "help trips",
             "SELECT payment, count(*) FROM trips GROUP BY 1 ORDER BY 1",
             "SELECT fare FROM trips WHERE trip_id = 3"]
    r = subprocess.run(["isql", "-k", conn, "-b", "-v", "-d|"], input="\n".join(stmts) + "\n",
                       capture_output=True, text=True, timeout=60)
    out = r.stdout + r.stderr
    assert r.returncode == 0 and "[ISQL]ERROR" not in out, out
    lines = out.splitlines()
    assert "vitrine|public|trips|TABLE|" in lines and "vitrine|public|stations|TABLE|" in lines
    cols = [ln.split("|") for ln in lines if ln.startswith("vitrine|public|trips|") and
            not ln.endswith("TABLE|")]
    assert [c[3] for c in cols][:3] == ["trip_id", "station", "fare"] and len(cols) == 11, cols
    assert dict((c[3], c[5]) for c in cols)["pickup_at"] == "timestamp"
    assert "card|1667" in lines and "cash|3333" in lines and "4.50" in lines, out
    # UseDeclareFetch: the driver reads results through DECLARE/FETCH 2 at a time
    r = subprocess.run(["isql", "-k", conn + "UseDeclareFetch=1;Fetch=2;", "-b", "-v", "-d|"],
                       input="SELECT trip_id FROM trips WHERE trip_id < 5 ORDER BY 1\n",
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.split() == ["0", "1", "2", "3", "4"], r.stdout + r.stderr


# ------------------------------------------------------ small statements

def test_small_statements(srv):
    with psycopg.connect(dsn(srv), autocommit=True) as c:
        one = lambda sql: c.execute(sql).fetchone()  # noqa: E731
        now = one("SELECT now(), statement_timestamp(), clock_timestamp()")
        assert all(isinstance(v, datetime.datetime) for v in now)
        assert isinstance(one("SELECT txid_current()")[0], int)
        assert one("SELECT inet_server_addr(), inet_server_port()") == ("127.0.0.1", srv.pg)
        assert one("SELECT inet_client_addr()")[0] == "127.0.0.1"
        assert one("SELECT string_to_array('a,b,c', ',')") == (["a", "b", "c"],)
        # date_trunc gives a timestamp for a timestamp or a date (DuckDB's
        # gives a DATE from 'day' up), its column named date_trunc
        cur = c.execute("SELECT date_trunc('day', TIMESTAMP '2024-01-02 10:30'), "
                        "date_trunc('month', DATE '2024-01-15') AS m, "
                        "date_trunc('hour', TIMESTAMPTZ '2024-01-02 10:30:00+00'), "
                        "date_trunc('hour', INTERVAL '3 hours 20 minutes')")
        assert cur.fetchone() == (datetime.datetime(2024, 1, 2), datetime.datetime(2024, 1, 1),
                                  datetime.datetime(2024, 1, 2, 10, tzinfo=datetime.timezone.utc),
                                  datetime.timedelta(hours=3))
        assert [d.name for d in cur.description][:2] == ["date_trunc", "m"]
        kw = c.execute("SELECT word, catcode FROM pg_get_keywords() WHERE word = 'select'").fetchall()
        assert kw == [("select", "R")]
        plan = c.execute("EXPLAIN SELECT * FROM trips WHERE fare > 10").fetchall()
        assert plan and all(len(r) == 1 for r in plan)
        assert c.execute("EXPLAIN SELECT 1").description[0].name == "QUERY PLAN"
        assert "Total Time" in " ".join(r[0] for r in c.execute(
            "EXPLAIN ANALYZE SELECT count(*) FROM trips").fetchall())
        c.execute("LISTEN events")
        c.execute("UNLISTEN *")
        assert one("SELECT count(*) FROM trips WHERE payment ~* 'CA'") == (5000,)
        assert one("SELECT count(*) FROM trips WHERE payment !~* '^ca'") == (0,)
        assert one("SELECT 150000 / 100, 7.0 / 2") == (1500, 3.5)
        with pytest.raises(psycopg.Error) as ei:
            c.execute("SELECT count(*) FROM trips WHERE payment ~* 1")
        assert "vt:" not in str(ei.value)
        with pytest.raises(psycopg.Error) as ei:
            c.execute("EXPLAIN DELETE FROM trips")
        assert ei.value.sqlstate == "25006"
        with pytest.raises(psycopg.Error) as ei:
            c.execute("SELECT format_type(1, 2, 3, 4)")
        assert "vt:" not in str(ei.value) and "format_type" in str(ei.value)


# Every DuckDB type a column can have: pg_typeof names the type the
# RowDescription sends for it (as format_type does), lists of a scalar
# included.
TYPED_EXPRESSIONS = [
    "1::TINYINT", "1::SMALLINT", "1::INTEGER", "1::BIGINT", "1::HUGEINT", "1::UTINYINT",
    "1::USMALLINT", "1::UINTEGER", "1::UBIGINT", "1::UHUGEINT", "1.5::FLOAT", "1.5::DOUBLE",
    "1.5::DECIMAL(10,2)", "1.5::DECIMAL(30,2)", "'x'::VARCHAR", "'x'::BLOB", "DATE '2024-01-01'",
    "TIME '10:00'", "'10:00:00+02'::TIMETZ", "TIMESTAMP '2024-01-01'",
    "'2024-01-01'::TIMESTAMP_S", "'2024-01-01'::TIMESTAMP_MS", "'2024-01-01'::TIMESTAMP_NS",
    "TIMESTAMPTZ '2024-01-01'", "INTERVAL '1 day'", "gen_random_uuid()", "'101'::BIT", "true",
    "1::BIGNUM", "'a'::ENUM('a', 'b')", "'{}'::JSON", "[1, 2]", "['a']", "[1.5::DECIMAL(4,1)]",
    "[DATE '2024-01-01']", "[INTERVAL '1 day']", "array_value(1, 2)", "[[1]]", "{'a': 1}",
    "MAP {'a': 1}", "[{'a': 1}]",
]


def test_pg_typeof_names_the_type_sent(srv):
    with psycopg.connect(dsn(srv), autocommit=True) as c:
        select = ", ".join(f"{e}, pg_typeof({e})" for e in TYPED_EXPRESSIONS)
        cur = c.execute(f"SELECT {select}")
        row = cur.fetchone()
        oids = [d.type_code for d in cur.description[0::2]]
        names = c.execute("SELECT " + ", ".join(f"format_type({o}, NULL)" for o in oids)).fetchone()
        got = dict(zip(TYPED_EXPRESSIONS, row[1::2]))
        assert got == dict(zip(TYPED_EXPRESSIONS, names))
        assert [got[e] for e in ("1::INTEGER", "'x'::VARCHAR", "TIMESTAMP '2024-01-01'", "[1, 2]",
                                 "{'a': 1}")] == [
            "integer", "text", "timestamp without time zone", "integer[]", "json"]
        cur = c.execute("SELECT pg_typeof(fare), pg_typeof(trip_id) AS t, "
                        "pg_typeof(pickup_at)::text = 'timestamp without time zone' FROM trips "
                        "LIMIT 1")
        assert cur.fetchone() == ("numeric", "integer", True)
        assert [d.name for d in cur.description][:2] == ["pg_typeof", "t"]


def test_generate_series_in_the_select_list(srv):
    # A set-returning function: one row per value, as PostgreSQL gives
    # (DuckDB's scalar generate_series is one list), in both protocols and
    # psql; in FROM it stays the table function.
    with psycopg.connect(dsn(srv), autocommit=True) as c:
        cur = c.execute("SELECT generate_series(1, 3)")
        assert cur.fetchall() == [(1,), (2,), (3,)]
        assert cur.description[0].name == "generate_series"
        assert c.execute("SELECT generate_series(1, 10, 4) * 2 AS g, 'x' AS k").fetchall() == [
            (2, "x"), (10, "x"), (18, "x")]
        assert c.execute("SELECT generate_series(%s::int, %s::int) AS n", (5, 6)).fetchall() == [
            (5,), (6,)]
        days = c.execute("SELECT generate_series(TIMESTAMP '2024-01-01', TIMESTAMP '2024-01-03', "
                         "INTERVAL '1 day')::date AS d").fetchall()
        assert days == [(datetime.date(2024, 1, d),) for d in (1, 2, 3)]
        assert c.execute("SELECT s.d, count(t.trip_id) FROM (SELECT generate_series(0, 2) AS d) s "
                         "LEFT JOIN trips t ON t.station = s.d GROUP BY s.d ORDER BY s.d"
                         ).fetchall() == [(0, 1000), (1, 1000), (2, 1000)]
        assert c.execute("SELECT * FROM generate_series(1, 2)").fetchall() == [(1,), (2,)]
        assert c.execute("SELECT count(*) FROM generate_series(1, 5) g(i) WHERE i > 2"
                         ).fetchone() == (3,)
    with psycopg2.connect(dsn(srv)) as c2, c2.cursor() as cur:
        cur.execute("SELECT generate_series(1, 3), 'a'")
        assert cur.fetchall() == [(1, "a"), (2, "a"), (3, "a")]
    out = psql(srv, "-c", "SELECT generate_series(1, 2) AS n")
    assert "(2 rows)" in out, out


def test_json_and_string_set_returning_functions(srv):
    # json[b]_array_elements[_text] and string_to_table: one row per element
    # as PostgreSQL gives, in the select list and in FROM (column "value",
    # or the function's or alias's name), beside a table (lateral), in both
    # protocols and psql; bounded like any call (the gate checks what they
    # become).
    with psycopg.connect(dsn(srv), autocommit=True) as c:
        cur = c.execute("SELECT json_array_elements('[1, \"a\", {\"k\": [2]}, null]')")
        assert cur.description[0].name == "json_array_elements"
        assert [r[0] for r in cur.fetchall()] == [1, "a", {"k": [2]}, None]
        cur = c.execute("SELECT jsonb_array_elements_text('[1, \"a\", {\"k\": 2}, null]') AS t")
        assert cur.fetchall() == [("1",), ("a",), ('{"k":2}',), (None,)]
        assert c.execute("SELECT value FROM json_array_elements_text(%s) ORDER BY 1",
                         ('["b", "a"]',)).fetchall() == [("a",), ("b",)]
        cur = c.execute("SELECT * FROM jsonb_array_elements('[true, 2]') AS e")
        assert cur.description[0].name == "value" and cur.fetchall() == [(True,), (2,)]
        assert c.execute("SELECT x FROM json_array_elements_text('[\"q\"]') AS e(x)"
                         ).fetchall() == [("q",)]
        cur = c.execute("SELECT string_to_table('a,b,,c', ',')")
        assert cur.description[0].name == "string_to_table"
        assert cur.fetchall() == [("a",), ("b",), ("",), ("c",)]
        assert c.execute("SELECT string_to_table('a|-|b', '|', '-') AS p").fetchall() == [
            ("a",), (None,), ("b",)]
        # WITH ORDINALITY, column aliases, the function's name as the table's
        cur = c.execute("SELECT * FROM json_array_elements_text('[\"a\", \"b\"]') WITH ORDINALITY")
        assert [d.name for d in cur.description] == ["value", "ordinality"]
        assert cur.fetchall() == [("a", 1), ("b", 2)]
        cur = c.execute("SELECT * FROM string_to_table('a,b', ',') WITH ORDINALITY AS t(x, n)")
        assert [d.name for d in cur.description] == ["x", "n"]
        assert cur.fetchall() == [("a", 1), ("b", 2)]
        assert c.execute("SELECT string_to_table.string_to_table FROM string_to_table('a', ',')"
                         ).fetchall() == [("a",)]
        assert c.execute("SELECT json_array_elements.value FROM json_array_elements('[3]')"
                         ).fetchall() == [(3,)]
        # an object or a scalar fails as in PostgreSQL; SQL NULL gives no rows
        for text, what in (("SELECT json_array_elements('{\"a\": 1}')", "an object"),
                           ("SELECT * FROM json_array_elements_text('3')", "a scalar")):
            with pytest.raises(psycopg.Error) as e:
                c.execute(text)
            assert f"cannot extract elements from {what}" in str(e.value), str(e.value)
        assert c.execute("SELECT json_array_elements(NULL)").fetchall() == []
        assert c.execute("SELECT * FROM json_array_elements_text(NULL)").fetchall() == []
        # PostgreSQL's edges (DuckDB's string_split differs on each): an empty
        # string has no elements, a NULL delimiter splits into characters,
        # an empty one keeps the string whole; string_to_array alike
        assert c.execute("SELECT string_to_table('', ',')").fetchall() == []
        assert c.execute("SELECT string_to_table('abc', NULL)").fetchall() == [
            ("a",), ("b",), ("c",)]
        assert c.execute("SELECT string_to_table('abc', '')").fetchall() == [("abc",)]
        assert c.execute("SELECT string_to_array('', ','), string_to_array('ab', ''), "
                         "string_to_array('ab', NULL), string_to_array('a,-', ',', '-'), "
                         "string_to_array(NULL, ',')").fetchone() == (
            [], ["ab"], ["a", "b"], ["a", None], None)
        cur = c.execute("SELECT * FROM string_to_table('x y', ' ') AS w")
        assert cur.description[0].name == "w" and cur.fetchall() == [("x",), ("y",)]
        # beside a table: one row per element of each row's list
        assert c.execute("SELECT t.trip_id, e.value FROM (SELECT trip_id, '[' || trip_id || ', 0]' "
                         "AS j FROM trips ORDER BY trip_id LIMIT 2) t, json_array_elements_text(t.j) e "
                         "ORDER BY 1, 2").fetchall() == [(0, "0"), (0, "0"), (1, "0"), (1, "1")]
        # the gate's bounds hold on their arguments
        with pytest.raises(psycopg.Error) as e:
            c.execute("SELECT count(*) FROM string_to_table(repeat('a,', 40000000), ',')")
        assert "repeat" in str(e.value) and "limit" in str(e.value), str(e.value)
        assert c.execute("SELECT count(*) FROM string_to_table(repeat('a,', 300000), ',')"
                         ).fetchone() == (300001,)
        # a bare NULL is text, as in PostgreSQL; NULL beside an integer in a
        # UNION takes the integer's type
        cur = c.execute("SELECT NULL, NULL AS n, NULL::int AS i")
        assert [d.type_code for d in cur.description] == [25, 25, 23]
        assert [d.name for d in cur.description] == ["?column?", "n", "i"]
        assert cur.fetchall() == [(None, None, None)]
        cur = c.execute("SELECT NULL AS u UNION ALL SELECT 1")
        assert cur.description[0].type_code == 23
        cur = c.execute("SELECT %s::int AS p, NULL AS q", (5,))
        assert [d.type_code for d in cur.description] == [23, 25]
    with psycopg2.connect(dsn(srv)) as c2, c2.cursor() as cur:
        cur.execute("SELECT json_array_elements_text('[\"a\", \"b\"]'), 'k'")
        assert cur.fetchall() == [("a", "k"), ("b", "k")]
        cur.execute("SELECT NULL")
        assert cur.description[0].type_code == 25
    out = psql(srv, "-c", "SELECT * FROM string_to_table('a,b', ',') AS s")
    assert "(2 rows)" in out and " s " in out, out


def test_json_functions_are_typed_as_postgresql_types_them(srv):
    # What returns JSON is json (OID 114) in RowDescription, so drivers parse
    # it (psycopg gives Python objects): the json_/jsonb_ builders and
    # aggregates, casts to json and jsonb, -> and the extract-path functions
    # (nested paths, array indexes, as PostgreSQL walks them); what returns
    # text or a count is text or integer, in both protocols.
    json_valued = {
        "json_build_object('a', 1, 'b', json_build_array(1, 2))": {"a": 1, "b": [1, 2]},
        "jsonb_build_object('a', 1)": {"a": 1},
        "jsonb_build_array(1, 'x')": [1, "x"],
        "to_jsonb('x'::text)": "x",
        "(SELECT jsonb_agg(station ORDER BY station) FROM stations_ids)": [0, 1, 2],
        "(SELECT json_object_agg(name, id ORDER BY id) FROM stations WHERE id < 2)":
            {"st0": 0, "st1": 1},
        "'{\"a\": [1, {\"b\": null}]}'::jsonb": {"a": [1, {"b": None}]},
        "CAST('[1, 2]' AS jsonb)": [1, 2],
        "'[3]'::json": [3],
        "'{\"a\": {\"b\": 2}}'::jsonb -> 'a'": {"b": 2},
        "jsonb_extract_path('{\"a\": {\"b\": [5, {\"c\": 6}]}}', 'a', 'b', '1')": {"c": 6},
        "json_extract_path('{\"a/b\": {\"~\": 7}}'::json, 'a/b', '~')": 7,
        "json_extract_path('{\"a\": 1}', 'missing')": None,
    }
    text_valued = {
        "jsonb_extract_path_text('{\"a\": {\"b\": \"x\"}}'::jsonb, 'a', 'b')": ("x", 25),
        "json_extract_path_text('{\"a\": [1, 2]}', 'a')": ("[1,2]", 25),
        "'{\"a\": \"x\"}'::jsonb ->> 'a'": ("x", 25),
        "jsonb_typeof('{\"a\": 1}'::jsonb)": ("object", 25),
        "json_typeof('[1]')": ("array", 25),
        "jsonb_typeof('1.5')": ("number", 25),
        "jsonb_typeof('18446744073709551615')": ("number", 25),
        "json_typeof('\"s\"')": ("string", 25),
        "json_typeof('false')": ("boolean", 25),
        "jsonb_typeof('null')": ("null", 25),
        "jsonb_array_length('[1, 2, 3]'::jsonb)": (3, 23),
        "json_array_length('[]')": (0, 23),
    }
    with psycopg.connect(dsn(srv), autocommit=True) as c:
        for prepare in (False, True):
            for expr, want in json_valued.items():
                cur = c.execute(f"WITH stations_ids AS (SELECT id AS station FROM stations "
                                f"WHERE id < 3) SELECT {expr} AS v", prepare=prepare)
                assert cur.description[0].type_code == 114, (expr, cur.description[0])
                assert cur.fetchone() == (want,), expr
            for expr, (want, oid) in text_valued.items():
                cur = c.execute(f"SELECT {expr} AS v", prepare=prepare)
                assert cur.description[0].type_code == oid, (expr, cur.description[0])
                assert cur.fetchone() == (want,), expr
        # PostgreSQL's errors for a length that is not an array's
        for text, what in (("'{}'", "a non-array"), ("'3'", "a scalar")):
            with pytest.raises(psycopg.Error) as e:
                c.execute(f"SELECT jsonb_array_length({text})")
            assert f"cannot get array length of {what}" in str(e.value), str(e.value)
        with pytest.raises(psycopg.Error) as e:
            c.execute("SELECT '{not json'::jsonb")
        assert "json" in str(e.value).lower(), str(e.value)
    # psycopg2 (simple protocol) parses json too
    with psycopg2.connect(dsn(srv)) as c2, c2.cursor() as cur:
        cur.execute("SELECT jsonb_build_object('k', jsonb_extract_path('[[1, 2]]', '0', '1'))")
        assert cur.fetchone() == ({"k": 2},) and cur.description[0].type_code == 114


def test_jsonb_operators_and_functions_as_postgresql_gives_them(srv):
    # The jsonb operators as BI tools and people write them: DuckDB's parser
    # reads neither #> #>> ? ?| ?& (`#` is no operator character there, `?`
    # a parameter) nor -> ->> with PostgreSQL's precedence and keys; @> and
    # <@ are containment on jsonb (DuckDB's json_contains searches nested
    # values, and 1 <> 1.0 there), list containment on arrays. Typed as
    # PostgreSQL does (json 114, text 25, bool 16), in both protocols.
    doc = "'{\"a\": {\"b\": [5, {\"c\": \"x\"}]}, \"$k\": 1, \"/p\": 2, \"s\": null}'::jsonb"
    valued = {
        f"{doc} -> 'a' -> 'b' -> 1": ({"c": "x"}, 114),
        f"{doc} -> 'a' -> 'b' ->> 0": ("5", 25),
        f"{doc} ->> 's'": (None, 25),
        "'[1, 2, 3]'::json -> -1": (3, 114),
        "'[1, 2]'::jsonb -> '0'": (None, 114),           # a key, not an index
        f"{doc} -> '$k'": (1, 114),                     # keys as written, not paths
        f"{doc} ->> '/p'": ("2", 25),
        f"{doc} #> '{{a,b,1}}'": ({"c": "x"}, 114),
        f"{doc} #>> '{{a,b,1,c}}'": ("x", 25),
        f"{doc} #>> array['a', 'b', '0']": ("5", 25),
        f"{doc} #> '{{}}'": ({"a": {"b": [5, {"c": "x"}]}, "$k": 1, "/p": 2, "s": None}, 114),
        f"{doc} #> '{{a,nope}}'": (None, 114),
        f"{doc} ? 'a'": (True, 16),
        f"{doc} ? 'b'": (False, 16),                    # top-level keys only
        "'[\"a\", 1]'::jsonb ? 'a'": (True, 16),          # an array's strings
        "'[\"a\", 1]'::jsonb ? '1'": (False, 16),
        f"{doc} ?| array['x', 's']": (True, 16),
        f"{doc} ?| '{{x,y}}'": (False, 16),
        f"{doc} ?& array['a', 's']": (True, 16),
        f"{doc} ?& '{{a,x}}'": (False, 16),
        f"{doc} @> '{{\"a\": {{\"b\": [{{\"c\": \"x\"}}]}}}}'": (True, 16),
        f"{doc} @> '{{\"c\": \"x\"}}'": (False, 16),    # not searched for inside
        "'{\"a\": 1}'::jsonb <@ '{\"a\": 1.0, \"b\": 2}'": (True, 16),
        "'[1, 2, [3]]'::jsonb @> '[3]'": (False, 16),
        "'[1, 2, [3]]'::jsonb @> '[[3]]'": (True, 16),
        "'[\"x\", 1]'::jsonb @> '\"x\"'": (True, 16),      # an array holds a scalar
        "'\"x\"'::jsonb @> '[\"x\"]'": (False, 16),
        "jsonb_contains('{\"a\": [1, 2]}', '{\"a\": [2]}')": (True, 16),
        "jsonb_contained('{\"a\": [2]}', '{\"a\": [1, 2]}')": (True, 16),
        "jsonb_contained('{\"a\": [1, 2]}', '{\"a\": [2]}')": (False, 16),
        "jsonb_exists_any('{\"a\": 1}', array['a'])": (True, 16),
        "ARRAY[1, 2, 3] @> ARRAY[3, 1]": (True, 16),        # arrays: still arrays
        "ARRAY[1] <@ ARRAY[2]": (False, 16),
        "NULL::jsonb -> 'a'": (None, 114),
        "NULL::jsonb ? 'a'": (None, 16),
    }
    with psycopg.connect(dsn(srv), autocommit=True) as c:
        for prepare in (False, True):
            for expr, (want, oid) in valued.items():
                cur = c.execute(f"SELECT {expr} AS v", prepare=prepare)
                assert (cur.fetchone()[0], cur.description[0].type_code) == (want, oid), expr
            # PostgreSQL's precedence: one class for all of them, left to
            # right, tighter than comparison
            assert c.execute(f"SELECT {doc} -> 'a' @> '{{\"b\": [5]}}', {doc} ->> '$k' = '1', "
                             f"{doc} #> '{{a}}' ? 'b'", prepare=prepare).fetchone() == (
                True, True, True)
            # DuckDB's lambda arrow is still one where no key follows
            assert c.execute("SELECT list_transform(tags, v -> v * 10), to_json(info) -> 's' "
                             "FROM trips WHERE trip_id = 2", prepare=prepare).fetchone() == (
                [20, 30], "x2")
            # over a dataset's rows, and a parameter as the key
            assert c.execute("SELECT count(*) FROM trips WHERE to_jsonb(info) @> %s::jsonb",
                             ('{"s": "x7"}',), prepare=prepare).fetchone() == (1,)
            assert c.execute("SELECT count(*) FROM trips WHERE to_jsonb(info) ? %s AND "
                             "(to_jsonb(info) ->> 'k')::int < 10 AND tags @> ARRAY[3::BIGINT]",
                             ("k",), prepare=prepare).fetchone() == (2,)
            assert c.execute("SELECT info ->> 's' FROM (SELECT to_json(info) AS info FROM trips "
                             "WHERE trip_id = 4) t", prepare=prepare).fetchone() == ("x4",)
        # wrong types: PostgreSQL's SQLSTATEs and words
        for text, state, words in (
                ("SELECT 3 -> 'a'", "42883", "operator does not exist: integer -> unknown"),
                ("SELECT true ? 'a'", "42883", "operator does not exist: boolean ? unknown"),
                ("SELECT '{\"a\": 1}'::jsonb @> '{not json'", "22P02",
                 "invalid input syntax for type json"),
                ("SELECT * FROM json_each('[1]')", "22023",
                 "cannot call json_each on a non-object"),
                ("SELECT jsonb_object_keys('[1]')", "22023",
                 "cannot call jsonb_object_keys on an array"),
                ("SELECT json_object_keys('3')", "22023",
                 "cannot call json_object_keys on a scalar"),
                ("SELECT json_array_elements('{}')", "22023",
                 "cannot extract elements from an object")):
            with pytest.raises(psycopg.Error) as e:
                c.execute(text)
            assert (e.value.sqlstate, str(e.value).strip()) == (state, words), text
        # containment compares arrays element by element: bounded, as a
        # call DuckDB cannot interrupt (util/limits.h)
        assert c.execute("SELECT to_jsonb(range(2000)) @> to_jsonb(range(1999, -1, -1))"
                         ).fetchone() == (True,)
        with pytest.raises(psycopg.Error) as e:
            c.execute("SELECT to_jsonb(range(20000)) @> to_jsonb(range(19999, -1, -1))")
        assert e.value.sqlstate == "54000" and "element comparisons" in str(e.value), str(e.value)
        # json[b]_each[_text]: PostgreSQL's two columns, lateral beside a
        # table; json[b]_object_keys as rows, in FROM or the select list
        cur = c.execute("SELECT * FROM json_each('{\"a\": 1, \"b\": [2], \"c\": null}')")
        assert [(d.name, d.type_code) for d in cur.description] == [("key", 25), ("value", 114)]
        assert cur.fetchall() == [("a", 1), ("b", [2]), ("c", None)]
        cur = c.execute("SELECT * FROM jsonb_each_text('{\"a\": 1, \"b\": \"x\", \"c\": null, "
                        "\"d\": {\"e\": 1}}') AS e(k, v)")
        assert [(d.name, d.type_code) for d in cur.description] == [("k", 25), ("v", 25)]
        assert cur.fetchall() == [("a", "1"), ("b", "x"), ("c", None), ("d", '{"e":1}')]
        assert c.execute("SELECT t.trip_id, e.key, e.value FROM trips t, jsonb_each(to_jsonb(t.info)) e "
                         "WHERE t.trip_id < 2 ORDER BY 1, 2").fetchall() == [
            (0, "k", 0), (0, "s", "x0"), (1, "k", 1), (1, "s", "x1")]
        assert c.execute("SELECT * FROM jsonb_each(NULL)").fetchall() == []
        # WITH ORDINALITY: a third column, bigint from 1 in the document's
        # order; aliases name all three; lateral beside a table too
        cur = c.execute("SELECT * FROM jsonb_each('{\"b\": 1, \"a\": [2]}') WITH ORDINALITY")
        assert [(d.name, d.type_code) for d in cur.description] == [
            ("key", 25), ("value", 114), ("ordinality", 20)]
        assert cur.fetchall() == [("b", 1, 1), ("a", [2], 2)]
        cur = c.execute("SELECT e.n, e.k, e.v FROM json_each_text(%s) WITH ORDINALITY AS e(k, v, n) "
                        "WHERE e.n > 1", ('{"z": 1, "y": "w", "x": null}',))
        assert cur.fetchall() == [(2, "y", "w"), (3, "x", None)]
        assert c.execute("SELECT t.trip_id, e.ordinality, e.key FROM trips t, "
                         "jsonb_each(to_jsonb(t.info)) WITH ORDINALITY e "
                         "WHERE t.trip_id = 1 ORDER BY 2").fetchall() == [(1, 1, "k"), (1, 2, "s")]
        cur = c.execute("SELECT jsonb_object_keys('{\"b\": 1, \"a\": [2]}')")
        assert cur.description[0].name == "jsonb_object_keys"
        assert cur.fetchall() == [("b",), ("a",)]
        assert c.execute("SELECT k FROM json_object_keys(%s) AS k ORDER BY 1",
                         ('{"y": 1, "x": 2}',)).fetchall() == [("x",), ("y",)]
    # psycopg2 (simple protocol: the values in the text)
    with psycopg2.connect(dsn(srv)) as c2, c2.cursor() as cur:
        cur.execute("SELECT %s::jsonb #>> '{a,0}', %s::jsonb ? 'a', %s::jsonb @> %s",
                    ('{"a": ["q"]}', '{"a": 1}', '{"a": 1, "b": 2}', '{"b": 2}'))
        assert cur.fetchone() == ("q", True, True)
        cur.execute("SELECT key, value FROM json_each_text(%s) ORDER BY key", ('{"z": 1, "y": "w"}',))
        assert cur.fetchall() == [("y", "w"), ("z", "1")]


def test_json_through_sql_in_duckdb_spelling(srv):
    # /sql speaks DuckDB: its ->, ->> (paths too), json_contains, json_exists,
    # json_keys and json_each pass the gate as they are
    r = requests.post(srv.url("/api/v1/sql"), timeout=30, json={"sql": (
        "SELECT '{\"a\": {\"b\": [1, 2]}}'::JSON -> '$.a.b[1]' AS p, '{\"a\": \"x\"}'::JSON ->> 'a' AS w, "
        "json_contains('{\"a\": 1, \"b\": 2}', '{\"a\": 1}') AS c, json_exists('{\"a\": 1}', '$.a') AS e, "
        "json_keys('{\"a\": 1, \"b\": 2}') AS k, (SELECT count(*) FROM trips WHERE "
        "json_contains(to_json(info), '{\"s\": \"x7\"}')) AS n, "
        "(SELECT list(key ORDER BY key) FROM json_each('{\"q\": 1, \"r\": 2}')) AS each")})
    assert r.status_code == 200, r.text
    assert r.json()["data"] == [{"p": 2, "w": "x", "c": True, "e": True, "k": ["a", "b"], "n": 1,
                                 "each": ["q", "r"]}]


def test_sizes_and_pg_size_pretty(srv):
    # A dataset's size is the bytes of the files its generation read
    # (pg_class.relpages in 8 kB pages); pg_size_pretty as PostgreSQL 15.
    files = {p.stem: p.stat().st_size for p in Path(srv.workdir).glob("*.parquet")}
    with psycopg.connect(dsn(srv), autocommit=True) as c:
        one = lambda sql: c.execute(sql).fetchone()  # noqa: E731
        assert one("SELECT pg_relation_size('trips'), pg_total_relation_size('public.trips'), "
                   "pg_table_size('trips'::regclass), pg_indexes_size('trips'), "
                   "pg_relation_size('trips', 'fsm'), pg_relation_size(NULL)") == (
            files["trips"], files["trips"], files["trips"], 0, 0, None)
        rows = c.execute("SELECT relname, relpages, pg_relation_size(c.oid), "
                         "pg_size_pretty(pg_total_relation_size(c.oid)) FROM pg_class c "
                         "ORDER BY relname").fetchall()
        assert rows == [(n, (files[n] + 8191) // 8192, files[n],
                         f"{files[n]} bytes" if files[n] < 10240 else f"{(files[n] // 512 + 1) // 2} kB")
                        for n in ("stations", "trips")]
        assert one("SELECT pg_database_size(current_database())") == (sum(files.values()),)
        pretty = one("SELECT pg_size_pretty(10239), pg_size_pretty(10240), "
                     "pg_size_pretty(1234567::bigint), pg_size_pretty(-1234567), "
                     "pg_size_pretty(10485760), pg_size_pretty(123456789012::numeric), "
                     "pg_size_pretty(123456789012345678), pg_size_pretty(NULL::bigint)")
        assert pretty == ("10239 bytes", "10 kB", "1206 kB", "-1206 kB", "10 MB", "115 GB",
                          "110 PB", None)
        for sql in ("SELECT pg_relation_size('nope')", "SELECT 'nope'::regclass"):
            with pytest.raises(psycopg.Error) as ei:
                c.execute(sql)
            assert ei.value.sqlstate == "42P01"
            assert str(ei.value).strip() == 'relation "nope" does not exist'
        with pytest.raises(psycopg.Error) as ei:
            c.execute("SELECT 'nope'::regtype")
        assert ei.value.sqlstate == "42704" and str(ei.value).strip() == 'type "nope" does not exist'
        with pytest.raises(psycopg.Error) as ei:
            c.execute("SELECT pg_relation_size('trips', 'x')")
        assert ei.value.sqlstate == "22023" and str(ei.value).strip() == "invalid fork name"


def test_simple_statements_of_one_shape(srv):
    # psycopg2 puts values into the SQL text (simple protocol); statements
    # that differ only in compared constants share the gate's answer
    # (src/pgwire/shapes.c): every answer must still be the statement's own.
    def trip(i):
        return (i, "card" if i % 3 == 0 else "cash", i % 5)

    with psycopg2.connect(dsn(srv)) as c2, c2.cursor() as cur:
        c2.autocommit = True
        q = "SELECT trip_id, payment, station FROM trips WHERE trip_id = %s"
        for v, want in ((7, [trip(7)]), (4242, [trip(4242)]), (99999, []), (0, [trip(0)]),
                        ("12", [trip(12)]), (1.5, []), (3, [trip(3)]),
                        (99999999999999999999, []), (5, [trip(5)])):
            cur.execute(q, (v,))
            assert cur.fetchall() == want, v
        for v, n in (("card", 1667), ("cash", 3333), ("o'brien", 0), ("card", 1667)):
            cur.execute("SELECT count(*) FROM trips WHERE payment = %s", (v,))
            assert cur.fetchone() == (n,), v
        for st, pay in ((1, "card"), (2, "cash"), (4, "card")):
            cur.execute("SELECT count(*) AS n FROM trips WHERE station = %s AND payment = %s",
                        (st, pay))
            assert cur.fetchone() == (sum(1 for i in range(5000) if trip(i)[2] == st and
                                          trip(i)[1] == pay),)
            assert cur.description[0].name == "n"
        for name in ("trips", "stations", "nope"):
            cur.execute("SELECT relname FROM pg_class WHERE relname = %s", (name,))
            assert cur.fetchall() == ([] if name == "nope" else [(name,)])
        # a setting the dialect folds into the statement: SET starts over
        for app, same in (("a", True), ("b", False)):
            cur.execute("SET application_name = %s", (app,))
            cur.execute("SELECT current_setting('application_name') = %s", ("a",))
            assert cur.fetchone() == (same,)
        # refused for its structure, whatever the constants
        for v in (1, 2):
            with pytest.raises(psycopg2.Error):
                cur.execute("SELECT * FROM trips WHERE trip_id = %s; DELETE FROM trips", (v,))
