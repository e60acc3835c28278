#!/usr/bin/env python3
"""Instruction counts per request, repeatable on a busy machine.

    bench/callgrind.py BUILD_DIR [BUILD_DIR2 ...] [--requests N] [--only name,...] [--bearer]

Starts each build's vitrine under `valgrind --tool=callgrind` with collection
off, on a generated 50,000-row table (the shape of make bench's, smaller so
valgrind loads it in seconds), warms each scenario up, then switches
collection on (callgrind_control -i on), sends N requests over one keep-alive
connection, switches it off and reads the instruction total. Prints Ir per
request for each scenario and build, and the change against the first build.
Uses only the Python standard library and build/vt-sql for the data.

--bearer measures each build a second time with [auth] enabled against a local
OIDC issuer (tests/e2e/oidc_issuer.py: needs python3-jwt and
python3-cryptography), every request carrying the same bearer token (the
verification cache answers after the first); rows are suffixed "+bearer".
"""
import http.client
import json
import os
import re
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

SCENARIOS = {
    # name: (method, path suffix, body)
    "healthz": ("GET", "/healthz", None),
    "point_index": ("POST", "/api/v1/datasets/t/query",
                    {"predicates": [{"col": "id", "op": "eq", "val": 4242}]}),
    "page_sql_1000": ("POST", "/api/v1/datasets/t/query",
                      {"predicates": [{"col": "category", "op": "eq", "val": "c3"}],
                       "page_size": 1000}),
    # A plain first page (its LIMIT bound, away from late materialization)
    # and a small ordered page (late materialization's Top-N).
    "first_page_1000": ("POST", "/api/v1/datasets/t/query", {"page_size": 1000}),
    # Every row as one JSON page and as an Arrow stream (make bench's 6 and
    # 8a): the encoders and the streamed response's hand-off to the socket.
    "page_all_json": ("POST", "/api/v1/datasets/t/query", {"page_size": 50000}),
    "stream_arrow": ("POST", "/api/v1/datasets/t/query/stream", {}),
    # The cached Parquet export (make bench's 9): the service's own work per
    # download; the bytes go by sendfile, in the kernel, which callgrind
    # does not count.
    "parquet": ("GET", "/api/v1/datasets/t/parquet", None),
    "ordered_page_20": ("POST", "/api/v1/datasets/t/query",
                        {"order_by": [{"col": "price", "dir": "desc"}], "page_size": 20}),
    "count_sql": ("POST", "/api/v1/datasets/t/count",
                  {"predicates": [{"col": "ts", "op": "between",
                                   "val": ["2024-02-01T00:00:00", "2024-03-01T00:00:00"]}]}),
    "count_index": ("POST", "/api/v1/datasets/t/count",
                    {"predicates": [{"col": "category", "op": "eq", "val": "c3"}]}),
    # the same range as count_sql on the default-index dataset: its sorted
    # values answer it (src/index/sorted.c)
    "count_range": ("POST", "/api/v1/datasets/d/count",
                    {"predicates": [{"col": "ts", "op": "between",
                                     "val": ["2024-02-01T00:00:00", "2024-03-01T00:00:00"]}]}),
    # Range counts on the types pandas and Spark files carry (a "w"
    # dataset of its own, loaded only when one of these is measured):
    # timestamp[ns], DECIMAL(18,2) money, DECIMAL(38,10), FLOAT; and on the
    # monotone id, which its frames answer.
    "count_range_ns": ("POST", "/api/v1/datasets/w/count",
                       {"predicates": [{"col": "ts_ns", "op": "between",
                                        "val": ["2024-02-01T00:00:00.000000001",
                                                "2024-03-01T00:00:00"]}]}),
    "count_range_decimal": ("POST", "/api/v1/datasets/w/count",
                            {"predicates": [{"col": "amount", "op": "gte", "val": 120.5},
                                            {"col": "amount", "op": "lt", "val": 640}]}),
    "count_range_decimal38": ("POST", "/api/v1/datasets/w/count",
                              {"predicates": [{"col": "big", "op": "between",
                                               "val": [-0.25, 0.75]}]}),
    "count_range_float": ("POST", "/api/v1/datasets/w/count",
                          {"predicates": [{"col": "score", "op": "gt", "val": 0.1}]}),
    "count_range_id": ("POST", "/api/v1/datasets/d/count",
                       {"predicates": [{"col": "id", "op": "between", "val": [1000, 30000]}]}),
    # The same lookup over many ids (make bench's wrk sends random ones):
    # each request reads another row block of the row store, cold in the
    # block cache, as the repeated 4242 of point_index is not.
    "point_index_ids": ("POST", "/api/v1/datasets/t/query",
                        lambda i: {"predicates": [{"col": "id", "op": "eq",
                                                   "val": (i * 7919) % 50000 + 1}]}),
    # The default configuration (no index block): id and token are past
    # max_cardinality (lowered to 1000 here, as 100,000 is on a 1M-row
    # table), so they get sorted keys / sorted key hashes, not the equality
    # index; category is in it.
    "point_default_id": ("POST", "/api/v1/datasets/d/query",
                         {"predicates": [{"col": "id", "op": "eq", "val": 4242}]}),
    "point_default_token": ("POST", "/api/v1/datasets/d/query",
                            {"predicates": [{"col": "token", "op": "eq",
                                             "val": "fe7ecc4de28b2c83c016b5c6c2acd826"}]}),
    "page_default_1000": ("POST", "/api/v1/datasets/d/query",
                          {"predicates": [{"col": "category", "op": "eq", "val": "c3"}],
                           "page_size": 1000}),
    "group_default": ("POST", "/api/v1/datasets/d/query",
                      {"group_by": ["category"], "aggregations": [
                          {"op": "count"}, {"op": "sum", "col": "price"}]}),
    # The same file served lazily (a view over the file, read per query).
    "page_lazy_1000": ("POST", "/api/v1/datasets/tl/query",
                       {"predicates": [{"col": "category", "op": "eq", "val": "c3"}],
                        "page_size": 1000}),
    "count_lazy": ("POST", "/api/v1/datasets/tl/count",
                   {"predicates": [{"col": "ts", "op": "between",
                                    "val": ["2024-02-01T00:00:00", "2024-03-01T00:00:00"]}]}),
    # The same point lookup and page through the MCP query_dataset tool (one
    # stateless JSON-RPC call each): the cost of the MCP envelope over /query.
    "mcp_point_index": ("POST", "/mcp", {
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "query_dataset", "arguments": {
            "name": "t", "predicates": [{"col": "id", "op": "eq", "val": 4242}]}}}),
    "mcp_page_sql_1000": ("POST", "/mcp", {
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "query_dataset", "arguments": {
            "name": "t", "predicates": [{"col": "category", "op": "eq", "val": "c3"}],
            "page_size": 1000}}}),
    # POST /api/v1/sql: the SQL gate, the snapshot and exec's temp views
    # around DuckDB (the same point lookup, and a small group by).
    "sql_point": ("POST", "/api/v1/sql", {"sql": "SELECT * FROM t WHERE id = 4242"}),
    "sql_group": ("POST", "/api/v1/sql",
                  {"sql": "SELECT category, count(*) AS n FROM t GROUP BY 1 ORDER BY 1"}),
    # The PostgreSQL listener, one connection: a simple Query (what
    # `pgbench -M simple` and psql send), and the same lookup as a prepared
    # statement (Parse once, then Bind/Execute/Sync with a text parameter).
    "pg_simple_point": ("PG", "SELECT * FROM t WHERE id = 4242", None),
    "pg_simple_point_default": ("PG", "SELECT * FROM d WHERE id = 4242", None),
    "pg_prepared_point": ("PGX", "SELECT * FROM t WHERE id = $1", "4242"),
    # 1000 rows in the text format (DOUBLE, TIMESTAMP, strings): the
    # DataRow encoder
    "pg_simple_page_1000": ("PG", "SELECT * FROM t WHERE category = 'c3' LIMIT 1000", None),
    # Every row (make bench's P2 on 50,000 rows): the text format, and the
    # binary one (a prepared statement, every result column binary).
    "pg_text_all": ("PG", "SELECT * FROM t", None),
    "pg_binary_all": ("PGB", "SELECT * FROM t", None),
}


def write_parquet(path, select):
    """The rows of a SELECT as a Parquet file, written once (kept between runs)."""
    if path.exists():
        return
    subprocess.run([str(REPO / "build" / "vt-sql"), f"COPY ({select}) TO '{path}' (FORMAT parquet)"],
                   check=True, capture_output=True)


def make_data(build, path):
    select = (f"SELECT range + 1 AS id, 'c' || (hash(range) % 12) AS category, "
              f"(hash(range * 7) % 100000) / 100.0 AS price, "
              f"TIMESTAMP '2024-01-01' + INTERVAL (hash(range * 13) % 31536000) SECOND AS ts, "
              f"md5((range + 1)::VARCHAR) AS token "
              f"FROM range(50000)")
    write_parquet(path, select)


def make_types_data(build, path):
    select = (f"SELECT range + 1 AS id, "
              f"make_timestamp_ns(1704067200000000000 + (hash(range * 13) % 31536000000000)::BIGINT "
              f"* 1000 + range % 1000) AS ts_ns, "
              f"CAST(CAST((hash(range * 7) % 100000)::BIGINT AS DECIMAL(18,0)) * 0.01 "
              f"AS DECIMAL(18,2)) AS amount, "
              f"CAST(CAST((hash(range * 3) % 2000000)::BIGINT - 1000000 AS DECIMAL(38,0)) "
              f"* 0.000001 AS DECIMAL(38,10)) AS big, "
              f"((hash(range * 5) % 10000) / 1000.0)::FLOAT AS score "
              f"FROM range(50000)")
    write_parquet(path, select)


def uses_types(only):
    return only is None or any(SCENARIOS[n][1].startswith("/api/v1/datasets/w/")
                               for n in only if n in SCENARIOS)


def request(conn, method, path, body, extra=None):
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Content-Type": "application/json"} if data else {}
    headers.update(extra or {})
    conn.request(method, path, body=data, headers=headers)
    r = conn.getresponse()
    payload = r.read()
    if r.status != 200:
        raise RuntimeError(f"{method} {path}: {r.status} {payload[:200]}")
    return payload


class PgConn:
    """A protocol-3.0 client over a plain socket (trust login), enough for
    simple Queries and one prepared statement."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=300)
        body = struct.pack("!i", 196608) + b"user\0vitrine\0database\0vitrine\0\0"
        self.sock.sendall(struct.pack("!i", len(body) + 4) + body)
        self.buf = b""
        self.off = 0
        self.until_ready()
        self.prepared = {}  # sql: statement name

    def read_msg(self):
        # self.off: where the next message starts (the buffer is cut only
        # when more is read, so a whole table's DataRows stay linear)
        while (len(self.buf) - self.off < 5 or
               len(self.buf) - self.off < 1 + struct.unpack_from("!i", self.buf, self.off + 1)[0]):
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise RuntimeError("pgwire: connection closed")
            self.buf = self.buf[self.off:] + chunk
            self.off = 0
        o = self.off
        n = struct.unpack_from("!i", self.buf, o + 1)[0]
        self.off = o + 1 + n
        return self.buf[o:o + 1], self.buf[o + 5:o + 1 + n]

    def until_ready(self):
        rows = 0
        while True:
            t, body = self.read_msg()
            if t == b"E":
                raise RuntimeError("pgwire: " + body.decode(errors="replace"))
            rows += t == b"D"
            if t == b"Z":
                return rows

    @staticmethod
    def msg(t, body):
        return t + struct.pack("!i", len(body) + 4) + body

    def request(self, kind, sql, param):
        if kind == "PG":
            self.sock.sendall(self.msg(b"Q", sql.encode() + b"\0"))
        else:
            out = b""
            if sql not in self.prepared:
                self.prepared[sql] = b"s%d" % len(self.prepared)
                out += self.msg(b"P", self.prepared[sql] + b"\0" + sql.encode() + b"\0" +
                                struct.pack("!h", 0))
            name = self.prepared[sql]
            if kind == "PGB":  # no parameters, every result column binary
                out += self.msg(b"B", b"\0" + name + b"\0" + struct.pack("!hhhh", 0, 0, 1, 1))
            else:
                v = param.encode()
                out += self.msg(b"B", b"\0" + name + b"\0" + struct.pack("!hhi", 0, 1, len(v)) + v +
                                struct.pack("!h", 0))
            out += self.msg(b"E", b"\0" + struct.pack("!i", 0)) + self.msg(b"S", b"")
            self.sock.sendall(out)
        if self.until_ready() < 1:
            raise RuntimeError(f"pgwire: {sql}: no rows")


def measure(build, data, n, only, issuer=None, types_data=None):
    work = Path(tempfile.mkdtemp(prefix="vt-callgrind-"))
    cfg = work / "datasets.toml"
    auth = ""
    hdrs = {}
    if issuer:
        auth = (f'[auth]\nenabled = true\nissuer = "{issuer.url}"\naudience = "vitrine"\n'
                "start_degraded = false\n")
        hdrs = {"Authorization": "Bearer " + issuer.realistic_token()}
    cfg.write_text(auth + f"""[server]
listen = "127.0.0.1"
port = 0
request_timeout_ms = 0
workers = 1

[server.pgwire]
enabled = true
port = 0

[sql]
enabled = true

[mcp]
enabled = true
max_rows = 1000
max_bytes = 67108864

[[dataset]]
name = "t"
source.kind = "parquet"
source.location = "{data}"
index.mode = "list"
index.columns = ["id", "category"]

[[dataset]]
name = "tl"
source.kind = "parquet"
source.location = "{data}"
lazy = true

[[dataset]]
name = "d"
source.kind = "parquet"
source.location = "{data}"
index.max_cardinality = 1000
""" + (f"""
[[dataset]]
name = "w"
source.kind = "parquet"
source.location = "{types_data}"
""" if types_data else ""))
    out = work / "callgrind.out"
    log = open(work / "log", "wb")
    env = dict(os.environ, VITRINE_LOG="info",
               LD_LIBRARY_PATH=str(REPO / "third_party" / "duckdb"))
    proc = subprocess.Popen(["valgrind", "--tool=callgrind", "--instr-atstart=no",
                             f"--callgrind-out-file={out}", str(build / "vitrine"),
                             "--config", str(cfg), "--port", "0"],
                            stdout=log, stderr=subprocess.STDOUT, env=env, cwd=work)
    port = None
    deadline = time.time() + 120
    while time.time() < deadline and port is None:
        m = re.search(rb"listening on http://[^:]+:(\d+)", (work / "log").read_bytes())
        if m:
            port = int(m.group(1))
        time.sleep(0.2)
    if port is None:
        proc.kill()
        raise RuntimeError((work / "log").read_text(errors="replace"))
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    def get(path):
        conn.request("GET", path, headers=hdrs)
        r = conn.getresponse()
        return r.status, r.read()

    while True:  # published and the index built (the schema lists it)
        st, body = get("/api/v1/datasets/t/schema")
        if st == 200 and b'"indexed":["id","category"]' in body:
            st, _ = get("/api/v1/datasets/tl/schema")
            st2, b2 = get("/api/v1/datasets/d/schema")
            ready = True
            if types_data:
                st3, b3 = get("/api/v1/datasets/w/status")
                ready = st3 == 200 and json.loads(b3)["index"]["state"] == "ready"
            if st == 200 and st2 == 200 and b'"indexed":["category"]' in b2 and ready:
                break
        time.sleep(0.5)
    results = {}
    pg = None
    for name, (method, path, body) in SCENARIOS.items():
        if only and name not in only:
            continue
        if method.startswith("PG") and issuer:
            continue  # [auth] asks pgwire clients for a password
        if method.startswith("PG") and pg is None:
            m = re.search(rb"pgwire listening on [^ ]+:(\d+)", (work / "log").read_bytes())
            pg = PgConn(int(m.group(1)))
        if method.startswith("PG"):
            def send(method=method, path=path, body=body):
                pg.request(method, path, body)
        else:
            def send(method=method, path=path, body=body, seq=iter(range(1 << 30))):
                request(conn, method, path, body(next(seq)) if callable(body) else body, hdrs)
        for _ in range(20):
            send()
        time.sleep(0.3)  # let the access-log flusher run outside the window
        subprocess.run(["callgrind_control", "-z", str(proc.pid)], check=True, capture_output=True)
        subprocess.run(["callgrind_control", "-i", "on", str(proc.pid)], check=True, capture_output=True)
        for _ in range(n):
            send()
        subprocess.run(["callgrind_control", "-i", "off", str(proc.pid)], check=True, capture_output=True)
        before = set(work.glob("callgrind.out*"))
        subprocess.run(["callgrind_control", "-d", name, str(proc.pid)], check=True,
                       capture_output=True, text=True)
        total = None
        for _ in range(100):
            new = set(work.glob("callgrind.out*")) - before
            texts = [f.read_text(errors="replace") for f in new]
            sums = [int(m.group(1)) for t in texts
                    for m in [re.search(r"^totals: (\d+)", t, re.M)] if m]
            if sums:
                total = sum(sums)
                break
            time.sleep(0.2)
        if total is None:
            raise RuntimeError(f"no callgrind dump for {name} in {work}")
        results[name + ("+bearer" if issuer else "")] = total / n
    conn.close()
    proc.terminate()
    proc.wait(timeout=120)
    # One dump per scenario stays there: `callgrind_annotate --inclusive=yes
    # <dump>` shows where a scenario's instructions go.
    print(f"callgrind dumps of {build}: {work}", file=sys.stderr)
    return results


def main():
    args = sys.argv[1:]
    n = 200
    only = None
    bearer = False
    builds = []
    while args:
        a = args.pop(0)
        if a == "--requests":
            n = int(args.pop(0))
        elif a == "--only":
            only = set(args.pop(0).split(","))
        elif a == "--bearer":
            bearer = True
        else:
            builds.append(Path(a).resolve())
    if not builds:
        builds = [REPO / "build"]
    # v2: with the token column (md5 of id)
    data = REPO / "bench" / "data" / "callgrind-50k-v2.parquet"
    data.parent.mkdir(parents=True, exist_ok=True)
    make_data(builds[0], data)
    types_data = None
    if uses_types(only):
        types_data = REPO / "bench" / "data" / "callgrind-50k-types-v1.parquet"
        make_types_data(builds[0], types_data)
    table = [measure(b, data, n, only, types_data=types_data) for b in builds]
    if bearer:
        sys.path.insert(0, str(REPO / "tests" / "e2e"))
        from oidc_issuer import Issuer
        with Issuer() as iss:
            for t, b in zip(table, builds):
                t.update(measure(b, data, n, only, iss, types_data))
    names = list(table[0])
    print(f"{'scenario':22} " + " ".join(f"{str(b)[-24:]:>26}" for b in builds) + "   change")
    for name in names:
        row = [t.get(name, 0) for t in table]
        change = "" if len(row) < 2 or not row[0] else f"{(row[-1] - row[0]) / row[0] * 100:+.1f}%"
        print(f"{name:22} " + " ".join(f"{v:>26,.0f}" for v in row) + f"   {change}")
    for name in names:
        if name.endswith("+bearer") and name[:-7] in table[0]:
            for b, t in zip(builds, table):
                base = t[name[:-7]]
                print(f"{name} vs {name[:-7]} ({str(b)[-24:]}): {t[name] - base:+,.0f} Ir "
                      f"({(t[name] - base) / base * 100:+.1f}%)")


if __name__ == "__main__":
    main()
