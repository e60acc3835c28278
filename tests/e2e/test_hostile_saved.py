"""Saved queries can never stop a start (issue 22 item 3).

One corrupt or foreign *.toml in the saved-queries folder stopped the whole
server; a saved query whose build fails (a time bomb, valid at registration)
or crashed the process (json_structure of deep nesting: SIGSEGV) took the
next start with it; names starting with '.' were written, then skipped at
startup (the dataset vanished, its file stayed); refresh.interval = "1ms"
rebuilt ~1,000 times a second; deleting a saved query did not cancel its
running build."""
import time

import pytest
import requests

from conftest import dataset_block, server_block, write_parquet

ADMIN = {"X-Admin-Token": "t0k"}


def base_config(datadir, extra=""):
    t = write_parquet(datadir / "t.parquet", "SELECT i AS id, i % 3 AS k FROM range(100) t(i)")
    return server_block() + extra + dataset_block("t", t)


def test_bad_files_are_skipped_naming_each_and_the_rest_serves(vt, datadir, tmp_path):
    work = tmp_path / "srv"
    saved = work / "datasets.d"
    saved.mkdir(parents=True)
    (saved / "good.toml").write_text(
        '[[dataset]]\nname = "good"\nsql = "SELECT k, count(*) AS n FROM t '
        'GROUP BY k"\n')
    bad = {
        "garbage.toml": "name = \n[[[",
        "binary.toml": "\x00\x01\xfe\xff",
        "foreign.toml": '[[dataset]]\nname = "foreign"\nsource.location = "/etc/passwd"\n',
        "two.toml": '[[dataset]]\nname = "two"\nsql = "SELECT 1"\n'
                    '[[dataset]]\nname = "three"\nsql = "SELECT 2"\n',
        "renamed.toml": '[[dataset]]\nname = "other"\nsql = "SELECT 1"\n',
        "t.toml": '[[dataset]]\nname = "t"\nsql = "SELECT 1"\n',
        "fast.toml": '[[dataset]]\nname = "fast"\nsql = "SELECT 1"\n'
                     'refresh = { interval = "1ms" }\n',
    }
    for name, text in bad.items():
        (saved / name).write_bytes(text.encode("latin-1"))
    (saved / ".hidden.toml").write_text("garbage")
    s = vt(base_config(datadir), env={"ADMIN_TOKEN": "t0k"}, workdir=work)
    st = s.wait_state("good", ["published"])
    assert st["rows"] == 3
    log = s.log()
    for name in bad:
        assert f"saved query skipped: {saved / name}" in log, (name, log[-3000:])
    assert ".hidden.toml" not in log
    names = {d["name"] for d in s.get("/api/v1/datasets").json()}
    assert names == {"t", "good"}, names
    assert s.get("/readyz").status_code == 200


def test_names_starting_with_a_dot_are_refused(vt, datadir):
    s = vt(base_config(datadir), env={"ADMIN_TOKEN": "t0k"})
    for name in [".hidden", ".", "..", ".x.y"]:
        r = s.post("/api/v1/queries", {"name": name, "sql": "SELECT 1"}, headers=ADMIN)
        assert r.status_code == 400, (name, r.text)
        assert r.json()["code"] == "invalid_name", r.text
    saved = s.workdir / "datasets.d"
    assert not saved.exists() or not list(saved.iterdir())


def test_refresh_interval_has_a_minimum(vt, datadir):
    s = vt(base_config(datadir), env={"ADMIN_TOKEN": "t0k"})
    for interval in ["1ms", "999ms", "0s"]:
        r = s.post("/api/v1/queries", {"name": "q", "sql": "SELECT 1",
                                       "refresh": {"interval": interval}}, headers=ADMIN)
        assert r.status_code == 400, (interval, r.text)
        assert r.json()["code"] == "invalid_field", r.text
    r = s.post("/api/v1/queries", {"name": "q", "sql": "SELECT 1", "refresh": {"interval": "1s"}},
               headers=ADMIN)
    assert r.status_code == 200, r.text


@pytest.mark.parametrize("payload", [
    "CAST('boom' AS INTEGER)",
    # crashed the process (stack overflow) before the JSON wrappers
    "length(json_structure(repeat('[', 100000) || repeat(']', 100000))::VARCHAR)",
    # 8 GB before the allocation budget and the list caps
    "len(range(100000000))",
], ids=["error", "crash", "memory"])
def test_a_time_bomb_fails_alone_and_the_next_start_serves(vt, datadir, tmp_path, payload):
    work = tmp_path / "srv"
    cfg = base_config(datadir, extra='memory_limit = "512MiB"\n')
    s = vt(cfg, env={"ADMIN_TOKEN": "t0k"}, workdir=work)
    fuse = time.time() + 4
    bomb = (f"SELECT CASE WHEN epoch(now()) > {fuse:.0f} THEN {payload} ELSE 1 END AS v, "
            "count(*) AS n FROM t")
    r = s.post("/api/v1/queries", {"name": "bomb", "kind": "query", "sql": bomb}, headers=ADMIN)
    assert r.status_code == 200, r.text
    r = s.post("/api/v1/queries", {"name": "fine", "kind": "query",
                                   "sql": "SELECT k, count(*) AS n FROM t GROUP BY k"},
               headers=ADMIN)
    assert r.status_code == 200, r.text
    assert s.stop() == 0
    time.sleep(max(0, fuse - time.time()) + 0.5)
    s2 = vt(cfg, env={"ADMIN_TOKEN": "t0k"}, workdir=work, wait="listening")
    s2.wait_state("fine", ["published"])
    st = s2.wait_state("bomb", ["failed"])
    assert st["last_error"], st
    assert s2.proc.poll() is None
    assert s2.post("/api/v1/datasets/t/count", {}).json()["count"] == 100
    assert s2.post("/api/v1/datasets/fine/count", {}).json()["count"] == 3
    assert s2.get("/readyz").status_code == 200
    # and the one after that too
    assert s2.stop() == 0
    s3 = vt(cfg, env={"ADMIN_TOKEN": "t0k"}, workdir=work, wait="listening")
    s3.wait_state("fine", ["published"])
    s3.wait_state("bomb", ["failed"])


def test_deleting_a_saved_query_cancels_its_running_build(vt, datadir):
    cfg = base_config(datadir, extra="[server.startup]\nmax_concurrent = 1\n")
    s = vt(cfg, env={"ADMIN_TOKEN": "t0k"})
    slow = "SELECT count(*) AS n FROM range(100000000000) r(i) WHERE i % 7 = 3"
    r = s.post("/api/v1/queries?async=true", {"name": "slow", "sql": slow}, headers=ADMIN)
    assert r.status_code == 202, r.text
    s.wait_state("slow", ["building"])
    time.sleep(0.5)  # running on the one builder
    r = requests.delete(s.url("/api/v1/queries/slow"), headers=ADMIN, timeout=30)
    assert r.status_code == 200, r.text
    # The only builder is free again: a new saved query builds at once.
    t0 = time.monotonic()
    r = s.post("/api/v1/queries", {"name": "quick", "sql": "SELECT 1 AS one"}, headers=ADMIN,
               timeout=60)
    took = time.monotonic() - t0
    assert r.status_code == 200, r.text
    assert took < 10, took
    deadline = time.time() + 10
    while "cancelled: the dataset was deleted" not in s.log() and time.time() < deadline:
        time.sleep(0.05)
    assert "build of slow cancelled: the dataset was deleted" in s.log()
    assert s.get("/api/v1/datasets/slow/status").status_code == 404
