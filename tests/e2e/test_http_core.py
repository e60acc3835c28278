"""HTTP core: errors, 404/405, HEAD, body limit (413), keep-alive, compression,
request ids, timeouts and graceful shutdown."""
import gzip
import http.client
import json
import signal
import socket
import threading
import time

import requests

from conftest import Server, dataset_block, read_reply, server_block, write_parquet


def assert_error(r, status, code):
    assert r.status_code == status, r.text
    assert r.headers["Content-Type"].startswith("application/json")
    body = r.json()
    assert set(body) == {"error", "code"}
    assert body["code"] == code
    assert isinstance(body["error"], str) and body["error"]


def test_unknown_route_404_with_error_body(vt):
    s = vt(server_block())
    assert_error(s.get("/nope"), 404, "not_found")
    assert_error(s.get("/api/v2/datasets"), 404, "not_found")


def test_legacy_unversioned_paths_are_404(vt, datadir):
    write_parquet(datadir / "t.parquet", "SELECT 1 AS x")
    s = vt(server_block() + dataset_block("t", datadir / "t.parquet"))
    for path in ("/api/datasets", "/api/datasets/t/schema", "/api/datasets/t/status"):
        assert_error(s.get(path), 404, "not_found")
    assert_error(s.post("/api/datasets/t/query", {}), 404, "not_found")


def test_wrong_method_405_with_allow(vt):
    s = vt(server_block())
    r = s.post("/healthz", {})
    assert_error(r, 405, "method_not_allowed")
    allow = {m.strip() for m in r.headers["Allow"].split(",")}
    assert allow == {"GET", "HEAD"}
    r = requests.delete(s.url("/api/v1/datasets"))
    assert_error(r, 405, "method_not_allowed")
    assert "GET" in r.headers["Allow"]


def test_head_on_every_get(vt, datadir):
    write_parquet(datadir / "t.parquet", "SELECT 1 AS x")
    s = vt(server_block() + dataset_block("t", datadir / "t.parquet"))
    # (the status's index bytes change when the fast path is ready: wait)
    deadline = time.time() + 30
    while s.get("/api/v1/datasets/t/status").json()["index"]["state"] == "building":
        assert time.time() < deadline
        time.sleep(0.02)
    for path in ("/healthz", "/readyz", "/version", "/api/v1/datasets",
                 "/api/v1/datasets/t/status", "/api/v1/datasets/t/schema"):
        g = s.get(path)
        h = s.head(path)
        assert h.status_code == g.status_code == 200, path
        assert h.content == b""
        assert int(h.headers["Content-Length"]) == len(g.content), path


def test_request_id_header(vt):
    s = vt(server_block())
    a = s.get("/healthz").headers["X-Request-Id"]
    b = s.get("/healthz").headers["X-Request-Id"]
    assert a and b and a != b


def test_headers_up_to_the_limit_are_accepted(vt):
    # VT_MAX_HEADER_BYTES (32 KiB) of headers must fit in libmicrohttpd's
    # per-connection memory, on a keep-alive connection and with a body.
    s = vt(server_block())
    big = {"X-Big": "a" * (31 * 1024)}
    conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=10)
    for _ in range(3):
        conn.request("GET", "/healthz", headers=big)
        r = conn.getresponse()
        assert r.status == 200 and json.loads(r.read()) == {"status": "ok"}
    conn.close()
    r = s.post("/api/v1/datasets/none/query", headers=dict(big, **{
        "Content-Type": "application/json"}), data=json.dumps({"page_size": 1}))
    assert_error(r, 404, "dataset_not_found")


def test_keep_alive_reuses_connection(vt):
    s = vt(server_block())
    conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=10)
    for _ in range(5):
        conn.request("GET", "/healthz")
        r = conn.getresponse()
        assert r.status == 200
        r.read()
        assert (r.getheader("Connection") or "").lower() != "close"
    sock = conn.sock
    conn.request("GET", "/version")
    r = conn.getresponse()
    r.read()
    assert conn.sock is sock
    conn.close()


def raw_request(port, data, timeout=10):
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(data)
        chunks = []
        try:
            while True:
                b = sock.recv(65536)
                if not b:
                    break
                chunks.append(b)
        except (socket.timeout, ConnectionResetError):
            pass
    return b"".join(chunks)


def test_body_over_limit_413_by_content_length(vt):
    s = vt(server_block(max_body_bytes=1000))
    r = s.post("/api/v1/datasets/x/query", data=b"{" + b" " * 2000 + b"}",
               headers={"Content-Type": "application/json"})
    assert_error(r, 413, "body_too_large")


def test_body_over_limit_413_before_body_is_read(vt):
    s = vt(server_block(max_body_bytes=1000))
    # Announce a huge body but send none of it: the 413 must come anyway.
    head = (b"POST /api/v1/datasets/x/query HTTP/1.1\r\nHost: localhost\r\n"
            b"Content-Type: application/json\r\nContent-Length: 100000000\r\n\r\n")
    resp = raw_request(s.port, head, timeout=5)
    assert resp.startswith(b"HTTP/1.1 413"), resp[:200]
    assert b'"code":"body_too_large"' in resp


def test_chunked_body_over_limit_413(vt):
    s = vt(server_block(max_body_bytes=1000))

    def gen():
        for _ in range(100):
            yield b"x" * 100

    r = requests.post(s.url("/api/v1/datasets/x/query"), data=gen(),
                      headers={"Content-Type": "application/json"}, timeout=10)
    assert_error(r, 413, "body_too_large")
    assert s.get("/healthz").status_code == 200


def test_body_within_limit_reaches_handler(vt):
    s = vt(server_block(max_body_bytes=1000))
    r = s.post("/api/v1/datasets/nosuch/query", {"columns": []})
    assert_error(r, 404, "dataset_not_found")


def test_sigterm_exits_zero(vt):
    s = vt(server_block())
    assert s.stop(signal.SIGTERM) == 0
    assert "stopped" in s.log()


def test_sigint_exits_zero(vt):
    s = vt(server_block())
    assert s.stop(signal.SIGINT) == 0


def test_access_log_line_per_request(vt):
    s = vt(server_block())
    s.get("/healthz")
    s.get("/nope")
    time.sleep(0.2)
    log = s.log()
    assert "GET /healthz 200" in log
    assert "GET unmatched 404" in log


def _read_response(f):
    """One response from a socket file: (status, body)."""
    status = int(f.readline().split()[1])
    length = 0
    while True:
        line = f.readline()
        if line in (b"\r\n", b""):
            break
        name, _, value = line.decode().partition(":")
        if name.lower() == "content-length":
            length = int(value)
    return status, f.read(length)


def test_keep_alive_input_arriving_in_pieces_is_read(vt):
    """After an answer the loop waits on epoll for the socket's next bytes
    (a short read emptied it): a head and a body that come in pieces, later,
    and two requests in one write are all answered on the one connection."""
    s = vt(server_block())
    body = b'{"predicates":[{"col":"id","op":"eq","val":1}]}'
    post = (b"POST /api/v1/datasets/none/query HTTP/1.1\r\nHost: localhost\r\n"
            b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body))
    get = b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n"
    with socket.create_connection(("127.0.0.1", s.port), timeout=10) as c:
        f = c.makefile("rb")
        c.sendall(get)
        assert _read_response(f)[0] == 200
        for pieces in ([post[:20], post[20:], body[:10], body[10:]], [post, body]):
            for p in pieces:
                time.sleep(0.15)
                c.sendall(p)
            st, b = _read_response(f)
            assert st == 404 and b"dataset_not_found" in b
        time.sleep(0.15)
        c.sendall(get + get[:10])
        assert _read_response(f)[0] == 200
        time.sleep(0.15)
        c.sendall(get[10:])
        assert _read_response(f)[0] == 200


def test_port_in_use_fails_instead_of_sharing_it(vt, tmp_path):
    """A second server on a port in use must fail to start: with SO_REUSEPORT
    both would listen and the kernel would split the connections between
    them (a stale or misconfigured instance silently taking half the traffic)."""
    a = vt(server_block())
    work = tmp_path / "second"
    work.mkdir()
    b = Server(work, server_block().replace("port = 0", f"port = {a.port}"))
    try:
        b.start()
    except RuntimeError:
        pass
    else:
        raise AssertionError(f"a second server listens on port {a.port}:\n{b.log()}")
    finally:
        b.kill()
    assert b.proc.returncode not in (0, None)
    assert "cannot listen" in b.log()
    assert a.get("/healthz").status_code == 200


def test_uri_too_long_is_414(vt):
    s = vt(server_block())
    r = requests.get(s.url("/api/v1/datasets/" + "x" * 9000 + "/status"), timeout=10)
    assert_error(r, 414, "uri_too_long")
    assert s.get("/healthz").status_code == 200


def test_repeated_field_lines_are_joined(vt):
    """Accept-Encoding on two lines means both lists (RFC 9110 §5.3): the
    server used to read only the first line and answered identity here."""
    s = vt(server_block())
    head = (b"GET /docs/openapi.json HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
            b"Accept-Encoding: x-unknown\r\nAccept-Encoding: gzip\r\n\r\n")
    resp = raw_request(s.port, head)
    headers, _, body = resp.partition(b"\r\n\r\n")
    assert headers.startswith(b"HTTP/1.1 200"), headers
    assert b"\r\ncontent-encoding: gzip" in headers.lower(), headers
    # and one line answers the same
    one = raw_request(s.port, head.replace(b"x-unknown\r\nAccept-Encoding: gzip", b"x-unknown, gzip"))
    assert b"\r\ncontent-encoding: gzip" in one.partition(b"\r\n\r\n")[0].lower()


def read_chunked_strictly(sock):
    """Reads one chunked HTTP/1.1 response from sock in small reads; returns
    (head, body, sizes). Every size line, chunk and CRLF is checked."""
    buf = b""

    def need(n):
        nonlocal buf
        while len(buf) < n:
            b = sock.recv(997)  # small, odd reads: the server's sends split anywhere
            assert b, "connection closed early"
            buf += b

    def line():
        nonlocal buf
        while b"\r\n" not in buf:
            need(len(buf) + 1)
        i = buf.index(b"\r\n")
        out, buf = buf[:i], buf[i + 2:]
        return out

    while b"\r\n\r\n" not in buf:
        need(len(buf) + 1)
    i = buf.index(b"\r\n\r\n")
    head, buf = buf[:i].decode(), buf[i + 4:]
    body, sizes = [], []
    while True:
        size = int(line(), 16)
        sizes.append(size)
        if size == 0:
            assert line() == b""
            return head, b"".join(body), sizes
        need(size + 2)
        body.append(buf[:size])
        assert buf[size:size + 2] == b"\r\n"
        buf = buf[size + 2:]


def tiny_receive_buffer(port):
    """A connection whose 4 KiB receive buffer makes nearly every send of the
    server partial."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(30)
    sock.connect(("127.0.0.1", port))
    return sock


def post_query(sock, req):
    sock.sendall(b"POST /api/v1/datasets/t/query HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                 b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                 % (len(req), req))


def test_pre_rendered_page_survives_partial_sends(vt, datadir):
    """A plain page of the pre-rendered pages goes out as head + document
    head, a sendfile of the rows, then the document's trailer: with a tiny
    receive buffer every piece is sent partly; the body must be exact, its
    Content-Length right, and the connection must serve the next request."""
    write_parquet(datadir / "t.parquet",
                  "SELECT range AS id, repeat(chr(97 + (range % 26)::INTEGER), 60) AS s "
                  "FROM range(20000)")
    s = vt(server_block() + dataset_block("t", datadir / "t.parquet"))
    deadline = time.time() + 60
    while s.get("/api/v1/datasets/t/status").json()["index"]["json_pages_bytes"] == 0:
        assert time.time() < deadline, s.log()[-3000:]
        time.sleep(0.02)
    for body in ({"page_size": 20000}, {"page": 3, "page_size": 7000}):
        req = json.dumps(body).encode()
        want = s.post("/api/v1/datasets/t/query", data=req,
                      headers={"Content-Type": "application/json",
                               "Accept-Encoding": "identity"})
        assert want.status_code == 200
        assert int(want.headers["Content-Length"]) == len(want.content) > 256 * 1024
        with tiny_receive_buffer(s.port) as sock:
            for _ in range(2):
                post_query(sock, req)
                head, got, rest = read_reply(sock, piece=997)  # small, odd reads
                assert head.startswith(b"HTTP/1.1 200") and got == want.content and not rest


def test_streamed_page_survives_partial_sends(vt, datadir):
    """A page big enough to stream goes out as the producer's chunks, sent
    from their own buffers: a client with a tiny receive buffer, reading a
    few hundred bytes at a time, makes nearly every send partial. The chunked
    framing must stay exact, the body must equal the unchunked (HTTP/1.0)
    one, and a second request on the same connection must work."""
    write_parquet(datadir / "t.parquet",
                  "SELECT range AS id, repeat(chr(97 + (range % 26)::INTEGER), 60) AS s "
                  "FROM range(20000)")
    # (no pre-rendered pages: this is the streamed path; the file path is
    # test_pre_rendered_page_survives_partial_sends)
    s = vt(server_block() + dataset_block("t", datadir / "t.parquet",
                                          **{"index.json_pages_mb": 0}))
    req = json.dumps({"page_size": 20000}).encode()
    want = s.post("/api/v1/datasets/t/query", data=req,
                  headers={"Content-Type": "application/json"})
    assert want.status_code == 200
    rows = want.json()["data"]
    assert len(rows) == 20000 and rows[19999] == {"id": 19999, "s": "f" * 60}
    with tiny_receive_buffer(s.port) as sock:
        for _ in range(2):
            post_query(sock, req)
            head, body, sizes = read_chunked_strictly(sock)
            assert head.startswith("HTTP/1.1 200"), head
            assert "transfer-encoding: chunked" in head.lower()
            assert len(sizes) > 3  # really streamed in several chunks
            assert body == want.content
    raw = raw_request(s.port, b"POST /api/v1/datasets/t/query HTTP/1.0\r\n"
                      b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                      % (len(req), req), timeout=30)
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.") and b" 200 " in head.split(b"\r\n")[0] + b" "
    assert body == want.content
