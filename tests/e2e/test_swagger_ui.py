"""Swagger UI in a real browser (Debian's headless Chromium driven by npm
playwright-core, tests/e2e/browser/swagger_try.mjs): the page served at
swagger.path (under server.prefix) loads with no console error and no failed
request (CSP included), lists the operations of the generated document, and
"Try it out" runs a query against the running server: 200 with the rows."""
import json
import subprocess

import requests
from pathlib import Path

from conftest import dataset_block, server_block, write_parquet

E2E = Path(__file__).resolve().parent


def try_it(url, op, params, body):
    r = subprocess.run(["node", str(E2E / "browser" / "swagger_try.mjs"), url, op,
                        json.dumps(params), json.dumps(body) if body is not None else ""],
                       capture_output=True, text=True, timeout=180, cwd=E2E)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_try_it_out_runs_a_query(vt, datadir):
    write_parquet(datadir / "trips.parquet",
                  "SELECT range AS trip_id, ['card', 'cash'][range % 2 + 1] AS payment, "
                  "round(range * 1.25, 2) AS fare FROM range(500)")
    s = vt(server_block(prefix="/svc") + "[metrics]\nenabled = true\n"
           + dataset_block("trips", datadir / "trips.parquet"))
    out = try_it(s.url("/docs/"), "postApiV1DatasetsNameQuery", {"name": "trips"},
                 {"predicates": [{"col": "payment", "op": "eq", "val": "cash"}],
                  "order_by": [{"col": "fare", "dir": "desc"}], "page_size": 3})
    assert "exception" not in out, out
    assert out["errors"] == [] and out["failed"] == [], out
    assert out["title"] == "vitrine API"
    assert out["operations"] >= 20
    assert out["status"] == 200 and out["shown_status"] == "200", out
    body = json.loads(out["body"])
    assert body["page_size"] == 3
    assert [r["trip_id"] for r in body["data"]] == [499, 497, 495]
    # the request went through the server like any other (and was counted)
    m = requests.get(s.base + "/metrics", timeout=10).text
    assert 'route="/api/v1/datasets/{name}/query",method="POST",status="200"} 1' in m


def test_try_it_out_count_with_default_swagger_path(vt, datadir):
    write_parquet(datadir / "t.parquet", "SELECT range AS id FROM range(42)")
    s = vt(server_block() + dataset_block("t", datadir / "t.parquet"))
    out = try_it(s.url("/docs/"), "postApiV1DatasetsNameCount", {"name": "t"},
                 {"predicates": [{"col": "id", "op": "lt", "val": 10}]})
    assert "exception" not in out, out
    assert out["errors"] == [] and out["failed"] == [], out
    assert out["status"] == 200 and json.loads(out["body"]) == {"count": 10}
