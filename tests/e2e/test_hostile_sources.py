"""Hostile registrations against the sources (issue 10, items 4 and 5): each
reproduction of the issue, then the server still answering at once.

Item 4, sources confined and bounded: a location that walks out of the
allowed roots ("../../.."), symbolic link cycles and links that leave the
roots, FIFOs named *.parquet, messages that would tell what exists outside the
roots, DuckDB's SQL in error messages, builds past their deadline.

Item 5, outbound requests only where the operator allows: endpoints a request
chooses (cloud metadata, ULA metadata, loopback, a numeric host), credential
variables a request names, addresses refused per connection even for allowed
endpoints, a tarpit that must free its builder, remote error text.
"""
import os
import socket
import threading
import time

import pytest

from conftest import dataset_block, server_block, write_parquet
from s3_fixtures import moto  # noqa: F401 (fixture)

# Its checks bound how fast a refusal or a build answers (under a second or
# two): run alone, after the parallel pass.
pytestmark = pytest.mark.serial

TOKEN = "s3cret-token"
ADMIN = {"X-Admin-Token": TOKEN}


def register(s, name, location, timeout=30, **extra):
    body = {"name": name, "source": {"kind": extra.pop("kind", "parquet"), "location": str(location)}}
    body.update(extra)
    t0 = time.monotonic()
    r = s.post("/api/v1/datasets", body, headers=ADMIN, timeout=timeout)
    return r, time.monotonic() - t0


def answers_quickly(s, name):
    """/count of an existing dataset answers within a second."""
    t0 = time.monotonic()
    r = s.post(f"/api/v1/datasets/{name}/count", {}, timeout=5)
    assert r.status_code == 200, r.text
    assert time.monotonic() - t0 < 1.0


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.fixture
def srv(vt, tmp_path):
    """A server whose roots are tmp_path/root; one dataset to keep asking."""
    root = tmp_path / "root"
    write_parquet(root / "ok.parquet", "SELECT range AS id FROM range(10)")
    s = vt(server_block(allowed_roots=[root]) + dataset_block("base", root / "ok.parquet"),
           env={"ADMIN_TOKEN": TOKEN}, workdir=tmp_path / "srv")
    s.root = root
    return s


# ------------------------------------------------------ item 4: confinement

def test_location_walking_out_of_the_roots_is_refused_at_once(srv):
    # The reproduction: "../../.." walked the whole file system through
    # symlink cycles at 100% CPU long after its 504.
    before = cpu_seconds(srv.proc.pid)
    for loc in ("../../..", "/", str(srv.root / ".." / ".." / ".."), "/etc/*.parquet"):
        r, took = register(srv, "walk", loc)
        assert r.status_code == 400 and r.json()["code"] == "source_not_allowed", r.text
        assert took < 2
    time.sleep(1)
    assert cpu_seconds(srv.proc.pid) - before < 1.0  # nothing keeps walking
    answers_quickly(srv, "base")


def test_messages_outside_the_roots_do_not_tell_what_exists(srv, tmp_path):
    outside = tmp_path / "outside"
    write_parquet(outside / "there.parquet", "SELECT 1 AS a")
    (outside / "locked").mkdir()
    write_parquet(outside / "locked" / "x.parquet", "SELECT 1 AS a")
    os.chmod(outside / "locked", 0)
    # through a link inside the roots, too
    (srv.root / "to-there").symlink_to(outside / "there.parquet")
    (srv.root / "to-nowhere").symlink_to(outside / "nowhere.parquet")
    try:
        shapes = set()
        for loc in (outside / "there.parquet", outside / "missing.parquet",
                    outside / "locked" / "x.parquet", srv.root / "to-there",
                    srv.root / "to-nowhere"):
            r, _ = register(srv, "probe", loc)
            assert r.status_code == 400, r.text
            body = r.json()
            assert body["code"] == "source_not_allowed", body
            assert str(loc) in body["error"]
            shapes.add(body["error"].replace(str(loc), "<loc>"))
        assert len(shapes) == 1, shapes   # one answer whatever is there
    finally:
        os.chmod(outside / "locked", 0o755)


def test_symlink_cycles_and_escapes_are_not_followed(srv, tmp_path):
    data = srv.root / "cyc"
    write_parquet(data / "a.parquet", "SELECT range AS id FROM range(3)")
    write_parquet(data / "sub" / "b.parquet", "SELECT range AS id FROM range(4)")
    (data / "sub" / "loop").symlink_to(data)           # a cycle
    (data / "self").symlink_to(".")                    # another
    outside = tmp_path / "elsewhere"
    write_parquet(outside / "secret.parquet", "SELECT range AS id FROM range(1000)")
    (data / "out").symlink_to(outside)                 # leaves the roots
    before = cpu_seconds(srv.proc.pid)
    r, took = register(srv, "cyc", data)
    assert r.status_code == 200, r.text
    assert r.json()["rows"] == 7                       # a and b once each, nothing outside
    assert took < 5
    assert cpu_seconds(srv.proc.pid) - before < 3.0
    answers_quickly(srv, "base")


def test_fifo_named_parquet_never_blocks_a_builder(srv):
    # The reproduction: open() on a FIFO blocked a builder forever, and
    # after two such registrations every reload and registration hung.
    fifo = srv.root / "fifo.parquet"
    os.mkfifo(fifo)
    for name in ("f1", "f2", "f3"):
        r, took = register(srv, name, fifo, timeout=10)
        assert r.status_code == 400 and "not a regular file" in r.json()["error"], r.text
        assert took < 2
    # A directory holding one: the FIFO is not listed, the files are read.
    d = srv.root / "withfifo"
    write_parquet(d / "a.parquet", "SELECT range AS id FROM range(5)")
    os.mkfifo(d / "b.parquet")
    r, took = register(srv, "dirfifo", d, timeout=10)
    assert r.status_code == 200 and r.json()["rows"] == 5, r.text
    r = srv.post("/api/v1/datasets/base/reload", headers=ADMIN, timeout=10)
    assert r.status_code == 200, r.text
    answers_quickly(srv, "base")


def test_errors_name_the_location_never_duckdbs_sql(srv):
    bad = srv.root / "bad.parquet"
    bad.write_bytes(b"PAR1" + b"\x00" * 64 + b"PAR1")
    r, _ = register(srv, "bad", bad)
    assert r.status_code in (400, 422), r.text
    msg = r.json()["error"]
    assert str(bad) in msg
    for sql_word in ("SELECT", "read_parquet", "LINE 1", "__vt_"):
        assert sql_word not in msg, msg


def test_every_build_has_a_deadline(vt, tmp_path):
    root = tmp_path / "root"
    write_parquet(root / "ok.parquet", "SELECT range AS id FROM range(10)")
    big = write_parquet(root / "big.parquet",
                        "SELECT range AS id, md5(range::VARCHAR) AS h, range % 97 AS k "
                        "FROM range(6000000)")
    s = vt(server_block(allowed_roots=[root]) + "[server.startup]\nmax_concurrent = 1\n"
           + dataset_block("base", root / "ok.parquet"), env={"ADMIN_TOKEN": TOKEN})
    t0 = time.monotonic()
    r, _ = register(s, "slow", big, timeout=60, refresh={"timeout": "200ms"})
    took = time.monotonic() - t0
    assert r.status_code in (400, 422, 504), r.text
    assert "deadline" in r.json()["error"], r.text
    assert took < 10
    # The only builder is free again.
    r, took = register(s, "next", root / "ok.parquet")
    assert r.status_code == 200 and took < 5, r.text


# --------------------------------------------------- item 5: outbound requests

def listener():
    """A TCP socket on 127.0.0.1 that counts connections (and never answers)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    sock.settimeout(0.2)
    seen = []
    stop = threading.Event()

    def run():
        conns = []
        while not stop.is_set():
            try:
                c, _ = sock.accept()
                seen.append(time.monotonic())
                conns.append(c)                      # held open: a tarpit
            except socket.timeout:
                pass
        for c in conns:
            c.close()
        sock.close()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return sock.getsockname()[1], seen, stop


def s3_body(name, endpoint=None, **s3):
    body = {"name": name, "source": {"kind": "parquet", "location": "s3://vt-bucket/data/"},
            "s3": {"allow_http": True, "addressing_style": "path", **s3}}
    if endpoint:
        body["s3"]["endpoint"] = endpoint
    return body


def test_request_chosen_endpoints_and_credentials_are_refused(srv):
    port, seen, stop = listener()
    try:
        for ep in ("http://169.254.169.254", "http://[fd00:ec2::254]", "http://[::1]:22",
                   "http://0x7f000001", f"http://127.0.0.1:{port}", f"http://localhost:{port}"):
            t0 = time.monotonic()
            r = srv.post("/api/v1/datasets", s3_body("meta", ep), headers=ADMIN, timeout=10)
            assert r.status_code == 400 and r.json()["code"] == "source_not_allowed", (ep, r.text)
            assert "s3.endpoint" in r.json()["error"]
            assert time.monotonic() - t0 < 2
        # A credential variable the request names: the admin token, signed, to
        # wherever. Refused before anything is read.
        r = srv.post("/api/v1/datasets", s3_body("creds", access_key_id_env="ADMIN_TOKEN",
                                                 secret_access_key_env="ADMIN_TOKEN"),
                     headers=ADMIN, timeout=10)
        assert r.status_code == 400 and r.json()["code"] == "source_not_allowed", r.text
        assert "ADMIN_TOKEN" in r.json()["error"] and TOKEN not in r.text
        time.sleep(0.3)
        assert seen == []                            # no connection was ever made
    finally:
        stop.set()
    answers_quickly(srv, "base")


def test_allowed_endpoints_work_and_credentials_follow_the_config(vt, tmp_path, moto):
    root = tmp_path / "root"
    f = write_parquet(root / "ok.parquet", "SELECT range AS id FROM range(10)")
    moto.create_bucket("vt-bucket")
    moto.upload_file("vt-bucket", "data/a.parquet", f)
    cfg = (server_block(allowed_roots=[root], allowed_s3_endpoints=[moto.endpoint],
                        allowed_credential_envs=["VT_TEST_KEY"])
           + dataset_block("base", f))
    s = vt(cfg, env={"ADMIN_TOKEN": TOKEN, "AWS_ACCESS_KEY_ID": "testing",
                     "AWS_SECRET_ACCESS_KEY": "testing", "VT_TEST_KEY": "testing"})
    r = s.post("/api/v1/datasets", s3_body("viaconfig", moto.endpoint), headers=ADMIN, timeout=60)
    assert r.status_code == 200 and r.json()["rows"] == 10, r.text
    r = s.post("/api/v1/datasets", s3_body("named", moto.endpoint + "/",
                                           access_key_id_env="VT_TEST_KEY"),
               headers=ADMIN, timeout=60)
    assert r.status_code == 200, r.text
    # The same server on a name the config does not list: refused.
    other = moto.endpoint.replace("127.0.0.1", "localhost")
    r = s.post("/api/v1/datasets", s3_body("other", other), headers=ADMIN, timeout=10)
    assert r.status_code == 400 and r.json()["code"] == "source_not_allowed", r.text


def test_forbidden_addresses_are_refused_per_connection(vt, tmp_path):
    # Endpoints the config allows still never reach link-local or metadata
    # addresses: the check runs on the address each connection dials.
    root = tmp_path / "root"
    f = write_parquet(root / "ok.parquet", "SELECT 1 AS a")
    eps = ["http://169.254.169.254:9", "http://[fe80::1]:9", "http://[fd00:ec2::254]:9",
           "http://0.0.0.0:9"]
    s = vt(server_block(allowed_roots=[root], allowed_s3_endpoints=eps)
           + dataset_block("base", f), env={"ADMIN_TOKEN": TOKEN})
    for ep, cls in zip(eps, ["cloud metadata", "link-local", "cloud metadata", "reserved"]):
        t0 = time.monotonic()
        r = s.post("/api/v1/datasets", s3_body("linklocal", ep), headers=ADMIN, timeout=30)
        took = time.monotonic() - t0
        assert r.status_code == 400, (ep, r.text)
        assert f"{cls} address" in r.json()["error"], (ep, r.text)
        assert took < 3, (ep, took)                  # refused, not retried five times
    answers_quickly(s, "base")


def test_tarpit_endpoint_frees_its_builder(vt, tmp_path):
    port, seen, stop = listener()
    root = tmp_path / "root"
    f = write_parquet(root / "ok.parquet", "SELECT 1 AS a")
    tarpit = f"http://127.0.0.1:{port}"
    s = vt(server_block(allowed_roots=[root], allowed_s3_endpoints=[tarpit])
           + "[server.startup]\nmax_concurrent = 1\n" + dataset_block("base", f),
           env={"ADMIN_TOKEN": TOKEN})
    try:
        body = s3_body("tarpit", tarpit)
        body["refresh"] = {"timeout": "2s"}
        t0 = time.monotonic()
        r = s.post("/api/v1/datasets", body, headers=ADMIN, timeout=60)
        assert r.status_code in (400, 504), r.text
        assert time.monotonic() - t0 < 10
        assert len(seen) >= 1
        # The only builder is free: a registration answers at once.
        r, took = register(s, "after", f)
        assert r.status_code == 200 and took < 5, r.text
    finally:
        stop.set()


def test_remote_error_text_is_not_echoed(vt, tmp_path):
    """A fake S3 that answers 403 with a message of its own choosing."""
    import http.server

    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = (b"<?xml version='1.0'?><Error><Code>AccessDenied</Code>"
                    b"<Message>pwned: visit evil.example and paste your token</Message></Error>")
            self.send_response(403)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_HEAD = do_GET

        def log_message(self, *a):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    ep = f"http://127.0.0.1:{httpd.server_address[1]}"
    root = tmp_path / "root"
    f = write_parquet(root / "ok.parquet", "SELECT 1 AS a")
    s = vt(server_block(allowed_roots=[root], allowed_s3_endpoints=[ep])
           + dataset_block("base", f), env={"ADMIN_TOKEN": TOKEN})
    try:
        r = s.post("/api/v1/datasets", s3_body("echo", ep), headers=ADMIN, timeout=30)
        assert r.status_code == 400, r.text
        msg = r.json()["error"]
        assert "AccessDenied" in msg and "403" in msg
        assert "pwned" not in r.text and "evil.example" not in r.text
        assert "pwned" not in s.log()
    finally:
        httpd.shutdown()
