"""jsonb_set and jsonb_insert over the PostgreSQL listener, through psycopg
(both protocols) and psycopg2, against what PostgreSQL documents (the
function table of "JSON Functions and Operators" and the cases of its
regression tests, jsonb.sql): the path as text[] ('{a,0}', ARRAY[...], a
list parameter), create_missing, negative array indexes, insert_after, the
errors PostgreSQL raises with its SQLSTATEs, NULL arguments, and the bound
on the walk (engine/jsonb.c, util/limits.h)."""
import json

import psycopg
import psycopg2
import pytest

from pgwire_util import module_server


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    yield from module_server(tmp_path_factory, "jsonbset")


def dsn(srv):
    return f"host=127.0.0.1 port={srv.pg} user=vitrine dbname=vitrine connect_timeout=10"


DOC = '{"n":null, "a":1, "b":[1,2], "c":{"1":2}, "d":{"1":[2,3]}}'

# (call, PostgreSQL's answer)
CASES = [
    # the documentation's examples
    ("jsonb_set('[{\"f1\":1,\"f2\":null},2,null,3]', '{0,f1}', '[2,3,4]', false)",
     [{"f1": [2, 3, 4], "f2": None}, 2, None, 3]),
    ("jsonb_set('[{\"f1\":1,\"f2\":null},2]', '{0,f3}', '[2,3,4]')",
     [{"f1": 1, "f2": None, "f3": [2, 3, 4]}, 2]),
    ("jsonb_insert('{\"a\": [0,1,2]}', '{a, 1}', '\"new_value\"')",
     {"a": [0, "new_value", 1, 2]}),
    ("jsonb_insert('{\"a\": [0,1,2]}', '{a, 1}', '\"new_value\"', true)",
     {"a": [0, 1, "new_value", 2]}),
    # the regression tests' (jsonb.sql)
    (f"jsonb_set('{DOC}', '{{n}}', '[1,2,3]')",
     {"n": [1, 2, 3], "a": 1, "b": [1, 2], "c": {"1": 2}, "d": {"1": [2, 3]}}),
    (f"jsonb_set('{DOC}', '{{b,-1}}', '[1,2,3]')",
     {"n": None, "a": 1, "b": [1, [1, 2, 3]], "c": {"1": 2}, "d": {"1": [2, 3]}}),
    (f"jsonb_set('{DOC}', '{{d,1,0}}', '[1,2,3]')",
     {"n": None, "a": 1, "b": [1, 2], "c": {"1": 2}, "d": {"1": [[1, 2, 3], 3]}}),
    (f"jsonb_set('{DOC}', '{{d,NULL,0}}'::text[], '[1,2,3]')", "22004"),
    (f"jsonb_set('{DOC}', '{{n}}', '{{\"1\": 2}}')",
     {"n": {"1": 2}, "a": 1, "b": [1, 2], "c": {"1": 2}, "d": {"1": [2, 3]}}),
    (f"jsonb_set('{DOC}', '{{b,-1}}', '\"test\"')",
     {"n": None, "a": 1, "b": [1, "test"], "c": {"1": 2}, "d": {"1": [2, 3]}}),
    (f"jsonb_set('{DOC}', '{{c,x}}', '1', false)",          # not there, not created
     {"n": None, "a": 1, "b": [1, 2], "c": {"1": 2}, "d": {"1": [2, 3]}}),
    (f"jsonb_set('{DOC}', '{{x,y}}', '1')",                 # an earlier step missing
     {"n": None, "a": 1, "b": [1, 2], "c": {"1": 2}, "d": {"1": [2, 3]}}),
    (f"jsonb_set('{DOC}', '{{a,y}}', '1')",                 # a scalar on the way
     {"n": None, "a": 1, "b": [1, 2], "c": {"1": 2}, "d": {"1": [2, 3]}}),
    ("jsonb_set('[]', '{1}', '\"b\"', false)", []),
    ("jsonb_set('[]', '{1}', '\"b\"')", ["b"]),
    ("jsonb_set('{}', '{x}', '\"b\"', false)", {}),
    ("jsonb_set('{}', '{x}', '\"b\"')", {"x": "b"}),
    ("jsonb_set('[0, 1, 2]', '{-5}', '\"x\"')", ["x", 0, 1, 2]),   # before the first
    ("jsonb_set('[0, 1, 2]', '{5}', '\"x\"')", [0, 1, 2, "x"]),    # past the last
    ("jsonb_set('[0, 1, 2]', '{-5}', '\"x\"', false)", [0, 1, 2]),
    ("jsonb_set('[0, 1, 2]', '{-3}', '\"x\"')", ["x", 1, 2]),
    ("jsonb_set('[0, 1, 2]', '{\" +1\"}', '\"x\"')", [0, "x", 2]),  # strtoint's spelling
    ("jsonb_set('{\"a\": [1]}', '{}', '2')", {"a": [1]}),          # the empty path
    ("jsonb_set('{\"a\": {\"b\": [1, 2, 3]}}', ARRAY['a', 'b', '1'], '{\"q\": []}')",
     {"a": {"b": [1, {"q": []}, 3]}}),
    ("jsonb_set('{\"a\\u0062\": 1}', '{ab}', '2')", {"ab": 2}),    # keys compare decoded
    ("jsonb_set('{\"a\": 1}', '{\"q\\\"u\"}', '2')", {"a": 1, 'q"u': 2}),
    ("jsonb_set('{\"a\": 1, \"a\": 2}', '{a}', '3')", {"a": 3}),   # the pair jsonb keeps
    ("jsonb_set('{\"a\": [1, 2, 3]}', '{a, non_integer}', '\"new_value\"')", "22P02"),
    ("jsonb_set('{\"a\": {\"b\": [1, 2, 3]}}', '{a, b, non_integer}', '\"new_value\"')",
     "22P02"),
    ("jsonb_set('{\"a\": {\"b\": [1, 2, 3]}}', '{a, b, NULL}', '\"new_value\"')", "22004"),
    ("jsonb_set('[1]', '{99999999999}', '2')", "22P02"),            # out of int's range
    ("jsonb_set('\"scalar\"', '{a}', '1')", "22023"),
    ("jsonb_set('{\"a\": 1}', '{a}', '{not json')", "22P02"),
    ("jsonb_set('[1', '{0}', '1')", "22P02"),
    # jsonb_insert
    ("jsonb_insert('{\"a\": {\"b\": \"value\"}}', '{a, b}', '\"new_value\"')", "22023"),
    ("jsonb_insert('{\"a\": {\"b\": \"value\"}}', '{a, c}', '\"new_value\"')",
     {"a": {"b": "value", "c": "new_value"}}),
    ("jsonb_insert('{\"a\": [0,1,2]}', '{a, -1}', '\"new_value\"')",
     {"a": [0, 1, "new_value", 2]}),
    ("jsonb_insert('{\"a\": [0,1,2]}', '{a, -1}', '\"new_value\"', true)",
     {"a": [0, 1, 2, "new_value"]}),
    ("jsonb_insert('{\"a\": [0,1,2]}', '{a, 10}', '\"new_value\"')",
     {"a": [0, 1, 2, "new_value"]}),
    ("jsonb_insert('{\"a\": [0,1,2]}', '{a, -10}', '\"new_value\"')",
     {"a": ["new_value", 0, 1, 2]}),
    ("jsonb_insert('{\"a\": []}', '{a, 0}', '\"new_value\"')", {"a": ["new_value"]}),
    ("jsonb_insert('{\"a\": [0,1,2]}', '{a, 0, 1}', '\"x\"')", {"a": [0, 1, 2]}),
    ("jsonb_insert('[]', '{0}', '1', true)", [1]),
    ("jsonb_insert('{}', '{a}', '1')", {"a": 1}),
    ("jsonb_insert('1', '{0}', '1')", "22023"),
    # strict: a NULL argument is a NULL answer
    ("jsonb_set(NULL, '{a}', '1')", None),
    ("jsonb_set('{}', NULL, '1')", None),
    ("jsonb_set('{}', '{a}', NULL)", None),
    ("jsonb_set('{}', '{a}', '1', NULL)", None),
    ("jsonb_insert('[1]', '{0}', NULL)", None),
]


def test_jsonb_set_and_insert_as_postgresql_documents(srv):
    with psycopg.connect(dsn(srv), autocommit=True) as c:
        for prepare in (False, True):
            for call, want in CASES:
                if isinstance(want, str):
                    with pytest.raises(psycopg.Error) as e:
                        c.execute(f"SELECT {call}", prepare=prepare)
                    assert e.value.sqlstate == want, (call, str(e.value))
                    continue
                cur = c.execute(f"SELECT {call} AS v", prepare=prepare)
                assert cur.fetchone()[0] == want, call
                assert cur.description[0].type_code == 114, call   # json, as every JSON value


def test_jsonb_set_errors_say_what_postgresql_says(srv):
    with psycopg.connect(dsn(srv), autocommit=True) as c:
        for call, words in (
                ("jsonb_set('{\"a\": [1]}', '{a, x}', '2')",
                 'path element at position 2 is not an integer: "x"'),
                ("jsonb_set('{\"a\": [1]}', '{a, NULL}', '2')", "path element at position 2 is null"),
                ("jsonb_set('3', '{a}', '2')", "cannot set path in scalar"),
                ("jsonb_insert('{\"a\": 1}', '{a}', '2')", "cannot replace existing key")):
            with pytest.raises(psycopg.Error) as e:
                c.execute(f"SELECT {call}")
            assert str(e.value).strip() == words, call


def test_jsonb_set_keeps_the_text_it_does_not_reach(srv):
    with psycopg.connect(dsn(srv), autocommit=True) as c:
        # numbers keep their digits (jsonb's numeric does), the untouched
        # values their text; the new value goes in as written
        got = c.execute("SELECT jsonb_set('{\"x\": 1.10, \"big\": 123456789012345678901234567890,"
                        " \"a\": [1, 2]}', '{a,0}', '0.5e1')::text").fetchone()[0]
        assert json.loads(got, parse_float=str, parse_int=str) == {
            "x": "1.10", "big": "123456789012345678901234567890", "a": ["0.5e1", "2"]}
        # chained, with ->, and over a table's rows with a parameter list as
        # the path (psycopg sends a text[])
        assert c.execute("SELECT jsonb_set(jsonb_set('{}', '{a}', '[]'), '{a,0}', '7') -> 'a'"
                         ).fetchone() == ([7],)
        rows = c.execute("SELECT trip_id, jsonb_set(to_jsonb(info), %s, to_jsonb(trip_id * 2)) "
                         "FROM trips WHERE trip_id < 3 ORDER BY 1", (["k"],)).fetchall()
        assert rows == [(0, {"k": 0, "s": "x0"}), (1, {"k": 2, "s": "x1"}),
                        (2, {"k": 4, "s": "x2"})]
        assert c.execute("SELECT jsonb_insert(%s::jsonb, %s, %s::jsonb, %s)",
                         ('{"a": [1]}', ["a", "0"], '"z"', True)).fetchone() == (
            {"a": [1, "z"]},)
        assert c.execute("SELECT count(*) FROM trips WHERE jsonb_set(to_jsonb(info), '{s}', "
                         "'\"y\"') @> '{\"s\": \"y\"}'").fetchone() == (5000,)
    # psycopg2: the simple protocol, the values in the text
    with psycopg2.connect(dsn(srv)) as c2, c2.cursor() as cur:
        cur.execute("SELECT jsonb_set(%s, %s, %s), jsonb_insert(%s, '{0}', '0')",
                    ('{"a": {"b": 1}}', ["a", "b"], '[true]', '[1]'))
        assert cur.fetchone() == ({"a": {"b": [True]}}, [0, 1])


def test_jsonb_set_is_bounded(srv):
    with psycopg.connect(dsn(srv), autocommit=True) as c:
        # 900 levels, the path to the bottom: each level walks what is below
        # it again, within the bound for a small document
        deep = "[" * 900 + "1" + "]" * 900
        path = "{" + ",".join(["0"] * 900) + "}"
        got = c.execute("SELECT jsonb_set(%s, %s, '2')::text", (deep, path)).fetchone()[0]
        assert got == "[" * 900 + "2" + "]" * 900
        # past the nesting bound: refused with the limit named
        with pytest.raises(psycopg.Error) as e:
            c.execute("SELECT jsonb_set(%s, '{0}', '2')", ("[" * 1001 + "]" * 1001,))
        assert e.value.sqlstate == "54000" and "levels of nesting" in str(e.value)
        # a wide document walked again at each of 400 levels: past the bound
        # on bytes walked (a call DuckDB cannot interrupt)
        path = "{" + ",".join(["0"] * 401) + "}"
        wide = "repeat('[', 400) || CAST(to_json(range(100000)) AS VARCHAR) || repeat(']', 400)"
        assert c.execute(f"SELECT jsonb_set({wide}, '{{1}}', '2') -> 1").fetchone() == (
            2,)   # one level: walked once
        with pytest.raises(psycopg.Error) as e:
            c.execute(f"SELECT jsonb_set({wide}, %s, '2')", (path,))
        assert e.value.sqlstate == "54000" and "bytes walked" in str(e.value)
        assert c.execute("SELECT 1").fetchone() == (1,)
