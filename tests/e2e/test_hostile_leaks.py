"""Information that should not leak (issue 22 item 5).

A token with datasets:manage alone may save queries, but it read the data
through them: a build error quoted the value DuckDB choked on ("Could not
convert string 'v42'"), the binder listed the upstream's columns, and the
row count answered any question asked as a WHERE. And with [auth] on,
anonymous GET /metrics named every dataset and saved query and counted
their failures. Now such a caller gets no row count and no DuckDB text (a
token that also reads gets both), and the metrics need a read scope when
[auth] is on unless metrics.public = true."""
import json

import pytest
import requests

from conftest import dataset_block, server_block, write_parquet
from oidc_issuer import Issuer
from test_auth_bearer import auth_block, bearer, wait_keys


@pytest.fixture
def issuer():
    iss = Issuer()
    yield iss
    iss.close()


def start(vt, datadir, iss, extra=""):
    f = datadir / "t.parquet"
    write_parquet(f, "SELECT range AS id, 'v' || range AS name, range * 1000 AS salary "
                     "FROM range(100)")
    cfg = (server_block(allowed_roots=[datadir]) + auth_block(iss) + extra +
           "[metrics]\nenabled = true\n" + dataset_block("t", f))
    s = vt(cfg, env={"ADMIN_TOKEN": "adm"})
    wait_keys(s)
    return s


def test_a_manage_only_token_learns_nothing_of_the_data(vt, datadir, issuer):
    s = start(vt, datadir, issuer)
    manager = bearer(issuer.token(scope="datasets:manage"))
    both = bearer(issuer.token(scope="datasets:manage datasets:read"))
    admin = {"X-Admin-Token": "adm"}
    leak = "SELECT CAST(name AS INTEGER) AS n FROM t WHERE salary > 41000"
    for headers in (manager, admin):
        r = s.post("/api/v1/queries", {"name": "leak", "sql": leak}, headers=headers)
        assert r.status_code == 400, r.text
        body = json.dumps(r.json())
        assert "v42" not in body and "Could not convert" not in body, body
        assert r.json()["code"] == "query_failed"
        r = s.post("/api/v1/queries", {"name": "cols", "sql": "SELECT nope FROM t"},
                   headers=headers)
        assert r.status_code == 400, r.text
        assert "salary" not in r.text and "name" not in r.json()["error"], r.text
        r = s.post("/api/v1/queries", {"name": "count1",
                                       "sql": "SELECT id FROM t WHERE salary > 98000"},
                   headers=headers)
        assert r.status_code == 200, r.text
        assert "rows" not in r.json(), r.text
        assert r.json()["state"] == "published"
        r = requests.delete(s.url("/api/v1/queries/count1"), headers=headers, timeout=30)
        assert r.status_code == 200, r.text
    # A token that also reads sees what it could read anyway.
    r = s.post("/api/v1/queries", {"name": "leak", "sql": leak}, headers=both)
    assert r.status_code == 400 and "v42" in r.text, r.text
    r = s.post("/api/v1/queries", {"name": "count2",
                                   "sql": "SELECT id FROM t WHERE salary > 98000"}, headers=both)
    assert r.status_code == 200 and r.json()["rows"] == 1, r.text


def test_metrics_need_a_read_scope_with_auth(vt, datadir, issuer):
    s = start(vt, datadir, issuer)
    r = s.get("/metrics")
    assert r.status_code == 401, r.text
    assert "vitrine_dataset" not in r.text
    r = s.get("/metrics", headers=bearer(issuer.token(scope="datasets:read")))
    assert r.status_code == 200 and 'dataset="t"' in r.text


def test_metrics_public_when_asked(vt, datadir, issuer):
    s = start(vt, datadir, issuer, extra="")
    s2_cfg = s.config_path.read_text().replace("[metrics]\nenabled = true\n",
                                               "[metrics]\nenabled = true\npublic = true\n")
    s.stop()
    s2 = vt(s2_cfg, env={"ADMIN_TOKEN": "adm"})
    wait_keys(s2)
    r = s2.get("/metrics")
    assert r.status_code == 200 and 'dataset="t"' in r.text


def test_metrics_public_without_auth(vt, datadir):
    f = write_parquet(datadir / "t.parquet", "SELECT 1 AS id")
    s = vt(server_block() + "[metrics]\nenabled = true\n" + dataset_block("t", f))
    assert s.get("/metrics").status_code == 200
