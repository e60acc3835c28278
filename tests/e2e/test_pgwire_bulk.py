"""Long results over the PostgreSQL listener: from a result's third chunk on
the rows leave in larger writes (VT_PGWIRE_BULK_FLUSH_BYTES), and the size
goes back to the default when the result ends. Every row must arrive, in
text, binary and COPY, to a fast client and to one that reads slowly through
a small receive buffer (the server's writes then stop half-way and wait),
and the connection must answer the next statements, row-limited portals
included, the same as before."""
import datetime
import socket
import struct
import time

import psycopg

from pgwire_util import Raw, SYNC, bind, cstr, execute, msg, parse, query, start

N = 120000
# Strings of 6..~110 bytes (some past DuckDB's 12-byte inline size), NULLs
# every 11th row, doubles, dates and timestamps: ~8 MB of DataRows.
SELECT = (f"SELECT i, CASE WHEN i % 11 = 0 THEN NULL ELSE 'row ' || i || "
          f"repeat('x', (i % 97)::INTEGER) END AS s, (i * 0.25)::DOUBLE AS d, "
          f"DATE '1999-12-25' + (i % 5000)::INTEGER AS day, "
          f"TIMESTAMP '2024-01-01 00:00:00' + to_microseconds(i * 1234567) AS ts "
          f"FROM range({N}) t(i)")


def expected(i):
    """Row i as Python values."""
    return (i, None if i % 11 == 0 else f"row {i}" + "x" * (i % 97), i * 0.25,
            datetime.date(1999, 12, 25) + datetime.timedelta(days=i % 5000),
            datetime.datetime(2024, 1, 1) + datetime.timedelta(microseconds=i * 1234567))


def pg_text(v):
    """PostgreSQL's text of a value of expected()."""
    if v is None:
        return None
    if isinstance(v, float):
        return str(int(v)) if v == int(v) else repr(v)
    if isinstance(v, datetime.datetime):
        t = v.strftime("%Y-%m-%d %H:%M:%S")
        return t + ("." + f"{v.microsecond:06d}".rstrip("0") if v.microsecond else "")
    if isinstance(v, datetime.date):
        return v.isoformat()
    return str(v)


def connect(srv):
    return psycopg.connect(host="127.0.0.1", port=srv.pg, user="vitrine", dbname="vitrine",
                           autocommit=True, connect_timeout=10)


def data_row(body):
    """A DataRow's fields as text (None for NULL)."""
    n, at, out = struct.unpack("!h", body[:2])[0], 2, []
    for _ in range(n):
        k = struct.unpack("!i", body[at:at + 4])[0]
        at += 4
        out.append(None if k < 0 else body[at:at + k].decode())
        at += max(k, 0)
    return tuple(out)


def test_long_results_arrive_whole_text_binary_and_copy(vt, datadir):
    srv = start(vt, datadir)
    want = [tuple(pg_text(v) for v in expected(i)) for i in range(N)]
    # text DataRows byte for byte (simple protocol)
    r = Raw(srv.pg, timeout=30)
    r.login()
    r.send(query(f"SELECT * FROM ({SELECT}) ORDER BY i"))
    msgs = r.read_until()
    assert [t for t, _ in msgs[:1]] == [b"T"] and msgs[-2] == (b"C", cstr(f"SELECT {N}"))
    got = [data_row(b) for t, b in msgs if t == b"D"]
    assert len(got) == N
    for i in (0, 1, 11, 12, 96, 97, 4999, 5000, N - 1):
        assert got[i] == want[i], i
    assert got == want
    r.send(msg(b"X"))
    r.close()
    with connect(srv) as c:
        # binary, decoded by psycopg
        b = c.cursor(binary=True)
        b.execute(f"SELECT * FROM ({SELECT}) ORDER BY i")
        binary = b.fetchall()
        assert len(binary) == N
        assert binary == [expected(i) for i in range(N)]
        # COPY to the client: every line, then the same session answers
        with c.cursor().copy(f"COPY ({SELECT} ORDER BY i) TO STDOUT") as cp:
            lines = b"".join(bytes(x) for x in cp).decode().splitlines()
        assert lines == ["\t".join("\\N" if v is None else v for v in w) for w in want]
        assert c.execute("SELECT 41 + 1").fetchone() == (42,)


def test_slow_reader_gets_every_row_then_the_session_goes_on(vt, datadir):
    srv = start(vt, datadir)
    r = Raw(srv.pg, timeout=30)
    # a small receive window: the server's large writes stop half-way
    r.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
    r.login()
    r.send(query(f"SELECT * FROM ({SELECT}) ORDER BY i"))
    rows, size, tag = 0, 0, None
    t0 = time.time()
    while True:
        t, body = r.read()
        if rows % 20000 == 0:
            time.sleep(0.05)  # stall now and then, as a slow client does
        if t == b"D":
            rows += 1
            size += len(body)
        elif t == b"C":
            tag = body
        elif t == b"Z":
            break
        else:
            assert t in (b"T",), (t, body)
    assert rows == N and tag == cstr(f"SELECT {N}")
    assert size > 4 * 256 * 1024  # long enough for the larger writes
    assert time.time() - t0 < 60
    # the next statements on the same connection: a small answer, and a
    # row-limited portal (held rows are written at the default size)
    r.send(query("SELECT 1 AS one"))
    msgs = r.read_until()
    assert [m[0] for m in msgs] == [b"T", b"D", b"C", b"Z"]
    assert msgs[1][1] == struct.pack("!hi", 1, 1) + b"1"
    r.send(parse("", f"SELECT i FROM ({SELECT}) ORDER BY i") + bind("", "") +
           execute("", 70000) + execute("", 0) + SYNC)
    msgs = r.read_until()
    types = [m[0] for m in msgs]
    assert types.count(b"D") == N
    assert types.index(b"s") == 2 + 70000  # ParseComplete, BindComplete, rows, Suspended
    assert msgs[-2] == (b"C", cstr(f"SELECT {N}"))  # the portal's total, as before
    last = msgs[-3][1]
    assert last == struct.pack("!hi", 1, len(str(N - 1))) + str(N - 1).encode()
    r.send(msg(b"X"))
    r.close()


def test_client_gone_mid_long_result_frees_the_worker(vt, datadir):
    srv = start(vt, datadir, server={"workers": 1})
    for _ in range(3):
        r = Raw(srv.pg)
        r.login()
        r.send(query(f"SELECT * FROM ({SELECT}) a, range(20) b(j)"))
        r.read()  # the first rows are on their way
        r.close()
    # the one worker answers again at once
    t0 = time.time()
    with connect(srv) as c:
        assert c.execute("SELECT count(*) FROM trips").fetchone() == (5000,)
    assert time.time() - t0 < 10
