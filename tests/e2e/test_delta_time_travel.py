"""Delta time travel (issue 25 item 5): source.version and source.timestamp
pin a dataset to a table version, in the config file and in a registration
(and a persisted block keeps the pin); /status says which Delta version each
dataset serves; a reload of a pinned dataset serves the same version while
the latest moves on; a version that does not exist, or one whose history was
cleaned up, fails naming it.

table-with-dv-small: version 0 (10 rows, 0..9, committed 2023-03-03T02:39:38Z)
and version 1 (a DELETE through a deletion vector: 8 rows, 1..8).
"""
import json
import os
import shutil

import pytest

from conftest import delta_corpus, server_block, write_parquet

TOKEN = "tok"
ADMIN = {"X-Admin-Token": TOKEN}


def block(name, location, lazy=False, **source):
    lines = ["[[dataset]]", f'name = "{name}"', 'source.kind = "delta"',
             f'source.location = "{location}"']
    lines += [f"source.{k} = {json.dumps(v)}" for k, v in source.items()]
    if lazy:
        lines.append("lazy = true")
    return "\n".join(lines) + "\n"


def values(s, name):
    r = s.post(f"/api/v1/datasets/{name}/query", {"order_by": [{"col": "value"}]})
    assert r.status_code == 200, r.text
    return [row["value"] for row in r.json()["data"]]


def status(s, name):
    return s.get(f"/api/v1/datasets/{name}/status").json()


def test_version_and_timestamp_pins(vt, tmp_path):
    corpus = delta_corpus()
    if not corpus:
        pytest.fail("Delta corpus not found (expected ../shared/delta-tables)")
    dv = corpus / "table-with-dv-small"
    # A copy that gains a version 2 while the server runs.
    t = tmp_path / "tbl"
    shutil.copytree(dv, t)
    config = (server_block(allowed_roots=[str(corpus), str(tmp_path)])
              + block("latest", dv) + block("v0", dv, version=0)
              + block("v0_lazy", dv, lazy=True, version=0)
              + block("at_first", dv, timestamp="2023-03-03T02:39:40Z")
              + block("at_second", dv, timestamp="2023-03-04")
              + block("pinned", t, version=1) + block("moving", t)
              + block("no_such", dv, version=5)
              + block("too_early", dv, timestamp="2020-01-01T00:00:00+02:00")
              + block("vacuumed", corpus / "checkpoint-cdf-table", version=1))
    s = vt(config, env={"ADMIN_TOKEN": TOKEN})
    assert values(s, "latest") == list(range(1, 9))
    assert values(s, "v0") == list(range(10))
    assert values(s, "v0_lazy") == list(range(10))
    assert s.post("/api/v1/datasets/v0_lazy/count", {}).json() == {"count": 10}
    assert values(s, "at_first") == list(range(10))
    assert values(s, "at_second") == list(range(1, 9))
    for name, version in (("latest", 1), ("v0", 0), ("v0_lazy", 0), ("at_first", 0),
                          ("at_second", 1)):
        assert status(s, name)["delta_version"] == version, name
    assert s.get("/api/v1/datasets").json()[0]["delta_version"] in (0, 1)
    st = status(s, "no_such")
    assert st["state"] == "failed" and "no version 5 (the latest is 1)" in st["last_error"], st
    st = status(s, "too_early")
    assert st["state"] == "failed" and "no version was committed at or before" in st["last_error"]
    st = status(s, "vacuumed")
    assert st["state"] == "failed" and "version 1 is not available" in st["last_error"], st

    # Version 2 arrives (every row deleted but 5, through a file rewrite):
    # the pinned dataset reloads to the same rows, the other moves on.
    f = write_parquet(t / "v2.parquet", "SELECT 5::INTEGER AS value")
    with open(t / "_delta_log" / f"{2:020d}.json", "w") as out:
        for a in ({"remove": {"path": "part-00000-fae5310a-a37d-4e51-827b-c3d5516560ca-c000"
                                      ".snappy.parquet", "dataChange": True,
                              "deletionVector": json.loads(
                                  (dv / "_delta_log" / f"{1:020d}.json").read_text()
                                  .splitlines()[2])["add"]["deletionVector"]}},
                  {"add": {"path": "v2.parquet", "partitionValues": {}, "dataChange": True,
                           "size": os.path.getsize(f), "modificationTime": 0}},
                  {"commitInfo": {"timestamp": 1700000000000}}):
            out.write(json.dumps(a) + "\n")
    for name in ("pinned", "moving"):
        assert s.post(f"/api/v1/datasets/{name}/reload", headers=ADMIN).status_code == 200
    assert values(s, "pinned") == list(range(1, 9)) and status(s, "pinned")["delta_version"] == 1
    assert values(s, "moving") == [5] and status(s, "moving")["delta_version"] == 2

    # Registration takes the same fields; persist writes the pin back.
    body = {"name": "reg", "source": {"kind": "delta", "location": str(dv), "version": 0}}
    r = s.post("/api/v1/datasets", body, headers=ADMIN)
    assert r.status_code == 200 and r.json()["rows"] == 10, r.text
    assert status(s, "reg")["delta_version"] == 0
    bad = {"name": "reg2", "source": {"kind": "parquet", "location": str(dv), "version": 0}}
    r = s.post("/api/v1/datasets", bad, headers=ADMIN)
    assert r.status_code == 400 and "only allowed for kind" in r.text, r.text
    both = {"name": "reg3", "source": {"kind": "delta", "location": str(dv), "version": 0,
                                       "timestamp": "2023-03-04"}}
    r = s.post("/api/v1/datasets", both, headers=ADMIN)
    assert r.status_code == 400 and "not both" in r.text, r.text
    r = s.post("/api/v1/datasets/persist",
               {"name": "kept", "source": {"kind": "delta", "location": str(dv),
                                           "timestamp": "2023-03-03T02:39:40Z"}},
               headers=ADMIN)
    assert r.status_code == 200, r.text
    assert 'timestamp = "2023-03-03T02:39:40Z"' in s.config_path.read_text()
    r = s.post("/api/v1/config/reload", headers=ADMIN)
    assert r.status_code == 200 and r.json()["registered"] == ["kept"], r.text
    assert values(s, "kept") == list(range(10))
