"""Discovery: the dataset list, status entries and the schema endpoint."""
import re
import time

from conftest import dataset_block, server_block, write_parquet

STATUS_FIELDS = {"name", "state", "kind", "residency", "storage_bytes", "generation_id",
                 "last_refresh_at", "last_refresh_duration_ms", "next_refresh_at",
                 "refresh_source", "consecutive_failures", "last_error", "rows", "columns",
                 "lazy", "depends_on", "index", "delta_version"}
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")
ULID = re.compile(r"^[0-9A-HJKMNP-TV-Z]{26}$")


def typed_table(path):
    return write_parquet(path, """
        SELECT i::INTEGER AS id, 'name-' || i AS name, (i * 1.5)::DOUBLE AS score,
               (i % 2 = 0) AS even, DATE '2024-01-01' + i::INTEGER AS day,
               TIMESTAMP '2024-01-01 10:00:00' + INTERVAL (i) HOUR AS ts,
               (i * 100)::DECIMAL(12, 2) AS amount,
               CASE WHEN i = 1 THEN NULL ELSE i END AS maybe,
               [i, i + 1] AS pair, {'a': i, 'b': 'x'} AS rec, 'blob'::BLOB AS bin
        FROM range(1, 11) t(i)""")


def test_list_has_every_status_field(vt, datadir):
    typed_table(datadir / "t.parquet")
    s = vt(server_block() + dataset_block("typed", datadir / "t.parquet")
           + dataset_block("lazyone", datadir / "t.parquet", lazy=True))
    items = s.get("/api/v1/datasets").json()
    assert [d["name"] for d in items] == ["typed", "lazyone"]
    for d in items:
        assert set(d) == STATUS_FIELDS
        assert d["state"] == "published"
        assert d["kind"] == "parquet"
        assert d["rows"] == 10 and d["columns"] == 11
        assert RFC3339.match(d["last_refresh_at"])
        assert isinstance(d["last_refresh_duration_ms"], int) and d["last_refresh_duration_ms"] >= 0
        assert d["next_refresh_at"] is None
        assert d["refresh_source"] == "startup"
        assert d["consecutive_failures"] == 0
        assert d["last_error"] is None
        assert d["depends_on"] == []
    typed, lazy = items
    # the index fast path (issue 24): state and bytes; lazy data has none
    assert set(typed["index"]) == {"state", "memory_bytes", "disk_bytes", "row_store_bytes",
                                   "sorted_bytes", "json_pages_bytes"}
    assert typed["index"]["state"] in ("building", "ready")
    assert lazy["index"] == {"state": "none", "memory_bytes": 0, "disk_bytes": 0,
                             "row_store_bytes": 0, "sorted_bytes": 0, "json_pages_bytes": 0}
    deadline = time.time() + 30
    while s.get("/api/v1/datasets/typed/status").json()["index"]["state"] != "ready":
        assert time.time() < deadline, "index never built"
        time.sleep(0.05)
    ix = s.get("/api/v1/datasets/typed/status").json()["index"]
    assert ix["memory_bytes"] > 0 and ix["row_store_bytes"] > 0
    assert ix["disk_bytes"] >= ix["row_store_bytes"]
    assert typed["residency"] == "memory" and typed["lazy"] is False
    assert typed["storage_bytes"] is None and typed["generation_id"] is None
    assert lazy["residency"] == "lazy" and lazy["lazy"] is True
    assert ULID.match(lazy["generation_id"])
    assert lazy["storage_bytes"] == (datadir / "t.parquet").stat().st_size


def test_status_of_one_and_unknown(vt, datadir):
    typed_table(datadir / "t.parquet")
    s = vt(server_block() + dataset_block("typed", datadir / "t.parquet"))
    st = s.get("/api/v1/datasets/typed/status").json()
    assert set(st) == STATUS_FIELDS and st["name"] == "typed"
    r = s.get("/api/v1/datasets/nope/status")
    assert r.status_code == 404 and r.json()["code"] == "dataset_not_found"
    r = s.get("/api/v1/datasets/nope/schema")
    assert r.status_code == 404 and r.json()["code"] == "dataset_not_found"


def test_schema_shape_types_and_sample(vt, datadir):
    typed_table(datadir / "t.parquet")
    s = vt(server_block() + dataset_block("typed", datadir / "t.parquet"))
    sc = s.get("/api/v1/datasets/typed/schema").json()
    assert set(sc) == {"name", "rows", "columns", "indexed", "sample"}
    assert sc["name"] == "typed" and sc["rows"] == 10
    cols = {c["name"]: c for c in sc["columns"]}
    assert [c["name"] for c in sc["columns"]] == ["id", "name", "score", "even", "day", "ts",
                                                   "amount", "maybe", "pair", "rec", "bin"]
    expect = {"id": ("INTEGER", "int"), "name": ("VARCHAR", "string"),
              "score": ("DOUBLE", "float"), "even": ("BOOLEAN", "bool"),
              "day": ("DATE", "date"), "ts": ("TIMESTAMP", "timestamp"),
              "amount": ("DECIMAL(12,2)", "decimal"), "maybe": ("BIGINT", "int"),
              "pair": ("BIGINT[]", "list"), "bin": ("BLOB", "binary")}
    for name, (typ, logical) in expect.items():
        assert cols[name]["type"] == typ, name
        assert cols[name]["logical"] == logical, name
        assert isinstance(cols[name]["nullable"], bool)
    assert cols["rec"]["logical"] == "struct"
    assert isinstance(sc["indexed"], list)
    sample = sc["sample"]
    assert set(sample) == set(cols)
    assert sample["name"].startswith("name-")
    assert sample["pair"][1] == sample["pair"][0] + 1
