"""Paging a query DuckDB answers from a hash table (issue 21 item 5): distinct
and group_by without order_by came back in a different order on every run, so
5 pages of 10,000 distinct pairs held 30k-45k different pairs (rows repeated
on one page and dropped from all), and MCP handed out `next` for it. Pages
must partition the result, over HTTP and over MCP's `next` cursor."""
import json

import pytest
import requests

from conftest import Server, dataset_block, server_block, write_parquet

PAIRS = 50_000


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    d = tmp_path_factory.mktemp("paging")
    # 200,000 rows holding 50,000 distinct (a, b) pairs, shuffled so that
    # nothing about the storage order hints at an order.
    p = write_parquet(d / "pairs.parquet",
                      f"SELECT (i % {PAIRS}) // 100 AS a, (i % {PAIRS}) % 100 AS b, i AS n "
                      "FROM range(200000) t(i) ORDER BY hash(i)")
    s = Server(d, server_block(workers=2) + "[mcp]\nenabled = true\nmax_rows = 10000\n"
               "max_bytes = 67108864\n"
               + dataset_block("pairs", p) + dataset_block("lazy_pairs", p, lazy=True))
    s.start()
    s.wait_ready()
    yield s
    assert s.stop() == 0


def pages(s, dataset, body, size, n):
    out = []
    for page in range(1, n + 1):
        r = s.post(f"/api/v1/datasets/{dataset}/query",
                   dict(body, page=page, page_size=size))
        assert r.status_code == 200, r.text
        out.append([tuple(row.values()) for row in r.json()["data"]])
    return out


@pytest.mark.parametrize("dataset", ["pairs", "lazy_pairs"])
def test_distinct_pages_partition_the_result(srv, dataset):
    got = pages(srv, dataset, {"columns": ["a", "b"], "distinct": True}, 10_000, 5)
    rows = [r for p in got for r in p]
    assert len(rows) == PAIRS
    assert len(set(rows)) == PAIRS, f"{PAIRS - len(set(rows))} rows repeated across pages"
    # Asking again gives the same pages.
    assert pages(srv, dataset, {"columns": ["a", "b"], "distinct": True}, 10_000, 2) == got[:2]


@pytest.mark.parametrize("dataset", ["pairs", "lazy_pairs"])
def test_group_by_pages_partition_the_result(srv, dataset):
    body = {"group_by": ["a", "b"], "aggregations": [{"op": "count"}]}
    rows = [r for p in pages(srv, dataset, body, 7_000, 8) for r in p]
    assert len(rows) == PAIRS
    assert len({r[:2] for r in rows}) == PAIRS
    assert sum(r[2] for r in rows) == 200_000
    # order_by on a column with ties: the group columns break them.
    body["order_by"] = [{"col": "count", "dir": "desc"}]
    rows = [r for p in pages(srv, dataset, body, 9_000, 6) for r in p]
    assert len({r[:2] for r in rows}) == PAIRS


def test_distinct_with_partial_order_partitions(srv):
    body = {"columns": ["a", "b"], "distinct": True, "order_by": [{"col": "a"}]}
    rows = [r for p in pages(srv, "pairs", body, 10_000, 5) for r in p]
    assert len(set(rows)) == PAIRS
    assert [r[0] for r in rows] == sorted(r[0] for r in rows)


def test_mcp_next_cursor_walks_a_distinct_result_once(srv):
    def call(args):
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "query_dataset", "arguments": args}}
        r = requests.post(srv.url("/mcp"), json=body, timeout=60,
                          headers={"Accept": "application/json, text/event-stream"})
        assert r.status_code == 200, r.text
        res = r.json()["result"]
        assert not res.get("isError"), res
        return res["structuredContent"]
    args = {"name": "pairs", "columns": ["a", "b"], "distinct": True, "page_size": 10000}
    seen = []
    for _ in range(10):
        sc = call(args)
        seen += [(row["a"], row["b"]) for row in sc["rows"]]
        if not sc["next"]:
            break
        args = sc["next"]
    assert len(seen) == PAIRS and len(set(seen)) == PAIRS
