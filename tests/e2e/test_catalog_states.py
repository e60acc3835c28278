"""Dataset states during rebuilds (spec "States and transitions"): a dataset
being rebuilt reports "building" from enqueue to publish while its previous
generation keeps answering queries; reload-all lists it in `skipped`; a failed
rebuild leaves the previous generation published, with the error and the
failure count in the status."""
import threading
import time

from conftest import dataset_block, server_block, write_parquet

TOKEN = "s3cret-token"
ADMIN = {"X-Admin-Token": TOKEN}

# The rebuilds these tests watch are held in "building" by the server's
# test-only build gate (conftest.BuildGate) until the test has seen what it
# needs: a small table, and no race with the build on a loaded machine.
ROWS = 2000
SELECT = ("SELECT range AS id, md5(range::VARCHAR) AS a, md5((range + 1)::VARCHAR) AS b "
          "FROM range({n})")


def status(s, name):
    r = s.get(f"/api/v1/datasets/{name}/status")
    assert r.status_code == 200, r.text
    return r.json()


def count(s, name):
    r = s.post(f"/api/v1/datasets/{name}/count", {})
    assert r.status_code == 200, r.text
    return r.json()["count"]


def test_reload_reports_building_while_the_old_generation_serves(vt, datadir, build_gate):
    f = write_parquet(datadir / "big.parquet", SELECT.format(n=ROWS))
    s = vt(server_block() + dataset_block("big", f), env={"ADMIN_TOKEN": TOKEN}, gate=build_gate)
    assert status(s, "big")["state"] == "published"
    before = status(s, "big")
    # The next generation has more rows, so an answer tells which one served it.
    write_parquet(f, SELECT.format(n=ROWS + 1))
    build_gate.hold("big")
    done = {}
    t = threading.Thread(target=lambda: done.update(
        r=s.post("/api/v1/datasets/big/reload", headers=ADMIN, timeout=120)))
    t.start()
    seen_building = 0
    skipped_in_reload_all = False
    deadline = time.time() + 60
    while t.is_alive() and time.time() < deadline and \
            not (seen_building >= 3 and skipped_in_reload_all):
        st = status(s, "big")
        if st["state"] == "building":
            seen_building += 1
            # The previous generation answers, in full, while the next builds
            # (held: it cannot be published before the gate opens).
            assert st["rows"] == ROWS
            q = s.post("/api/v1/datasets/big/query",
                       {"columns": ["id"], "order_by": [{"col": "id", "dir": "desc"}],
                        "page_size": 1})
            assert q.status_code == 200, q.text
            assert q.json()["data"] == [{"id": ROWS - 1}]
            assert count(s, "big") == ROWS
            if not skipped_in_reload_all:
                r = s.post("/api/v1/datasets/reload-all", headers=ADMIN)
                assert r.status_code == 202
                body = r.json()
                assert "big" in body["skipped"] and "big" not in body["enqueued"], body
                skipped_in_reload_all = True
        time.sleep(0.02)
    assert t.is_alive(), done  # the held build had not answered
    build_gate.release("big")
    t.join(timeout=120)
    assert done["r"].status_code == 200, done["r"].text
    assert seen_building >= 3 and skipped_in_reload_all
    after = status(s, "big")
    assert after["state"] == "published" and after["rows"] == ROWS + 1
    assert after["refresh_source"] == "manual"
    assert after["last_refresh_at"] != before["last_refresh_at"] or \
        after["last_refresh_duration_ms"] is not None
    assert count(s, "big") == ROWS + 1


def test_reload_all_reports_building_until_published(vt, datadir, build_gate):
    f = write_parquet(datadir / "big.parquet", SELECT.format(n=ROWS))
    small = write_parquet(datadir / "small.parquet", "SELECT 1 AS a")
    s = vt(server_block() + dataset_block("big", f) + dataset_block("small", small),
           env={"ADMIN_TOKEN": TOKEN}, gate=build_gate)
    build_gate.hold("big")
    r = s.post("/api/v1/datasets/reload-all", headers=ADMIN)
    assert r.status_code == 202 and sorted(r.json()["enqueued"]) == ["big", "small"]
    # Enqueued means building at once: no window where it still says published.
    assert status(s, "big")["state"] == "building"
    states = set()
    released = False
    deadline = time.time() + 60
    while time.time() < deadline:
        st = status(s, "big")["state"]
        states.add(st)
        if st == "building":
            assert count(s, "big") == ROWS
            if not released:
                # Seen building while it serves: let the build finish.
                build_gate.release("big")
                released = True
        if st == "published" and "building" in states:
            break
        time.sleep(0.02)
    assert "building" in states, states
    s.wait_state("big", ["published"])
    s.wait_state("small", ["published"])
    # A second reload-all right after the first finished skips nothing.
    r = s.post("/api/v1/datasets/reload-all", headers=ADMIN)
    assert r.json()["skipped"] == []
    s.wait_state("big", ["published"])


def test_failed_rebuild_keeps_the_old_generation_published(vt, datadir):
    f = write_parquet(datadir / "t.parquet", "SELECT range AS a FROM range(10)")
    s = vt(server_block() + dataset_block("t", f), env={"ADMIN_TOKEN": TOKEN})
    f.write_bytes(b"this is not a parquet file" * 100)
    r = s.post("/api/v1/datasets/t/reload", headers=ADMIN)
    assert r.status_code >= 400, r.text
    st = status(s, "t")
    assert st["state"] == "published", st
    assert st["rows"] == 10
    assert st["consecutive_failures"] == 1 and st["last_error"]
    assert count(s, "t") == 10
    r = s.post("/api/v1/datasets/t/reload", headers=ADMIN)
    assert status(s, "t")["consecutive_failures"] == 2
    # A good rebuild clears the failure.
    write_parquet(f, "SELECT range AS a FROM range(12)")
    assert s.post("/api/v1/datasets/t/reload", headers=ADMIN).json()["rows"] == 12
    st = status(s, "t")
    assert st["state"] == "published" and st["consecutive_failures"] == 0
    assert st["last_error"] is None


def test_failed_first_build_is_failed(vt, datadir):
    f = datadir / "bad.parquet"
    f.write_bytes(b"not parquet")
    s = vt(server_block() + dataset_block("bad", f), env={"ADMIN_TOKEN": TOKEN}, wait="listening")
    st = s.wait_state("bad", ["failed"])
    assert st["rows"] == 0 and st["last_error"]
    r = s.post("/api/v1/datasets/bad/query", {})
    assert r.status_code == 503 and r.json()["code"] == "dataset_failed"
    # A reload of a failed dataset builds; while it runs the state is building,
    # and a failure leaves it failed.
    r = s.post("/api/v1/datasets/bad/reload", headers=ADMIN)
    assert r.status_code >= 400
    assert status(s, "bad")["state"] == "failed"
