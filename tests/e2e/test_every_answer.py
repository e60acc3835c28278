"""Answers the server writes outside any route (issue 21 leftovers): the
connection caps' 503 (written by the acceptor before any request exists) and
the 503 shutting_down of a request that arrives while the server stops.
Each carries X-Request-Id, Content-Type: application/json and the error body
of src/util/errors.h, and the OpenAPI document describes both on every
operation (they went out undocumented, and the cap's 503 had no request id).
The exchanges go through `requests`, so the contract check
(tests/e2e/contract/validate.cjs) validates them against the served document.
No step waits on a clock: each polls for the state it needs."""
import signal
import socket
import time

import pytest
import requests

import contract_rec
from conftest import dataset_block, server_block, write_parquet

PER_CLIENT_CAP = 256  # VT_MAX_CONNECTIONS_PER_CLIENT (src/util/limits.h)


def check_error(r, code):
    assert r.status_code == 503, (r.status_code, r.text)
    assert r.headers.get("X-Request-Id"), dict(r.headers)
    assert r.headers["Content-Type"] == "application/json", dict(r.headers)
    assert r.headers.get("Retry-After") == "2", dict(r.headers)
    body = r.json()
    assert body["code"] == code and body["error"], body


def test_the_per_address_cap_answers_a_documented_503_with_a_request_id(vt, datadir):
    write_parquet(datadir / "a.parquet", "SELECT 1 AS id")
    s = vt(server_block() + dataset_block("a", datadir / "a.parquet"))
    idle = []
    try:
        # Blocking connects: each is in the listen queue before the next, and
        # the acceptor counts them in order, so the next one is past the cap.
        for _ in range(PER_CLIENT_CAP):
            idle.append(socket.create_connection(("127.0.0.1", s.port), timeout=10))
        r = requests.get(s.url("/api/v1/datasets"), timeout=10)
        check_error(r, "unavailable")
        ids = {r.headers["X-Request-Id"]}
        r = requests.get(s.url("/healthz"), timeout=10)
        check_error(r, "unavailable")
        assert r.headers["X-Request-Id"] not in ids  # one id per answer
    finally:
        for c in idle:
            c.close()
    # The idle ones gone, the address is served again (the loop sees them
    # close: poll).
    deadline = time.monotonic() + 30
    while True:
        r = requests.get(s.url("/healthz"), timeout=10)
        if r.status_code == 200 or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    assert r.status_code == 200, r.text


def test_a_request_arriving_while_the_server_stops_gets_503_shutting_down(vt, datadir):
    write_parquet(datadir / "a.parquet", "SELECT i AS id FROM range(3) t(i)")
    s = vt(server_block(drain_delay_secs=0, shutdown_timeout_secs=60)
           + dataset_block("a", datadir / "a.parquet"))
    sess = requests.Session()
    assert sess.post(s.url("/api/v1/datasets/a/count"), json={}, timeout=30).json() == {"count": 3}
    # A request in flight (its body not sent yet) keeps the server in its
    # shutdown grace; 100 Continue says the server has it.
    hold = socket.create_connection(("127.0.0.1", s.port), timeout=30)
    hold.sendall(b"POST /api/v1/datasets/a/count HTTP/1.1\r\nHost: localhost\r\n"
                 b"Content-Type: application/json\r\nContent-Length: 2\r\n"
                 b"Expect: 100-continue\r\n\r\n")
    got = b""
    while b"\r\n\r\n" not in got:
        chunk = hold.recv(4096)
        assert chunk, got
        got += chunk
    assert got.startswith(b"HTTP/1.1 100 Continue"), got
    contract_rec.keep_document(s)  # it cannot be fetched once the server stops
    s.proc.send_signal(signal.SIGTERM)
    # Stopping closes the listening socket: poll until a connection is refused.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", s.port), timeout=5).close()
        except (ConnectionRefusedError, ConnectionResetError):
            break
    else:
        pytest.fail("the listening socket did not close:\n" + s.log()[-3000:])
    # The session's keep-alive connection is still open: its next request is
    # refused with the documented 503.
    r = sess.post(s.url("/api/v1/datasets/a/count"), json={}, timeout=30)
    check_error(r, "shutting_down")
    assert r.headers.get("Connection") == "close", dict(r.headers)
    # The held request, completed now, is answered the same way.
    hold.sendall(b"{}")
    out = b""
    while True:
        chunk = hold.recv(4096)
        if not chunk:
            break
        out += chunk
    hold.close()
    assert out.startswith(b"HTTP/1.1 503 "), out[:300]
    assert b"\r\nX-Request-Id: " in out and b'"code":"shutting_down"' in out, out[:500]
    assert s.proc.wait(timeout=60) == 0


def test_every_operation_documents_the_503s_any_route_gives(vt, datadir):
    write_parquet(datadir / "a.parquet", "SELECT 1 AS id")
    s = vt(server_block() + dataset_block("a", datadir / "a.parquet"))
    doc = s.get("/docs/openapi.json").json()
    shared = doc["components"]["responses"]["Unavailable"]
    examples = shared["content"]["application/json"]["examples"]
    assert set(examples) == {"unavailable", "shutting_down"}, examples
    assert "Retry-After" in shared["headers"] and "X-Request-Id" in shared["headers"]
    n = 0
    for path, item in doc["paths"].items():
        for method, op in item.items():
            if not isinstance(op, dict) or "responses" not in op:
                continue
            r503 = op["responses"].get("503")
            assert r503, (method, path)
            n += 1
            if "$ref" in r503:
                assert r503["$ref"] == "#/components/responses/Unavailable", (method, path)
                continue
            assert "shutting down" in r503["description"], (method, path, r503)
            content = r503.get("content", {}).get("application/json")
            if content:  # HEAD answers have no body
                assert {"unavailable", "shutting_down"} <= set(content["examples"]), \
                    (method, path)
    assert n > 20, n
    # The readiness probe's own 503 body, or the Error of a refusal.
    ready = doc["paths"]["/readyz"]["get"]["responses"]["503"]["content"]["application/json"]
    refs = {x["$ref"] for x in ready["schema"]["anyOf"]}
    assert refs == {"#/components/schemas/Ready", "#/components/schemas/Error"}, ready
