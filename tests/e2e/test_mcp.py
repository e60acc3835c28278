"""The MCP endpoint (issue 13) with the official TypeScript SDK clients and
raw HTTP: both protocol eras (initialize with @modelcontextprotocol/sdk 1.x,
2026-07-28 stateless with @modelcontextprotocol/client 2.x), every tool, the
output schemas (checked with ajv in tests/e2e/mcp/agent.mjs), paging through a
capped result with `next`, tool errors as isError results, resources, two
server processes answering alternate calls, and every JSON-RPC and transport
error case."""
import json
import shutil
import subprocess
from pathlib import Path

import pytest
import requests

from conftest import dataset_block, server_block, write_parquet

AGENT = Path(__file__).resolve().parent / "mcp" / "agent.mjs"
MODERN = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {}}


def trips(datadir):
    return write_parquet(datadir / "trips.parquet", """
        SELECT i AS trip_id, CASE WHEN i % 3 = 0 THEN 'card' ELSE 'cash' END AS payment,
               (i % 50) * 1.0 AS fare FROM range(2500) t(i)""")


def config(datadir, **mcp):
    lines = ["[mcp]", "enabled = true"]
    for k, v in mcp.items():
        lines.append(f"{k} = {json.dumps(v)}")
    return (server_block() + "\n".join(lines) + "\n" +
            dataset_block("trips", trips(datadir)))


def agent(mode, *urls):
    node = shutil.which("node")
    assert node
    out = subprocess.run([node, str(AGENT), mode, *urls], capture_output=True, text=True,
                         timeout=120, cwd=AGENT.parent.parent)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout)


TOOLS = ["list_datasets", "describe_dataset", "summarize_dataset", "facet_counts", "count_rows",
         "query_dataset"]


def check_session(d, s):
    assert d["tools"] == TOOLS or d["tools"] == TOOLS + ["sql"]
    # Paged by 3 (list_page_size): the 1.x agent follows nextCursor; the 2.x
    # client walks the pages itself inside one listTools().
    assert d["toolPages"] == ((len(d["tools"]) + 2) // 3 if d["mode"] == "legacy" else 1)
    for a in d["annotations"].values():
        assert a["readOnlyHint"] and a["idempotentHint"] and a["openWorldHint"] is False
        assert a["destructiveHint"] is False
    assert d["schemaErrors"] == []
    assert d["calls"]["list"]["datasets"][0]["name"] == "trips"
    assert [c["name"] for c in d["calls"]["describe"]["columns"]] == ["trip_id", "payment", "fare"]
    # Same answers as the HTTP API.
    http_count = s.post("/api/v1/datasets/trips/count",
                        {"predicates": [{"col": "payment", "op": "eq", "val": "card"}]}).json()
    assert d["calls"]["count"] == {"dataset": "trips", "count": http_count["count"]}
    assert d["calls"]["between"]["count"] == s.post(
        "/api/v1/datasets/trips/count",
        {"predicates": [{"col": "fare", "op": "between", "val": [10, 20]}]}).json()["count"]
    assert d["calls"]["grouped"]["rows"] == [
        {"payment": "card", "count": 834, "avg_fare": 24.5},
        {"payment": "cash", "count": 1666, "avg_fare": 24.5}]
    # Capped at max_rows = 300: the agent follows `next` to the end.
    assert d["paging"] == {"pages": 9, "truncatedPages": 1, "rows": 2500, "first": 0,
                           "last": 2499, "ordered": True}
    errs = d["toolErrors"]
    assert all(e["isError"] for e in errs)
    assert "Datasets: trips" in errs[0]["text"] and "dataset_not_found" in errs[0]["text"]
    assert 'did you mean "fare"' in errs[1]["text"] and "trip_id, payment, fare" in errs[1]["text"]
    assert "invalid_operator" in errs[2]["text"]
    assert d["unknownTool"]["code"] == -32602
    assert d["resources"] == ["vitrine://datasets/trips"]
    assert d["resource"]["rows"] == 2500 and len(d["resource"]["sample_rows"]) == 5
    assert d["errors"] == []
    check_explore_tools(d, s)
    check_prompts_and_completions(d)
    check_templates_and_logging(d, s)


def check_explore_tools(d, s):
    # The same answers as the HTTP API's /summary and /facets.
    http_sum = s.get("/api/v1/datasets/trips/summary?columns=payment,fare").json()
    got = d["calls"]["summary"]
    assert got["columns"] == http_sum["columns"] and got["rows"] == 2500
    assert got["truncated"] is False and got["next"] is None
    http_fac = s.post("/api/v1/datasets/trips/facets", {
        "columns": ["payment"], "predicates": [{"col": "fare", "op": "lt", "val": 10}]}).json()
    assert d["calls"]["facets"]["facets"] == http_fac["facets"]
    assert d["calls"]["facets"]["rows"] == 500 and d["calls"]["facets"]["truncated"] is False
    cut = d["calls"]["facetsCut"]
    assert cut["truncated"] is True and len(cut["facets"][0]["values"]) == 3
    assert cut["facets"][0]["other_values"] == 47
    na = d["calls"]["newAggs"]
    assert na["rows"] == [{"band": 0, "count_distinct_payment": 2, "median_fare": 12.0,
                           "p90": 22.0},
                          {"band": 25, "count_distinct_payment": 2, "median_fare": 37.0,
                           "p90": 47.0}]
    assert na["total"] == 2 and na["next"] is None
    lp = d["calls"]["listPaged"]
    assert [x["name"] for x in lp["datasets"]] == ["trips"] and lp["next_cursor"] is None


def check_prompts_and_completions(d):
    assert d["prompts"] == [{"name": "explore_dataset", "args": ["dataset", "column", "value"]},
                            {"name": "answer_with_sql", "args": ["dataset", "question"]}]
    c = d["complete"]
    assert c["dataset"]["values"] == ["trips"] and c["dataset"]["hasMore"] is False
    assert c["column"]["values"] == ["fare"]
    assert sorted(c["value"]["values"]) == ["card", "cash"]
    assert c["resource"]["values"] == ["trips"]
    t = d["explorePrompt"]
    assert '"approx_distinct"' in t and '"trip_id"' in t and "facet_counts" in t
    assert 'How are the rows spread over "payment"' in t
    f = d["focusPrompt"]
    assert 'rows where "payment" is card' in f and '"rows":834' in f
    q = d["sqlPrompt"]
    assert "Which payment has the highest average fare?" in q and "sql_not_read_only" in q
    assert '"fare"' in q and "Datasets: trips" in q
    assert d["promptMissingArg"]["code"] == -32602


def check_templates_and_logging(d, s):
    assert d["templates"] == ["vitrine://datasets/{name}", "vitrine://datasets/{name}/schema",
                              "vitrine://datasets/{name}/summary"]
    assert d["schemaResource"] == s.get("/api/v1/datasets/trips/schema").json()
    assert [c["name"] for c in d["summaryResource"]["columns"]] == ["trip_id", "payment", "fare"]
    if d["mode"] == "legacy":
        assert d["setLevel"] == {}
        assert d["logs"] == []
    else:
        assert d["loggedCall"] == {"truncated": True}
        levels = [m["level"] for m in d["logs"]]
        assert levels == ["info", "warning"], d["logs"]
        assert "call again with `next`" in d["logs"][1]["data"]


@pytest.mark.parametrize("mode", ["legacy", "modern"])
def test_official_sdk_session(vt, datadir, mode):
    s = vt(config(datadir, max_rows=300, list_page_size=3))
    d = agent(mode, s.url("/mcp"))
    check_session(d, s)
    if mode == "modern":
        assert d["protocolVersion"] == MODERN
    assert d["serverVersion"]["name"] == "vitrine"


@pytest.mark.parametrize("mode", ["legacy", "modern"])
def test_two_replicas_answer_alternate_calls(vt, datadir, mode):
    a = vt(config(datadir, max_rows=300, list_page_size=3))
    b = vt(config(datadir, max_rows=300, list_page_size=3))
    d = agent(mode, a.url("/mcp"), b.url("/mcp"))
    check_session(d, a)
    for srv in (a, b):  # each answered tool calls
        assert "POST /mcp 200" in srv.log()


@pytest.mark.parametrize("mode", ["legacy", "modern"])
def test_sql_tool_with_the_sdk(vt, datadir, mode):
    s = vt(config(datadir, max_rows=300, expose_sql=True, list_page_size=3) + "[sql]\nenabled = true\n")
    d = agent(mode, s.url("/mcp"))
    assert d["tools"][-1] == "sql" and d["schemaErrors"] == [], d
    assert d["calls"]["sql"]["rows"] == [{"payment": "card", "n": 834},
                                         {"payment": "cash", "n": 1666}]
    assert d["calls"]["sql"]["truncated"] is False
    assert d["calls"]["sqlCapped"] == {"row_count": 300, "truncated": True}
    codes = ["sql_forbidden_function", "sql_not_read_only", "sql_unknown_table"]
    for e, code in zip(d["sqlErrors"], codes):
        assert e["isError"] and code in e["text"], e


def test_sql_tool_needs_both_switches(vt, datadir):
    # expose_sql without [sql] enabled, and [sql] without expose_sql: not listed, not callable.
    for extra, mcp in (("", {"expose_sql": True}), ("[sql]\nenabled = true\n", {})):
        s = vt(config(datadir, **mcp) + extra)
        r = rpc(s, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert "sql" not in [t["name"] for t in r.json()["result"]["tools"]]
        r = rpc(s, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": {"name": "sql", "arguments": {"sql": "SELECT 1"}}})
        assert r.json()["error"]["code"] == -32602
        s.stop()


def rpc(s, body, headers=None, raw=None):
    h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    h.update(headers or {})
    data = raw if raw is not None else json.dumps(body)
    return requests.post(s.url("/mcp"), data=data, headers=h, timeout=30)


def modern(method, params=None, name=None, **extra_headers):
    p = dict(params or {})
    p["_meta"] = dict(META)
    h = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    if name is not None:
        h["Mcp-Name"] = name
    h.update(extra_headers)
    return {"jsonrpc": "2.0", "id": 7, "method": method, "params": p}, h


def test_json_rpc_error_cases(vt, datadir):
    s = vt(config(datadir))

    def err(r, status, code, rid="absent"):
        assert r.status_code == status, (r.status_code, r.text)
        e = r.json()
        assert e["jsonrpc"] == "2.0" and e["error"]["code"] == code, e
        if rid != "absent":
            assert e["id"] == rid, e

    err(rpc(s, None, raw="{not json"), 400, -32700, None)
    err(rpc(s, None, raw='[{"jsonrpc":"2.0","id":1,"method":"ping"}]'), 400, -32600, None)
    err(rpc(s, {"id": 1, "method": "ping"}), 400, -32600)
    err(rpc(s, {"jsonrpc": "1.0", "id": 1, "method": "ping"}), 400, -32600)
    err(rpc(s, {"jsonrpc": "2.0", "id": {"x": 1}, "method": "ping"}), 400, -32600, None)
    err(rpc(s, {"jsonrpc": "2.0", "id": 1, "method": 5}), 400, -32600)
    err(rpc(s, {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": [1]}), 400, -32600)
    err(rpc(s, None, raw='{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}'), 400, -32700, None)
    deep = '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":' + "[" * 40 + "]" * 40 + "}}"
    err(rpc(s, None, raw=deep), 400, -32600)
    # Legacy: unknown method is an ordinary JSON-RPC error; ping answers.
    err(rpc(s, {"jsonrpc": "2.0", "id": "x", "method": "nope/nope"}), 200, -32601, "x")
    r = rpc(s, {"jsonrpc": "2.0", "id": 3, "method": "ping"})
    assert r.status_code == 200 and r.json() == {"jsonrpc": "2.0", "id": 3, "result": {}}
    # Notifications and client responses: 202, no body.
    r = rpc(s, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert r.status_code == 202 and r.content == b""
    r = rpc(s, {"jsonrpc": "2.0", "id": 9, "result": {}})
    assert r.status_code == 202
    # Tool-level: unknown tool is a protocol error, bad arguments a tool error.
    r = rpc(s, {"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                "params": {"name": "nope", "arguments": {}}})
    err(r, 200, -32602, 4)
    r = rpc(s, {"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                "params": {"name": "query_dataset", "arguments": {"name": "trips", "bogus": 1}}})
    assert r.status_code == 200 and r.json()["result"]["isError"] is True
    assert "unknown_field" in r.json()["result"]["content"][0]["text"]
    # A session id is accepted and ignored (stateless).
    r = rpc(s, {"jsonrpc": "2.0", "id": 6, "method": "tools/list"},
            headers={"Mcp-Session-Id": "anything", "MCP-Protocol-Version": "2025-06-18"})
    assert r.status_code == 200 and len(r.json()["result"]["tools"]) == 6
    assert "mcp-session-id" not in {k.lower() for k in r.headers}


def test_transport_rules(vt, datadir):
    s = vt(config(datadir, allowed_origins=["https://agent.example"]))
    r = requests.get(s.url("/mcp"), timeout=10)
    assert r.status_code == 405 and "POST" in r.headers["Allow"]
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    r = rpc(s, body, headers={"Origin": "http://evil.example"})
    assert r.status_code == 403 and r.json()["error"]["code"] == -32600
    assert rpc(s, body, headers={"Origin": "https://agent.example"}).status_code == 200
    assert rpc(s, body, headers={"Origin": f"http://127.0.0.1:{s.port}"}).status_code == 200
    # An unsupported version, in the header or in _meta: 400 listing ours.
    r = rpc(s, body, headers={"MCP-Protocol-Version": "1999-01-01"})
    assert r.status_code == 400
    e = r.json()["error"]
    assert e["code"] == -32022 and MODERN in e["data"]["supported"]
    assert "2025-06-18" in e["data"]["supported"]
    b, h = modern("tools/list")
    b["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = "2030-01-01"
    r = rpc(s, b, headers=dict(h, **{"MCP-Protocol-Version": "2030-01-01"}))
    assert r.status_code == 400 and r.json()["error"]["code"] == -32022
    # Modern requests: headers must match the body.
    b, h = modern("tools/list")
    r = rpc(s, b, headers=h)
    assert r.status_code == 200
    res = r.json()["result"]
    assert res["resultType"] == "complete" and res["cacheScope"] in ("public", "private")
    assert "ttlMs" in res and res["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "vitrine"
    for change, code in [({"Mcp-Method": "tools/call"}, -32020),
                         ({"MCP-Protocol-Version": "2025-11-25"}, -32020)]:
        hh = dict(h)
        hh.update(change)
        r = rpc(s, b, headers=hh)
        assert r.status_code == 400 and r.json()["error"]["code"] == code, r.text
    b, h = modern("tools/call", {"name": "list_datasets", "arguments": {}})
    r = rpc(s, b, headers=h)  # Mcp-Name missing
    assert r.status_code == 400 and r.json()["error"]["code"] == -32020
    b, h = modern("tools/call", {"name": "list_datasets", "arguments": {}}, name="list_datasets")
    r = rpc(s, b, headers=h)
    assert r.status_code == 200 and r.json()["result"]["isError"] is False
    # Mcp-Name in the base64 sentinel form.
    b, h = modern("tools/call", {"name": "list_datasets", "arguments": {}},
                  name="=?base64?bGlzdF9kYXRhc2V0cw==?=")
    assert rpc(s, b, headers=h).status_code == 200
    b, h = modern("tools/call", {"name": "list_datasets", "arguments": {}}, name="count_rows")
    assert rpc(s, b, headers=h).json()["error"]["code"] == -32020
    # Modern: an unknown method is 404 with -32601; discover answers.
    b, h = modern("nope/nope")
    r = rpc(s, b, headers=h)
    assert r.status_code == 404 and r.json()["error"]["code"] == -32601
    b, h = modern("server/discover")
    d = rpc(s, b, headers=h).json()["result"]
    assert d["supportedVersions"][0] == MODERN and "tools" in d["capabilities"]
    # Resources: unknown is -32602 (modern) / -32002 (legacy).
    b, h = modern("resources/read", {"uri": "vitrine://datasets/none"},
                  name="vitrine://datasets/none")
    assert rpc(s, b, headers=h).json()["error"]["code"] == -32602
    r = rpc(s, {"jsonrpc": "2.0", "id": 2, "method": "resources/read",
                "params": {"uri": "vitrine://datasets/none"}})
    assert r.json()["error"]["code"] == -32002
    # An oversize body is refused before any parsing.
    big = {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": "a" * 2_000_000}}
    assert rpc(s, big).status_code == 413


def test_disabled_is_404(vt, datadir):
    s = vt(server_block() + dataset_block("trips", trips(datadir)))
    r = rpc(s, {"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert r.status_code == 404


def test_byte_cap_cuts_whole_rows(vt, datadir):
    s = vt(config(datadir, max_rows=500, max_bytes=2048))
    r = rpc(s, {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "query_dataset",
                           "arguments": {"name": "trips", "page_size": 500,
                                         "order_by": [{"col": "trip_id"}]}}})
    sc = r.json()["result"]["structuredContent"]
    assert sc["truncated"] is True and 0 < sc["row_count"] < 500
    assert len(json.dumps(sc["rows"], separators=(",", ":"))) <= 2048 + 2
    assert sc["rows"][-1]["trip_id"] == sc["row_count"] - 1
    nxt = sc["next"]
    assert (nxt["page"] - 1) * nxt["page_size"] == sc["row_count"]


def test_lists_page_with_cursors_when_there_are_many_datasets(vt, datadir):
    p = trips(datadir)
    names = ["d3", "a1", "c2", "e5", "b4"]
    s = vt(config(datadir, list_page_size=2).replace(dataset_block("trips", p), "") +
           "".join(dataset_block(n, p) for n in names))
    seen, cursor, pages = [], None, 0
    while True:
        params = {"cursor": cursor} if cursor else {}
        r = rpc(s, {"jsonrpc": "2.0", "id": 1, "method": "resources/list", "params": params})
        res = r.json()["result"]
        pages += 1
        assert len(res["resources"]) <= 2
        seen += [x["name"] for x in res["resources"]]
        cursor = res.get("nextCursor")
        if not cursor:
            break
    assert seen == sorted(names) and pages == 3
    # The list_datasets tool pages the same way and says so.
    args, got = {}, []
    for _ in range(5):
        r = rpc(s, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": {"name": "list_datasets", "arguments": args}})
        sc = r.json()["result"]["structuredContent"]
        got += [x["name"] for x in sc["datasets"]]
        assert sc["truncated"] is (sc["next_cursor"] is not None)
        if not sc["next_cursor"]:
            break
        args = {"cursor": sc["next_cursor"]}
    assert got == sorted(names)
    # tools/list pages too; a cursor that is not ours is -32602.
    r = rpc(s, {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}).json()["result"]
    assert len(r["tools"]) == 2 and r["nextCursor"]
    for bad in ("nope", "v1.!!", 5):
        for method in ("tools/list", "resources/list"):
            e = rpc(s, {"jsonrpc": "2.0", "id": 4, "method": method,
                        "params": {"cursor": bad}}).json()["error"]
            assert e["code"] == -32602, (method, bad)
    r = rpc(s, {"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                "params": {"name": "list_datasets", "arguments": {"cursor": "zz"}}}).json()
    assert r["result"]["isError"] is True


def test_2026_meta_is_validated(vt, datadir):
    s = vt(config(datadir))
    h = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "server/discover"}
    # The modern header without _meta, or _meta without its required keys: 400, -32602.
    for params in ({}, {"_meta": {"io.modelcontextprotocol/clientCapabilities": {}}},
                   {"_meta": {"io.modelcontextprotocol/protocolVersion": MODERN}}):
        r = rpc(s, {"jsonrpc": "2.0", "id": 11, "method": "server/discover", "params": params},
                headers=h)
        assert r.status_code == 400 and r.json()["error"]["code"] == -32602, (params, r.text)
        assert r.json()["id"] == 11
    # _meta and header disagree: the header's fault (-32020) before the version (-32022).
    b, hh = modern("server/discover")
    b["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = "v999"
    r = rpc(s, b, headers=hh)
    assert r.status_code == 400 and r.json()["error"]["code"] == -32020
    hh["MCP-Protocol-Version"] = "v999"
    r = rpc(s, b, headers=hh)
    assert r.status_code == 400 and r.json()["error"]["code"] == -32022
    assert r.json()["error"]["data"]["requested"] == "v999"
    # Methods of the initialize era are not methods in 2026-07-28: 404, -32601.
    for m in ("initialize", "ping", "logging/setLevel", "resources/subscribe"):
        b, hh = modern(m)
        r = rpc(s, b, headers=hh)
        assert r.status_code == 404 and r.json()["error"]["code"] == -32601, m
    # A bad log level is -32602; white space around header values is allowed.
    b, hh = modern("tools/list")
    b["params"]["_meta"]["io.modelcontextprotocol/logLevel"] = "loud"
    assert rpc(s, b, headers=hh).json()["error"]["code"] == -32602
    b, hh = modern("tools/call", {"name": "count_rows", "arguments": {"name": "trips"}},
                   name="count_rows  ")
    assert rpc(s, b, headers=hh).json()["result"]["structuredContent"]["count"] == 2500
    # Without logLevel no notifications: one JSON document, even when SSE is accepted.
    r = rpc(s, b, headers=hh)
    assert r.headers["Content-Type"].startswith("application/json")
    # initialize names a session id that no replica checks.
    r = rpc(s, {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "x", "version": "1"}}})
    sid = r.headers["Mcp-Session-Id"]
    assert len(sid) == 26
    r = rpc(s, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
            headers={"Mcp-Session-Id": "another", "MCP-Protocol-Version": "2025-06-18"})
    assert r.status_code == 200
    assert requests.delete(s.url("/mcp"), headers={"Mcp-Session-Id": sid},
                           timeout=10).status_code == 405


def test_prompt_and_completion_errors(vt, datadir):
    s = vt(config(datadir))

    def call(method, params):
        return rpc(s, {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).json()

    assert call("prompts/get", {"name": "nope"})["error"]["code"] == -32602
    e = call("prompts/get", {"name": "explore_dataset", "arguments": {"dataset": "nope"}})
    assert e["error"]["code"] == -32602 and "Datasets: trips" in e["error"]["message"]
    # two sentences, not 'no dataset named "nope" Datasets: trips.'
    assert e["error"]["message"].startswith('no dataset named "nope". Datasets: '), e
    e = call("prompts/get", {"name": "explore_dataset",
                             "arguments": {"dataset": "trips", "column": "farex"}})
    assert e["error"]["code"] == -32602 and "trip_id, payment, fare" in e["error"]["message"]
    e = call("prompts/get", {"name": "answer_with_sql", "arguments": {"dataset": "trips"}})
    assert "question" in e["error"]["message"]
    e = call("prompts/get", {"name": "answer_with_sql",
                             "arguments": {"dataset": "trips", "question": 5}})
    assert e["error"]["code"] == -32602
    # Completion: a ref we do not offer completes to nothing; a malformed one is -32602.
    r = call("completion/complete", {"ref": {"type": "ref/prompt", "name": "other"},
                                     "argument": {"name": "x", "value": "a"}})
    assert r["result"]["completion"] == {"values": [], "total": 0, "hasMore": False}
    assert call("completion/complete", {"ref": {}})["error"]["code"] == -32602
    # A high-cardinality column: the most frequent values, bounded, with hasMore.
    r = call("completion/complete", {
        "ref": {"type": "ref/prompt", "name": "explore_dataset"},
        "argument": {"name": "value", "value": "1"},
        "context": {"arguments": {"dataset": "trips", "column": "trip_id"}}})["result"]
    assert len(r["completion"]["values"]) == 100 and r["completion"]["hasMore"] is True
    assert all(v.startswith("1") for v in r["completion"]["values"])
    # summarize_dataset argument errors are tool errors.
    r = rpc(s, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "summarize_dataset", "arguments": {"name": "trips", "columns": ["nope"]}}}).json()
    assert r["result"]["isError"] and "unknown_column" in r["result"]["content"][0]["text"]
    r = rpc(s, {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "facet_counts", "arguments": {"name": "trips", "columns": [], "x": 1}}}).json()
    assert r["result"]["isError"]
