"""Probes: /healthz, /health, /readyz, /version, with and without a prefix."""
import re

from conftest import dataset_block, server_block, write_parquet


def test_healthz_and_health(vt):
    s = vt(server_block())
    for path in ("/healthz", "/health"):
        r = s.get(path)
        assert r.status_code == 200
        assert r.headers["Content-Type"].startswith("application/json")
        assert r.json() == {"status": "ok"}


def test_readyz_counts_registered_datasets(vt, datadir):
    write_parquet(datadir / "a.parquet", "SELECT 1 AS x")
    write_parquet(datadir / "b.parquet", "SELECT 2 AS y")
    s = vt(server_block() + dataset_block("a", datadir / "a.parquet")
           + dataset_block("b", datadir / "b.parquet"))
    r = s.get("/readyz")
    assert r.status_code == 200
    assert r.json() == {"status": "ready", "datasets": 2}


def test_readyz_with_no_datasets_is_ready(vt):
    s = vt(server_block())
    assert s.get("/readyz").json() == {"status": "ready", "datasets": 0}


def test_readyz_503_when_every_dataset_failed(vt, datadir):
    bad = datadir / "bad.parquet"
    bad.write_bytes(b"PAR1 this is not a parquet file PAR1")
    s = vt(server_block() + dataset_block("bad", bad), wait="listening")
    s.wait_state("bad", ["failed"])
    r = s.get("/readyz")
    assert r.status_code == 503
    assert r.json() == {"status": "not_ready", "datasets": 0}


def test_version(vt):
    s = vt(server_block())
    v = s.get("/version").json()
    assert v["name"] == "vitrine"
    assert re.fullmatch(r"\d+\.\d+\.\d+", v["version"])
    assert v["backend"] == "DuckDB"
    assert v["profile"] in ("debug", "release")
    for optional in ("git_sha", "build_time", "target"):
        if optional in v:
            assert isinstance(v[optional], str) and v[optional]


def test_probes_mount_under_prefix(vt):
    s = vt(server_block(prefix="/data/api"))
    assert s.get("/healthz").status_code == 200          # s.url adds the prefix
    assert s.get("/readyz").status_code == 200
    import requests
    assert requests.get(f"{s.base}/healthz").status_code == 404
    assert requests.get(f"{s.base}/data/apihealthz").status_code == 404
    r = requests.get(f"{s.base}/api/v1/datasets")
    assert r.status_code == 404
    assert r.json()["code"] == "not_found"
