"""Delta per-file statistics (issue 25 item 4): a lazy Delta dataset plans
with add.stats (numRecords, minValues, maxValues, nullCount) and the log's
partition values instead of reading the files' footers; a file whose add has
no stats falls back to its footer. Pruning shows in Server-Timing (files
read), counts the statistics decide show in the debug log ("count from
statistics"), and every answer is checked against an independent DuckDB
reading of the files. A file with a deletion vector counts numRecords minus
its deleted rows.

The table: four files of ids 0..399 (100 each), partitioned by region (eu:
the first two, us: the others); the second file has ten NULL names; the
last file's add has no stats. Timestamps are written as Spark writes them:
milliseconds with a zone offset, so the maximum is below the largest
microsecond value in the file.
"""
import datetime
import json
import os
import re

import pytest

from conftest import delta_corpus, server_block, sql, write_parquet

T0 = datetime.datetime(2024, 1, 1, 0, 0, 0, 123456, tzinfo=datetime.timezone.utc)
PST = datetime.timezone(datetime.timedelta(hours=-8))


def ts_of(i):
    return T0 + datetime.timedelta(minutes=i)


def spark_ts(dt):
    """Milliseconds (truncated) with the writer's zone offset, as Spark does."""
    local = dt.astimezone(PST)
    return local.strftime("%Y-%m-%dT%H:%M:%S.") + f"{local.microsecond // 1000:03d}-08:00"


def make_table(root):
    log = root / "_delta_log"
    log.mkdir(parents=True)
    schema = {"type": "struct", "fields": [
        {"name": n, "type": t, "nullable": True, "metadata": {}}
        for n, t in (("id", "long"), ("name", "string"), ("amount", "double"),
                     ("ts", "timestamp"), ("region", "string"))]}
    actions = [{"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
               {"metaData": {"id": "t", "format": {"provider": "parquet", "options": {}},
                             "schemaString": json.dumps(schema),
                             "partitionColumns": ["region"], "configuration": {},
                             "createdTime": 0}}]
    files = []
    for k in range(4):
        lo, hi = k * 100, k * 100 + 100
        region = "eu" if k < 2 else "us"
        rel = f"region={region}/part-{k}.parquet"
        name = "CASE WHEN range % 10 = 0 THEN NULL ELSE 'n' || range END" if k == 1 \
            else "'n' || range"
        path = write_parquet(
            root / rel,
            f"SELECT range AS id, {name} AS name, range * 1.5 AS amount, "
            f"TIMESTAMPTZ '{T0.isoformat()}' + range * INTERVAL 1 MINUTE AS ts "
            f"FROM range({lo}, {hi})")
        files.append((path, region))
        add = {"path": rel, "partitionValues": {"region": region},
               "size": os.path.getsize(path), "modificationTime": 0, "dataChange": True}
        if k < 3:
            nulls = 10 if k == 1 else 0
            names = sorted(f"n{i}" for i in range(lo, hi) if not (k == 1 and i % 10 == 0))
            add["stats"] = json.dumps({
                "numRecords": 100,
                "minValues": {"id": lo, "name": names[0], "amount": lo * 1.5,
                              "ts": spark_ts(ts_of(lo))},
                "maxValues": {"id": hi - 1, "name": names[-1], "amount": (hi - 1) * 1.5,
                              "ts": spark_ts(ts_of(hi - 1))},
                "nullCount": {"id": 0, "name": nulls, "amount": 0, "ts": 0}})
        actions.append({"add": add})
    with open(log / f"{0:020d}.json", "w") as out:
        for a in actions:
            out.write(json.dumps(a) + "\n")
    return files


def indep_count(files, where):
    """The count an independent reading gives: DuckDB over the data files
    with their partition values added."""
    parts = " UNION ALL ".join(
        f"SELECT *, '{region}' AS region FROM read_parquet('{p}')" for p, region in files)
    return int(sql("SET TimeZone = 'UTC'",
                   f"SELECT count(*) FROM ({parts}) WHERE {where}")[0][0])


def block(name, location, lazy):
    return "\n".join(["[[dataset]]", f'name = "{name}"', 'source.kind = "delta"',
                      f'source.location = "{location}"', f"lazy = {str(lazy).lower()}"]) + "\n"


def files_read(r):
    m = re.search(r'lazy;desc="files (\d+)/(\d+) ', r.headers.get("Server-Timing", ""))
    assert m, r.headers.get("Server-Timing")
    return int(m.group(1)), int(m.group(2))


def test_lazy_delta_plans_with_log_statistics(vt, tmp_path):
    corpus = delta_corpus()
    if not corpus:
        pytest.fail("Delta corpus not found (expected ../shared/delta-tables)")
    table = tmp_path / "tbl"
    files = make_table(table)
    dv = corpus / "table-with-dv-small"
    config = (server_block(allowed_roots=[str(tmp_path), str(corpus)])
              + block("lazy", table, True) + block("resident", table, False)
              + block("dv_lazy", dv, True))
    s = vt(config, env={"VITRINE_LOG": "debug"})
    log = s.log()
    # The build read one footer: the file whose add has no stats.
    assert re.search(r"dataset lazy: lazy metadata of \d+ bytes \(4 files, 1 footers read", log), \
        log[-3000:]
    assert re.search(r"dataset dv_lazy: lazy metadata of \d+ bytes \(1 files, 0 footers read",
                     log), log[-3000:]

    ts_max2 = ts_of(299).isoformat()  # above the log's (millisecond) maximum of file 2
    cases = [
        # (predicates, SQL of the independent reading, files read)
        ([{"col": "id", "op": "between", "val": [150, 160]}], "id BETWEEN 150 AND 160", 1),
        ([{"col": "id", "op": "eq", "val": 350}], "id = 350", 1),
        ([{"col": "name", "op": "is_null"}], "name IS NULL", 1),
        ([{"col": "name", "op": "eq", "val": "n42"}], "name = 'n42'", 1),
        ([{"col": "ts", "op": "gte", "val": ts_max2}], f"ts >= TIMESTAMPTZ '{ts_max2}'", 2),
        ([{"col": "ts", "op": "lt", "val": ts_of(1).isoformat()}],
         f"ts < TIMESTAMPTZ '{ts_of(1).isoformat()}'", 1),
        ([{"col": "region", "op": "eq", "val": "us"}, {"col": "amount", "op": "gt", "val": 400}],
         "region = 'us' AND amount > 400", 2),
        ([{"col": "id", "op": "lt", "val": 200}], "id < 200", 2),
        ([{"col": "id", "op": "gt", "val": 1000}], "id > 1000", 0),
    ]
    for preds, where, want_files in cases:
        body = {"predicates": preds, "order_by": [{"col": "id"}], "page_size": 1000}
        want = s.post("/api/v1/datasets/resident/query", body).json()["data"]
        assert len(want) == indep_count(files, where), (preds, len(want))
        r = s.post("/api/v1/datasets/lazy/query", body)
        assert r.status_code == 200 and r.json()["data"] == want, (preds, r.text[:500])
        assert files_read(r) == (want_files, 4), (preds, r.headers["Server-Timing"])
        c = s.post("/api/v1/datasets/lazy/count", {"predicates": preds})
        assert c.json() == {"count": len(want)}, (preds, c.text)

    # Counts the statistics decide are answered without reading a data file.
    for preds, want in (([], 400), ([{"col": "id", "op": "lt", "val": 200}], 200),
                        ([{"col": "region", "op": "eq", "val": "eu"},
                          {"col": "name", "op": "is_not_null"}], None),
                        ([{"col": "name", "op": "is_not_null"},
                          {"col": "id", "op": "gte", "val": 200}], 200)):
        before = len(s.log())
        c = s.post("/api/v1/datasets/lazy/count", {"predicates": preds}).json()["count"]
        lines = [line for line in s.log()[before:].splitlines() if "lazy " in line]
        decided = any("count from statistics" in line for line in lines)
        if want is None:
            # eu has the ten NULL names of file 1: only reading can tell.
            assert c == indep_count(files, "region = 'eu' AND name IS NOT NULL") == 190
            assert not decided, lines
        else:
            assert c == want and decided, (preds, c, lines)

    # A file with a deletion vector: numRecords (10) minus its deleted rows.
    before = len(s.log())
    assert s.post("/api/v1/datasets/dv_lazy/count", {}).json() == {"count": 8}
    assert s.post("/api/v1/datasets/dv_lazy/count",
                  {"predicates": [{"col": "value", "op": "gte", "val": 0}]}).json() == {"count": 8}
    assert "count from statistics" in s.log()[before:]
    r = s.post("/api/v1/datasets/dv_lazy/query",
               {"predicates": [{"col": "value", "op": "gt", "val": 9}]})
    assert r.json()["data"] == [] and files_read(r) == (0, 1)
