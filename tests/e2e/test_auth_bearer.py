"""Bearer-token authorization (issue 12) against the real binary and a local
OIDC issuer the tests start (tests/e2e/oidc_issuer.py: http.server on
127.0.0.1, keys by python3-cryptography, tokens by python3-jwt): every
algorithm, every row of the permission map allowed and denied (the saved
queries' manage rows included), the RFC 8725 attack list, key rotation, an
unknown-kid flood, start_degraded both ways, tenants, anonymous_read,
admin_token_fallback on and off, the MCP challenge and RFC 9728 metadata, the
Explorer's config.json, and the confinement of the key fetches (http only to
loopback, same-host redirects, size cap)."""
import hashlib
import hmac
import json
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest
import requests

from conftest import Server, dataset_block, server_block, write_parquet
from oidc_issuer import ALL_ALGS, Issuer, b64u, unsigned

ADMIN = "adm-s3cret"
QUERY = {"predicates": [{"col": "id", "op": "eq", "val": 5}]}
AUTH_AGENT = Path(__file__).resolve().parent / "mcp" / "auth_agent.mjs"
OAUTH_AGENT = Path(__file__).resolve().parent / "mcp" / "oauth_agent.mjs"


@pytest.fixture
def issuer():
    iss = Issuer()
    yield iss
    iss.close()


def auth_block(iss, **kw):
    lines = ["[auth]", "enabled = true", f'issuer = "{iss.url}"', 'audience = "vitrine"']
    for k, v in kw.items():
        lines.append(f"{k} = {json.dumps(v)}")
    return "\n".join(lines) + "\n"


def bearer(tok):
    return {"Authorization": f"Bearer {tok}"}


def wait_keys(s, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if "signing keys loaded" in s.log():
            return
        time.sleep(0.05)
    raise AssertionError("keys not loaded:\n" + s.log())


def start(vt, datadir, iss, extra="", env=None, keys=True, **auth):
    f = datadir / "t.parquet"
    if not f.exists():
        write_parquet(f, "SELECT range AS id, 'v' || range AS name FROM range(100)")
    cfg = server_block(allowed_roots=[datadir]) + auth_block(iss, **auth) + extra + dataset_block(
        "t", f, **{"index.mode": "list", "index.columns": ["id"]})
    s = vt(cfg, env=env)
    if keys:
        wait_keys(s)
    return s


def wait_published(s, tok, name="t", timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        r = s.get(f"/api/v1/datasets/{name}/status", headers=bearer(tok))
        if r.status_code == 200 and r.json()["state"] == "published":
            return
        time.sleep(0.05)
    raise AssertionError(f"{name} not published")


def assert_no_token_in_log(s, *tokens):
    log = s.log()
    for t in tokens:
        sig = t.rsplit(".", 1)[-1]
        assert t not in log
        if len(sig) > 16:
            assert sig not in log


def expect(r, status, code=None):
    assert r.status_code == status, (r.status_code, r.text)
    if code:
        assert r.headers["Content-Type"].startswith("application/json")
        body = r.json()
        assert body["code"] == code, body
        assert isinstance(body["error"], str) and body["error"]


# ------------------------------------------------------------------ algorithms

def test_every_algorithm(vt, datadir, issuer):
    for alg in ("ES256", "ES384", "ES512"):
        issuer.add_key(alg.lower(), alg)
    s = start(vt, datadir, issuer, algorithms=ALL_ALGS)
    assert "4 signing keys" in s.log()
    for alg in ALL_ALGS:
        kid = alg.lower() if alg.startswith("ES") else "rsa1"
        tok = issuer.token(kid=kid, alg=alg)
        r = s.post("/api/v1/datasets/t/query", QUERY, headers=bearer(tok))
        expect(r, 200)
        assert r.json()["data"] == [{"id": 5, "name": "v5"}], alg
        # The same token again (from the verification cache).
        expect(s.post("/api/v1/datasets/t/query", QUERY, headers=bearer(tok)), 200)


def test_token_without_kid_is_checked_against_the_fitting_keys(vt, datadir, issuer):
    issuer.add_key("rsa2", "RS256")
    s = start(vt, datadir, issuer)
    for kid in ("rsa1", "rsa2"):
        tok = issuer.token(kid=None, key=issuer.keys[kid], alg="RS256")
        assert "kid" not in jwt_header(tok)
        expect(s.post("/api/v1/datasets/t/count", {}, headers=bearer(tok)), 200)
    other = Issuer()
    try:  # a key the issuer does not publish
        r = s.post("/api/v1/datasets/t/count", {},
                   headers=bearer(issuer.token(kid=None, key=other.keys["rsa1"], alg="RS256")))
        expect(r, 401, "invalid_token")
    finally:
        other.close()


def jwt_header(tok):
    import base64
    h = tok.split(".")[0]
    return json.loads(base64.urlsafe_b64decode(h + "=" * (-len(h) % 4)))


def test_algorithms_outside_the_list_are_refused(vt, datadir, issuer):
    issuer.add_key("ec256", "ES256")
    s = start(vt, datadir, issuer)  # algorithms = ["RS256"] (the default)
    expect(s.post("/api/v1/datasets/t/query", QUERY, headers=bearer(issuer.token())), 200)
    for kid, alg in (("rsa1", "PS256"), ("rsa1", "RS512"), ("ec256", "ES256")):
        r = s.post("/api/v1/datasets/t/query", QUERY, headers=bearer(issuer.token(kid=kid, alg=alg)))
        expect(r, 401, "invalid_token")
        assert 'error="invalid_token"' in r.headers["WWW-Authenticate"]


# ----------------------------------------------------------- permission map

READ_ROUTES = [
    ("GET", "/api/v1/datasets", None),
    ("GET", "/api/v1/datasets/t/status", None),
    ("GET", "/api/v1/datasets/t/schema", None),
    ("POST", "/api/v1/datasets/t/query", QUERY),
    ("POST", "/api/v1/datasets/t/query/stream", QUERY),
    ("POST", "/api/v1/datasets/t/count", {}),
    ("GET", "/api/v1/datasets/t/parquet", None),
    ("HEAD", "/api/v1/datasets/t/parquet", None),
    ("GET", "/api/v1/datasets/t/all.parquet", None),
    ("POST", "/api/v1/sql", {"sql": "SELECT count(*) AS n FROM t"}),
    ("POST", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                      "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                 "clientInfo": {"name": "t", "version": "1"}}}),
]


def reload_routes(datadir):
    src = str(datadir / "t.parquet")
    return [
        ("POST", "/api/v1/datasets/t/reload", None),
        ("POST", "/api/v1/datasets/reload-all", None),
        ("POST", "/api/v1/config/reload", None),
        ("POST", "/api/v1/datasets", {"name": f"r{uuid.uuid4().hex[:8]}",
                                      "source": {"kind": "parquet", "location": src}}),
        ("POST", "/api/v1/datasets/persist", {"name": f"p{uuid.uuid4().hex[:8]}",
                                              "source": {"kind": "parquet", "location": src}}),
    ]


def manage_routes():
    """The manage rows (saved queries): create, list, delete, one fresh name."""
    name = f"q{uuid.uuid4().hex[:8]}"
    return name, [
        ("POST", "/api/v1/queries", {"name": name, "sql": "SELECT count(*) AS n FROM t"}),
        ("GET", "/api/v1/queries", None),
        ("DELETE", f"/api/v1/queries/{name}", None),
    ]


PUBLIC_ROUTES = ["/healthz", "/health", "/readyz", "/version",
                 "/.well-known/oauth-protected-resource",
                 "/explore/config.json", "/explore/",
                 "/docs/openapi.json", "/docs/", "/mkdocs/"]


def call(s, method, path, body, headers):
    h = dict(headers)
    if path == "/mcp":
        h["Accept"] = "application/json, text/event-stream"
    if method == "HEAD":
        return s.head(path, headers=h)
    if method == "DELETE":
        return requests.delete(s.url(path), headers=h, timeout=30)
    if method == "GET":
        return s.get(path, headers=h)
    return s.post(path, body if body is not None else None, headers=h)


def test_permission_map_every_row(vt, datadir, issuer):
    extra = ("[sql]\nenabled = true\n[mcp]\nenabled = true\n[metrics]\nenabled = true\n"
             '[explorer.oauth2]\nclient_id = "vitrine-explorer"\n'
             f'issuer = "{issuer.url}"\n')
    s = start(vt, datadir, issuer, extra=extra, env={"ADMIN_TOKEN": ADMIN})
    reader = issuer.token(scope="datasets:read")
    reloader = issuer.token(scope="datasets:reload")
    both = issuer.token(scope="openid datasets:read datasets:reload")
    manager = issuer.token(scope="datasets:manage")
    for method, path, body in READ_ROUTES:
        r = call(s, method, path, body, {})
        assert r.status_code == 401, (path, r.status_code)
        assert r.headers["WWW-Authenticate"].startswith('Bearer realm="vitrine"'), path
        assert "error=" not in r.headers["WWW-Authenticate"]
        if method != "HEAD":
            assert r.json()["code"] == "unauthorized"
        for tok in (reloader, manager):  # valid tokens without a read scope
            r = call(s, method, path, body, bearer(tok))
            assert r.status_code == 403, (path, r.status_code)
            assert 'error="insufficient_scope"' in r.headers["WWW-Authenticate"]
            assert 'scope="datasets:read"' in r.headers["WWW-Authenticate"]
            if method != "HEAD":
                assert r.json()["code"] == "insufficient_scope"
        # The admin token does not open reads.
        expect(call(s, method, path, body, {"X-Admin-Token": ADMIN}), 401)
        for tok in (reader, both):
            r = call(s, method, path, body, bearer(tok))
            assert r.status_code == 200, (path, r.status_code, r.text[:200])
    for method, path, body in reload_routes(datadir):
        r = call(s, method, path, body, {})
        expect(r, 401, "unauthorized")
        assert r.headers["WWW-Authenticate"].startswith("Bearer ")
        for tok in (reader, manager):
            r = call(s, method, path, body, bearer(tok))
            expect(r, 403, "insufficient_scope")
            assert 'scope="datasets:reload"' in r.headers["WWW-Authenticate"]
    # Allowed: the reload scope, and the admin token (fallback on by default).
    for headers in (bearer(reloader), bearer(both), {"X-Admin-Token": ADMIN}):
        for method, path, body in reload_routes(datadir):
            r = call(s, method, path, body, headers)
            assert r.status_code in (200, 202), (path, r.status_code, r.text)
            # Wait for reload-all's background builds before the next reload.
            if path.endswith("reload-all"):
                wait_published(s, both)
    # Manage (saved queries, /api/v1/queries): only datasets:manage, or the
    # admin token; the read and reload scopes are refused 403.
    _, rows = manage_routes()
    for method, path, body in rows:
        r = call(s, method, path, body, {})
        expect(r, 401, "unauthorized")
        for tok in (reader, reloader, both):
            r = call(s, method, path, body, bearer(tok))
            expect(r, 403, "insufficient_scope")
            assert 'scope="datasets:manage"' in r.headers["WWW-Authenticate"]
    for headers in (bearer(manager), {"X-Admin-Token": ADMIN}):
        name, rows = manage_routes()
        (_, create, body), (_, listing, _), (_, remove, _) = rows
        r = call(s, "POST", create, body, headers)
        # No row count for a caller who cannot read (issue 22 item 5).
        assert r.status_code == 200 and "rows" not in r.json(), r.text
        r = call(s, "GET", listing, None, headers)
        assert r.status_code == 200 and name in [x["name"] for x in r.json()], r.text
        # The saved query reads like any dataset, with a read scope.
        r = s.post(f"/api/v1/datasets/{name}/query", {}, headers=bearer(reader))
        assert r.status_code == 200 and r.json()["data"] == [{"n": 100}], r.text
        r = call(s, "DELETE", remove, None, headers)
        assert r.status_code == 200, r.text
        assert s.get(f"/api/v1/datasets/{name}/status",
                     headers=bearer(reader)).status_code == 404
    # With [auth], the metrics (every dataset's name) need a read scope.
    expect(s.get("/metrics"), 401, "unauthorized")
    expect(s.get("/metrics", headers=bearer(manager)), 403, "insufficient_scope")
    assert s.get("/metrics", headers=bearer(reader)).status_code == 200
    for path in PUBLIC_ROUTES:
        for headers in ({}, bearer("garbage"), bearer(reloader)):
            r = s.get(path, headers=headers)
            assert r.status_code == 200, (path, r.status_code)
            assert "WWW-Authenticate" not in r.headers
    assert_no_token_in_log(s, reader, reloader, both, manager)


def test_challenges_and_error_bodies(vt, datadir, issuer):
    s = start(vt, datadir, issuer, read_scopes=["datasets:read", "reader"])
    r = s.post("/api/v1/datasets/t/count", {})
    expect(r, 401, "unauthorized")
    assert r.headers["WWW-Authenticate"] == 'Bearer realm="vitrine", scope="datasets:read reader"'
    r = s.post("/api/v1/datasets/t/count", {}, headers={"Authorization": "Basic dTpw"})
    expect(r, 401, "unauthorized")
    assert "error=" not in r.headers["WWW-Authenticate"]
    r = s.post("/api/v1/datasets/t/count", {}, headers=bearer("not-a-jwt"))
    expect(r, 401, "invalid_token")
    assert r.headers["WWW-Authenticate"].startswith(
        'Bearer realm="vitrine", error="invalid_token", error_description="')
    r = s.post("/api/v1/datasets/t/count", {}, headers=bearer(issuer.token(scope="x")))
    expect(r, 403, "insufficient_scope")
    assert 'error="insufficient_scope"' in r.headers["WWW-Authenticate"]
    # Any one scope of the list passes; the bearer scheme name is case-insensitive.
    expect(s.post("/api/v1/datasets/t/count", {},
                  headers={"Authorization": "bearer " + issuer.token(scope="reader")}), 200)
    expect(s.post("/api/v1/datasets/t/count", {},
                  headers=bearer(issuer.token(scope=None, scp=["other", "reader"]))), 200)
    # A wrong method is a 405 (no challenge), the route exists.
    r = s.get("/api/v1/datasets/t/count")
    expect(r, 405)
    assert "WWW-Authenticate" not in r.headers


# ---------------------------------------------------------- RFC 8725 attacks

def test_rfc8725_attack_list(vt, datadir, issuer):
    issuer.add_key("ec256", "ES256")
    s = start(vt, datadir, issuer, algorithms=["RS256", "ES256"], leeway_secs=60)
    good = issuer.token()
    expect(s.post("/api/v1/datasets/t/count", {}, headers=bearer(good)), 200)
    now = int(time.time())
    claims = issuer.claims(scope="datasets:read", aud="vitrine")
    head, payload, _sig = good.split(".")
    signing_input = f"{head}.{payload}".encode()
    other = issuer.token(scope="datasets:read datasets:reload")
    attacks = {
        "alg none": unsigned({"alg": "none", "typ": "JWT"}, claims),
        "alg None": unsigned({"alg": "None"}, claims),
        "alg NONE": unsigned({"alg": "NONE"}, claims),
        "alg none with signature": unsigned({"alg": "none", "kid": "rsa1"}, claims, b"x" * 256),
        "HS256 keyed with the RSA public key": (lambda h, p: f"{h}.{p}." + b64u(
            hmac.new(issuer.public_pem(), f"{h}.{p}".encode(), hashlib.sha256).digest()))(
            b64u(json.dumps({"alg": "HS256", "kid": "rsa1"}).encode()),
            b64u(json.dumps(claims).encode())),
        "RS256 token, kid of the EC key": issuer.token(kid="rsa1", headers={"kid": "ec256"}),
        "ES256 token, kid of the RSA key": issuer.token(kid="ec256", headers={"kid": "rsa1"}),
        "tampered payload": f"{head}.{other.split('.')[1]}.{_sig}",
        "stripped signature": f"{head}.{payload}.",
        "two parts": f"{head}.{payload}",
        "signature of another token": f"{head}.{payload}.{other.split('.')[2]}",
        "expired beyond leeway": issuer.token(exp_in=-120),
        "not yet valid beyond leeway": issuer.token(nbf=now + 600),
        "issued in the future": issuer.token(iat=now + 600),
        "no exp": issuer.token(claims={"iss": issuer.url, "aud": "vitrine",
                                       "scope": "datasets:read"}),
        "wrong iss": issuer.token(claims=dict(claims, iss="http://127.0.0.1:1/evil")),
        "wrong aud": issuer.token(aud="someone-else"),
        "no aud": issuer.token(aud=None),
        "garbage": "garbage",
        "dots": "...",
        "not base64": "e30.e30.!!!!",
        "json array claims": unsigned({"alg": "RS256"}, [1, 2]) + "abc",
        "deep JSON": issuer.token(claims=dict(claims, deep=json.loads("[" * 200 + "]" * 200))),
        "crit header": issuer.token(headers={"crit": ["exp"], "exp": 1}),
        "20 KB token": issuer.token(pad="x" * 20000),
    }
    for name, tok in attacks.items():
        r = s.post("/api/v1/datasets/t/count", {}, headers=bearer(tok))
        assert r.status_code == 401, (name, r.status_code, r.text)
        assert r.json()["code"] == "invalid_token", name
        assert 'error="invalid_token"' in r.headers["WWW-Authenticate"], name
    # Expired within the leeway, aud as an array: accepted.
    expect(s.post("/api/v1/datasets/t/count", {}, headers=bearer(issuer.token(exp_in=-30))), 200)
    expect(s.post("/api/v1/datasets/t/count", {},
                  headers=bearer(issuer.token(aud=["other", "vitrine"]))), 200)
    # A 100 KB token does not fit the request head: libmicrohttpd refuses it
    # (431, its own HTML body: see src/http/server.c) before any parsing.
    r = s.post("/api/v1/datasets/t/count", {}, headers=bearer("a" * 100_000))
    assert r.status_code == 431, r.status_code
    # The server is fine afterwards, and no token reached its log.
    expect(s.get("/healthz"), 200)
    expect(s.post("/api/v1/datasets/t/count", {}, headers=bearer(good)), 200)
    assert_no_token_in_log(s, good, other, *[t for t in attacks.values() if len(t) > 40])


# ------------------------------------------------------------ key rotation

def test_rotation_through_unknown_kid(vt, datadir, issuer):
    s = start(vt, datadir, issuer)  # jwks_refresh_secs = 3600
    before = issuer.fetches["jwks"]
    issuer.add_key("rsa2", "RS256")
    tok = issuer.token(kid="rsa2")
    r = s.post("/api/v1/datasets/t/count", {}, headers=bearer(tok))
    # The first request asks for a refetch: 503 + Retry-After while it runs
    # (or 200 if the fetch already finished), then it passes.
    assert r.status_code in (200, 503), r.text
    if r.status_code == 503:
        assert r.json()["code"] == "auth_unavailable"
        assert int(r.headers["Retry-After"]) > 0
    deadline = time.time() + 20
    while r.status_code != 200 and time.time() < deadline:
        time.sleep(0.1)
        r = s.post("/api/v1/datasets/t/count", {}, headers=bearer(tok))
    expect(r, 200)
    assert issuer.fetches["jwks"] == before + 1
    assert "signing keys changed" in s.log()


def test_rotation_by_periodic_refresh_drops_the_old_key(vt, datadir, issuer):
    s = start(vt, datadir, issuer, jwks_refresh_secs=1)
    old = issuer.token()
    expect(s.post("/api/v1/datasets/t/count", {}, headers=bearer(old)), 200)  # cached now
    issuer.add_key("rsa2", "RS256")
    issuer.publish(["rsa2"])
    n = issuer.fetches["jwks"]
    issuer.wait_fetches("jwks", n + 2)
    new = issuer.token(kid="rsa2")
    expect(s.post("/api/v1/datasets/t/count", {}, headers=bearer(new)), 200)
    # The removed key's token no longer passes, cached or not.
    r = s.post("/api/v1/datasets/t/count", {}, headers=bearer(old))
    assert r.status_code in (401, 503), r.text


def test_unknown_kid_flood_is_rate_limited(vt, datadir, issuer):
    s = start(vt, datadir, issuer)
    before = dict(issuer.fetches)
    codes = {}
    t0 = time.time()
    for i in range(300):
        tok = issuer.token(headers={"kid": uuid.uuid4().hex})
        r = s.post("/api/v1/datasets/t/count", {}, headers=bearer(tok))
        codes[r.status_code] = codes.get(r.status_code, 0) + 1
    elapsed = time.time() - t0
    assert set(codes) <= {401, 503}, codes
    assert codes.get(401, 0) > 0
    # At most one refetch per 10 s window (VT_AUTH_KID_REFETCH_SECS).
    allowed = 1 + int(elapsed // 10)
    assert 1 <= issuer.fetches["jwks"] - before["jwks"] <= allowed, (issuer.fetches, elapsed)
    assert issuer.fetches["discovery"] - before["discovery"] <= allowed
    expect(s.post("/api/v1/datasets/t/count", {}, headers=bearer(issuer.token())), 200)


# ---------------------------------------------------------- start_degraded

def test_start_degraded_true_serves_and_recovers(vt, datadir, issuer):
    issuer.down = True
    s = start(vt, datadir, issuer, keys=False, env={"ADMIN_TOKEN": ADMIN})
    issuer.wait_fetches("discovery", 1)
    tok = issuer.token()
    r = s.post("/api/v1/datasets/t/count", {}, headers=bearer(tok))
    expect(r, 503, "auth_unavailable")
    assert int(r.headers["Retry-After"]) > 0
    expect(s.post("/api/v1/datasets/t/count", {}), 401, "unauthorized")
    expect(s.get("/healthz"), 200)
    expect(s.get("/readyz"), 200)
    # The admin token keeps working for admin routes meanwhile.
    expect(s.post("/api/v1/datasets/t/reload", headers={"X-Admin-Token": ADMIN}), 200)
    deadline = time.time() + 10
    while "cannot load the signing keys" not in s.log() and time.time() < deadline:
        time.sleep(0.05)
    assert "cannot load the signing keys" in s.log()
    issuer.down = False
    deadline = time.time() + 40
    while r.status_code == 503 and time.time() < deadline:
        time.sleep(0.2)
        r = s.post("/api/v1/datasets/t/count", {}, headers=bearer(tok))
    expect(r, 200)
    assert "signing keys loaded" in s.log()


def test_start_degraded_false_fails_startup(tmp_path, datadir, issuer):
    issuer.down = True
    msg, s = failing_start(tmp_path, datadir, auth_block(issuer, start_degraded=False))
    assert s.proc.returncode == 1
    assert "cannot load the signing keys" in msg
    assert "start_degraded = false" in msg
    assert "HTTP 500" in msg


def test_start_degraded_false_loads_keys_before_listening(vt, datadir, issuer):
    s = start(vt, datadir, issuer, keys=False, start_degraded=False)
    # No waiting: the keys were loaded before the listener opened.
    expect(s.post("/api/v1/datasets/t/count", {}, headers=bearer(issuer.token())), 200)


# ---------------------------------------------------- tenants, anonymous, admin

def test_tenants(vt, datadir, issuer):
    s = start(vt, datadir, issuer, tenant_claim="/org/tid", allowed_tenants=["acme", "42"])
    ok = [issuer.token(org={"tid": "acme"}), issuer.token(org={"tid": 42})]
    for tok in ok:
        expect(s.post("/api/v1/datasets/t/count", {}, headers=bearer(tok)), 200)
    denied = [issuer.token(org={"tid": "initech"}), issuer.token(), issuer.token(org="acme"),
              issuer.token(org={"tid": "ACME"}), issuer.token(org={"tid": ["acme"]})]
    for tok in denied:
        r = s.post("/api/v1/datasets/t/count", {}, headers=bearer(tok))
        expect(r, 403, "insufficient_scope")
        assert "tenant" in r.json()["error"]


def test_tenant_claim_without_allow_list_accepts_any(vt, datadir, issuer):
    s = start(vt, datadir, issuer, tenant_claim="/tid")
    for tok in (issuer.token(tid="x"), issuer.token()):
        expect(s.post("/api/v1/datasets/t/count", {}, headers=bearer(tok)), 200)


def test_anonymous_read_opens_get_routes_only(vt, datadir, issuer):
    s = start(vt, datadir, issuer, anonymous_read=True, env={"ADMIN_TOKEN": ADMIN})
    for path in ("/api/v1/datasets", "/api/v1/datasets/t/status", "/api/v1/datasets/t/schema",
                 "/api/v1/datasets/t/parquet"):
        expect(s.get(path), 200)
    expect(s.head("/api/v1/datasets/t/all.parquet"), 200)
    for path, body in (("/api/v1/datasets/t/query", QUERY), ("/api/v1/datasets/t/count", {})):
        expect(s.post(path, body), 401, "unauthorized")
        expect(s.post(path, body, headers=bearer(issuer.token())), 200)
    expect(s.post("/api/v1/datasets/t/reload"), 401, "unauthorized")
    expect(s.post("/api/v1/datasets/t/reload", headers={"X-Admin-Token": ADMIN}), 200)


@pytest.mark.parametrize("fallback", [True, False])
def test_admin_token_fallback(vt, datadir, issuer, fallback):
    s = start(vt, datadir, issuer, admin_token_fallback=fallback, env={"ADMIN_TOKEN": ADMIN})
    r = s.post("/api/v1/datasets/t/reload", headers={"X-Admin-Token": ADMIN})
    if fallback:
        expect(r, 200)
    else:
        expect(r, 401, "unauthorized")
        assert r.headers["WWW-Authenticate"].startswith("Bearer ")
    expect(s.post("/api/v1/datasets/t/reload", headers={"X-Admin-Token": "wrong"}), 401)
    tok = issuer.token(scope="datasets:reload")
    expect(s.post("/api/v1/datasets/t/reload", headers=bearer(tok)), 200)


def test_without_admin_token_reload_needs_a_bearer_token(vt, datadir, issuer):
    s = start(vt, datadir, issuer)  # no ADMIN_TOKEN: bearer tokens still grant reload
    expect(s.post("/api/v1/datasets/t/reload"), 401, "unauthorized")
    expect(s.post("/api/v1/datasets/t/reload", headers=bearer(issuer.token(scope="datasets:reload"))),
           200)


# ------------------------------------------------------------------- MCP

def test_mcp_challenge_names_protected_resource_metadata(vt, datadir, issuer):
    s = start(vt, datadir, issuer, extra="[mcp]\nenabled = true\n")
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    h = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}
    r = s.post("/mcp", body, headers=h)
    expect(r, 401, "unauthorized")
    want = (f'resource_metadata="http://127.0.0.1:{s.port}'
            '/.well-known/oauth-protected-resource/mcp"')
    assert want in r.headers["WWW-Authenticate"]
    r = s.post("/mcp", body, headers=dict(h, Authorization="Bearer x.y.z"))
    expect(r, 401, "invalid_token")
    assert want in r.headers["WWW-Authenticate"]
    # A non-MCP route's challenge does not name it.
    assert "resource_metadata" not in s.post("/api/v1/datasets/t/count", {}).headers[
        "WWW-Authenticate"]
    # RFC 9728 §3.1: the metadata at the path-inserted URL the challenge
    # names, and at the root for clients that fall back to it; both name
    # the resource (the endpoint's URL) as the client addressed it.
    for path in ("/.well-known/oauth-protected-resource/mcp",
                 "/.well-known/oauth-protected-resource"):
        meta = requests.get(f"{s.base}{path}", timeout=10).json()
        assert meta["authorization_servers"] == [issuer.url]
        assert meta["resource"] == f"http://127.0.0.1:{s.port}/mcp"
        assert "datasets:read" in meta["scopes_supported"]
        assert meta["bearer_methods_supported"] == ["header"]
    meta = requests.get(f"{s.base}/.well-known/oauth-protected-resource/mcp", timeout=10,
                        headers={"X-Forwarded-Proto": "https"}).json()
    assert meta["resource"] == f"https://127.0.0.1:{s.port}/mcp"
    # A hostile Host header does not reach the challenge (a loopback listener
    # refuses a Host that is not a loopback name: 421).
    r = requests.post(s.url("/mcp"), json=body, timeout=10,
                      headers=dict(h, Host='evil", x="y'))
    assert r.status_code in (400, 401, 421)
    if r.status_code == 401:
        assert 'x="y' not in r.headers["WWW-Authenticate"]
    r = s.post("/mcp", body, headers=dict(h, **bearer(issuer.token())))
    expect(r, 200)
    assert "count_rows" in [t["name"] for t in r.json()["result"]["tools"]]


def test_mcp_sdk_client_with_bearer_token(vt, datadir, issuer):
    s = start(vt, datadir, issuer, extra="[mcp]\nenabled = true\n")
    run = lambda *a: json.loads(subprocess.run(
        ["node", str(AUTH_AGENT), s.url("/mcp"), *a], capture_output=True, text=True,
        timeout=120, cwd=AUTH_AGENT.parent.parent, check=True).stdout)
    d = run(issuer.token())
    assert "error" not in d, d
    assert "query_dataset" in d["tools"]
    assert d["count"]["count"] == 100
    d = run()
    assert "401" in d["error"] or "nauthorized" in d["error"], d


@pytest.mark.parametrize("mode", ["legacy", "modern"])
def test_mcp_sdk_client_discovers_the_issuer_and_signs_in(vt, datadir, issuer, mode):
    """Item 6 of issue 29: told only the MCP URL, the official SDK client
    finds the authorization server from the 401 (RFC 9728 metadata), signs
    in with PKCE at the local issuer and calls tools with the token."""
    s = start(vt, datadir, issuer, extra="[mcp]\nenabled = true\n")
    out = subprocess.run(["node", str(OAUTH_AGENT), mode, s.url("/mcp")], capture_output=True,
                         text=True, timeout=120, cwd=OAUTH_AGENT.parent.parent)
    assert out.returncode == 0, out.stderr[-3000:]
    d = json.loads(out.stdout)
    assert "error" not in d, d
    assert "nauthorized" in d["firstConnect"], d
    a = d["authorization"]
    assert a["origin"] == issuer.base and a["pathname"] == "/authorize"
    p = a["params"]
    assert p["client_id"] == "vitrine-agent" and p["code_challenge_method"] == "S256"
    assert p["resource"] == f"http://127.0.0.1:{s.port}/mcp"  # RFC 8707, from the metadata
    assert "datasets:read" in p["scope"].split()
    assert d["count"] == {"dataset": "t", "count": 100}
    assert "query_dataset" in d["tools"] and "summarize_dataset" in d["tools"]
    assert issuer.token_requests and issuer.token_requests[-1]["resource"] == p["resource"]


def test_mcp_protected_resource_under_a_prefix(vt, datadir, issuer):
    s = start(vt, datadir, issuer, extra='[mcp]\nenabled = true\npath = "/agents/mcp"\n')
    r = s.post("/agents/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    want = f"http://127.0.0.1:{s.port}/.well-known/oauth-protected-resource/agents/mcp"
    assert f'resource_metadata="{want}"' in r.headers["WWW-Authenticate"]
    meta = requests.get(want, timeout=10).json()
    assert meta["resource"] == f"http://127.0.0.1:{s.port}/agents/mcp"


# --------------------------------------------------------- Explorer config

def test_explorer_config_json(vt, datadir, issuer):
    extra = ('[explorer.oauth2]\nclient_id = "vitrine-explorer"\n'
             f'issuer = "{issuer.url}"\nscopes = ["openid", "datasets:read"]\n')
    s = start(vt, datadir, issuer, extra=extra)
    for headers in ({}, bearer("garbage")):  # public, whatever is sent
        r = s.get("/explore/config.json", headers=headers)
        expect(r, 200)
        body = r.json()
        assert body["oauth2"] == {"client_id": "vitrine-explorer", "issuer": issuer.url,
                                  "scopes": ["openid", "datasets:read"], "pkce": True}
        assert body["auth"] == {"enabled": True, "anonymous_read": False}
        assert body["api_base"] == "/api/v1" and body["prefix"] == ""
        assert "secret" not in r.text


def test_explorer_config_json_under_prefix_and_mount(vt, datadir):
    write_parquet(datadir / "t.parquet", "SELECT 1 AS id")
    s = vt(server_block(prefix="/p") + '[explorer]\npath = "/ui"\n' +
           '[explorer.oauth2]\nclient_id = "c"\nissuer = "https://idp.example.com"\npkce = false\n' +
           dataset_block("t", datadir / "t.parquet"))
    r = s.get("/ui/config.json")
    expect(r, 200)
    body = r.json()
    assert body["oauth2"] == {"client_id": "c", "issuer": "https://idp.example.com", "scopes": [],
                              "pkce": False}
    assert body["auth"] == {"enabled": False, "anonymous_read": False}
    assert body["api_base"] == "/p/api/v1" and body["prefix"] == "/p"
    s2 = vt(server_block() + dataset_block("t", datadir / "t.parquet"))
    assert s2.get("/explore/config.json").json()["oauth2"] is None
    s3 = vt(server_block() + "[explorer]\nenabled = false\n" + dataset_block("t", datadir / "t.parquet"))
    expect(s3.get("/explore/config.json"), 404, "not_found")


# ------------------------------------------------- fetching the keys, confined

def failing_start(tmp_path, datadir, auth_text, name="srv"):
    """Starts a server that must fail at startup; returns its message and itself."""
    if not (datadir / "t.parquet").exists():
        write_parquet(datadir / "t.parquet", "SELECT 1 AS id")
    cfg = server_block() + auth_text + dataset_block("t", datadir / "t.parquet")
    d = tmp_path / name
    d.mkdir()
    s = Server(d, cfg)
    try:
        with pytest.raises(RuntimeError) as e:
            s.start()
    finally:
        s.kill()
    return str(e.value), s


def test_plain_http_only_for_loopback_issuers(tmp_path, datadir, issuer):
    msg, _ = failing_start(tmp_path, datadir,
                           '[auth]\nenabled = true\nissuer = "http://idp.example.com/realm"\n')
    assert "plain http is allowed only for a loopback host" in msg


def test_discovery_issuer_must_match(tmp_path, datadir, issuer):
    issuer.discovery_issuer = "http://127.0.0.1:1/other"
    msg, _ = failing_start(tmp_path, datadir, auth_block(issuer, start_degraded=False))
    assert 'names issuer "http://127.0.0.1:1/other"' in msg


def test_redirects_same_origin_only(tmp_path, vt, datadir, issuer):
    # Same scheme, host and port: followed.
    issuer.discovery_redirect = f"{issuer.base}/moved-discovery"
    s = start(vt, datadir, issuer, keys=False, start_degraded=False)
    expect(s.post("/api/v1/datasets/t/count", {}, headers=bearer(issuer.token())), 200)
    # Another host (localhost is not 127.0.0.1 by name): not followed.
    issuer.jwks_redirect = f"http://localhost:{issuer.port}/moved-jwks"
    msg, _ = failing_start(tmp_path, datadir, auth_block(issuer, start_degraded=False), "srv2")
    assert "redirect not followed" in msg


def test_oversized_jwks_is_refused(tmp_path, datadir, issuer):
    keys = issuer.jwks()["keys"]
    issuer.jwks_body = json.dumps({"keys": keys, "pad": "x" * 600_000}).encode()
    msg, _ = failing_start(tmp_path, datadir, auth_block(issuer, start_degraded=False))
    assert "larger than" in msg


# -------------------------------------------------------------- concurrency

def test_concurrent_requests_share_the_cache(vt, datadir, issuer):
    s = start(vt, datadir, issuer)
    toks = [issuer.token(sub=f"user-{i}") for i in range(8)]
    bad = []

    def worker(i):
        sess = requests.Session()
        for j in range(40):
            tok = toks[(i + j) % len(toks)]
            r = sess.post(s.url("/api/v1/datasets/t/query"), json=QUERY, headers=bearer(tok),
                          timeout=30)
            if r.status_code != 200:
                bad.append(r.status_code)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert bad == []
    assert_no_token_in_log(s, *toks)
