"""Atomic reload (spec: hot reload is atomic for readers; rule 9: every row
set is delivered against a snapshot): datasets whose rows carry a version
marker column `v` (v = 1 in every row of version 1, v = 2 in version 2) with
different row counts."""
import os
import shutil
import uuid
from pathlib import Path

import pytest

from conftest import dataset_block, server_block, sql

HERE = Path(__file__).resolve().parent
SUMMARY = HERE / "arrow" / "column_summary.mjs"
TOKEN = "atomicity-token"
ADMIN = {"X-Admin-Token": TOKEN}
ROWS = {1: 50_000, 2: 80_000}
BY_ROWS = {n: v for v, n in ROWS.items()}
LOAD_SECONDS = float(os.environ.get("VT_ATOMICITY_SECONDS", "5"))
LOAD_THREADS = 5
MEMORY_RELOADS = int(os.environ.get("VT_ATOMICITY_RELOADS", "30"))


def version_select(v):
    return (f"SELECT range AS id, {v} AS v, 'c' || (range % 5) AS cat, range * 0.5 AS x, "
            f"'pad-' || range AS pad FROM range({ROWS[v]})")


def write_version(path, v):
    """vt-sql writes the version to a temp name beside `path`; a rename puts
    it in place (a reader never sees a half-written file)."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    sql(f"COPY ({version_select(v)}) TO '{tmp}' (FORMAT parquet)")
    os.replace(tmp, path)


@pytest.mark.parametrize("runtime_fs", ["same", "other"])
def test_lazy_generation_keeps_the_files_it_was_built_from(vt, datadir, tmp_path, runtime_fs):
    """A lazy generation reads its files at query time; replacing the source
    files (temp name + rename) or deleting them must not change the rows of the
    generation in use: only a reload publishes new files (rule 9, snapshots).
    A hive layout keeps its partition column. With the runtime directory on
    the data's file system the generation hard-links its files; on another
    one (/dev/shm, tmpfs) it keeps them open."""
    runtime = tmp_path / "runtime" if runtime_fs == "same" else Path("/dev/shm") / f"vt-{uuid.uuid4().hex}"
    runtime.mkdir()
    same_fs = os.stat(runtime).st_dev == os.stat(datadir).st_dev
    assert same_fs == (runtime_fs == "same"), (runtime, datadir)
    parts = {p: datadir / "lz" / f"part={p}" / "data.parquet" for p in (0, 1)}

    def write_all(v):
        for p, f in parts.items():
            f.parent.mkdir(parents=True, exist_ok=True)
            tmp = f.with_name(f".{uuid.uuid4().hex}.tmp")
            sql(f"COPY (SELECT * FROM ({version_select(v)}) WHERE id % 2 = {p}) TO '{tmp}' (FORMAT parquet)")
            os.replace(tmp, f)

    try:
        write_all(1)
        s = vt(server_block() + dataset_block("lz", datadir / "lz", lazy=True),
               env={"ADMIN_TOKEN": TOKEN, "TMPDIR": str(runtime)})

        def versions():
            return s.post("/api/v1/datasets/lz/query", {"group_by": ["v"]}).json()["data"]

        by_part = {"group_by": ["part"], "order_by": [{"col": "part"}]}
        half = ROWS[1] // 2
        assert s.post("/api/v1/datasets/lz/query", by_part).json()["data"] == [
            {"part": 0, "count": half}, {"part": 1, "count": half}]
        assert versions() == [{"v": 1, "count": ROWS[1]}]
        pinned = [p for p in runtime.glob("vitrine-*/downloads/lazy-*/**/*.parquet")]
        assert len(pinned) == 2, list(runtime.rglob("*"))
        if same_fs:
            assert all(not p.is_symlink() and p.stat().st_nlink == 2 for p in pinned), pinned
        else:
            assert all(os.readlink(p).startswith("/proc/self/fd/") for p in pinned), pinned
        write_all(2)
        assert versions() == [{"v": 1, "count": ROWS[1]}]
        assert s.post("/api/v1/datasets/lz/count", {}).json() == {"count": ROWS[1]}
        export = s.get("/api/v1/datasets/lz/parquet")
        assert export.status_code == 200
        (datadir / "export.parquet").write_bytes(export.content)
        assert sql(f"SELECT count(*), min(v), max(v) FROM '{datadir / 'export.parquet'}'") == [
            [str(ROWS[1]), "1", "1"]]
        for f in parts.values():
            f.unlink()  # even deleted sources keep serving the generation
        assert versions() == [{"v": 1, "count": ROWS[1]}]
        write_all(2)
        assert s.post("/api/v1/datasets/lz/reload", headers=ADMIN).json()["rows"] == ROWS[2]
        assert versions() == [{"v": 2, "count": ROWS[2]}]
        assert s.post("/api/v1/datasets/lz/query", by_part).json()["data"] == [
            {"part": 0, "count": ROWS[2] // 2}, {"part": 1, "count": ROWS[2] // 2}]
        assert "cannot pin" not in s.log()
        assert s.stop() == 0
        assert not list(runtime.iterdir()), "runtime directory left behind"
    finally:
        if runtime_fs == "other":
            shutil.rmtree(runtime, ignore_errors=True)
