"""A local OAuth 2.0 / OIDC issuer for the Explorer's sign-in test: discovery,
an authorization endpoint that approves at once (no login form) and redirects
back with a code, a token endpoint that checks the PKCE verifier (S256)
against the challenge, and a JWKS. Tokens are RS256 JWTs (python3-jwt,
python3-cryptography). Binds 127.0.0.1 port 0; records what it saw.
"""
import base64
import hashlib
import json
import secrets
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlparse

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa


def b64url(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


class Issuer:
    def __init__(self, client_id, audience="vitrine"):
        self.client_id = client_id
        self.audience = audience
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.kid = "test-key"
        self.codes = {}       # code -> authorize params
        self.events = []      # ("authorize"|"token", details)
        self.tokens = []
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()

    def jwks(self):
        pub = self.key.public_key().public_numbers()
        n = pub.n.to_bytes((pub.n.bit_length() + 7) // 8, "big")
        e = pub.e.to_bytes((pub.e.bit_length() + 7) // 8, "big")
        return {"keys": [{"kty": "RSA", "kid": self.kid, "use": "sig", "alg": "RS256",
                          "n": b64url(n), "e": b64url(e)}]}

    def issue(self, scope):
        now = int(time.time())
        claims = {"iss": self.url, "aud": self.audience, "sub": "explorer-user", "iat": now,
                  "exp": now + 600, "scope": scope}
        tok = jwt.encode(claims, self.key, algorithm="RS256", headers={"kid": self.kid})
        self.tokens.append(tok)
        return tok

    def _handler(self):
        issuer = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def send_json(self, status, obj):
                body = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Access-Control-Allow-Origin", "*")
                self.send_header("Cache-Control", "no-store")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_OPTIONS(self):
                self.send_response(204)
                self.send_header("Access-Control-Allow-Origin", "*")
                self.send_header("Access-Control-Allow-Methods", "GET, POST")
                self.send_header("Access-Control-Allow-Headers", "Content-Type")
                self.end_headers()

            def do_GET(self):
                u = urlparse(self.path)
                if u.path == "/.well-known/openid-configuration":
                    self.send_json(200, {
                        "issuer": issuer.url,
                        "authorization_endpoint": issuer.url + "/authorize",
                        "token_endpoint": issuer.url + "/token",
                        "jwks_uri": issuer.url + "/jwks.json",
                        "response_types_supported": ["code"],
                        "code_challenge_methods_supported": ["S256"],
                        "id_token_signing_alg_values_supported": ["RS256"],
                    })
                elif u.path == "/jwks.json":
                    self.send_json(200, issuer.jwks())
                elif u.path == "/authorize":
                    q = {k: v[0] for k, v in parse_qs(u.query).items()}
                    issuer.events.append(("authorize", q))
                    if q.get("client_id") != issuer.client_id or q.get("response_type") != "code":
                        return self.send_json(400, {"error": "invalid_request"})
                    code = secrets.token_urlsafe(16)
                    issuer.codes[code] = q
                    loc = q["redirect_uri"] + "?" + urlencode({"code": code, "state": q.get("state", "")})
                    self.send_response(302)
                    self.send_header("Location", loc)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                else:
                    self.send_json(404, {"error": "not_found"})

            def do_POST(self):
                u = urlparse(self.path)
                n = int(self.headers.get("Content-Length") or 0)
                form = {k: v[0] for k, v in parse_qs(self.rfile.read(n).decode()).items()}
                if u.path != "/token":
                    return self.send_json(404, {"error": "not_found"})
                issuer.events.append(("token", form))
                q = issuer.codes.pop(form.get("code", ""), None)
                if (q is None or form.get("grant_type") != "authorization_code"
                        or form.get("client_id") != issuer.client_id
                        or form.get("redirect_uri") != q["redirect_uri"]):
                    return self.send_json(400, {"error": "invalid_grant"})
                if q.get("code_challenge"):
                    verifier = form.get("code_verifier", "")
                    want = b64url(hashlib.sha256(verifier.encode()).digest())
                    if q.get("code_challenge_method") != "S256" or want != q["code_challenge"]:
                        return self.send_json(400, {"error": "invalid_grant",
                                                    "error_description": "PKCE verification failed"})
                self.send_json(200, {"access_token": issuer.issue(q.get("scope", "")),
                                     "token_type": "Bearer", "expires_in": 600})

        return H
