"""Hostile SQL against memory and time (issue 22 items 1 and 2).

Memory: with memory_limit = "1GB", len(range(30000000)) peaked at 2.3 GB
RSS, range(1e8) passed 8 GB, repeat('x', 3e9) 5.9 GB, damerau_levenshtein on
30k-character strings ~7 GB: list and string builders allocate outside
DuckDB's buffer pool. Now the built-ins whose cost one call chooses are
bounded (engine/functions.c), DuckDB's allocations are held to a budget
(engine/budget.cc) and spilling to max_temp_directory_size: the server's RSS,
sampled through every statement, stays within memory_limit + a quarter +
the idle process, whatever the statement, on /sql, MCP sql and pgwire.

Deadlines: levenshtein on two 150k-character strings answered 504 after 43 s
against a 10 s timeout and meanwhile every other /sql request, even SELECT 1,
got 504 (pgwire 18.7 s, MCP 22 s). Now a statement is answered within its
deadline plus a second, a worker stuck in DuckDB is replaced, and short
statements are served while long ones run, on every entry point.

A sampler kills the server if its RSS runs past three times the bound, so a
regression fails the test without taking the machine with it."""
import json
import os
import threading
import time

import psycopg
import pytest
import requests

from conftest import Server, dataset_block, server_block, sql as duckdb_sql, write_parquet
from pgwire_util import pg_port
from test_arrow_http import asan_env

MIB = 1024 * 1024
LIMIT_MIB = 256                  # memory_limit below
BUDGET_MIB = LIMIT_MIB + 128     # engine.c budget_for: + max(1/4, 128 MiB)
# The idle process (index, HTTP) and what RSS holds beyond the budget's count:
# jemalloc's dirty pages between the budget watcher's purges (every 100 ms,
# past a slack of a quarter of this small budget: 96 MiB) and glibc's
# allocations, per thread. Was 160, then 224 when the engine's lanes (one
# thread set per job class) raised the peak from 395-472 to 448-602 MiB:
# consecutive statements run on different threads, and what one freed stayed
# resident in its arenas beside the next one's budget (engine/budget.cc).
# Since eng_budget_settle purges and trims after a job that freed an eighth
# of the budget, and the watcher's slack scales with the budget: peak
# 391-466 MiB in 13 runs (idle 48-49, loads 5-16; the build before the
# change, alternated with it: 370-554 in 15), under ASan 436-487 (idle
# 83-84, 6 runs, loads 7-14).
# What the test guards against is the unbounded case: 2.3 GB and 8 GB.
MARGIN_MIB = 160


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


class Peak:
    """Samples a process's RSS every 20 ms; kills it past `kill_mib`."""

    def __init__(self, pid, kill_mib):
        self.pid, self.kill_mib, self.peak, self.killed = pid, kill_mib, 0.0, False
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self):
        while not self._stop.is_set():
            try:
                r = rss_mib(self.pid)
            except OSError:
                return
            self.peak = max(self.peak, r)
            if r > self.kill_mib:
                self.killed = True
                os.kill(self.pid, 9)
                return
            time.sleep(0.02)

    def stop(self):
        self._stop.set()
        self._t.join()
        return self.peak


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    d = tmp_path_factory.mktemp("limits")
    data = d / "data"
    data.mkdir()
    f = write_parquet(data / "t.parquet",
                      "SELECT i AS id, 'name ' || i AS s, i % 7 AS k FROM range(1000) t(i)")
    cfg = (server_block(memory_limit=f"{LIMIT_MIB}MiB", request_timeout_ms=1500, workers=2) +
           "[sql]\nenabled = true\nmax_rows = 10\n[mcp]\nenabled = true\nexpose_sql = true\n"
           "[server.pgwire]\nenabled = true\nport = 0\n" + dataset_block("t", f))
    s = Server(d, cfg, env=asan_env())  # RSS means what the server holds, under ASan too
    s.start()
    s.wait_ready()
    s.pg = pg_port(s)
    # idle: once RSS stops moving
    idle = rss_mib(s.proc.pid)
    for _ in range(50):
        time.sleep(0.1)
        now = rss_mib(s.proc.pid)
        if abs(now - idle) < 2:
            break
        idle = now
    s.idle = idle
    yield s
    s.stop()


def sql(s, text, timeout=60):
    return requests.post(s.url("/api/v1/sql"), json={"sql": text}, timeout=timeout)


def mcp_sql(s, text, timeout=60):
    rpc = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
           "params": {"name": "sql", "arguments": {"sql": text}}}
    return requests.post(s.url("/mcp"), data=json.dumps(rpc), timeout=timeout,
                         headers={"Content-Type": "application/json",
                                  "Accept": "application/json, text/event-stream"})


def pg(s, text):
    with psycopg.connect(host="127.0.0.1", port=s.pg, user="vitrine", dbname="vitrine",
                         autocommit=True) as c:
        return c.execute(text).fetchall()


# The probe's memory catalogue, and compositions no single call controls.
HOG = [
    "SELECT len(range(30000000))",
    "SELECT len(range(100000000))",
    "SELECT length(repeat('x', 3000000000))",
    "SELECT damerau_levenshtein(repeat('a', 30000), repeat('b', 30000))",
    "SELECT levenshtein(repeat('a', 150000), repeat('b', 150000))",
    "SELECT len(list_resize([1], 100000000))",
    "SELECT length(lpad('x', 2000000000, 'y'))",
    "SELECT length(rpad('x', 2000000000, 'yz'))",
    "SELECT length(printf('%1000000000d', 1))",
    "SELECT length(printf('%.100000000f', 1.5))",
    "SELECT length(format('{:>1000000000}', 1))",
    "SELECT length(bitstring('1', 2000000000))",
    "SELECT len(repeat([1, 2, 3], 100000000))",
    "SELECT len(generate_series(1, 100000000))",
    "SELECT max(len(l)) FROM (SELECT range(1000000) AS l FROM range(1000))",
    "SELECT len(list(i)) FROM range(300000000) t(i)",
    "SELECT count(DISTINCT s) FROM (SELECT repeat('x', 100000) || i AS s FROM range(100000) t(i))",
    "WITH RECURSIVE r(s, n) AS (SELECT 'x', 0 UNION ALL SELECT s || s, n + 1 FROM r WHERE n < 40) "
    "SELECT max(length(s)) FROM r",
    "SELECT length(string_agg(repeat('x', 60000000), '')) FROM range(40)",
    "SELECT len(flatten(list(range(1000000)))) FROM range(200)",
    "SELECT max(length(s)) FROM (SELECT lpad('x', 1000000, 'y') || i AS s FROM range(3000) t(i))",
    "SELECT count(*) FROM (SELECT i, repeat('y', 200) AS s FROM range(20000000) t(i) ORDER BY s, i DESC)",
    "SELECT json_structure(repeat('[', 100000) || repeat(']', 100000))",
]


@pytest.mark.serial
def test_memory_stays_within_the_budget_whatever_the_statement(srv):
    bound = srv.idle + BUDGET_MIB + MARGIN_MIB
    watch = Peak(srv.proc.pid, kill_mib=3 * bound)
    try:
        for i, text in enumerate(HOG):
            if i % 3 == 1:
                r = mcp_sql(srv, text)
                assert r.status_code == 200, (text, r.text[:300])
                status = 400 if r.json()["result"]["isError"] else 200
            elif i % 3 == 2:
                try:
                    pg(srv, text)
                    status = 200
                except psycopg.Error:
                    status = 400
            else:
                r = sql(srv, text)
                status = r.status_code
                assert r.status_code in (400, 504), (text, r.status_code, r.text[:300])
            assert not watch.killed, f"RSS passed {3 * bound:.0f} MiB on {text}"
            # the server is still there and answers
            assert sql(srv, "SELECT 1").status_code == 200, text
            # Refused, except what fits the budget: the sort spills; pgwire's
            # shapes (main 289008d) run the max(len(...)) one as a prepared
            # statement, which DuckDB answers within the bound (RSS checked)
            assert status != 200 or text.startswith(
                ("SELECT count(*) FROM (SELECT i, repeat", "SELECT max(len(l))")), text
    finally:
        peak = watch.stop()
    print(f"idle {srv.idle:.0f} MiB, peak {peak:.0f} MiB, bound {bound:.0f} MiB")
    assert not watch.killed
    assert peak <= bound, (srv.idle, peak, bound)


@pytest.mark.serial
def test_spill_is_capped(vt, datadir, tmp_path):
    spill = tmp_path / "spill"
    s = vt(server_block(memory_limit="128MiB", request_timeout_ms=60000, temp_directory=str(spill),
                        max_temp_directory_size="64MiB") + "[sql]\nenabled = true\n")

    def spilled():
        total = 0
        for root, _, files in os.walk(spill):
            for f in files:
                try:
                    total += os.path.getsize(os.path.join(root, f))
                except OSError:
                    pass
        return total

    most = [0]
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            most[0] = max(most[0], spilled())
            time.sleep(0.02)

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    try:
        r = sql(s, "SELECT max(n) FROM (SELECT row_number() OVER (ORDER BY h DESC) AS n FROM "
                   "(SELECT md5(i::VARCHAR) || md5((i + 1)::VARCHAR) AS h FROM range(6000000) t(i)))",
                timeout=120)
    finally:
        stop.set()
        t.join()
    assert r.status_code == 400, (most[0] / MIB, r.text[:300])
    assert "max_temp_directory_size" in r.text or "temp" in r.text.lower(), r.text[:300]
    print(f"spilled at most {most[0] / MIB:.1f} MiB")
    assert 0 < most[0] <= 64 * MIB + 8 * MIB, most[0]
    assert sql(s, "SELECT 42 AS x").json()["data"] == [{"x": 42}]


def timed(fn):
    t = time.monotonic()
    out = fn()
    return time.monotonic() - t, out


# ~1 s of edit distances per vector of 2,048 rows: DuckDB cannot interrupt
# inside one vector, and the statement is far longer than the deadline.
SLOW = ("SELECT sum(levenshtein(repeat('a', 200) || (i % 10), repeat('b', 210))) "
        "FROM range(1000000) t(i)")
TIMEOUT_S = 1.5
SLACK_S = 1.5


@pytest.mark.serial
def test_deadline_holds_on_every_entry_point_and_short_statements_pass(srv):
    results = {}

    def via_sql():
        results["sql"] = timed(lambda: sql(srv, SLOW))

    def via_mcp():
        results["mcp"] = timed(lambda: mcp_sql(srv, SLOW))

    def via_pg():
        def run():
            try:
                pg(srv, SLOW)
                return None
            except psycopg.Error as e:
                return e.sqlstate
        results["pg"] = timed(run)

    threads = [threading.Thread(target=f) for f in (via_sql, via_mcp, via_pg)]
    for t in threads:
        t.start()
    time.sleep(0.4)
    short = [timed(lambda: sql(srv, "SELECT 1"))[0] for _ in range(5)]
    short += [timed(lambda: pg(srv, "SELECT 1"))[0] for _ in range(3)]
    for t in threads:
        t.join()
    took, r = results["sql"]
    assert r.status_code == 504 and r.json()["code"] == "timeout", r.text
    assert took <= TIMEOUT_S + SLACK_S, took
    took, r = results["mcp"]
    assert r.status_code == 200, r.text
    res = r.json()["result"]
    assert res["isError"] is True and "timeout" in json.dumps(res), r.text
    assert took <= TIMEOUT_S + SLACK_S, took
    took, state = results["pg"]
    assert state == "57014", state
    assert took <= TIMEOUT_S + 2 * SLACK_S, took
    # short statements did not wait for the long ones
    assert max(short) < TIMEOUT_S, short
    # everything still answers (whether a stuck job's worker was replaced
    # depends on how long DuckDB took to see the interrupt: not asserted)
    assert sql(srv, "SELECT count(*) FROM t").json()["data"][0] == {"count_star()": 1000}


CAPS = [
    ("SELECT levenshtein(repeat('a', 1001), repeat('b', 1000))", "levenshtein"),
    ("SELECT damerau_levenshtein(repeat('a', 2000), repeat('b', 2000))", "damerau_levenshtein"),
    ("SELECT jaro_similarity(repeat('a', 2000), repeat('b', 2000))", "jaro_similarity"),
    ("SELECT lpad('x', 1000001, 'y')", "lpad"),
    ("SELECT rpad('x', 1000001, 'y')", "rpad"),
    ("SELECT bitstring('1', 1000001)", "bitstring"),
    ("SELECT repeat('ab', 40000000)", "repeat"),
    ("SELECT repeat([1, 2], 600000)", "repeat"),
    ("SELECT list_resize([1], 1000001)", "list_resize"),
    ("SELECT range(1000001)", "range"),
    ("SELECT generate_series(0, 2000000)", "range"),
    ("SELECT range(TIMESTAMP '2000-01-01', TIMESTAMP '2024-01-01', INTERVAL 1 MINUTE)", "range"),
    ("SELECT printf('%20000d', 1)", "printf"),
    ("SELECT printf('%*d', 5, 1)", "printf"),
    ("SELECT format('{:>20000}', 1)", "format"),
    ("SELECT format('{:{}}', 1, 5)", "format"),
    ("SELECT json_contains(repeat('[', 2000) || repeat(']', 2000), '1')", "json_contains"),
    ("SELECT json_merge_patch('{}', repeat('{\"a\":', 2000) || '1' || repeat('}', 2000))",
     "json_merge_patch"),
    ("SELECT json_group_structure(j) FROM (SELECT (repeat('[', 5000) || repeat(']', 5000))::JSON j)",
     "json_structure"),
    ("SELECT sum(levenshtein(repeat('a', 400) || i, repeat('b', 400))) FROM range(5000) t(i)",
     "levenshtein"),
    # the structure is parsed into a type recursively at bind: 100,000 '['
    # overflowed the stack and took the server down (stop 39's CI fuzz run)
    # DuckDB negates the offset unchecked where the window has no ORDER BY:
    # INT64_MIN read outside the partition and took the server down (fuzz7)
    ("SELECT lag(id, -9223372036854775808) OVER () FROM t", "lag"),
    ("SELECT lead(id, -9223372036854775807 - 1) OVER () FROM t", "lead"),
    ("SELECT lag(id, CAST(-9223372036854775808 AS HUGEINT), 0) OVER () FROM t", "lag"),
    # each nested collation doubles its text in one call nothing interrupts:
    # 54 deep ran on past its deadline without end (fuzz7's fuzz run)
    ("SELECT length(" + "icu_collate_mn(" * 54 + "'x'" + ")" * 54 + ")", "icu_collate_mn"),
    # macros nested in macros expand exponentially at bind: round_even 44
    # deep kept a core busy long after its 504 (fuzz7's fuzz run)
    ("SELECT " + "round_even(" * 44 + "NULL" + ", NULL)" * 44, "round_even"),
    ("SELECT " + "nullif(" * 30 + "'a'" + ", 'b')" * 30, "nullif"),
    # format_pg_type copies its argument 15 times: 6 deep would bind for
    # half an hour (stop 41's CI, fuzz_sql_functions' watchdog)
    ("SELECT " + "format_pg_type(" * 6 + "'abc'" + ", 'YYYY-MM-DD HH24:MI')" * 6,
     "format_pg_type"),
    # integer bins past ~1,000 per unit of the range looped without end, and
    # the abandoned worker kept a core (fuzz7's probe)
    ("SELECT equi_width_bins(0, 10, 20000, false)", "equi_width_bins"),
    # PostgreSQL's templates, up to 10,000 bytes (engine/pg_dates.c)
    ("SELECT to_char(TIMESTAMP '2020-01-01', '" + "Y" * 10001 + "')", "to_char"),
    ("SELECT to_timestamp('2020', '" + "Y" * 10001 + "')", "to_timestamp"),
    ("SELECT histogram(id, equi_width_bins(0, 10, 1000000, false)) FROM t", "equi_width_bins"),
] + [(f"SELECT {fn}('{{}}', '{'[' * 100000}{']' * 100000}')", fn)
     for fn in ("json_transform", "json_transform_strict", "from_json", "from_json_strict")]
# (the structure a literal: a structure must be a constant, and what
# repeat() builds is not one, engine/functions.c)


@pytest.mark.parametrize("text,fn", CAPS, ids=[c[0][:50] for c in CAPS])
def test_caps_refuse_with_a_message_naming_the_limit(srv, text, fn):
    r = sql(srv, text)
    assert r.status_code == 400, r.text[:300]
    msg = r.json()["error"]
    assert fn in msg and "limit" in msg, msg
    assert r.json()["code"] == "limit_exceeded", r.text[:300]
    assert sql(srv, "SELECT 1").status_code == 200


def test_json_transform_with_a_nested_structure_still_answers(srv):
    """The checker in front of the structure keeps it a constant (binding
    requires one) and lets a nested one through. 100 levels: 900 took 0.5 s
    (1 s under ASan, past this module's 1.5 s timeout on a loaded machine)."""
    deep = "'" + '{"a":' * 100 + '["INTEGER"]' + '}' * 100 + "'"
    doc = "repeat('{\"a\":', 100) || '[1, 2]' || repeat('}', 100)"
    r = sql(srv, f"SELECT from_json('{{\"a\": [1, 2]}}', '{{\"a\": [\"INTEGER\"]}}') AS s, "
                 f"json_transform_strict('[1]', '[\"BIGINT\"]') AS t, "
                 f"length(from_json({doc}, {deep})::VARCHAR) AS n")
    assert r.status_code == 200, r.text[:300]
    assert r.json()["data"] == [{"s": {"a": [1, 2]}, "t": [1], "n": 100 * 7 + 6}]



# Statements that took the server down (SIGSEGV, nothing logged) before the
# gate refused them, through every entry point: JSON to VARIANT recurses
# over the document (30,000 '[' overflow the stack); lead/lag with
# INT64_MIN as offset read outside the partition (fuzz7's probe).
CRASHED = [
    ("SELECT (repeat('[', 100000) || repeat(']', 100000))::JSON::VARIANT",
     "sql_forbidden_function", "VARIANT"),
    ("SELECT variant_typeof(TRY_CAST((repeat('[', 30000) || repeat(']', 30000))::JSON AS VARIANT))",
     "sql_forbidden_function", "VARIANT"),
    ("SELECT lead(id, -9223372036854775808) OVER () FROM t", "limit_exceeded", "lead"),
    ("SELECT lag(id, -9223372036854775808, 5) OVER () FROM t", "limit_exceeded", "lag"),
]


@pytest.mark.parametrize("text,code,word", CRASHED, ids=[c[0][:50] for c in CRASHED])
def test_statements_that_crashed_the_server_are_refused_everywhere(srv, text, code, word):
    r = sql(srv, text)
    assert r.status_code == 400, r.text[:300]
    assert r.json()["code"] == code and word in r.json()["error"], r.text[:300]
    r = mcp_sql(srv, text)
    assert r.status_code == 200, r.text[:300]
    res = r.json()["result"]
    assert res["isError"] is True and word in json.dumps(res), r.text[:300]
    with pytest.raises(psycopg.Error) as e:
        pg(srv, text)
    assert word in str(e.value), str(e.value)
    assert srv.proc.poll() is None
    assert sql(srv, "SELECT 1").status_code == 200


def test_equi_width_bins_within_the_limit_still_answers(srv):
    r = sql(srv, "SELECT equi_width_bins(0, 10, 1000, false) AS a, "
                 "len(equi_width_bins(0.0, 1.0, 1000, false)) AS b")
    assert r.status_code == 200, r.text[:300]
    assert r.json()["data"] == [{"a": list(range(11)), "b": 1000}]


def test_lead_lag_with_constant_offsets_still_answer(srv):
    r = sql(srv, "SELECT id, lag(id, 2) OVER (ORDER BY id) AS a, lead(id, -1, 0) OVER (ORDER BY id) "
                 "AS b, lag(id, NULL) OVER (ORDER BY id) AS c FROM t ORDER BY id LIMIT 3")
    assert r.status_code == 200, r.text[:300]
    assert r.json()["data"] == [{"id": 0, "a": None, "b": 0, "c": None},
                                {"id": 1, "a": None, "b": 0, "c": None},
                                {"id": 2, "a": 0, "b": 1, "c": None}]


def nest(fn, inner, depth, tail=""):
    return (fn + "(") * depth + inner + (tail + ")") * depth


# Functions whose result is a multiple of their argument, in one call nothing
# interrupts, and 2^n nested in one another: bin 7 deep over 1,000 bytes made
# a 2.1 GB string (4 GB RSS), to_hex 29 deep over 200 KB ran on past its
# deadline (fuzz8's fuzz run). engine/functions.c counts each result's bytes
# before the call (VT_SQL_MAX_GROWN_BYTES, 16 MiB; 256 MiB for a vector).
GROWN = [
    ("SELECT length(" + nest("bin", "repeat('x', 1000)", 7) + ")", "bin"),
    ("SELECT length(" + nest("to_hex", "repeat('x', 200000)", 29) + ")", "to_hex"),
    ("SELECT length(" + nest("hex", "'x'", 30) + ")", "hex"),
    ("SELECT length(" + nest("to_binary", "'ab'", 10) + ")", "to_binary"),
    # '%' encodes to '%25': nested, url_encode grows by a third; one call x3
    ("SELECT length(url_encode(repeat('é', 3000000)))", "url_encode"),
    ("SELECT length(to_base64(repeat('x', 13000000)::BLOB))", "to_base64"),
    ("SELECT length(" + nest("regexp_escape", "repeat('.', 1000)", 30) + ")", "regexp_escape"),
    ("SELECT length(" + nest("replace", "'a'", 40, ", 'a', 'aa'") + ")", "replace"),
    ("SELECT length(replace(repeat('a', 100000), 'a', repeat('b', 1000)))", "replace"),
    # each row within the limit, a vector of them together past 256 MiB
    ("SELECT sum(length(bin(repeat('x', 20000) || i))) FROM range(3000) t(i)", "bin"),
    # an argument named by its position N times is N copies of it: 60,000
    # of a 1 MB string, and 2^30 nested (fuzz9's findings)
    ("SELECT length(printf(repeat('%1$s', 60000), repeat('a', 1000000)))", "printf"),
    ("SELECT length(" + "printf('%1$s%1$s', " * 30 + "'a'" + ")" * 30 + ")", "printf"),
    ("SELECT length(format(repeat('{0}', 60000), repeat('a', 1000000)))", "format"),
    # ~10x the format (a constant) for every row: %c writes 19 bytes for 2
    # (formats as literals: one must be a constant, and what repeat() builds
    # is not one; before, repeat('%c', 1e6) ran on past its deadline)
    ("SELECT length(strftime(TIMESTAMP '2020-01-01', '" + "%c" * 100000 + "'))", "strftime"),
    ("SELECT length(strftime('" + "%A" * 6000 + "', DATE '2020-01-01'))", "strftime"),
    ("SELECT sum(length(strftime(TIMESTAMP '2020-01-01' + to_seconds(i), '" + "%c" * 6000 + "'))) "
     "FROM range(1000000) t(i)", "strftime"),
    # 4 spaces of indentation a level on every line: 40 KB of brackets made
    # 1.6 GB in one call
    ("SELECT length(json_pretty(repeat('[', 20000) || repeat(']', 20000)))", "json_pretty"),
    ("SELECT length(json_pretty('[' || repeat(repeat('[', 1000) || repeat(']', 1000) || ',', 100) "
     "|| '0]'))", "json_pretty"),
    ("SELECT sum(length(json_pretty(repeat('[', 1000) || i || repeat(']', 1000)))) "
     "FROM range(3000) t(i)", "json_pretty"),
    # a control byte escapes to 6 bytes (\u0001), a quote to 2
    ("SELECT length(to_json(repeat(chr(1), 2900000)))", "to_json"),
    ("SELECT length(json_quote(repeat('\"', 9000000)))", "json_quote"),
    ("SELECT length(array_to_json([repeat(chr(1), 2900000)]))", "array_to_json"),
    ("SELECT length(row_to_json({'k': repeat(chr(1), 2900000)}))", "row_to_json"),
    # json_array/json_object escape like to_json: nested over ::VARCHAR 30
    # deep answered 504 and ran on (2.3 CPU s, 234 MiB)
    ("SELECT length(" + "json_array(" * 30 + "'\\\\'" + ")::VARCHAR" * 30 + ")", "json_array"),
    ("SELECT length(json_array(1, repeat(chr(1), 2900000))::VARCHAR)", "json_array"),
    ("SELECT length(json_object('k', repeat(chr(1), 2900000))::VARCHAR)", "json_object"),
    # \0 (the match) in the replacement: '\0\0' doubles the text, 30 deep
    # ran 4.5-7.6 CPU s past a 504 (over '.' with 'g'; here one match a
    # level, which runs in less time than this module's deadline); 1,000
    # literal bytes for each of 1e6 matches made 1 GB in one call
    ("SELECT length(" + nest("regexp_replace", "'ab'", 30, ", '.+', '\\0\\0'") + ")",
     "regexp_replace"),
    ("SELECT length(regexp_replace(repeat('a', 1000000), 'a', '" + "b" * 1000 + "', 'g'))",
     "regexp_replace"),
    ("SELECT length(regexp_replace(repeat('ab', 3000000), '.', '\\0\\0\\0', 'g'))",
     "regexp_replace"),
]


@pytest.mark.serial
@pytest.mark.parametrize("text,fn", GROWN, ids=[f"{c[1]}-{i}" for i, c in enumerate(GROWN)])
def test_functions_that_multiply_their_input_are_refused_before_the_call(srv, text, fn):
    bound = srv.idle + BUDGET_MIB + MARGIN_MIB
    watch = Peak(srv.proc.pid, kill_mib=3 * bound)
    try:
        took, r = timed(lambda: sql(srv, text))
    finally:
        peak = watch.stop()
    print(f"{fn}: {r.status_code} in {took:.2f} s, peak {peak:.0f} MiB (idle {srv.idle:.0f})")
    assert not watch.killed, f"RSS passed {3 * bound:.0f} MiB"
    assert r.status_code == 400, r.text[:300]
    msg = r.json()["error"]
    assert fn in msg and "limit" in msg, msg
    assert r.json()["code"] == "limit_exceeded", r.text[:300]
    assert took <= TIMEOUT_S + SLACK_S, took
    assert peak <= bound, (srv.idle, peak, bound)
    assert sql(srv, "SELECT 1").status_code == 200


def test_functions_that_multiply_their_input_answer_within_the_limit(srv):
    """The checkers hand their argument on as it was: same overload, same
    value (integers, BIGNUM, blobs, NULLs), and replace is DuckDB's."""
    r = sql(srv, "SELECT hex(255) AS a, hex('ab') AS b, to_hex('ab'::BLOB) AS c, bin(5) AS d, "
                 "to_binary(NULL) AS e, hex(170141183460469231731687303715884105727::HUGEINT) AS f, "
                 "url_encode('a b/é') AS g, to_base64('abc') AS h, base64('\\xAA'::BLOB) AS i, "
                 "regexp_escape('a.b') AS j, replace('abcabc', 'b', 'XX') AS k, "
                 "replace('aaa', 'aa', 'b') AS l, replace('abc', '', 'z') AS m, "
                 "replace('éé', 'é', 'e') AS n, length(hex(repeat('x', 1000000))) AS o, "
                 "length(" + nest("hex", "'x'", 20) + ") AS p, hex(1::BIGNUM) AS q")
    assert r.status_code == 200, r.text[:300]
    assert r.json()["data"] == [{
        "a": "FF", "b": "6162", "c": "6162", "d": "101", "e": None,
        "f": "7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF", "g": "a%20b%2F%C3%A9", "h": "YWJj", "i": "qg==",
        "j": "a\\.b", "k": "aXXcaXXc", "l": "ba", "m": "abc", "n": "ee", "o": 2000000,
        "p": 2 ** 20, "q": "80000101"}]


# Within the limits the wrappers answer what DuckDB answers (build/vt-sql,
# without them), byte for byte: every column as DuckDB's text.
WITHIN = [
    "SELECT printf('%1$s-%2$d', 'a', 42) AS a, printf('%s|%5.2f|%-4d|', 'x', 3.14159, 7) AS b, "
    "format('{1}{0}', 'a', 'b') AS c, format('{}:{:>6}', 'k', 1.5) AS d, printf('%%') AS e, "
    "printf('%3$d %1$d %2$d', 1, 2, 3) AS f, printf('%1$10s', 'r') AS g, "
    "length(printf(repeat('%s', 16), " + ", ".join(["repeat('x', 1000)"] * 16) + ")) AS h",
    "SELECT strftime(TIMESTAMP '2020-02-03 04:05:06.789', '%c|%x|%X|%A %B %j %U') AS a, "
    "strftime('%Y-%m', DATE '2021-05-01') AS b, "
    "strftime(TIMESTAMP_NS '2020-01-01 00:00:00.123456789', '%n') AS c, strftime(NULL, '%Y') AS d, "
    "strftime(TIMESTAMP_S '2020-01-01 01:02:03', '%c') AS e, "
    "length(strftime(DATE '2020-01-01', '" + "%c" * 5000 + "')) AS f, "
    "strftime('%d', TIMESTAMP_MS '2020-01-09 00:00:00') AS g",
    "SELECT json_pretty('[1,{\"a\":[],\"b\":[1e9, -0.5e-3, \"x\\\"y\"]}, {}, [[ ]], null, true]') AS a, "
    "json_pretty({'a': 1, 'b': [1, 2]}) AS b, json_pretty(NULL) AS c, "
    "length(json_pretty(repeat('[', 2048) || repeat(']', 2048))) AS d, json_pretty('3') AS e, "
    "json_pretty(' [ 1 , 2 ] ') AS f, json_pretty('{\"k\": \"\\u00e9\\/\"}') AS g",
    "SELECT to_json('a\"b') AS a, json_quote('x\\y') AS b, to_json({'k': [1, 2], 'v': 'é\"'}) AS c, "
    "to_json(NULL) AS d, typeof(to_json(1)) AS e, to_json('[1]'::JSON) AS f, json_group_array(s) AS g, "
    "json_group_object(s, s) AS h, typeof(json_group_array(s)) AS i, "
    "length(to_json(repeat(chr(1), 2000000))) AS j FROM (VALUES ('q\"'), ('r')) t(s)",
    "SELECT array_to_json(['a\"', NULL]) AS a, array_to_json(NULL) AS b, "
    "row_to_json({'k': 'x\"', 'n': 1}) AS c, typeof(row_to_json({'k': 1})) AS d, "
    "array_to_json([[1, 2], []]) AS e, (SELECT row_to_json(t) FROM (SELECT 1 AS a, 'q' AS b) t) AS f",
    "SELECT json_array() AS a, json_array(1, 'x\"', NULL, [1, 2], {'k': 'v'}, 1.5, '[1]'::JSON) AS b, "
    "json_object() AS c, json_object('a', 1, 'b', 'x\"', 'c', [1], 'd', NULL) AS d, "
    "typeof(json_array(1)) AS e, typeof(json_object('k', 1)) AS f, "
    "json_array(" + ", ".join(str(i) for i in range(100)) + ") AS g, "
    "json_object(" + ", ".join(f"'k{i}', {i}" for i in range(50)) + ") AS h, "
    "length(json_array(repeat(chr(1), 2000000))::VARCHAR) AS i, json_object(s, s) AS j "
    "FROM (VALUES ('q\"'), ('r')) t(s)",
    "SELECT regexp_replace('abcABC', 'b', 'X', 'gi') AS a, regexp_replace('abc', 'b', 'Y') AS b, "
    "regexp_replace(NULL, 'b', 'Y', 'g') AS c, regexp_replace('abc', 'b', NULL) AS d, "
    "regexp_replace('a.b.c', '\\.', '\\\\', 'g') AS e, regexp_replace('abc', '(b)', '[\\1\\0]') AS f, "
    "regexp_replace(s, 'q', r, 'g') AS g, length(regexp_replace(repeat('ab', 200000), 'a', 'xy', 'g')) AS h, "
    "regexp_replace('aaa', 'a', '\\\\0', 'g') AS i "
    "FROM (VALUES ('qq', 'Z'), ('q', NULL)) t(s, r)",
]


@pytest.mark.parametrize("text", WITHIN, ids=["printf-format", "strftime", "json_pretty", "to_json",
                                         "array_row_to_json", "json_array-object", "regexp_replace"])
def test_bounded_functions_within_their_limits_answer_as_duckdb(srv, text):
    want = duckdb_sql(text)
    r = sql(srv, f"SELECT COLUMNS(*)::VARCHAR FROM ({text})")
    assert r.status_code == 200, r.text[:300]
    got = [list(row.values()) for row in r.json()["data"]]
    assert got == want


def test_repeat_checks_the_value_it_repeats(srv):
    """repeat's macro used x twice: a volatile x was evaluated twice, the
    checker measured one value and repeat built the other (100 MB past the
    64 MiB limit in a quarter of these statements). Now x and n are
    evaluated once, and repeat nests without multiplying at bind."""
    text = ("SELECT length(repeat(CASE WHEN random() < 0.5 THEN 'a' ELSE repeat('a', 100) END, "
            "1000000)) AS n")
    for _ in range(24):
        r = sql(srv, text)
        if r.status_code == 400:
            assert "repeat" in r.json()["error"] and "limit" in r.json()["error"], r.text[:300]
            assert r.json()["code"] == "limit_exceeded", r.text[:300]
        else:
            assert r.status_code == 200 and r.json()["data"] == [{"n": 1000000}], r.text[:300]
    r = sql(srv, "SELECT length(" + nest("repeat", "'ab'", 30, ", 1") + ") AS a, "
                 "repeat('a', (SELECT 2)) AS b, repeat([1, 2], 2::INTEGER) AS c")
    assert r.status_code == 200, r.text[:300]
    assert r.json()["data"] == [{"a": 2, "b": "aa", "c": [1, 2, 1, 2]}]
    # in a table function's arguments too (a lambda's "vt:r".x bound there
    # as the string 'vt:r.x')
    r = sql(srv, "SELECT count(*) AS n FROM unnest(string_split(repeat('a,', 3), ','))")
    assert r.status_code == 200 and r.json()["data"] == [{"n": 4}], r.text[:300]


@pytest.mark.serial
def test_to_json_nested_over_text_stops_within_the_deadline(srv):
    """to_json over its own result cast to text escapes the quotes and
    backslashes again: 2^n. Each level's result is checked (16 MiB), and
    not folded at plan time: there, DuckDB re-ran the levels below at every
    level above the one that failed (30 levels over a backslash: 400 after
    4.3 s, past the deadline). Under this server's 256 MiB memory_limit
    DuckDB's allocation for the level after the last one checked fails
    first; a larger one refuses by the check."""
    bound = srv.idle + BUDGET_MIB + MARGIN_MIB
    for depth in (25, 30):
        text = "SELECT length(" + "to_json(" * depth + "'\\\\'" + ")::VARCHAR" * depth + ")"
        watch = Peak(srv.proc.pid, kill_mib=3 * bound)
        try:
            took, r = timed(lambda: sql(srv, text))
        finally:
            peak = watch.stop()
        print(f"to_json {depth} deep: {r.status_code} in {took:.2f} s, peak {peak:.0f} MiB")
        assert r.status_code == 400, r.text[:300]
        msg = r.json()["error"]
        assert (("to_json" in msg and "limit" in msg and r.json()["code"] == "limit_exceeded")
                or ("Out of Memory" in msg and r.json()["code"] == "query_failed")), msg
        assert took <= TIMEOUT_S, took
        assert peak <= bound, (srv.idle, peak, bound)


def test_nests_over_a_built_constant_are_not_folded(srv):
    """Folding a nest of functions over a constant costs depth^2 x its size
    in DuckDB's optimizer, where nothing interrupts it: format 38 deep over
    repeat('a,', 500000) (fuzz_sql_functions' campaign) answered 504 while
    its worker went on. What repeat, lpad, range... build is not a constant
    now (their checkers are volatile): evaluated once per level."""
    text = "SELECT length(" + nest("format", "repeat('a,', 500000)", 38) + ") AS n"
    took, r = timed(lambda: sql(srv, text))
    assert r.status_code == 200, r.text[:300]
    assert r.json()["data"] == [{"n": 1000000}]
    assert took <= TIMEOUT_S, took


def test_ordered_aggregates_that_fail_are_refused(srv):
    """arg_max(x, y, NULL ORDER BY z) over groups failed leaving a state per
    group that DuckDB 1.4.4 never frees (96 KB a statement for 1,000 groups;
    fuzz_sql_functions' campaign, LeakSanitizer): refused before it runs.
    Ordered aggregates that do not fail on their values still answer."""
    r = sql(srv, "SELECT arg_max(s, id, NULL ORDER BY s) FROM t GROUP BY k")
    assert r.status_code == 400, r.text[:300]
    assert r.json()["code"] == "sql_forbidden_function" and "arg_max" in r.json()["error"]
    r = sql(srv, "SELECT k, string_agg(s, ',' ORDER BY id DESC) AS a, arg_max(s, id ORDER BY id) AS b "
                 "FROM t WHERE id < 8 GROUP BY k ORDER BY k LIMIT 1")
    assert r.status_code == 200, r.text[:300]
    assert r.json()["data"] == [{"k": 0, "a": "name 7,name 0", "b": "name 7"}]


# A bounded function's refusal is raised inside DuckDB, which reports it as
# any failure ("Invalid Input Error: ..."): the engine marks its message
# (util/errors.h, vt_limit_marker), and every entry point answers
# limit_exceeded / SQLSTATE 54000 for it, the marker taken out.
REFUSED = [
    ("SELECT repeat('ab', 40000000) AS r", "repeat"),
    ("SELECT length(" + nest("hex", "repeat('x', 100000)", 10) + ") AS n", "hex"),
    ("SELECT length(printf(repeat('%1$s', 3), 'a')) AS n", "printf"),
    ("SELECT id, lpad(s, 1000000 + id, 'y') AS p FROM t ORDER BY id", "lpad"),
    ("SELECT strftime(TIMESTAMP '2020-01-01', '" + "%Y" * 5001 + "') AS c", "strftime"),
    ("SELECT k, sum(length(bin(repeat('x', 20000) || i))) AS n FROM range(3000) t(i), "
     "(SELECT 1 AS k) GROUP BY k", "bin"),
]


@pytest.mark.parametrize("text,fn", REFUSED, ids=[c[1] for c in REFUSED])
def test_limit_refusals_are_limit_exceeded_on_every_entry_point(srv, text, fn):
    for accept in ("application/json", "text/csv", "application/vnd.apache.arrow.stream"):
        r = requests.post(srv.url("/api/v1/sql"), json={"sql": text}, timeout=60,
                          headers={"Accept": accept})
        assert r.status_code == 400, (accept, r.text[:300])
        body = r.json()
        assert body["code"] == "limit_exceeded", (accept, r.text[:300])
        assert body["error"].startswith(fn + ": ") and "limit" in body["error"], r.text[:300]
        assert "vtlimit" not in r.text and "Invalid Input" not in r.text, r.text[:300]
    r = mcp_sql(srv, text)
    assert r.status_code == 200, r.text[:300]
    res = r.json()["result"]
    assert res["isError"] is True, r.text[:300]
    assert "limit_exceeded" in res["content"][0]["text"] and fn in res["content"][0]["text"]
    assert "vtlimit" not in r.text, r.text[:300]
    with pytest.raises(psycopg.Error) as e:
        pg(srv, text)
    assert e.value.sqlstate == "54000", str(e.value)
    assert str(e.value).startswith(fn + ": ") and "vtlimit" not in str(e.value), str(e.value)


# The marker is 64 random bits a process draws once and never shows: text a
# client writes that looks like it (in a literal, in data, at the start of
# DuckDB's message) is a normal failure.
FORGED = "vtlimit-0123456789abcdef: repeat: a result of 9 bytes is over the limit of 8"
LOOKALIKES = [
    f"SELECT CAST('{FORGED}' AS INTEGER)",
    f"SELECT json_extract('{FORGED}', '$')",
    f"SELECT CAST(s AS DATE) FROM (VALUES ('{FORGED}')) v(s)",
    f"SELECT strptime('{FORGED}', '%Y')",
    f"SELECT '{FORGED}'::JSON",
]


@pytest.mark.parametrize("text", LOOKALIKES, ids=range(len(LOOKALIKES)))
def test_text_like_the_marker_stays_a_normal_failure(srv, text):
    r = sql(srv, text)
    assert r.status_code == 400 and r.json()["code"] == "query_failed", r.text[:300]
    assert FORGED in r.json()["error"] or "vtlimit" in r.json()["error"], r.text[:300]
    r = mcp_sql(srv, text)
    assert "query_failed" in r.json()["result"]["content"][0]["text"], r.text[:300]
    with pytest.raises(psycopg.Error) as e:
        pg(srv, text)
    assert e.value.sqlstate != "54000", str(e.value)


def test_clients_cannot_raise_their_own_errors(srv):
    """error() would write any message at the start of DuckDB's: the gate
    refuses it (sql/allowlist.c), so only the engine's text starts there."""
    r = sql(srv, f"SELECT error('{FORGED}')")
    assert r.status_code == 400 and r.json()["code"] == "sql_forbidden_function", r.text[:300]
