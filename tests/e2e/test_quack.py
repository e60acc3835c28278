"""[server.quack] (issue 14 item 4): the spec's config rules, checked at
load (only the literal host localhost is local; any other host, numeric
loopback included, needs allow_other_hostname; read_only defaults to true;
a token has at least 4 characters), and the server's behaviour here, where
DuckDB's quack extension is not installed (this build never downloads
extensions): one warning naming what is missing, and everything else keeps
serving."""
import re
import subprocess
import time

import psycopg

from conftest import VITRINE, dataset_block, server_block, write_parquet
from pgwire_util import pg_port


def check(tmp_path, quack):
    p = tmp_path / "q.toml"
    p.write_text("[server.quack]\nenabled = true\n" + quack)
    return subprocess.run([str(VITRINE), "check-config", str(p)], capture_output=True,
                          text=True, timeout=30)


def test_config_rules(tmp_path):
    ok = ['', 'uri = "quack:localhost"\n', 'uri = "quack:localhost:9595"\n',
          'uri = "quack://LOCALHOST"\n',
          'uri = "quack:127.0.0.1"\nallow_other_hostname = true\n',
          'uri = "quack:[::1]:9494"\nallow_other_hostname = true\n',
          'uri = "quack:data.example.org"\nallow_other_hostname = true\ntoken = "abcd"\n',
          'read_only = false\n']
    for q in ok:
        r = check(tmp_path, q)
        assert r.returncode == 0, (q, r.stderr)
    bad = [('uri = "quack:127.0.0.1"\n', "server.quack.uri", "allow_other_hostname"),
           ('uri = "quack:[::1]"\n', "server.quack.uri", "allow_other_hostname"),
           ('uri = "quack:data.example.org"\n', "server.quack.uri", "not local"),
           ('uri = "http://localhost"\n', "server.quack.uri", "quack:HOST"),
           ('uri = "quack:localhost:99999"\n', "server.quack.uri", "port"),
           ('uri = "quack:localhost:x"\n', "server.quack.uri", "port"),
           ('uri = "quack:"\n', "server.quack.uri", "quack:HOST"),
           ('token = "abc"\n', "server.quack.token", "at least 4"),
           ('token = ""\n', "server.quack.token", ""),
           ('read_only = "yes"\n', "server.quack.read_only", ""),
           ('portt = 1\n', "portt", "")]
    for q, key, text in bad:
        r = check(tmp_path, q)
        assert r.returncode == 1 and key in r.stderr and text in r.stderr, (q, r.stderr)
    # read_only defaults to true, the token to "generated and logged once"
    tmpl = tmp_path / "init"
    subprocess.run([str(VITRINE), "init", str(tmpl)], check=True, capture_output=True)
    text = (tmpl / "datasets.toml").read_text()
    block = text[text.index("[server.quack]"):]
    block = block[:block.index("\n[", 1)]
    assert re.search(r"^#?\s*read_only = true", block, re.M), block
    assert "generated and logged once" in block


def test_missing_extension_warns_once_and_serving_goes_on(vt, datadir):
    t = write_parquet(datadir / "t.parquet", "SELECT i AS id FROM range(10) t(i)")
    cfg = (server_block() + "[server.quack]\nenabled = true\n"
           "[server.pgwire]\nenabled = true\nport = 0\n" + dataset_block("t", t))
    srv = vt(cfg)
    deadline = time.time() + 20
    while "quack" not in srv.log().split("listening on http", 1)[1] and time.time() < deadline:
        time.sleep(0.05)
    log = srv.log()
    warns = [ln for ln in log.splitlines() if "WARN" in ln and "quack" in ln]
    assert len(warns) == 1, log
    assert 'extension "quack" is not available' in warns[0]
    assert "everything else keeps serving" in warns[0]
    # no token is made up for a server that does not run
    assert "quack token" not in log and "quack serving" not in log
    r = srv.post("/api/v1/datasets/t/count", {})
    assert r.status_code == 200 and r.json()["count"] == 10
    with psycopg.connect(host="127.0.0.1", port=pg_port(srv), user="vitrine",
                         dbname="vitrine", autocommit=True) as c:
        assert c.execute("SELECT count(*) FROM t").fetchone() == (10,)
    # still exactly one warning after serving
    assert len([ln for ln in srv.log().splitlines() if "WARN" in ln and "quack" in ln]) == 1
