"""Differential test: the query endpoints of the real server against DuckDB
running hand-written reference SQL.

Two seeded corpora of query requests, each request with the SQL a person would
write for it (tests/e2e/querygen.py):

  A  querygen.py as it is, over its own table (15 columns: integers, DOUBLE,
     REAL, DECIMAL, VARCHAR, ENUM-as-VARCHAR, BOOLEAN, DATE, TIMESTAMP,
     TIMESTAMPTZ, TIME, NULLs);
  B  querygen.py's generator over a wider table: the same columns plus every
     other type a Parquet source can carry (SMALLINT, unsigned integers up to
     UBIGINT past 2^63, DECIMAL(4,1)/(18,3)/(38,6), DOUBLE NaN/inf/-0.0/
     subnormals, UUID, BLOB, INTERVAL, LIST, STRUCT, MAP, TIMESTAMP_NS,
     TIMETZ, JSON). The extra types get their own values and reference SQL
     here (ExtGen); requests the service must refuse (order_by or min/max on a
     nested column, plus a few injected mistakes) must be 400 with the
     expected stable code.

Each corpus also gets index-targeted requests (only eq/in predicates on
indexed columns, no order_by): on the resident datasets they are answered by
the equality index fast path, whose rows must come back in table order, so
they are compared in order against `... ORDER BY id`.

Every request goes to a resident dataset (index fast path or DuckDB) and to a
lazy one (DuckDB over the Parquet file): paged JSON (/query), some of them
also as paged Arrow (?format=arrow), full Arrow streams (/query/stream) and
/count. Arrow is decoded by the apache-arrow reader (arrow/read_ipc.mjs).
Results are compared with DuckDB's answer to the reference SQL (build/vt-sql,
over the same Parquet file): the same rows, in order when the request has a
total order, as multisets otherwise; the same counts. Values are compared by
type: integers exactly, floats as the shortest round-trip text (compared as
exact decimals with DuckDB's own shortest text), decimals as exact text with
every scale digit, dates, timestamps (T, Z for TIMESTAMPTZ), TIMETZ, blobs
(base64), intervals (ISO 8601), UUIDs, JSON values, lists, structs and maps.

Seeds: VT_DIFF_SEED (default 1) and VT_DIFF_COUNT (default 320 requests for
A, 220 for B) explore other corpora locally.
"""
import base64
import collections
import contextlib
import datetime as dt
import json
import math
import os
import random
import re
import struct
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from decimal import Context, Decimal
from pathlib import Path

import requests

import querygen
from conftest import REPO, VTSQL, dataset_block, server_block, sql
from s3_fixtures import moto  # noqa: F401 (fixture)

HERE = Path(__file__).resolve().parent
READ_IPC = HERE / "arrow" / "read_ipc.mjs"
MAX_PAGE_SIZE = 500
SEED = int(os.environ.get("VT_DIFF_SEED", "1"))
COUNT = int(os.environ.get("VT_DIFF_COUNT", "0")) or None

# The reference does not need a sanitizer build: prefer the plain vt-sql when
# it exists (it starts ~2x faster than the ASan one).
_PLAIN_VTSQL = REPO / "build" / "vt-sql"
REF_SQL = _PLAIN_VTSQL if _PLAIN_VTSQL.exists() else VTSQL

STABLE_CODES = {"invalid_query", "unknown_field", "unknown_column", "unknown_operator",
                "invalid_operator", "invalid_value", "invalid_aggregation", "invalid_order",
                "invalid_having", "invalid_combination", "limit_exceeded"}

# ----------------------------------------------------------------- the wide table

UTC = dt.timezone.utc
WIDE = Context(prec=80)
EXTRA = [
    ("si", "SMALLINT", "int"),
    ("ut", "UTINYINT", "int"),
    ("us", "USMALLINT", "int"),
    ("ui", "UINTEGER", "int"),
    ("ub", "UBIGINT", "u64"),
    ("d4", "DECIMAL(4,1)", "decx"),
    ("d18", "DECIMAL(18,3)", "decx"),
    ("d38", "DECIMAL(38,6)", "decwide"),
    ("sp", "DOUBLE", "special"),
    ("u", "UUID", "uuid"),
    ("bl", "BLOB", "opaque"),
    ("iv", "INTERVAL", "opaque"),
    ("l", "INTEGER[]", "nested"),
    ("st", "STRUCT(a INTEGER, b VARCHAR)", "nested"),
    ("m", "MAP(VARCHAR, INTEGER)", "nested"),
    ("tns", "TIMESTAMP_NS", "tsns"),
    ("ttz", "TIMETZ", "timetz"),
    ("js", "JSON", "jsontext"),
]
NEW_CLASSES = {"u64", "decx", "decwide", "special", "uuid", "opaque", "nested", "tsns", "timetz",
               "jsontext"}
NESTED = {n for n, _, c in EXTRA if c == "nested"}
SPECIAL_DOUBLES = [float("nan"), float("inf"), float("-inf"), -0.0, 0.0, 1e300, -1e-300, 5e-324,
                   1e21, 1e-7, 123456789.125, 0.1, 2.5, 1 / 3, -7.0]
U64S = [0, 7, 2**63, 2**64 - 1, 2**64 - 2048, 10**19, 2**63 - 1, 2**53 + 1]
UUIDS = ["%032x" % random.Random(k).getrandbits(128) for k in range(40)]
UUIDS = ["%s-%s-%s-%s-%s" % (h[:8], h[8:12], h[12:16], h[16:20], h[20:]) for h in UUIDS]
JSONS = ['{"a":1}', '[1,2,3]', '"str"', '42', '{"k":{"n":[true,false]}}', '1.5', '{}', '[]',
         '"o\'q"']
WORDS = ["x", "y z", "ab", "Q"]


def _ext_values(rid, rng):
    def maybe(v, p=0.15):
        return None if rng.random() < p else v

    return {
        "si": maybe(rng.choice([-32768, 32767, rng.randint(-50, 50), rng.randint(-50, 50)])),
        "ut": maybe(rng.choice([0, 255, rng.randint(0, 20), rng.randint(0, 20)])),
        "us": maybe(rng.choice([0, 65535, rng.randint(0, 30)])),
        "ui": maybe(rng.choice([0, 4294967295, rng.randint(0, 40)])),
        "ub": maybe(rng.choice(U64S + [rng.randint(0, 50)])),
        "d4": maybe(Decimal(rng.choice([-9999, 9999, rng.randint(-999, 999)])).scaleb(-1, WIDE)),
        "d18": maybe(Decimal(rng.choice([rng.randint(-10**15, 10**15), rng.randint(-5000, 5000)]))
                     .scaleb(-3, WIDE)),
        "d38": maybe(Decimal(rng.choice([rng.randint(-10**30, 10**30), rng.randint(-10**7, 10**7)]))
                     .scaleb(-6, WIDE)),
        "sp": maybe(rng.choice(SPECIAL_DOUBLES)),
        "u": maybe(rng.choice(UUIDS)),
        "bl": maybe(bytes(rng.choice([b"", b"\\'\"", b"\x00\xff", bytes(
            rng.randrange(256) for _ in range(rng.randint(1, 6)))]))),
        # Parquet intervals: unsigned months, days and milliseconds.
        "iv": maybe((rng.choice([0, 0, 1, 14, 25]), rng.choice([0, 2, 1, 40]),
                     rng.choice([0, 0, 1000, 5_500_000, 3_600_000_000, 86_399_999_000]))),
        "l": maybe([rng.choice([None, rng.randint(-5, 5)]) for _ in range(rng.randint(0, 3))]),
        "st": maybe({"a": rng.choice([None, rng.randint(-9, 9)]), "b": rng.choice([None] + WORDS)}),
        "m": maybe({k: rng.choice([None, rng.randint(0, 9)]) for k in rng.sample(WORDS, rng.randint(0, 2))}),
        "tns": maybe((querygen.EPOCH + dt.timedelta(seconds=rng.randrange(0, 40 * 86400)),
                      rng.choice([0, 1, 500, 123456789, 999999999, 250000000]))),
        "ttz": maybe(dt.time(rng.randint(0, 23), rng.choice([0, 30, 59]), rng.choice([0, 15]),
                             rng.choice([0, 0, 500000]))),
        "js": maybe(rng.choice(JSONS)),
    }


def _ext_literal(name, v):
    q = querygen.sql_str
    if v is None:
        return "NULL"
    if name in ("si", "ut", "us", "ui", "ub"):
        return str(v)
    if name in ("d4", "d18", "d38"):
        return q(str(v))
    if name == "sp":
        return "CAST(%s AS DOUBLE)" % q(repr(v))
    if name == "u":
        return q(v)
    if name == "bl":
        return "from_hex(%s)" % q(v.hex())
    if name == "iv":
        return "INTERVAL %s" % q("%d months %d days %d microseconds" % v)
    if name == "l":
        return "[%s]::INTEGER[]" % ", ".join("NULL" if x is None else str(x) for x in v)
    if name == "st":
        return "{'a': %s, 'b': %s}" % ("NULL" if v["a"] is None else v["a"],
                                       "NULL" if v["b"] is None else q(v["b"]))
    if name == "m":
        if not v:
            return "MAP {}"
        return "MAP {%s}" % ", ".join("%s: %s" % (q(k), "NULL" if x is None else x) for k, x in v.items())
    if name == "tns":
        base, ns = v
        return "TIMESTAMP_NS %s" % q(base.strftime("%Y-%m-%d %H:%M:%S") + ".%09d" % ns)
    if name == "ttz":
        return "TIMETZ %s" % q(v.isoformat() + "+00")
    if name == "js":
        return q(v)
    raise ValueError(name)


_base_make_rows = querygen.make_rows


def ext_make_rows():
    rows = _base_make_rows()
    rng = random.Random(4242)
    for r in rows:
        r.update(_ext_values(r["id"], rng))
    return rows


def ext_ddl():
    rows = ext_make_rows()
    cols = ", ".join("%s %s" % (querygen.quote(n), t) for n, t, _ in EXTRA)
    values = ", ".join("(%d, %s)" % (r["id"], ", ".join(_ext_literal(n, r[n]) for n, _, _ in EXTRA))
                       for r in rows)
    return querygen.ddl() + [
        "CREATE TABLE ext (id INTEGER, %s)" % cols,
        "INSERT INTO ext VALUES " + values,
        "CREATE TABLE wide AS SELECT t.*, ext.* EXCLUDE (id) FROM t JOIN ext USING (id) ORDER BY id",
    ]


@contextlib.contextmanager
def extended_querygen():
    """querygen's generator over the wide table: its module globals describe
    the table, so they are swapped while corpus B is generated."""
    saved = (querygen.COLUMNS, querygen.NAMES, querygen.CLASS, querygen.make_rows)
    cols = querygen.COLUMNS + EXTRA
    querygen.COLUMNS = cols
    querygen.NAMES = [n for n, _, _ in cols]
    querygen.CLASS = {n: c for n, _, c in cols}
    querygen.make_rows = ext_make_rows
    try:
        yield
    finally:
        querygen.COLUMNS, querygen.NAMES, querygen.CLASS, querygen.make_rows = saved


def dbl(x):
    """A DOUBLE literal (a bare 2.5 would be a DECIMAL literal in DuckDB)."""
    return "CAST(%s AS DOUBLE)" % querygen.sql_str(repr(float(x)))


class ExtGen(querygen.Gen):
    """querygen.Gen plus values and predicates for the wide table's extra types."""

    def value(self, cls, col=None, src=None):
        if cls == "jsontext":
            cls = "string"
        if cls not in NEW_CLASSES:
            return super().value(cls, col, src)
        rng = self.rng
        pick = (lambda: self.data(src)) if src else None
        if cls == "u64":
            v = pick() if pick and rng.random() < 0.7 else rng.choice(U64S + [rng.randint(0, 60)])
            if isinstance(v, float):
                v = int(v)
            k = rng.random()
            if v < 2**63 and k < 0.6:
                return v, str(v)                      # a JSON integer
            if k < 0.8 and v < 2**62:
                return v + 0.5, repr(v + 0.5)        # fractional: matches nothing
            f = float(v)                              # past int64 only a real fits
            return f, str(int(f))                     # (2^64-1 rounds to 2^64)
        if cls == "decx":
            v = pick() if pick and rng.random() < 0.7 else Decimal(rng.randint(-20000, 20000)).scaleb(-2, WIDE)
            if isinstance(v, float):
                return v, dbl(v)
            if rng.random() < 0.2:
                v += Decimal("0.0005")
            jv = float(v)
            if jv == int(jv) and rng.random() < 0.5:
                jv = int(jv)
            return jv, "CAST(%s AS DECIMAL(38,6))" % querygen.sql_str(str(v))
        if cls == "decwide":
            # Documented: DECIMAL columns compare with DOUBLE values.
            v = pick() if pick and rng.random() < 0.7 else Decimal(rng.randint(-10**9, 10**9)).scaleb(-3, WIDE)
            return float(v), dbl(float(v))
        if cls == "special":
            v = pick() if pick and rng.random() < 0.7 else rng.choice(SPECIAL_DOUBLES)
            if v is None or not math.isfinite(v):
                v = rng.choice([0.0, 1e21, -1.5, 5e-324])
            return v, dbl(v)
        if cls == "uuid":
            u = pick() if pick and rng.random() < 0.8 else rng.choice(UUIDS + [
                "00000000-0000-0000-0000-000000000000", "ffffffff-ffff-ffff-ffff-ffffffffffff"])
            text = u
            if rng.random() < 0.3:
                text = text.upper()
            if rng.random() < 0.3:
                text = text.replace("-", "")
            return text, "CAST(%s AS UUID)" % querygen.sql_str(u)
        if cls == "tsns":
            base, ns = pick() if pick and rng.random() < 0.7 else (
                querygen.EPOCH + dt.timedelta(days=rng.randint(-5, 45)), rng.choice([0, 0, 5, 999999999]))
            off = rng.choice([None, None, 0, 90, -300])
            local = base if off is None else base + dt.timedelta(minutes=off)
            if ns == 0 and base.time() == dt.time() and rng.random() < 0.4:
                text = base.date().isoformat()
            else:
                frac = ""
                if ns:
                    frac = "." + ("%09d" % ns)[: rng.choice([9, 9, len(("%09d" % ns).rstrip("0"))])]
                    ns = int(frac[1:].ljust(9, "0"))
                text = local.strftime("%Y-%m-%d") + rng.choice(["T", " "]) + local.strftime("%H:%M:%S") + frac
                if off is not None:
                    text += "Z" if off == 0 else "%s%02d:%02d" % ("+" if off > 0 else "-", abs(off) // 60,
                                                                 abs(off) % 60)
            return text, "TIMESTAMP_NS %s" % querygen.sql_str(
                base.strftime("%Y-%m-%d %H:%M:%S") + ".%09d" % ns)
        if cls == "timetz":
            t = pick() if pick and rng.random() < 0.7 else dt.time(rng.randint(0, 23), rng.choice([0, 30]))
            off = rng.choice([None, 0, 120, -90])
            text = t.isoformat()
            if off is None:
                lit = text + "+00"
            else:
                sign = "+" if off >= 0 else "-"
                suffix = "%s%02d:%02d" % (sign, abs(off) // 60, abs(off) % 60)
                if off == 0 and rng.random() < 0.5:
                    suffix = "Z"
                text += suffix
                lit = t.isoformat() + ("+00" if suffix == "Z" else suffix)
            return text, "TIMETZ %s" % querygen.sql_str(lit)
        raise ValueError(cls)

    def predicate(self, col, cls, lhs, src):
        if cls == "jsontext":
            # A JSON column is a string column (schema: logical "string"):
            # it compares as its text, like the index does.
            return super().predicate(col, "string", "CAST(%s AS VARCHAR)" % lhs, src)
        if cls not in NEW_CLASSES:
            return super().predicate(col, cls, lhs, src)
        rng = self.rng
        if cls in ("opaque", "nested"):
            op = rng.choice(["is_null", "is_not_null"])
            return {"col": col, "op": op}, "%s IS %sNULL" % (lhs, "NOT " if op == "is_not_null" else "")
        op = rng.choice(["eq", "neq", "gt", "gte", "lt", "lte", "in", "between", "is_null",
                         "is_not_null"])
        lhs_v = "CAST(%s AS DOUBLE)" % lhs if cls == "decwide" else lhs
        if op in ("is_null", "is_not_null"):
            return {"col": col, "op": op}, "%s IS %sNULL" % (lhs, "NOT " if op == "is_not_null" else "")
        if op == "in":
            pairs = [self.value(cls, col, src) for _ in range(rng.choice([0, 1, 2, 4, 40]))]
            p = {"col": col, "op": "in", "val": [v for v, _ in pairs]}
            if not pairs:
                return p, "false"
            return p, "(" + " OR ".join("%s = %s" % (lhs_v, lit) for _, lit in pairs) + ")"
        if op == "between":
            (a, la), (b, lb) = self.value(cls, col, src), self.value(cls, col, src)
            return {"col": col, "op": op, "val": [a, b]}, "%s BETWEEN %s AND %s" % (lhs_v, la, lb)
        v, lit = self.value(cls, col, src)
        sym = {"eq": "=", "neq": "<>", "gt": ">", "gte": ">=", "lt": "<", "lte": "<="}[op]
        return {"col": col, "op": op, "val": v}, "%s %s %s" % (lhs_v, sym, lit)

    # Mistakes a client makes, each with the code the service documents.
    MISTAKES = [
        ({"col": "bl", "op": "eq", "val": "x"}, "invalid_operator"),
        ({"col": "iv", "op": "gt", "val": "P1D"}, "invalid_operator"),
        ({"col": "l", "op": "in", "val": [1]}, "invalid_operator"),
        ({"col": "i", "op": "like", "val": "1%"}, "invalid_operator"),
        ({"col": "dt", "op": "gt", "val": "2024-13-01"}, "invalid_value"),
        ({"col": "i", "op": "eq", "val": "3"}, "invalid_value"),
        ({"col": "s", "op": "eq", "val": 3}, "invalid_value"),
        ({"col": "b", "op": "eq", "val": 1}, "invalid_value"),
        ({"col": "u", "op": "eq", "val": "not-a-uuid"}, "invalid_value"),
        ({"col": "tm", "op": "eq", "val": "10:00:00+02:00"}, "invalid_value"),
        ({"col": "ts", "op": "eq", "val": "2024-01-01T00:00:00.1234567"}, "invalid_value"),
        ({"col": "tns", "op": "eq", "val": "2024-01-01T00:00:00.1234567891"}, "invalid_value"),
        ({"col": "i", "op": "in", "val": [1, None]}, "invalid_value"),
        ({"col": "i", "op": "between", "val": [1]}, "invalid_value"),
        ({"col": "i", "op": "eq"}, "invalid_value"),
        ({"col": "nope", "op": "eq", "val": 1}, "unknown_column"),
        ({"col": "I", "op": "eq", "val": 1}, "unknown_column"),
        ({"col": "i", "op": "approx", "val": 1}, "unknown_operator"),
    ]

    def request(self, mode):
        req, sql_text, ordered, names = super().request(mode)
        rng = self.rng
        k = rng.random()
        if k >= 0.08:
            return req, sql_text, ordered, names, None
        req = json.loads(json.dumps(req))
        if k < 0.06:
            bad, code = rng.choice(self.MISTAKES)
            preds = req.setdefault("predicates", [])
            preds.insert(rng.randint(0, len(preds)), bad)
            return req, None, None, None, {code}
        others = [
            ({"aggregations": [{"op": "sum", "col": "s"}], "group_by": ["cat"]}, "invalid_aggregation"),
            ({"aggregations": [{"op": "min", "col": "bl"}]}, "invalid_combination"),
            ({"having": [{"col": "i", "op": "gt", "val": 1}]}, "invalid_combination"),
            ({"group_by": ["cat"], "distinct": True}, "invalid_combination"),
            ({"order_by": [{"col": "m"}]}, "invalid_order"),
            ({"columns": ["i", "i"]}, "invalid_query"),
            ({"predicate": []}, "unknown_field"),
        ]
        extra, code = rng.choice(others)
        # Only the mistake: the shape fields of the generated request go.
        for key in ("group_by", "aggregations", "having", "distinct", "order_by", "columns"):
            req.pop(key, None)
        req.update(extra)
        return req, None, None, None, {code}


def natural_errors(req):
    """Codes the service must answer for a generated request it has to refuse
    (none for a valid one)."""
    codes = set()
    aggs = req.get("aggregations") or []
    if any(a.get("op") in ("min", "max") and a.get("col") in NESTED for a in aggs):
        codes.add("invalid_aggregation")
    if not req.get("group_by") and any(o["col"] in NESTED for o in req.get("order_by") or []):
        codes.add("invalid_order")
    return codes


# ------------------------------------------------------------ index-targeted requests

def index_request(g, mode, indexed_pool):
    """Only eq/in predicates on indexed columns, no order: the fast path on a
    resident dataset. The reference orders by id: rows must come in table order."""
    rng = g.rng
    preds, where = [], []
    # Most values come from one row, so that ANDed terms still match rows.
    row = rng.choice(g.rows)
    for col in rng.sample(indexed_pool, rng.choice([1, 1, 1, 2, 3])):
        cls = querygen.CLASS[col]
        lhs = querygen.quote(col)
        if cls == "jsontext":
            lhs = "CAST(%s AS VARCHAR)" % lhs

        def one():
            v = row[col]
            if v is not None and rng.random() < 0.7:
                if isinstance(v, bool):
                    return v, "true" if v else "false"
                if isinstance(v, str):
                    return v, querygen.sql_str(v)
                if v >= 2**63:  # past int64 only a real fits; 2^64-1 rounds to 2^64
                    return float(v), str(int(float(v)))
                return v, str(v)
            v, lit = g.value(cls, col, col)
            return v, str(v) if lit is None else lit

        if rng.random() < 0.5:
            v, lit = one()
            preds.append({"col": col, "op": "eq", "val": v})
            where.append("%s = %s" % (lhs, lit))
        else:
            pairs = [one() for _ in range(rng.choice([0, 1, 2, 3, 6]))]
            preds.append({"col": col, "op": "in", "val": [v for v, _ in pairs]})
            where.append("(" + " OR ".join("%s = %s" % (lhs, lit) for _, lit in pairs) + ")"
                         if pairs else "false")
    req = {"predicates": preds}
    names = list(querygen.NAMES)
    if rng.random() < 0.5:
        names = rng.sample(querygen.NAMES, rng.randint(1, 5))
        req["columns"] = names
    cond = " WHERE " + " AND ".join(where)
    if mode == "count":
        return req, "SELECT count(*) AS \"count\" FROM t" + cond, True, ["count"], None
    page, page_size, limit = 1, 1000, None
    if rng.random() < 0.6:
        page = rng.choice([1, 2, 3])
        page_size = rng.choice([1, 2, 5, 20])
        req["page"], req["page_size"] = page, page_size
        if rng.random() < 0.4:
            limit = rng.choice([0, 3, 9])
            req["limit"] = limit
    off = (page - 1) * page_size
    n = page_size if limit is None else max(0, min(page_size, limit - off))
    sql_text = "SELECT %s FROM t%s ORDER BY \"id\" LIMIT %d OFFSET %d" % (
        ", ".join(querygen.quote(c) for c in names), cond, n, off)
    return req, sql_text, True, names, None


# ------------------------------------------------------------------------ values

class RawInt(str):
    pass


class RawFloat(str):
    pass


def loads_raw(text):
    """JSON with numbers kept as their text (exact comparison of digits)."""
    return json.loads(text, parse_int=RawInt, parse_float=RawFloat,
                      parse_constant=lambda c: RawFloat(c))


def unraw(v):
    if isinstance(v, RawInt):
        return int(v)
    if isinstance(v, RawFloat):
        return float(v)
    if isinstance(v, list):
        return [unraw(x) for x in v]
    if isinstance(v, dict):
        return {k: unraw(x) for k, x in v.items()}
    return v


INT_TYPES = {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
             "UINTEGER", "UBIGINT", "UHUGEINT"}


def family(t):
    if t in INT_TYPES:
        return "int"
    if t.startswith("DECIMAL"):
        return "dec"
    return {"BOOLEAN": "bool", "FLOAT": "f32", "DOUBLE": "f64", "VARCHAR": "str", "UUID": "str",
            "DATE": "str", "TIME": "str", "JSON": "json", "TIMESTAMP": "ts", "TIMESTAMP_NS": "ts",
            "TIMESTAMP_MS": "ts", "TIMESTAMP_S": "ts", "TIMESTAMP WITH TIME ZONE": "tstz",
            "TIME WITH TIME ZONE": "timetz", "BLOB": "blob", "INTERVAL": "interval",
            "INTEGER[]": "list", "STRUCT(a INTEGER, b VARCHAR)": "struct",
            "MAP(VARCHAR, INTEGER)": "map"}[t]


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def blob_from_text(s):
    out = bytearray()
    i = 0
    while i < len(s):
        if s.startswith("\\x", i):
            out.append(int(s[i + 2:i + 4], 16))
            i += 4
        else:
            out += s[i].encode()
            i += 1
    return bytes(out)


_IV_PART = re.compile(r"(-?\d+) (year|month|day)s?")
_IV_TIME = re.compile(r"(-)?(\d+):(\d\d):(\d\d)(?:\.(\d+))?$")


def interval_from_text(s):
    """DuckDB's interval text ("1 year 2 months -3 days 04:05:06.5")."""
    months = days = micros = 0
    rest = s
    for m in _IV_PART.finditer(s):
        n = int(m.group(1))
        months += 12 * n if m.group(2) == "year" else n if m.group(2) == "month" else 0
        days += n if m.group(2) == "day" else 0
    rest = _IV_PART.sub("", s).strip()
    if rest:
        m = _IV_TIME.match(rest)
        assert m, s
        us = (int(m.group(2)) * 3600 + int(m.group(3)) * 60 + int(m.group(4))) * 10**6
        us += int((m.group(5) or "").ljust(6, "0")[:6] or 0)
        micros = -us if m.group(1) else us
    return months, days, micros


def interval_iso(months, days, micros):
    """The ISO 8601 duration PostgreSQL's intervalstyle iso_8601 writes."""
    def tr(a, b):
        q = abs(a) // b
        return q if a >= 0 else -q

    y = tr(months, 12)
    mo = months - 12 * y
    out = "P" + ("%dY" % y if y else "") + ("%dM" % mo if mo else "") + ("%dD" % days if days else "")
    h = tr(micros, 3600 * 10**6)
    rem = micros - h * 3600 * 10**6
    mi = tr(rem, 60 * 10**6)
    rem -= mi * 60 * 10**6
    t = ("%dH" % h if h else "") + ("%dM" % mi if mi else "")
    if rem:
        sec = "%s%d" % ("-" if rem < 0 else "", abs(rem) // 10**6)
        frac = abs(rem) % 10**6
        if frac:
            sec += ("." + "%06d" % frac).rstrip("0")
        t += sec + "S"
    if t:
        out += "T" + t
    return "PT0S" if out == "P" else out


_ISO_IV = re.compile(r"P(?:(-?\d+)Y)?(?:(-?\d+)M)?(?:(-?\d+)D)?(?:T(?:(-?\d+)H)?(?:(-?\d+)M)?"
                     r"(?:(-?\d+(?:\.\d+)?)S)?)?$")


def interval_from_iso(s):
    m = _ISO_IV.match(s)
    assert m, "not an ISO 8601 duration: %r" % s
    y, mo, d, h, mi, sec = (m.group(k) for k in range(1, 7))
    micros = int(h or 0) * 3600 * 10**6 + int(mi or 0) * 60 * 10**6
    if sec:
        micros += int(Decimal(sec) * 10**6)
    return int(y or 0) * 12 + int(mo or 0), int(d or 0), micros


def null_or(f):
    return lambda x: None if x == "NULL" else f(x)


def parse_list_text(s):
    assert s[0] == "[" and s[-1] == "]", s
    body = s[1:-1]
    return tuple(null_or(int)(x) for x in body.split(", ")) if body else ()


def parse_struct_text(s):
    m = re.fullmatch(r"\{'a': (NULL|-?\d+), 'b': (.*)\}", s)
    assert m, s
    return (("a", null_or(int)(m.group(1))), ("b", null_or(str)(m.group(2))))


def parse_map_text(s):
    assert s[0] == "{" and s[-1] == "}", s
    body = s[1:-1]
    out = []
    for item in body.split(", ") if body else []:
        k, v = item.split("=")
        out.append((k, null_or(int)(v)))
    return tuple(out)


_FLOAT_JSON = re.compile(r"-?\d+\.\d+|-?\d+(?:\.\d+)?e-?\d+")
_DEC_JSON = re.compile(r"-?\d+(?:\.\d+)?")


def hashable(v):
    if isinstance(v, dict):
        return tuple((k, hashable(x)) for k, x in v.items())
    if isinstance(v, list):
        return tuple(hashable(x) for x in v)
    return v


def canon_ref(fam, t, target):
    """DuckDB's text of a value (vt-sql) in the comparable form for `target`
    ("json" or "arrow")."""
    if t is None:
        return None
    if fam == "int":
        return int(t)
    if fam in ("f32", "f64"):
        if target == "json":
            return None if t in ("nan", "-nan", "inf", "-inf") else Decimal(t)
        if t in ("nan", "-nan"):
            return "nan"
        return f32(float(t)) if fam == "f32" else float(t)
    if fam == "bool":
        assert t in ("true", "false"), t
        return t == "true"
    if fam == "timetz":
        m = re.fullmatch(r"(.*)([+-]\d\d)(?::(\d\d))?", t)
        return "%s%s:%s" % (m.group(1), m.group(2), m.group(3) or "00") if target == "json" else m.group(1)
    if fam == "blob":
        return blob_from_text(t)
    if fam == "interval":
        return interval_from_text(t)
    if fam == "json":
        return hashable(json.loads(t))
    if fam == "list":
        return parse_list_text(t)
    if fam == "struct":
        return parse_struct_text(t)
    if fam == "map":
        return parse_map_text(t)
    return t  # str, dec, date, time, ts, tstz: DuckDB's text is the form


def canon_json(fam, j):
    """A value of our JSON output (numbers as raw text) in comparable form;
    fails on any formatting the design rules out."""
    if j is None:
        return None
    if fam == "int":
        assert isinstance(j, RawInt), "integer expected, got %r" % (j,)
        return int(j)
    if fam in ("f32", "f64"):
        assert isinstance(j, RawFloat) and _FLOAT_JSON.fullmatch(j), "float text %r" % (j,)
        return Decimal(j)
    if fam == "dec":
        assert isinstance(j, (RawInt, RawFloat)) and _DEC_JSON.fullmatch(j), "decimal text %r" % (j,)
        return str(j)
    if fam == "bool":
        assert isinstance(j, bool), j
        return j
    if fam == "str":
        assert isinstance(j, str) and not isinstance(j, (RawInt, RawFloat)), j
        return j
    if fam == "ts":
        assert isinstance(j, str) and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d*[1-9])?", j), j
        return j.replace("T", " ")
    if fam == "tstz":
        assert isinstance(j, str) and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d*[1-9])?Z", j), j
        return j[:-1].replace("T", " ") + "+00"
    if fam == "timetz":
        assert re.fullmatch(r"\d\d:\d\d:\d\d(\.\d*[1-9])?[+-]\d\d:\d\d", j), j
        return j
    if fam == "blob":
        raw = base64.b64decode(j, validate=True)
        assert base64.b64encode(raw).decode() == j, j
        return raw
    if fam == "interval":
        v = interval_from_iso(j)
        assert interval_iso(*v) == j, "interval %r is not canonical (%r)" % (j, interval_iso(*v))
        return v
    if fam == "json":
        return hashable(unraw(j))
    if fam == "list":
        assert isinstance(j, list), j
        return tuple(canon_json("int", x) for x in j)
    if fam == "struct":
        assert isinstance(j, dict) and list(j) == ["a", "b"], j
        return (("a", canon_json("int", j["a"])), ("b", canon_json("str", j["b"])))
    if fam == "map":
        assert isinstance(j, dict), j
        return tuple((k, canon_json("int", x)) for k, x in j.items())
    raise ValueError(fam)


def canon_arrow(fam, a):
    """A cell as read_ipc.mjs renders it (DuckDB-like text) in comparable form."""
    if a is None:
        return None
    if fam == "int":
        return int(a)
    if fam in ("f32", "f64"):
        x = float(a)
        if math.isnan(x):
            return "nan"
        return f32(x) if fam == "f32" else x
    if fam == "dec":
        return str(a)
    if fam == "blob":
        return blob_from_text(a)
    if fam == "interval":
        return interval_from_text(a)
    if fam == "json":
        return hashable(json.loads(a))
    if fam == "timetz":
        return a
    if fam == "list":
        return tuple(None if x is None else int(x) for x in a)
    if fam == "struct":
        return (("a", None if a["a"] is None else int(a["a"])), ("b", a["b"]))
    if fam == "map":
        return tuple((k, None if x is None else int(x)) for k, x in a.items())
    return a


# ---------------------------------------------------------------- the harness

def output_types(req, names, coltypes):
    group = req.get("group_by") or []
    if not group:
        return [coltypes[n] for n in names]
    aggs = req.get("aggregations") or [{"op": "count"}]
    types = {g: coltypes[g] for g in group}
    for a in aggs:
        col = a.get("col")
        alias = a.get("alias") or ("count" if col is None else "%s_%s" % (a["op"], col))
        if a["op"] == "count":
            t = "BIGINT"
        elif a["op"] == "avg":
            t = "DOUBLE"
        elif a["op"] == "sum":
            ct = coltypes[col]
            t = ("HUGEINT" if ct in INT_TYPES else
                 "DECIMAL(38,%s)" % ct.split(",")[1].rstrip(")") if ct.startswith("DECIMAL") else "DOUBLE")
        else:
            t = coltypes[col]
        types[alias] = t
    return [types[n] for n in names]


# Reference statements per vt-sql process (--batch): one process start
# instead of one per case (~700 in this module), in chunks so the two pool
# threads share them.
REF_CHUNK = 60


def run_references(parquet, sql_texts):
    """DuckDB's answers to sql_texts over `parquet`, run one after the other
    in one vt-sql: a (rows, error) per statement, as a process of its own
    would have given them (rows as JSON arrays of text; error: what it
    printed when the statement failed)."""
    cmd = [str(REF_SQL), "--batch", "SET TimeZone='UTC'",
           "CREATE VIEW t AS SELECT * FROM read_parquet(%s)" % querygen.sql_str(str(parquet))]
    assert not any("\0" in q for q in sql_texts)
    p = subprocess.run(cmd, input="\0".join(sql_texts), capture_output=True, text=True)
    assert p.returncode == 0, "vt-sql --batch failed: %s" % p.stderr[-2000:]
    answers, rows = [], []
    for line in p.stdout.split("\n"):
        if not line.strip():
            continue
        v = json.loads(line)
        if isinstance(v, list):
            rows.append(v)
        elif "error" in v:
            answers.append((None, v["error"]))
            rows = []
        else:
            answers.append((rows, None))
            rows = []
    assert len(answers) == len(sql_texts) and not rows, (len(answers), len(sql_texts))
    return answers


class _Answer:
    """One case's part of a run_references() future."""

    def __init__(self, future, i):
        self.future, self.i = future, i

    def result(self):
        return self.future.result()[self.i]


def reference_futures(pool, cases, parquet_of):
    """{id(case): its reference answer (.result() -> (rows, error))}, computed
    on `pool` in chunks of REF_CHUNK statements per vt-sql."""
    by_file = collections.defaultdict(list)
    for c in cases:
        by_file[parquet_of(c)].append(c)
    futures = {}
    for parquet, group in by_file.items():
        for k in range(0, len(group), REF_CHUNK):
            chunk = group[k:k + REF_CHUNK]
            f = pool.submit(run_references, parquet, [c.sql for c in chunk])
            futures.update((id(c), _Answer(f, i)) for i, c in enumerate(chunk))
    return futures


class Case:
    def __init__(self, corpus, k, mode, req, sql_text, ordered, names, errors, indexed=False):
        self.corpus, self.k, self.mode, self.req = corpus, k, mode, req
        self.sql, self.ordered, self.names = sql_text, ordered, names
        self.errors = errors or set()
        self.index_targeted = indexed
        self.ref = None
        self.ref_error = None

    def label(self):
        return "%s#%d %s %s" % (self.corpus, self.k, self.mode, json.dumps(self.req))


def make_corpus(name, gen_cls, seed, n, indexed_pool, ctx):
    cases = []
    with ctx():
        for k in range(n):
            g = gen_cls(seed * 1000003 + k, MAX_PAGE_SIZE)
            mode = g.rng.choices(["paged", "stream", "count"], [70, 15, 15])[0]
            out = g.request(mode)
            if len(out) == 4:
                out = out + (None,)
            req, sql_text, ordered, names, errors = out
            errors = (errors or set()) | natural_errors(req)
            cases.append(Case(name, k, mode, req, sql_text, ordered, names, errors))
        for k in range(n // 5):
            g = gen_cls(seed * 7919 + 100000 + k, MAX_PAGE_SIZE)
            mode = "count" if g.rng.random() < 0.25 else "paged"
            req, sql_text, ordered, names, _ = index_request(g, mode, indexed_pool)
            cases.append(Case(name, n + k, mode, req, sql_text, ordered, names, None, indexed=True))
    return cases


def index_eligible(req, mode, indexed):
    preds = req.get("predicates") or []
    if not preds or any(p["op"] not in ("eq", "in") or p["col"] not in indexed for p in preds):
        return False
    if mode == "count":
        return True
    return (mode == "paged" and not req.get("group_by") and not req.get("aggregations")
            and not req.get("distinct") and not req.get("order_by"))


def compare_rows(case, types, got_rows, canon_got, target, where):
    fams = [family(t) for t in types]
    exp = [tuple(canon_ref(f, v, target) for f, v in zip(fams, row)) for row in case.ref]
    got = []
    for row in got_rows:
        try:
            got.append(tuple(canon_got(f, row[n]) for f, n in zip(fams, case.names)))
        except (AssertionError, KeyError, ValueError, TypeError) as e:
            raise AssertionError("%s (%s): bad value in %r: %r" % (case.label(), where, row, e))
    if case.ordered:
        if got != exp:
            i = next((i for i, (a, b) in enumerate(zip(got, exp)) if a != b), min(len(got), len(exp)))
            raise AssertionError("%s (%s)\n  sql: %s\n  %d rows, expected %d; first difference at %d:\n"
                                 "  got      %r\n  expected %r" % (
                                     case.label(), where, case.sql, len(got), len(exp), i,
                                     got[i] if i < len(got) else None, exp[i] if i < len(exp) else None))
    else:
        cg, ce = collections.Counter(got), collections.Counter(exp)
        if cg != ce:
            raise AssertionError("%s (%s)\n  sql: %s\n  %d rows, expected %d\n  only got: %r\n"
                                 "  only expected: %r" % (
                                     case.label(), where, case.sql, len(got), len(exp),
                                     list((cg - ce).elements())[:5], list((ce - cg).elements())[:5]))


def vtsql(*statements):
    try:
        return sql(*statements)
    except subprocess.CalledProcessError as e:
        raise AssertionError("vt-sql failed: %s" % e.stderr[-2000:]) from None


def build_data(datadir):
    a = datadir / "a.parquet"
    b = datadir / "b.parquet"
    vtsql(*querygen.ddl(), "COPY t TO %s (FORMAT parquet)" % querygen.sql_str(str(a)))
    vtsql(*ext_ddl(), "COPY wide TO %s (FORMAT parquet, ROW_GROUP_SIZE 100)" % querygen.sql_str(str(b)))
    types = {}
    for f in (a, b):
        types[f] = {r[0]: r[1] for r in vtsql("DESCRIBE SELECT * FROM read_parquet(%s)"
                                             % querygen.sql_str(str(f)))}
    return a, b, types


def wait_indexed(s, name, cols, timeout=60):
    deadline = time.time() + timeout
    got = None
    while time.time() < deadline:
        got = s.get(f"/api/v1/datasets/{name}/schema").json()["indexed"]
        if set(cols) <= set(got):
            return got
        time.sleep(0.05)
    raise AssertionError(f"{name}: {cols} not indexed after {timeout}s (indexed: {got})")


def decode_arrow(paths):
    out = []
    for i in range(0, len(paths), 200):
        p = subprocess.run(["node", str(READ_IPC)] + [str(x) for x in paths[i:i + 200]],
                           capture_output=True, text=True, check=True)
        out += [loads_raw(line) for line in p.stdout.splitlines()]
    assert len(out) == len(paths)
    return out


def test_differential(vt, datadir, tmp_path, capsys):
    t0 = time.time()
    a_file, b_file, coltypes = build_data(datadir)
    s = vt(server_block(max_page_size=MAX_PAGE_SIZE)
           + dataset_block("a", a_file) + dataset_block("a_lazy", a_file, lazy=True)
           + dataset_block("b", b_file) + dataset_block("b_lazy", b_file, lazy=True))
    n = COUNT or 320
    a_pool = ["id", "i", "ti", "bi", "s", "cat", "b"]
    b_pool = a_pool + ["si", "ut", "us", "ui", "ub", "js"]
    corpus = (make_corpus("A", querygen.Gen, SEED, n, a_pool, contextlib.nullcontext)
              + make_corpus("B", ExtGen, SEED, COUNT or 220, b_pool, extended_querygen))
    files = {"A": a_file, "B": b_file}

    # The reference answers, computed while the server is queried.
    pool = ThreadPoolExecutor(max_workers=2)
    futures = reference_futures(pool, [c for c in corpus if not c.errors],
                                lambda c: files[c.corpus])

    indexed = {"A": set(wait_indexed(s, "a", a_pool)), "B": set(wait_indexed(s, "b", b_pool))}
    assert s.get("/api/v1/datasets/a_lazy/schema").json()["indexed"] == []
    compare_corpus(s, corpus, files, coltypes, indexed, pool, futures,
                   lambda c: (c.corpus.lower(), c.corpus.lower() + "_lazy"),
                   "resident + lazy", t0, tmp_path, capsys)
    assert len(corpus) >= 300


def compare_corpus(s, corpus, files, coltypes, indexed, pool, futures, datasets, title, t0,
                   tmp_path, capsys):
    """Sends every case to datasets(case) and compares the answers with the
    reference SQL's (futures: the reference runs, started by the caller)."""
    session = requests.Session()
    stats = collections.Counter()
    responses = []   # (case, dataset, kind, response)
    arrow_dir = tmp_path / "arrow"
    arrow_dir.mkdir()
    for idx, c in enumerate(corpus):
        for ds in datasets(c):
            base = s.url(f"/api/v1/datasets/{ds}")
            if c.mode == "count":
                responses.append((c, ds, "count", session.post(base + "/count", json=c.req, timeout=60)))
            elif c.mode == "stream":
                r = session.post(base + "/query/stream", json=c.req, timeout=60)
                responses.append((c, ds, "stream", r))
            else:
                responses.append((c, ds, "json", session.post(base + "/query", json=c.req, timeout=60)))
                if idx % 3 == 0:
                    r = session.post(base + "/query?format=arrow", json=c.req, timeout=60)
                    responses.append((c, ds, "arrow", r))

    failures = []

    def check(fn, *args):
        try:
            fn(*args)
        except AssertionError as e:
            failures.append(str(e))

    def check_error(c, ds, kind, r):
        assert r.status_code == 400, "%s on %s: expected 400 %s, got %d %s" % (
            c.label(), ds, c.errors, r.status_code, r.text[:300])
        body = r.json()
        assert body["code"] in c.errors and body["code"] in STABLE_CODES and body["error"], (
            "%s on %s: expected one of %s, got %s" % (c.label(), ds, c.errors, body))
        stats["error"] += 1

    def check_json(c, ds, r):
        types = output_types(c.req, c.names, coltypes[files[c.corpus]])
        body = loads_raw(r.text)
        assert list(body) == ["data", "page", "page_size"], body.keys()
        page = c.req.get("page")
        page = page if isinstance(page, int) and page >= 1 else 1
        ps = c.req.get("page_size")
        ps = min(max(ps if ps is not None else 1000, 1), MAX_PAGE_SIZE)
        assert (int(body["page"]), int(body["page_size"])) == (page, ps), c.label()
        for row in body["data"]:
            assert list(row) == c.names, "%s: columns %r, expected %r" % (c.label(), list(row), c.names)
        compare_rows(c, types, body["data"], canon_json, "json", "json on %s" % ds)
        stats["json"] += 1

    def check_count(c, ds, r):
        assert r.json() == {"count": int(c.ref[0][0])}, "%s on %s: %s, expected %s" % (
            c.label(), ds, r.text, c.ref[0][0])
        stats["count"] += 1

    def check_arrow(c, ds, kind, r, d):
        assert "error" not in d, "%s on %s (%s): arrow reader: %s" % (c.label(), ds, kind, d["error"])
        assert [f["name"] for f in d["schema"]] == c.names, c.label()
        assert r.headers["Content-Type"] == "application/vnd.apache.arrow.stream"
        if kind == "arrow":
            page = c.req.get("page")
            ps = c.req.get("page_size")
            assert r.headers["X-Page"] == str(page if isinstance(page, int) and page >= 1 else 1)
            assert r.headers["X-Page-Size"] == str(min(max(ps if ps is not None else 1000, 1), MAX_PAGE_SIZE))
        else:
            assert "X-Page" not in r.headers
        types = output_types(c.req, c.names, coltypes[files[c.corpus]])
        compare_rows(c, types, d["rows"], canon_arrow, "arrow", "%s on %s" % (kind, ds))
        stats[kind] += 1

    ok = []
    t_http = time.time()
    for c, ds, kind, r in responses:
        if c.errors:
            check(check_error, c, ds, kind, r)
        elif r.status_code != 200:
            failures.append("%s on %s (%s): %d %s" % (c.label(), ds, kind, r.status_code, r.text[:500]))
        else:
            ok.append((c, ds, kind, r))
    pool.shutdown(wait=True)
    t_ref = time.time()
    for c in corpus:
        if not c.errors:
            c.ref, c.ref_error = futures[id(c)].result()
            assert c.ref_error is None, "reference SQL failed for %s:\n  %s\n  %s" % (
                c.label(), c.sql, c.ref_error)

    arrow_jobs = []
    for c, ds, kind, r in ok:
        if kind == "count":
            check(check_count, c, ds, r)
        elif kind == "json":
            check(check_json, c, ds, r)
        else:
            path = arrow_dir / f"{len(arrow_jobs)}.arrow"
            path.write_bytes(r.content)
            arrow_jobs.append((c, ds, kind, r, path))
    for (c, ds, kind, r, path), d in zip(arrow_jobs, decode_arrow([j[-1] for j in arrow_jobs])):
        check(check_arrow, c, ds, kind, r, d)

    for c in corpus:
        if c.errors:
            continue
        has_rows = bool(c.ref) and (c.mode != "count" or int(c.ref[0][0]) > 0)
        stats["with_rows"] += has_rows
        if index_eligible(c.req, c.mode, indexed[c.corpus]):
            stats["via_index"] += 1
            stats["via_index_with_rows"] += has_rows

    with capsys.disabled():
        print("\ndifferential (seed %d): %d requests (A %d, B %d, %d index-targeted), %d HTTP "
              "requests (%s): %d JSON pages, %d Arrow pages, %d Arrow streams, "
              "%d counts compared; %d requests with rows; %d via index (%d with rows); "
              "%d refusals (400) as expected; %d failures; %.1fs" % (
                  SEED, len(corpus), sum(c.corpus == "A" for c in corpus),
                  sum(c.corpus == "B" for c in corpus), sum(c.index_targeted for c in corpus),
                  len(responses), title, stats["json"], stats["arrow"], stats["stream"], stats["count"],
                  stats["with_rows"], stats["via_index"], stats["via_index_with_rows"],
                  stats["error"], len(failures), time.time() - t0))
        print("  setup+HTTP %.1fs, waiting for the reference %.1fs, comparing %.1fs" % (
            t_http - t0, t_ref - t_http, time.time() - t_ref))
    assert not failures, "%d failures; the first ones:\n\n%s" % (
        len(failures), "\n\n".join(failures[:12]))
    return stats
    assert stats["via_index_with_rows"] >= 50
    assert stats["error"] >= 10
    assert stats["with_rows"] >= len(corpus) // 2


# ------------------------------------------- lazy copies, partitioned (issue 17)

def build_partitioned(src, out):
    """Corpus A's table as hive directories cat=<value>/ (cat=NULL for NULL,
    as DuckDB writes it), two files per partition (ids up to 120, above) of
    row groups of ids in bands of 20: files and row groups whose statistics
    and partition values pruning can decide."""
    stmts = ["SET threads = 1",
             "CREATE VIEW t AS SELECT * FROM read_parquet(%s)" % querygen.sql_str(str(src))]
    for cat in querygen.CATS + [None]:
        d = out / ("cat=%s" % (cat if cat is not None else "NULL"))
        d.mkdir(parents=True)
        cond = "cat IS NULL" if cat is None else "cat = %s" % querygen.sql_str(cat)
        for half, (lo, hi) in enumerate([(1, 120), (121, querygen.ROWS)]):
            # One UNION ALL branch per band: DuckDB cuts a row group per chunk.
            bands = " UNION ALL ".join(
                "SELECT * EXCLUDE (cat) FROM (SELECT * FROM t WHERE %s AND id BETWEEN %d AND %d "
                "ORDER BY id)" % (cond, b, min(b + 19, hi)) for b in range(lo, hi + 1, 20))
            stmts.append("COPY (%s) TO %s (FORMAT parquet, ROW_GROUP_SIZE 2)"
                         % (bands, querygen.sql_str(str(d / ("part-%d.parquet" % half)))))
    vtsql(*stmts)


def test_differential_lazy_partitioned(vt, moto, datadir, tmp_path, capsys):
    """Corpus A against lazy copies of its table partitioned by cat, read
    from local disk and from moto_server: pruning by partition values and
    statistics must never change an answer (and must prune)."""
    t0 = time.time()
    a_file, _, coltypes = build_data(datadir)
    part = datadir / "a_part"
    build_partitioned(a_file, part)
    bucket = "vt-diff-%d" % os.getpid()
    moto.create_bucket(bucket)
    moto.upload_tree(part, bucket, "a_part")
    cols = ", ".join('"%s"' % n for n in querygen.NAMES)
    s3 = "\n".join(['[[dataset]]', 'name = "a_s3"', 'source.kind = "parquet"',
                    f'source.location = "s3://{bucket}/a_part/"', "lazy = true",
                    f's3.endpoint = "{moto.endpoint}"', 's3.addressing_style = "path"',
                    "s3.allow_http = true", 's3.region = "us-east-1"', 's3.partitioning = "hive"',
                    f"columns = [{cols}]"]) + "\n"
    s = vt(server_block(max_page_size=MAX_PAGE_SIZE)
           + dataset_block("a_part", part, lazy=True, columns=querygen.NAMES)
           + 's3.partitioning = "hive"\n' + s3,
           env={"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"})
    for name in ("a_part", "a_s3"):
        st = s.wait_state(name, ["published", "failed"], timeout=120)
        assert st["state"] == "published", (name, st)
        schema = s.get(f"/api/v1/datasets/{name}/schema").json()
        assert [c["name"] for c in schema["columns"]] == querygen.NAMES, schema
    n = COUNT or 200
    a_pool = ["id", "i", "ti", "bi", "s", "cat", "b"]
    # Index-targeted cases expect table order without order_by: a single
    # file's order, which partitioned copies do not have.
    corpus = [c for c in make_corpus("A", querygen.Gen, SEED + 1, n, a_pool,
                                     contextlib.nullcontext) if not c.index_targeted]
    pool = ThreadPoolExecutor(max_workers=2)
    futures = reference_futures(pool, [c for c in corpus if not c.errors], lambda c: a_file)
    compare_corpus(s, corpus, {"A": a_file}, coltypes, {"A": set()}, pool, futures,
                   lambda c: ("a_part", "a_s3"), "lazy partitioned, local + S3", t0, tmp_path,
                   capsys)
    # Pruning happened: what the plans report (Server-Timing) for the
    # corpus's filtered pages and for targeted requests.
    def pruned(name, req):
        r = s.post(f"/api/v1/datasets/{name}/query", req)
        assert r.status_code == 200, r.text
        m = re.search(r'lazy;desc="files (\d+)/(\d+) row_groups (\d+)/(\d+)"',
                      r.headers.get("Server-Timing", ""))
        assert m, r.headers.get("Server-Timing")
        return tuple(int(x) for x in m.groups())
    for name in ("a_part", "a_s3"):
        assert pruned(name, {"page_size": 1}) [:2] == (12, 12)
        assert pruned(name, {"predicates": [{"col": "cat", "op": "eq", "val": "b"}]})[:2] == (2, 12)
        assert pruned(name, {"predicates": [{"col": "cat", "op": "is_null"}]})[:2] == (2, 12)
        f_read, f_all, g_read, g_all = pruned(
            name, {"predicates": [{"col": "id", "op": "between", "val": [30, 45]}]})
        # ids 30..45: only first-half files, only their band-2 and band-3 row groups.
        assert 0 < f_read <= 6 and f_all == 12 and 0 < g_read <= 12 and g_all == 72, (
            f_read, g_read, g_all)
    # A count without predicates comes from the footers.
    for name in ("a_part", "a_s3"):
        assert s.post(f"/api/v1/datasets/{name}/count", {}).json() == {"count": querygen.ROWS}
