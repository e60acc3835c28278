"""The PostgreSQL listener against malformed and hostile input, over a raw
socket: lengths that lie, truncated and oversize messages, unknown message
types, startup garbage, SSLRequest followed by plain bytes, protocol
versions, extended-protocol misuse. Every case ends in an ErrorResponse
with SQLSTATE 08P01 (or the code PostgreSQL uses) or a closed connection;
the server never crashes and keeps serving other sessions."""
import os
import socket
import struct
import time

from pgwire_util import (FLUSH, SYNC, TERMINATE, Raw, bind, cstr, data_rows, describe,
                         error_fields, execute, msg, parse, query, start, startup_packet)


def fatal_code(r):
    """Reads to the end: the FATAL error's code, and that the server closed."""
    code = None
    try:
        while True:
            t, b = r.read()
            if t == b"E":
                f = error_fields(b)
                code = f["C"]
                assert f["S"] == "FATAL", f
                break
    except EOFError:
        return None
    assert r.closed()
    return code


def alive(srv):
    r = Raw(srv.pg)
    assert r.login()[-1][0] == b"Z"
    r.send(query("SELECT count(*) FROM stations"))
    rows = data_rows(r.read_until())
    r.close()
    assert rows == [[b"5"]]


def test_startup_garbage_and_versions(vt, datadir):
    srv = start(vt, datadir)
    cases = [
        struct.pack("!i", 3) + b"x",                       # length below the minimum
        struct.pack("!i", 100000) + b"\0" * 8,             # above the startup limit
        struct.pack("!ii", 8, 1234),                       # unknown code: protocol 0.1234
        struct.pack("!ii", 12, 196608) + b"user",          # no terminators
        struct.pack("!ii", 20, 196608) + b"user\0vitrine\0",  # no final NUL
        struct.pack("!ii", 9, 80877103) + b"x",            # SSLRequest of the wrong size
    ]
    for data in cases:
        r = Raw(srv.pg)
        r.send(data)
        code = fatal_code(r)
        assert code in ("08P01", "0A000"), (data, code)
        r.close()
    # protocol 2.0 and 4.0: refused by name
    for v in (2 << 16, 4 << 16):
        r = Raw(srv.pg)
        r.send(startup_packet(version=v))
        t, b = r.read()
        f = error_fields(b)
        assert t == b"E" and f["C"] == "0A000" and "unsupported frontend protocol" in f["M"]
        r.close()
    # random bytes
    for n in (1, 7, 4096):
        r = Raw(srv.pg)
        r.send(os.urandom(n))
        r.sock.shutdown(socket.SHUT_WR)
        assert r.closed()
        r.close()
    # a 3.2 client is answered with NegotiateProtocolVersion (3.0) and served
    r = Raw(srv.pg)
    r.send(startup_packet(version=(3 << 16) | 2, **{"_pq_.nothing": "1"}))
    t, b = r.read()
    assert t == b"v" and struct.unpack("!ii", b[:8]) == (0, 1) and b[8:] == b"_pq_.nothing\0"
    msgs = r.read_until()
    assert msgs[0][0] == b"R" and msgs[-1] == (b"Z", b"I")
    r.close()
    # the missing user name
    r = Raw(srv.pg)
    r.send(startup_packet(user=None))
    assert fatal_code(r) == "28000"
    alive(srv)


def test_ssl_negotiation(vt, datadir):
    srv = start(vt, datadir)
    # no TLS configured: 'N', then the plain startup goes on
    r = Raw(srv.pg)
    r.send(struct.pack("!ii", 8, 80877103))
    assert r.read_byte() == b"N"
    # GSSAPI encryption: 'N' as well
    r.send(struct.pack("!ii", 8, 80877104))
    assert r.read_byte() == b"N"
    assert r.login()[-1][0] == b"Z"
    r.close()
    # asking twice is a protocol violation
    r = Raw(srv.pg)
    r.send(struct.pack("!ii", 8, 80877103))
    assert r.read_byte() == b"N"
    r.send(struct.pack("!ii", 8, 80877103))
    assert fatal_code(r) == "08P01"
    alive(srv)


def test_ssl_then_plain_and_pipelined_plaintext(vt, datadir, tmp_path):
    from test_pgwire import tls_files
    d = tls_files(tmp_path)
    srv = start(vt, datadir, pgwire=f'tls_cert = "{d}/server.pem"\ntls_key = "{d}/server.key"\n')
    # 'S', then the client talks plain: the handshake fails, the server closes
    r = Raw(srv.pg)
    r.send(struct.pack("!ii", 8, 80877103))
    assert r.read_byte() == b"S"
    r.send(startup_packet())
    assert r.closed()
    # plaintext sent right behind the SSLRequest (before 'S' could be read)
    # must not be taken as if it came over TLS (CVE-2021-23214)
    r = Raw(srv.pg)
    r.send(struct.pack("!ii", 8, 80877103) + startup_packet())
    assert fatal_code(r) == "08P01"
    alive(srv)


def session(srv, timeout=10):
    r = Raw(srv.pg, timeout=timeout)
    assert r.login()[-1][0] == b"Z"
    return r


def test_message_framing(vt, datadir):
    srv = start(vt, datadir)
    cases = [
        (b"Q" + struct.pack("!i", 2), "08P01"),                 # length below 4
        (b"Q" + struct.pack("!i", 2 ** 31 - 1), "08P01"),       # oversize: refused at once
        (b"Q" + struct.pack("!i", 400 * 1024), "08P01"),        # above the message limit
        (b"?" + struct.pack("!i", 4), "08P01"),                 # unknown type
        (b"\x00" + struct.pack("!i", 4), "08P01"),
        (msg(b"p", cstr("late password")), "08P01"),            # password after startup
    ]
    for data, code in cases:
        r = session(srv)
        r.send(data)
        assert fatal_code(r) == code, data
        r.close()
    # a length that lies high, then the client leaves: nothing is answered
    r = session(srv)
    r.send(b"Q" + struct.pack("!i", 1000) + b"SELECT 1\0")
    r.sock.shutdown(socket.SHUT_WR)
    assert r.closed()
    r.close()
    # a length that lies low: the rest reads as the next message (garbage)
    r = session(srv)
    r.send(b"Q" + struct.pack("!i", 6) + b"SE" + b"LECT 1\0")
    msgs = []
    try:
        while True:
            msgs.append(r.read())
    except EOFError:
        pass
    assert any(t == b"E" for t, _ in msgs)
    r.close()
    # a Query body without its terminator
    r = session(srv)
    r.send(msg(b"Q", b"SELECT 1"))
    assert fatal_code(r) == "08P01"
    # truncated: half a message, then silence; the session stays usable once
    # the rest arrives
    r = session(srv)
    full = query("SELECT 42")
    r.send(full[:3])
    time.sleep(0.3)
    r.send(full[3:])
    assert data_rows(r.read_until()) == [[b"42"]]
    r.send(TERMINATE)
    assert r.closed()
    alive(srv)


def test_extended_protocol_misuse(vt, datadir):
    srv = start(vt, datadir)
    r = session(srv)

    def roundtrip(*parts):
        r.send(b"".join(parts) + SYNC)
        return r.read_until()

    def err_code(msgs):
        errs = [error_fields(b) for t, b in msgs if t == b"E"]
        return errs[0]["C"] if errs else None

    # unknown statement and portal
    assert err_code(roundtrip(bind("", "nope"))) == "26000"
    assert err_code(roundtrip(execute("nope"))) == "34000"
    assert err_code(roundtrip(describe(b"S", "nope"))) == "26000"
    # a statement name used twice
    msgs = roundtrip(parse("s1", "SELECT 1"), parse("s1", "SELECT 2"))
    assert err_code(msgs) == "42P05"
    # two statements in one Parse
    assert err_code(roundtrip(parse("", "SELECT 1; SELECT 2"))) == "42601"
    # a Bind whose lengths do not add up, or bad formats
    bad = [
        msg(b"B", cstr("") + cstr("s1") + struct.pack("!hh", 1, 7) + struct.pack("!hh", 0, 0)),
        msg(b"B", cstr("") + cstr("s1") + struct.pack("!h", 0) + struct.pack("!h", 1) +
            struct.pack("!i", 100) + b"short"),
        msg(b"B", cstr("") + cstr("s1") + struct.pack("!h", 0) + struct.pack("!h", 1) +
            struct.pack("!i", -5)),
        msg(b"B", cstr("") + cstr("s1") + struct.pack("!h", -1)),
        msg(b"B", cstr("") + cstr("s1") + struct.pack("!hh", 2, 0) + struct.pack("!h", 1) +
            struct.pack("!i", 1) + b"1" + struct.pack("!h", 0)),
        msg(b"B", cstr("")),
    ]
    for m in bad:
        assert err_code(roundtrip(m)) == "08P01", m
    # Describe of an unknown kind, Execute without its row count
    assert err_code(roundtrip(msg(b"D", b"X" + cstr("")))) == "08P01"
    assert err_code(roundtrip(msg(b"E", cstr("")))) == "08P01"
    # parameters: wrong count, bad text for the declared type, bad binary size
    ok = roundtrip(parse("byid", "SELECT payment FROM trips WHERE trip_id = $1", [23]))
    assert err_code(ok) is None
    assert err_code(roundtrip(bind("", "byid", values=["1", "2"]))) == "08P01"
    assert err_code(roundtrip(bind("", "byid", values=["abc"]), execute())) == "22P02"
    assert err_code(roundtrip(bind("", "byid", values=[b"\0\1"], formats=[1]),
                              execute())) == "08P01"
    # invalid UTF-8 in a text parameter
    roundtrip(parse("t", "SELECT $1::VARCHAR AS v"))
    assert err_code(roundtrip(bind("", "t", values=[b"\xff\xfe"]), execute())) == "22P02"
    # after all this, the session still works, with a row limit
    msgs = roundtrip(bind("p", "byid", values=["3"]), execute("p", 1))
    assert data_rows(msgs) == [[b"card"]]
    msgs = roundtrip(parse("", "SELECT trip_id FROM trips ORDER BY trip_id LIMIT 5"),
                     bind("q", ""), describe(b"P", "q"), execute("q", 2), execute("q", 2),
                     execute("q", 2), execute("q", 2))
    kinds = [t for t, _ in msgs]
    assert kinds == [b"1", b"2", b"T", b"D", b"D", b"s", b"D", b"D", b"s", b"D", b"C", b"C",
                     b"Z"]
    assert [x[0] for x in data_rows(msgs)] == [b"0", b"1", b"2", b"3", b"4"]
    r.send(TERMINATE)
    assert r.closed()
    alive(srv)


def test_resource_limits(vt, datadir):
    srv = start(vt, datadir)
    r = session(srv)
    # too many named statements
    for i in range(256):
        r.send(parse(f"s{i}", "SELECT 1"))
    r.send(parse("one_more", "SELECT 1") + SYNC)
    msgs = r.read_until()
    errs = [error_fields(b) for t, b in msgs if t == b"E"]
    assert errs and errs[0]["C"] == "54000" and "too many prepared statements" in errs[0]["M"]
    r.send(query("DEALLOCATE ALL"))
    r.read_until()
    # a statement text above the SQL limit (the message itself fits)
    big = "SELECT '" + "x" * (300 * 1024) + "'"
    r.send(query(big))
    code = None
    for t, b in r.read_until():
        if t == b"E":
            code = error_fields(b)["C"]
    assert code == "54000"
    r.close()
    # a simple Query with too many statements
    r = session(srv)
    r.send(query("SELECT 1;" * 1100))
    msgs = r.read_until()
    errs = [error_fields(b) for t, b in msgs if t == b"E"]
    assert errs and errs[0]["C"] == "54000"
    # a client that stops reading a large result is let go after the stall
    # limit; meanwhile others are served
    r.close()
    alive(srv)


def test_client_leaving_mid_query_cancels_it(vt, datadir):
    srv = start(vt, datadir, server={"workers": 1})
    r = session(srv)
    r.send(query("SELECT count(*) FROM range(100000000000) a(x) WHERE x % 7 = 3"))
    time.sleep(0.3)
    r.close()
    # the one worker is free again quickly (the job was cancelled)
    t0 = time.time()
    alive(srv)
    assert time.time() - t0 < 5


def test_rows_held_for_a_row_limited_portal_spill_to_a_file(vt, datadir):
    """Execute with a row limit holds the rest of the result for the next
    Execute: 16 MiB in memory per connection, the rest in an unlinked file
    under temp_directory (1 GiB per connection; past it the result is cut and
    reading on ends in 54000). Read back in parts, in order, to the end."""
    srv = start(vt, datadir)
    # Each step writes or reads tens of MB of held rows: under ASan on a loaded
    # machine one can pass 10 s without a byte on the socket (seen once).
    r = session(srv, timeout=120)
    big = "SELECT x, repeat('p', 100) AS pad FROM range(400000) t(x)"  # ~45 MB of rows
    r.send(parse("", big) + bind("c", "") + execute("c", 5) + FLUSH)
    msgs = r.read_until((b"s", b"E"))
    assert [t for t, _ in msgs] == [b"1", b"2"] + [b"D"] * 5 + [b"s"]
    # a second portal held meanwhile (it goes to its own file)
    r.send(parse("", "SELECT x FROM range(300000) t(x)") + bind("e", "") + execute("e", 1) +
           FLUSH)
    assert [t for t, _ in r.read_until((b"s", b"E"))] == [b"1", b"2", b"D", b"s"]
    xs = []
    for limit in (150000, 0):
        r.send(execute("c", limit) + FLUSH)
        for t, b in r.read_until((b"s", b"C", b"E")):
            assert t != b"E", error_fields(b)
            if t == b"D":
                xs.append(int(b[6:6 + struct.unpack(">i", b[2:6])[0]]))
    assert xs == list(range(5, 400000))
    r.send(execute("e", 0) + SYNC)
    msgs = r.read_until()
    assert sum(t == b"D" for t, _ in msgs) == 299999 and msgs[-2][0] == b"C"
    # a small result read in parts ends with CommandComplete
    r.send(parse("", "SELECT x FROM range(7) t(x)") + bind("d", "") + execute("d", 3) +
           execute("d", 3) + execute("d", 3) + SYNC)
    msgs = r.read_until()
    assert [t for t, _ in msgs] == [b"1", b"2", b"D", b"D", b"D", b"s", b"D", b"D", b"D", b"s",
                                    b"D", b"C", b"Z"]
    assert msgs[-2][1] == b"SELECT 7\0"
    r.close()


def test_statements_pools_rely_on(vt, datadir):
    srv = start(vt, datadir)
    r = session(srv)
    r.send(parse("keep", "SELECT 1") + SYNC)
    r.read_until()
    # DISCARD ALL drops the prepared statements, DEALLOCATE one of them
    r.send(query("DISCARD ALL"))
    assert [t for t, _ in r.read_until()] == [b"C", b"Z"]
    r.send(bind("", "keep") + SYNC)
    errs = [error_fields(b) for t, b in r.read_until() if t == b"E"]
    assert errs and errs[0]["C"] == "26000"
    r.send(parse("a", "SELECT 2") + SYNC)
    r.read_until()
    r.send(query("DEALLOCATE a"))
    assert [t for t, _ in r.read_until()] == [b"C", b"Z"]
    r.send(query("DEALLOCATE a"))
    errs = [error_fields(b) for t, b in r.read_until() if t == b"E"]
    assert errs and errs[0]["C"] == "26000"
    # SHOW ALL lists the settings; ReadyForQuery tracks the transaction
    r.send(query("SHOW ALL"))
    rows = data_rows(r.read_until())
    names = [row[0] for row in rows]
    assert b"server_version" in names and b"client_encoding" in names
    r.send(query("BEGIN"))
    assert r.read_until()[-1] == (b"Z", b"T")
    r.send(query("SELECT * FROM nope"))
    assert r.read_until()[-1] == (b"Z", b"E")
    r.send(query("SELECT 1"))
    msgs = r.read_until()
    assert error_fields([b for t, b in msgs if t == b"E"][0])["C"] == "25P02"
    r.send(query("ROLLBACK"))
    assert r.read_until()[-1] == (b"Z", b"I")
    r.close()


def test_shutdown_ends_sessions(vt, datadir):
    """SIGTERM: idle sessions get 57P01 and the server exits 0; a running
    statement may finish within the drain."""
    srv = start(vt, datadir, server={"shutdown_timeout_secs": 5})
    idle = session(srv)
    busy = session(srv)
    busy.send(query("SELECT count(*) FROM range(3000000000) a(x) WHERE x % 7 = 3"))
    time.sleep(0.3)
    import signal
    srv.proc.send_signal(signal.SIGTERM)
    t, b = idle.read()
    f = error_fields(b)
    assert t == b"E" and f["S"] == "FATAL" and f["C"] == "57P01"
    assert idle.closed()
    # the running statement is cancelled after the drain, then the session ends
    msgs = []
    try:
        while True:
            msgs.append(busy.read())
    except EOFError:
        pass
    codes = [error_fields(b)["C"] for t, b in msgs if t == b"E"]
    assert codes and codes[0] in ("57014", "57P01"), msgs
    assert srv.proc.wait(timeout=60) == 0


def test_index_lookups_answer_like_sql(vt, datadir):
    """An equality lookup is answered from the dataset's index (as /query
    answers eq); the same statement through DuckDB gives the same bytes."""
    from conftest import dataset_block, server_block, write_parquet
    from pgwire_util import pg_port
    t = write_parquet(datadir / "types.parquet", """
        SELECT i::INTEGER AS id, (i % 3 = 0) AS b, (i % 40)::TINYINT AS ti, i::UBIGINT * 1000 AS ub,
               170141183460469231731687303715884105727::HUGEINT - i AS h,
               (i * 1.25)::DECIMAL(12,2) AS d,
               CASE WHEN i = 2 THEN NULL ELSE 'tab\there "q" é ' || chr(10) || i END AS s,
               CASE WHEN i = 3 THEN DATE '0044-03-15 (BC)' ELSE DATE '2024-01-01' + i::INTEGER END AS day,
               TIMESTAMP '2024-01-01 10:00:00.25' + to_seconds(i) AS ts,
               TIMESTAMPTZ '2024-01-01 10:00:00+00' + to_seconds(i) AS tz,
               uuid '6ba7b810-9dad-11d1-80b4-00c04fd430c8' AS u,
               CASE WHEN i = 4 THEN 'nan'::DOUBLE WHEN i = 6 THEN NULL
                    ELSE i / 7 * 1e20 END AS f8,
               (i / 3)::FLOAT AS f4
        FROM range(50) t(i)""")
    srv = vt(server_block() + "[server.pgwire]\nenabled = true\nport = 0\n" +
             dataset_block("types", t, **{"index.mode": "list",
                                           "index.columns": ["id", "s"]}))
    srv.pg = pg_port(srv)
    deadline = time.time() + 30
    while not srv.get("/api/v1/datasets/types/schema").json().get("indexed") and \
            time.time() < deadline:
        time.sleep(0.05)
    r = session(srv)
    cols = "id, b, ti, ub, d, s, day, ts, tz, u, f8, f4"
    lookups = [
        f"SELECT {cols} FROM types WHERE id = 7",
        f"SELECT {cols} FROM types WHERE id = 2",
        f"SELECT {cols} FROM types WHERE id = 3",
        "SELECT s, id, day FROM types WHERE id = 12",
        f"SELECT {cols} FROM public.types t WHERE t.id = 40",
        f"SELECT {cols} FROM types WHERE id = 999",
        "SELECT * FROM types WHERE id = 5",  # h (HUGEINT): not from the row store
        f"SELECT {cols} FROM types WHERE id = 4",  # NaN: JSON null, so DuckDB answers
        f"SELECT {cols} FROM types WHERE id = 6",  # NULL double: the same
    ]
    for q in lookups:
        r.send(query(q))
        fast = r.read_until()
        r.send(query(q + " AND 1 = 1"))  # not a lookup: DuckDB runs it
        slow = r.read_until()
        assert fast == slow, q
        assert fast[0][0] == b"T"
    # extended protocol with a parameter, text results
    r.send(parse("", f"SELECT {cols} FROM types WHERE id = $1") + bind("", "", values=["9"]) +
           describe(b"P") + execute() + SYNC)
    fast = r.read_until()
    r.send(parse("", f"SELECT {cols} FROM types WHERE id = $1 AND 1 = 1") +
           bind("", "", values=["9"]) + describe(b"P") + execute() + SYNC)
    slow = r.read_until()
    assert fast == slow
    r.close()
    assert srv.log().count("answered from the index") >= 6
