"""The Explorer and the docs site in a real browser: Debian's headless
Chromium driven by playwright-core (tests/e2e/explorer/drive.mjs). Each test
starts vitrine, lets the page do what a person would (build a query, chart a
group-by, register, reload, save, sign in), and checks what the page showed
and sent against the server's own answers and state.

Screenshots of every tab go to tests/e2e/artifacts/explorer/ (git-ignored).
"""
import base64
import csv
import urllib.parse
from decimal import Decimal
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import threading
import time

import pytest

from conftest import dataset_block, server_block, write_parquet
from explorer.browser import SHOTS, console_errors, drive, one_browser
from explorer.issuer import Issuer

TOKEN = "adm-7f3c9e1b2d4a6058-explorer"
ADMIN = {"X-Admin-Token": TOKEN}


@pytest.fixture(scope="module", autouse=True)
def browser():
    """One Chromium for the module's scenarios (each in a new context)."""
    with one_browser():
        yield


@pytest.fixture(scope="module")
def trips(tmp_path_factory):
    d = tmp_path_factory.mktemp("explorer-data")
    write_parquet(d / "trips.parquet", """
        SELECT i AS trip_id,
               TIMESTAMP '2024-01-01 00:00:00' + INTERVAL (i * 7) MINUTE AS pickup_at,
               ['card', 'cash', 'app'][1 + i % 3] AS payment,
               CAST(5 + (i * 37 % 4000) / 100.0 AS DECIMAL(10, 2)) AS fare,
               (i % 50) / 4.0 + 0.25 AS distance_km,
               CASE WHEN i % 11 = 0 THEN NULL ELSE i % 4 + 1 END AS passengers
        FROM range(600) t(i)""")
    write_parquet(d / "extra.parquet", "SELECT range AS id, range * 2 AS twice FROM range(42)")
    return d


def explorer_config(trips, **server):
    return (server_block(**server) + dataset_block("trips", trips / "trips.parquet")
            + dataset_block("stations", trips / "extra.parquet"))


def exact(r):
    """An API answer with its numbers as written (Decimal): the page shows
    42.40 as 42.40 (issue 21 item 8), not as the float 42.4."""
    return json.loads(r.text, parse_float=Decimal)


def js_text(v):
    """A JSON value as the page prints it: the server's own text for numbers,
    String(v) in JavaScript otherwise."""
    if v is None:
        return "null"
    if isinstance(v, Decimal):
        return str(v)
    if v is True or v is False:
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    if isinstance(v, (dict, list)):
        return json.dumps(v, separators=(",", ":"), default=str)
    return str(v)


def as_table(rows, columns):
    return [columns] + [[js_text(r[c]) for c in columns] for r in rows]


def test_tabs_load_without_console_errors(vt, trips):
    s = vt(explorer_config(trips) + "[sql]\nenabled = true\n")
    out = drive("tabs", url=s.url("/explore/"), dataset="trips")
    assert console_errors(out) == [], out["console"]
    assert "trips" in out["tabs"]["datasets"] and "published" in out["tabs"]["datasets"]
    assert "payment" in out["tabs"]["dataset-detail"] and "DECIMAL(10,2)" in out["tabs"]["dataset-detail"]
    assert "Request JSON" in out["tabs"]["query"] and "Predicates" in out["tabs"]["query"]
    assert "Run SQL" in out["tabs"]["sql"]
    assert "Register" in out["tabs"]["register"]
    # keyboard: arrows move between tabs and keep focus on the tab list
    assert out["afterRight"] == "#/datasets" and out["afterLeft"] == "#/register"
    assert out["focused"] == "tab-register"
    assert out["fastArrows"][0].startswith("#/query") and out["fastArrows"][1] == "tab-query", \
        out["fastArrows"]
    assert out["firstTab"] == "Skip to content"
    # phone width: nothing wider than the screen (tables scroll inside their box)
    assert out["phone_datasets_overflow"] <= 0 and out["phone_query_overflow"] <= 0
    for name in ("datasets", "dataset-detail", "query", "sql", "register", "phone-datasets",
                 "phone-query"):
        assert (SHOTS / f"explorer-{name}.png").stat().st_size > 1000


def test_state_badges_are_polled_while_building(vt, tmp_path, build_gate):
    # Datasets left pending (on_start = "lazy") until the page has listed
    # them; then a query from here, not from the page, builds one: its badge
    # must move to published by itself (the page polls while any dataset is
    # pending or building). Started by the page's own list call, so the order
    # holds on a loaded machine too. The builds are held in "building" (the
    # test-only build gate) until the page has listed them again.
    cfg = server_block()
    for i in range(2):
        p = write_parquet(tmp_path / f"big{i}.parquet",
                          f"SELECT range AS id, range % 977 AS k, md5(range::VARCHAR) AS h "
                          f"FROM range({2_000 + i})")
        cfg += dataset_block(f"big{i}", p, on_start="lazy")
        build_gate.hold(f"big{i}")
    s = vt(cfg, wait="listening", gate=build_gate)
    lists = "GET /api/v1/datasets 200"

    def build_after_the_page_listed():
        deadline = time.time() + 120
        while time.time() < deadline and lists not in s.log():
            time.sleep(0.05)
        counts = [threading.Thread(target=s.post, args=(f"/api/v1/datasets/big{i}/count", {}),
                                   kwargs={"timeout": 120}) for i in range(2)]
        for c in counts:
            c.start()
        while time.time() < deadline and any(
                s.get(f"/api/v1/datasets/big{i}/status").json()["state"] != "building"
                for i in range(2)):
            time.sleep(0.05)
        listed = s.log().count(lists)
        while time.time() < deadline and s.log().count(lists) == listed:
            time.sleep(0.05)
        for i in range(2):
            build_gate.release(f"big{i}")
        for c in counts:
            c.join(120)

    t = threading.Thread(target=build_after_the_page_listed)
    t.start()
    out = drive("polling", url=s.url("/explore/"))
    t.join(120)
    assert console_errors(out) == [], out["console"]
    assert any(state in ("pending", "building") for _, state in out["first"]), out["first"]
    assert sorted(out["last"]) == [[f"big{i}", "published"] for i in range(2)]
    assert out["listCalls"] >= 2  # polled, nobody clicked


def test_builder_query_matches_the_api(vt, trips):
    s = vt(explorer_config(trips))
    build = {"columns": ["trip_id", "payment", "fare"],
             "predicates": [{"col": "payment", "op": "in", "val": "card, app"},
                            {"col": "fare", "op": "between", "val": "10", "val2": "40.5"},
                            {"col": "pickup_at", "op": "gte", "val": "2024-01-01T05:00:00"},
                            {"col": "passengers", "op": "is_not_null"}],
             "order": [{"col": "fare", "dir": "desc"}, {"col": "trip_id", "dir": "asc"}],
             "page_size": 7}
    bad = {"columns": ["no_such_column"]}
    out = drive("builder", url=s.url("/explore/"), dataset="trips", build=build, badRequest=bad)
    errors = console_errors(out, expected=[("/api/v1/datasets/trips/query", 400)])
    assert len(out["console"]) - len(errors) == 1  # the bad request
    assert errors == [], out["console"]
    expected = {"columns": ["trip_id", "payment", "fare"],
                "predicates": [{"col": "payment", "op": "in", "val": ["card", "app"]},
                               {"col": "fare", "op": "between", "val": [10, 40.5]},
                               {"col": "pickup_at", "op": "gte", "val": "2024-01-01T05:00:00"},
                               {"col": "passengers", "op": "is_not_null"}],
                "order_by": [{"col": "fare", "dir": "desc"}, {"col": "trip_id", "dir": "asc"}],
                "page_size": 7}
    assert json.loads(out["requestText"]) == expected  # the JSON shown is the JSON sent
    assert json.loads(out["sentBody"]) == expected
    api = exact(s.post("/api/v1/datasets/trips/query", expected))
    assert len(api["data"]) == 7
    assert out["page1"] == as_table(api["data"], expected["columns"])
    assert re.search(r"first byte [\d.]+ ms.*total [\d.]+ ms.*\d+ B.*7 rows", out["timing"]), out["timing"]
    # paging: page 2 of the same request
    assert json.loads(out["page2Body"]) == dict(expected, page=2)
    api2 = exact(s.post("/api/v1/datasets/trips/query", dict(expected, page=2)))
    assert out["page2"] == as_table(api2["data"], expected["columns"])
    assert out["page2"] != out["page1"]
    # Arrow: the same rows decoded in the page from the IPC stream
    assert "format=arrow" in out["arrowUrl"]
    assert out["arrowAccept"] == "application/vnd.apache.arrow.stream"
    assert out["arrowPage"] == out["page2"]
    # the API's error with its message and code
    err = s.post("/api/v1/datasets/trips/query", bad).json()
    assert err["error"] in out["errorText"] and err["code"] in out["errorText"]
    # downloads: CSV and JSON of the page shown, Parquet of the whole dataset
    small = exact(s.post("/api/v1/datasets/trips/query", {"page_size": 3, "order_by": [{"col": "fare"}]}))
    cols = list(small["data"][0].keys())
    got_csv = list(csv.reader(io.StringIO(base64.b64decode(out["downloads"]["csv"]["b64"]).decode())))
    assert got_csv == [cols] + [["" if r[c] is None else js_text(r[c]) for c in cols] for r in small["data"]]
    assert json.loads(base64.b64decode(out["downloads"]["json"]["b64"]), parse_float=Decimal) == small["data"]
    assert out["downloads"]["parquet"]["name"] == "trips.parquet"
    parquet = s.get("/api/v1/datasets/trips/all.parquet").content
    assert base64.b64decode(out["downloads"]["parquet"]["b64"]) == parquet


def test_builder_distinct_limit_and_having(vt, trips):
    s = vt(explorer_config(trips))
    cases = [
        ({"columns": ["payment", "passengers"], "distinct": True, "limit": 5,
          "order": [{"col": "payment", "dir": "desc"}, {"col": "passengers", "dir": "asc"}]},
         {"columns": ["payment", "passengers"], "order_by": [{"col": "payment", "dir": "desc"},
                                                             {"col": "passengers", "dir": "asc"}],
          "distinct": True, "limit": 5, "page_size": 100}),
        ({"group": ["passengers"], "aggs": [{"op": "max", "col": "fare"}, {"op": "count"}],
          "having": [{"col": "count", "op": "gt", "val": "100"}],
          "order": [{"col": "passengers", "dir": "asc"}]},
         {"order_by": [{"col": "passengers", "dir": "asc"}], "group_by": ["passengers"],
          "aggregations": [{"op": "max", "col": "fare"}, {"op": "count"}],
          "having": [{"col": "count", "op": "gt", "val": 100}], "page_size": 100}),
    ]
    for build, expected in cases:
        out = drive("build", url=s.url("/explore/"), dataset="trips", build=build)
        assert console_errors(out) == [], out["console"]
        assert json.loads(out["sentBody"]) == expected
        api = exact(s.post("/api/v1/datasets/trips/query", expected))["data"]
        assert api and out["table"] == as_table(api, list(api[0].keys()))


def test_group_by_is_charted(vt, trips):
    s = vt(explorer_config(trips))
    build = {"group": ["payment"], "aggs": [{"op": "avg", "col": "fare", "alias": "avg_fare"},
                                            {"op": "count"}],
             "order": [{"col": "payment", "dir": "asc"}]}
    out = drive("chart", url=s.url("/explore/"), dataset="trips", build=build)
    assert console_errors(out) == [], out["console"]
    req = json.loads(out["sentBody"])
    assert req["group_by"] == ["payment"]
    assert req["aggregations"] == [{"op": "avg", "col": "fare", "alias": "avg_fare"}, {"op": "count"}]
    api = exact(s.post("/api/v1/datasets/trips/query", req))["data"]
    assert out["table"] == as_table(api, ["payment", "avg_fare", "count"])
    for kind in ("bar", "line"):
        c = out[kind]
        assert c["width"] > 100 and c["height"] > 100
        assert c["painted"] > 2000, (kind, c)  # axes, labels and bars/lines were drawn
        assert c["label"] == f"{kind} chart of avg_fare, count by payment"
    assert out["bar"]["painted"] != out["line"]["painted"]


def test_admin_actions_through_the_ui_and_token_hygiene(vt, trips, tmp_path):
    # Registrations read only below the allowed roots (the data is not beside
    # the config file here).
    s = vt(explorer_config(trips, allowed_roots=[trips]), env={"ADMIN_TOKEN": TOKEN})
    before = {d["name"]: d for d in s.get("/api/v1/datasets").json()}
    reg = {"name": "extra_ui", "location": str(trips / "extra.parquet")}
    per = {"name": "kept_ui", "location": str(trips / "extra.parquet")}
    out = drive("admin", url=s.url("/explore/"), dataset="trips", token=TOKEN, register=reg,
                persist=per)
    assert console_errors(out) == [], out["console"]
    # register: the server has it, with the rows the page reported
    assert out["register"]["error"] is None, out["register"]
    assert "Registered extra_ui: 42 rows, 2 columns" in out["register"]["notice"]
    st = s.get("/api/v1/datasets/extra_ui/status").json()
    assert st["state"] == "published" and st["rows"] == 42
    # persist: the block is in the config file
    assert out["persist"]["error"] is None, out["persist"]
    assert f"Persisted kept_ui to {s.config_path}" in out["persist"]["notice"]
    assert 'name = "kept_ui"' in s.config_path.read_text()
    # reload: a manual refresh of trips
    assert "Reloaded trips: 600 rows" in out["reload"]["notice"]
    # reload-all: nothing on cancel, one request on confirm
    assert out["reloadAllAfterCancel"] == 0 and out["reloadAllAfterConfirm"] == 1
    assert "Reload-all enqueued" in out["reloadAll"]["notice"]
    deadline = time.time() + 30
    while time.time() < deadline:
        now = {d["name"]: d for d in s.get("/api/v1/datasets").json()}
        if all(now[n]["state"] == "published" and now[n]["last_refresh_at"] != before[n]["last_refresh_at"]
               and now[n]["refresh_source"] == "manual" for n in before):
            break
        time.sleep(0.2)
    else:
        pytest.fail(f"reload-all did not rebuild every dataset: {now}")
    # the admin token: only ever in the X-Admin-Token header
    api_calls = [r for r in out["requests"] if "/api/v1/" in r["url"]]
    mutating = [r for r in api_calls if r["method"] != "GET"]
    assert len(mutating) >= 4
    for r in out["requests"]:
        assert TOKEN not in r["url"], r["url"]
        assert TOKEN not in (r["body"] or ""), r
        for k, v in r["headers"].items():
            if k.lower() != "x-admin-token":
                assert TOKEN not in v, (k, r["url"])
    for r in mutating:
        assert r["headers"].get("x-admin-token") == TOKEN, r
        assert "authorization" not in r["headers"]
    for where in ("local", "session", "cookies"):
        assert TOKEN not in out["storage"][where], where
    assert TOKEN not in out["html"]


def test_sql_tab_and_hidden_save_controls(vt, trips):
    s = vt(explorer_config(trips) + "[sql]\nenabled = true\n", env={"ADMIN_TOKEN": TOKEN})
    sql = "SELECT payment, count(*) AS n, sum(fare) AS total FROM trips GROUP BY payment ORDER BY payment"
    queries = s.get("/api/v1/queries", headers=ADMIN)
    has_queries = queries.status_code != 404
    save = {"name": "by_payment"} if has_queries else None
    out = drive("sql", url=s.url("/explore/"), sql=sql, token=TOKEN, save=save)
    assert console_errors(out, hidden_queries=not has_queries) == [], out["console"]
    assert json.loads(out["sentBody"])["sql"] == sql
    api = exact(s.post("/api/v1/sql", {"sql": sql, "max_rows": 1000}))["data"]
    assert out["table"] == as_table(api, ["payment", "n", "total"])
    # save-as-dataset follows POST /queries: hidden while the server hides it
    assert out["saveForm"] == has_queries
    if has_queries:
        assert "async=true" in out["saveUrl"]
        assert out["saveError"] is None and "published" in out["saveProgress"], out
        assert "Reloaded by_payment: 3 rows" in out["savedReload"]["notice"], out["savedReload"]
        assert out["statusAfterReload"]["refresh_source"] == "manual"
        assert "Deleted by_payment" in out["deleted"]["notice"]
        assert s.get("/api/v1/datasets/by_payment/status").status_code == 404
        for r in out["requests"]:
            assert TOKEN not in r["url"] and TOKEN not in (r["body"] or "")
    else:
        assert queries.json()["code"] == "not_found"
        ctl = drive("controls", url=s.url("/explore/"))
        assert ctl["deleteButtons"] == 0 and ctl["saveForm"] is False


def test_sql_disabled_banner(vt, trips):
    s = vt(explorer_config(trips))
    assert s.post("/api/v1/sql", {"sql": "SELECT 1"}).status_code == 404
    out = drive("sql", url=s.url("/explore/"), sql="SELECT 1")
    assert console_errors(out) == [], out["console"]
    assert "[sql] enabled = true" in out["disabled"]


BADGES = [  # environment, environment_color, expected class, background
    ("production", None, "danger", "rgb(220, 53, 69)"),
    ("prod", None, "danger", "rgb(220, 53, 69)"),
    ("PROD", None, "danger", "rgb(220, 53, 69)"),
    ("staging", None, "warning", "rgb(255, 193, 7)"),
    ("stage", None, "warning", "rgb(255, 193, 7)"),
    ("uat", None, "warning", "rgb(255, 193, 7)"),
    ("development", None, "success", "rgb(25, 135, 84)"),
    ("dev", None, "success", "rgb(25, 135, 84)"),
    ("local", None, "success", "rgb(25, 135, 84)"),
    ("qa-eu", None, "secondary", "rgb(108, 117, 125)"),
    ("production", "info", "info", "rgb(13, 202, 240)"),
    ("sandbox", "primary", "primary", "rgb(13, 110, 253)"),
    ("blue", "dark", "dark", "rgb(33, 37, 41)"),
]


def test_environment_badge_colours(vt):
    servers = []
    for env, color, _, _ in BADGES:
        extra = f'environment = "{env}"\n' + (f'environment_color = "{color}"\n' if color else "")
        servers.append(vt("[server]\nport = 0\n" + extra, wait="listening"))
    servers.append(vt("[server]\nport = 0\n", wait="listening"))  # no environment: no badge
    out = drive("badges", urls=[s.url("/explore/") for s in servers])
    for (env, _, cls, bg), got in zip(BADGES, out["badges"]):
        assert got is not None, env
        assert got["text"] == env and f"env-{cls}" in got["cls"] and got["bg"] == bg, (env, got)
    assert out["badges"][-1] is None


def test_pkce_sign_in_forwards_the_bearer_token(vt, trips):
    with Issuer("vitrine-explorer") as idp:
        s = vt(explorer_config(trips)
               + f'[explorer.oauth2]\nclient_id = "vitrine-explorer"\nissuer = "{idp.url}"\n'
               + 'scopes = ["openid", "datasets:read"]\n')
        out = drive("pkce", url=s.url("/explore/"))
    assert console_errors(out) == [], out["console"]
    assert any(r["url"].endswith("/explore/config.json") for r in out["requests"])
    kinds = [k for k, _ in idp.events]
    assert kinds == ["authorize", "token"], idp.events
    auth, tok = idp.events[0][1], idp.events[1][1]
    assert auth["code_challenge_method"] == "S256" and len(auth["code_challenge"]) == 43
    assert auth["scope"] == "openid datasets:read"
    assert auth["redirect_uri"] == s.url("/explore/")
    verifier = tok["code_verifier"]
    assert 43 <= len(verifier) <= 128
    digest = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    assert digest == auth["code_challenge"]
    assert len(idp.tokens) == 1
    bearer = "Bearer " + idp.tokens[0]
    after = [r for r in out["requests"] if "/api/v1/" in r["url"]
             and r["headers"].get("authorization") == bearer]
    assert len(after) >= 2, [r["url"] for r in out["requests"]]
    for r in out["requests"]:
        assert idp.tokens[0] not in r["url"] and idp.tokens[0] not in (r["body"] or "")
        assert verifier not in r["url"]
    assert "code=" not in out["urlAfter"] and "state=" not in out["urlAfter"]
    for where in ("local", "session", "cookies"):
        assert idp.tokens[0] not in out["storage"][where]
        assert verifier not in out["storage"][where]
    # CSP lets the page reach the issuer and nothing else
    csp = s.get("/explore/").headers["Content-Security-Policy"]
    assert f"connect-src 'self' {idp.url};" in csp


def test_sign_in_opens_a_server_that_requires_bearer_tokens(vt, trips):
    """[auth] on without anonymous reads: the list needs a token; after the
    PKCE sign-in the page's API calls carry it and the server accepts it."""
    with Issuer("vitrine-explorer") as idp:
        s = vt(explorer_config(trips)
               + f'[auth]\nenabled = true\nissuer = "{idp.url}"\naudience = "vitrine"\n'
               + 'read_scopes = ["datasets:read"]\n'
               + f'[explorer.oauth2]\nclient_id = "vitrine-explorer"\nissuer = "{idp.url}"\n'
               + 'scopes = ["openid", "datasets:read"]\n', wait="listening")
        assert s.get("/api/v1/datasets").status_code == 401
        out = drive("pkce", url=s.url("/explore/"))
    assert console_errors(out, expected=[("/api/v1/datasets", 401)]) == [], out["console"]
    assert out["before"]["error"] and "unauthorized" in out["before"]["error"]
    assert out["after"] == {"error": None, "rows": ["trips", "stations"]}, out["after"]
    assert len(idp.tokens) == 1


def test_copy_as_snippets_run_the_same_request(vt, tmp_path):
    """Copy as Python and curl, run as they are, answer what the page's
    request answers, with the words true/false/null inside names and values
    (the Python snippet rewrote them in the JSON text: the column "all null"
    became "all None", the value "true" became "True")."""
    pq = write_parquet(tmp_path / "words.parquet", """
        SELECT i AS n, ['true', 'false', 'null', 'nullable'][1 + i % 4] AS "all null",
               i % 2 = 0 AS "is true"
        FROM range(12) t(i)""")
    s = vt(server_block() + dataset_block("words", pq))
    q = {"columns": ["n", "all null", "is true"],
         "predicates": [{"col": "all null", "op": "in", "val": ["true", "null"]},
                        {"col": "is true", "op": "eq", "val": True}],
         "order_by": [{"col": "n"}], "page_size": 10}
    want = s.post("/api/v1/datasets/words/query", q).json()
    assert want["data"], want
    out = drive("snippets", url=s.url("/explore/"), dataset="words", q=q)
    py = subprocess.run([sys.executable, "-c", out["snippets"]["python"]], capture_output=True,
                        text=True, timeout=60)
    assert py.returncode == 0 and py.stdout.strip() == repr(want), (out["snippets"]["python"], py)
    sh = subprocess.run(["bash", "-c", out["snippets"]["curl"]], capture_output=True, text=True,
                        timeout=60)
    assert sh.returncode == 0 and json.loads(sh.stdout) == want, (out["snippets"]["curl"], sh)


def test_copy_as_javascript_sends_the_admin_token(vt, tmp_path):
    """With the admin token typed, "Copy as JavaScript" sends it as curl's and
    Python's snippets do (from the environment); it had only a comment
    where the header should be. Run with node against a recorder of the
    request, and as it is against the server."""
    import http.server
    pq = write_parquet(tmp_path / "t.parquet", "SELECT range AS id FROM range(5)")
    s = vt(server_block() + dataset_block("t", pq), env={"ADMIN_TOKEN": TOKEN})
    out = drive("snippets", url=s.url("/explore/"), dataset="t", q={"page_size": 2}, token=TOKEN)
    js = out["snippets"]["js"]
    seen = []

    class Recorder(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            seen.append(dict(self.headers))
            body = b'{"data":[]}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    rec = http.server.HTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=rec.serve_forever, daemon=True).start()
    try:
        env = dict(os.environ, ADMIN_TOKEN=TOKEN)
        moved = js.replace(s.base, f"http://127.0.0.1:{rec.server_port}")
        r = subprocess.run(["node", "--input-type=module", "-e", moved], capture_output=True,
                           text=True, timeout=60, env=env)
        assert r.returncode == 0, (js, r.stderr)
        assert [h.get("X-Admin-Token") for h in seen] == [TOKEN], (js, seen)
        r = subprocess.run(["node", "--input-type=module", "-e", js], capture_output=True,
                           text=True, timeout=60, env=env)
        assert r.returncode == 0 and "data" in r.stdout, (js, r.stderr)
    finally:
        rec.shutdown()


def test_sql_completion_quotes_names_that_run(vt, tmp_path):
    """Completing a column in the SQL editor writes a name the server
    reads back: `it's "quoted"` became "it's "quoted"" (its quotes not
    doubled), a statement that does not parse."""
    pq = write_parquet(tmp_path / "odd.parquet",
                       'SELECT i AS "it\'s ""quoted""", i * 2 AS "my col", i * 3 AS plain '
                       "FROM range(3) t(i)")
    s = vt(server_block() + "[sql]\nenabled = true\n" + dataset_block("odd", pq))
    picks = ['it\'s "quoted"', "my col", "plain"]
    out = drive("complete", url=s.url("/explore/"), prefix="SELECT odd.", picks=picks)
    for pick, want in zip(picks, [[0, 1, 2], [0, 2, 4], [0, 3, 6]]):
        text = out["completed"][pick]
        r = s.post("/api/v1/sql", {"sql": f"{text} FROM odd ORDER BY 1"})
        assert r.status_code == 200, (text, r.text)
        assert [list(row.values())[0] for row in r.json()["data"]] == want, (text, r.text)


def test_numbers_past_2_53_are_queried_as_written(vt, tmp_path):
    """An id past 2^53 typed in the builder, or in a shared URL, is sent as
    written: the page turned it into a double (9007199254740993 became
    9007199254740992) and showed another row than the one asked for, or
    none, while the JSON box and the link said the right number."""
    pq = write_parquet(tmp_path / "big.parquet", """
        SELECT 9007199254740990 + i AS id, 'row ' || i AS label,
               CAST('12345678901234567.8' AS DECIMAL(38, 1)) + i AS amount
        FROM range(8) t(i)""")
    s = vt(server_block() + dataset_block("big", pq))
    built = drive("build", url=s.url("/explore/"), dataset="big",
                  build={"predicates": [{"col": "id", "op": "in",
                                         "val": "9007199254740993, 9007199254740995"},
                                        {"col": "amount", "op": "gt",
                                         "val": "12345678901234570.8"}],
                         "page_size": 10})
    sent = built["sentBody"]
    assert "9007199254740993" in sent and "9007199254740995" in sent, sent
    assert "12345678901234570.8" in sent, sent
    assert [r[0] for r in built["table"][1:]] == ["9007199254740995"], built["table"]
    q = {"predicates": [{"col": "id", "op": "eq", "val": 9007199254740993}], "page_size": 10}
    shared = drive("snippets", url=s.url("/explore/"), dataset="big", q=json.dumps(q))
    assert "9007199254740993" in shared["sentBody"], shared["sentBody"]
    assert shared["table"][1:] == [["9007199254740993", "row 3", "12345678901234570.8"]], \
        shared["table"]
    # one row is "1 row", not "1 rows"
    assert shared["timing"].endswith("1 row") and shared["total"] == "of 1 matching row", \
        (shared["timing"], shared["total"])


def test_explorer_issue_28_features(vt, trips, tmp_path):
    """Everything issue 28 asks of the Explorer, in one browser session: a
    shared URL runs its query; a header click sorts and back/forward restore;
    a row's detail; facets filter; the page box follows the pager; copy as
    curl/Python/JavaScript; every matching row exported (formula cells made
    text); one axis per measure and a time series; a running query
    cancelled; column statistics with histograms; the SQL editor completes
    names, points at an error and keeps a history; the keyboard help; a wrong
    admin token said at once; a malformed URL; the dark theme."""
    evil = write_parquet(tmp_path / "evil.parquet", """
        SELECT i AS id, CASE WHEN i = 0 THEN '=HYPERLINK("http://evil.example","x")'
                             ELSE 'plain' || i END AS note, -i AS neg
        FROM range(5) t(i)""")
    slow = write_parquet(tmp_path / "slow.parquet",
                         "SELECT range AS id, md5(range::VARCHAR) AS h FROM range(1500000)")
    s = vt(explorer_config(trips) + dataset_block("evil", evil)
           + dataset_block("slow", slow, **{"index.mode": "none"})
           + "[sql]\nenabled = true\n", env={"ADMIN_TOKEN": TOKEN})
    shared = {"columns": ["trip_id", "payment", "fare"], "order_by": [{"col": "trip_id"}],
              "predicates": [{"col": "passengers", "op": "is_not_null"}], "page_size": 10}
    grouped = {"group_by": ["payment"], "aggregations": [{"op": "avg", "col": "fare", "alias": "avg_fare"},
                                                          {"op": "count"}]}
    timeseries = {"group_by": [{"col": "pickup_at", "bucket": "hour"}],
                  "aggregations": [{"op": "count"}, {"op": "median", "col": "fare"}],
                  "order_by": [{"col": "pickup_at"}], "page_size": 500}
    slow_q = {"group_by": ["h"], "aggregations": [{"op": "count_distinct", "col": "id"}],
              "order_by": [{"col": "h", "dir": "desc"}], "page_size": 5}
    out = drive("explore", url=s.url("/explore/"), dataset="trips", shared=shared, grouped=grouped,
                timeseries=timeseries, slowDataset="slow", slow=slow_q,
                badSql="SELECT paymnt FROM trips")
    bad = console_errors(out, expected=[("/api/v1/sql", 400), ("/api/v1/queries", 401),
                                        ("/api/v1/datasets/%25E0%25A4%25A/schema", 404)])
    assert [m for m in bad if "ERR_ABORTED" not in m["text"] and "cancel" not in m["text"].lower()] == [], bad
    # 1. the shared URL ran exactly its request, and says how many rows match
    assert json.loads(out["sharedBody"]) == shared
    api = exact(s.post("/api/v1/datasets/trips/query", shared))
    assert out["sharedTable"] == as_table(api["data"], shared["columns"])
    n = s.post("/api/v1/datasets/trips/count",
               {"predicates": shared["predicates"]}).json()["count"]
    assert out["total"] == f"of {n:,} matching rows"
    # 2. sorting: the request and the URL say it; back restores the table
    assert json.loads(out["sortBody"])["order_by"] == [{"col": "fare", "dir": "asc"}]
    assert "order_by" in urllib.parse.unquote(out["sortHash"])
    assert out["backTable"] == out["sharedTable"] != out["sortedTable"]
    # 3. the detail of the second row
    assert "trip_id" in out["detail"] and out["sharedTable"][2][0] in out["detail"]
    # 4. the facet value filters, with the count it showed
    fbody = json.loads(out["facetBody"])
    assert {"col": "payment", "op": "eq", "val": out["facet"]["label"]} in fbody["predicates"]
    assert out["facetTotal"] == f"of {int(out['facet']['count'].replace(',', '')):,} matching rows"
    # 5. page 2 shown, page box says 2 (issue 21 item 8)
    assert out["pageBox"] == "2"
    # 6. copy as: each one runs the same request
    assert out["snippets"]["curl"].startswith("curl -s ") and "/api/v1/datasets/trips/query" in out["snippets"]["curl"]
    assert "requests.post(" in out["snippets"]["python"] and "fetch(" in out["snippets"]["js"]
    curl_json = re.search(r"-d '(.*)'$", out["snippets"]["curl"], re.S).group(1)
    assert json.loads(curl_json) == fbody | {"page": 2}
    # 7. the export holds every matching row
    rows = list(csv.reader(io.StringIO(out["exportCsv"])))
    assert out["exportName"] == "trips.csv" and rows[0] == ["trip_id", "payment", "fare"]
    want = s.post("/api/v1/datasets/trips/count", {"predicates": fbody["predicates"]}).json()["count"]
    assert len(rows) - 1 == want
    # 8-9. charts
    assert out["groupedChart"]["axes"] == "2", out["groupedChart"]
    assert out["timeChart"] == "line chart of count, median_fare by pickup_at"
    # 10. cancelled: said so, no stale rows
    assert "cancelled" in out["cancelError"] and not out["cancelResults"]
    # 11. statistics for every column; a histogram for numbers and times
    stats = {c: (has, text) for c, has, text in out["schemaRows"]}
    assert set(stats) == {"trip_id", "pickup_at", "payment", "fare", "distance_km", "passengers"}
    assert all(has for has, _ in stats.values()), stats
    assert "5.00" in stats["fare"][1]  # the decimal's own text
    # 12. SQL: completion of the dataset, the error's position, the history
    assert any("trips" in c for c in out["completions"]), out["completions"]
    assert out["errorPosition"] == "at line 1, column 8"
    assert out["selection"] == "paymnt"
    assert out["history"][0] == "SELECT paymnt FROM trips"
    assert "sql=" in out["sqlHash"]
    # 13-15
    assert "Keyboard shortcuts" in out["help"] and "Ctrl+Enter" in out["help"]
    assert "wrong admin token" in out["tokenProblem"] and not out["tokenSet"]
    assert "Dataset" in out["malformed"]
    # 16. dark
    assert out["darkBg"] == "rgb(13, 17, 23)"
    # CSV downloads (of the page and of every row) make formula cells text
    # (issue 22 item 6); negative numbers stay numbers
    for text in (out["evilPage"], out["evilAll"]):
        got = list(csv.reader(io.StringIO(text)))
        assert got[0] == ["id", "note", "neg"]
        assert [r[1] for r in got[1:3]] == ["'=HYPERLINK(\"http://evil.example\",\"x\")", "plain1"]
        assert [r[2] for r in got[1:]] == ["0", "-1", "-2", "-3", "-4"]
    for name in ("query-shared", "row-detail", "chart-two-axes", "chart-time-series",
                 "schema-stats", "sql-completion", "sql-error", "help", "dark", "dark-schema"):
        assert (SHOTS / f"explorer-{name}.png").stat().st_size > 1000, name

