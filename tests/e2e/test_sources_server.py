"""Delta and S3 datasets served by the real vitrine binary: the same data
registered from local files and from S3 (moto) must answer queries with the
same rows; an empty Delta table and an S3 source that denies access are
skipped at startup without failing the others.

(Every table of the shared Delta corpus registered at once, in all four
modes, is test_delta_corpus.py.)
"""
import os
from pathlib import Path

import pytest

from conftest import delta_corpus, server_block, sql, write_parquet
from s3_fixtures import moto  # noqa: F401 (fixture)


def corpus_dir():
    return delta_corpus()


def block(name, kind, location, s3=None, **extra):
    lines = ["[[dataset]]", f'name = "{name}"', f'source.kind = "{kind}"',
             f'source.location = "{location}"']
    if s3:
        lines += [f's3.endpoint = "{s3}"', 's3.addressing_style = "path"',
                  "s3.allow_http = true", 's3.region = "us-east-1"']
    for k, v in extra.items():
        lines.append(f"{k} = {'true' if v is True else 'false' if v is False else repr(v)}")
    return "\n".join(lines) + "\n"


def all_rows(srv, name, order, tmp_path):
    """Every row of a dataset, through its whole-dataset Parquet export."""
    r = srv.get(f"/api/v1/datasets/{name}/parquet")
    assert r.status_code == 200, r.text
    f = tmp_path / f"export-{name}.parquet"
    f.write_bytes(r.content)
    cols = ", ".join(f'"{c}"' for c in order)
    return sql("SET TimeZone = 'UTC'",
               f"SELECT to_json(t)::VARCHAR FROM read_parquet('{f}') t ORDER BY {cols}")


def test_local_and_s3_sources_serve_the_same_rows(vt, moto, tmp_path):
    corpus = corpus_dir()
    if not corpus:
        pytest.fail("Delta corpus not found (expected ../shared/delta-tables)")
    data = tmp_path / "pq"
    write_parquet(data / "a.parquet", "SELECT range AS id, 'r' || range AS s FROM range(100)")
    write_parquet(data / "b.parquet", "SELECT range AS id, 'q' || range AS s FROM range(100, 150)")
    moto.create_bucket("vt-srv")
    moto.upload_file("vt-srv", "pq/a.parquet", data / "a.parquet")
    moto.upload_file("vt-srv", "pq/b.parquet", data / "b.parquet")
    table = "delta-0.8.0-partitioned"
    moto.upload_tree(corpus / table, "vt-srv", f"delta/{table}")
    local_delta = corpus / table          # read in place
    empty = corpus / "delta-0.8-empty"
    ep = moto.endpoint
    config = (server_block()
              + block("pq_local", "parquet", str(data))
              + block("pq_s3", "parquet", "s3://vt-srv/pq/", s3=ep)
              + block("pq_s3_lazy", "parquet", "s3://vt-srv/pq/*.parquet", s3=ep, lazy=True)
              + block("delta_local", "delta", str(local_delta))
              + block("delta_s3", "delta", f"s3://vt-srv/delta/{table}", s3=ep)
              + block("delta_s3_lazy", "delta", f"s3://vt-srv/delta/{table}/", s3=ep, lazy=True)
              + block("delta_local_lazy", "delta", str(local_delta), lazy=True)
              + block("delta_empty", "delta", str(empty)))
    env = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
    srv = vt(config, env=env, wait="listening")
    st = srv.wait_state("pq_s3", ["published", "failed"], timeout=120)
    for name in ("pq_local", "pq_s3", "pq_s3_lazy", "delta_local", "delta_s3", "delta_s3_lazy",
                 "delta_local_lazy"):
        st = srv.wait_state(name, ["published", "failed"], timeout=120)
        assert st["state"] == "published", (name, st, srv.log()[-3000:])
    assert all_rows(srv, "pq_s3", ["id"], tmp_path) == all_rows(srv, "pq_local", ["id"], tmp_path)
    assert all_rows(srv, "pq_s3_lazy", ["id"], tmp_path) == all_rows(srv, "pq_local", ["id"], tmp_path)
    want = all_rows(srv, "delta_local", ["value", "year", "month", "day"], tmp_path)
    assert len(want) == 7
    assert all_rows(srv, "delta_s3", ["value", "year", "month", "day"], tmp_path) == want
    assert all_rows(srv, "delta_s3_lazy", ["value", "year", "month", "day"], tmp_path) == want
    # Lazy Delta: the log's partition values prune files (Server-Timing says
    # how many are read), without changing an answer.
    cases = [([{"col": "year", "op": "eq", "val": "2021"}], 3),
             ([{"col": "month", "op": "in", "val": ["2", "4"]}], 3),
             ([{"col": "year", "op": "eq", "val": "2020"},
               {"col": "day", "op": "between", "val": ["3", "5"]}], 2),
             ([{"col": "day", "op": "is_null"}], 0)]
    for preds, files in cases:
        body = {"predicates": preds, "order_by": [{"col": "value"}]}
        want_rows = srv.post("/api/v1/datasets/delta_local/query", body).json()["data"]
        for name in ("delta_s3_lazy", "delta_local_lazy"):
            r = srv.post(f"/api/v1/datasets/{name}/query", body)
            assert r.status_code == 200 and r.json()["data"] == want_rows, (name, preds, r.text)
            timing = r.headers["Server-Timing"]
            assert f'lazy;desc="files {files}/6 ' in timing, (name, preds, timing)
            c = srv.post(f"/api/v1/datasets/{name}/count", {"predicates": preds}).json()
            assert c == {"count": len(want_rows)}, (name, preds, c)
    schema = srv.get("/api/v1/datasets/delta_s3/schema").json()
    assert [c["name"] for c in schema["columns"]] == ["value", "year", "month", "day"]
    # The empty Delta table was skipped with a warning, the rest still serve.
    assert "delta_empty" in srv.log()
