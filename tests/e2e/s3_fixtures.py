"""A real S3 server for tests: moto_server on 127.0.0.1 (path-style, http), an
unsigned admin client to create buckets and objects, optional IAM auth, and a
fault-injecting HTTP proxy (Python's http.server) in front of it.

Standard library only (Debian's /usr/bin/python3 has no boto3). moto_server is
not a Debian package: on the development machines it comes with the machine
image's pyenv Python (/root/.pyenv/shims/moto_server), elsewhere
scripts/install-deps.sh installs it from PyPI into third_party/moto when pip
can reach its index. It is looked up as $VT_MOTO_SERVER, then on PATH, then in
third_party/moto, then in pyenv; without it every S3 test fails with a message
saying where it was looked for and how to install it.

Fixtures (import them into a test module with `from s3_fixtures import *`):
  moto        session-wide moto without auth -> Moto (endpoint, admin helpers)
  moto_auth   session-wide moto with IAM auth on -> Moto with .key_id/.secret
  proxy       per-test FaultProxy in front of `moto`
"""
import http.client
import http.server
import json
import os
import re
import shutil
import socket
import socketserver
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MOTO_VENV = REPO / "third_party" / "moto" / "bin" / "moto_server"  # scripts/install-deps.sh
MOTO_FALLBACK = "/root/.pyenv/shims/moto_server"                 # this machine image's pyenv
MOTO_MISSING = (
    "moto_server, the S3 server the S3 tests run against, was not found ($VT_MOTO_SERVER, "
    f"PATH, {MOTO_VENV}, {MOTO_FALLBACK}). It is not a Debian package: run "
    "./scripts/install-deps.sh where pip can reach PyPI (it installs moto[server] into "
    "third_party/moto), or install it with pip yourself and set VT_MOTO_SERVER.")


def find_moto():
    for cand in (os.environ.get("VT_MOTO_SERVER"), shutil.which("moto_server"), str(MOTO_VENV),
                 MOTO_FALLBACK):
        if cand and os.path.exists(cand) and os.access(cand, os.X_OK):
            return cand
    return None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _quote_key(key):
    return urllib.parse.quote(key, safe="/~")


# A fake SigV4 header: moto routes IAM calls by the service named in it; the
# signature itself is not checked while auth is off.
_S3_AUTH = ("AWS4-HMAC-SHA256 Credential=setup/20240101/us-east-1/s3/aws4_request, "
            "SignedHeaders=host, Signature=0")
_IAM_AUTH = ("AWS4-HMAC-SHA256 Credential=setup/20240101/us-east-1/iam/aws4_request, "
             "SignedHeaders=host, Signature=0")


class Moto:
    """moto_server on a port it binds itself (-p 0) and then reports: a port
    probed free here could be taken by a neighbour before moto binds it."""

    def __init__(self, exe, workdir):
        self.exe = exe
        self.port = None
        self.endpoint = None
        self.log_path = Path(workdir) / "moto.log"
        self.proc = None
        self.key_id = None
        self.secret = None

    def start(self, timeout=60):
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen([self.exe, "-H", "127.0.0.1", "-p", "0"],
                                     stdout=self._log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("moto_server exited:\n" + self.log_path.read_text())
            if self.port is None:
                # werkzeug's startup line names the port the kernel chose.
                m = re.search(r"Running on http://127\.0\.0\.1:(\d+)",
                              self.log_path.read_text(errors="replace"))
                if m:
                    self.port = int(m.group(1))
                    self.endpoint = f"http://127.0.0.1:{self.port}"
            if self.port is not None:
                try:
                    with urllib.request.urlopen(self.endpoint + "/", timeout=1):
                        return self
                except OSError:
                    pass
            time.sleep(0.1)
        raise RuntimeError("moto_server did not start:\n" + self.log_path.read_text())

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc:
            self._log.close()

    # ---- unsigned admin calls (moto accepts them while auth is off) ----
    def _req(self, method, path, data=None, headers=None):
        # Some Authorization header is needed even with auth off: moto treats
        # requests without one as anonymous and refuses to touch existing keys.
        h = {"Content-Type": "application/octet-stream", "Authorization": _S3_AUTH}
        h.update(headers or {})
        req = urllib.request.Request(self.endpoint + path, data=data, method=method, headers=h)
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.read()

    def create_bucket(self, bucket):
        self._req("PUT", f"/{bucket}")

    def put(self, bucket, key, data):
        self._req("PUT", f"/{bucket}/{_quote_key(key)}", data=data)

    def delete(self, bucket, key):
        self._req("DELETE", f"/{bucket}/{_quote_key(key)}")

    def get(self, bucket, key):
        return self._req("GET", f"/{bucket}/{_quote_key(key)}")

    def list_keys(self, bucket, prefix=""):
        """Every key under prefix (one page of up to 1000 is enough for tests)."""
        import re
        xml = self._req("GET", f"/{bucket}?list-type=2&prefix={urllib.parse.quote(prefix)}")
        return re.findall(r"<Key>([^<]*)</Key>", xml.decode())

    def upload_file(self, bucket, key, path):
        self.put(bucket, key, Path(path).read_bytes())

    def upload_tree(self, local_dir, bucket, prefix):
        """Uploads every file under local_dir to prefix/<relative path>."""
        local_dir = Path(local_dir)
        n = 0
        for p in sorted(local_dir.rglob("*")):
            if p.is_file():
                rel = p.relative_to(local_dir).as_posix()
                self.put(bucket, f"{prefix}/{rel}" if prefix else rel, p.read_bytes())
                n += 1
        return n

    def enable_auth(self):
        """Creates an IAM user with full access, then turns moto's request
        authentication on: from now on every request must be signed with
        (key_id, secret)."""
        def iam(params):
            body = urllib.parse.urlencode(dict(params, Version="2010-05-08")).encode()
            return self._req("POST", "/", data=body, headers={
                "Content-Type": "application/x-www-form-urlencoded", "Authorization": _IAM_AUTH})
        iam({"Action": "CreateUser", "UserName": "vitrine"})
        xml = iam({"Action": "CreateAccessKey", "UserName": "vitrine"}).decode()
        self.key_id = xml.split("<AccessKeyId>")[1].split("<")[0]
        self.secret = xml.split("<SecretAccessKey>")[1].split("<")[0]
        policy = json.dumps({"Version": "2012-10-17",
                             "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]})
        iam({"Action": "PutUserPolicy", "UserName": "vitrine", "PolicyName": "all",
             "PolicyDocument": policy})
        self._req("POST", "/moto-api/reset-auth", data=b"0",
                  headers={"Content-Type": "application/json"})


def _start_moto(tmp_path_factory):
    exe = find_moto()
    if not exe:
        pytest.fail(MOTO_MISSING, pytrace=False)
    m = Moto(exe, tmp_path_factory.mktemp("moto"))
    m.start()
    return m


@pytest.fixture(scope="session")
def moto(tmp_path_factory):
    m = _start_moto(tmp_path_factory)
    yield m
    m.stop()


@pytest.fixture(scope="session")
def moto_auth(tmp_path_factory):
    m = _start_moto(tmp_path_factory)
    m.data_ready = False
    yield m
    m.stop()


# ---- fault-injecting proxy ------------------------------------------------

class Fault:
    """One rule: requests matching (method, path substring, query substring)
    get `action` for the next `times` matches.
      status   answer with `status` and an S3 error document (code `code`)
      drop     close the connection without an answer (a transport error)
      redirect 301 to another host, with x-amz-bucket-region
      after    forward normally, then call `then()` (e.g. delete a key)
      stall    wait stall_secs, then forward
      truncate forward, but send only half of the body and close"""

    def __init__(self, action="status", method=None, path=None, query=None, status=503,
                 code="SlowDown", times=1, then=None, retry_after=None, stall_secs=10):
        self.stall_secs = stall_secs
        self.action, self.method, self.path, self.query = action, method, path, query
        self.status, self.code, self.times, self.then = status, code, times, then
        self.retry_after = retry_after
        self.hits = 0

    def matches(self, method, path, query):
        return (self.times > 0 and (self.method is None or self.method == method)
                and (self.path is None or self.path in path)
                and (self.query is None or self.query in query))


class FaultProxy:
    def __init__(self, upstream_port):
        self.upstream_port = upstream_port
        self.faults = []
        self.log = []          # (method, path, query, status, Range header, body bytes)
        self.lock = threading.Lock()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _handle(self):
                parsed = urllib.parse.urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                fault = None
                with proxy.lock:
                    for f in proxy.faults:
                        if f.matches(self.command, urllib.parse.unquote(parsed.path),
                                     parsed.query):
                            f.times -= 1
                            f.hits += 1
                            fault = f
                            break
                rng = self.headers.get("Range")
                if fault and fault.action == "drop":
                    proxy._record(self.command, parsed, 0, rng)
                    self.close_connection = True
                    try:
                        self.connection.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
                    return
                if fault and fault.action == "stall":
                    time.sleep(fault.stall_secs)
                if fault and fault.action in ("status", "redirect"):
                    status = 301 if fault.action == "redirect" else fault.status
                    code = "PermanentRedirect" if fault.action == "redirect" else fault.code
                    doc = (f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code>'
                           f"<Message>injected by the test proxy</Message></Error>").encode()
                    self.send_response(status)
                    self.send_header("Content-Type", "application/xml")
                    self.send_header("Content-Length", str(len(doc)))
                    if fault.action == "redirect":
                        self.send_header("Location", "http://127.0.0.1:1/elsewhere")
                        self.send_header("x-amz-bucket-region", "eu-west-1")
                    if fault.retry_after:
                        self.send_header("Retry-After", str(fault.retry_after))
                    self.end_headers()
                    if self.command != "HEAD":
                        self.wfile.write(doc)
                    proxy._record(self.command, parsed, status, rng)
                    return
                conn = http.client.HTTPConnection("127.0.0.1", proxy.upstream_port, timeout=60)
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() not in ("connection", "keep-alive", "proxy-connection")}
                conn.request(self.command, self.path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                # Side effects run before the client sees the answer, so the
                # client's next request already meets the changed store.
                if fault and fault.action == "after" and fault.then:
                    fault.then()
                self.send_response(resp.status)
                for k, v in resp.getheaders():
                    if k.lower() not in ("transfer-encoding", "connection", "content-length",
                                         "server", "date"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if fault and fault.action == "truncate" and self.command != "HEAD":
                    # Half the promised body, then the connection ends.
                    self.wfile.write(data[:len(data) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    try:
                        self.connection.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
                    conn.close()
                    return
                if self.command != "HEAD":
                    self.wfile.write(data)
                conn.close()
                proxy._record(self.command, parsed, resp.status, rng,
                              0 if self.command == "HEAD" else len(data))

            do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _handle

        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True
            allow_reuse_address = True

        self.server = Server(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def _record(self, method, parsed, status, rng=None, size=0):
        with self.lock:
            self.log.append((method, urllib.parse.unquote(parsed.path), parsed.query, status,
                             rng, size))

    def add(self, fault):
        with self.lock:
            self.faults.append(fault)
        return fault

    def requests(self, method=None, path=None, query=None):
        with self.lock:
            return [r for r in self.log if (method is None or r[0] == method)
                    and (path is None or path in r[1]) and (query is None or query in r[2])]

    def reset(self):
        with self.lock:
            self.faults.clear()
            self.log.clear()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def proxy(moto):
    p = FaultProxy(moto.port)
    yield p
    p.close()
