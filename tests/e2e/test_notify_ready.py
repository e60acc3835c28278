"""READY=1 under systemd's notify protocol (a real datagram socket standing in
for systemd) as a start signal one can wait on instead of polling: `make
bench` times start -> published (2a) by it. The catalog wakes the notifier
when a startup build ends, so READY=1 follows the last publish at once; what
is tested here is what the wait relies on: READY=1 comes only once every
dataset of the config is published (readiness "all"), with no request to
the server before it.
"""
import socket

from conftest import dataset_block, server_block, write_parquet


def test_ready_only_after_every_dataset_is_published(vt, datadir, tmp_path):
    write_parquet(datadir / "a.parquet", "SELECT i AS id FROM range(50000) t(i)")
    write_parquet(datadir / "b.parquet", "SELECT i AS id, i % 7 AS k FROM range(300) t(i)")
    sock_path = tmp_path / "notify.sock"
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(str(sock_path))
    notify.settimeout(60)
    cfg = (server_block() + dataset_block("a", str(datadir / "a.parquet"))
           + dataset_block("b", str(datadir / "b.parquet")))
    s = vt(cfg, env={"NOTIFY_SOCKET": str(sock_path)}, wait=None)
    got = []
    while "READY=1" not in "".join(got):
        got.append(notify.recv(4096).decode())
    ready = [m for m in got if "READY=1" in m][0]
    assert "STATUS=serving 2 datasets" in ready, got
    # No request was made before READY=1: the statuses read now are the
    # state READY=1 announced.
    for name, rows in (("a", 50000), ("b", 300)):
        st = s.get(f"/api/v1/datasets/{name}/status").json()
        assert st["state"] == "published", st
        assert st["rows"] == rows
    ready = s.get("/readyz").json()
    assert (ready["status"], ready["datasets"]) == ("ready", 2), ready
    notify.close()
