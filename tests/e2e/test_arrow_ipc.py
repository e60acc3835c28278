"""Arrow IPC writer, checked with a real reader.

For each SQL query of a type matrix, build/vt-arrow-dump writes the result as an
Arrow IPC stream with vitrine's writer (optionally re-cut into sliced batches),
tests/e2e/arrow/read_ipc.mjs decodes it with the npm apache-arrow reader, and
the decoded rows must equal what DuckDB itself reports for the same query
(to_json of each row, through build/vt-sql). Run with /usr/bin/python3 -m pytest;
VITRINE_BUILD names the build directory (default <repo>/build).
"""
import json
import math
import os
import shutil
import struct
import subprocess
from decimal import Decimal
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("VITRINE_BUILD", REPO / "build"))
DUMP = BUILD / "vt-arrow-dump"
VTSQL = BUILD / "vt-sql"
READER = REPO / "tests" / "e2e" / "arrow" / "read_ipc.mjs"
READER2 = REPO / "tests" / "e2e" / "arrow" / "read_ipc_flechette.mjs"

UTC = ["SET TimeZone='UTC'"]
STRING_VIEW = ["SET produce_arrow_string_view=true", "SET arrow_output_version='1.4'"]
LARGE = ["SET arrow_large_buffer_size=true"]
LOSSLESS = ["SET arrow_lossless_conversion=true", "SET arrow_output_version='1.5'"]

# A mixed table of 10,000 rows (several DuckDB chunks) with NULLs everywhere.
BIG = """
SELECT i,
       CASE WHEN i % 7 = 0 THEN NULL ELSE i * 3 END::INTEGER AS n,
       CASE WHEN i % 5 = 0 THEN NULL ELSE i % 3 = 0 END AS flag,
       CASE WHEN i % 11 = 0 THEN NULL ELSE 'row-' || i || repeat('x', i % 17) END AS s,
       CASE WHEN i % 13 = 0 THEN NULL ELSE (i / 7.0)::DOUBLE END AS d,
       CASE WHEN i % 9 = 0 THEN NULL ELSE (i * 1.25)::DECIMAL(12, 2) END AS dec,
       CASE WHEN i % 4 = 0 THEN NULL
            ELSE [j FOR j IN range(i % 5)] END AS l,
       CASE WHEN i % 6 = 0 THEN NULL
            ELSE {'a': i, 'b': CASE WHEN i % 4 = 1 THEN NULL ELSE 's' || i END} END AS st,
       DATE '2000-01-01' + (i % 4000)::INTEGER AS dt,
       TIMESTAMP '2020-01-01' + to_microseconds(i * 1234567) AS ts,
       CASE WHEN i % 3 = 0 THEN NULL ELSE [[i, NULL], [], NULL] END AS ll,
       CASE WHEN i % 8 = 0 THEN NULL ELSE MAP {'k' || (i % 3): i} END AS m,
       [i, i + 1, NULL]::BIGINT[3] AS arr
FROM range(10000) t(i) ORDER BY i
"""

# id -> (setup statements, query, options)
#   slices: batch sizes to re-cut into (0 = DuckDB's own chunks)
#   expect_sql: a query giving DuckDB's view of the same values when the
#               to_json of the query itself differs only in presentation
CASES = {
    "signed_ints": ([], """
        SELECT * FROM (VALUES
          ((-128)::TINYINT, (-32768)::SMALLINT, (-2147483648)::INTEGER, (-9223372036854775808)::BIGINT),
          (127::TINYINT, 32767::SMALLINT, 2147483647::INTEGER, 9223372036854775807::BIGINT),
          (0::TINYINT, -1::SMALLINT, NULL::INTEGER, 1::BIGINT),
          (NULL::TINYINT, NULL::SMALLINT, NULL::INTEGER, NULL::BIGINT)) t(a, b, c, d)""", {}),
    "unsigned_ints": ([], """
        SELECT * FROM (VALUES
          (0::UTINYINT, 0::USMALLINT, 0::UINTEGER, 0::UBIGINT),
          (255::UTINYINT, 65535::USMALLINT, 4294967295::UINTEGER, 18446744073709551615::UBIGINT),
          (NULL::UTINYINT, 7::USMALLINT, NULL::UINTEGER, NULL::UBIGINT)) t(a, b, c, d)""", {}),
    "hugeint": ([], """
        SELECT * FROM (VALUES
          (12345678901234567890123456789012345678::HUGEINT),
          (-12345678901234567890123456789012345678::HUGEINT), (0::HUGEINT), (NULL::HUGEINT)) t(h)""", {}),
    "hugeint_lossless": (LOSSLESS, """
        SELECT * FROM (VALUES
          (170141183460469231731687303715884105727::HUGEINT, 340282366920938463463374607431768211455::UHUGEINT),
          ((-170141183460469231731687303715884105728)::HUGEINT, 0::UHUGEINT),
          (NULL::HUGEINT, NULL::UHUGEINT)) t(h, u)""", {}),
    "uhugeint": ([], """
        SELECT * FROM (VALUES (340282366920938463463374607431768211455::UHUGEINT), (1::UHUGEINT),
                              (NULL::UHUGEINT)) t(u)""", {}),
    "floats": ([], """
        SELECT * FROM (VALUES
          (0.1::FLOAT, 0.1::DOUBLE), (-1.5::FLOAT, -1.5::DOUBLE), (1e20::FLOAT, 1e300::DOUBLE),
          (1e-7::FLOAT, -1e-300::DOUBLE), ('nan'::FLOAT, 'nan'::DOUBLE),
          ('inf'::FLOAT, '-inf'::DOUBLE), (NULL::FLOAT, NULL::DOUBLE)) t(f, d)""", {}),
    "decimals": ([], """
        SELECT * FROM (VALUES
          (1.23::DECIMAL(4,2), 123456.789::DECIMAL(9,3), -123456789012.123456::DECIMAL(18,6),
           1234567890123456789012345678.0123456789::DECIMAL(38,10), 5::DECIMAL(3,0)),
          (-0.05::DECIMAL(4,2), 0::DECIMAL(9,3), 0.000001::DECIMAL(18,6),
           -0.0000000001::DECIMAL(38,10), NULL::DECIMAL(3,0)),
          (NULL, NULL, NULL, NULL, -999::DECIMAL(3,0))) t(a, b, c, d, e)""", {}),
    "decimals_narrow": (LOSSLESS, """
        SELECT 1.23::DECIMAL(4,2) a, -123456.789::DECIMAL(9,3) b, 123456789012.123456::DECIMAL(18,6) c,
               NULL::DECIMAL(4,2) n""", {}),
    "bools": ([], """
        SELECT CASE WHEN i % 5 = 0 THEN NULL ELSE i % 3 = 0 END AS b,
               i % 2 = 0 AS nn
        FROM range(37) t(i) ORDER BY i""", {"slices": [0, 3, 8]}),
    "strings": ([], """
        SELECT * FROM (VALUES ('hello', 'x'::BLOB), ('', ''::BLOB), (NULL, NULL),
          ('ünïcødé ✓ 😀', '\\x00\\xFF\\x5C''"'::BLOB), (repeat('long', 1000), repeat('\\x01', 300)::BLOB),
          ('quote"back\\slash', 'abc'::BLOB)) t(s, b)""", {"slices": [0, 1, 2]}),
    "strings_large": (LARGE, """
        SELECT * FROM (VALUES ('hello', 'x'::BLOB, [1, 2]), (NULL, NULL, NULL), ('', ''::BLOB, []),
          ('ünïcødé', '\\xAB'::BLOB, [NULL])) t(s, b, l)""", {"slices": [0, 1, 3]}),
    "string_view": (STRING_VIEW, """
        SELECT CASE WHEN i % 4 = 0 THEN NULL ELSE 'v' || i || CASE WHEN i % 3 = 0 THEN repeat('-long', 5) ELSE '' END END AS s,
               ('b' || i)::BLOB AS b
        FROM range(3000) t(i) ORDER BY i""", {"slices": [0, 7]}),
    "temporal": (UTC, """
        SELECT * FROM (VALUES
          (DATE '2020-02-29', TIME '01:02:03.5', TIMESTAMP '2020-01-01 01:02:03.123456',
           TIMESTAMPTZ '2021-06-30 12:00:00+02', TIMESTAMP_S '2020-01-01 00:00:01',
           TIMESTAMP_MS '2020-01-01 00:00:00.123', TIMESTAMP_NS '2020-01-01 00:00:00.123456789'),
          (DATE '1969-12-31', TIME '23:59:59.999999', TIMESTAMP '1960-05-06 07:08:09',
           TIMESTAMPTZ '1970-01-01 00:00:00+00', TIMESTAMP_S '1950-01-01 00:00:00',
           TIMESTAMP_MS '1999-12-31 23:59:59.999', TIMESTAMP_NS '2262-04-11 00:00:00'),
          (DATE '0001-01-01', TIME '00:00:00', TIMESTAMP '9999-12-31 23:59:59.999999',
           NULL, NULL, NULL, NULL),
          (NULL, NULL, NULL, NULL, NULL, NULL, NULL)) t(d, tm, ts, tz, ts_s, ts_ms, ts_ns)""",
     {"slices": [0, 1]}),
    "intervals": ([], """
        SELECT * FROM (VALUES (INTERVAL '1 year 3 days 4 seconds'), (INTERVAL '14 months'),
          (INTERVAL '-2 days'), (INTERVAL '1.5 seconds'), (INTERVAL '0 seconds'),
          (INTERVAL '-1 month -3 hours'), (NULL)) t(i)""", {}),
    "lists": ([], """
        SELECT * FROM (VALUES
          ([1, 2, NULL], [['a', NULL], [], NULL], [{'x': 1}, NULL]),
          ([], [], []), (NULL, NULL, NULL),
          ([NULL], [['b']], [{'x': NULL}])) t(a, b, c)""", {"slices": [0, 1, 3]}),
    "arrays": ([], """
        SELECT * FROM (VALUES
          ([1, 2, 3]::INTEGER[3], ['a', NULL]::VARCHAR[2], [[1, 2], [3, 4]]::INTEGER[2][2]),
          (NULL, ['b', 'c']::VARCHAR[2], NULL),
          ([NULL, 5, NULL]::INTEGER[3], NULL, [[NULL, 6], NULL]::INTEGER[2][2])) t(a, b, c)""",
     {"slices": [0, 1, 2]}),
    "structs": ([], """
        SELECT * FROM (VALUES
          ({'a': 1, 'b': 'x', 'c': {'d': [1, 2], 'e': NULL::DOUBLE}}),
          (NULL),
          ({'a': NULL, 'b': NULL, 'c': NULL}),
          ({'a': 4, 'b': 'y', 'c': {'d': [], 'e': 2.5}})) t(s)""", {"slices": [0, 1, 3]}),
    "maps": ([], """
        SELECT * FROM (VALUES
          (MAP {'k': 1, 'l': NULL}, MAP {1: 'a', 2: 'b'}), (MAP {}, MAP {}), (NULL, NULL),
          (MAP {'z': 26}, MAP {3: NULL})) t(a, b)""", {"slices": [0, 1, 3]}),
    "unions": ([], """
        SELECT * FROM (VALUES
          (union_value(n := 1)::UNION(n INTEGER, s VARCHAR)),
          (union_value(s := 'two')::UNION(n INTEGER, s VARCHAR)),
          (NULL), (union_value(n := 3)::UNION(n INTEGER, s VARCHAR))) t(u)""", {"slices": [0, 1, 3]}),
    "uuid": ([], """
        SELECT * FROM (VALUES ('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::UUID),
          ('00000000-0000-0000-0000-000000000000'::UUID), (NULL)) t(u)""", {}),
    "uuid_lossless": (LOSSLESS, """
        SELECT * FROM (VALUES ('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::UUID),
          ('ffffffff-ffff-ffff-ffff-ffffffffffff'::UUID), (NULL)) t(u)""", {"slices": [0, 1]}),
    "enum_dictionary": ([], """
        SELECT CASE WHEN i % 7 = 0 THEN NULL ELSE ['red', 'green', 'blue'][1 + i % 3] END::ENUM('red', 'green', 'blue') AS c,
               i
        FROM range(5000) t(i) ORDER BY i""", {"slices": [0, 999]}),
    "enum_nested": ([], """
        SELECT [c, NULL, c] AS l, {'e': c, 'f': (CASE WHEN i % 2 = 0 THEN 'x' ELSE 'y' END)::ENUM('x', 'y')} AS st,
               c AS top
        FROM (SELECT i, ['a', 'b'][1 + i % 2]::ENUM('a', 'b') AS c FROM range(3000) t(i)) ORDER BY i""",
     {"slices": [0, 5]}),
    "null_type": ([], "SELECT NULL AS n, 1 AS one", {}),
    "json_type": ([], """SELECT '{"x": [1, 2]}'::JSON AS j""",
                  {"expect_sql": """SELECT '{"x": [1, 2]}' AS j"""}),
    "timetz": ([], "SELECT TIMETZ '01:02:03+01' AS t",
               {"expect_sql": "SELECT (TIMETZ '01:02:03+01')::TIME AS t"}),
    "big_mixed": (UTC, BIG, {"slices": [0, 7, 1000], "multi": True}),
    "big_mixed_large": (LARGE + UTC, BIG, {"slices": [0, 333], "multi": True}),
    "empty": ([], "SELECT 1::INTEGER AS a, 'x' AS b, [1] AS l WHERE false", {"slices": [0]}),
}


def run(cmd, **kw):
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120, **kw)
    if res.returncode != 0:
        raise AssertionError(f"{cmd[0]} failed ({res.returncode}): {res.stderr.strip()}")
    return res.stdout


def loads(text):
    # DuckDB's to_json writes NaN/Infinity; parse numbers exactly.
    return json.loads(text, parse_float=Decimal, parse_constant=float)


def duckdb_rows(setup, sql):
    out = run([str(VTSQL), *setup, f"SELECT to_json(q0)::VARCHAR FROM ({sql}) q0"])
    return [loads(json.loads(line)[0]) for line in out.splitlines()]


def same(a, b):
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float, Decimal)) and isinstance(b, (int, float, Decimal)):
        return Decimal(a) == Decimal(b)
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def variants():
    for name, (_, _, opts) in CASES.items():
        for s in opts.get("slices", [0, 1]):
            yield name, s


@pytest.fixture(scope="session")
def decoded(tmp_path_factory):
    """Writes every case's stream and decodes them all with one node run."""
    for tool in (DUMP, VTSQL):
        if not tool.exists():
            pytest.fail(f"{tool} is missing: run make first")
    for pkg in ("apache-arrow", "@uwdata/flechette"):
        if not (REPO / "tests" / "e2e" / "node_modules" / pkg).exists():
            pytest.fail(f"tests/e2e/node_modules/{pkg} is missing: run npm install in tests/e2e")
    node = shutil.which("node")
    assert node, "node is not installed"
    d = tmp_path_factory.mktemp("arrow")
    files, keys, failed = [], [], {}
    for name, s in variants():
        setup, sql, _ = CASES[name]
        f = d / f"{name}-{s}.arrows"
        cmd = [str(DUMP), "-o", str(f)] + (["--slice", str(s)] if s else []) + setup + [sql]
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if res.returncode != 0:  # recorded per case, so one failure hides nothing
            f.write_bytes(b"")
            failed[(name, s)] = f"vt-arrow-dump: {res.stderr.strip()}"
        files.append(f)
        keys.append((name, s))
    lines = run([node, str(READER), *map(str, files)]).splitlines()
    assert len(lines) == len(files)
    out = {k: (f, loads(line)) for k, f, line in zip(keys, files, lines)}
    for k, msg in failed.items():
        out[k] = (out[k][0], {"error": msg})
    return out


def duckdb_rows_many(setup, sqls):
    """duckdb_rows() of each of sqls, after the same setup, in one vt-sql
    (--batch): a list of rows, or an error text, per statement."""
    stmts = [f"SELECT to_json(q0)::VARCHAR FROM ({sql}) q0" for sql in sqls]
    out = run([str(VTSQL), "--batch", *setup], input="\0".join(stmts))
    answers, rows = [], []
    for line in out.split("\n"):
        if not line.strip():
            continue
        v = json.loads(line)
        if isinstance(v, list):
            rows.append(loads(v[0]))
        else:
            answers.append(v["error"] if "error" in v else rows)
            rows = []
    assert len(answers) == len(stmts) and not rows, (len(answers), len(stmts))
    return answers


@pytest.fixture(scope="session")
def expected():
    """DuckDB's rows of every case: one vt-sql per distinct setup, not one
    per case (a process start each)."""
    by_setup = {}
    for name, (setup, sql, opts) in CASES.items():
        by_setup.setdefault(tuple(setup), []).append((name, opts.get("expect_sql", sql)))
    cache = {}
    for setup, cases in by_setup.items():
        answers = duckdb_rows_many(list(setup), [sql for _, sql in cases])
        cache.update((name, a) for (name, _), a in zip(cases, answers))

    def get(name):
        want = cache[name]
        if isinstance(want, str):  # as duckdb_rows() would have failed
            raise AssertionError(f"{VTSQL} failed: {want}")
        return want
    return get


@pytest.mark.parametrize("name,slice_rows", list(variants()))
def test_values_match_duckdb(decoded, expected, name, slice_rows):
    _, got = decoded[(name, slice_rows)]
    assert "error" not in got, got.get("error")
    want = expected(name)
    assert len(got["rows"]) == len(want)
    assert sum(got["batches"]) == len(want)
    for i, (g, w) in enumerate(zip(got["rows"], want)):
        assert same(g, w), f"row {i}: arrow {g!r} != duckdb {w!r}"
    if slice_rows:
        # each DuckDB chunk is re-cut, so every batch is at most slice_rows
        assert all(0 < n <= slice_rows for n in got["batches"])
        assert got["batches"][0] == min(slice_rows, len(want))
    if CASES[name][2].get("multi") and not slice_rows:
        assert len(got["batches"]) > 2  # really several DuckDB chunks


def messages(data):
    """Splits a stream into (metadata, body_length_from_framing) per message,
    checking the framing; returns the messages and whether EOS was seen."""
    pos, out = 0, []
    while pos < len(data):
        cont, mlen = struct.unpack_from("<Ii", data, pos)
        assert cont == 0xFFFFFFFF, f"no continuation marker at {pos}"
        if mlen == 0:
            assert pos + 8 == len(data), "bytes after the end-of-stream marker"
            return out, True
        assert mlen % 8 == 0, "metadata not padded to 8 bytes"
        meta = data[pos + 8:pos + 8 + mlen]
        # Message table: read bodyLength (field 3) through the vtable.
        root = struct.unpack_from("<I", meta, 0)[0]
        vt = root - struct.unpack_from("<i", meta, root)[0]
        vt_len = struct.unpack_from("<H", meta, vt)[0]
        body_len = 0
        if vt_len > 4 + 2 * 3:
            off = struct.unpack_from("<H", meta, vt + 4 + 2 * 3)[0]
            if off:
                body_len = struct.unpack_from("<q", meta, root + off)[0]
        assert body_len % 8 == 0, "body not padded to 8 bytes"
        out.append((meta, body_len))
        pos += 8 + mlen + body_len
    return out, False


def test_empty_result_is_schema_and_eos(decoded):
    f, got = decoded[("empty", 0)]
    msgs, eos = messages(f.read_bytes())
    assert eos
    assert len(msgs) == 1 and msgs[0][1] == 0  # the schema message only
    assert got["rows"] == []
    assert [c["name"] for c in got["schema"]] == ["a", "b", "l"]


@pytest.mark.parametrize("name", ["big_mixed", "enum_dictionary", "string_view", "strings"])
def test_framing(decoded, name):
    f, _ = decoded[(name, 0)]
    data = f.read_bytes()
    msgs, eos = messages(data)
    assert eos and len(msgs) >= 2
    assert len(data) % 8 == 0


def test_dictionary_sent_once(decoded):
    """DuckDB sends the same ENUM dictionary with every chunk; the writer sends
    it only once (a DictionaryBatch message has MessageHeader type 2)."""
    f, got = decoded[("enum_dictionary", 0)]
    msgs, _ = messages(f.read_bytes())

    def header_type(meta):
        root = struct.unpack_from("<I", meta, 0)[0]
        vt = root - struct.unpack_from("<i", meta, root)[0]
        off = struct.unpack_from("<H", meta, vt + 4 + 2 * 1)[0]
        return meta[root + off]
    kinds = [header_type(m) for m, _ in msgs]
    assert kinds[0] == 1 and kinds.count(2) == 1 and kinds[1] == 2
    assert kinds.count(3) == len(got["batches"]) >= 3


def test_schema_types(decoded):
    types = {c["name"]: c["type"] for c in decoded[("temporal", 0)][1]["schema"]}
    assert types == {
        "d": "Date32<DAY>", "tm": "Time64<MICROSECOND>", "ts": "Timestamp<MICROSECOND>",
        "tz": "Timestamp<MICROSECOND, UTC>", "ts_s": "Timestamp<SECOND>",
        "ts_ms": "Timestamp<MILLISECOND>", "ts_ns": "Timestamp<NANOSECOND>",
    }
    s = decoded[("maps", 0)][1]["schema"][0]
    assert s["type"].startswith("Map<") and s["children"][0]["nullable"] is False
    assert decoded[("enum_dictionary", 0)][1]["schema"][0]["type"] == "Dictionary<Uint8, Utf8>"
    assert decoded[("string_view", 0)][1]["schema"][0]["type"] == "Utf8View"
    assert decoded[("strings_large", 0)][1]["schema"][0]["type"] == "LargeUtf8"
    u = decoded[("uuid_lossless", 0)][1]["schema"][0]
    assert u["type"] == "FixedSizeBinary[16]"
    assert u["metadata"]["ARROW:extension:name"] == "arrow.uuid"
    dec = {c["name"]: c["type"] for c in decoded[("decimals_narrow", 0)][1]["schema"]}
    assert dec["a"] == "Decimal[4e+2]"


def test_field_names_and_nullability(tmp_path):
    f = tmp_path / "names.arrows"
    run([str(DUMP), "-o", str(f), 'CREATE TABLE t("we""ird name" INTEGER NOT NULL, "ü" VARCHAR)',
         "INSERT INTO t VALUES (1, 'x')", "SELECT * FROM t"])
    got = loads(run([shutil.which("node"), str(READER), str(f)]))
    assert [c["name"] for c in got["schema"]] == ['we"ird name', "ü"]
    assert got["rows"] == [{'we"ird name': 1, "ü": "x"}]


def test_exotic_types_decode(tmp_path):
    """BIT and BIGNUM travel as DuckDB's own binary encodings (opaque to
    Arrow): they must decode, with the extension metadata kept."""
    f = tmp_path / "exotic.arrows"
    run([str(DUMP), "-o", str(f), "SELECT BIT '0101' AS b, 15::BIGNUM AS v"])
    got = loads(run([shutil.which("node"), str(READER), str(f)]))
    assert "error" not in got
    assert got["schema"][1]["metadata"]["ARROW:extension:name"] == "arrow.opaque"
    assert len(got["rows"]) == 1 and got["rows"][0]["b"]


@pytest.fixture(scope="session")
def exported(decoded, tmp_path_factory):
    """DuckDB's own export (--export-only) of every case: name -> (file,
    vt-arrow-dump's error or None, the reader's line for the writer's stream,
    the reader's line for the export), both streams read by one node run for
    all cases (a node start per case cost more than the checks)."""
    d = tmp_path_factory.mktemp("export-only")
    out, files = {}, []
    for name in [n for n, s in variants() if s == 0]:
        setup, sql, _ = CASES[name]
        g = d / f"{name}.arrows"
        res = subprocess.run([str(DUMP), "-o", str(g), "--export-only"] + setup + [sql],
                             capture_output=True, text=True, timeout=120)
        if res.returncode != 0:
            out[name] = (g, f"{DUMP} failed ({res.returncode}): {res.stderr.strip()}", None, None)
        else:
            files += [decoded[(name, 0)][0], g]
            out[name] = (g, None)
    lines = run([shutil.which("node"), str(READER), *map(str, files)]).splitlines()
    assert len(lines) == len(files)
    pairs = iter(zip(lines[0::2], lines[1::2]))
    for name, v in out.items():
        if v[1] is None:
            mine, theirs = next(pairs)
            out[name] = (v[0], None, json.loads(mine), json.loads(theirs))
    return out


@pytest.mark.parametrize("name", [n for n, s in variants() if s == 0])
def test_direct_conversion_is_duckdbs_export_byte_for_byte(decoded, exported, name):
    """The writer converts plain columns (numbers, dates, times, timestamps,
    booleans, strings, blobs) itself and leaves the rest to DuckDB
    (src/encode/arrow_duckdb.h): every case's stream decodes to what DuckDB's
    own export of every column (--export-only) decodes to, and is as long.
    (Byte for byte in the test below: some of DuckDB's converters leave the
    bytes under a NULL uninitialised, UUID's for one, so whole streams of
    these cases may differ between two runs of the same export.)"""
    f, doc = decoded[(name, 0)]
    assert "error" not in doc, doc.get("error")
    g, error, mine, theirs = exported[name]
    assert error is None, error
    assert len(f.read_bytes()) == len(g.read_bytes())
    assert mine == theirs


def test_direct_conversion_mixed_with_duckdbs(tmp_path):
    """Plain and converted columns interleaved in one batch, NULL patterns
    that end mid-byte, inline (<= 12 bytes) and out-of-line strings, empty
    strings, all-NULL and NULL-free chunks: the same bytes as DuckDB's export
    (its converted columns here have no NULLs, so its bytes are all defined),
    and the reader sees the values."""
    sql = """SELECT CASE WHEN i % 3 = 0 THEN NULL ELSE i % 2 = 0 END AS b,
                    (i * 1.5)::DECIMAL(10, 1) AS dec,
                    CASE WHEN i % 5 = 0 THEN NULL WHEN i % 5 = 1 THEN ''
                         ELSE repeat('ab', i % 9) END AS s,
                    [i]::INTEGER[] AS l,
                    CASE WHEN i < 2048 THEN NULL ELSE i::SMALLINT END AS allnull_first_chunk,
                    (i % 256)::UTINYINT AS u8, i::FLOAT AS f,
                    TIME '00:00:01' + to_microseconds(i) AS tm,
                    (TIMESTAMP '2020-01-01' + to_microseconds(i))::TIMESTAMP_S AS ts_s,
                    (TIMESTAMP '2020-01-01' + to_microseconds(i))::TIMESTAMP_NS AS ts_ns,
                    TIMESTAMPTZ '2020-01-01 00:00:00+00' + to_microseconds(i) AS tz,
                    CASE WHEN i % 7 = 0 THEN NULL ELSE ('\\x00' || i)::BLOB END AS bl
             FROM range(5003) t(i) ORDER BY i"""
    a, b = tmp_path / "a.arrows", tmp_path / "b.arrows"
    run([str(DUMP), "-o", str(a)] + UTC + [sql])
    run([str(DUMP), "-o", str(b), "--export-only"] + UTC + [sql])
    assert a.read_bytes() == b.read_bytes()
    got = loads(run([shutil.which("node"), str(READER), str(a)]))
    assert "error" not in got, got.get("error")
    rows = got["rows"]
    assert len(rows) == 5003
    assert rows[3]["b"] is None and rows[4]["b"] is True and rows[5]["b"] is False
    assert rows[5]["s"] is None and rows[6]["s"] == "" and rows[8]["s"] == "ab" * 8
    assert rows[2047]["allnull_first_chunk"] is None and rows[2048]["allnull_first_chunk"] == 2048
    assert rows[7]["bl"] is None


@pytest.fixture(scope="session")
def decoded2(decoded):
    """The same streams through the second reader (flechette)."""
    keys = list(decoded)
    lines = run([shutil.which("node"), str(READER2), *(str(decoded[k][0]) for k in keys)]).splitlines()
    assert len(lines) == len(keys)
    return {k: json.loads(line) for k, line in zip(keys, lines)}


@pytest.mark.parametrize("name,slice_rows", list(variants()))
def test_second_reader_agrees(decoded, decoded2, name, slice_rows):
    first, second = decoded[(name, slice_rows)][1], decoded2[(name, slice_rows)]
    if "error" in first:
        pytest.fail(first["error"])
    assert "error" not in second, second.get("error")
    assert second["rows"] == len(first["rows"])
    assert second["names"] == [c["name"] for c in first["schema"]]


def loose(got, want):
    """flechette shows 64-bit integers as strings."""
    if isinstance(want, int) and not isinstance(want, bool) and isinstance(got, str):
        return got == str(want)
    if isinstance(want, list):
        return isinstance(got, list) and len(got) == len(want) and all(map(loose, got, want))
    if isinstance(want, dict):
        return isinstance(got, dict) and all(loose(got.get(k), v) for k, v in want.items())
    return same(got, want)


@pytest.mark.parametrize("slice_rows", [0, 3])
def test_list_view_values(tmp_path, slice_rows):
    """LIST as ListView (arrow_output_list_view): apache-arrow 21 cannot read
    list views, so flechette checks them against DuckDB."""
    setup = ["SET arrow_output_list_view=true", "SET arrow_output_version='1.4'"]
    sql = """SELECT [i, NULL, i + 1] AS a,
                    CASE WHEN i % 3 = 0 THEN NULL ELSE [[i], [], NULL] END AS b,
                    CASE WHEN i % 4 = 0 THEN [] ELSE ['s' || i, NULL] END AS c
             FROM range(3000) t(i) ORDER BY i"""
    f = tmp_path / "lv.arrows"
    run([str(DUMP), "-o", str(f)] + (["--slice", str(slice_rows)] if slice_rows else []) + setup + [sql])
    got = json.loads(run([shutil.which("node"), str(READER2), str(f)]))
    assert "error" not in got, got.get("error")
    assert got["typeIds"] == [25, 25, 25]  # ListView
    want = duckdb_rows([], sql)
    assert got["rows"] == len(want)
    for i, (g, w) in enumerate(zip(got["values"], want)):
        assert loose(g, w), f"row {i}: arrow {g!r} != duckdb {w!r}"
