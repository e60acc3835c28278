"""A local OIDC issuer for the bearer-token tests: http.server on 127.0.0.1
(port 0) serving the discovery document and a JWKS, with keys made by
python3-cryptography and tokens signed by python3-jwt (PyJWT).

    iss = Issuer()                       # RSA key "rsa1" published
    iss.add_key("ec256", "ES256")        # another key, published
    tok = iss.token(scope="datasets:read", aud="vitrine")
    iss.fetches["jwks"]                  # how many JWKS fetches it served
    iss.publish(["ec256"])               # rotation: only these keys in the JWKS
    iss.down = True                      # discovery and JWKS answer 500
    iss.close()

It also signs users in as an authorization server would, without a login
page: GET /authorize (authorization code with PKCE S256; every request is
approved at once: 302 to redirect_uri with code and state) and POST /token
(the code and its verifier for a token carrying the scope asked for and
aud `token_audience`). `iss.authorizations` records what clients asked
(client_id, scope, resource, redirect_uri) for the MCP discovery tests.

Every test that starts one closes it (use the `issuer` fixture of the test
files, or `with Issuer() as iss`).
"""
import base64
import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

CURVES = {"ES256": (ec.SECP256R1, "P-256", 32), "ES384": (ec.SECP384R1, "P-384", 48),
          "ES512": (ec.SECP521R1, "P-521", 66)}
ALL_ALGS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512"]

_RSA_CACHE = []


def b64u(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _uint(n, size=None):
    size = size or (n.bit_length() + 7) // 8
    return b64u(n.to_bytes(size, "big"))


def rsa_key(fresh=False):
    """A 2048-bit RSA key (a few are reused across tests: keygen is slow)."""
    if fresh or len(_RSA_CACHE) < 4:
        k = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        if not fresh:
            _RSA_CACHE.append(k)
        return k
    _RSA_CACHE.append(_RSA_CACHE.pop(0))
    return _RSA_CACHE[-1]


def jwk_of(kid, key, extra=None):
    pub = key.public_key()
    if isinstance(key, rsa.RSAPrivateKey):
        nums = pub.public_numbers()
        d = {"kty": "RSA", "kid": kid, "n": _uint(nums.n), "e": _uint(nums.e)}
    else:
        nums = pub.public_numbers()
        crv, size = {"secp256r1": ("P-256", 32), "secp384r1": ("P-384", 48),
                     "secp521r1": ("P-521", 66)}[pub.curve.name]
        d = {"kty": "EC", "kid": kid, "crv": crv, "x": _uint(nums.x, size), "y": _uint(nums.y, size)}
    d.update(extra or {})
    return d


class Issuer:
    def __init__(self, path="", rsa_kid="rsa1"):
        self.keys = {}            # kid -> private key
        self.algs = {}            # kid -> default alg
        self.published = []       # kids in the JWKS
        self.extra_jwks = []      # raw JWK dicts appended to the JWKS
        self.fetches = {"discovery": 0, "jwks": 0}
        self.down = False
        self.discovery_issuer = None   # override the "issuer" field
        self.discovery_redirect = None  # answer discovery with 302 to this URL
        self.jwks_redirect = None
        self.jwks_body = None           # raw JWKS bytes (size tests)
        self.lock = threading.Lock()
        self.authorizations = []        # query parameters of each /authorize
        self.token_requests = []        # form of each /token
        self.codes = {}                 # code -> (challenge, scope, redirect_uri)
        self.token_audience = "vitrine"
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _send(self, code, body, ctype="application/json", headers=None):
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                p = self.path
                if p == f"{issuer.path}/.well-known/openid-configuration" or p == "/moved-discovery":
                    with issuer.lock:
                        issuer.fetches["discovery"] += 1
                    if issuer.down:
                        return self._send(500, b'{"error":"down"}')
                    if issuer.discovery_redirect and p != "/moved-discovery":
                        return self._send(302, b"", headers={"Location": issuer.discovery_redirect})
                    doc = {"issuer": issuer.discovery_issuer or issuer.url,
                           "jwks_uri": f"{issuer.base}/jwks",
                           "authorization_endpoint": f"{issuer.base}/authorize",
                           "token_endpoint": f"{issuer.base}/token",
                           "response_types_supported": ["code"],
                           "grant_types_supported": ["authorization_code"],
                           "code_challenge_methods_supported": ["S256"],
                           "token_endpoint_auth_methods_supported": ["none"],
                           "subject_types_supported": ["public"],
                           "id_token_signing_alg_values_supported": ["RS256"]}
                    return self._send(200, json.dumps(doc).encode())
                if p in ("/jwks", "/moved-jwks"):
                    with issuer.lock:
                        issuer.fetches["jwks"] += 1
                    if issuer.down:
                        return self._send(500, b'{"error":"down"}')
                    if issuer.jwks_redirect and p == "/jwks":
                        return self._send(302, b"", headers={"Location": issuer.jwks_redirect})
                    if issuer.jwks_body is not None:
                        return self._send(200, issuer.jwks_body)
                    return self._send(200, json.dumps(issuer.jwks()).encode())
                if p.startswith("/authorize?"):
                    return self._authorize(p)
                self._send(404, b"{}")

            def _authorize(self, p):
                from urllib.parse import parse_qs, urlencode, urlsplit
                q = {k: v[0] for k, v in parse_qs(urlsplit(p).query).items()}
                with issuer.lock:
                    issuer.authorizations.append(q)
                if q.get("response_type") != "code" or q.get("code_challenge_method") != "S256":
                    return self._send(400, b'{"error":"invalid_request"}')
                code = uuid.uuid4().hex
                with issuer.lock:
                    issuer.codes[code] = (q.get("code_challenge"), q.get("scope", ""),
                                          q.get("redirect_uri"))
                loc = q["redirect_uri"] + "?" + urlencode({"code": code, "state": q.get("state", "")})
                self._send(302, b"", headers={"Location": loc})

            def do_POST(self):
                import hashlib
                from urllib.parse import parse_qs
                n = int(self.headers.get("Content-Length") or 0)
                form = {k: v[0] for k, v in parse_qs(self.rfile.read(n).decode()).items()}
                if self.path != "/token":
                    return self._send(404, b"{}")
                with issuer.lock:
                    issuer.token_requests.append(form)
                    entry = issuer.codes.pop(form.get("code", ""), None)
                verifier = form.get("code_verifier", "").encode()
                if (form.get("grant_type") != "authorization_code" or not entry or
                        b64u(hashlib.sha256(verifier).digest()) != entry[0] or
                        form.get("redirect_uri") != entry[2]):
                    return self._send(400, b'{"error":"invalid_grant"}')
                tok = issuer.token(scope=entry[1] or None, aud=issuer.token_audience)
                body = {"access_token": tok, "token_type": "Bearer", "expires_in": 300,
                        "scope": entry[1]}
                self._send(200, json.dumps(body).encode())

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.base = f"http://127.0.0.1:{self.port}"
        self.path = path
        self.url = self.base + path
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        if rsa_kid:
            self.add_key(rsa_kid, "RS256")

    # ------------------------------------------------------------ keys
    def add_key(self, kid, alg="RS256", publish=True, key=None):
        if key is None:
            key = ec.generate_private_key(CURVES[alg][0]()) if alg.startswith("ES") else rsa_key()
        self.keys[kid] = key
        self.algs[kid] = alg
        if publish and kid not in self.published:
            self.published.append(kid)
        return key

    def publish(self, kids):
        with self.lock:
            self.published = list(kids)

    def jwks(self):
        with self.lock:
            keys = [jwk_of(k, self.keys[k]) for k in self.published]
        return {"keys": keys + list(self.extra_jwks)}

    # ---------------------------------------------------------- tokens
    def claims(self, scope=None, aud=None, exp_in=300, **extra):
        now = int(time.time())
        c = {"iss": self.url, "sub": "user-1", "iat": now, "exp": now + exp_in}
        if scope is not None:
            c["scope"] = scope
        if aud is not None:
            c["aud"] = aud
        c.update(extra)
        return {k: v for k, v in c.items() if v is not None}

    def token(self, scope="datasets:read", aud="vitrine", kid="rsa1", alg=None, claims=None,
              key=None, headers=None, **extra):
        alg = alg or self.algs.get(kid, "RS256")
        key = key or self.keys[kid]
        body = claims if claims is not None else self.claims(scope=scope, aud=aud, **extra)
        h = {"kid": kid} if kid else {}
        h.update(headers or {})
        return jwt.encode(body, key, algorithm=alg, headers=h)

    def realistic_token(self, exp_in=3600):
        """A token the size of a typical identity provider's access token
        (about 1.1 KB: profile, groups, roles), for the benchmarks."""
        return self.token(exp_in=exp_in, jti=str(uuid.uuid4()), azp="vitrine-explorer",
                          sid=str(uuid.uuid4()), typ="Bearer", name="Ada Lovelace",
                          preferred_username="ada", email="ada.lovelace@example.com",
                          email_verified=True,
                          groups=[f"/org/analytics/team-{i}" for i in range(8)],
                          realm_access={"roles": ["offline_access", "uma_authorization",
                                                  "default-roles-main", "analyst"]},
                          scope="openid profile email datasets:read")

    def public_pem(self, kid="rsa1"):
        return self.keys[kid].public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)

    def wait_fetches(self, kind, n, timeout=20):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.fetches[kind] >= n:
                return
            time.sleep(0.05)
        raise AssertionError(f"issuer saw {self.fetches[kind]} {kind} fetches, wanted {n}")

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()


def unsigned(header, claims, sig=b""):
    """A compact token from raw parts (attack tokens PyJWT refuses to make)."""
    return ".".join([b64u(json.dumps(header).encode()), b64u(json.dumps(claims).encode()),
                     b64u(sig)])
