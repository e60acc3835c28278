"""A Delta table written by hand (Parquet files by DuckDB plus commit JSON)
served by the real binary: a reload picks up a new commit (add + remove), a
table whose log has an unsupported reader feature fails alone, and an empty
table is skipped at startup and is an error on reload."""
import json
import os
import time

from conftest import server_block, write_parquet

TOKEN = "tok"
ADMIN = {"X-Admin-Token": TOKEN}
SCHEMA = {"type": "struct", "fields": [
    {"name": "id", "type": "long", "nullable": True, "metadata": {}},
    {"name": "name", "type": "string", "nullable": True, "metadata": {}},
    {"name": "part", "type": "string", "nullable": True, "metadata": {}}]}


def commit(table, version, actions):
    log = table / "_delta_log"
    log.mkdir(parents=True, exist_ok=True)
    with open(log / f"{version:020d}.json", "w") as f:
        for a in actions:
            f.write(json.dumps(a) + "\n")


def add(table, rel, select, part):
    path = write_parquet(table / rel, select)
    return {"add": {"path": rel, "partitionValues": {"part": part}, "size": os.path.getsize(path),
                    "modificationTime": 0, "dataChange": True}}


def block(name, location):
    return (f'[[dataset]]\nname = "{name}"\nsource.kind = "delta"\n'
            f'source.location = "{location}"\n')


def rows(s, name):
    r = s.post(f"/api/v1/datasets/{name}/query",
               {"order_by": [{"col": "id"}], "page_size": 1000})
    assert r.status_code == 200, r.text
    return [(d["id"], d["name"], d["part"]) for d in r.json()["data"]]


def test_reload_picks_up_new_commit(vt, tmp_path):
    t = tmp_path / "tbl"
    meta = {"metaData": {"id": "t1", "format": {"provider": "parquet", "options": {}},
                         "schemaString": json.dumps(SCHEMA), "partitionColumns": ["part"],
                         "configuration": {}, "createdTime": 0}}
    a1 = add(t, "part=a/f1.parquet", "SELECT range AS id, 'x' || range AS name FROM range(3)", "a")
    a2 = add(t, "part=b/f2.parquet", "SELECT range + 10 AS id, 'y' AS name FROM range(2)", "b")
    commit(t, 0, [{"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}, meta, a1, a2])
    empty = tmp_path / "empty"
    commit(empty, 0, [{"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}, meta])
    feat = tmp_path / "feat"
    commit(feat, 0, [{"protocol": {"minReaderVersion": 3, "minWriterVersion": 7,
                                   "readerFeatures": ["deletionVectors", "catalogManaged"],
                                   "writerFeatures": ["deletionVectors", "catalogManaged"]}},
                      meta])
    s = vt(server_block() + block("d", t) + block("e", empty) + block("f", feat),
           env={"ADMIN_TOKEN": TOKEN})
    assert rows(s, "d") == [(0, "x0", "a"), (1, "x1", "a"), (2, "x2", "a"), (10, "y", "b"),
                            (11, "y", "b")]
    names = [d["name"] for d in s.get("/api/v1/datasets").json()]
    assert "e" not in names and "dataset e skipped" in s.log()
    st = s.get("/api/v1/datasets/f/status").json()
    assert st["state"] == "failed" and "catalogManaged" in st["last_error"]
    assert "deletionVectors" not in st["last_error"]
    assert s.get("/api/v1/datasets/d/status").json()["state"] == "published"
    # version 1: remove f1, add f3 with a null partition value
    a3 = add(t, "part=__HIVE_DEFAULT_PARTITION__/f3.parquet",
             "SELECT 20 AS id, 'z' AS name", None)
    commit(t, 1, [{"remove": {"path": "part=a/f1.parquet", "deletionTimestamp": 0,
                              "dataChange": True}}, a3])
    # served rows do not change before the reload
    assert len(rows(s, "d")) == 5
    r = s.post("/api/v1/datasets/d/reload", headers=ADMIN)
    assert r.status_code == 200 and r.json()["rows"] == 3
    assert rows(s, "d") == [(10, "y", "b"), (11, "y", "b"), (20, "z", None)]
    # a table that becomes empty is an error on reload, and keeps serving
    commit(t, 2, [{"remove": {"path": p, "deletionTimestamp": 0, "dataChange": True}}
                  for p in ("part=b/f2.parquet", "part=__HIVE_DEFAULT_PARTITION__/f3.parquet")])
    r = s.post("/api/v1/datasets/d/reload", headers=ADMIN)
    assert r.status_code == 400 and r.json()["code"] == "source_empty"
    assert len(rows(s, "d")) == 3
