"""The README's first command: `make run` serves examples/datasets.toml over the
sample data of scripts/sample-data.sh. This runs that same config (on a free
port) and the README's "Try it" requests against it, so the front page of the
project cannot drift from what the binary does."""
import json
import os
import subprocess

import shutil

import pytest
import requests

from conftest import BUILD, REPO, Server

CONFIG = REPO / "examples" / "datasets.toml"
COUNTER = REPO / "tests" / "e2e" / "arrow" / "count_ipc.mjs"


def arrow_rows(body):
    """Rows in an Arrow IPC stream, read by the npm apache-arrow reader."""
    out = subprocess.run([shutil.which("node"), str(COUNTER)], input=body, capture_output=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["rows"]


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    build = os.path.relpath(BUILD, REPO)
    subprocess.run([str(REPO / "scripts" / "sample-data.sh"), build], check=True, timeout=300)
    work = tmp_path_factory.mktemp("sample")
    # The Server helper writes its config text into work/datasets.toml; the
    # command line points at the real sample config instead.
    s = Server(work, "", args=["--config", str(CONFIG), "--port", "0"])
    s.start()
    try:
        s.wait_ready(timeout=120)
        yield s
    finally:
        assert s.stop() == 0, s.log()[-4000:]


def post(s, path, body, **kw):
    return requests.post(s.url(path), json=body, timeout=60, **kw)


def test_discovery_and_schema(sample):
    names = [d["name"] for d in sample.get("/api/v1/datasets").json()]
    assert sorted(names) == ["sales", "stations", "trips"]
    cols = {c["name"] for c in sample.get("/api/v1/datasets/trips/schema").json()["columns"]}
    assert {"trip_id", "fare", "payment", "pickup_at"} <= cols


def test_the_readme_queries(sample):
    r = post(sample, "/api/v1/datasets/trips/query", {
        "columns": ["trip_id", "fare"],
        "predicates": [{"col": "payment", "op": "eq", "val": "card"},
                       {"col": "pickup_at", "op": "gte", "val": "2024-01-02T00:00:00"}],
        "order_by": [{"col": "fare", "dir": "desc"}], "page_size": 5})
    assert r.status_code == 200, r.text
    rows = r.json()["data"]
    assert len(rows) == 5
    fares = [float(x["fare"]) for x in rows]
    assert fares == sorted(fares, reverse=True)

    r = post(sample, "/api/v1/datasets/trips/query",
             {"group_by": ["payment"], "aggregations": [{"op": "avg", "col": "fare"}, {"op": "count"}]})
    assert r.status_code == 200, r.text
    assert len(r.json()["data"]) == 3  # cash, card, app

    r = post(sample, "/api/v1/datasets/sales/count",
             {"predicates": [{"col": "region", "op": "in", "val": ["eu", "us"]}]})
    assert r.status_code == 200, r.text
    everything = post(sample, "/api/v1/datasets/sales/count", {}).json()["count"]
    assert 0 < r.json()["count"] < everything


def test_arrow_stream_and_parquet(sample):
    r = requests.post(sample.url("/api/v1/datasets/trips/query?format=arrow"), json={}, timeout=60)
    assert r.status_code == 200 and "arrow" in r.headers["Content-Type"]
    assert arrow_rows(r.content) > 0

    r = post(sample, "/api/v1/datasets/trips/query/stream", {"limit": 100000})
    assert r.status_code == 200
    assert arrow_rows(r.content) == 100000

    r = requests.get(sample.url("/api/v1/datasets/trips/all.parquet"),
                     headers={"Range": "bytes=-8"}, timeout=60)
    assert r.status_code == 206 and r.content[-4:] == b"PAR1"


def test_sql_mcp_and_metrics_are_on_in_the_sample(sample):
    r = post(sample, "/api/v1/sql",
             {"sql": "SELECT payment, count(*) AS n FROM trips GROUP BY payment ORDER BY payment"})
    assert r.status_code == 200, r.text
    assert len(r.json()["data"]) == 3

    r = post(sample, "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                              "params": {"name": "count_rows", "arguments": {"name": "trips"}}},
             headers={"Accept": "application/json, text/event-stream"})
    assert r.status_code == 200, r.text
    result = r.json()["result"]
    assert not result.get("isError")
    assert json.dumps(result["structuredContent"]).find("200000") >= 0

    r = sample.get("/metrics")
    assert r.status_code == 200 and "vitrine_build_info" in r.text


def test_sample_data_script_says_one_thing(tmp_path):
    """`make run` printed ["200000"], ["250"], ["30000"] (vt-sql's answer to
    each COPY) before "sample data in ...": the script's output is that one
    line, and the files are there. Run from a copy of scripts/ beside a link
    to the build, so the checkout's examples/data is left alone."""
    (tmp_path / "scripts").mkdir()
    shutil.copy(REPO / "scripts" / "sample-data.sh", tmp_path / "scripts")
    (tmp_path / "build").symlink_to(BUILD)
    r = subprocess.run([str(tmp_path / "scripts" / "sample-data.sh"), "build"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "examples" / "data"
    assert r.stdout == f"sample data in {out}\n", r.stdout
    assert (out / "trips.parquet").stat().st_size > 0 and (out / "sales").is_dir()
