"""A query body in the lookup shape ({"predicates":[{"col":..,"op":"eq",
"val":..}]}, optionally "columns" and "limit") is validated straight from its
text, without a JSON tree (src/query/query_small.c); everything else goes
through jansson and query_parse. The two paths must answer and refuse
identically: every body here is sent as it is and again with one key
spelled with a JSON escape ("predicate\\u0073"), which the shortcut never
takes, on an indexed, an unindexed and a default-config dataset, for /query
and /count."""
import json

import pytest
import requests

from conftest import Server, dataset_block, server_block, write_parquet

SELECT = ("SELECT range + 1 AS id, 'c' || (range % 5) AS category, "
          "(range % 97) / 4.0 AS price, CAST(range % 7 AS INTEGER) AS qty, "
          "CAST(range / 8.0 AS DECIMAL(10,2)) AS amount, "
          "TIMESTAMP '2024-01-01' + INTERVAL (range) HOUR AS ts, range % 2 = 0 AS flag, "
          "[range, 1] AS l FROM range(300)")


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    d = tmp_path_factory.mktemp("query-small")
    pq = write_parquet(d / "t.parquet", SELECT)
    s = Server(d, server_block() +
               dataset_block("ix", pq, **{"index.mode": "list",
                                          "index.columns": ["id", "category"]}) +
               dataset_block("plain", pq, **{"index.mode": "none"}) +
               dataset_block("d", pq))
    s.start()
    s.wait_ready()
    yield s
    assert s.stop() == 0


def pred(col, val, op="eq"):
    return {"col": col, "op": op, "val": val}


BODIES = [
    {"predicates": [pred("id", 42)]},
    {"predicates": [pred("id", 0)]},
    {"predicates": [pred("id", -3)]},
    {"predicates": [pred("id", 999999)]},
    {"predicates": [pred("id", 123456789012345678)]},
    {"predicates": [pred("category", "c3")]},
    {"predicates": [pred("category", "")]},
    {"predicates": [pred("category", "no such")]},
    {"predicates": [pred("id", 7), pred("category", "c2")]},
    {"predicates": [pred("id", 7), pred("category", "c1")]},
    {"predicates": [pred("id", 10, "gt"), pred("id", 13, "lte")]},
    {"predicates": [pred("id", 290, "gte")], "limit": 4},
    {"predicates": [pred("id", 5, "lt")], "limit": 0},
    {"predicates": [pred("category", "c1", "neq")], "limit": 3, "columns": ["id", "price"]},
    {"predicates": [pred("price", 3)]},
    {"predicates": [pred("qty", 6, "gte")], "limit": 2},
    {"predicates": [pred("amount", 2)]},
    {"columns": ["ts", "flag", "l"], "predicates": [pred("id", 9)]},
    # refused: the same error from both paths
    {"predicates": [pred("nope", 1)]},
    {"predicates": [pred("ID", 1)]},
    {"predicates": [pred("id", "1")]},
    {"predicates": [pred("category", 1)]},
    {"predicates": [pred("flag", 1)]},
    {"predicates": [pred("ts", 1)]},
    {"predicates": [pred("l", 1)]},
    {"predicates": [pred("ts", "not a time")]},
    {"predicates": [pred("id", 1)], "columns": ["id", "id"]},
    {"predicates": [pred("id", 1)], "columns": ["zz"]},
    {"predicates": [pred("id", 1)], "limit": 9223372036854775807},
]


def escaped(text):
    """The same body with a JSON escape in the predicates key."""
    assert '"predicates"' in text
    return text.replace('"predicates"', '"predicate\\u0073"', 1)


def answer(srv, path, text):
    r = requests.post(srv.url(path), data=text, timeout=30,
                      headers={"Content-Type": "application/json"})
    body = r.json()
    return r.status_code, body


@pytest.mark.parametrize("ds", ["ix", "plain", "d"])
@pytest.mark.parametrize("what", ["query", "count"])
def test_the_shortcut_answers_as_the_general_path(srv, ds, what):
    path = f"/api/v1/datasets/{ds}/{what}"
    for body in BODIES:
        for text in (json.dumps(body), json.dumps(body, separators=(",", ":")),
                     " \n" + json.dumps(body, indent=1) + "\t"):
            fast = answer(srv, path, text)
            full = answer(srv, path, escaped(text))
            assert fast == full, (path, text, fast, full)
    # and the answers are the expected ones, not just equal
    st, b = answer(srv, path, '{"predicates":[{"col":"id","op":"eq","val":42}]}')
    assert st == 200
    assert (b["data"] == [dict(b["data"][0], id=42)] if what == "query" else b["count"] == 1), b
    st, b = answer(srv, path, '{"predicates":[{"col":"nope","op":"eq","val":1}]}')
    assert st == 400 and b["code"] == "unknown_column", b


def test_the_lookup_is_still_the_row(srv):
    st, b = answer(srv, "/api/v1/datasets/ix/query",
                   '{"predicates":[{"col":"id","op":"eq","val":8}],"columns":["id","category"]}')
    assert st == 200 and b["data"] == [{"id": 8, "category": "c2"}], b
