#!/usr/bin/python3
"""Random query requests with hand-written reference SQL, for differential tests.

Given a seed, generates query requests (the JSON body of POST
/api/v1/datasets/{name}/query, /query/stream or /count) over the table that
`--ddl` creates, each with the SQL a person would write for it, so that the
service's answers (or the query compiler's, in-process) can be compared with
DuckDB running the reference SQL. The reference is written independently of
src/query: literals instead of parameters, plain GROUP BY/HAVING with repeated
aggregate expressions, dates compared as timestamps, offsets resolved with
Python's datetime. It covers every request field and every operator.

Semantics encoded here (they are the service's documented decisions):
  numbers compare by value (3.0 matches 3, 3.5 matches nothing on integers);
  a REAL column compares with the value rounded to REAL; an enum compares as
  its label text; ISO strings with an offset are converted to UTC, naive
  TIMESTAMP columns are UTC, TIMESTAMPTZ values without an offset are UTC; a
  date-time against a DATE column compares as timestamps; NULLs sort last;
  `in []` matches nothing; page < 1 is 1; page_size is clamped to
  [1, max_page_size]; limit caps the total across pages.

Usage (Debian python3 only, no PyPI):
  querygen.py --ddl                       SQL creating and filling table "t",
                                          one statement a line (build/vt-sql runs them)
  querygen.py --ddl --parquet FILE        the same, then COPY t TO FILE as Parquet.
      For the HTTP-level test: publish FILE as a dataset and run the reference
      SQL over `CREATE TABLE t AS SELECT * FROM 'FILE'`, not over the original
      table, because some types change on the way (ENUM becomes VARCHAR).
  querygen.py --seed 7 --count 300 [--max-page-size 500] [--mode paged]
      one JSON object per line: {"seed", "mode", "request", "sql", "ordered",
      "names"}; mode is paged | stream | count; "ordered" says whether rows
      must be compared in order (otherwise as a multiset); "names" are the
      expected output column names.
"""

import argparse
import datetime as dt
import json
import random

TABLE = "t"
ROWS = 240

# name, SQL type, class
COLUMNS = [
    ("id", "INTEGER", "int"),
    ("i", "INTEGER", "int"),
    ("ti", "TINYINT", "int"),
    ("bi", "BIGINT", "int"),
    ("d", "DOUBLE", "double"),
    ("f", "REAL", "real"),
    ("dec", "DECIMAL(10,2)", "decimal"),
    ("s", "VARCHAR", "string"),
    ("cat", "VARCHAR", "string"),
    ("e", "mood", "enum"),
    ("b", "BOOLEAN", "bool"),
    ("dt", "DATE", "date"),
    ("ts", "TIMESTAMP", "ts"),
    ("tstz", "TIMESTAMPTZ", "tstz"),
    ("tm", "TIME", "time"),
]
CLASS = {name: cls for name, _, cls in COLUMNS}
NAMES = [name for name, _, _ in COLUMNS]
NUMERIC = {"int", "double", "real", "decimal"}
MOODS = ["sad", "ok", "happy"]
WORDS = ["apple", "Apple", "a_c", "a%c", "abc", "ABC", "banana", "b_nana", "", "x y",
         "o'brien", "\u00fcn\u00efcode", "apricot", "Zebra"]
CATS = ["a", "b", "c", "d", "e"]
EPOCH = dt.datetime(2024, 1, 1)
UTC = dt.timezone.utc


def sql_str(s):
    return "'" + s.replace("'", "''") + "'"


def quote(name):
    return '"' + name.replace('"', '""') + '"'


# ---------------------------------------------------------------- table data

def make_rows():
    rng = random.Random(12345)

    def maybe(v, p=0.15):
        return None if rng.random() < p else v

    rows = []
    for rid in range(1, ROWS + 1):
        ts = EPOCH + dt.timedelta(seconds=rng.randrange(0, 60 * 86400),
                                  microseconds=rng.choice([0, 0, 500000, 123456]))
        rows.append({
            "id": rid,
            "i": maybe(rng.randint(-5, 20)),
            "ti": maybe(rng.randint(-128, 127)),
            "bi": maybe(rng.choice([2**53, 2**53 + 1, -(2**53) - 1, rng.randint(-10**6, 10**6)])),
            "d": maybe(rng.randint(-40, 40) / 4),
            "f": maybe(rng.choice([0.1, 0.5, 2.5, 1.25, -3.75, 100.0])),
            "dec": maybe(rng.randint(-10000, 10000)),  # hundredths
            "s": maybe(rng.choice(WORDS)),
            "cat": maybe(rng.choice(CATS)),
            "e": maybe(rng.choice(MOODS)),
            "b": maybe(rng.choice([True, False])),
            "dt": maybe(dt.date(2023, 12, 25) + dt.timedelta(days=rng.randint(0, 80))),
            "ts": maybe(ts),
            "tstz": maybe(EPOCH + dt.timedelta(seconds=rng.randrange(0, 60 * 86400))),
            "tm": maybe(dt.time(rng.randint(0, 23), rng.choice([0, 15, 30, 59]),
                                rng.choice([0, 0, 30]))),
        })
    return rows


def row_literal(r):
    out = []
    for name, typ, cls in COLUMNS:
        v = r[name]
        if v is None:
            out.append("NULL")
        elif cls == "bool":
            out.append("true" if v else "false")
        elif cls == "decimal":
            out.append("CAST(%s AS DECIMAL(10,2))" % sql_str("%d.%02d" % (v // 100, v % 100)
                                                           if v >= 0 else
                                                           "-%d.%02d" % (-v // 100, -v % 100)))
        elif cls in ("int", "double", "real"):
            out.append(repr(v))
        elif cls in ("string", "enum"):
            out.append(sql_str(v))
        elif cls == "date":
            out.append("DATE '%s'" % v.isoformat())
        elif cls == "ts":
            out.append("TIMESTAMP '%s'" % v.isoformat(sep=" "))
        elif cls == "tstz":
            out.append("TIMESTAMPTZ '%s+00'" % v.isoformat(sep=" "))
        elif cls == "time":
            out.append("TIME '%s'" % v.isoformat())
    return "(" + ", ".join(out) + ")"


def ddl():
    rows = make_rows()
    cols = ", ".join("%s %s" % (quote(n), t) for n, t, _ in COLUMNS)
    stmts = [
        "CREATE TYPE mood AS ENUM (%s)" % ", ".join(sql_str(m) for m in MOODS),
        "CREATE TABLE %s (%s)" % (TABLE, cols),
        "INSERT INTO %s VALUES %s" % (TABLE, ", ".join(row_literal(r) for r in rows)),
    ]
    return stmts


# ------------------------------------------------------------------- values

class Gen:
    def __init__(self, seed, max_page_size):
        self.rng = random.Random(seed)
        self.rows = make_rows()
        self.max_page_size = max_page_size

    def data(self, col):
        vals = [r[col] for r in self.rows if r[col] is not None]
        return self.rng.choice(vals)

    # Each returns (json value, SQL literal expression) for comparing with the
    # column (or an expression of the column's class).
    def value(self, cls, col=None, src=None):
        rng = self.rng
        pick = (lambda: self.data(src)) if src else None
        if cls == "int":
            base = pick() if pick and rng.random() < 0.7 else rng.randint(-10, 30)
            if isinstance(base, float):
                base = int(base)
            k = rng.random()
            if k < 0.6:
                return base, str(base)
            if k < 0.8 and abs(base) < 2**52:
                return float(base), "%d.0" % base  # 3.0 matches 3
            if k < 0.9:
                return base + 0.5, repr(base + 0.5)  # never equal to an integer
            return rng.choice([300, -300, 2**53 + 1]), None
        if cls in ("double", "real"):
            base = pick() if pick and rng.random() < 0.7 else rng.randint(-40, 40) / 4
            if rng.random() < 0.2:
                base = base + 0.125
            if cls == "real":
                return base, "CAST(%r AS REAL)" % base
            if rng.random() < 0.3 and base == int(base):
                return int(base), str(int(base))
            return base, repr(base)
        if cls == "decimal":
            hund = pick() if pick and rng.random() < 0.7 else rng.randint(-10000, 10000)
            if isinstance(hund, float):  # an aggregation of decimals given as a float
                return hund, repr(hund)
            v = hund / 100
            if rng.random() < 0.2:
                v = round(v + 0.005, 3)
                return v, repr(v)
            return v, "%r" % v
        if cls == "string":
            if src and rng.random() < 0.7:
                s = pick()
            else:
                s = rng.choice(WORDS + CATS + ["zzz", "A", "apple "])
            return s, sql_str(s)
        if cls == "enum":
            s = rng.choice(MOODS + ["nope"])
            return s, sql_str(s)
        if cls == "bool":
            v = rng.choice([True, False])
            return v, "true" if v else "false"
        if cls in ("date", "ts", "tstz"):
            return self.temporal(cls, src)
        if cls == "time":
            t = pick() if pick and rng.random() < 0.6 else dt.time(rng.randint(0, 23), rng.randint(0, 59))
            form = rng.random()
            if form < 0.4 and t.second == 0:
                text = t.strftime("%H:%M")
            elif form < 0.8:
                text = t.strftime("%H:%M:%S")
            else:
                text = t.strftime("%H:%M:%S") + ".250000"
                t = t.replace(microsecond=250000)
            return text, "TIME '%s'" % t.isoformat()
        raise ValueError(cls)

    def temporal(self, cls, src):
        """An ISO string in a random spelling and its UTC instant."""
        rng = self.rng
        if src and rng.random() < 0.6:
            base = self.data(src)
            if isinstance(base, dt.date) and not isinstance(base, dt.datetime):
                base = dt.datetime.combine(base, dt.time())
        else:
            base = EPOCH + dt.timedelta(days=rng.randint(-10, 70), seconds=rng.choice([0, 0, 3600, 45296]))
        form = rng.random()
        if form < 0.3 and base.time() == dt.time():
            return base.date().isoformat(), base  # date only
        sep = rng.choice(["T", "T", " ", "t"])
        frac = ""
        if base.microsecond:
            frac = "." + ("%06d" % base.microsecond).rstrip("0")
        elif rng.random() < 0.1:
            frac = ".000"
        off = rng.choice([None, None, 0, 120, -300, 330, -60 * 9])
        if off is None:
            local, suffix = base, ""
        else:
            local = base + dt.timedelta(minutes=off)  # the same instant, seen at +off
            if off == 0:
                suffix = rng.choice(["Z", "z", "+00:00"])
            else:
                sign = "+" if off > 0 else "-"
                h, m = divmod(abs(off), 60)
                suffix = rng.choice(["%s%02d:%02d" % (sign, h, m), "%s%02d%02d" % (sign, h, m)])
                if m == 0 and rng.random() < 0.5:
                    suffix = "%s%02d" % (sign, h)
        if local.second == 0 and not frac and rng.random() < 0.3:
            text = local.strftime("%Y-%m-%d") + sep + local.strftime("%H:%M") + suffix
        else:
            text = local.strftime("%Y-%m-%d") + sep + local.strftime("%H:%M:%S") + frac + suffix
        return text, base

    def literal_for(self, cls, v):
        """The SQL literal of a temporal instant for a column class."""
        if cls in ("date", "ts"):
            return "TIMESTAMP '%s'" % v.isoformat(sep=" ")
        if cls == "tstz":
            return "TIMESTAMPTZ '%s+00'" % v.isoformat(sep=" ")
        raise ValueError(cls)

    # --------------------------------------------------------- predicates

    def predicate(self, col, cls, lhs, src):
        """A predicate on `col` (class `cls`) and its SQL over `lhs`.
        Returns (json object, SQL text)."""
        rng = self.rng
        ops = ["eq", "neq", "gt", "gte", "lt", "lte", "in", "between", "is_null", "is_not_null"]
        if cls in ("string", "enum"):
            ops += ["like", "ilike", "like"]
        if cls == "bool":
            ops = ["eq", "neq", "in", "is_null", "is_not_null"]
        op = rng.choice(ops)
        if cls == "enum":
            lhs_v = "CAST(%s AS VARCHAR)" % lhs
        elif cls == "date":
            lhs_v = "CAST(%s AS TIMESTAMP)" % lhs
        else:
            lhs_v = lhs
        if op in ("is_null", "is_not_null"):
            p = {"col": col, "op": op}
            if rng.random() < 0.2:
                p["val"] = None
            return p, "%s IS %sNULL" % (lhs, "NOT " if op == "is_not_null" else "")

        def one():
            v, lit = self.value(cls, col, src)
            if cls in ("date", "ts", "tstz"):
                lit = self.literal_for(cls, lit)
            elif lit is None:  # an integer out of the column's range
                lit = str(v)
            return v, lit

        if op == "in":
            n = rng.choice([0, 1, 2, 3, 5, 40])
            pairs = [one() for _ in range(n)]
            p = {"col": col, "op": "in", "val": [v for v, _ in pairs]}
            if not pairs:
                return p, "false"
            # One IN list per literal kind, so that DuckDB compares each exactly.
            return p, "(" + " OR ".join("%s = %s" % (lhs_v, lit) for _, lit in pairs) + ")"
        if op == "between":
            (a, la), (b, lb) = one(), one()
            return {"col": col, "op": op, "val": [a, b]}, "%s BETWEEN %s AND %s" % (lhs_v, la, lb)
        if op in ("like", "ilike"):
            pat = self.pattern()
            return ({"col": col, "op": op, "val": pat},
                    "%s %s %s" % (lhs_v, op.upper(), sql_str(pat)))
        v, lit = one()
        sym = {"eq": "=", "neq": "<>", "gt": ">", "gte": ">=", "lt": "<", "lte": "<="}[op]
        return {"col": col, "op": op, "val": v}, "%s %s %s" % (lhs_v, sym, lit)

    def pattern(self):
        rng = self.rng
        w = rng.choice(WORDS[:8] + MOODS)
        k = rng.random()
        if k < 0.25:
            return w[: max(1, len(w) // 2)] + "%"
        if k < 0.45:
            return "%" + w[len(w) // 2:]
        if k < 0.6:
            return "".join("_" if rng.random() < 0.3 else c for c in w)
        if k < 0.7:
            return "%"
        if k < 0.85:
            return w.upper()
        return "%" + w[1:-1] + "%" if len(w) > 2 else w

    # ------------------------------------------------------------ requests

    def request(self, mode):
        rng = self.rng
        req = {}
        grouped = rng.random() < 0.3
        distinct = not grouped and rng.random() < 0.15

        # predicates
        preds, where = [], []
        for _ in range(rng.choice([0, 0, 1, 1, 2, 3, 4])):
            col = rng.choice(NAMES[1:])
            p, sql = self.predicate(col, CLASS[col], quote(col), col)
            preds.append(p)
            where.append(sql)
        if preds or rng.random() < 0.1:
            req["predicates"] = preds

        names = []
        order_sql, order_json = [], []
        total_order = False
        if grouped:
            gcols = rng.sample(["cat", "b", "e", "i", "dt"], rng.choice([1, 1, 2]))
            req["group_by"] = gcols
            aggs, agg_sql, agg_cls = [], [], []
            for _ in range(rng.choice([0, 1, 2, 3])):
                op = rng.choice(["count", "count", "sum", "avg", "min", "max"])
                if op == "count" and rng.random() < 0.5:
                    col = None
                elif op in ("sum", "avg"):
                    col = rng.choice(["i", "ti", "bi", "d", "f", "dec"])
                else:
                    col = rng.choice(NAMES[1:])
                alias = ("count" if col is None else "%s_%s" % (op, col))
                a = {"op": op}
                if col is not None:
                    a["col"] = col
                if rng.random() < 0.3:
                    alias = "a%d_%s" % (len(aggs), op)
                    a["alias"] = alias
                if alias in [x[0] for x in agg_sql] or alias in gcols:
                    continue
                aggs.append(a)
                expr = "%s(%s)" % (op, "*" if col is None else quote(col))
                agg_sql.append((alias, expr))
                if op == "count":
                    vcls, src = "int", None
                elif op == "avg":
                    vcls, src = "double", None
                elif op == "sum":
                    vcls = {"int": "int", "decimal": "decimal"}.get(CLASS[col], "double")
                    src = None
                else:
                    vcls, src = CLASS[col], col
                agg_cls.append((alias, expr, vcls, src))
            if aggs or rng.random() < 0.2:
                req["aggregations"] = aggs
            if not aggs:
                agg_sql = [("count", "count(*)")]
                agg_cls = [("count", "count(*)", "int", None)]
            names = gcols + [a for a, _ in agg_sql]
            select = ", ".join([quote(g) for g in gcols] +
                               ["%s AS %s" % (e, quote(a)) for a, e in agg_sql])
            having = []
            hj = []
            for _ in range(rng.choice([0, 0, 1, 2])):
                if rng.random() < 0.4:
                    g = rng.choice(gcols)
                    p, sql = self.predicate(g, CLASS[g], quote(g), g)
                else:
                    alias, expr, vcls, src = rng.choice(agg_cls)
                    p, sql = self.predicate(alias, vcls, expr, src)
                hj.append(p)
                having.append(sql)
            if hj:
                req["having"] = hj
            # order: some keys, then the group columns make it total
            keys = [(g, quote(g)) for g in gcols] + [(a, e) for a, e in agg_sql]
            for name, expr in rng.sample(keys, rng.choice([0, 0, 1, 2])):
                desc = rng.random() < 0.4
                o = {"col": name}
                if desc or rng.random() < 0.3:
                    o["dir"] = "desc" if desc else "asc"
                order_json.append(o)
                order_sql.append("%s %s NULLS LAST" % (expr, "DESC" if desc else "ASC"))
            sql = "SELECT %s FROM %s%s GROUP BY %s%s" % (
                select, TABLE, (" WHERE " + " AND ".join(where)) if where else "",
                ", ".join(quote(g) for g in gcols),
                (" HAVING " + " AND ".join(having)) if having else "")
            tiebreak = [(g, quote(g)) for g in gcols if {"col": g} not in order_json
                        and {"col": g, "dir": "asc"} not in order_json
                        and {"col": g, "dir": "desc"} not in order_json]
        else:
            if rng.random() < 0.3:
                cols = []
                names = NAMES[:]
            else:
                k = rng.randint(1, 4) if distinct else rng.randint(1, len(NAMES))
                pool = ["cat", "b", "e", "i", "dt", "s"] if distinct else NAMES
                cols = rng.sample(pool, min(k, len(pool)))
                names = cols
            if cols or rng.random() < 0.3:
                req["columns"] = cols
            if distinct:
                req["distinct"] = True
            elif rng.random() < 0.1:
                req["distinct"] = False
            pool = names if distinct else NAMES
            for name in rng.sample(pool, rng.choice([0, 0, 1, 2, 3]) if len(pool) >= 3 else 0):
                desc = rng.random() < 0.4
                o = {"col": name}
                if desc or rng.random() < 0.3:
                    o["dir"] = "desc" if desc else "asc"
                order_json.append(o)
                order_sql.append("%s %s NULLS LAST" % (quote(name), "DESC" if desc else "ASC"))
            sql = "SELECT %s%s FROM %s%s" % (
                "DISTINCT " if distinct else "", ", ".join(quote(n) for n in names), TABLE,
                (" WHERE " + " AND ".join(where)) if where else "")
            used = {o["col"] for o in order_json}
            if distinct:
                tiebreak = [(n, quote(n)) for n in names if n not in used]
            else:
                tiebreak = [] if "id" in used else [("id", quote("id"))]

        # paging
        page = page_size = limit = None
        if rng.random() < 0.5:
            page = rng.choice([None, 1, 1, 2, 3, 5, 0, -2])
            page_size = rng.choice([None, 1, 3, 10, 25, 1000, 0, -4])
            limit = rng.choice([None, None, 0, 5, 17, 60])
            if page is not None:
                req["page"] = page
            if page_size is not None:
                req["page_size"] = page_size
            if limit is not None or rng.random() < 0.2:
                req["limit"] = limit
        pages_matter = mode == "paged" and (page is not None or page_size is not None or limit is not None)
        limit_matters = mode == "stream" and limit is not None
        if mode != "count" and (pages_matter or limit_matters or order_json):
            # A subset of rows, or a compared order: make the order total.
            for name, expr in tiebreak:
                order_json.append({"col": name})
                order_sql.append("%s ASC NULLS LAST" % expr)
            total_order = True
        if order_json:
            req["order_by"] = order_json
        if order_sql:
            sql += " ORDER BY " + ", ".join(order_sql)

        if mode == "count":
            sql = "SELECT count(*) AS %s FROM %s%s" % (quote("count"), TABLE,
                                                        (" WHERE " + " AND ".join(where)) if where else "")
            return req, sql, True, ["count"]
        if mode == "paged":
            p = page if page is not None and page >= 1 else 1
            ps = page_size if page_size is not None else 1000
            ps = min(max(ps, 1), self.max_page_size)
            off = (p - 1) * ps
            n = ps if limit is None else max(0, min(ps, limit - off))
            sql += " LIMIT %d OFFSET %d" % (n, off)
        elif mode == "stream" and limit is not None:
            sql += " LIMIT %d" % limit
        return req, sql, total_order, names


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ddl", action="store_true", help="print the table's SQL, one statement a line")
    ap.add_argument("--parquet", metavar="FILE", help="with --ddl: also write the table to FILE")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=300)
    ap.add_argument("--max-page-size", type=int, default=500)
    ap.add_argument("--mode", choices=["paged", "stream", "count", "mixed"], default="mixed")
    args = ap.parse_args()
    if args.ddl:
        for stmt in ddl():
            print(stmt)
        if args.parquet:
            print("COPY %s TO %s (FORMAT parquet)" % (TABLE, sql_str(args.parquet)))
        return
    for k in range(args.count):
        seed = args.seed * 1000003 + k
        g = Gen(seed, args.max_page_size)
        mode = args.mode
        if mode == "mixed":
            mode = g.rng.choices(["paged", "stream", "count"], [70, 15, 15])[0]
        req, sql, ordered, names = g.request(mode)
        print(json.dumps({"seed": seed, "mode": mode, "request": req, "sql": sql,
                          "ordered": ordered, "names": names}, ensure_ascii=False))


if __name__ == "__main__":
    main()
