"""Embedded UI assets (src/ui) served by the real binary: every file of the
built docs site and Explorer comes back byte for byte in each precompressed
form, with ETags, 304s, Cache-Control, CSP, nosniff, HEAD, redirects and 404s;
mounts follow docs.path / explorer.path / server.prefix / *.enabled.
"""
import base64
import gzip
import hashlib
import http.client
import re
import subprocess
from pathlib import Path

import pytest
import requests

from conftest import BUILD

DOCS_DIR = BUILD / "ui" / "docs"
EXPLORER_DIR = BUILD / "ui" / "explorer"
DOCS_EXCLUDED = re.compile(r"^(fonts/.*\.(eot|svg|ttf|otf|woff)|sitemap\.xml\.gz)$")

PLAIN = {"Accept-Encoding": "identity"}


def files_of(root, excluded=None):
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_file():
            rel = p.relative_to(root).as_posix()
            if not (excluded and excluded.match(rel)):
                out[rel] = p.resolve().read_bytes()
    return out


def decode(body, coding):
    if coding is None:
        return body
    if coding == "gzip":
        return gzip.decompress(body)
    tool = {"br": ["brotli", "-d", "-c"], "zstd": ["zstd", "-d", "-c", "-q"]}[coding]
    return subprocess.run(tool, input=body, stdout=subprocess.PIPE, check=True).stdout


def raw_get(url, headers):
    # requests would decode gzip/br itself; we want the bytes on the wire.
    r = requests.get(url, headers=headers, stream=True, timeout=30)
    body = r.raw.read(decode_content=False)
    return r, body


@pytest.fixture
def docs_server(vt):
    return vt("[server]\nport = 0\n", wait="listening")


def test_docs_bundle_was_built():
    files = files_of(DOCS_DIR, DOCS_EXCLUDED)
    assert "index.html" in files and "search/search_index.json" in files, \
        "the docs site was not built (mkdocs missing?)"


def test_every_docs_file_byte_for_byte_in_every_coding(docs_server):
    files = files_of(DOCS_DIR, DOCS_EXCLUDED)
    seen = {None: 0, "gzip": 0, "br": 0, "zstd": 0}
    for rel, data in files.items():
        url = docs_server.url("/mkdocs/" + rel)
        etags = set()
        for ae in ("identity", "gzip", "br", "zstd", "gzip, deflate, br, zstd"):
            r, body = raw_get(url, {"Accept-Encoding": ae})
            assert r.status_code == 200, (rel, r.status_code, body[:200])
            coding = r.headers.get("Content-Encoding")
            assert coding in (None, ae.split(",")[0] if "," not in ae else "zstd"), (rel, ae, coding)
            assert decode(body, coding) == data, (rel, coding)
            if coding:
                assert len(body) < len(data), (rel, coding)  # only kept when smaller
            seen[coding] += 1
            etags.add((coding, r.headers["ETag"]))
            assert r.headers["X-Content-Type-Options"] == "nosniff"
            assert "default-src 'self'" in r.headers["Content-Security-Policy"]
            assert r.headers["Cache-Control"] == "no-cache"  # mkdocs names carry no hash
        # one ETag per representation, all different
        assert len({e for _, e in etags}) == len({c for c, _ in etags}), (rel, etags)
    assert all(seen[c] > 0 for c in seen), seen


def test_content_types_and_etag_is_content_hash(docs_server):
    # the site's own theme (ui/docs/theme: no jQuery, no icon font)
    want = {"index.html": "text/html; charset=utf-8", "css/site.css": "text/css; charset=utf-8",
            "js/site.js": "text/javascript; charset=utf-8",
            "search/search_index.json": "application/json",
            "search/lunr.js": "text/javascript; charset=utf-8"}
    for rel, ctype in want.items():
        r = docs_server.get("/mkdocs/" + rel, headers=PLAIN)
        assert r.status_code == 200 and r.headers["Content-Type"] == ctype, (rel, r.headers)
        data = (DOCS_DIR / rel).resolve().read_bytes()
        opaque = base64.urlsafe_b64encode(hashlib.sha256(data).digest()[:18]).decode()
        assert r.headers["ETag"] == f'"{opaque}"'


def test_conditional_get_and_head(docs_server):
    url = "/mkdocs/css/site.css"
    for ae in ("identity", "br"):
        r, _ = raw_get(docs_server.url(url), {"Accept-Encoding": ae})
        etag = r.headers["ETag"]
        r2, body = raw_get(docs_server.url(url), {"Accept-Encoding": ae, "If-None-Match": etag})
        assert r2.status_code == 304 and body == b""
        assert r2.headers["ETag"] == etag
        assert r2.headers["Vary"] == "Accept-Encoding"
        assert r2.headers["Cache-Control"] == "no-cache"
        # a weak form of the same tag and a list containing it also match
        r3, _ = raw_get(docs_server.url(url), {"Accept-Encoding": ae,
                                               "If-None-Match": f'"x", W/{etag}'})
        assert r3.status_code == 304
    # the identity tag does not validate the brotli form
    r, _ = raw_get(docs_server.url(url), PLAIN)
    r4, body = raw_get(docs_server.url(url), {"Accept-Encoding": "br",
                                              "If-None-Match": r.headers["ETag"]})
    assert r4.status_code == 200 and r4.headers["Content-Encoding"] == "br" and body
    r5 = docs_server.get(url, headers={"If-Match": '"nope"'})
    assert r5.status_code == 412 and r5.json()["code"] == "precondition_failed"
    # HEAD: same headers, no body
    g, gbody = raw_get(docs_server.url(url), {"Accept-Encoding": "gzip"})
    h = requests.head(docs_server.url(url), headers={"Accept-Encoding": "gzip"}, timeout=10)
    assert h.status_code == 200 and h.content == b""
    for k in ("Content-Type", "Content-Encoding", "ETag", "Content-Length", "Cache-Control",
              "Content-Security-Policy"):
        assert h.headers.get(k) == g.headers.get(k), k
    assert int(h.headers["Content-Length"]) == len(gbody)


def test_inline_scripts_are_allowed_by_hash_only(docs_server):
    r = docs_server.get("/mkdocs/", headers=PLAIN)
    csp = r.headers["Content-Security-Policy"]
    script_src = re.search(r"script-src ([^;]*)", csp).group(1).split()
    assert "'unsafe-inline'" not in script_src and "'unsafe-eval'" not in script_src
    inline = [m.group(2) for m in re.finditer(r"<script([^>]*)>(.*?)</script>", r.text, re.S)
              if "src=" not in m.group(1)]
    assert inline, "the mkdocs theme has inline scripts"
    for body in inline:
        h = "'sha256-%s'" % base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()
        assert h in script_src
    assert "https:" not in r.text.split("<body")[0], "no CDN in the page head"


def test_redirects_404_and_methods(docs_server):
    r = docs_server.get("/mkdocs", allow_redirects=False)
    assert r.status_code == 301 and r.headers["Location"] == "/mkdocs/"
    r = docs_server.get("/mkdocs/configuration", allow_redirects=False)
    assert r.status_code == 301 and r.headers["Location"] == "/mkdocs/configuration/"
    r = docs_server.get("/mkdocs/configuration/", headers=PLAIN)
    assert r.status_code == 200 and "server.port" in r.text
    for path in ("/mkdocs/nope.html", "/mkdocs/nope/", "/mkdocs/css/", "/mkdocs/Index.html",
                 "/mkdocs/index.html/x", "/mkdocs/nope"):
        r = docs_server.get(path, allow_redirects=False)
        assert r.status_code == 404, path
        assert r.json()["code"] == "not_found", path
    # no way out of the mount
    for path in ("/mkdocs/../version", "/mkdocs/%2e%2e/version", "/mkdocs/css/%2F..%2Fx",
                 "/mkdocs/./index.html"):
        c = http.client.HTTPConnection("127.0.0.1", docs_server.port, timeout=10)
        c.request("GET", path)  # sent as written (requests would normalize "..")
        resp = c.getresponse()
        assert resp.status == 404, path
        c.close()
    r = docs_server.post("/mkdocs/index.html", data=b"x")
    assert r.status_code == 405


def test_compress_false_sends_identity(vt):
    s = vt("[server]\nport = 0\ncompress = false\n", wait="listening")
    r, body = raw_get(s.url("/mkdocs/js/site.js"), {"Accept-Encoding": "gzip, br, zstd"})
    assert r.status_code == 200 and "Content-Encoding" not in r.headers
    assert "Vary" not in r.headers
    assert body == (DOCS_DIR / "js/site.js").read_bytes()


def test_mount_paths_prefix_and_disabled(vt):
    s = vt('[server]\nport = 0\nprefix = "/p"\n[docs]\npath = "/handbook"\n', wait="listening")
    r = s.get("/handbook", allow_redirects=False)
    assert r.status_code == 301 and r.headers["Location"] == "/p/handbook/"
    r = s.get("/handbook/configuration", allow_redirects=False)
    assert r.headers["Location"] == "/p/handbook/configuration/"
    assert s.get("/handbook/", headers=PLAIN).status_code == 200
    assert s.get("/mkdocs/").status_code == 404
    off = vt("[server]\nport = 0\n[docs]\nenabled = false\n", wait="listening")
    for path in ("/mkdocs", "/mkdocs/", "/mkdocs/index.html"):
        r = off.get(path, allow_redirects=False)
        assert r.status_code == 404 and r.json()["code"] == "not_found", path


def test_explorer_assets_immutable_and_spa_fallback(vt):
    files = files_of(EXPLORER_DIR)
    assert "index.html" in files, "the Explorer was not built (npm ci in ui/explorer?)"
    hashed = [rel for rel in files if rel.startswith("assets/")]
    assert hashed
    s = vt("[server]\nport = 0\n", wait="listening")
    r = s.get("/explore", allow_redirects=False)
    assert r.status_code == 301 and r.headers["Location"] == "/explore/"
    r = s.get("/explore/", headers=PLAIN)
    assert r.status_code == 200 and r.content == files["index.html"]
    assert r.headers["Cache-Control"] == "no-cache"
    for rel in hashed:
        r = s.get("/explore/" + rel, headers=PLAIN)
        assert r.status_code == 200 and r.content == files[rel]
        assert r.headers["Cache-Control"] == "public, max-age=31536000, immutable"
    # deep links land on the app's own router; a missing file stays a 404
    r = s.get("/explore/datasets/trips", allow_redirects=False)
    assert r.status_code == 302 and r.headers["Location"] == "/explore/#/datasets/trips"
    r = s.get("/explore/assets/missing-abc.js", allow_redirects=False)
    assert r.status_code == 404 and r.json()["code"] == "not_found"


def test_explorer_settings_and_disabled(vt):
    s = vt('[server]\nport = 0\nprefix = "/p"\nenvironment = "staging"\n'
           '[sql]\nenabled = true\n[explorer]\npath = "/ui"\n'
           '[explorer.oauth2]\nclient_id = "web"\nissuer = "http://127.0.0.1:9/realms/x"\n'
           'scopes = ["openid", "datasets:read"]\n', wait="listening")
    r = s.get("/ui/config.json")
    assert r.status_code == 200
    assert r.json() == {"prefix": "/p", "api_base": "/p/api/v1", "environment": "staging",
                        "environment_color": "warning", "sql": True, "docs": "/mkdocs",
                        "auth": {"enabled": False, "anonymous_read": False},
                        "oauth2": {"client_id": "web", "issuer": "http://127.0.0.1:9/realms/x",
                                   "scopes": ["openid", "datasets:read"], "pkce": True}}
    page = s.get("/ui/", headers=PLAIN)
    assert "connect-src 'self' http://127.0.0.1:9;" in page.headers["Content-Security-Policy"]
    assert s.get("/ui/", allow_redirects=False).status_code == 200
    assert s.get("/explore/").status_code == 404
    off = vt("[server]\nport = 0\n[explorer]\nenabled = false\n[docs]\nenabled = false\n",
             wait="listening")
    for path in ("/explore", "/explore/", "/explore/config.json", "/explore/index.html"):
        assert off.get(path, allow_redirects=False).status_code == 404, path
