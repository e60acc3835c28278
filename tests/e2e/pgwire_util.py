"""Helpers for the PostgreSQL listener tests: a server with [server.pgwire]
enabled, its port from the log, and a raw protocol-3.0 client over a plain
socket (for the malformed-message catalogue and the exact bytes)."""
import re
import socket
import struct
import time

from conftest import Server, dataset_block, server_block, write_parquet


def pg_port(server, timeout=10):
    deadline = time.time() + timeout
    while time.time() < deadline:
        m = re.search(r"pgwire listening on [^ ]+:(\d+)", server.log())
        if m:
            return int(m.group(1))
        time.sleep(0.02)
    raise AssertionError("no pgwire listening line:\n" + server.log())


def datasets(datadir):
    t = write_parquet(datadir / "trips.parquet", """
        SELECT i::INTEGER AS trip_id, i % 5 AS station, ((i % 50) * 1.5)::DECIMAL(10,2) AS fare,
               CASE WHEN i % 3 = 0 THEN 'card' ELSE 'cash' END AS payment,
               TIMESTAMP '2024-01-01 00:00:00' + to_seconds(i * 60) AS pickup_at,
               DATE '2024-01-01' + (i % 30)::INTEGER AS day,
               i % 2 = 0 AS even, (i / 7)::DOUBLE AS ratio,
               CASE WHEN i % 10 = 0 THEN NULL ELSE 'note ' || i END AS note,
               [i, i + 1] AS tags, {'k': i, 's': 'x' || i} AS info
        FROM range(5000) t(i)""")
    s = write_parquet(datadir / "stations.parquet",
                      "SELECT i AS id, 'st' || i AS name FROM range(5) t(i)")
    return t, s


def start(vt, datadir, pgwire="", server=None, env=None, wait="ready", extra=""):
    t, s = datasets(datadir)
    cfg = server_block(**(server or {}))
    cfg += "[server.pgwire]\nenabled = true\nport = 0\n" + pgwire + "\n"
    cfg += extra
    cfg += dataset_block("trips", t) + dataset_block("stations", s)
    srv = vt(cfg, env=env, wait=wait)
    srv.pg = pg_port(srv)
    return srv


def module_server(tmp_path_factory, name, extra=""):
    """One server for a whole test module, for a module-scoped fixture to
    `yield from`: the sample datasets, the listener on a free port (`.pg`),
    `extra` configuration; at the end it must stop cleanly with no
    sanitizer report in its log."""
    d = tmp_path_factory.mktemp(name)
    t, s = datasets(d)
    cfg = server_block() + "[server.pgwire]\nenabled = true\nport = 0\n\n" + extra
    cfg += dataset_block("trips", t) + dataset_block("stations", s)
    server = Server(d, cfg)
    server.start()
    server.wait_ready()
    server.pg = pg_port(server)
    yield server
    assert server.stop() == 0
    log = server.log()
    assert "ERROR: AddressSanitizer" not in log and "runtime error:" not in log, log[-4000:]


# ---------------------------------------------------------------- raw client

def startup_packet(user="vitrine", database="vitrine", version=196608, **params):
    body = struct.pack("!i", version)
    params = dict({"user": user, "database": database}, **params)
    for k, v in params.items():
        if v is None:
            continue
        body += k.encode() + b"\0" + v.encode() + b"\0"
    body += b"\0"
    return struct.pack("!i", len(body) + 4) + body


def msg(type_, body=b""):
    return type_ + struct.pack("!i", len(body) + 4) + body


def cstr(s):
    return s.encode() + b"\0"


def query(sql):
    return msg(b"Q", cstr(sql))


def parse(name, sql, oids=()):
    return msg(b"P", cstr(name) + cstr(sql) + struct.pack("!h", len(oids)) +
               b"".join(struct.pack("!I", o) for o in oids))


def bind(portal, stmt, values=(), formats=(), result_formats=()):
    b = cstr(portal) + cstr(stmt) + struct.pack("!h", len(formats))
    b += b"".join(struct.pack("!h", f) for f in formats)
    b += struct.pack("!h", len(values))
    for v in values:
        if v is None:
            b += struct.pack("!i", -1)
        else:
            v = v if isinstance(v, bytes) else str(v).encode()
            b += struct.pack("!i", len(v)) + v
    b += struct.pack("!h", len(result_formats))
    b += b"".join(struct.pack("!h", f) for f in result_formats)
    return msg(b"B", b)


def describe(kind, name=""):
    return msg(b"D", kind + cstr(name))


def execute(portal="", max_rows=0):
    return msg(b"E", cstr(portal) + struct.pack("!i", max_rows))


SYNC = msg(b"S")
TERMINATE = msg(b"X")
FLUSH = msg(b"H")


class Raw:
    """A protocol client over a socket: send bytes, read typed messages."""

    def __init__(self, port, host="127.0.0.1", timeout=10):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.buf = b""

    def send(self, data):
        self.sock.sendall(data)

    def _fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise EOFError("connection closed")
        self.buf += chunk

    def read_byte(self):
        while not self.buf:
            self._fill()
        b, self.buf = self.buf[:1], self.buf[1:]
        return b

    def read(self):
        """One message: (type byte, body)."""
        while len(self.buf) < 5:
            self._fill()
        t = self.buf[:1]
        n = struct.unpack("!i", self.buf[1:5])[0]
        while len(self.buf) < 1 + n:
            self._fill()
        body, self.buf = self.buf[5:1 + n], self.buf[1 + n:]
        return t, body

    def read_until(self, types=(b"Z",)):
        """Messages up to and including the first of `types`."""
        out = []
        while True:
            t, b = self.read()
            out.append((t, b))
            if t in types:
                return out

    def closed(self, timeout=5):
        """True when the server closes the connection (after any messages)."""
        self.sock.settimeout(timeout)
        try:
            while True:
                chunk = self.sock.recv(65536)
                if not chunk:
                    return True
                self.buf += chunk
        except (ConnectionResetError, BrokenPipeError):
            return True
        except socket.timeout:
            return False

    def login(self, user="vitrine", password=None, **params):
        self.send(startup_packet(user=user, **params))
        msgs = []
        while True:
            t, b = self.read()
            msgs.append((t, b))
            if t == b"R" and struct.unpack("!i", b[:4])[0] == 3:
                self.send(msg(b"p", cstr(password or "")))
            if t in (b"Z", b"E"):
                return msgs

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def error_fields(body):
    """The fields of an ErrorResponse/NoticeResponse as {code letter: text}."""
    out = {}
    for part in body.split(b"\0"):
        if part:
            out[chr(part[0])] = part[1:].decode()
    return out


def data_rows(msgs):
    """The DataRow values (text) of a message list."""
    rows = []
    for t, b in msgs:
        if t != b"D":
            continue
        n = struct.unpack("!h", b[:2])[0]
        off = 2
        row = []
        for _ in range(n):
            ln = struct.unpack("!i", b[off:off + 4])[0]
            off += 4
            if ln < 0:
                row.append(None)
            else:
                row.append(b[off:off + ln])
                off += ln
        rows.append(row)
    return rows
