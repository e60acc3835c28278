"""server.cors_origins: pages on other origins may read the API from a
browser (CORS), and only the origins listed. Checked with raw requests
(preflight, headers on answers and errors) and with headless Chromium: a page
served from another origin fetches a GET and a POST (which needs a
preflight) and reads the answer and its headers; a page from an origin not
listed cannot."""
import http.server
import subprocess
import threading

import pytest
import requests

from conftest import VITRINE, dataset_block, server_block, write_parquet
from explorer.browser import drive, one_browser


@pytest.fixture(scope="module", autouse=True)
def browser():
    """One Chromium for the module's scenarios (each in a new context)."""
    with one_browser():
        yield


@pytest.fixture
def pages():
    """Two tiny static sites on 127.0.0.1 (two ports: two origins)."""
    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = b"<!doctype html><title>other origin</title><p>hello"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    servers = [http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page) for _ in range(2)]
    for s in servers:
        threading.Thread(target=s.serve_forever, daemon=True).start()
    yield [f"http://127.0.0.1:{s.server_address[1]}" for s in servers]
    for s in servers:
        s.shutdown()


def test_cors_headers_and_preflight(vt, datadir):
    pq = write_parquet(datadir / "t.parquet", "SELECT range AS id FROM range(10)")
    s = vt(server_block(cors_origins=["https://app.example.com", "http://127.0.0.1:3000/"])
           + dataset_block("t", pq))
    pre = requests.options(s.url("/api/v1/datasets/t/query"), timeout=10, headers={
        "Origin": "https://app.example.com", "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type,x-admin-token"})
    assert pre.status_code == 204
    assert pre.headers["Access-Control-Allow-Origin"] == "https://app.example.com"
    assert set(pre.headers["Access-Control-Allow-Methods"].split(", ")) == {"GET", "HEAD", "POST"}
    allowed = pre.headers["Access-Control-Allow-Headers"].lower()
    assert "content-type" in allowed and "x-admin-token" in allowed and "authorization" in allowed
    assert int(pre.headers["Access-Control-Max-Age"]) > 0
    assert "Origin" in pre.headers["Vary"]
    # a preflight for a path without routes is the usual 404
    assert requests.options(s.url("/api/v1/nothing"), timeout=10, headers={
        "Origin": "https://app.example.com",
        "Access-Control-Request-Method": "GET"}).status_code == 404
    # answers and errors carry the origin and the headers a page may read
    for path, status in (("/api/v1/datasets/t/status", 200), ("/api/v1/datasets/no/status", 404)):
        r = s.get(path, headers={"Origin": "http://127.0.0.1:3000"})
        assert r.status_code == status
        assert r.headers["Access-Control-Allow-Origin"] == "http://127.0.0.1:3000"
        assert "X-Total-Count" in r.headers["Access-Control-Expose-Headers"]
        assert "ETag" in r.headers["Access-Control-Expose-Headers"]
    # an origin not listed gets nothing to read; neither does "null"
    for origin in ("https://evil.example.com", "https://app.example.com.evil.com", "null",
                   "http://app.example.com", "https://app.example.com:8443"):
        r = s.get("/api/v1/datasets", headers={"Origin": origin})
        assert r.status_code == 200 and "Access-Control-Allow-Origin" not in r.headers, origin
        p = requests.options(s.url("/api/v1/datasets"), timeout=10, headers={
            "Origin": origin, "Access-Control-Request-Method": "GET"})
        assert "Access-Control-Allow-Origin" not in p.headers, origin


def test_no_cors_by_default_and_bad_config(vt, datadir):
    s = vt(server_block())
    r = s.get("/healthz", headers={"Origin": "https://app.example.com"})
    assert not any(h.lower().startswith("access-control-") for h in r.headers)
    p = requests.options(s.url("/healthz"), timeout=10, headers={
        "Origin": "https://app.example.com", "Access-Control-Request-Method": "GET"})
    assert p.status_code == 405 and "Access-Control-Allow-Origin" not in p.headers
    for bad in ("app.example.com", "https://app.example.com/path", "https://", "//x"):
        cfg = datadir / "bad.toml"
        cfg.write_text(server_block(cors_origins=[bad]))
        out = subprocess.run([str(VITRINE), "check-config", str(cfg)], capture_output=True,
                             text=True, timeout=30)
        assert out.returncode != 0 and "cors_origins[0]" in out.stdout + out.stderr, (bad, out)


def test_cross_origin_page_in_chromium(vt, datadir, pages):
    allowed, other = pages
    pq = write_parquet(datadir / "t.parquet", "SELECT range AS id FROM range(10)")
    s = vt(server_block(cors_origins=[allowed]) + dataset_block("t", pq))
    out = drive("cors", pageUrl=allowed + "/", api=s.base)
    calls = {c["name"]: c for c in out["calls"]}
    assert calls["get"]["ok"] and calls["get"]["status"] == 200, calls
    assert calls["get"]["body"]["data"] == [{"id": 0}, {"id": 1}]
    assert calls["get"]["total"] == "10" and calls["get"]["etag"].startswith('W/"')
    assert calls["post"]["ok"] and calls["post"]["body"]["total"] == 10, calls
    assert calls["error"]["ok"] and calls["error"]["status"] == 404
    assert calls["error"]["body"]["code"] == "dataset_not_found"
    # the same page on an origin not listed: the browser refuses every read
    out = drive("cors", pageUrl=other + "/", api=s.base)
    assert all(not c["ok"] and "TypeError" in c["error"] for c in out["calls"]), out["calls"]
