"""Hostile HTTP clients (issue 10, items 1, 3, 6, 7, 8): clients that leave
while their request is suspended, shutdown with stuck requests, ambiguous
framing, slow headers, connection floods. Raw sockets throughout: the point is
to send what well-behaved clients never send."""
import json
import re
import resource
import signal
import socket
import threading
import time

import pytest

from conftest import dataset_block, server_block, write_parquet


def raw(port, data, timeout=5, src=None):
    """Sends `data` (from source address `src`), reads until the server closes
    (or `timeout`)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout,
                                  source_address=(src, 0) if src else None) as s:
        s.sendall(data)
        out = b""
        try:
            while True:
                b = s.recv(65536)
                if not b:
                    break
                out += b
        except (socket.timeout, ConnectionResetError):
            out += b"<no close>"
    return out


def responses(data):
    return len(re.findall(rb"HTTP/1\.1 \d{3} ", data))


def json_error(data):
    head, _, body = data.partition(b"\r\n\r\n")
    assert b"application/json" in head, data[:400]
    b = json.loads(body.replace(b"<no close>", b""))
    assert set(b) == {"error", "code"}, b
    return int(head.split(b" ")[1]), b["code"], head


PIPELINED = b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n"
POST = b"POST /api/v1/datasets/x/count HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"

# (name, request, status, code): each is answered once with the JSON error and
# the connection closed; the pipelined GET behind it is never answered.
FRAMING = [
    ("cl_and_te", POST + b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
     400, "malformed_request"),
    ("two_content_lengths", POST + b"Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}", 400,
     "malformed_request"),
    ("same_content_length_twice", POST + b"Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}",
     400, "malformed_request"),
    ("space_before_colon", b"GET /healthz HTTP/1.1\r\nHost : x\r\n\r\n", 400,
     "malformed_request"),
    ("unknown_transfer_coding", POST + b"Transfer-Encoding: gzip\r\n\r\n{}", 501,
     "not_implemented"),
    ("chunked_not_last", POST + b"Transfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n", 501,
     "not_implemented"),
    ("te_in_http10", b"POST /api/v1/datasets/x/count HTTP/1.0\r\nTransfer-Encoding: chunked"
     b"\r\n\r\n0\r\n\r\n", 400, "malformed_request"),
    ("missing_host", b"GET /healthz HTTP/1.1\r\n\r\n", 400, "malformed_request"),
    ("two_hosts", b"GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400,
     "malformed_request"),
    ("cr_in_value", b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-A: a\rb\r\n\r\n", 400,
     "malformed_request"),
    ("ctl_in_value", b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-A: a\x01b\r\n\r\n", 400,
     "malformed_request"),
    # Long values are checked eight bytes at a time: a control byte inside a
    # word, in the tail, and DEL.
    ("ctl_in_long_value", b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-A: " + b"v" * 13 + b"\x01" +
     b"v" * 30 + b"\r\n\r\n", 400, "malformed_request"),
    ("ctl_in_long_value_tail", b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-A: " + b"v" * 42 +
     b"\x1f" + b"v" * 2 + b"\r\n\r\n", 400, "malformed_request"),
    ("del_in_long_value", b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-A: " + b"v" * 24 + b"\x7f" +
     b"v" * 24 + b"\r\n\r\n", 400, "malformed_request"),
    ("space_in_target", b"GET /hea lthz HTTP/1.1\r\nHost: localhost\r\n\r\n", 400,
     "malformed_request"),
    ("long_query_string", b"GET /healthz?" + b"a" * 9000 + b" HTTP/1.1\r\nHost: localhost\r\n\r\n", 414,
     "uri_too_long"),
    ("long_escaped_path", b"GET /" + b"%41" * 3000 + b" HTTP/1.1\r\nHost: localhost\r\n\r\n", 414,
     "uri_too_long"),
    ("bad_percent_escape", b"GET /api/v1/datasets/%zz/status HTTP/1.1\r\nHost: localhost\r\n\r\n", 400,
     "malformed_request"),
    ("content_encoding", POST + b"Content-Encoding: gzip\r\nContent-Length: 2\r\n\r\n{}", 415,
     "unsupported_content_encoding"),
    ("absolute_form_garbage", b"GET healthz HTTP/1.1\r\nHost: localhost\r\n\r\n", 400,
     "malformed_request"),
]


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    from conftest import Server
    d = tmp_path_factory.mktemp("plain")
    s = Server(d, server_block())
    s.start()
    s.wait_ready()
    yield s
    assert s.stop() == 0


@pytest.mark.parametrize("name,req,status,code", FRAMING, ids=[f[0] for f in FRAMING])
def test_bad_framing_is_one_json_error_and_close(plain, name, req, status, code):
    out = raw(plain.port, req + PIPELINED)
    assert b"<no close>" not in out, f"connection left open: {out[:300]}"
    assert responses(out) == 1, out[:600]
    got_status, got_code, head = json_error(out)
    assert (got_status, got_code) == (status, code), out[:400]
    assert b"Connection: close" in head
    assert raw(plain.port, PIPELINED.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n")) \
        .startswith(b"HTTP/1.1 200")


# What libmicrohttpd 0.9.75 answered itself, with its own HTML body (no hook to
# replace it), and for a Content-Length such as -1 with its status line and
# headers twice (issue 21 item 7). Our own engine (src/http/wire.c, conn.c)
# answers each once, with the JSON error body, and closes.
ONCE_JSON = [
    ("content_length_minus_one", POST + b"Content-Length: -1\r\n\r\n{}", 400, "malformed_request"),
    ("content_length_not_digits", POST + b"Content-Length: +2\r\n\r\n{}", 400, "malformed_request"),
    ("content_length_past_2_63", POST + b"Content-Length: 99999999999999999999999\r\n\r\n{}", 413,
     "body_too_large"),
    ("chunk_size_overflow", POST + b"Transfer-Encoding: chunked\r\n\r\n" + b"F" * 20 +
     b"\r\n{}\r\n0\r\n\r\n", 400, "malformed_request"),
    ("bad_chunk_size", POST + b"Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n", 400,
     "malformed_request"),
    ("header_line_without_colon", b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nnocolon\r\n\r\n", 400,
     "malformed_request"),
    ("obs_fold", b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-A: a\r\n b\r\n\r\n", 400,
     "malformed_request"),
    ("bare_lf", b"GET /healthz HTTP/1.1\nHost: localhost\n\n", 400, "malformed_request"),
    ("http_2_0_version", b"GET /healthz HTTP/2.0\r\nHost: localhost\r\n\r\n", 505,
     "http_version_not_supported"),
    ("header_fields_too_large", b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-A: " + b"a" * 40000 +
     b"\r\n\r\n", 431, "headers_too_large"),
    ("too_many_fields", b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n" +
     b"".join(b"X-%d: 1\r\n" % i for i in range(300)) + b"\r\n", 431, "headers_too_large"),
]


@pytest.mark.parametrize("name,req,status,code", ONCE_JSON, ids=[m[0] for m in ONCE_JSON])
def test_what_libmicrohttpd_answered_in_html_is_one_json_error(plain, name, req, status, code):
    out = raw(plain.port, req + PIPELINED)
    assert b"<no close>" not in out, f"connection left open: {out[:300]}"
    assert responses(out) == 1, out[:600]
    assert b"<html" not in out.lower(), out[:600]
    got_status, got_code, head = json_error(out)
    assert (got_status, got_code) == (status, code), out[:400]
    assert b"Connection: close" in head
    assert re.search(rb"\r\nX-Request-Id: [0-9a-f]{12}-[0-9a-f]+\r\n", head), head


def test_first_request_of_a_process_has_an_id(vt):
    """Issue 21 item 6, on the raw wire: the very first request a fresh
    process answers (here a refused one) carries our request id."""
    s = vt(server_block(), wait="listening")
    out = raw(s.port, b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nContent-Length: -1\r\n\r\n")
    head = out.partition(b"\r\n\r\n")[0]
    m = re.search(rb"\r\nX-Request-Id: ([0-9a-f]{12})-1\r\n", head)
    assert m, head
    second = raw(s.port, PIPELINED.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n"))
    assert re.search(rb"\r\nX-Request-Id: " + m.group(1) + rb"-2\r\n", second), second[:300]


def test_long_values_with_tabs_and_high_bytes_pass(plain):
    value = b"\tab\tc" + b"x" * 40 + b"\x80\xff\xfe~ !" * 5
    out = raw(plain.port, b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-A: " + value +
              b"\r\nConnection: close\r\n\r\n")
    assert out.startswith(b"HTTP/1.1 200"), out[:300]


def test_percent_encoded_slash_stays_in_the_segment(plain):
    out = raw(plain.port, b"GET /api/v1/datasets/a%2Fb/status HTTP/1.1\r\nHost: localhost\r\n"
                          b"Connection: close\r\n\r\n")
    status, code, _ = json_error(out)
    assert (status, code) == (404, "dataset_not_found"), out
    assert b'a/b' in out


def test_url_at_the_limit_passes(plain):
    path = b"/healthz?" + b"a" * (8192 - len(b"/healthz?"))
    out = raw(plain.port, b"GET " + path + b" HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
    assert out.startswith(b"HTTP/1.1 200"), out[:200]


def test_slow_request_head_is_cut_at_the_deadline(plain):
    """A byte every second keeps MHD's idle timeout happy forever; the head
    deadline (VT_REQUEST_HEAD_TIMEOUT_SECS = 10) closes it with a 408."""
    s = socket.create_connection(("127.0.0.1", plain.port), timeout=2)
    t0 = time.monotonic()
    head = b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Slow: " + b"a" * 40
    got = b""
    for b in head:
        try:
            s.sendall(bytes([b]))
        except (BrokenPipeError, ConnectionResetError):
            break
        try:
            got += s.recv(4096)
            if got:
                break
        except socket.timeout:
            pass
        except ConnectionResetError:
            break
        if time.monotonic() - t0 > 20:
            break
    elapsed = time.monotonic() - t0
    s.close()
    assert 9 <= elapsed <= 13, elapsed
    assert got.startswith(b"HTTP/1.1 408"), got[:200]
    assert b'"code":"request_timeout"' in got


def test_idle_keep_alive_connection_is_closed_after_the_head_deadline(plain):
    s = socket.create_connection(("127.0.0.1", plain.port), timeout=15)
    s.sendall(PIPELINED)
    first = s.recv(4096)
    assert first.startswith(b"HTTP/1.1 200")
    t0 = time.monotonic()
    rest = s.recv(4096)
    while rest and b"408" in rest and not rest.endswith(b"}"):
        rest += s.recv(4096)
    try:
        end = s.recv(4096)
    except ConnectionResetError:
        end = b""
    s.close()
    assert 9 <= time.monotonic() - t0 <= 13
    assert end == b""


def _raise_nofile(n):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < n:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(n, hard), hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def _open_idle(src, port, n):
    """n connections from source address `src` that never send anything."""
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.setblocking(False)
        try:
            s.bind((src, 0))
            s.connect_ex(("127.0.0.1", port))
        except OSError:
            s.close()
            break
        socks.append(s)
    return socks


def _wait_settled(port, timeout=30):
    """Until the flood has reached the server: no connection to `port` still
    waiting for its handshake (a SYN the full backlog dropped is sent again
    1 s, 3 s ... later) and the listening socket's accept queue empty (what
    the kernel completed, the server took). A fixed pause guessed at both."""
    want = ":%04X" % port
    deadline = time.monotonic() + timeout
    while True:
        pending = queued = 0
        with open("/proc/net/tcp") as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                local, remote, state, queues = fields[1], fields[2], fields[3], fields[4]
                if state == "02" and remote.endswith(want):    # SYN_SENT to the server
                    pending += 1
                elif state == "0A" and local.endswith(want):   # the server's LISTEN
                    queued += int(queues.split(":")[1], 16)
        if pending == 0 and queued == 0:
            return
        assert time.monotonic() < deadline, f"{pending} connecting, {queued} not accepted"
        time.sleep(0.02)


def _timed_healthz(port, src):
    t0 = time.monotonic()
    out = raw(port, b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
              src=src)
    return out, time.monotonic() - t0


@pytest.mark.serial
def test_connection_flood_from_one_address_does_not_starve_others(plain):
    """4,200 idle connections from one address: another address is answered
    at once. "At once" is 100 ms, or 10 times what the same request takes
    without the flood when the machine is slower than that (the baseline is
    measured just before); a starved client waits for a deadline (seconds)
    or gets refused. A request over the bound is tried again, at most three
    in all: one scheduling stall on a loaded machine is not starvation, a
    server that starves others fails every try. Every answer must be 200."""
    assert _raise_nofile(12000) >= 9000
    base = []
    for _ in range(5):
        out, elapsed = _timed_healthz(plain.port, "127.0.0.2")
        assert out.startswith(b"HTTP/1.1 200"), out[:200]
        base.append(elapsed)
    baseline = sorted(base)[len(base) // 2]
    bound = max(0.1, 10 * baseline)
    flood = _open_idle("127.0.0.1", plain.port, 4200)
    try:
        _wait_settled(plain.port)
        tries = []
        for _ in range(3):
            out, elapsed = _timed_healthz(plain.port, "127.0.0.2")
            assert out.startswith(b"HTTP/1.1 200"), out[:200]
            tries.append(elapsed)
            if elapsed < bound:
                break
        assert tries[-1] < bound, (tries, "baseline", base)
    finally:
        for s in flood:
            s.close()


@pytest.mark.serial
def test_global_connection_cap_answers_503_fast(plain):
    """VT_MAX_CONNECTIONS (4096) idle connections from many addresses (256 per
    address, the per-client cap): the next connection gets a 503 at once."""
    assert _raise_nofile(12000) >= 9000
    flood = []
    try:
        for i in range(3, 3 + 17):
            flood += _open_idle(f"127.0.0.{i}", plain.port, 256)
        _wait_settled(plain.port)
        t0 = time.monotonic()
        out = raw(plain.port, b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
                  src="127.0.1.1", timeout=5)
        elapsed = time.monotonic() - t0
        assert out.startswith(b"HTTP/1.1 503"), out[:200]
        status, code, head = json_error(out)
        assert code == "unavailable" and b"Retry-After" in head
        assert elapsed < 0.5, elapsed
    finally:
        for s in flood:
            s.close()
    time.sleep(1.0)
    assert raw(plain.port, PIPELINED.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n")) \
        .startswith(b"HTTP/1.1 200")


# ------------------------------------------------- clients that leave (item 1)

@pytest.fixture(scope="module")
def big(tmp_path_factory):
    from conftest import Server
    d = tmp_path_factory.mktemp("big")
    write_parquet(d / "big.parquet", "SELECT i AS id, (i * 7919) % 1000003 AS k, "
                  "'name_' || (i % 1000) AS s, random() AS r FROM range(2000000) t(i)")
    s = Server(d, server_block(shutdown_timeout_secs=1) + dataset_block("big", d / "big.parquet"))
    s.start()
    s.wait_ready(timeout=120)
    yield s
    assert s.stop() == 0


def _post(path, body):
    b = json.dumps(body).encode()
    return (b"POST " + path + b" HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            b"Content-Length: " + str(len(b)).encode() + b"\r\n\r\n" + b)


def _answers_within(port, data, seconds):
    t0 = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=seconds) as s:
        s.sendall(data)
        try:
            first = s.recv(64)
        except socket.timeout:
            return False, seconds
    return first.startswith(b"HTTP/1.1 200"), time.monotonic() - t0


def test_clients_leaving_big_sorts_never_wedge_the_workers(big):
    sort = _post(b"/api/v1/datasets/big/query",
                 {"order_by": [{"col": "r", "dir": "desc"}], "page_size": 100000})
    half = []
    for _ in range(4):
        s = socket.create_connection(("127.0.0.1", big.port))
        s.sendall(b"POST /api/v1/datasets/big/query HTTP/1.1\r\nHost: localhost\r\n")
        half.append(s)
    try:
        for _ in range(4):
            socks = [socket.create_connection(("127.0.0.1", big.port)) for _ in range(20)]
            for s in socks:
                s.sendall(sort)
            time.sleep(0.05)
            for s in socks:
                s.close()
            time.sleep(0.3)
        time.sleep(0.5)
        for path, body in ((b"/api/v1/datasets/big/count", {}),
                           (b"/api/v1/datasets/big/query", {"page_size": 5})):
            ok, t = _answers_within(big.port, _post(path, body).replace(
                b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n", 1), 1.0)
            assert ok and t < 1.0, (path, t, big.log()[-3000:])
        ok, t = _answers_within(big.port, b"GET /api/v1/datasets/big/schema HTTP/1.1\r\nHost: localhost"
                                b"\r\nConnection: close\r\n\r\n", 1.0)
        assert ok and t < 1.0, t
    finally:
        for s in half:
            s.close()


def test_client_leaving_a_stream_stops_its_producer(big):
    """A stream client that stops reading and leaves: the producer is told at
    once (its queue was full), the worker is free for the next request."""
    for _ in range(3):
        s = socket.create_connection(("127.0.0.1", big.port))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.sendall(_post(b"/api/v1/datasets/big/query/stream", {}))
        s.recv(100)
        time.sleep(0.3)
        s.close()
    time.sleep(0.5)
    ok, t = _answers_within(big.port, _post(b"/api/v1/datasets/big/count", {}).replace(
        b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n", 1), 1.0)
    assert ok and t < 1.0, t


# ----------------------------------------------------- shutdown (item 3)

def test_sigterm_with_stuck_requests_exits_zero_after_the_drain(vt, datadir):
    write_parquet(datadir / "m.parquet", "SELECT i AS id, random() AS r FROM range(1000000) t(i)")
    s = vt(server_block(shutdown_timeout_secs=1) + dataset_block("m", datadir / "m.parquet"))
    # A stream whose client never reads, and a request whose client half-sent it.
    stuck = socket.create_connection(("127.0.0.1", s.port))
    stuck.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stuck.sendall(_post(b"/api/v1/datasets/m/query/stream", {}))
    time.sleep(0.5)
    sorter = socket.create_connection(("127.0.0.1", s.port))
    sorter.sendall(_post(b"/api/v1/datasets/m/query",
                         {"order_by": [{"col": "r"}], "page_size": 100000}))
    time.sleep(0.1)
    t0 = time.monotonic()
    s.proc.send_signal(signal.SIGTERM)
    rc = s.proc.wait(timeout=30)
    elapsed = time.monotonic() - t0
    stuck.close()
    sorter.close()
    assert rc == 0, s.log()[-3000:]
    assert elapsed < 1 + 5 + 2, elapsed
    assert "suspended connections" not in s.log()
    assert "stopped" in s.log()
