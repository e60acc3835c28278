"""DNS rebinding (issue 21 item 2): a page on evil.example.com rebinds its name
to 127.0.0.1 and calls the server as its own origin. A loopback listener
answers loopback names only (421 host_not_allowed, JSON, on every route), MCP
refuses an Origin it does not allow (403), and server.allowed_hosts /
server.allowed_origins open both for a deployment behind a proxy.

The MCP conformance suite's `dns-rebinding-protection` scenario
(@modelcontextprotocol/conformance 0.1.16, which needs Node 22; this machine
has Node 20) sends an `initialize` POST with `Host: evil.example.com` and
`Origin: http://evil.example.com` and expects a 4xx, then the same with the
URL's own host (`localhost:<port>`) and expects a 2xx:
test_conformance_dns_rebinding_scenario sends exactly those two requests."""
import json
import socket

import pytest
import requests

from conftest import Server, dataset_block, server_block, write_parquet

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "conformance-dns-rebinding-test", "version": "1.0.0"}}}
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
EVIL = "evil.example.com"


def start(tmp_path_factory, name, extra_server="", listen="127.0.0.1"):
    d = tmp_path_factory.mktemp(name)
    t = write_parquet(d / "t.parquet", "SELECT range AS id FROM range(10)")
    cfg = server_block() + extra_server + "[mcp]\nenabled = true\n[metrics]\nenabled = true\n" \
        + dataset_block("t", t)
    cfg = cfg.replace('listen = "127.0.0.1"', f'listen = "{listen}"')
    s = Server(d, cfg, env={"ADMIN_TOKEN": "tok"})
    s.start()
    s.wait_ready()
    return s


@pytest.fixture(scope="module")
def local(tmp_path_factory):
    s = start(tmp_path_factory, "local")
    yield s
    assert s.stop() == 0


@pytest.fixture(scope="module")
def proxied(tmp_path_factory):
    s = start(tmp_path_factory, "proxied",
              'allowed_hosts = ["data.example.com", "*.corp.example"]\n'
              'allowed_origins = ["https://app.example.com"]\n')
    yield s
    assert s.stop() == 0


def call(s, method, path, host, body=None, headers=None, origin=None):
    h = dict(headers or {})
    h["Host"] = host
    if origin:
        h["Origin"] = origin
    return requests.request(method, s.url(path), headers=h, timeout=30,
                            data=json.dumps(body) if body is not None else None)


ROUTES = [("GET", "/healthz", None), ("GET", "/readyz", None), ("GET", "/version", None),
          ("GET", "/api/v1/datasets", None), ("GET", "/api/v1/datasets/t/schema", None),
          ("POST", "/api/v1/datasets/t/query", {}), ("POST", "/api/v1/datasets/t/count", {}),
          ("GET", "/api/v1/datasets/t/all.parquet", None), ("POST", "/mcp", INIT),
          ("GET", "/docs/", None), ("GET", "/explore/", None), ("GET", "/metrics", None),
          ("POST", "/api/v1/datasets/t/reload", None), ("GET", "/no/such/route", None),
          ("DELETE", "/healthz", None)]


@pytest.mark.parametrize("method,path,body", ROUTES, ids=[f"{m} {p}" for m, p, _ in ROUTES])
def test_rebound_host_is_421_on_every_route(local, method, path, body):
    for host in (EVIL, f"{EVIL}:{local.port}", "localhost.evil.example.com",
                 "127.0.0.1.nip.io", "evil.localhost"):
        r = call(local, method, path, host, body, MCP_HEADERS, origin=f"http://{host}")
        assert r.status_code == 421, (host, r.status_code, r.text[:200])
        assert r.headers["Content-Type"] == "application/json"
        assert r.json() == {"error": r.json()["error"], "code": "host_not_allowed"}
        assert r.headers.get("X-Request-Id")


def test_loopback_names_are_answered(local):
    for host in ("localhost", f"localhost:{local.port}", "LOCALHOST", "localhost.",
                 f"127.0.0.1:{local.port}", "127.9.8.7", "[::1]", f"[::1]:{local.port}"):
        r = call(local, "GET", "/api/v1/datasets", host)
        assert r.status_code == 200, (host, r.text)


def test_raw_hosts(local):
    """Hosts no client library sends: malformed ones are refused, HTTP/1.0
    without a Host is answered (no browser sends that)."""
    def raw(data):
        with socket.create_connection(("127.0.0.1", local.port), timeout=10) as c:
            c.sendall(data)
            out = b""
            while True:
                b = c.recv(65536)
                if not b:
                    return out
                out += b
    for bad in (b"", b"evil.example.com:80:80", b"user@localhost", b"localhost/x",
                b"[::1", b"localhost:99999999"):
        out = raw(b"GET /healthz HTTP/1.1\r\nHost: " + bad + b"\r\nConnection: close\r\n\r\n")
        assert out.startswith(b"HTTP/1.1 421"), (bad, out[:200])
        assert b'"code":"host_not_allowed"' in out
    assert raw(b"GET /healthz HTTP/1.0\r\n\r\n").startswith(b"HTTP/1.1 200")


def test_conformance_dns_rebinding_scenario(local):
    """What @modelcontextprotocol/conformance's dns-rebinding-protection sends."""
    r = call(local, "POST", "/mcp", EVIL, INIT, MCP_HEADERS, origin=f"http://{EVIL}")
    assert 400 <= r.status_code < 500, r.status_code
    own = f"localhost:{local.port}"
    r = call(local, "POST", "/mcp", own, INIT, MCP_HEADERS, origin=f"http://{own}")
    assert 200 <= r.status_code < 300, r.text
    assert r.json()["result"]["protocolVersion"]


def test_mcp_refuses_foreign_origins(local):
    own = f"127.0.0.1:{local.port}"
    for origin in (f"http://{EVIL}", "null", f"http://localhost.{EVIL}", "https://app.example.com",
                   f"http://{own}/path"):
        r = call(local, "POST", "/mcp", own, INIT, MCP_HEADERS, origin=origin)
        assert r.status_code == 403, (origin, r.status_code)
        assert r.json()["error"]["message"] == "Origin not allowed"
    for origin in (f"http://{own}", "http://localhost:3000", "https://[::1]"):
        r = call(local, "POST", "/mcp", own, INIT, MCP_HEADERS, origin=origin)
        assert r.status_code == 200, (origin, r.text)
    # No Origin: not a browser.
    assert call(local, "POST", "/mcp", own, INIT, MCP_HEADERS).status_code == 200


def test_allowed_hosts_and_origins_behind_a_proxy(proxied):
    for host in ("data.example.com", "Data.Example.com:443", "x.corp.example", "localhost"):
        assert call(proxied, "GET", "/api/v1/datasets", host).status_code == 200, host
    for host in (EVIL, "corp.example", "data.example.com.evil.example.com"):
        assert call(proxied, "GET", "/api/v1/datasets", host).status_code == 421, host
    # MCP: the listed host's own origin, the listed origin, loopback.
    ok = [("data.example.com", "https://data.example.com"),
          ("data.example.com", "https://app.example.com"),
          ("localhost", "https://app.example.com"), ("localhost", "http://localhost:1234")]
    for host, origin in ok:
        r = call(proxied, "POST", "/mcp", host, INIT, MCP_HEADERS, origin=origin)
        assert r.status_code == 200, (host, origin, r.text)
    bad = [("data.example.com", f"https://{EVIL}"),
           ("localhost", "https://data.example.com"),       # not its own origin
           ("x.corp.example", "https://x.corp.example"),    # wildcards never vouch for origins
           ("data.example.com", "http://app.example.com")]  # scheme differs
    for host, origin in bad:
        r = call(proxied, "POST", "/mcp", host, INIT, MCP_HEADERS, origin=origin)
        assert r.status_code == 403, (host, origin, r.status_code)


def test_public_listener(tmp_path_factory):
    """Not on loopback: any name until allowed_hosts lists some; addresses
    (probes, Kubernetes) always; the MCP Origin rule the same everywhere."""
    s = start(tmp_path_factory, "public", listen="0.0.0.0")
    try:
        assert call(s, "GET", "/healthz", EVIL).status_code == 200
        assert call(s, "GET", "/healthz", "10.1.2.3:8080").status_code == 200
        r = call(s, "POST", "/mcp", EVIL, INIT, MCP_HEADERS, origin=f"http://{EVIL}")
        assert r.status_code == 403
    finally:
        assert s.stop() == 0
    s = start(tmp_path_factory, "public_listed", 'allowed_hosts = ["data.example.com"]\n',
              listen="0.0.0.0")
    try:
        assert call(s, "GET", "/healthz", "data.example.com").status_code == 200
        assert call(s, "GET", "/healthz", "10.1.2.3:8080").status_code == 200
        assert call(s, "GET", "/healthz", "[2001:db8::1]").status_code == 200
        assert call(s, "GET", "/healthz", EVIL).status_code == 421
    finally:
        assert s.stop() == 0


def test_bad_allowed_hosts_fail_the_start(tmp_path):
    for line in ('allowed_hosts = ["http://data.example.com"]', 'allowed_hosts = ["a.com:80"]',
                 'allowed_origins = ["app.example.com"]',
                 'allowed_origins = ["https://app.example.com/path"]'):
        s = Server(tmp_path, server_block() + line + "\n")
        s.expect_failure = True
        with pytest.raises(RuntimeError) as e:
            s.start()
        assert "allowed_" in str(e.value), str(e.value)[-500:]
