"""Recorder of the e2e suite's HTTP exchanges for the contract check (issue 28
item 6). Opt-in: only when VT_CONTRACT_DIR is set (`make e2e` sets it to
$(BUILD)/contract); otherwise nothing here runs.

Every response that `requests` receives from a vitrine server this test run
started (conftest.Server: Server.get/post/head and any direct requests call
naming its port) is appended as one JSON line to
$VT_CONTRACT_DIR/exchanges-<worker>-<pid>.ndjson: method, path (server.prefix
taken off), status, headers, the body when it was read and is text (JSON,
CSV, NDJSON, ...) up to BODY_CAP bytes, and the test that made it. When a
server is stopped, the OpenAPI document it serves (/docs/openapi.json under
its prefix) is fetched once, unrecorded, and kept as
$VT_CONTRACT_DIR/docs/<sha1>.json with a line naming it for that server
(and for the runs of the same Server that were killed before, when it was
restarted with the same config, arguments and environment).
tests/e2e/contract/validate.cjs then checks every exchange against its own
server's document with Stoplight Prism's response validator
(`make contract-check`)."""
import hashlib
import itertools
import json
import os
import re
import threading
from pathlib import Path
from urllib.parse import urlsplit

import requests

DIR = os.environ.get("VT_CONTRACT_DIR")
BODY_CAP = 2 * 1024 * 1024
TEXT_TYPES = ("application/json", "application/x-ndjson", "application/problem+json",
              "application/ld+json", "application/geo+json")

_lock = threading.Lock()
_servers = {}            # port -> server id, while a server runs
_ids = itertools.count(1)
_out = None
_orig_send = requests.Session.send


def enabled():
    return bool(DIR)


def _file():
    global _out
    if _out is None:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        Path(DIR).mkdir(parents=True, exist_ok=True)
        _out = open(Path(DIR) / f"exchanges-{worker}-{os.getpid()}.ndjson", "a",
                    encoding="utf-8")
    return _out


def _write(obj):
    line = json.dumps(obj, separators=(",", ":")) + "\n"
    with _lock:
        f = _file()
        f.write(line)
        f.flush()


def _identity(server):
    """What the served document depends on: the config file as it is now,
    the arguments and the environment."""
    try:
        text = Path(server.config_path).read_bytes()
    except OSError:
        text = b""
    env = sorted((k, v) for k, v in server.env.items() if k.startswith(("ADMIN_", "VITRINE_")))
    return hashlib.sha1(repr((text, server.args, env)).encode()).hexdigest()


def server_started(server):
    """conftest.Server.start: the server listens on server.port. A server
    restarted after it was killed (its document could not be fetched) with
    the same config, arguments and environment serves the same document: its
    earlier exchanges are validated against the one the restart serves."""
    if not DIR:
        return
    identity = _identity(server)
    prior = getattr(server, "_contract_id", None)
    orphans = getattr(server, "_contract_orphans", [])
    if prior and not getattr(server, "_contract_kept", False) and \
            getattr(server, "_contract_identity", None) == identity:
        orphans = orphans + [prior]
    else:
        orphans = []
    server._contract_orphans = orphans
    server._contract_identity = identity
    server._contract_kept = False
    server._contract_id = f"{os.getpid()}-{next(_ids)}"
    server._contract_seen = False
    with _lock:
        _servers[server.port] = server


def _textual(ctype):
    ctype = ctype.split(";")[0].strip().lower()
    return ctype.startswith("text/") or ctype in TEXT_TYPES or ctype.endswith("+json")


def _record(request, resp, stream):
    u = urlsplit(request.url)
    if u.hostname not in ("127.0.0.1", "localhost") or u.port is None:
        return
    with _lock:
        server = _servers.get(u.port)
    if server is None:
        return
    path = u.path or "/"
    # Under server.prefix: the operation's path without it. Outside it, only
    # the routes mounted at the root (probes, metrics) answer.
    outside = False
    if server.prefix:
        if path == server.prefix or path.startswith(server.prefix + "/"):
            path = path[len(server.prefix):] or "/"
        else:
            outside = True
    ctype = resp.headers.get("Content-Type", "")
    ex = {"server": server._contract_id, "method": request.method.lower(), "path": path,
          "status": resp.status_code, "headers": {k.lower(): v for k, v in resp.headers.items()},
          "test": os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" ", 1)[0],
          "prefix": bool(server.prefix), "outside": outside}
    if request.method.upper() == "HEAD":
        ex["body"] = "none"
    elif stream or not resp._content_consumed:
        ex["body"] = "unread"
    elif not resp.content:
        ex["body"] = "none"
    elif len(resp.content) > BODY_CAP:
        ex["body"] = "large"
    elif _textual(ctype):
        try:
            ex["text"] = resp.content.decode("utf-8")
            ex["body"] = "text"
        except UnicodeDecodeError:
            ex["body"] = "binary"
    else:
        ex["body"] = "binary"
    server._contract_seen = True
    _write(ex)


def _send(self, request, **kw):
    resp = _orig_send(self, request, **kw)
    try:
        _record(request, resp, kw.get("stream", False))
    except Exception as e:  # the recorder must never fail a test
        _write({"recorder_error": repr(e)})
    return resp


def server_stopping(server, timeout=10):
    """conftest.Server.stop, before the signal: keeps the server's document."""
    if not DIR or getattr(server, "_contract_id", None) is None:
        return
    with _lock:
        if _servers.get(server.port) is server:
            del _servers[server.port]
    if not (server._contract_seen or server._contract_orphans) or server.proc is None or \
            server.proc.poll() is not None:
        return
    keep_document(server, timeout)


def keep_document(server, timeout=10):
    """Fetches and keeps the document `server` serves now, for the exchanges
    it answered so far and will answer until it stops: a test that makes the
    server stop by itself (SIGTERM) and records answers of its shutdown calls
    this first, while the server still accepts connections."""
    if not DIR or getattr(server, "_contract_id", None) is None:
        return
    docs_path = "/docs"
    section = re.search(r"^\[swagger\]\s*$(.*?)(?=^\[|\Z)", server.config_text, re.M | re.S)
    m = section and re.search(r'^\s*path\s*=\s*"([^"]*)"', section.group(1), re.M)
    if m:
        docs_path = m.group(1).rstrip("/")
    try:
        r = _orig_send(requests.Session(),
                       requests.Request("GET", server.url(docs_path + "/openapi.json")).prepare(),
                       timeout=timeout)
    except requests.RequestException:
        return
    if r.status_code != 200:
        _write({"server": server._contract_id, "doc": None, "status": r.status_code})
        return
    sha = hashlib.sha1(r.content).hexdigest()
    docs = Path(DIR) / "docs"
    docs.mkdir(parents=True, exist_ok=True)
    target = docs / f"{sha}.json"
    if not target.exists():
        tmp = docs / f".{sha}.{os.getpid()}"
        tmp.write_bytes(r.content)
        tmp.replace(target)
    server._contract_kept = True
    for sid in [server._contract_id] + server._contract_orphans:
        _write({"server": sid, "doc": sha})
    server._contract_orphans = []


if DIR:
    requests.Session.send = _send
