"""Readiness, drain and the service manager (issue 26 item 6), on one server:
SIGTERM turns /readyz 503 at once while everything else is served through
server.drain_delay_secs, idle PostgreSQL sessions then end with SQLSTATE
57P01 and the process exits 0; SIGHUP registers the config file's new
datasets; under systemd's notify protocol (a real datagram socket standing in
for systemd) the process sends READY=1, RELOADING=1, STOPPING=1.
"""
import os
import signal
import socket
import time

import psycopg
import pytest

from conftest import dataset_block, server_block, write_parquet
from pgwire_util import pg_port


def test_sigterm_drains_and_sighup_reloads(vt, datadir, tmp_path):
    write_parquet(datadir / "a.parquet", "SELECT i AS id FROM range(100) t(i)")
    write_parquet(datadir / "b.parquet", "SELECT i AS id FROM range(7) t(i)")
    sock_path = tmp_path / "notify.sock"
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(str(sock_path))
    notify.settimeout(10)
    cfg = (server_block(drain_delay_secs=2) + "[server.pgwire]\nenabled = true\nport = 0\n"
           + dataset_block("a", str(datadir / "a.parquet")))
    s = vt(cfg, env={"NOTIFY_SOCKET": str(sock_path)})
    # Port 0 and the port the log names: a port probed free beforehand could
    # be taken meanwhile (by a neighbour test's client, as its local port).
    pg = pg_port(s)

    def messages(until):
        got = []
        while until not in "".join(got):
            got.append(notify.recv(4096).decode())
        return "".join(got)

    assert "READY=1" in messages("READY=1")
    # SIGHUP: the file's new dataset is registered and built.
    s.config_path.write_text(cfg + dataset_block("b", str(datadir / "b.parquet")))
    s.proc.send_signal(signal.SIGHUP)
    assert "RELOADING=1" in messages("RELOADING=1")
    st = s.wait_state("b", ["published"], timeout=30)
    assert st["rows"] == 7
    # the log names what was registered (a build failing later is logged by name)
    assert "1 new dataset registered (building): b" in s.log(), s.log()[-2000:]
    con = psycopg.connect(host="127.0.0.1", port=pg, user="vitrine", dbname="vitrine",
                          autocommit=True)
    assert con.execute("SELECT count(*) FROM a").fetchone()[0] == 100
    t0 = time.monotonic()
    s.proc.send_signal(signal.SIGTERM)
    assert "STOPPING=1" in messages("STOPPING=1")
    r = s.get("/readyz")
    assert r.status_code == 503 and r.json()["reason"] == "shutting_down"
    assert time.monotonic() - t0 < 1.0
    # Still serving during the drain delay.
    assert s.post("/api/v1/datasets/a/count", {}).json() == {"count": 100}
    assert con.execute("SELECT count(*) FROM b").fetchone()[0] == 7
    assert s.proc.wait(timeout=30) == 0
    assert time.monotonic() - t0 >= 2.0
    with pytest.raises(psycopg.Error) as e:
        con.execute("SELECT 1")
    # The server's FATAL 57P01 (libpq reports its text; psycopg keeps no
    # sqlstate for a connection that ended).
    assert "terminating connection due to administrator command" in str(e.value), str(e.value)
    con.close()
    notify.close()
